// SPDX-License-Identifier: MIT
// One guest from HELLO to teardown: the reader loop that validates and routes
// its messages, its shadow threads, and the release of everything it leaves.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "transport/channel.hpp"
#include "worker/plugin_set.hpp"

namespace ava {

struct WorkerOptions;
class GuestConnection;
class ShadowThread;

class GuestSession {
public:
  GuestSession(std::unique_ptr<Channel> channel, PluginSet &plugins, const WorkerOptions &options);
  ~GuestSession();
  GuestSession(const GuestSession &) = delete;
  GuestSession &operator=(const GuestSession &) = delete;

  // Runs on the calling thread until the guest leaves or stop() is called;
  // always tears down before returning.
  Status serve();
  // Any thread: makes serve() wind down.
  void stop();

private:
  Status hello();
  Status read_loop();
  void on_call(MsgBuf &message);
  int check_call(const ava_msg_hdr &hdr) const;
  void reject(const ava_msg_hdr &hdr, int status, const char *why);
  void teardown();

  std::shared_ptr<GuestConnection> connection_;
  PluginSet &plugins_;
  uint32_t max_guest_threads_;
  bool torn_down_ = false;
  std::unordered_map<uint64_t, std::unique_ptr<ShadowThread>> shadows_;
};

} // namespace ava
