// SPDX-License-Identifier: MIT
// The shapes of calls that succeeded (ava_async_shape): a function that may
// go without waiting is sent async only once a call with the same function
// and the same values of its shape's expressions succeeded on this
// connection, so a call that would fail natively is sent sync and returns
// the API's exact error at the call.
//
// Shapes are kept as 64-bit hashes in a fixed table of atomics, looked up and
// added without a lock (the async fast path). A full probe window evicts one
// shape of it (chosen by the new shape's hash): programs make shapes that
// never recur (a wait list names new events every time), and a table that
// only filled would leave every shape a long-running program makes later
// sync. A forgotten shape only makes its next call sync again, which is only
// slower. An error that an async call reports later, or a new connection,
// forgets every shape.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace ava::guest {

class ShapeCache {
public:
  ShapeCache();

  bool known(uint32_t func_id, const uint64_t *values, uint32_t count) const;
  void learn(uint32_t func_id, const uint64_t *values, uint32_t count);
  void forget_all();

  static uint64_t hash(uint32_t func_id, const uint64_t *values, uint32_t count);

private:
  static constexpr size_t kSlots = 8192; // 64 KiB
  static constexpr size_t kProbe = 16;   // slots a shape may sit in
  std::unique_ptr<std::atomic<uint64_t>[]> slots_;
};

} // namespace ava::guest
