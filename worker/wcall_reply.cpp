// SPDX-License-Identifier: MIT
// Ending a CALL: reply building, failures, deferred async errors, and what a
// call asks the worker to keep beyond itself (buffers, callback contexts).
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "shim/ava_shim.h"
#include "worker/callback_registry.hpp"
#include "worker/connection.hpp"
#include "worker/wcall.hpp"

namespace ava {

const char *status_name(int status) {
  switch (status) {
  case AVA_OK:
    return "ok";
  case AVA_E_PROTO:
    return "malformed message";
  case AVA_E_LENGTH:
    return "length or offset out of bounds";
  case AVA_E_FUNC:
    return "unknown function";
  case AVA_E_HANDLE:
    return "unknown or wrongly typed handle";
  case AVA_E_NOMEM:
    return "out of memory";
  case AVA_E_UNSUPPORTED:
    return "unsupported function";
  case AVA_E_CLOSED:
    return "channel closed";
  case AVA_E_SPEC:
    return "spec mismatch";
  case AVA_E_TOO_BIG:
    return "message too big";
  case AVA_E_TIMEOUT:
    return "timed out";
  case AVA_E_STATE:
    return "call out of order";
  case AVA_E_POLICY:
    return "refused by the sharing policy";
  default:
    return "unknown status";
  }
}

} // namespace ava

namespace {

const uint8_t kZeros[8] = {};

std::string call_name(const ava_wcall *w) {
  const ava_worker_spec *spec = w->spec;
  std::string name = spec->name;
  uint32_t func = w->hdr.func_id;
  if (spec->func_names != nullptr && func < spec->nfuncs && spec->func_names[func] != nullptr)
    return name + "." + spec->func_names[func];
  return name + ".#" + std::to_string(func);
}

void set_pending(ava_wcall *w, int status) {
  if (w->pending_status == AVA_OK)
    w->pending_status = status;
}

void log_failure(ava_wcall *w, int status) {
  try {
    std::string line = call_name(w) + ": " + ava::status_name(status);
    // Bad handles are ordinary API misuse by the guest program, not a protocol problem.
    if (status == AVA_E_HANDLE)
      w->connection->log_debug(line);
    else
      w->connection->log_error(line);
  } catch (const std::bad_alloc &) {
    // Nothing to say then.
  }
}

int send_reply(ava_wcall *w, const void *reply, uint32_t len) {
  uint64_t args_len = sizeof(ava_reply_common) + static_cast<uint64_t>(len);
  uint64_t total = sizeof(ava_msg_hdr) + args_len + w->out_payload;
  if (args_len > UINT32_MAX || total > w->connection->max_message())
    return ava_w_fail(w, AVA_E_TOO_BIG, 0, 0);

  ava_reply_common common{};
  ava::AsyncErrorSlot *slot = w->async_error;
  if (slot->pending) {
    common.async_error_value = slot->value;
    common.async_error_class = slot->ret_class;
    common.async_error_func = slot->func_id;
  }
  ava_msg_hdr hdr{};
  hdr.magic = AVA_MSG_MAGIC;
  hdr.abi_version = AVA_ABI_VERSION;
  hdr.kind = AVA_MSG_REPLY;
  hdr.spec_id = w->spec->id;
  hdr.func_id = w->hdr.func_id;
  hdr.total_len = total;
  hdr.thread_id = w->hdr.thread_id;
  hdr.seq = w->hdr.seq;
  hdr.call_id = w->hdr.call_id;
  hdr.args_len = static_cast<uint32_t>(args_len);
  hdr.flags = AVA_F_SYNC;

  // Most replies have a few buffers: their gather list lives on the stack.
  constexpr size_t kInlineIov = 16;
  struct iovec inline_iov[kInlineIov];
  std::vector<struct iovec> heap_iov;
  const size_t most = 3 + 2 * w->out_items.size();
  struct iovec *iov = inline_iov;
  if (most > kInlineIov) {
    try {
      heap_iov.resize(most);
    } catch (const std::bad_alloc &) {
      return ava_w_fail(w, AVA_E_NOMEM, 0, 0);
    }
    iov = heap_iov.data();
  }
  size_t n = 0;
  iov[n++] = {&hdr, sizeof hdr};
  iov[n++] = {&common, sizeof common};
  if (len > 0)
    iov[n++] = {const_cast<void *>(reply), len};
  for (const struct iovec &item : w->out_items) {
    if (item.iov_len > 0)
      iov[n++] = item;
    size_t pad = AVA_PAYLOAD_SPAN(item.iov_len) - item.iov_len;
    iov[n++] = {const_cast<uint8_t *>(kZeros), pad};
  }
  w->finished = true;
  slot->pending = false;
  ava::Status sent = w->connection->send(iov, static_cast<int>(n));
  return sent.code;
}

} // namespace

