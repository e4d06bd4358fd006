// SPDX-License-Identifier: MIT
// The local shared-memory channel ("shm:/path/worker.sock"): a memfd region
// laid out as in include/ava/ring.h (command ring, reply ring, heap), made by
// the guest and handed to the worker over the worker's unix socket, which
// then stays open as the liveness signal. connect_channel/listen_channel use
// these with shm_options_from_env(); call them directly to choose sizes.
#pragma once

#include <cstdint>
#include <memory>

#include "transport/channel.hpp"

namespace ava {

// 20 us where this process may use at least 2 CPUs, else 0. The thread that
// waits on a ring is the one that acts on what arrives (a caller for its
// reply, an idle worker shadow thread for its next call), so spinning saves a
// futex wake-up each way (measured on 2 vCPUs, a null call through the whole
// stack: ~0.55 us p50 with 20 us, ~32 us without).
uint64_t default_shm_spin_ns();

struct ShmOptions {
  // Each ring (command and reply); a power of two within ring.h's bounds.
  // Messages larger than a ring go in pieces, so the size trades only cache
  // footprint against how far a producer may run ahead: 2 MiB (both rings fit
  // a 2 MiB L2) gave the most async calls/s on 2 vCPUs, ~1.9x 64 MiB rings,
  // with transfer bandwidth unchanged.
  uint64_t ring_bytes = uint64_t{2} << 20;
  // The zero-copy heap; a multiple of 4096, may be 0. memfd pages cost
  // nothing until touched, so a large heap is cheap. Mappings live in it and
  // may take three quarters (clpeak maps 512 MiB at a time).
  uint64_t heap_bytes = uint64_t{1} << 30;
  // How long a waiting side polls before it sleeps on a futex: the first
  // 2 us with pause instructions, the rest yielding the CPU between checks.
  uint64_t spin_ns = default_shm_spin_ns();
};

// Defaults overridden by AVA_SHM_RING_MB, AVA_SHM_HEAP_MB and AVA_SHM_SPIN_NS;
// a malformed value is AVA_E_PROTO naming the variable.
Status shm_options_from_env(ShmOptions *out);
// Checks sizes and spin budget; the message names the bad field.
Status check_shm_options(const ShmOptions &options);

// The guest side: connects to the worker's bootstrap socket, creates the
// region and hands it over. connect_timeout_ms bounds the connection attempt
// and the worker's answer.
Status connect_shm(const Address &address, int connect_timeout_ms, const ShmOptions &options,
                   std::unique_ptr<Channel> *out);
// The worker side: the sizes come from each guest; only spin_ns is used here.
// accept() refuses a region that fails any check with AVA_E_PROTO (the guest
// is told why); a guest that connects and says nothing does not block others.
Status listen_shm(const Address &address, const ShmOptions &options,
                  std::unique_ptr<Listener> *out);

} // namespace ava
