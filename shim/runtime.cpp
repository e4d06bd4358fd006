// SPDX-License-Identifier: MIT
#include "shim/runtime.hpp"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>

#include "shim/config.hpp"
#include "shim/connect.hpp"
#include "shim/log.hpp"
#include "shim/thread_util.hpp"

namespace ava::guest {

std::string Runtime::func_name(uint32_t func_id) const {
  if (spec_->func_names != nullptr && func_id < spec_->nfuncs &&
      spec_->func_names[func_id] != nullptr) {
    return spec_->func_names[func_id];
  }
  return std::string(spec_->name) + " function " + std::to_string(func_id);
}

void Runtime::report(uint32_t func_id, const Status &st) {
  if (st.message.empty()) {
    return;
  }
  uint64_t key = std::hash<std::string>{}(st.message) ^ (uint64_t{func_id} * 0x9e3779b97f4a7c15ull);
  {
    std::lock_guard lock(report_mu_);
    if (reported_.count(key) != 0) {
      return;
    }
    if (reported_.size() >= kMaxReported) {
      if (!reports_capped_) {
        reports_capped_ = true;
        log_line("too many different %s errors; further ones are not reported", spec_->name);
      }
      return;
    }
    try {
      reported_.insert(key);
    } catch (const std::bad_alloc &) {
      // Reporting again later is better than not at all.
    }
  }
  log_line("%s: %s", func_name(func_id).c_str(), st.message.c_str());
}

void Runtime::report_unsupported(const char *name) {
  if (name == nullptr) {
    name = "a function";
  }
  {
    std::lock_guard lock(report_mu_);
    if (!unsupported_reported_.insert(name).second) {
      return;
    }
  }
  log_line("%s is not supported by this spec", name);
}

Status Runtime::fail_connect_locked(const std::string &message) {
  state_ = State::Failed;
  retry_at_ = std::chrono::steady_clock::now() + kRetryDelay;
  if (message != last_failure_) {
    log_line("%s", message.c_str());
    last_failure_ = message;
  }
  return Status::error(AVA_E_CLOSED, "");
}

Status Runtime::connect_locked(bool *run_epilogue) {
  GuestConfig config;
  Status st = load_guest_config(spec_->name, &config);
  if (!st.is_ok()) {
    return fail_connect_locked("cannot read the guest configuration: " + st.message);
  }
  // In a VM with ava.ko loaded, the device is the configuration.
  if (config.worker.empty() && ::access(kDefaultKmodDevice, F_OK) == 0) {
    config.worker = std::string("kmod:") + kDefaultKmodDevice;
    config.channel = ChannelKind::Kmod;
    config.source = kDefaultKmodDevice + std::string(" present");
  }
  if (config.worker.empty()) {
    return fail_connect_locked(std::string("no worker configured for spec '") + spec_->name +
                               "': set AVA_WORKER, or 'worker' in /etc/ava/guest.toml, or run "
                               "the program with `ava run`, or load ava.ko in a VM");
  }
  if (!prologue_done_) {
    prologue_done_ = true;
    if (spec_->init_prologue != nullptr) {
      spec_->init_prologue();
    }
  }
  std::unique_ptr<Channel> channel;
  std::string address;
  HelloAnswer answer;
  st = connect_worker(spec_, config, &channel, &address, &answer);
  if (!st.is_ok()) {
    std::string source = config.source.empty() ? "" : " (configured by " + config.source + ")";
    return fail_connect_locked("cannot connect to the " + std::string(spec_->name) + " worker at " +
                               address + source + ": " + without_address(st.message, address));
  }
  auto conn = std::make_shared<Connection>(spec_, &callbacks_, &transfers_, std::move(channel),
                                           address, config);
  st = conn->start();
  if (!st.is_ok()) {
    return fail_connect_locked(st.message);
  }
  conn_ = std::move(conn);
  // Pairs with the acquire load in generation(): a thread that sees the new
  // value takes the connection from acquire() again.
  generation_.fetch_add(1, std::memory_order_release);
  session_ = std::move(answer);
  // A new worker knows none of the objects the shapes were learned with.
  shapes_.forget_all();
  state_ = State::Connected;
  last_failure_.clear();
  *run_epilogue = !connected_once_;
  connected_once_ = true;
  return Status::ok();
}

Status Runtime::acquire(uint32_t func_id, std::shared_ptr<Connection> *out, uint64_t *generation) {
  if (connecting_tid_.load(std::memory_order_relaxed) == current_tid()) {
    return Status::error(AVA_E_STATE, std::string("called while the ") + spec_->name +
                                          " guest library connects to its worker");
  }
  bool run_epilogue = false;
  {
    std::lock_guard lock(mu_);
    switch (state_) {
    case State::Connected:
      if (conn_->broken()) {
        return Status::error(AVA_E_CLOSED, "");
      }
      *out = conn_;
      if (generation != nullptr)
        *generation = generation_.load(std::memory_order_relaxed);
      return Status::ok();
    case State::ShutDown:
      if (!shutdown_reported_) {
        shutdown_reported_ = true;
        log_line("%s called after the %s guest library was shut down", func_name(func_id).c_str(),
                 spec_->name);
      }
      return Status::error(AVA_E_CLOSED, "");
    case State::Failed:
      if (std::chrono::steady_clock::now() < retry_at_) {
        return Status::error(AVA_E_CLOSED, "");
      }
      break;
    case State::Idle:
      break;
    }
    connecting_tid_.store(current_tid(), std::memory_order_relaxed);
    Status st;
    try {
      st = connect_locked(&run_epilogue);
    } catch (...) {
      connecting_tid_.store(0, std::memory_order_relaxed);
      throw;
    }
    connecting_tid_.store(0, std::memory_order_relaxed);
    if (!st.is_ok()) {
      return st;
    }
    *out = conn_;
    if (generation != nullptr)
      *generation = generation_.load(std::memory_order_relaxed);
  }
  // Outside the lock: the epilogue may itself call the API.
  if (run_epilogue && spec_->init_epilogue != nullptr) {
    spec_->init_epilogue();
  }
  return Status::ok();
}

void Runtime::shutdown() {
  bool run_fini;
  {
    std::lock_guard lock(mu_);
    if (state_ == State::ShutDown || shutting_down_) {
      return;
    }
    shutting_down_ = true;
    run_fini = connected_once_;
  }
  // The prologue may still use the connection, e.g. to release objects.
  if (run_fini && spec_->fini_prologue != nullptr) {
    spec_->fini_prologue();
  }
  std::shared_ptr<Connection> conn;
  {
    std::lock_guard lock(mu_);
    state_ = State::ShutDown;
    conn = std::move(conn_);
    generation_.fetch_add(1, std::memory_order_release); // pairs with generation()
  }
  if (conn != nullptr) {
    conn->close();
    conn.reset();
  }
  callbacks_.clear();
  if (run_fini && spec_->fini_epilogue != nullptr) {
    spec_->fini_epilogue();
  }
}

void Runtime::prepare_fork() {
  mu_.lock();
  callbacks_.lock_for_fork();
  report_mu_.lock();
  try {
    abandoned_.reserve(abandoned_.size() + 1);
  } catch (const std::bad_alloc &) {
    // child_after_fork then keeps the connection by other means.
  }
}

void Runtime::parent_after_fork() {
  report_mu_.unlock();
  callbacks_.unlock_after_fork();
  mu_.unlock();
}

void Runtime::child_after_fork() {
  if (conn_ != nullptr) {
    // The parent still uses this connection: no GOODBYE, no shutdown().
    if (abandoned_.size() < abandoned_.capacity()) {
      abandoned_.push_back(std::move(conn_));
    } else {
      conn_->keep_forever(conn_);
    }
    conn_.reset();
  }
  // The forking thread's pooled call still names the parent's connection.
  generation_.fetch_add(1, std::memory_order_release); // pairs with generation()
  if (state_ == State::Connected || state_ == State::Failed) {
    state_ = State::Idle;
  }
  connecting_tid_.store(0, std::memory_order_relaxed);
  report_mu_.unlock();
  callbacks_.unlock_after_fork();
  mu_.unlock();
}

} // namespace ava::guest