AVA_W_EXPORT void *ava_w_buffer_keep(struct ava_wcall *w, const void *ptr, uint64_t len,
                                     uint32_t lifetime, uint64_t coupled_handle) {
  if (ptr == nullptr)
    return nullptr;
  if (len > w->connection->max_message()) {
    set_pending(w, AVA_E_TOO_BIG);
    return nullptr;
  }
  // One extra zero byte keeps a kept string terminated, as its IN buffer was.
  auto *copy = static_cast<uint8_t *>(std::malloc(len + 1));
  if (copy == nullptr) {
    set_pending(w, AVA_E_NOMEM);
    return nullptr;
  }
  std::memcpy(copy, ptr, len);
  copy[len] = 0;
  try {
    if (lifetime == AVA_LIFETIME_CALL)
      w->arena.push_back({copy, 0}); // malloc'ed
    else if (!w->connection->keep_buffer(copy, len, lifetime, coupled_handle)) {
      std::free(copy);
      w->connection->log_error("holds its budget of kept bytes (guest.kept_bytes): a call that "
                               "keeps more fails");
      set_pending(w, AVA_E_POLICY);
      return nullptr;
    }
  } catch (const std::bad_alloc &) {
    std::free(copy);
    set_pending(w, AVA_E_NOMEM);
    return nullptr;
  }
  return copy;
}

AVA_W_EXPORT int ava_w_buffer_out(struct ava_wcall *w, struct ava_buf_desc *rd, const void *ptr,
                                  uint64_t len) {
  std::memset(rd, 0, sizeof *rd);
  if (ptr == nullptr)
    return len == 0 ? AVA_OK : AVA_E_PROTO;
  if (!w->sync)
    return AVA_OK; // nothing travels back from an async call
  for (const ava_wcall::PrivateCopy &copy : w->private_copies) {
    if (copy.mem != ptr || len > copy.length)
      continue;
    // The worker's finished result goes where the guest lent the heap; only
    // now does the guest see any of it.
    std::memcpy(w->heap + copy.offset, ptr, len);
    rd->offset = copy.offset;
    rd->length = len;
    rd->flags = AVA_BUF_PRESENT | AVA_BUF_OUT | AVA_BUF_HEAP;
    return AVA_OK;
  }
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  const auto heap = reinterpret_cast<uintptr_t>(w->heap);
  if (w->heap != nullptr && p >= heap && p - heap < w->heap_size &&
      len <= w->heap_size - (p - heap)) {
    // Already in the shared heap, where the guest lent it: say where.
    rd->offset = p - heap;
    rd->length = len;
    rd->flags = AVA_BUF_PRESENT | AVA_BUF_OUT | AVA_BUF_HEAP;
    return AVA_OK;
  }
  uint64_t span = AVA_PAYLOAD_SPAN(len);
  uint64_t limit = w->connection->max_message();
  if (len > limit || span > limit - w->out_payload)
    return AVA_E_TOO_BIG;
  try {
    w->out_items.push_back({const_cast<void *>(ptr), static_cast<size_t>(len)});
  } catch (const std::bad_alloc &) {
    return AVA_E_NOMEM;
  }
  rd->offset = w->out_payload;
  rd->length = len;
  rd->flags = AVA_BUF_PRESENT | AVA_BUF_OUT;
  w->out_payload += span;
  return AVA_OK;
}

