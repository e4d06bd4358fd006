// SPDX-License-Identifier: MIT
// The shm hand-over on the worker's unix socket (SOCK_SEQPACKET, so each
// message arrives whole): the guest sends one ShmHello carrying the region's
// memfd as SCM_RIGHTS, the worker answers one ShmHelloAck (status 0, or why
// it refused). After that nothing more travels on the socket; it stays open
// as the liveness signal of both sides.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "ava/ring.h"
#include "transport/shm.hpp"

namespace ava::detail {

constexpr uint32_t kShmHelloMagic = 0x48535641u; // "AVSH" read as little-endian bytes
constexpr uint32_t kShmHelloVersion = 1u;

struct ShmHello {
  uint32_t magic;
  uint32_t version;
  uint64_t region_size; // must equal the memfd's size and the header's total_size
  uint64_t guest_pid;   // for logs
  uint64_t reserved;    // zero
};
static_assert(sizeof(ShmHello) == 32, "ShmHello size");

struct ShmHelloAck {
  uint32_t magic;
  uint32_t version;
  int32_t status;    // 0 or a negative AVA_E_*
  uint32_t reserved; // zero
  char reason[240];  // NUL-terminated when status != 0
};
static_assert(sizeof(ShmHelloAck) == 256, "ShmHelloAck size");

// For tests that play a misbehaving guest.
struct ShmGuestTamper {
  // Called on the freshly made region before it is handed over.
  std::function<void(ava_region_hdr *)> edit_header;
  // When >= 0, sent instead of the region's memfd (still owned by the caller).
  int send_fd = -1;
};

Status connect_shm_tampered(const Address &address, int connect_timeout_ms,
                            const ShmOptions &options, const ShmGuestTamper &tamper,
                            std::unique_ptr<Channel> *out);

} // namespace ava::detail
