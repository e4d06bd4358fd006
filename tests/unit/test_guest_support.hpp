// SPDX-License-Identifier: MIT
// Shared by the test_guest_*.cpp tests, which call the guest library that cava
// generates from tests/wtest/wtest.spec.c (its stubs are the wtest API,
// wt_*; its wire layout is wtest_wire.h), and a fake worker that speaks raw
// messages over a unix socket. The fake worker runs on its own thread and
// only records what it saw; the test thread asserts after join().
#pragma once

#include <criterion/criterion.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "shim/ava_shim.h"
#include "transport/channel.hpp"
#include "wtest.h"
#include "wtest_wire.h"

// The generated guest library's spec (tests/wtest/wtest_guest_lib.c).
extern "C" const struct ava_guest_spec *wtest_guest_spec(void);

namespace wtest_guest {

// What the generated stubs return when the runtime fails (the spec's ava_error).
constexpr int32_t kErr = WT_ERR_TRANSPORT;
// Return class of wt_status (wtest_wire.h lists the classes).
constexpr uint32_t kStatusClass = 1;

inline const ava_guest_spec *spec() {
  return wtest_guest_spec();
}

// In the guest a handle is its id.
inline wt_obj obj(uint64_t id) {
  return reinterpret_cast<wt_obj>(static_cast<uintptr_t>(id));
}
inline uint64_t id_of(wt_obj o) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(o));
}

} // namespace wtest_guest

namespace guest_fake {

constexpr uint64_t kHdr = sizeof(ava_msg_hdr);

// Lets one thread wait (at most 10 s) until another got somewhere.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  bool wait() {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return open; });
  }
};

inline ava_msg_hdr make_header(uint16_t kind, uint32_t spec_id, uint64_t total_len) {
  ava_msg_hdr hdr;
  std::memset(&hdr, 0, sizeof hdr);
  hdr.magic = AVA_MSG_MAGIC;
  hdr.abi_version = AVA_ABI_VERSION;
  hdr.kind = kind;
  hdr.spec_id = spec_id;
  hdr.total_len = total_len;
  return hdr;
}

// A copy of one received message, for assertions after join().
struct Seen {
  ava_msg_hdr hdr;
  std::vector<uint8_t> bytes; // the whole message
  const uint8_t *args() const { return bytes.data() + kHdr; }
  const uint8_t *payload() const { return bytes.data() + kHdr + hdr.args_len; }
  uint64_t payload_len() const { return hdr.total_len - kHdr - hdr.args_len; }
};

class FakeWorker {
public:
  using Script = std::function<void(FakeWorker &)>;

  FakeWorker() {
    char dir[] = "/tmp/ava-guest-test-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    dir_ = dir;
    path_ = dir_ + "/worker.sock";
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(listen_fd_ >= 0);
    sockaddr_un sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path_.c_str());
    cr_assert_eq(::bind(listen_fd_, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
    cr_assert_eq(::listen(listen_fd_, 8), 0);
  }

  ~FakeWorker() {
    join();
    drop();
    ::close(listen_fd_);
    ::unlink(path_.c_str());
    ::unlink(config_path().c_str());
    ::rmdir(dir_.c_str());
  }

  FakeWorker(const FakeWorker &) = delete;
  FakeWorker &operator=(const FakeWorker &) = delete;

  std::string address() const { return "unix:" + path_; }
  std::string config_path() const { return dir_ + "/guest.toml"; }

  // Points the guest library at this worker (before its first call).
  void configure_guest(int call_timeout_ms = 10000, int connect_timeout_ms = 5000) {
    FILE *f = std::fopen(config_path().c_str(), "w");
    cr_assert_not_null(f);
    std::fprintf(f, "# written by the test\nconnect_timeout_ms = %d\ncall_timeout_ms = %d\n",
                 connect_timeout_ms, call_timeout_ms);
    std::fclose(f);
    setenv("AVA_CONFIG", config_path().c_str(), 1);
    setenv("AVA_WORKER", address().c_str(), 1);
    unsetenv("AVA_CHANNEL");
    unsetenv("AVA_WORKER_WTEST");
  }

  // Runs script on the worker thread after accepting a guest and answering
  // its HELLO with hello_status.
  void start(Script script, int32_t hello_status = AVA_OK) {
    thread_ = std::thread([this, script = std::move(script), hello_status] {
      if (accept_guest() && handshake(hello_status)) {
        script(*this);
      }
    });
  }

  void join() {
    if (thread_.joinable()) {
      thread_.join();
    }
  }

  // --- used by scripts on the worker thread ---

  bool accept_guest(int timeout_ms = 10000) {
    drop();
    pollfd p = {listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) {
      fail("no guest connected");
      return false;
    }
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      fail("accept failed");
      return false;
    }
    raw_fd_ = ::dup(fd);
    ava::Status st = ava::adopt_stream_socket(fd, "fake-worker", &channel_);
    if (!st.is_ok()) {
      fail("adopt: " + st.message);
      return false;
    }
    return true;
  }

