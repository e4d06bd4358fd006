// SPDX-License-Identifier: MIT
// One owned io_uring instance, set up with what this kernel accepts, and a
// bounded wait for one completion. The channel keeps one ring per direction:
// a ring's submission and completion queues are single-consumer, and send()
// and recv() may run on two threads at once.
#pragma once

#include <liburing.h>

#include <cstdint>

#include "transport/fd_util.hpp"

namespace ava::detail {

struct UringCompletion {
  uint64_t tag = 0;
  int res = 0;
};

class UringRing {
public:
  UringRing() = default;
  ~UringRing();
  UringRing(const UringRing &) = delete;
  UringRing &operator=(const UringRing &) = delete;

  // 0 or -errno from io_uring_queue_init (-ENOSYS, -EPERM under seccomp,
  // -ENOMEM when the locked-memory limit is reached on older kernels).
  int init(unsigned entries);
  bool ready() const { return ready_; }
  // A submission entry to fill with an io_uring_prep_* helper; nullptr only
  // if the queue is full, which one or two requests in flight never cause.
  io_uring_sqe *prepare() { return io_uring_get_sqe(&ring_); }
  // Submits what was prepared and waits for one completion until deadline:
  // 0 with *out filled, -ETIME when the deadline passed first, or -errno.
  int wait(const Deadline &deadline, UringCompletion *out);

private:
  bool take(UringCompletion *out);

  io_uring ring_{};
  bool ready_ = false;
};

} // namespace ava::detail
