// SPDX-License-Identifier: MIT
#include "shim/thread_util.hpp"

#include <pthread.h>
#include <unistd.h>

namespace ava::guest {

namespace {

// Trivially initialised, so no TLS constructors run in the host program.
thread_local uint64_t t_tid = 0;
thread_local uint64_t t_seq = 0;

} // namespace

uint64_t current_tid() {
  if (t_tid == 0) {
    t_tid = static_cast<uint64_t>(::gettid());
  }
  return t_tid;
}

uint64_t next_thread_seq() {
  return ++t_seq;
}

void reset_thread_cache_after_fork() {
  t_tid = 0;
}

SignalBlock::SignalBlock() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved_);
}

SignalBlock::~SignalBlock() {
  pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
}

} // namespace ava::guest