  // How handshake() answers: a protocol-2 block (accepting with session
  // kSessionId, or refusing) unless a test changes it, or a bare status as a
  // protocol-1 worker sends.
  static constexpr uint64_t kSessionId = 0x5e55'0000'0000'0042ull;
  bool bare_ack = false;
  std::function<void(ava_hello_ack *)> shape_ack;

  bool handshake(int32_t hello_status) {
    Seen hello;
    if (!recv(&hello) || hello.hdr.kind != AVA_MSG_HELLO) {
      fail("no HELLO");
      return false;
    }
    ava_msg_hdr ack = make_header(AVA_MSG_HELLO_ACK, hello.hdr.spec_id, kHdr);
    ack.status = hello_status;
    ava_hello_ack block{};
    block.proto_min = AVA_PROTO_MIN;
    block.proto_max = AVA_PROTO_MAX;
    std::strcpy(block.build, "ava fake");
    if (hello_status == AVA_OK) {
      block.proto = AVA_PROTO_MAX;
      block.session_id = kSessionId;
    }
    if (shape_ack) {
      shape_ack(&block);
    }
    if (bare_ack) {
      send(ack, nullptr, 0, nullptr, 0);
    } else {
      send(ack, &block, sizeof block, nullptr, 0);
    }
    return hello_status == AVA_OK;
  }

  // Receives one message; false (and nothing recorded) on error or timeout.
  bool recv(Seen *out, int timeout_ms = 10000) {
    if (channel_ == nullptr) {
      return false;
    }
    ava::MsgBuf buf;
    ava::Status st = channel_->recv(buf, timeout_ms);
    if (!st.is_ok()) {
      last_recv_status_ = st.code;
      return false;
    }
    out->bytes.assign(buf.data(), buf.data() + buf.size());
    std::memcpy(&out->hdr, buf.data(), kHdr);
    std::lock_guard lock(mu_);
    seen_.push_back(*out);
    return true;
  }

  // Receives the next message, which must be of kind.
  bool expect(uint16_t kind, Seen *out, int timeout_ms = 10000) {
    if (!recv(out, timeout_ms)) {
      fail("expected message kind " + std::to_string(kind) + ", got none");
      return false;
    }
    if (out->hdr.kind != kind) {
      fail("expected message kind " + std::to_string(kind) + ", got " +
           std::to_string(out->hdr.kind));
      return false;
    }
    return true;
  }

  void send(const ava_msg_hdr &hdr_in, const void *args, uint32_t args_len, const void *payload,
            uint64_t payload_len) {
    if (channel_ == nullptr) {
      fail("send without a connection");
      return;
    }
    ava_msg_hdr hdr = hdr_in;
    hdr.total_len = kHdr + args_len + payload_len;
    if (hdr.args_len == 0) {
      hdr.args_len = args_len;
    }
    struct iovec iov[3] = {{&hdr, kHdr},
                           {const_cast<void *>(args), args_len},
                           {const_cast<void *>(payload), payload_len}};
    ava::Status st = channel_->send(iov, 3);
    if (!st.is_ok()) {
      fail("send: " + st.message);
    }
  }

