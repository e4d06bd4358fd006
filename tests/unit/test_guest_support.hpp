// SPDX-License-Identifier: MIT
// Shared by the test_guest_*.cpp tests: a tiny spec "gtest" with stubs
// written the way cava generates them, and a fake worker that speaks raw
// messages over a unix socket. The fake worker runs on its own thread and
// only records what it saw; the test thread asserts after join().
#pragma once

#include <criterion/criterion.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

namespace gtest_spec {

constexpr int32_t kErr = -99; // what the stubs return when the runtime fails
constexpr uint32_t kStatusClass = 1;

enum FuncId : uint32_t {
  kEcho = 0,
  kAsyncPut = 1,
  kSetCallback = 2,
  kRelease = 3,
  kUnsupported = 4,
  kVersion = 5,
  kNumFuncs = 6,
};

struct EchoArgs {
  uint64_t handle;
  ava_buf_desc in;
  ava_buf_desc out;
  uint64_t out_size;
};
struct EchoReply {
  ava_buf_desc out;
  int32_t ret;
  uint32_t pad;
};
struct AsyncPutArgs {
  int32_t value;
  uint32_t pad;
  ava_buf_desc data;
};
struct SetCallbackArgs {
  uint64_t handle;
  uint64_t callback_id;
};
struct HandleArgs {
  uint64_t handle;
};
struct StatusReply {
  int32_t ret;
  uint32_t pad;
};

// Callback declaration 0: void (*)(uint64_t handle, int32_t event, const char *message, void
// *user).
using EventFn = void (*)(uint64_t handle, int32_t event, const char *message, void *user);
struct EventCallbackArgs {
  uint64_t handle;
  int32_t event;
  uint32_t pad;
  ava_buf_desc message;
};

inline int callback_dispatch(uint32_t decl_id, void (*fn)(void), void *userdata, const void *args,
                             uint64_t args_len, const uint8_t *payload, uint64_t payload_len) {
  if (decl_id != 0 || args_len != sizeof(EventCallbackArgs)) {
    return -1;
  }
  EventCallbackArgs a;
  std::memcpy(&a, args, sizeof a);
  const void *message;
  if (ava_callback_buffer(&a.message, payload, payload_len, &message) != 0) {
    return -1;
  }
  reinterpret_cast<EventFn>(fn)(a.handle, a.event, static_cast<const char *>(message), userdata);
  return 0;
}

inline const char *const kFuncNames[kNumFuncs] = {"t_echo",    "t_async_put",   "t_set_callback",
                                                  "t_release", "t_unsupported", "t_version"};

inline const ava_guest_spec kSpec = {
    "gtest",           77,      0x1234abcdull, kNumFuncs, kFuncNames,
    callback_dispatch, nullptr, nullptr,       nullptr,   nullptr,
};

// --- stubs, as the generator writes them ---

inline int32_t t_echo(uint64_t handle, const void *in, uint64_t in_size, void *out,
                      uint64_t out_size) {
  struct ava_call c;
  EchoArgs a;
  std::memset(&a, 0, sizeof a);
  const void *rp;
  const EchoReply *r;
  int64_t async_value;
  int32_t ret;
  if (ava_call_begin(&c, &kSpec, kEcho, AVA_F_SYNC) != 0)
    goto fail;
  a.handle = handle;
  a.out_size = out_size;
  if (ava_call_put_buffer(&c, &a.in, in, in_size, 1, AVA_BUF_IN) != 0)
    goto fail;
  if (ava_call_put_buffer(&c, &a.out, out, out_size, 1, AVA_BUF_OUT) != 0)
    goto fail;
  if (ava_call_invoke(&c, &a, sizeof a, &rp, sizeof *r) != 0)
    goto fail;
  r = static_cast<const EchoReply *>(rp);
  if (ava_call_get_buffer(&c, &r->out, out, out_size) != 0)
    goto fail;
  ret = r->ret;
  if (ava_call_take_async_error(&c, kStatusClass, &async_value))
    ret = static_cast<int32_t>(async_value);
  ava_call_end(&c);
  return ret;
fail:
  ava_call_end(&c);
  return kErr;
}

inline int32_t t_async_put(int32_t value, const void *data, uint64_t size) {
  struct ava_call c;
  AsyncPutArgs a;
  std::memset(&a, 0, sizeof a);
  if (ava_call_begin(&c, &kSpec, kAsyncPut, AVA_F_ASYNC) != 0)
    goto fail;
  a.value = value;
  if (ava_call_put_buffer(&c, &a.data, data, size, 1, AVA_BUF_IN) != 0)
    goto fail;
  if (ava_call_invoke(&c, &a, sizeof a, nullptr, 0) != 0)
    goto fail;
  ava_call_end(&c);
  return 0;
fail:
  ava_call_end(&c);
  return kErr;
}

inline int32_t status_call(uint32_t func, const void *args, uint32_t args_len, struct ava_call *c) {
  const void *rp;
  int64_t async_value;
  int32_t ret;
  if (ava_call_invoke(c, args, args_len, &rp, sizeof(StatusReply)) != 0) {
    ava_call_end(c);
    return kErr;
  }
  ret = static_cast<const StatusReply *>(rp)->ret;
  if (ava_call_take_async_error(c, kStatusClass, &async_value))
    ret = static_cast<int32_t>(async_value);
  if (func == kRelease && ret == 0)
    ava_guest_handle_released(&kSpec, static_cast<const HandleArgs *>(args)->handle);
  ava_call_end(c);
  return ret;
}

inline int32_t t_set_callback(uint64_t handle, EventFn fn, void *user, uint32_t lifetime) {
  struct ava_call c;
  SetCallbackArgs a;
  std::memset(&a, 0, sizeof a);
  if (ava_call_begin(&c, &kSpec, kSetCallback, AVA_F_SYNC) != 0) {
    ava_call_end(&c);
    return kErr;
  }
  a.handle = handle;
  a.callback_id =
      ava_call_callback(&c, reinterpret_cast<void (*)(void)>(fn), user, lifetime, handle);
  return status_call(kSetCallback, &a, sizeof a, &c);
}

inline int32_t t_release(uint64_t handle) {
  struct ava_call c;
  HandleArgs a = {handle};
  if (ava_call_begin(&c, &kSpec, kRelease, AVA_F_SYNC) != 0) {
    ava_call_end(&c);
    return kErr;
  }
  return status_call(kRelease, &a, sizeof a, &c);
}

inline int32_t t_version() {
  struct ava_call c;
  if (ava_call_begin(&c, &kSpec, kVersion, AVA_F_SYNC) != 0) {
    ava_call_end(&c);
    return kErr;
  }
  return status_call(kVersion, nullptr, 0, &c);
}

inline int32_t t_unsupported() {
  ava_guest_unsupported(&kSpec, "t_unsupported");
  return kErr;
}

} // namespace gtest_spec

namespace gtest_fake {

constexpr uint64_t kHdr = sizeof(ava_msg_hdr);

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
    unsetenv("AVA_WORKER_GTEST");
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

  bool handshake(int32_t hello_status) {
    Seen hello;
    if (!recv(&hello) || hello.hdr.kind != AVA_MSG_HELLO) {
      fail("no HELLO");
      return false;
    }
    ava_msg_hdr ack = make_header(AVA_MSG_HELLO_ACK, hello.hdr.spec_id, kHdr);
    ack.status = hello_status;
    send(ack, nullptr, 0, nullptr, 0);
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

} // namespace gtest_fake
