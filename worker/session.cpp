// SPDX-License-Identifier: MIT
#include "worker/session.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>

#include "worker/cmd_policy.hpp"
#include "worker/connection.hpp"
#include "worker/handshake.hpp"
#include "worker/log.hpp"
#include "worker/server.hpp"
#include "worker/session_report.hpp"
#include "worker/shadow_thread.hpp"
#include "worker/wcall.hpp"

namespace ava {
namespace {

// A peer that connects but never says HELLO is dropped after this long.
constexpr int kHelloTimeoutMs = 30000;
// How long the baton may lie free (its shadow thread serving a call) before
// the session thread reads instead: short enough that a call blocked on
// another guest thread's later call is not held up noticeably, long enough
// that a thread making call after call keeps reading its own.
constexpr auto kShadowGrace = std::chrono::milliseconds(1);

int sanitize_guest_status(int32_t status) {
  return status <= AVA_OK && status >= AVA_E_MIN ? status : AVA_E_PROTO;
}

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(value));
  return text;
}

#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
// Seed recording for the worker fuzzers (tests/fuzz/README.md): with
// AVA_FUZZ_RECORD=DIR every session of a fuzzing build writes what its guest
// sent after HELLO to DIR/SPEC-PID-N.bin as records of a little-endian u32
// length and the message, the input format of fuzz_worker.
class Recorder {
public:
  void open(const char *spec, uint64_t pid) {
    static std::atomic<unsigned> sessions{0};
    const char *dir = std::getenv("AVA_FUZZ_RECORD");
    if (dir == nullptr || *dir == '\0')
      return;
    std::string path = std::string(dir) + "/" + spec + "-" + std::to_string(pid) + "-" +
                       std::to_string(sessions.fetch_add(1)) + ".bin";
    file_ = std::fopen(path.c_str(), "wb");
  }
  void add(const MsgBuf &message) {
    if (file_ == nullptr)
      return;
    const uint32_t len = static_cast<uint32_t>(message.size());
    std::fwrite(&len, sizeof len, 1, file_);
    std::fwrite(message.data(), 1, message.size(), file_);
    std::fflush(file_);
  }
  ~Recorder() {
    if (file_ != nullptr)
      std::fclose(file_);
  }

private:
  std::FILE *file_ = nullptr;
};
#else
struct Recorder {
  void open(const char *, uint64_t) {}
  void add(const MsgBuf &) {}
};
#endif

} // namespace

// One per session; a struct of its own so that session.hpp knows nothing of it.
struct GuestSession::Record : Recorder {};

GuestSession::GuestSession(std::unique_ptr<Channel> channel, PluginSet &plugins,
                           const WorkerOptions &options)
    : connection_(std::make_shared<GuestConnection>(std::move(channel), options)),
      plugins_(plugins), max_guest_threads_(options.max_guest_threads),
      admit_call_(options.admit_call), report_file_(options.report_file),
      credentials_(options.credentials.get()), baton_(kShadowGrace),
      record_(std::make_unique<Record>()) {}

GuestSession::~GuestSession() {
  teardown();
}

void GuestSession::stop() {
  connection_->shutdown();
}

Status GuestSession::serve() {
  Status result;
  try {
    result = hello();
    if (result.is_ok() && connection_->spec() != nullptr)
      result = read_loop();
  } catch (const std::bad_alloc &) {
    connection_->log_error("out of memory; dropping the guest");
    result = Status::error(AVA_E_NOMEM, "out of memory");
  }
  teardown();
  return result;
}