  // The header of a REPLY to call with its echoes filled in.
  static ava_msg_hdr reply_header(const Seen &call) {
    ava_msg_hdr hdr = make_header(AVA_MSG_REPLY, call.hdr.spec_id, kHdr);
    hdr.func_id = call.hdr.func_id;
    hdr.call_id = call.hdr.call_id;
    hdr.thread_id = call.hdr.thread_id;
    hdr.seq = call.hdr.seq;
    return hdr;
  }

  // Sends a REPLY: ava_reply_common + reply struct, then payload.
  void reply(const Seen &call, const void *reply, uint32_t reply_len, const void *payload = nullptr,
             uint64_t payload_len = 0, ava_reply_common common = {}) {
    std::vector<uint8_t> args(sizeof common + reply_len);
    std::memcpy(args.data(), &common, sizeof common);
    if (reply_len > 0) {
      std::memcpy(args.data() + sizeof common, reply, reply_len);
    }
    send(reply_header(call), args.data(), static_cast<uint32_t>(args.size()), payload, payload_len);
  }

  void write_raw(const void *data, size_t len) {
    const auto *p = static_cast<const uint8_t *>(data);
    while (len > 0) {
      ssize_t n = ::send(raw_fd_, p, len, MSG_NOSIGNAL);
      if (n <= 0) {
        fail("raw write failed");
        return;
      }
      p += n;
      len -= static_cast<size_t>(n);
    }
  }

  // For scripts that serve two guests at once (fork): park one connection.
  std::unique_ptr<ava::Channel> take_channel() {
    if (raw_fd_ >= 0) {
      ::close(raw_fd_);
      raw_fd_ = -1;
    }
    return std::move(channel_);
  }
  void set_channel(std::unique_ptr<ava::Channel> channel) {
    drop();
    channel_ = std::move(channel);
  }

  // Closes the connection to the guest.
  void drop() {
    channel_.reset();
    if (raw_fd_ >= 0) {
      ::close(raw_fd_);
      raw_fd_ = -1;
    }
  }

  // Reads until GOODBYE or the end of the stream; true if GOODBYE came.
  bool wait_goodbye(int timeout_ms = 10000) {
    for (int i = 0; i < 64; ++i) {
      Seen m;
      if (!recv(&m, timeout_ms)) {
        return false;
      }
      if (m.hdr.kind == AVA_MSG_GOODBYE) {
        return true;
      }
    }
    return false;
  }

  void fail(const std::string &what) {
    std::lock_guard lock(mu_);
    if (failure_.empty()) {
      failure_ = what;
    }
  }

  // --- for the test thread, after join() ---

  std::string failure() {
    std::lock_guard lock(mu_);
    return failure_;
  }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  int last_recv_status() const { return last_recv_status_; }

private:
  std::string dir_;
  std::string path_;
  int listen_fd_ = -1;
  int raw_fd_ = -1;
  std::unique_ptr<ava::Channel> channel_;
  std::thread thread_;
  std::mutex mu_;
  std::string failure_;
  std::vector<Seen> seen_;
  int last_recv_status_ = AVA_OK;
};

// Sends what this process writes to fd 2 into a file, for checking the
// runtime's "ava: ..." lines.
class StderrCapture {
public:
  StderrCapture() {
    char path[] = "/tmp/ava-guest-stderr-XXXXXX";
    fd_ = ::mkstemp(path);
    cr_assert(fd_ >= 0);
    path_ = path;
    saved_ = ::dup(STDERR_FILENO);
    ::dup2(fd_, STDERR_FILENO);
  }
  ~StderrCapture() {
    finish();
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  StderrCapture(const StderrCapture &) = delete;
  StderrCapture &operator=(const StderrCapture &) = delete;

  // Restores stderr and returns what was written meanwhile.
  std::string finish() {
    if (saved_ >= 0) {
      ::dup2(saved_, STDERR_FILENO);
      ::close(saved_);
      saved_ = -1;
    }
    std::string text;
    char buf[4096];
    ssize_t n;
    off_t off = 0;
    while ((n = ::pread(fd_, buf, sizeof buf, off)) > 0) {
      text.append(buf, static_cast<size_t>(n));
      off += n;
    }
    return text;
  }

private:
  std::string path_;
  int fd_ = -1;
  int saved_ = -1;
};

inline int count_of(const std::string &text, const std::string &needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

} // namespace guest_fake
