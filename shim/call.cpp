// SPDX-License-Identifier: MIT
#include "shim/call.hpp"

#include <climits>
#include <cstring>
#include <string>

#include "shim/heap.hpp"
#include "shim/runtime_registry.hpp"
#include "shim/thread_util.hpp"

namespace ava::guest {

namespace {

constexpr uint64_t kHeader = sizeof(ava_msg_hdr);

// Padding after IN buffers comes from here, so user buffers are sent in place.
alignas(8) const uint8_t kZeros[8] = {};

// A deferred async error that the call which received it did not consume;
// it surfaces at a later call of this thread with a matching return class.
// Trivially initialised, so no TLS constructor runs in the host program.
struct PendingAsyncError {
  const Runtime *owner;
  int64_t value;
  uint32_t ret_class;
  uint32_t func_id;
};
thread_local PendingAsyncError t_pending_async = {nullptr, 0, 0, 0};

} // namespace

void reset_async_errors_after_fork() {
  t_pending_async = {nullptr, 0, 0, 0};
}

Call::Call(Runtime *runtime, std::shared_ptr<Connection> conn, uint32_t func_id, uint32_t flags)
    : runtime_(runtime), conn_(std::move(conn)), func_id_(func_id), flags_(flags) {}

Call::~Call() {
  finish();
}

void Call::finish() {
  try {
    for (const Registration &reg : registrations_) {
      // The worker never saw registrations of a call it did not accept.
      if (reg.lifetime == AVA_LIFETIME_CALL || !delivered_ || callbacks_unused_) {
        runtime_->callbacks().remove(reg.id);
      }
    }
  } catch (...) {
    // A registration left behind is harmless; an exception here is not.
  }
  registrations_.clear();
  if (!heap_temps_.empty()) {
    if (HeapAllocator *heap = conn_->heap()) {
      for (void *p : heap_temps_)
        heap->release(p);
    }
    heap_temps_.clear();
  }
  if (reply_.capacity() > 0)
    conn_->recycle(std::move(reply_));
  reply_ = MsgBuf();
  if (async_error_.valid && t_pending_async.owner == nullptr) {
    t_pending_async = {runtime_, async_error_.value, async_error_.ret_class, async_error_.func_id};
  }
  async_error_ = AsyncError{};
  payload_iov_.clear();
  payload_len_ = 0;
  invoked_ = false;
  delivered_ = false;
  callbacks_unused_ = false;
  have_reply_ = false;
  view_ = ReplyView{};
  waiter_.reset();
}

void Call::restart(uint32_t func_id, uint32_t flags, std::shared_ptr<Connection> conn) {
  func_id_ = func_id;
  flags_ = flags;
  if (conn != nullptr)
    conn_ = std::move(conn);
}

Status Call::put_buffer(ava_buf_desc *desc, const void *ptr, uint64_t count, uint64_t elem_size,
                        uint32_t dir) {
  if (desc == nullptr) {
    return Status::error(AVA_E_PROTO, "internal error: buffer without a descriptor");
  }
  std::memset(desc, 0, sizeof *desc);
  if (invoked_) {
    return Status::error(AVA_E_STATE, "internal error: buffer described after the call was sent");
  }
  const bool zerocopy_hint = (dir & AVA_CALL_ZEROCOPY) != 0;
  dir &= ~AVA_CALL_ZEROCOPY;
  if ((dir & ~(AVA_BUF_IN | AVA_BUF_OUT)) != 0) {
    return Status::error(AVA_E_PROTO,
                         "internal error: invalid buffer direction " + std::to_string(dir));
  }
  uint64_t bytes;
  if (__builtin_mul_overflow(count, elem_size, &bytes)) {
    return Status::error(AVA_E_TOO_BIG, "a buffer of " + std::to_string(count) + " elements of " +
                                            std::to_string(elem_size) + " bytes is too large");
  }
  // NULL, or no direction after the spec's conditions: the buffer is absent.
  if (ptr == nullptr || dir == 0) {
    return Status::ok();
  }
  bool placed = false;
  Status heap_st = put_heap_buffer(desc, ptr, bytes, dir, zerocopy_hint, &placed);
  if (!heap_st.is_ok() || placed) {
    return heap_st;
  }
  if ((dir & AVA_BUF_IN) == 0) {
    desc->length = bytes;
    desc->flags = AVA_BUF_PRESENT | AVA_BUF_OUT;
    return Status::ok();
  }
  if (bytes > UINT64_MAX - 8 || payload_len_ > UINT64_MAX - AVA_PAYLOAD_SPAN(bytes)) {
    return Status::error(AVA_E_TOO_BIG,
                         "a buffer of " + std::to_string(bytes) + " bytes is too large");
  }
  uint64_t span = AVA_PAYLOAD_SPAN(bytes);
  payload_iov_.reserve(payload_iov_.size() + 2);
  if (bytes > 0) {
    payload_iov_.push_back({const_cast<void *>(ptr), bytes});
  }
  payload_iov_.push_back({const_cast<uint8_t *>(kZeros), span - bytes});
  desc->offset = payload_len_;
  desc->length = bytes;
  desc->flags = AVA_BUF_PRESENT | AVA_BUF_IN | (dir & AVA_BUF_OUT);
  payload_len_ += span;
  return Status::ok();
}

Status Call::put_heap_buffer(ava_buf_desc *desc, const void *ptr, uint64_t bytes, uint32_t dir,
                             bool hint, bool *placed) {
  *placed = false;
  HeapAllocator *heap = conn_->heap();
  if (heap == nullptr || bytes == 0) {
    return Status::ok();
  }
  uint64_t offset = 0;
  if (!heap->contains(ptr, bytes, &offset)) {
    // A large buffer is copied into the heap once instead of through the
    // channel twice. A sync call frees that space when its reply is in, an
    // async one when a later sync call's reply shows the worker is past it.
    if (bytes < conn_->zerocopy_min() && !hint) {
      return Status::ok();
    }
    void *tmp = heap->allocate(bytes);
    if (tmp == nullptr) {
      return Status::ok(); // heap full: the payload still works
    }
    try {
      heap_temps_.push_back(tmp);
    } catch (const std::bad_alloc &) {
      heap->release(tmp);
      return Status::ok();
    }
    if ((dir & AVA_BUF_IN) != 0) {
      std::memcpy(tmp, ptr, bytes);
    }
    heap->contains(tmp, bytes, &offset);
  }
  desc->offset = offset;
  desc->length = bytes;
  desc->flags = AVA_BUF_PRESENT | AVA_BUF_HEAP | dir;
  *placed = true;
  return Status::ok();
}

Status Call::add_callback(uint32_t decl_id, void (*fn)(void), void *userdata, uint32_t lifetime,
                          uint64_t coupled_handle, uint64_t *id) {
  *id = 0;
  if (fn == nullptr) {
    return Status::ok();
  }
  if (lifetime > AVA_LIFETIME_ONCE) {
    return Status::error(AVA_E_PROTO,
                         "internal error: invalid callback lifetime " + std::to_string(lifetime));
  }
  if (invoked_) {
    return Status::error(AVA_E_STATE,
                         "internal error: callback registered after the call was sent");
  }
  registrations_.reserve(registrations_.size() + 1);
  *id = runtime_->callbacks().add({fn, userdata, lifetime, coupled_handle, decl_id});
  registrations_.push_back({*id, lifetime});
  return Status::ok();
}

Status Call::invoke(const void *args, uint32_t args_len, const void **reply, uint32_t reply_len) {
  if (invoked_) {
    return Status::error(AVA_E_STATE, "internal error: call sent twice");
  }
  invoked_ = true;
  if (args == nullptr && args_len != 0) {
    return Status::error(AVA_E_PROTO, "internal error: argument block missing");
  }
  uint64_t fixed = kHeader + args_len;
  if (payload_len_ > UINT64_MAX - fixed || fixed + payload_len_ > conn_->max_message()) {
    return Status::error(AVA_E_TOO_BIG,
                         "the call needs a message of " + std::to_string(fixed + payload_len_) +
                             " bytes, above the limit of " + std::to_string(conn_->max_message()) +
                             " bytes (max_message)");
  }
  if (payload_iov_.size() > INT_MAX - 2) {
    return Status::error(AVA_E_TOO_BIG, "the call has too many buffers");
  }
  ava_msg_hdr hdr;
  std::memset(&hdr, 0, sizeof hdr);
  hdr.magic = AVA_MSG_MAGIC;
  hdr.abi_version = AVA_ABI_VERSION;
  hdr.kind = AVA_MSG_CALL;
  hdr.spec_id = runtime_->spec()->id;
  hdr.func_id = func_id_;
  hdr.total_len = fixed + payload_len_;
  hdr.thread_id = current_tid();
  hdr.seq = next_thread_seq();
  hdr.call_id = runtime_->next_call_id();
  hdr.args_len = args_len;
  hdr.flags = flags_ & AVA_F_ALL; // AVA_CALL_DEVICE_WAIT stays here

  // Most calls have a few buffers: their gather list lives on the stack.
  constexpr size_t kInlineIov = 16;
  struct iovec inline_iov[kInlineIov];
  std::vector<struct iovec> heap_iov;
  struct iovec *iov_base = inline_iov;
  const size_t iov_count = 1 + (args_len > 0 ? 1 : 0) + payload_iov_.size();
  if (iov_count > kInlineIov) {
    heap_iov.resize(iov_count);
    iov_base = heap_iov.data();
  }
  size_t at = 0;
  iov_base[at++] = {&hdr, sizeof hdr};
  if (args_len > 0) {
    iov_base[at++] = {const_cast<void *>(args), args_len};
  }
  for (const struct iovec &item : payload_iov_) {
    iov_base[at++] = item;
  }

  bool sync = (flags_ & AVA_F_SYNC) != 0;
  const bool batchable = !sync && (flags_ & AVA_F_FLUSH) == 0;
  uint64_t order = 0;
  Status st = conn_->send_call(iov_base, static_cast<int>(at), hdr.total_len, hdr.call_id,
                               sync ? &waiter_ : nullptr, batchable, &order);
  if (!st.is_ok()) {
    return st;
  }
  if (!sync) {
    for (void *p : heap_temps_)
      conn_->defer_heap_release(order, p);
    heap_temps_.clear();
    delivered_ = true;
    if (reply != nullptr) {
      *reply = nullptr;
    }
    return Status::ok();
  }
  st = wait_and_check(hdr.call_id, reply_len, reply);
  // An OK reply means the worker ran this call, which it does only after
  // every async call sent before it.
  if (st.is_ok()) {
    conn_->retire_async(order);
  }
  return st;
}

Status Call::wait_and_check(uint64_t call_id, uint32_t reply_len, const void **reply) {
  const bool spin = (flags_ & AVA_CALL_DEVICE_WAIT) == 0;
  Status st = conn_->wait_reply(&waiter_, call_id, conn_->call_timeout_ms(), spin, &reply_);
  if (!st.is_ok()) {
    if (st.code == AVA_E_TIMEOUT) {
      st.message = "no reply from the " + std::string(runtime_->spec()->name) + " worker (" +
                   conn_->address() + ") within " + std::to_string(conn_->call_timeout_ms()) +
                   " ms (call_timeout_ms)";
    }
    return st;
  }
  ReplyExpect expect;
  expect.spec_id = runtime_->spec()->id;
  expect.func_id = func_id_;
  expect.call_id = call_id;
  expect.reply_len = reply_len;
  st = check_reply(reply_, expect, &view_);
  if (view_.has_common && view_.common.async_error_class != 0) {
    // Something the shapes did not foresee failed: until calls succeed
    // again sync, none goes without waiting.
    runtime_->shapes().forget_all();
    async_error_.valid = true;
    async_error_.value = view_.common.async_error_value;
    async_error_.ret_class = view_.common.async_error_class;
    async_error_.func_id = view_.common.async_error_func;
  }
  if (!st.is_ok()) {
    return st;
  }
  delivered_ = true;
  have_reply_ = true;
  if (reply != nullptr) {
    *reply = view_.reply;
  }
  return Status::ok();
}

Status Call::get_buffer(const ava_buf_desc *desc, void *dst, uint64_t capacity) {
  if (!have_reply_) {
    return Status::error(AVA_E_STATE, "internal error: output buffer read without a reply");
  }
  if (desc == nullptr) {
    return Status::error(AVA_E_PROTO, "internal error: output buffer without a descriptor");
  }
  ava_buf_desc d;
  std::memcpy(&d, desc, sizeof d);
  if ((d.flags & AVA_BUF_HEAP) != 0) {
    // The worker wrote into the heap range this call lent it; the reply only
    // says where, and that is checked like any other worker input.
    HeapAllocator *heap = conn_->heap();
    const uint64_t known = AVA_BUF_PRESENT | AVA_BUF_OUT | AVA_BUF_HEAP;
    if (heap == nullptr || (d.flags & ~known) != 0 || d.reserved != 0 || d.offset > heap->size() ||
        d.length > heap->size() - d.offset) {
      return Status::error(AVA_E_LENGTH,
                           "the reply names an output buffer outside the shared heap");
    }
    if (d.length > capacity || (d.length > 0 && dst == nullptr)) {
      return Status::error(AVA_E_LENGTH, "the reply returns " + std::to_string(d.length) +
                                             " bytes for a buffer of " + std::to_string(capacity));
    }
    const uint8_t *src = heap->base() + d.offset;
    if (d.length > 0 && src != dst) {
      std::memmove(dst, src, d.length);
    }
    return Status::ok();
  }
  uint64_t len;
  Status st = check_out_buffer(d, view_.payload_len, capacity, dst != nullptr, &len);
  if (!st.is_ok()) {
    return st;
  }
  // check_out_buffer refuses bytes for a NULL dst; said again where the
  // analyzer sees it.
  if (len > 0 && dst != nullptr) {
    std::memcpy(dst, view_.payload + d.offset, len);
  }
  return Status::ok();
}

bool Call::take_async_error(uint32_t ret_class, int64_t *value) {
  if (ret_class == 0 || value == nullptr) {
    return false;
  }
  // The older error first: it was reported before this reply's.
  if (t_pending_async.owner == runtime_ && t_pending_async.ret_class == ret_class) {
    *value = t_pending_async.value;
    t_pending_async = {nullptr, 0, 0, 0};
    return true;
  }
  if (async_error_.valid && async_error_.ret_class == ret_class) {
    *value = async_error_.value;
    async_error_.valid = false;
    return true;
  }
  return false;
}

} // namespace ava::guest
