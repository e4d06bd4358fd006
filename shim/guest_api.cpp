// SPDX-License-Identifier: MIT
// The C API of shim/ava_shim.h. Generated stubs call it from arbitrary host
// threads, so nothing may escape: every C++ exception stops here and becomes
// a failed call with one "ava: ..." line.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "shim/ava_shim.h"
#include "shim/call.hpp"
#include "shim/call_pool.hpp"
#include "shim/log.hpp"
#include "shim/reply.hpp"
#include "shim/runtime_registry.hpp"
#include "transport/big_block.hpp"

using ava::Status;
using ava::guest::Call;
using ava::guest::log_line;
using ava::guest::Runtime;

namespace {

Call *impl_of(struct ava_call *c) {
  return static_cast<Call *>(c->impl);
}

// Marks c failed after reporting st.
int fail(struct ava_call *c, const Status &st) {
  c->failed = 1;
  Call *call = impl_of(c);
  if (call != nullptr) {
    call->runtime()->report(c->func_id, st);
  }
  return -1;
}

int fail_exception(struct ava_call *c, const char *what) {
  c->failed = 1;
  Call *call = impl_of(c);
  try {
    if (call != nullptr) {
      log_line("%s: %s", call->runtime()->func_name(c->func_id).c_str(), what);
      return -1;
    }
  } catch (...) {
    // Out of memory for the name too: say it without.
  }
  log_line("a call failed: %s", what);
  return -1;
}

// Usable once begin succeeded and no step failed.
bool usable(struct ava_call *c) {
  return c != nullptr && !c->failed && c->impl != nullptr;
}

// spec's runtime (*runtime, connecting it if need be) and its connection;
// false without either (*runtime may still be set). May throw bad_alloc.
bool connected(const struct ava_guest_spec *spec, Runtime **runtime,
               std::shared_ptr<ava::guest::Connection> *conn) {
  *runtime = ava::guest::find_runtime(spec, true);
  return *runtime != nullptr && (*runtime)->acquire(UINT32_MAX, conn).is_ok();
}

} // namespace

