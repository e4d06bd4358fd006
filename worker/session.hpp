// SPDX-License-Identifier: MIT
// One guest from HELLO to teardown: the reader loop that validates and routes
// its messages, its shadow threads, and the release of everything it leaves.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/channel.hpp"
#include "transport/read_baton.hpp"
#include "worker/msg_scratch.hpp"
#include "worker/plugin_set.hpp"

namespace ava {

struct WorkerOptions;
class CredentialTable;
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

  // Reading is shared (transport/read_baton.hpp): an idle shadow thread reads
  // the channel itself, so a call of its own guest thread runs without a
  // hand-over from the reader (a wake-up each way); the session thread reads
  // whenever no shadow thread does. What the reader gets for other threads is
  // queued to them.
  // Queued: a CALL went to another shadow thread's queue.
  enum class ReadResult { Nothing, Queued, Mine, Closed };
  // Called by a shadow thread holding the baton: receives one message
  // (waiting up to timeout_ms, < 0 for ever) and routes it; a CALL of guest
  // thread thread_id comes back in *mine instead.
  ReadResult read_as_holder(uint64_t thread_id, MsgBuf *mine, int timeout_ms);
  ReadBaton &baton() { return baton_; }
  // Over the queue limit the session thread alone reads, after waiting for room.
  bool queue_full() const;
  // Buffers of large calls read for a shadow thread, kept once it served
  // them (and a shadow thread's own, while it does not read, or one a
  // transfer kept as its staging, once it is done): worker/msg_scratch.hpp.
  void give_scratch(MsgBuf &buf) { scratch_->give(buf); }
  MsgBuf take_scratch() { return scratch_->take(); }
  bool has_scratch() const { return scratch_->has(); }
  void release_scratch() { scratch_->release(); }
  const std::shared_ptr<MsgScratch> &scratch() const { return scratch_; }

private:
  // Receives one message and acts on it; a valid CALL of guest thread `self`
  // is moved to *mine instead of being queued. rx_mu_ held.
  ReadResult read_step(int timeout_ms, uint64_t self, MsgBuf *mine);
  void close_with(const Status &status);
  Status hello();
  Status read_loop();
  // Queues a CALL that passed check_call and admission to its shadow thread.
  void on_call(MsgBuf &message);
  int check_call(const ava_msg_hdr &hdr) const;
  void reject(const ava_msg_hdr &hdr, int status, const char *why);
  void teardown();
  // Appends this session's line to the report file, if there is one.
  void report();

  struct Record;

  std::shared_ptr<GuestConnection> connection_;
  PluginSet &plugins_;
  uint32_t max_guest_threads_;
  std::function<int(const ava_msg_hdr &, uint64_t, std::string *)> admit_call_;
  std::string report_file_;
  const CredentialTable *credentials_; // null: none required
  // From the handshake: the session's id, the credential's name, and the
  // guest's configuration as it sent it (kept for the day a session moves).
  uint64_t session_id_ = 0;
  std::string peer_;
  std::string guest_config_;
  bool torn_down_ = false;
  // Whoever holds rx_mu_ may call recv and route (including on_call, which
  // creates shadow threads): the session thread or one idle shadow thread.
  std::mutex rx_mu_;
  bool reading_over_ = false; // rx_mu_: teardown started, nobody reads again
  ReadBaton baton_;
  std::mutex close_mu_;
  bool closed_ = false;
  Status close_status_;
  std::unordered_map<uint64_t, std::unique_ptr<ShadowThread>> shadows_;
  std::unique_ptr<Record> record_; // seed recording of fuzzing builds, else nothing
  const std::shared_ptr<MsgScratch> scratch_ = std::make_shared<MsgScratch>();
};

} // namespace ava
