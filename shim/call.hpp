// SPDX-License-Identifier: MIT
// One API call in progress (behind struct ava_call.impl): buffers referenced
// for a gather send, callback registrations, and the validated reply.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "shim/ava_shim.h"
#include "shim/connection.hpp"
#include "shim/reply.hpp"
#include "shim/runtime.hpp"

namespace ava::guest {

class Call {
public:
  Call(Runtime *runtime, std::shared_ptr<Connection> conn, uint32_t func_id, uint32_t flags);
  ~Call();
  Call(const Call &) = delete;
  Call &operator=(const Call &) = delete;

  Runtime *runtime() const { return runtime_; }
  Connection &connection() const { return *conn_; }

  // For a pooled call (CallPool): ends what the last use left (what the
  // destructor does), so the call is as new but keeps its buffers' capacity.
  void finish();
  // Starts another use of a finished call, on conn if it is given.
  void restart(uint32_t func_id, uint32_t flags, std::shared_ptr<Connection> conn);

  Status put_buffer(ava_buf_desc *desc, const void *ptr, uint64_t count, uint64_t elem_size,
                    uint32_t dir);
  Status add_callback(uint32_t decl_id, void (*fn)(void), void *userdata, uint32_t lifetime,
                      uint64_t coupled_handle, uint64_t *id);
  Status invoke(const void *args, uint32_t args_len, const void **reply, uint32_t reply_len);
  // The API refused the call: every registration of it ends with the call.
  void callbacks_unused() { callbacks_unused_ = true; }
  Status get_buffer(const ava_buf_desc *desc, void *dst, uint64_t capacity);
  bool take_async_error(uint32_t ret_class, int64_t *value);

private:
  struct Registration {
    uint64_t id;
    uint32_t lifetime;
  };
  struct AsyncError {
    bool valid = false;
    int64_t value = 0;
    uint32_t ret_class = 0;
    uint32_t func_id = 0;
  };

  Status wait_and_check(uint64_t call_id, uint32_t reply_len, const void **reply);

  Runtime *runtime_;
  std::shared_ptr<Connection> conn_;
  uint32_t func_id_;
  uint32_t flags_;
  bool invoked_ = false;
  // The worker accepted the call, so registrations it was given are live.
  bool delivered_ = false;
  // The API refused it, so none of them will ever run.
  bool callbacks_unused_ = false;

  Status put_heap_buffer(ava_buf_desc *desc, const void *ptr, uint64_t bytes, uint32_t dir,
                         bool hint, bool *placed);

  std::vector<struct iovec> payload_iov_;
  // Heap space this call borrowed to carry large buffers; freed with the call.
  std::vector<void *> heap_temps_;
  uint64_t payload_len_ = 0;
  std::vector<Registration> registrations_;

  ReplyWaiter waiter_;
  MsgBuf reply_;
  bool have_reply_ = false;
  ReplyView view_;
  AsyncError async_error_;
};

} // namespace ava::guest
