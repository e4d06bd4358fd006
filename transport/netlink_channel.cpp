// SPDX-License-Identifier: MIT
// The netlink carrier's worker side (include/ava/knetlink.h) over
// libnl-genl-3: a hub thread reads the registered socket and queues each
// connection's messages for its channel; channels send on the shared socket
// under a mutex. Messages above AVA_KNL_INLINE_MAX travel in the
// connection's shared area, mapped from /dev/ava_call on first use.
#include "transport/netlink_channel.hpp"

#include <fcntl.h>
#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include "ava/knetlink.h"
#include "transport/fd_util.hpp"

namespace ava {
namespace {

using detail::Deadline;
using detail::errno_text;
using detail::UniqueFd;

constexpr int kSocketBufferBytes = 8 << 20;
constexpr int kRegisterTimeoutMs = 5000;

// One kernel connection: what the hub thread queued for its channel.
struct Conn {
  uint32_t id = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<MsgBuf> queue;
  bool closed = false; // no more messages will come
  Status why_closed;
  uint8_t *area = nullptr; // both halves of the shared area, once mapped
  // A message of ava.ko's arriving in pieces (AVA_KNL_A_MORE); only the hub
  // thread touches it.
  MsgBuf partial;
  uint64_t partial_got = 0;
  // The pieces of one message go out together (knetlink.h).
  std::mutex send_mu;
};

std::string nl_text(int err) {
  return nl_geterror(err);
}

} // namespace

struct NetlinkHub::Core {
  nl_sock *sock = nullptr;
  int family = -1;
  uint64_t half = 0; // 0 until registered; then the REGISTER reply's value (may be 0: inline only)
  bool registered = false;
  UniqueFd dev;  // /dev/ava_call, for the shared areas
  UniqueFd wake; // eventfd: shutdown() wakes the hub thread
  std::mutex send_mu;
  std::mutex mu; // conns, pending, stopped
  std::condition_variable cv;
  std::map<uint32_t, std::shared_ptr<Conn>> conns;
  std::deque<std::shared_ptr<Conn>> pending;
  bool stopped = false;
  Status why_stopped;
  std::thread reader;

  ~Core() {
    if (sock != nullptr)
      nl_socket_free(sock);
  }

  Status send_cmd(uint8_t cmd, uint32_t id, const uint8_t *data, uint64_t len, bool in_shm,
                  bool more = false) {
    nl_msg *msg = nlmsg_alloc_size(NLMSG_HDRLEN + GENL_HDRLEN + 64 + (in_shm ? 0 : len));
    if (msg == nullptr)
      return Status::error(AVA_E_NOMEM, "netlink: no memory for a message");
    int err = 0;
    if (genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, 0, cmd, AVA_KNL_GENL_VERSION) ==
            nullptr ||
        nla_put_u32(msg, AVA_KNL_A_CONN, id) < 0)
      err = -NLE_NOMEM;
    else if (cmd == AVA_KNL_CMD_MSG)
      err = in_shm ? nla_put_u64(msg, AVA_KNL_A_SHM_LEN, len)
                   : nla_put(msg, AVA_KNL_A_DATA, static_cast<int>(len), data);
    if (err >= 0 && more)
      err = nla_put_flag(msg, AVA_KNL_A_MORE);
    if (err >= 0) {
      std::lock_guard lock(send_mu);
      err = nl_send_auto(sock, msg);
    }
    nlmsg_free(msg);
    if (err < 0)
      return Status::error(AVA_E_CLOSED, "netlink send: " + nl_text(err));
    return Status::ok();
  }

