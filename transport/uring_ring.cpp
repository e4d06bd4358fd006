// SPDX-License-Identifier: MIT
#include "transport/uring_ring.hpp"

#include <errno.h>

#include <chrono>
#include <thread>

namespace ava::detail {
namespace {

constexpr int kMaxBusyRetries = 1000;

} // namespace

UringRing::~UringRing() {
  if (ready_)
    io_uring_queue_exit(&ring_);
}

int UringRing::init(unsigned entries) {
  // COOP_TASKRUN (5.19+) spares an interrupt per completion: this thread
  // always collects completions inside io_uring_enter anyway. Older kernels
  // reject the flag, so retry without it.
  io_uring_params params{};
  params.flags = IORING_SETUP_COOP_TASKRUN;
  int rc = io_uring_queue_init_params(entries, &ring_, &params);
  if (rc == -EINVAL) {
    params = io_uring_params{};
    rc = io_uring_queue_init_params(entries, &ring_, &params);
  }
  ready_ = rc == 0;
  return rc;
}

bool UringRing::take(UringCompletion *out) {
  io_uring_cqe *cqe = nullptr;
  if (io_uring_peek_cqe(&ring_, &cqe) != 0 || cqe == nullptr)
    return false;
  out->tag = io_uring_cqe_get_data64(cqe);
  out->res = cqe->res;
  io_uring_cqe_seen(&ring_, cqe);
  return true;
}

int UringRing::wait(const Deadline &deadline, UringCompletion *out) {
  int busy = 0;
  for (;;) {
    if (take(out))
      return 0;
    int rc;
    if (deadline.forever()) {
      rc = io_uring_submit_and_wait(&ring_, 1);
    } else {
      const int ms = deadline.remaining_ms();
      __kernel_timespec ts{};
      ts.tv_sec = ms / 1000;
      ts.tv_nsec = static_cast<long long>(ms % 1000) * 1000000;
      io_uring_cqe *cqe = nullptr;
      rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
    }
    if (take(out))
      return 0;
    if (rc == -EAGAIN || rc == -EBUSY) {
      // The kernel is short of memory for the request or still flushing
      // completions; give it a moment, but not forever.
      if (++busy > kMaxBusyRetries)
        return rc;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else if (rc < 0 && rc != -ETIME && rc != -EINTR) {
      return rc;
    }
    if (!deadline.forever() && deadline.expired())
      return -ETIME;
  }
}

} // namespace ava::detail
