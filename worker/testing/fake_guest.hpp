// SPDX-License-Identifier: MIT
// Test helpers that play the guest side with raw messages of the wtest spec
// (tests/wtest: the structs and ids of the generated wtest_wire.h), and a
// harness that serves each connected fake guest with serve_guest() on its
// own thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ava/wire.h"
#include "transport/channel.hpp"
#include "worker/ava_worker_rt.h"
#include "worker/server.hpp"
#include "wtest_wire.h"

// The generated wtest worker plugin, where a test links it statically
// (test_worker_plugin loads it as a module instead).
extern "C" const ava_worker_spec *ava_worker_spec_export(void);

namespace ava::testing {

// Bound for every wait of a test, so that a broken worker fails the test
// instead of hanging it. Never used to assert on timing.
constexpr int kWaitMs = 10000;

// Return class of wt_status (wtest_wire.h lists the classes): async errors
// of wt_status functions are reported with it.
constexpr uint32_t kStatusClass = 1;

// The payload of a CALL under construction.
class Payload {
public:
  // Appends an IN (or IN|OUT) buffer with its zero guard and padding.
  ava_buf_desc add(const void *data, uint64_t len, uint32_t dir = AVA_BUF_IN);
  static ava_buf_desc out(uint64_t capacity) {
    return ava_buf_desc{0, capacity, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  }
  std::vector<uint8_t> &bytes() { return bytes_; }
  const std::vector<uint8_t> &bytes() const { return bytes_; }

private:
  std::vector<uint8_t> bytes_;
};

// A whole message in 8-byte aligned storage.
class RawMessage {
public:
  RawMessage(uint16_t kind, uint32_t func_id, const void *args, uint32_t args_len,
             const std::vector<uint8_t> &payload = {});
  ava_msg_hdr &hdr() { return *reinterpret_cast<ava_msg_hdr *>(storage_.data()); }
  const ava_msg_hdr &hdr() const { return *reinterpret_cast<const ava_msg_hdr *>(storage_.data()); }
  uint8_t *data() { return reinterpret_cast<uint8_t *>(storage_.data()); }
  uint8_t *args() { return data() + sizeof(ava_msg_hdr); }
  uint64_t size() const { return size_; }

private:
  std::vector<uint64_t> storage_;
  uint64_t size_;
};

// A received REPLY (or other message), decoded without trusting it.
struct Received {
  ava_msg_hdr hdr{};
  std::vector<uint8_t> args;    // argument block
  std::vector<uint8_t> payload; // after the argument block

  // REPLY helpers: the common part and the function's reply struct.
  ava_reply_common common() const;
  template <class T> T reply() const {
    T value{};
    if (args.size() >= sizeof(ava_reply_common) + sizeof(T))
      std::memcpy(&value, args.data() + sizeof(ava_reply_common), sizeof(T));
    return value;
  }
  template <class T> T callback_args() const {
    T value{};
    if (args.size() >= sizeof(T))
      std::memcpy(&value, args.data(), sizeof(T));
    return value;
  }
  // Bytes a descriptor points at in the payload; empty if out of bounds.
  std::vector<uint8_t> bytes(const ava_buf_desc &d) const;
  // The one element of an OUT buffer; T{} unless it holds exactly sizeof(T) bytes.
  template <class T> T out(const ava_buf_desc &d) const {
    T value{};
    std::vector<uint8_t> b = bytes(d);
    if (b.size() == sizeof(T))
      std::memcpy(&value, b.data(), sizeof(T));
    return value;
  }
};

class FakeGuest {
public:
  explicit FakeGuest(std::unique_ptr<Channel> channel) : channel_(std::move(channel)) {}

  // HELLO with the wtest spec identity unless told otherwise; returns the ACK status.
  int hello(const char *name = nullptr, uint32_t spec_id = 0, uint64_t hash = 0);
  Status send(RawMessage &message);
  Status recv(Received *out, int timeout_ms = kWaitMs);

  // Builds a CALL of the wtest spec from thread 1 (sync unless flags say otherwise).
  RawMessage make_call(uint32_t func_id, const void *args, uint32_t args_len,
                       const Payload &payload = {}, uint32_t flags = AVA_F_SYNC,
                       uint64_t thread_id = 1);
  // Sends message and waits for the REPLY with its call_id; other messages
  // (e.g. CALLBACKs) are an error here. Returns the REPLY's status, or a
  // transport status (AVA_E_CLOSED, AVA_E_TIMEOUT) if none came.
  int call(RawMessage &message, Received *reply);
  template <class A>
  int call(uint32_t func_id, const A &args, Received *reply, const Payload &payload = {},
           uint64_t thread_id = 1) {
    RawMessage message = make_call(func_id, &args, sizeof args, payload, AVA_F_SYNC, thread_id);
    return call(message, reply);
  }
  template <class A> Status send_async(uint32_t func_id, const A &args, uint64_t thread_id = 1) {
    RawMessage message = make_call(func_id, &args, sizeof args, {}, AVA_F_ASYNC, thread_id);
    return send(message);
  }

  // Convenience wtest calls; they return 0 (INT32_MIN for add) on any failure.
  uint64_t create_obj(uint64_t size, uint64_t thread_id = 1);
  uint64_t create_other(uint64_t thread_id = 1);
  int32_t add(int32_t a, int32_t b, uint64_t thread_id = 1);

  void goodbye();
  void close() { channel_.reset(); }
  Channel *channel() { return channel_.get(); }

private:
  std::unique_ptr<Channel> channel_;
  uint64_t next_call_id_ = 1;
};

// Serves guests of the given plugins over an abstract unix socket; each
// connect() gets its own serve_guest() thread.
class WorkerHarness {
public:
  explicit WorkerHarness(WorkerOptions options = {});
  ~WorkerHarness();
  WorkerHarness(const WorkerHarness &) = delete;
  WorkerHarness &operator=(const WorkerHarness &) = delete;

  PluginSet &plugins() { return plugins_; }
  // Connects a new fake guest (no HELLO sent yet); nullptr on failure.
  std::unique_ptr<FakeGuest> connect();
  // Connects a plain socket (to write bytes no channel would send); -1 on failure.
  int connect_raw();
  // Waits for serve_guest() of the index-th guest to return; its status.
  Status finish(size_t index);

private:
  bool serve_next();

  struct Served {
    std::thread thread;
    Status result;
  };
  WorkerOptions options_;
  PluginSet plugins_;
  std::unique_ptr<Listener> listener_;
  std::vector<std::unique_ptr<Served>> served_;
};

} // namespace ava::testing