  // Maps conn's shared area on first use; the caller holds c.mu.
  Status map_area(Conn &c) {
    if (c.area != nullptr)
      return Status::ok();
    if (half == 0)
      return Status::error(AVA_E_PROTO, "ava.ko has no shared areas (knl_shm_kb=0)");
    if (!dev.valid()) {
      dev.reset(::open(AVA_KNL_DEVICE, O_RDWR | O_CLOEXEC));
      if (!dev.valid())
        return Status::error(AVA_E_CLOSED,
                             std::string("open " AVA_KNL_DEVICE ": ") + errno_text(errno));
    }
    void *at = mmap(nullptr, 2 * half, PROT_READ | PROT_WRITE, MAP_SHARED, dev.get(),
                    static_cast<off_t>(uint64_t{c.id} * 2 * half));
    if (at == MAP_FAILED)
      return Status::error(AVA_E_CLOSED, "mmap of connection " + std::to_string(c.id) +
                                             "'s shared area: " + errno_text(errno));
    c.area = static_cast<uint8_t *>(at);
    return Status::ok();
  }

  void unmap_area(Conn &c) {
    if (c.area != nullptr)
      munmap(c.area, 2 * half);
    c.area = nullptr;
  }

  // Ends a connection whose messages cannot be trusted; ava.ko fails it too.
  void break_conn(const std::shared_ptr<Conn> &c, Status why) {
    {
      std::lock_guard lock(c->mu);
      if (!c->closed) {
        c->closed = true;
        c->why_closed = std::move(why);
      }
    }
    c->cv.notify_all();
    send_cmd(AVA_KNL_CMD_CLOSE, c->id, nullptr, 0, false);
  }

  void on_message(nlattr **attrs) {
    if (attrs[AVA_KNL_A_CONN] == nullptr)
      return;
    const uint32_t id = nla_get_u32(attrs[AVA_KNL_A_CONN]);
    std::shared_ptr<Conn> c;
    {
      std::lock_guard lock(mu);
      auto it = conns.find(id);
      if (it != conns.end())
        c = it->second;
    }
    const bool fresh = c == nullptr;
    if (fresh) {
      c = std::make_shared<Conn>();
      c->id = id;
    }
    MsgBuf buf;
    bool gone = false;
    bool complete = false;
    Status s = take_message(*c, attrs, &buf, &complete, &gone);
    if (gone)
      return;
    if (s.is_ok() && !complete && !fresh)
      return; // more pieces follow
    if (fresh) {
      // only a HELLO opens a connection; anything else is for one that ended here
      if (!s.is_ok() || !complete || buf.header()->kind != AVA_MSG_HELLO) {
        {
          std::lock_guard lock(c->mu);
          unmap_area(*c);
        }
        // a malformed opening fails the kernel caller now rather than at its timeout
        if (!s.is_ok() || !complete)
          send_cmd(AVA_KNL_CMD_CLOSE, id, nullptr, 0, false);
        return;
      }
      std::lock_guard lock(mu);
      conns[id] = c;
      pending.push_back(c);
      cv.notify_all();
    }
    if (!s.is_ok()) {
      break_conn(c, s);
      return;
    }
    {
      std::lock_guard lock(c->mu);
      if (c->closed)
        return;
      c->queue.push_back(std::move(buf));
    }
    c->cv.notify_all();
  }

