// SPDX-License-Identifier: MIT
// The worker process: accepts guests on a channel listener and serves each one
// with the spec plugin it asks for (see worker/ava_worker_rt.h for the C side
// that generated plugins call).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ava/wire.h"
#include "transport/channel.hpp"
#include "worker/credentials.hpp"
#include "worker/plugin_set.hpp"

namespace ava {

struct WorkerOptions {
  std::vector<std::string> specs; // spec names this worker serves; empty = any plugin in plugin_dir
  std::string plugin_dir;         // holds libava_worker_<spec>.so
  Address listen;
  int callback_timeout_ms = 30000;
  uint64_t max_message = AVA_MSG_MAX_DEFAULT;
  int ready_fd = -1;           // if >= 0: receives "ADDRESS\n" once listening, then is closed
  bool exit_when_idle = false; // exit after the last guest disconnects (used by `ava run`)
  bool io_uring = false;       // unix/tcp guests are served through io_uring channels
  // If not empty: each guest session appends its line to this file when it
  // ends (worker/session_report.hpp).
  std::string report_file;
  // Shadow threads one guest may have; a CALL from one more guest thread gets AVA_E_NOMEM.
  uint32_t max_guest_threads = 1024;
  // Handles one guest may hold; a call that would register one more fails
  // (AVA_E_POLICY: the API's out-of-resources error). 0: no limit.
  uint32_t max_guest_objects = 262144;
  // Callback registrations one guest may hold (those that outlive their
  // call: until their handle goes, until they ran, or until the guest
  // leaves); one more fails as out of resources (AVA_E_POLICY). 0: no limit.
  uint32_t max_guest_callbacks = 65536;
  // Bytes of a guest's buffers kept beyond their call (ava_w_buffer_keep);
  // a keep past it fails its call as out of resources (AVA_E_POLICY). 0: no limit.
  uint64_t max_guest_kept_bytes = uint64_t{256} << 20;
  // A guest that reads nothing for this long while the worker sends to it is
  // dropped (its sends fail), so it cannot hold a worker or driver thread.
  int send_timeout_ms = 30000;
  // Admission of each well-formed CALL (sharing policies): AVA_OK, or a
  // status (AVA_E_POLICY) and *why; a refused sync call is answered with it.
  // Called from the guest's reader thread only. Empty admits everything.
  std::function<int(const ava_msg_hdr &hdr, uint64_t bytes, std::string *why)> admit_call;
  // Told the status of every call the worker refused before running it (a
  // malformed call, one the spec's command table rejects, a policy refusal),
  // from the guest's reader thread; statistics only.
  std::function<void(int status)> on_refused;
  // Quota of a resource the spec's calls allocate (ava_allocates_resource:
  // e.g. "device_memory"), 0 = unlimited; asked before each such call, from
  // shadow threads. Empty: no accounting.
  std::function<uint64_t(std::string_view resource)> resource_quota;
  // Settings of the host configuration for plugins, by "<spec>.<key>"
  // (spec code reads them with ava_w_setting); checked where they are read.
  std::map<std::string, std::string, std::less<>> plugin_settings;
  // Credentials a guest's HELLO must show one of (worker/credentials.hpp);
  // null: none required (a credential sent anyway is ignored).
  std::shared_ptr<const CredentialTable> credentials;
};

// Serves guests until SIGINT/SIGTERM (or, with exit_when_idle, until the last
// guest left). Returns the process exit code. Call it from the main thread
// before other threads exist: it blocks SIGINT/SIGTERM so that only its
// signalfd sees them.
int run_worker(const WorkerOptions &options);

// Serves one already-connected guest on the calling thread until it
// disconnects, then releases everything the guest left behind. An orderly
// GOODBYE or EOF is ok; a protocol error is returned (and logged).
Status serve_guest(std::unique_ptr<Channel> channel, PluginSet &plugins,
                   const WorkerOptions &options);

// serve_guest, and an orderly end of the session (its objects released, its
// report line written) as soon as stop_fd becomes readable (a signalfd of
// SIGTERM, in a worker process that serves one guest).
Status serve_guest_until(std::unique_ptr<Channel> channel, PluginSet &plugins,
                         const WorkerOptions &options, int stop_fd);

} // namespace ava
