// SPDX-License-Identifier: MIT
// Worker-to-guest callbacks, as used by generated trampolines. A trampoline
// may run on a shadow thread (the API calls back synchronously) or on any
// thread of the real library, possibly after its guest left.
#include <sys/uio.h>

#include <cstring>
#include <new>
#include <vector>

#include "worker/callback_registry.hpp"
#include "worker/connection.hpp"
#include "worker/shadow_thread.hpp"
#include "worker/wcall.hpp"

namespace {

const uint8_t kZeros[8] = {};

struct CallbackMessage {
  CallbackMessage(std::shared_ptr<ava::GuestConnection> conn, uint64_t callback, uint32_t decl)
      : connection(std::move(conn)), callback_id(callback), decl_id(decl) {}

  std::shared_ptr<ava::GuestConnection> connection;
  uint64_t callback_id;
  uint32_t decl_id;
  int status = AVA_OK; // first failure while building
  uint64_t payload = 0;
  std::vector<struct iovec> items; // data and padding, alternating
};

CallbackMessage *impl_of(struct ava_wcb *cb) {
  return cb != nullptr ? static_cast<CallbackMessage *>(cb->impl) : nullptr;
}

int send_and_wait(CallbackMessage &m, const void *args, uint32_t args_len, bool wait) {
  ava::GuestConnection &conn = *m.connection;
  if (args == nullptr && args_len > 0)
    return AVA_E_PROTO;
  uint64_t total = sizeof(ava_msg_hdr) + static_cast<uint64_t>(args_len) + m.payload;
  if (total > conn.max_message())
    return AVA_E_TOO_BIG;

  ava_msg_hdr hdr{};
  hdr.magic = AVA_MSG_MAGIC;
  hdr.abi_version = AVA_ABI_VERSION;
  hdr.kind = AVA_MSG_CALLBACK;
  hdr.spec_id = conn.spec()->id;
  hdr.func_id = m.decl_id;
  hdr.total_len = total;
  hdr.thread_id = ava::ShadowThread::current_guest_thread(&conn);
  hdr.seq = conn.next_callback_seq();
  hdr.call_id = m.callback_id;
  hdr.args_len = args_len;
  hdr.flags = wait ? AVA_F_SYNC : AVA_F_ASYNC;

  std::vector<struct iovec> iov;
  try {
    iov.reserve(2 + m.items.size());
    iov.push_back({&hdr, sizeof hdr});
    if (args_len > 0)
      iov.push_back({const_cast<void *>(args), args_len});
    iov.insert(iov.end(), m.items.begin(), m.items.end());
    if (wait)
      conn.begin_callback_wait(hdr.seq);
  } catch (const std::bad_alloc &) {
    return AVA_E_NOMEM;
  }
  ava::Status sent = conn.send(iov.data(), static_cast<int>(iov.size()));
  if (!sent.is_ok()) {
    if (wait)
      conn.cancel_callback_wait(hdr.seq);
    return sent.code;
  }
  return wait ? conn.wait_callback(hdr.seq) : AVA_OK;
}

} // namespace

AVA_W_EXPORT int ava_wcb_begin(struct ava_wcb *cb, void *ctx, uint32_t decl_id) {
  if (cb == nullptr)
    return AVA_E_PROTO;
  cb->impl = nullptr;
  const uint64_t key = ava::CallbackRegistry::from_user_data(ctx);
  auto found = ava::CallbackRegistry::instance().claim(key);
  if (found == nullptr)
    return AVA_E_CLOSED; // the registration's lifetime is over
  auto connection = found->connection.lock();
  if (connection != nullptr && found->once)
    connection->forget_once_ctx(key);
  if (connection == nullptr || !connection->alive() || connection->spec() == nullptr)
    return AVA_E_CLOSED;
  auto *m = new (std::nothrow) CallbackMessage(std::move(connection), found->callback_id, decl_id);
  if (m == nullptr)
    return AVA_E_NOMEM;
  cb->impl = m;
  return AVA_OK;
}

AVA_W_EXPORT uint64_t ava_wcb_handle(struct ava_wcb *cb, void *object, uint32_t type) {
  CallbackMessage *m = impl_of(cb);
  if (m == nullptr || object == nullptr)
    return 0;
  if (type < 1 || type > m->connection->spec()->ntypes) {
    m->status = m->status != AVA_OK ? m->status : AVA_E_PROTO;
    return 0;
  }
  try {
    return m->connection->handles().insert(object, type, false);
  } catch (const std::bad_alloc &) {
    m->status = m->status != AVA_OK ? m->status : AVA_E_NOMEM;
    return 0;
  }
}

AVA_W_EXPORT int ava_wcb_put_buffer(struct ava_wcb *cb, struct ava_buf_desc *d, const void *ptr,
                                    uint64_t count, uint64_t elem_size) {
  std::memset(d, 0, sizeof *d);
  CallbackMessage *m = impl_of(cb);
  if (m == nullptr)
    return AVA_E_CLOSED;
  if (ptr == nullptr)
    return AVA_OK;
  uint64_t bytes;
  uint64_t limit = m->connection->max_message();
  int rc = AVA_OK;
  if (__builtin_mul_overflow(count, elem_size, &bytes) || bytes > limit ||
      AVA_PAYLOAD_SPAN(bytes) > limit - m->payload)
    rc = AVA_E_TOO_BIG;
  if (rc == AVA_OK) {
    try {
      if (bytes > 0)
        m->items.push_back({const_cast<void *>(ptr), static_cast<size_t>(bytes)});
      m->items.push_back(
          {const_cast<uint8_t *>(kZeros), static_cast<size_t>(AVA_PAYLOAD_SPAN(bytes) - bytes)});
    } catch (const std::bad_alloc &) {
      rc = AVA_E_NOMEM;
    }
  }
  if (rc != AVA_OK) {
    m->status = m->status != AVA_OK ? m->status : rc;
    return rc;
  }
  d->offset = m->payload;
  d->length = bytes;
  d->flags = AVA_BUF_PRESENT | AVA_BUF_IN;
  m->payload += AVA_PAYLOAD_SPAN(bytes);
  return AVA_OK;
}

AVA_W_EXPORT int ava_wcb_invoke(struct ava_wcb *cb, const void *args, uint32_t args_len, int wait) {
  CallbackMessage *m = impl_of(cb);
  if (m == nullptr)
    return AVA_E_CLOSED;
  cb->impl = nullptr;
  int rc = m->status != AVA_OK ? m->status : send_and_wait(*m, args, args_len, wait != 0);
  delete m;
  return rc;
}