  // Copies a message, or the next piece of one, out of the netlink message or
  // the shared area, checking its framing. *complete: out holds a whole
  // message; *gone: c ended here, the message is dropped.
  Status take_message(Conn &c, nlattr **attrs, MsgBuf *out, bool *complete, bool *gone) {
    nlattr *data = attrs[AVA_KNL_A_DATA];
    nlattr *shm_len = attrs[AVA_KNL_A_SHM_LEN];
    const bool more = attrs[AVA_KNL_A_MORE] != nullptr;
    const uint8_t *src = nullptr;
    uint64_t len = 0;
    bool from_shm = false;
    *complete = false;
    std::unique_lock lock(c.mu);
    // its channel is gone (or broken): nothing may map the area again
    if (c.closed) {
      *gone = true;
      return Status::error(AVA_E_CLOSED, "the connection ended here");
    }
    if ((data == nullptr) == (shm_len == nullptr))
      return Status::error(AVA_E_PROTO, "a message with neither or both of DATA and SHM_LEN");
    if (data != nullptr) {
      src = static_cast<const uint8_t *>(nla_data(data));
      len = static_cast<uint64_t>(nla_len(data));
    } else {
      len = nla_get_u64(shm_len);
      Status mapped = map_area(c);
      if (!mapped.is_ok())
        return mapped;
      if (len > half)
        return Status::error(AVA_E_TOO_BIG, "a shared-area message beyond its half");
      src = c.area;
      from_shm = true;
    }
    Status st = more || c.partial_got > 0 ? take_piece(c, src, len, more, out, complete)
                                          : take_whole(src, len, out, complete);
    lock.unlock();
    // our copy is taken: ava.ko may write its next piece there
    if (from_shm && st.is_ok()) {
      Status released = send_cmd(AVA_KNL_CMD_RELEASE, c.id, nullptr, 0, false);
      if (!released.is_ok())
        return released;
    }
    if (!st.is_ok() || !*complete)
      return st;
    const ava_msg_hdr *hdr = out->header();
    if (hdr->magic != AVA_MSG_MAGIC || hdr->abi_version != AVA_ABI_VERSION ||
        hdr->total_len != out->size())
      return Status::error(AVA_E_PROTO, "a message with a bad header");
    return Status::ok();
  }

  static Status take_whole(const uint8_t *src, uint64_t len, MsgBuf *out, bool *complete) {
    if (len < sizeof(ava_msg_hdr))
      return Status::error(AVA_E_PROTO, "a message shorter than its header");
    if (!out->reserve(len))
      return Status::error(AVA_E_NOMEM, "no memory for a message");
    std::memcpy(out->data(), src, len);
    out->set_size(len);
    *complete = true;
    return Status::ok();
  }

  // The next piece of a message in pieces; the caller holds c.mu.
  static Status take_piece(Conn &c, const uint8_t *src, uint64_t len, bool more, MsgBuf *out,
                           bool *complete) {
    if (c.partial_got == 0) {
      ava_msg_hdr hdr;
      if (len < sizeof hdr)
        return Status::error(AVA_E_PROTO, "a first piece shorter than a message header");
      std::memcpy(&hdr, src, sizeof hdr);
      // the header is checked again on the whole message
      if (hdr.total_len <= len || hdr.total_len > AVA_MSG_MAX_DEFAULT)
        return Status::error(AVA_E_PROTO, "a message in pieces of impossible length");
      if (!c.partial.reserve(hdr.total_len))
        return Status::error(AVA_E_NOMEM, "no memory for a message in pieces");
      c.partial.set_size(hdr.total_len);
    }
    const uint64_t left = c.partial.size() - c.partial_got;
    if (len > left || (more && len == left) || (!more && len != left))
      return Status::error(AVA_E_PROTO, "pieces that do not add up to their message");
    std::memcpy(c.partial.data() + c.partial_got, src, len);
    c.partial_got += len;
    if (more)
      return Status::ok();
    *out = std::move(c.partial);
    c.partial = MsgBuf();
    c.partial_got = 0;
    *complete = true;
    return Status::ok();
  }

  static int on_valid(nl_msg *msg, void *arg) {
    auto *core = static_cast<Core *>(arg);
    nlmsghdr *nlh = nlmsg_hdr(msg);
    auto *gnlh = static_cast<genlmsghdr *>(nlmsg_data(nlh));
    nlattr *attrs[AVA_KNL_A_MAX + 1] = {};
    if (genlmsg_parse(nlh, 0, attrs, AVA_KNL_A_MAX, nullptr) < 0)
      return NL_SKIP;
    if (gnlh->cmd == AVA_KNL_CMD_REGISTER) {
      core->half =
          attrs[AVA_KNL_A_SHM_SIZE] != nullptr ? nla_get_u64(attrs[AVA_KNL_A_SHM_SIZE]) : 0;
      core->registered = true;
    } else if (gnlh->cmd == AVA_KNL_CMD_MSG) {
      try {
        core->on_message(attrs);
      } catch (const std::bad_alloc &) {
        // dropped: the kernel caller times out rather than the worker dying
      }
    }
    return NL_SKIP;
  }