Status GuestSession::hello() {
  MsgBuf buf;
  Status s = connection_->channel().recv(buf, kHelloTimeoutMs);
  if (!s.is_ok()) {
    if (s.code == AVA_E_CLOSED)
      return Status::ok(); // connected and left without a word, or we are stopping
    connection_->log_error("no valid HELLO: " + s.message);
    return s;
  }
  ava_msg_hdr hdr;
  std::memcpy(&hdr, buf.data(), sizeof hdr);
  if (hdr.kind != AVA_MSG_HELLO) {
    bool call = hdr.kind == AVA_MSG_CALL && (hdr.flags & AVA_F_SYNC) != 0;
    connection_->send_status(hdr, call ? AVA_MSG_REPLY : AVA_MSG_GOODBYE, AVA_E_STATE);
    connection_->log_error("message of kind " + std::to_string(hdr.kind) + " before HELLO");
    return Status::error(AVA_E_STATE, "message before HELLO");
  }
  HelloOffer offer = check_hello(std::span<const uint8_t>(buf.data(), buf.size()), credentials_);
  connection_->set_guest(nullptr, offer.hello.pid);
  auto refuse = [&](int status, const std::string &why) {
    offer.status = status;
    ava_hello_ack ack = make_hello_ack(offer, SessionKeys{});
    std::span<const uint8_t> block;
    if (!offer.protocol1)
      block = std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(&ack), sizeof ack);
    connection_->send_status(hdr, AVA_MSG_HELLO_ACK, status, block);
    connection_->log_error(why);
    return Status::error(status, why);
  };
  if (offer.status != AVA_OK)
    return refuse(offer.status, offer.why);
  const ava_hello &hello = offer.hello;
  if (std::memchr(hello.spec_name, 0, sizeof hello.spec_name) == nullptr)
    return refuse(AVA_E_SPEC, "HELLO with an unterminated spec name");
  std::string name = hello.spec_name;
  const ava_worker_spec *spec = nullptr;
  Status found = plugins_.find(name, &spec);
  // Not a mismatch: this worker has no usable plugin for the name (none
  // installed, not allowed, or its library would not load, e.g. no driver).
  if (!found.is_ok())
    return refuse(AVA_E_UNSUPPORTED, "cannot serve spec '" + name + "': " + found.message);
  if (hello.spec_id != spec->id || hello.spec_hash != spec->hash)
    return refuse(AVA_E_SPEC, "spec '" + name + "' mismatch: guest has id " +
                                  std::to_string(hello.spec_id) + " hash " + hex(hello.spec_hash) +
                                  ", worker has id " + std::to_string(spec->id) + " hash " +
                                  hex(spec->hash) +
                                  " (worker and guest library were generated from different "
                                  "specs)");
  const SessionKeys keys = new_session_keys();
  const ava_hello_ack ack = make_hello_ack(offer, keys);
  connection_->set_guest(spec, hello.pid);
  record_->open(spec->name, hello.pid);
  session_id_ = keys.id;
  peer_ = offer.peer;
  guest_config_ = std::move(offer.config);
  Status acked = connection_->send_status(
      hdr, AVA_MSG_HELLO_ACK, AVA_OK,
      std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(&ack), sizeof ack));
  if (!acked.is_ok()) {
    connection_->set_guest(nullptr, hello.pid);
    return Status::ok(); // gone already
  }
  if (!guest_config_.empty())
    connection_->log_debug("guest configuration:\n" + guest_config_);
  connection_->log_debug("connected (spec " + name + ", session " + hex(session_id_) +
                         ", protocol " + std::to_string(offer.proto) +
                         (peer_.empty() ? std::string() : ", peer " + peer_) + ", " +
                         offer.guest_build + ", " + connection_->channel().describe() + ")");
  return Status::ok();
}

void GuestSession::close_with(const Status &status) {
  {
    std::lock_guard lock(close_mu_);
    if (closed_)
      return;
    closed_ = true;
    close_status_ = status;
  }
  // Wakes every reader blocked in recv and makes the session loop return.
  connection_->shutdown();
  baton_.close();
}

bool GuestSession::queue_full() const {
  return connection_->queue_full();
}

GuestSession::ReadResult GuestSession::read_as_holder(uint64_t thread_id, MsgBuf *mine,
                                                      int timeout_ms) {
  std::unique_lock rx(rx_mu_);
  if (reading_over_)
    return ReadResult::Closed;
  return read_step(timeout_ms, thread_id, mine);
}

