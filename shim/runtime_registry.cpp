// SPDX-License-Identifier: MIT
#include "shim/runtime_registry.hpp"

#include <pthread.h>

#include <atomic>
#include <new>

#include "shim/thread_util.hpp"

namespace ava::guest {

namespace {

struct RuntimeNode {
  const ava_guest_spec *spec;
  Runtime *runtime;
  RuntimeNode *next;
};

// Constant-initialised: a guest library must not run global constructors.
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
std::atomic<RuntimeNode *> g_head{nullptr};
bool g_atfork_registered = false;

RuntimeNode *scan(const ava_guest_spec *spec) {
  for (RuntimeNode *n = g_head.load(std::memory_order_acquire); n != nullptr; n = n->next) {
    if (n->spec == spec) {
      return n;
    }
  }
  return nullptr;
}

void prepare_fork() {
  pthread_mutex_lock(&g_mu);
  for (RuntimeNode *n = g_head.load(std::memory_order_relaxed); n != nullptr; n = n->next) {
    n->runtime->prepare_fork();
  }
}

void parent_after_fork() {
  for (RuntimeNode *n = g_head.load(std::memory_order_relaxed); n != nullptr; n = n->next) {
    n->runtime->parent_after_fork();
  }
  pthread_mutex_unlock(&g_mu);
}

void child_after_fork() {
  reset_thread_cache_after_fork();
  reset_async_errors_after_fork();
  for (RuntimeNode *n = g_head.load(std::memory_order_relaxed); n != nullptr; n = n->next) {
    n->runtime->child_after_fork();
  }
  pthread_mutex_unlock(&g_mu);
}

class RegistryLock {
public:
  RegistryLock() { pthread_mutex_lock(&g_mu); }
  ~RegistryLock() { pthread_mutex_unlock(&g_mu); }
  RegistryLock(const RegistryLock &) = delete;
  RegistryLock &operator=(const RegistryLock &) = delete;
};

} // namespace

Runtime *find_runtime(const ava_guest_spec *spec, bool create) {
  RuntimeNode *node = scan(spec);
  if (node != nullptr || !create) {
    return node != nullptr ? node->runtime : nullptr;
  }
  RegistryLock lock;
  node = scan(spec);
  if (node != nullptr) {
    return node->runtime;
  }
  if (!g_atfork_registered) {
    // Registered from inside the guest library, so glibc drops the handlers
    // when the library is unloaded.
    if (pthread_atfork(prepare_fork, parent_after_fork, child_after_fork) != 0) {
      throw std::bad_alloc();
    }
    g_atfork_registered = true;
  }
  auto *runtime = new Runtime(spec);
  try {
    node = new RuntimeNode{spec, runtime, g_head.load(std::memory_order_relaxed)};
  } catch (...) {
    delete runtime;
    throw;
  }
  g_head.store(node, std::memory_order_release);
  return runtime;
}

} // namespace ava::guest
