// SPDX-License-Identifier: MIT
// ava_guest_zerocopy_alloc/free: memory in the shared heap for programs that
// want their buffers to reach the worker without a copy. Every generated guest
// library exports them as ava_zerocopy_alloc/free for its own spec.
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_set>

#include "shim/ava_shim.h"
#include "shim/connection.hpp"
#include "shim/runtime_registry.hpp"

namespace {

// Pointers that came from malloc because no heap was available: only these
// may go to free(); anything else unknown is left alone rather than crash.
std::mutex g_fallback_mu;
std::unordered_set<void *> *g_fallback = nullptr;

void *fallback_alloc(uint64_t size) {
  void *p = std::malloc(size > 0 ? size : 1);
  if (p == nullptr)
    return nullptr;
  try {
    std::lock_guard lock(g_fallback_mu);
    if (g_fallback == nullptr)
      g_fallback = new std::unordered_set<void *>();
    g_fallback->insert(p);
  } catch (const std::bad_alloc &) {
    std::free(p);
    return nullptr;
  }
  return p;
}

} // namespace

extern "C" void *ava_guest_zerocopy_alloc(const struct ava_guest_spec *spec, uint64_t size) {
  try {
    ava::guest::Runtime *runtime = ava::guest::find_runtime(spec, true);
    std::shared_ptr<ava::guest::Connection> conn;
    if (runtime != nullptr && runtime->acquire(0, &conn).is_ok() && conn->heap() != nullptr) {
      if (void *p = conn->heap()->allocate(size))
        return p;
    }
  } catch (...) {
    // Fall back to ordinary memory: the program still works, with copies.
  }
  return fallback_alloc(size);
}

extern "C" void ava_guest_zerocopy_free(const struct ava_guest_spec *spec, void *ptr) {
  if (ptr == nullptr)
    return;
  try {
    ava::guest::Runtime *runtime = ava::guest::find_runtime(spec, false);
    std::shared_ptr<ava::guest::Connection> conn;
    if (runtime != nullptr && runtime->acquire(0, &conn).is_ok() && conn->heap() != nullptr &&
        conn->heap()->release(ptr))
      return;
    std::lock_guard lock(g_fallback_mu);
    if (g_fallback != nullptr && g_fallback->erase(ptr) == 1)
      std::free(ptr);
  } catch (...) {
    // Leaking one block beats crashing the program.
  }
}