extern "C" {

int ava_call_begin(struct ava_call *c, const struct ava_guest_spec *spec, uint32_t func_id,
                   uint32_t flags) {
  if (c == nullptr) {
    return -1;
  }
  c->impl = nullptr;
  c->failed = 1;
  c->func_id = func_id;
  if (spec == nullptr || spec->name == nullptr) {
    log_line("internal error: a call without a spec");
    return -1;
  }
  try {
    Runtime *runtime = ava::guest::find_runtime(spec, true);
    if (func_id >= spec->nfuncs) {
      runtime->report(func_id, Status::error(AVA_E_FUNC, "internal error: function id " +
                                                             std::to_string(func_id) +
                                                             " is outside the spec"));
      return -1;
    }
    uint32_t kind = flags & (AVA_F_SYNC | AVA_F_ASYNC);
    if ((flags & ~(AVA_F_ALL | AVA_CALL_DEVICE_WAIT)) != 0 || kind == (AVA_F_SYNC | AVA_F_ASYNC)) {
      runtime->report(func_id, Status::error(AVA_E_PROTO, "internal error: invalid call flags " +
                                                              std::to_string(flags)));
      return -1;
    }
    if (kind == 0) {
      flags |= AVA_F_SYNC;
    }
    Call *call = ava::guest::begin_call(runtime, func_id, flags);
    if (call == nullptr)
      return -1;
    c->impl = call;
    c->failed = 0;
    return 0;
  } catch (const std::bad_alloc &) {
    log_line("out of memory starting a %s call", spec->name);
  } catch (const std::exception &e) {
    log_line("cannot start a %s call: %s", spec->name, e.what());
  } catch (...) {
    log_line("cannot start a %s call", spec->name);
  }
  return -1;
}

int ava_call_put_buffer(struct ava_call *c, struct ava_buf_desc *d, const void *ptr, uint64_t count,
                        uint64_t elem_size, uint32_t dir) {
  if (!usable(c)) {
    return -1;
  }
  try {
    Status st = impl_of(c)->put_buffer(d, ptr, count, elem_size, dir);
    return st.is_ok() ? 0 : fail(c, st);
  } catch (const std::bad_alloc &) {
    return fail_exception(c, "out of memory");
  } catch (...) {
    return fail_exception(c, "internal error");
  }
}

uint64_t ava_call_callback(struct ava_call *c, uint32_t decl_id, void (*fn)(void), void *userdata,
                           uint32_t lifetime, uint64_t coupled_handle) {
  if (!usable(c)) {
    return 0;
  }
  try {
    uint64_t id = 0;
    Status st = impl_of(c)->add_callback(decl_id, fn, userdata, lifetime, coupled_handle, &id);
    if (!st.is_ok()) {
      fail(c, st);
      return 0;
    }
    return id;
  } catch (const std::bad_alloc &) {
    fail_exception(c, "out of memory");
  } catch (...) {
    fail_exception(c, "internal error");
  }
  return 0;
}

void ava_call_callbacks_unused(struct ava_call *c) {
  if (c != nullptr && c->impl != nullptr) {
    impl_of(c)->callbacks_unused();
  }
}

int ava_call_invoke(struct ava_call *c, const void *args, uint32_t args_len, const void **reply,
                    uint32_t reply_len) {
  if (!usable(c)) {
    return -1;
  }
  try {
    Status st = impl_of(c)->invoke(args, args_len, reply, reply_len);
    return st.is_ok() ? 0 : fail(c, st);
  } catch (const std::bad_alloc &) {
    return fail_exception(c, "out of memory");
  } catch (...) {
    return fail_exception(c, "internal error");
  }
}

int ava_call_get_buffer(struct ava_call *c, const struct ava_buf_desc *d, void *dst,
                        uint64_t capacity) {
  if (!usable(c)) {
    return -1;
  }
  try {
    Status st = impl_of(c)->get_buffer(d, dst, capacity);
    return st.is_ok() ? 0 : fail(c, st);
  } catch (const std::bad_alloc &) {
    return fail_exception(c, "out of memory");
  } catch (...) {
    return fail_exception(c, "internal error");
  }
}

int ava_call_take_async_error(struct ava_call *c, uint32_t ret_class, int64_t *value) {
  if (!usable(c)) {
    return 0;
  }
  return impl_of(c)->take_async_error(ret_class, value) ? 1 : 0;
}

void ava_call_end(struct ava_call *c) {
  if (c == nullptr) {
    return;
  }
  Call *call = impl_of(c);
  c->impl = nullptr;
  ava::guest::end_call(call);
}

int ava_callback_buffer(const struct ava_buf_desc *d, const uint8_t *payload, uint64_t payload_len,
                        const void **ptr) {
  if (ptr == nullptr) {
    return -1;
  }
  *ptr = nullptr;
  if (d == nullptr) {
    return -1;
  }
  try {
    ava_buf_desc desc;
    std::memcpy(&desc, d, sizeof desc);
    return ava::guest::check_callback_buffer(desc, payload, payload_len, ptr).is_ok() ? 0 : -1;
  } catch (...) {
    return -1;
  }
}

void ava_guest_new_handle_ids(void *array, uint64_t count) {
  // One counter for the process: ids only need to be unique per guest.
  static std::atomic<uint64_t> next{1};
  auto *slots = static_cast<uint8_t *>(array);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t id = AVA_GUEST_ID_BIT | next.fetch_add(1, std::memory_order_relaxed);
    std::memcpy(slots + i * sizeof id, &id, sizeof id);
  }
}

void ava_guest_handle_released(const struct ava_guest_spec *spec, uint64_t handle) {
  try {
    Runtime *runtime = ava::guest::find_runtime(spec, false);
    if (runtime != nullptr) {
      runtime->callbacks().release_handle(handle);
    }
  } catch (...) {
    log_line("internal error releasing callbacks of a handle");
  }
}

