// SPDX-License-Identifier: MIT
// struct ava_wcall: one CALL being served on a shadow thread, and the reply
// under construction. Generated code only ever sees a pointer to it.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "ava/wire.h"
#include "transport/channel.hpp"
#include "worker/ava_worker_rt.h"
#include "worker/resource_ledger.hpp"

// The ava_w_* functions are called by dlopen'ed plugins through the worker
// executable's dynamic symbol table, so they must keep default visibility even
// if the build ever turns hidden visibility on.
#define AVA_W_EXPORT extern "C" __attribute__((visibility("default")))

namespace ava {

class GuestConnection;
class OutSpare;
class MsgScratch;
struct KeptMessage;

// The first failed async call of a shadow thread not yet reported to the guest.
struct AsyncErrorSlot {
  bool pending = false;
  uint32_t ret_class = 0;
  uint32_t func_id = 0;
  int64_t value = 0;
};

} // namespace ava

struct ava_wcall {
  ava_wcall(const std::shared_ptr<ava::GuestConnection> &connection, ava::AsyncErrorSlot *slot,
            uint8_t *message);
  ~ava_wcall();
  ava_wcall(const ava_wcall &) = delete;
  ava_wcall &operator=(const ava_wcall &) = delete;

  const std::shared_ptr<ava::GuestConnection> &connection;
  ava::AsyncErrorSlot *async_error;
  const ava_worker_spec *spec;
  ava_msg_hdr hdr; // a copy: generated code may rewrite the message in place
  uint8_t *args;
  uint8_t *payload;
  uint64_t payload_len;
  uint8_t *heap = nullptr; // the channel's shared heap, if it has one
  uint64_t heap_size = 0;
  bool sync;
  bool finished = false;  // the reply was sent, or the failure reported
  int pending_status = 0; // failure of a helper that cannot return one (e.g. ava_w_handle_out)
  uint64_t out_alloc = 0; // bytes of OUT buffers allocated for this call
  uint64_t bad_handle_types = 0; // bit t: a non-zero id of handle type t was unknown
  uint64_t out_payload = 0;      // reply payload bytes so far, padding included
  // Freed after the call with big_block_free (bytes 0: malloc'ed), or kept
  // in out_spare: an OUT-only buffer of out_used bytes, zeroed before use.
  struct ArenaBlock {
    void *ptr;
    uint64_t bytes;
    uint64_t out_used = 0;
  };
  std::vector<ArenaBlock> arena;
  // The serving shadow thread's zeroed block for large OUT-only buffers;
  // nullptr: every block is fresh.
  ava::OutSpare *out_spare = nullptr;
  std::vector<struct iovec> out_items;      // reply payload items, referenced until the reply
  std::vector<uint64_t> call_callback_keys; // lifetime CALL callback contexts
  // Contexts this call registered to outlive it: key, lifetime, coupled handle.
  struct KeptCallback {
    uint64_t key;
    uint32_t lifetime;
    uint64_t coupled;
  };
  std::vector<KeptCallback> kept_callbacks;
  // AVA_W_PRIVATE copies of heap ranges: the reply copies them back there.
  struct PrivateCopy {
    const void *mem;
    uint64_t offset;
    uint64_t length;
  };
  std::vector<PrivateCopy> private_copies;
  ava::ResourceCharge charge; // reserved for the handle this call creates
  // The message's own buffer, which a transfer may keep as its staging
  // (ava_w_transfer_begin_in): it then moves to kept_message, which this
  // call holds until it ends, and scratch is where it goes back after
  // (nullptr, or no buffer: nothing is kept, bytes are copied).
  ava::MsgBuf *message_buf = nullptr;
  const std::shared_ptr<ava::MsgScratch> *scratch =
      nullptr; // the session's, which outlives the call
  std::shared_ptr<ava::KeptMessage> kept_message;
};

namespace ava {

// Makes w the call that ava_w_current_* see on this thread while in scope.
class CurrentCall {
public:
  explicit CurrentCall(ava_wcall *w);
  ~CurrentCall();
  CurrentCall(const CurrentCall &) = delete;
  CurrentCall &operator=(const CurrentCall &) = delete;

private:
  ava_wcall *previous_;
};

// The call CurrentCall made current on this thread, or nullptr.
ava_wcall *current_call();

// Text for an AVA_E_* status, for log lines.
const char *status_name(int status);

} // namespace ava
