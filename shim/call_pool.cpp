// SPDX-License-Identifier: MIT
#include "shim/call_pool.hpp"

#include <array>
#include <memory>

namespace ava::guest {

namespace {

// Programs load one or two guest libraries (OpenCL, CUDA runtime and driver);
// a fifth runtime's calls on a thread are allocated as before.
constexpr size_t kSlots = 4;

struct Slot {
  Runtime *runtime = nullptr;
  uint64_t generation = 0;
  std::unique_ptr<Call> call;
  // A call of this runtime is open on this thread (e.g. one made from a
  // spec helper in the middle of another): the next one is allocated.
  bool busy = false;
};

struct ThreadCalls {
  std::array<Slot, kSlots> slots;
  ~ThreadCalls();
};

// Calls still come after the thread's C++ thread_locals are gone (a
// library's atexit handler calling the API in the main thread): they are
// then allocated one by one, and t_calls is never touched again. Trivially
// destructible, so it is valid for the thread's whole life.
thread_local bool t_calls_gone = false;
// Its destructor, registered on first use, frees the calls at thread exit
// (and keeps the library loaded until then). Runtimes are never freed
// (runtime_registry.hpp), so a slot's runtime stays valid.
thread_local ThreadCalls t_calls;
ThreadCalls::~ThreadCalls() {
  t_calls_gone = true;
}

Slot *slot_of(Runtime *runtime) {
  if (t_calls_gone)
    return nullptr;
  Slot *empty = nullptr;
  for (Slot &s : t_calls.slots) {
    if (s.runtime == runtime)
      return &s;
    if (s.runtime == nullptr && empty == nullptr)
      empty = &s;
  }
  if (empty != nullptr)
    empty->runtime = runtime;
  return empty;
}

} // namespace

Call *begin_call(Runtime *runtime, uint32_t func_id, uint32_t flags) {
  Slot *slot = slot_of(runtime);
  if (slot != nullptr && !slot->busy && slot->call != nullptr &&
      slot->generation == runtime->generation() && !slot->call->connection().broken()) {
    slot->call->restart(func_id, flags, nullptr);
    slot->busy = true;
    return slot->call.get();
  }
  // The slow path reports a failure (shut down, broken, cannot connect).
  std::shared_ptr<Connection> conn;
  uint64_t generation = 0;
  Status st = runtime->acquire(func_id, &conn, &generation);
  if (!st.is_ok()) {
    runtime->report(func_id, st);
    return nullptr;
  }
  if (slot == nullptr || slot->busy)
    return new Call(runtime, std::move(conn), func_id, flags);
  if (slot->call == nullptr)
    slot->call = std::make_unique<Call>(runtime, std::move(conn), func_id, flags);
  else
    slot->call->restart(func_id, flags, std::move(conn));
  slot->generation = generation;
  slot->busy = true;
  return slot->call.get();
}

void end_call(Call *call) {
  if (call == nullptr)
    return;
  if (!t_calls_gone) {
    for (Slot &s : t_calls.slots) {
      if (s.call.get() == call) {
        call->finish();
        s.busy = false;
        return;
      }
    }
  }
  delete call;
}

} // namespace ava::guest
