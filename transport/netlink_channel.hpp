// SPDX-License-Identifier: MIT
// The worker's end of ava.ko's netlink carrier (include/ava/knetlink.h):
// one generic netlink socket registered with ava.ko, on which every kernel
// connection of this kernel arrives. The hub reads the socket on its own
// thread and hands each new connection out as a Channel (accept), so that
// one worker session serves one kernel connection exactly as it serves a
// guest process.
#pragma once

#include <memory>
#include <string>

#include "transport/channel.hpp"

namespace ava {

class NetlinkHub {
public:
  // Registers with ava.ko (needs CAP_NET_ADMIN; one worker per kernel).
  static Status open(std::unique_ptr<NetlinkHub> *out);
  ~NetlinkHub();
  NetlinkHub(const NetlinkHub &) = delete;
  NetlinkHub &operator=(const NetlinkHub &) = delete;

  // Waits for the HELLO of a new kernel connection; the channel's first
  // recv() returns that HELLO. timeout_ms < 0 waits forever; AVA_E_TIMEOUT,
  // or AVA_E_CLOSED after shutdown() or when the socket failed.
  Status accept(std::unique_ptr<Channel> *out, int timeout_ms);
  // Wakes accept() and closes every channel's receiving side.
  void shutdown();
  std::string describe() const;

  struct Core;

private:
  explicit NetlinkHub(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  std::shared_ptr<Core> core_;
};

} // namespace ava