int ava_guest_shape_known(const struct ava_guest_spec *spec, uint32_t func_id,
                          const uint64_t *values, uint32_t count) {
  // Not connected yet: no shape is known, and the sync call connects.
  Runtime *runtime = ava::guest::find_runtime(spec, false);
  return runtime != nullptr && values != nullptr && runtime->shapes().known(func_id, values, count)
             ? 1
             : 0;
}

void ava_guest_shape_learn(const struct ava_guest_spec *spec, uint32_t func_id,
                           const uint64_t *values, uint32_t count) {
  Runtime *runtime = ava::guest::find_runtime(spec, false);
  if (runtime != nullptr && values != nullptr)
    runtime->shapes().learn(func_id, values, count);
}

uint64_t ava_guest_transfer_expect(const struct ava_guest_spec *spec, void *dst,
                                   uint64_t capacity) {
  try {
    Runtime *runtime = ava::guest::find_runtime(spec, true);
    return runtime != nullptr ? runtime->transfers().expect(dst, capacity) : 0;
  } catch (...) {
    return 0;
  }
}

namespace {

uint64_t expect_lent(const struct ava_guest_spec *spec, void *dst, uint64_t capacity,
                     uint64_t *heap_offset, bool keep_failure) {
  *heap_offset = AVA_NO_HEAP;
  try {
    Runtime *runtime = ava::guest::find_runtime(spec, true);
    std::shared_ptr<ava::guest::Connection> conn;
    if (runtime == nullptr)
      return 0;
    if (!runtime->acquire(UINT32_MAX, &conn).is_ok()) // the call reports the failure
      return runtime->transfers().expect(dst, capacity, keep_failure);
    return runtime->transfers().expect_lent(dst, capacity, conn, heap_offset, keep_failure);
  } catch (...) {
    return 0;
  }
}

} // namespace

uint64_t ava_guest_transfer_expect_lent(const struct ava_guest_spec *spec, void *dst,
                                        uint64_t capacity, uint64_t *heap_offset) {
  return expect_lent(spec, dst, capacity, heap_offset, false);
}

uint64_t ava_guest_transfer_expect_lent_blocking(const struct ava_guest_spec *spec, void *dst,
                                                 uint64_t capacity, uint64_t *heap_offset) {
  return expect_lent(spec, dst, capacity, heap_offset, true);
}

uint64_t ava_guest_transfer_lend(const struct ava_guest_spec *spec, const void *src, uint64_t bytes,
                                 uint64_t *heap_offset) {
  *heap_offset = AVA_NO_HEAP;
  try {
    Runtime *runtime = ava::guest::find_runtime(spec, true);
    std::shared_ptr<ava::guest::Connection> conn;
    if (runtime == nullptr || src == nullptr || !runtime->acquire(UINT32_MAX, &conn).is_ok())
      return 0;
    return runtime->transfers().lend(src, bytes, conn, heap_offset);
  } catch (...) {
    return 0;
  }
}

uint64_t ava_guest_heap_buffer(const struct ava_guest_spec *spec, uint64_t bytes,
                               uint64_t *heap_offset, void **storage) {
  *heap_offset = AVA_NO_HEAP;
  *storage = nullptr;
  try {
    Runtime *runtime = nullptr;
    std::shared_ptr<ava::guest::Connection> conn;
    if (!connected(spec, &runtime, &conn))
      return 0;
    return runtime->transfers().lend_storage(bytes, conn, heap_offset, storage);
  } catch (...) {
    return 0;
  }
}