  // Errors ava.ko answers our sends with (a connection it already closed): not fatal.
  static int on_error(sockaddr_nl *, nlmsgerr *, void *) { return NL_SKIP; }

  void stop(Status why) {
    std::vector<std::shared_ptr<Conn>> all;
    {
      std::lock_guard lock(mu);
      if (!stopped) {
        stopped = true;
        why_stopped = std::move(why);
      }
      for (auto &[id, c] : conns)
        all.push_back(c);
    }
    cv.notify_all();
    for (auto &c : all) {
      {
        std::lock_guard lock(c->mu);
        if (!c->closed) {
          c->closed = true;
          c->why_closed = Status::error(AVA_E_CLOSED, "the netlink hub stopped");
        }
      }
      c->cv.notify_all();
    }
  }

  void read_loop() {
    pollfd fds[2] = {{nl_socket_get_fd(sock), POLLIN, 0}, {wake.get(), POLLIN, 0}};
    for (;;) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR)
          continue;
        stop(Status::error(AVA_E_CLOSED, "poll: " + errno_text(errno)));
        return;
      }
      if (fds[1].revents != 0)
        return;
      int err = nl_recvmsgs_default(sock);
      if (err < 0 && err != -NLE_AGAIN && err != -NLE_INTR) {
        stop(Status::error(AVA_E_CLOSED, "netlink receive: " + nl_text(err)));
        return;
      }
    }
  }

  void forget(uint32_t id) {
    std::lock_guard lock(mu);
    conns.erase(id);
  }
};

namespace {

// One kernel connection as a channel.
class NetlinkChannel final : public Channel {
public:
  NetlinkChannel(std::shared_ptr<NetlinkHub::Core> core, std::shared_ptr<Conn> conn)
      : core_(std::move(core)), conn_(std::move(conn)) {}
  ~NetlinkChannel() override {
    bool gone;
    {
      std::lock_guard lock(conn_->mu);
      gone = conn_->closed && conn_->why_closed.code == AVA_OK;
      conn_->closed = true;
      core_->unmap_area(*conn_);
    }
    core_->forget(conn_->id);
    // the session ended here first: ava.ko fails the connection's callers now
    if (!gone)
      core_->send_cmd(AVA_KNL_CMD_CLOSE, conn_->id, nullptr, 0, false);
  }

  Status send(const struct iovec *iov, int iovcnt) override {
    uint64_t total = 0;
    for (int i = 0; i < iovcnt; i++)
      total += iov[i].iov_len;
    std::unique_ptr<uint8_t[]> flat(new (std::nothrow) uint8_t[total]);
    if (!flat && total != 0)
      return Status::error(AVA_E_NOMEM, "no memory to send a message");
    uint64_t at = 0;
    for (int i = 0; i < iovcnt; i++) {
      std::memcpy(flat.get() + at, iov[i].iov_base, iov[i].iov_len);
      at += iov[i].iov_len;
    }
    // every message is checked before any is sent
    for (uint64_t off = 0; off < total;) {
      ava_msg_hdr hdr;
      if (total - off < sizeof hdr)
        return Status::error(AVA_E_PROTO, "send: a partial message header");
      std::memcpy(&hdr, flat.get() + off, sizeof hdr);
      if (hdr.magic != AVA_MSG_MAGIC || hdr.total_len < sizeof hdr || hdr.total_len > total - off ||
          hdr.total_len > max_message_)
        return Status::error(AVA_E_PROTO, "send: a malformed message");
      if (hdr.total_len > AVA_KNL_INLINE_MAX && core_->half == 0)
        return Status::error(AVA_E_TOO_BIG,
                             "send: a message above the inline limit, and ava.ko has no "
                             "shared areas (knl_shm_kb=0)");
      off += hdr.total_len;
    }
    for (uint64_t off = 0; off < total;) {
      ava_msg_hdr hdr;
      std::memcpy(&hdr, flat.get() + off, sizeof hdr);
      Status s = send_one(flat.get() + off, hdr.total_len);
      if (!s.is_ok())
        return s;
      off += hdr.total_len;
    }
    return Status::ok();
  }