GuestSession::ReadResult GuestSession::read_step(int timeout_ms, uint64_t self, MsgBuf *mine) {
  // A shadow thread reads into its own buffer and keeps it from call to call;
  // a message for another thread moves to that thread's queue, and its
  // buffer comes back to the scratch kept here once served.
  MsgBuf scratch = self != 0 ? MsgBuf() : take_scratch();
  // Unless it went to a queue with its message, the buffer stays kept.
  struct GiveBack {
    GuestSession *session;
    MsgBuf *buf;
    ~GiveBack() {
      if (buf->capacity() != 0)
        session->give_scratch(*buf);
    }
  } give_back{this, &scratch};
  MsgBuf &buf = self != 0 ? *mine : scratch;
  Status s = connection_->channel().recv(buf, timeout_ms);
  if (s.code == AVA_E_TIMEOUT)
    return ReadResult::Nothing;
  if (!s.is_ok()) {
    if (s.code == AVA_E_CLOSED || !connection_->alive()) {
      close_with(Status::ok());
    } else {
      connection_->log_error("closing the connection: " + s.message);
      close_with(s);
    }
    return ReadResult::Closed;
  }
  ava_msg_hdr hdr;
  if (buf.size() < sizeof hdr) {
    connection_->log_error("closing the connection: short message");
    close_with(Status::error(AVA_E_PROTO, "short message"));
    return ReadResult::Closed;
  }
  std::memcpy(&hdr, buf.data(), sizeof hdr);
  if (hdr.magic != AVA_MSG_MAGIC || hdr.abi_version != AVA_ABI_VERSION ||
      hdr.total_len != buf.size()) {
    connection_->log_error("closing the connection: bad message framing");
    close_with(Status::error(AVA_E_PROTO, "bad message framing"));
    return ReadResult::Closed;
  }
  record_->add(buf);
  switch (hdr.kind) {
  case AVA_MSG_CALL: {
    // Our private copy carries the ordering stamp from here on (see
    // GuestConnection::stamp_call); the guest's per-thread seq is not needed.
    const uint64_t stamp = connection_->stamp_call((hdr.flags & AVA_F_ASYNC) != 0);
    std::memcpy(buf.data() + offsetof(ava_msg_hdr, seq), &stamp, sizeof stamp);
    std::string why = "bad call header";
    int status = check_call(hdr);
    const ava_cmd_table *cmds = connection_->spec()->cmds;
    if (status == AVA_OK && cmds != nullptr)
      status = police_call(*cmds, hdr, buf.data(), buf.size(), &why);
    if (status == AVA_OK && admit_call_)
      status = admit_call_(hdr, buf.size(), &why);
    if (status != AVA_OK) {
      reject(hdr, status, why.c_str());
      return ReadResult::Nothing;
    }
    if (self != 0 && hdr.thread_id == self)
      return ReadResult::Mine;
    on_call(buf);
    return ReadResult::Queued;
  }
  case AVA_MSG_CALLBACK_DONE:
    if (!connection_->complete_callback(hdr.seq, sanitize_guest_status(hdr.status)))
      connection_->log_debug("CALLBACK_DONE for no waiting callback (seq " +
                             std::to_string(hdr.seq) + ")");
    return ReadResult::Nothing;
  case AVA_MSG_GOODBYE:
    close_with(Status::ok());
    return ReadResult::Closed;
  default:
    connection_->log_error("closing the connection: unexpected message of kind " +
                           std::to_string(hdr.kind));
    close_with(Status::error(AVA_E_PROTO, "unexpected message kind"));
    return ReadResult::Closed;
  }
}

// The session thread is the baton's fallback: it reads whatever idle shadow
// threads do not (every shadow thread busy, or the queue over its limit), and
// hands the baton back to an idle one after each message.
Status GuestSession::read_loop() {
  auto closed = [&] {
    std::lock_guard lock(close_mu_);
    return closed_;
  };
  while (baton_.fallback_take()) {
    for (;;) {
      if (!connection_->alive())
        close_with(Status::ok()); // stopped from outside (stop(), SIGTERM)
      if (closed())
        break;
      connection_->wait_for_queue_space();
      ReadResult r;
      {
        std::unique_lock rx(rx_mu_);
        MsgBuf unused;
        r = read_step(-1, 0, &unused);
      }
      if (connection_->queue_full())
        continue;
      if (r == ReadResult::Queued) {
        // The shadow thread the call went to reads for itself once it has
        // served it (or the baton comes back here after the grace).
        baton_.fallback_leave();
        break;
      }
      if (baton_.fallback_offer())
        break;
    }
  }
  std::lock_guard lock(close_mu_);
  return close_status_;
}

int GuestSession::check_call(const ava_msg_hdr &hdr) const {
  const ava_worker_spec *spec = connection_->spec();
  if (hdr.spec_id != spec->id)
    return AVA_E_SPEC;
  if (hdr.reserved != 0 || (hdr.flags & ~AVA_F_ALL) != 0)
    return AVA_E_PROTO;
  if (hdr.args_len > hdr.total_len - sizeof(ava_msg_hdr))
    return AVA_E_LENGTH;
  if (hdr.func_id >= spec->nfuncs)
    return AVA_E_FUNC;
  uint32_t cls = spec->func_flags[hdr.func_id] & (AVA_F_SYNC | AVA_F_ASYNC);
  if (cls == 0)
    return AVA_E_UNSUPPORTED;
  // Exactly one of the two, and one the function allows (some allow both).
  const uint32_t sent = hdr.flags & (AVA_F_SYNC | AVA_F_ASYNC);
  if ((sent != AVA_F_SYNC && sent != AVA_F_ASYNC) || (sent & cls) == 0)
    return AVA_E_PROTO;
  return AVA_OK;
}