AVA_W_EXPORT void *ava_w_callback_ctx(struct ava_wcall *w, uint64_t callback_id, uint32_t lifetime,
                                      uint64_t coupled_handle) {
  if (callback_id == 0)
    return nullptr;
  ava::CallbackRegistry &registry = ava::CallbackRegistry::instance();
  uint64_t key = 0;
  try {
    key = registry.add(w->connection, callback_id, lifetime == AVA_LIFETIME_ONCE);
    if (lifetime == AVA_LIFETIME_CALL) {
      w->call_callback_keys.push_back(key);
    } else {
      // Reserved first, so that recording the key cannot fail once it is kept.
      w->kept_callbacks.reserve(w->kept_callbacks.size() + 1);
      if (!w->connection->keep_callback_ctx(key, lifetime, coupled_handle)) {
        registry.remove(key);
        w->connection->log_error("holds its budget of callbacks (guest.callbacks): a call that "
                                 "registers one more fails");
        set_pending(w, AVA_E_POLICY);
        return nullptr;
      }
      w->kept_callbacks.push_back({key, lifetime, coupled_handle});
    }
  } catch (const std::bad_alloc &) {
    if (key != 0)
      registry.remove(key);
    set_pending(w, AVA_E_NOMEM);
    return nullptr;
  }
  return ava::CallbackRegistry::to_user_data(key);
}

AVA_W_EXPORT void ava_w_callbacks_unused(struct ava_wcall *w) {
  for (const ava_wcall::KeptCallback &k : w->kept_callbacks)
    w->connection->drop_callback_ctx(k.key, k.lifetime, k.coupled);
  w->kept_callbacks.clear();
}

AVA_W_EXPORT void ava_w_async_error(struct ava_wcall *w, uint32_t ret_class, int64_t value) {
  ava::AsyncErrorSlot *slot = w->async_error;
  if (ret_class == 0 || slot->pending)
    return;
  slot->pending = true;
  slot->ret_class = ret_class;
  slot->func_id = w->hdr.func_id;
  slot->value = value;
}

AVA_W_EXPORT int ava_w_reply(struct ava_wcall *w, const void *reply, uint32_t len) {
  if (w->finished)
    return AVA_E_STATE;
  if (!w->sync) {
    w->finished = true;
    return AVA_OK;
  }
  if (w->pending_status != AVA_OK)
    return ava_w_fail(w, w->pending_status, 0, 0);
  if (reply == nullptr && len > 0)
    return ava_w_fail(w, AVA_E_PROTO, 0, 0);
  return send_reply(w, reply, len);
}

AVA_W_EXPORT int ava_w_fail(struct ava_wcall *w, int status, uint32_t ret_class,
                            int64_t error_value) {
  if (w->pending_status != AVA_OK)
    status = w->pending_status; // the first failure says most (a budget, not "no memory")
  if (status == AVA_OK)
    status = AVA_E_PROTO; // a failure must never read as success
  if (w->finished)
    return status;
  w->finished = true;
  log_failure(w, status);
  if (w->sync)
    w->connection->send_status(w->hdr, AVA_MSG_REPLY, status);
  else
    ava_w_async_error(w, ret_class, error_value);
  return status;
}

AVA_W_EXPORT void ava_w_log(struct ava_wcall *w, const char *message) {
  try {
    w->connection->log_error(call_name(w) + ": " + (message != nullptr ? message : "(null)"));
  } catch (const std::bad_alloc &) {
    // Nothing to say then.
  }
}