  Status recv(MsgBuf &buf, int timeout_ms) override {
    Deadline deadline(timeout_ms);
    std::unique_lock lock(conn_->mu);
    for (;;) {
      if (!conn_->queue.empty()) {
        buf = std::move(conn_->queue.front());
        conn_->queue.pop_front();
        if (buf.size() > max_message_)
          return Status::error(AVA_E_TOO_BIG, "a message above the channel's limit");
        return Status::ok();
      }
      if (conn_->closed || shut_)
        return Status::error(AVA_E_CLOSED, conn_->why_closed.message.empty()
                                               ? "the kernel connection closed"
                                               : conn_->why_closed.message);
      if (deadline.forever())
        conn_->cv.wait(lock);
      else if (conn_->cv.wait_for(lock, std::chrono::milliseconds(deadline.remaining_ms())) ==
                   std::cv_status::timeout &&
               conn_->queue.empty() && !conn_->closed && !shut_)
        return Status::error(AVA_E_TIMEOUT, "no message in time");
    }
  }

  void shutdown() override {
    {
      // under the lock: a recv between its check and its wait would miss the notify
      std::lock_guard lock(conn_->mu);
      shut_ = true;
    }
    conn_->cv.notify_all();
  }

  std::string describe() const override {
    return "netlink:" AVA_KNL_GENL_NAME "#" + std::to_string(conn_->id);
  }

private:
  Status send_one(const uint8_t *msg, uint64_t len) {
    if (shut_)
      return Status::error(AVA_E_CLOSED, "send after shutdown");
    if (len <= AVA_KNL_INLINE_MAX)
      return core_->send_cmd(AVA_KNL_CMD_MSG, conn_->id, msg, len, false);
    // In pieces of at most the half when larger, none of another message between.
    std::lock_guard pieces(conn_->send_mu);
    for (uint64_t off = 0; off < len;) {
      const uint64_t piece = std::min(len - off, core_->half);
      {
        std::lock_guard lock(conn_->mu);
        Status mapped = core_->map_area(*conn_);
        if (!mapped.is_ok())
          return mapped;
        std::memcpy(conn_->area + core_->half, msg + off, piece);
      }
      off += piece;
      // ava.ko copies it out before this send returns: the half is free again after it
      Status s = core_->send_cmd(AVA_KNL_CMD_MSG, conn_->id, nullptr, piece, true, off < len);
      if (!s.is_ok())
        return s;
    }
    return Status::ok();
  }

  std::shared_ptr<NetlinkHub::Core> core_;
  std::shared_ptr<Conn> conn_;
  std::atomic<bool> shut_{false};
};

void set_socket_options(int fd) {
  int bytes = kSocketBufferBytes;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  // a full socket makes ava.ko retry; it must not turn into ENOBUFS here
  int one = 1;
  setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);
}

} // namespace