int ava_guest_transfer_wait(const struct ava_guest_spec *spec, uint64_t token) {
  try {
    Runtime *runtime = nullptr;
    std::shared_ptr<ava::guest::Connection> conn;
    if (!connected(spec, &runtime, &conn))
      return 0;
    return conn->wait_transfer(token, std::chrono::milliseconds(100)) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

int ava_guest_stage_blocking(const struct ava_guest_spec *spec, uint64_t bytes) {
  // Every blocking read and map asks: small ones go without finding a runtime.
  if (bytes < ava::guest::Connection::kStageBlockingMin)
    return 0;
  try {
    Runtime *runtime = nullptr;
    std::shared_ptr<ava::guest::Connection> conn;
    if (!connected(spec, &runtime, &conn))
      return 0;
    return conn->stage_blocking(bytes) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

uint64_t ava_guest_transfer_expect_blocking(const struct ava_guest_spec *spec, void *dst,
                                            uint64_t capacity) {
  try {
    Runtime *runtime = ava::guest::find_runtime(spec, true);
    return runtime != nullptr ? runtime->transfers().expect(dst, capacity, true) : 0;
  } catch (...) {
    return 0;
  }
}

int ava_guest_transfer_finish(const struct ava_guest_spec *spec, uint64_t token) {
  try {
    Runtime *runtime = nullptr;
    std::shared_ptr<ava::guest::Connection> conn;
    if (!connected(spec, &runtime, &conn)) {
      if (runtime != nullptr)
        runtime->transfers().forget(token);
      return -1;
    }
    return conn->finish_transfer(token, std::chrono::milliseconds(1000));
  } catch (...) {
    return -1;
  }
}

uint64_t ava_guest_pipeline_chunk(const struct ava_guest_spec *spec, const void *ptr,
                                  uint64_t bytes, uint32_t *window) {
  *window = 1;
  try {
    Runtime *runtime = nullptr;
    std::shared_ptr<ava::guest::Connection> conn;
    if (!connected(spec, &runtime, &conn))
      return 0;
    *window = conn->pipeline_window();
    return conn->pipeline_chunk(ptr, bytes);
  } catch (...) {
    return 0;
  }
}

void *ava_guest_map_alloc(const struct ava_guest_spec *spec, uint64_t bytes) {
  try {
    Runtime *runtime = nullptr;
    std::shared_ptr<ava::guest::Connection> conn;
    if (!connected(spec, &runtime, &conn))
      return nullptr;
    return conn->map_block(bytes);
  } catch (...) {
    return nullptr;
  }
}

void ava_guest_transfer_adopt(const struct ava_guest_spec *spec, uint64_t token, void *block) {
  try {
    Runtime *runtime = ava::guest::find_runtime(spec, false);
    std::shared_ptr<ava::guest::Connection> conn;
    // A broken connection keeps its heap, and the block, until the program ends.
    if (runtime != nullptr && token != 0 && runtime->acquire(UINT32_MAX, &conn).is_ok())
      runtime->transfers().adopt(token, block, conn);
  } catch (...) {
    // The block leaks: it may still be the worker's.
  }
}

void ava_guest_transfer_forget(const struct ava_guest_spec *spec, uint64_t token) {
  Runtime *runtime = ava::guest::find_runtime(spec, false);
  if (runtime != nullptr && token != 0)
    runtime->transfers().forget(token);
}

void ava_guest_transfer_cancel(const struct ava_guest_spec *spec, uint64_t token) {
  Runtime *runtime = ava::guest::find_runtime(spec, false);
  if (runtime != nullptr && token != 0)
    runtime->transfers().cancel(token, ava::guest::Connection::abandoned_by_this_thread());
}

void ava_guest_unsupported(const struct ava_guest_spec *spec, const char *func_name) {
  try {
    if (spec == nullptr) {
      log_line("%s is not supported by this spec", func_name != nullptr ? func_name : "a function");
      return;
    }
    ava::guest::find_runtime(spec, true)->report_unsupported(func_name);
  } catch (...) {
    log_line("%s is not supported by this spec", func_name != nullptr ? func_name : "a function");
  }
}

void *ava_guest_host_alloc(uint64_t bytes) {
  return ava::big_block_alloc(bytes, false, 128);
}

void ava_guest_host_free(void *ptr, uint64_t bytes) {
  ava::big_block_free(ptr, bytes);
}

void ava_guest_shutdown(const struct ava_guest_spec *spec) {
  if (spec == nullptr) {
    return;
  }
  try {
    // Created if need be, so that a call from a later destructor finds the
    // library shut down instead of connecting.
    ava::guest::find_runtime(spec, true)->shutdown();
  } catch (...) {
    log_line("internal error at shutdown");
  }
}

} // extern "C"