void GuestSession::reject(const ava_msg_hdr &hdr, int status, const char *why) {
  bool sync = (hdr.flags & AVA_F_SYNC) != 0;
  connection_->log_error(std::string(sync ? "refused" : "dropped") + " call of function " +
                         std::to_string(hdr.func_id) + " (guest thread " +
                         std::to_string(hdr.thread_id) + "): " + why + ": " + status_name(status));
  connection_->note_refused(status);
  // It was stamped as async by the reader: later calls must not wait for it.
  if ((hdr.flags & AVA_F_ASYNC) != 0)
    connection_->async_finished();
  if (sync)
    connection_->send_status(hdr, AVA_MSG_REPLY, status);
}

void GuestSession::on_call(MsgBuf &message) {
  ava_msg_hdr hdr;
  std::memcpy(&hdr, message.data(), sizeof hdr);
  ShadowThread *shadow = nullptr;
  auto it = shadows_.find(hdr.thread_id);
  if (it != shadows_.end()) {
    shadow = it->second.get();
  } else {
    if (shadows_.size() >= max_guest_threads_) {
      reject(hdr, AVA_E_NOMEM, "too many guest threads");
      return;
    }
    auto created = std::make_unique<ShadowThread>(connection_, this, hdr.thread_id);
    Status started = created->start();
    if (!started.is_ok()) {
      reject(hdr, started.code, started.message.c_str());
      return;
    }
    shadow = created.get();
    shadows_.emplace(hdr.thread_id, std::move(created));
  }
  uint64_t bytes = message.size();
  connection_->queued(bytes);
  try {
    shadow->enqueue(std::move(message));
  } catch (const std::bad_alloc &) {
    connection_->dequeued(bytes);
    reject(hdr, AVA_E_NOMEM, "cannot queue the call");
  }
}

void GuestSession::teardown() {
  if (torn_down_)
    return;
  torn_down_ = true;
  connection_->shutdown();
  {
    // A shadow thread may be reading (and creating shadow threads): wait for
    // it to let go, and keep everyone from reading again.
    std::lock_guard rx(rx_mu_);
    reading_over_ = true;
  }
  for (auto &[id, shadow] : shadows_)
    shadow->stop();
  // What the API still waits for on the guest's behalf ends now (its user
  // events fail): a shadow thread waiting behind it (clWaitForEvents, a
  // blocking read) returns, and the commands behind it end and free their
  // staging. Once more after the join, for what a call still running made.
  connection_->run_departures();
  for (auto &[id, shadow] : shadows_)
    shadow->join();
  shadows_.clear();
  // Nothing more goes to the guest; staging the API still writes stays its own.
  connection_->transfers().drop_all();
  connection_->run_departures();

  const ava_worker_spec *spec = connection_->spec();
  uint64_t destroyed = 0;
  HandleTable::Entry entry;
  while (connection_->handles().pop_newest(&entry)) {
    // Each reference the guest still held is dropped for it (OpenCL objects
    // are reference counted; a once-created object has one).
    for (uint32_t r = 0; r < entry.refs && spec != nullptr && spec->destroy != nullptr; ++r) {
      try {
        spec->destroy(entry.type, entry.object);
      } catch (...) {
        // A C++ plugin threw; the remaining objects still need freeing.
      }
    }
    if (entry.refs > 0)
      ++destroyed;
    connection_->release_coupled(entry.id);
  }
  connection_->release_all_kept();
  report();
  if (spec != nullptr && worker_debug_enabled()) {
    try {
      connection_->log_debug("disconnected; released " + std::to_string(destroyed) + " objects");
    } catch (const std::bad_alloc &) {
      // Teardown must finish; the line is optional.
    }
  }
}

void GuestSession::report() {
  if (report_file_.empty())
    return;
  try {
    SessionReport r;
    if (const ava_worker_spec *spec = connection_->spec())
      r.spec = spec->name;
    r.guest_pid = connection_->pid();
    r.worker_pid = static_cast<uint64_t>(::getpid());
    r.calls = connection_->calls_served();
    r.sync = connection_->sync_calls_served();
    r.refused = connection_->calls_refused();
    r.staged = connection_->transfers().delivered();
    r.in_place = connection_->transfers().in_place();
    r.session_id = session_id_;
    r.peer = peer_;
    Status written = append_session_report(report_file_, r);
    if (!written.is_ok())
      worker_log("session report: " + written.message);
  } catch (const std::bad_alloc &) {
    // Teardown must finish; the report line is lost, and says so by its absence.
  }
}

Status serve_guest(std::unique_ptr<Channel> channel, PluginSet &plugins,
                   const WorkerOptions &options) {
  try {
    GuestSession session(std::move(channel), plugins, options);
    return session.serve();
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "out of memory");
  }
}

} // namespace ava
