// SPDX-License-Identifier: MIT
// The guest runtime of one spec: configuration, the lazily opened connection
// to its worker, guest callbacks, and what happens at shutdown and fork.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "shim/ava_shim.h"
#include "shim/callback_registry.hpp"
#include "shim/connect.hpp"
#include "shim/connection.hpp"
#include "shim/shape_cache.hpp"

namespace ava::guest {

class Runtime {
public:
  explicit Runtime(const ava_guest_spec *spec) : spec_(spec) {}
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  const ava_guest_spec *spec() const { return spec_; }
  CallbackRegistry &callbacks() { return callbacks_; }
  ShapeCache &shapes() { return shapes_; }
  TransferTable &transfers() { return transfers_; }
  uint64_t next_call_id() { return next_call_id_.fetch_add(1, std::memory_order_relaxed); }

  // The live connection, opened on first use. A failure has been reported
  // (the returned Status has an empty message) or carries its message.
  // *generation, when asked for, is generation() at the time conn was read.
  Status acquire(uint32_t func_id, std::shared_ptr<Connection> *out,
                 uint64_t *generation = nullptr);
  // Changes whenever the connection does (connected, shut down, forked), so a
  // connection kept by a thread (CallPool) is still the one while it matches.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // fini hooks, GOODBYE, threads joined; later calls fail. Idempotent.
  void shutdown();

  // Prints "FUNC: message" unless the status has no message, once per
  // function and message so a failing loop does not flood stderr.
  void report(uint32_t func_id, const Status &st);
  void report_unsupported(const char *func_name);
  // The function's name, or "SPEC function N" for an id outside the spec.
  std::string func_name(uint32_t func_id) const;

  void prepare_fork();
  void parent_after_fork();
  void child_after_fork();

private:
  enum class State { Idle, Connected, Failed, ShutDown };
  // Seconds before a failed connection is tried again.
  static constexpr auto kRetryDelay = std::chrono::seconds(5);

  Status connect_locked(bool *run_epilogue);
  Status fail_connect_locked(const std::string &message);

  const ava_guest_spec *spec_;

  std::mutex mu_;
  State state_ = State::Idle;
  std::shared_ptr<Connection> conn_;
  // Connections inherited over fork(): their threads do not exist in the
  // child, so they are kept, never destroyed or closed.
  std::vector<std::shared_ptr<Connection>> abandoned_;
  std::chrono::steady_clock::time_point retry_at_{};
  std::string last_failure_;
  bool prologue_done_ = false;
  bool connected_once_ = false;
  // The current connection's session (mu_), kept so that a reconnection can
  // one day resume it rather than start over.
  HelloAnswer session_;
  bool shutting_down_ = false;
  bool shutdown_reported_ = false;
  std::atomic<uint64_t> connecting_tid_{0};
  // Bumped under mu_ whenever conn_ changes.
  std::atomic<uint64_t> generation_{1};

  std::atomic<uint64_t> next_call_id_{1};
  CallbackRegistry callbacks_;
  ShapeCache shapes_;
  TransferTable transfers_;

  static constexpr size_t kMaxReported = 1024;
  std::mutex report_mu_;
  std::unordered_set<uint64_t> reported_; // hashes of (function, message)
  bool reports_capped_ = false;
  std::unordered_set<std::string> unsupported_reported_;
};

} // namespace ava::guest