Status NetlinkHub::open(std::unique_ptr<NetlinkHub> *out) {
  auto core = std::make_shared<Core>();
  core->sock = nl_socket_alloc();
  if (core->sock == nullptr)
    return Status::error(AVA_E_NOMEM, "netlink: no memory for a socket");
  int err = genl_connect(core->sock);
  if (err < 0)
    return Status::error(AVA_E_CLOSED, "netlink: " + nl_text(err));
  core->family = genl_ctrl_resolve(core->sock, AVA_KNL_GENL_NAME);
  if (core->family < 0)
    return Status::error(AVA_E_CLOSED, "generic netlink family '" AVA_KNL_GENL_NAME
                                       "' not found: is ava.ko loaded?");
  nl_socket_disable_seq_check(core->sock);
  nl_socket_disable_auto_ack(core->sock);
  nl_socket_enable_msg_peek(core->sock);
  set_socket_options(nl_socket_get_fd(core->sock));
  nl_socket_modify_cb(core->sock, NL_CB_VALID, NL_CB_CUSTOM, &Core::on_valid, core.get());

  nl_msg *msg = nlmsg_alloc();
  if (msg == nullptr)
    return Status::error(AVA_E_NOMEM, "netlink: no memory for a message");
  if (genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, core->family, 0, 0, AVA_KNL_CMD_REGISTER,
                  AVA_KNL_GENL_VERSION) == nullptr) {
    nlmsg_free(msg);
    return Status::error(AVA_E_NOMEM, "netlink: no memory for a message");
  }
  err = nl_send_auto(core->sock, msg);
  nlmsg_free(msg);
  if (err < 0)
    return Status::error(AVA_E_CLOSED, "netlink: REGISTER: " + nl_text(err));
  // the reply, or ava.ko's error (-EPERM without CAP_NET_ADMIN, -EBUSY: another worker)
  timeval tv{kRegisterTimeoutMs / 1000, 0};
  setsockopt(nl_socket_get_fd(core->sock), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  while (!core->registered) {
    err = nl_recvmsgs_default(core->sock);
    if (err < 0)
      return Status::error(AVA_E_CLOSED, "ava.ko refused the worker's REGISTER: " + nl_text(err));
  }
  nl_socket_set_nonblocking(core->sock);
  nl_socket_modify_err_cb(core->sock, NL_CB_CUSTOM, &Core::on_error, nullptr);
  core->wake.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!core->wake.valid())
    return Status::error(AVA_E_NOMEM, "eventfd: " + errno_text(errno));
  try {
    core->reader = std::thread([c = core.get()] { c->read_loop(); });
  } catch (const std::system_error &e) {
    return Status::error(AVA_E_NOMEM, std::string("netlink hub thread: ") + e.what());
  }
  out->reset(new NetlinkHub(std::move(core)));
  return Status::ok();
}

NetlinkHub::~NetlinkHub() {
  shutdown();
  if (core_->reader.joinable())
    core_->reader.join();
}

Status NetlinkHub::accept(std::unique_ptr<Channel> *out, int timeout_ms) {
  std::unique_lock lock(core_->mu);
  auto ready = [&] { return core_->stopped || !core_->pending.empty(); };
  if (timeout_ms < 0)
    core_->cv.wait(lock, ready);
  else
    core_->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
  if (!core_->pending.empty()) {
    std::shared_ptr<Conn> c = std::move(core_->pending.front());
    core_->pending.pop_front();
    lock.unlock();
    try {
      *out = std::make_unique<NetlinkChannel>(core_, std::move(c));
    } catch (const std::bad_alloc &) {
      return Status::error(AVA_E_NOMEM, "no memory for a channel");
    }
    return Status::ok();
  }
  if (core_->stopped)
    return Status::error(AVA_E_CLOSED, core_->why_stopped.message.empty()
                                           ? "the netlink hub stopped"
                                           : core_->why_stopped.message);
  return Status::error(AVA_E_TIMEOUT, "no new kernel connection in time");
}

void NetlinkHub::shutdown() {
  uint64_t one = 1;
  if (core_->wake.valid())
    (void)!write(core_->wake.get(), &one, sizeof one);
  core_->stop(Status::error(AVA_E_CLOSED, "the netlink hub stopped"));
}

std::string NetlinkHub::describe() const {
  return "netlink:" AVA_KNL_GENL_NAME " (port " +
         std::to_string(nl_socket_get_local_port(core_->sock)) + ")";
}

} // namespace ava
