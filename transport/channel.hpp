// SPDX-License-Identifier: MIT
// Channels: one interface for every carrier of ava messages (unix, tcp; later
// vsock, shm, kmod). A channel moves whole messages framed by
// ava_msg_hdr.total_len; it checks only the framing (magic, ABI version and
// total_len within [sizeof(ava_msg_hdr), max_message]) and leaves the
// meaning of a message to the runtime.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "ava/wire.h"

namespace ava {

// Result of an operation at a boundary: code is 0 or a negative AVA_E_*.
struct Status {
  int code = AVA_OK;
  std::string message;

  static Status ok() { return {}; }
  static Status error(int code, std::string message) { return {code, std::move(message)}; }
  bool is_ok() const { return code == AVA_OK; }
};

namespace detail {
// Frees what big_block_alloc gave (transport/big_block.hpp).
struct MsgBlockFree {
  uint64_t bytes = 0;
  void operator()(uint64_t *words) const;
};
} // namespace detail

// An owned, 8-byte aligned, uninitialised byte buffer holding one message.
class MsgBuf {
public:
  MsgBuf() = default;
  // A moved-from buffer is empty, with no capacity, and may be reused.
  MsgBuf(MsgBuf &&other) noexcept
      : storage_(std::move(other.storage_)), size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  MsgBuf &operator=(MsgBuf &&other) noexcept {
    storage_ = std::move(other.storage_);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    return *this;
  }
  MsgBuf(const MsgBuf &) = delete;
  MsgBuf &operator=(const MsgBuf &) = delete;
  // Grows capacity (never shrinks); contents are not preserved.
  bool reserve(uint64_t bytes);
  uint8_t *data() { return reinterpret_cast<uint8_t *>(storage_.get()); }
  const uint8_t *data() const { return reinterpret_cast<const uint8_t *>(storage_.get()); }
  uint64_t size() const { return size_; }
  void set_size(uint64_t size) { size_ = size; }
  uint64_t capacity() const { return capacity_; }
  const ava_msg_hdr *header() const {
    return reinterpret_cast<const ava_msg_hdr *>(storage_.get());
  }
  // Releases memory above keep_bytes so one huge message does not pin memory forever.
  void trim(uint64_t keep_bytes);
  // For a buffer kept for a later message: the system may take its whole
  // pages back when it runs short of memory (MADV_FREE); until then a write
  // reuses them without a page fault. The contents are lost; size becomes 0.
  void lend_pages();

private:
  using Storage = std::unique_ptr<uint64_t[], detail::MsgBlockFree>;
  // A block of words 64-bit words, or an empty Storage.
  static Storage allocate(uint64_t words);

  Storage storage_;
  uint64_t size_ = 0;
  uint64_t capacity_ = 0;
};

enum class ChannelKind { Unix, Tcp, Shm, Vsock, Kmod, Serial };

// The device node of ava.ko in a guest ("kmod" alone means this one).
inline constexpr const char *kDefaultKmodDevice = "/dev/ava";

struct Address {
  ChannelKind kind = ChannelKind::Unix;
  std::string path;  // Unix: filesystem path (a leading '@' means the abstract namespace)
                     // Shm: the worker's bootstrap unix socket, same forms
                     // Kmod: ava.ko's device node (/dev/ava)
                     // Serial: a virtio-serial port in a guest (/dev/vport0p1)
  std::string host;  // Tcp: numeric or resolvable host
  uint16_t port = 0; // Tcp: 0 lets listen() choose
  // Vsock ("vsock:CID:PORT"): 0xffffffff is "any" (VMADDR_CID_ANY / VMADDR_PORT_ANY).
  uint32_t vsock_cid = 0;
  uint32_t vsock_port = 0;
  std::string to_string() const; // "unix:/path", "tcp:host:port" or "shm:/path"
};

// Parses "unix:/path", "tcp:host:port", "shm:/path", "vsock:CID:PORT",
// "kmod:/dev/ava" (or just "kmod"), "serial:/dev/vportNpM", "host:port" or
// "/path".
// A bare form is read as default_kind when ambiguous (a bare path is shm when
// default_kind is Shm).
Status parse_address(std::string_view text, ChannelKind default_kind, Address *out);
// Parses "unix", "tcp", "shm", "vsock", "kmod" or "serial".
Status parse_channel_kind(std::string_view text, ChannelKind *out);

// A receiver that may take a message's payload (the bytes after its
// argument block) straight into memory of its own instead of the message
// buffer: the guest receives a DATA message's bytes into the program's
// buffer, without copying them again.
class PayloadSink {
public:
  // Most places one payload may go to.
  static constexpr int kMaxPlaces = 256;
  // head: the message's header and argument block (64 + args_len bytes);
  // the channel checked its framing only. True, with iov[0..*iovcnt) (at
  // most kMaxPlaces) whose lengths add up to the payload, to receive the
  // payload there; false to receive the message whole, as recv does.
  virtual bool place(const uint8_t *head, uint64_t head_len, struct iovec *iov, int *iovcnt) = 0;
  // Follows every place() that said true: the payload is in (ok), or the
  // channel broke on the way (the places may hold part of it).
  virtual void landed(bool ok) = 0;

protected:
  ~PayloadSink() = default;
};

class Channel {
public:
  virtual ~Channel() = default;
  // Sends one whole message given as a gather list; the first element starts
  // with its ava_msg_hdr. The list may also hold several complete messages
  // back to back (callers batch async calls): each header's total_len says
  // where the next one starts, and the receiver gets them as separate
  // messages, in order. Every message is checked before any is sent. Not
  // safe to call from two threads at once.
  virtual Status send(const struct iovec *iov, int iovcnt) = 0;
  // Receives one message into buf. timeout_ms < 0 waits forever; on timeout
  // returns AVA_E_TIMEOUT with nothing consumed. A closed peer is AVA_E_CLOSED.
  // A framing error is AVA_E_PROTO or AVA_E_TOO_BIG and leaves the channel broken.
  // Not safe to call from two threads at once, but safe alongside send().
  virtual Status recv(MsgBuf &buf, int timeout_ms) = 0;
  // As recv, but an empty channel is slept on at once, without the spin that
  // usually catches an answer within microseconds: for a reply that waits on
  // device work (clFinish, a stream synchronize), where a spinning waiter
  // would take a CPU from the driver's own threads on a machine with few.
  // Channels that never spin need not override it.
  virtual Status recv_without_spin(MsgBuf &buf, int timeout_ms) { return recv(buf, timeout_ms); }
  // As recv (spin) or recv_without_spin, offering sink the payload of a
  // large message. *placed true: buf holds the header and argument block
  // only (its size is less than the header's total_len), and the payload
  // went where sink said. Channels whose messages arrive in memory already
  // (shared-memory rings) never place.
  virtual Status recv_placed(MsgBuf &buf, int timeout_ms, bool spin, PayloadSink &sink,
                             bool *placed) {
    (void)sink;
    *placed = false;
    return spin ? recv(buf, timeout_ms) : recv_without_spin(buf, timeout_ms);
  }
  // Makes blocked and future send/recv fail with AVA_E_CLOSED (any thread).
  virtual void shutdown() = 0;
  virtual std::string describe() const = 0;
  // Memory shared with the peer for zero-copy buffers (shm channels); empty
  // for channels without one. The guest allocates in it; the worker only
  // uses ranges a message names, after checking them.
  struct Heap {
    uint8_t *base = nullptr;
    uint64_t size = 0;
  };
  virtual Heap heap() { return {}; }
  void set_max_message(uint64_t bytes) { max_message_ = bytes; }
  uint64_t max_message() const { return max_message_; }
  // Once a message has started to arrive, recv gives up (AVA_E_TIMEOUT, channel
  // broken) when no byte of it arrives for this long, so that a peer stopping
  // mid-message cannot hang the receiver; < 0 waits forever.
  void set_stall_timeout_ms(int ms) { stall_timeout_ms_ = ms; }
  int stall_timeout_ms() const { return stall_timeout_ms_; }
  // A send that finds no room for this long (the peer stopped reading) fails
  // with AVA_E_TIMEOUT and breaks the channel; < 0 (the default) waits for
  // ever. The worker bounds its sends, so that a guest that stops reading
  // cannot hold a worker thread (or a driver's callback thread) for good.
  // Honoured by the unix, tcp, vsock and shm channels.
  void set_send_timeout_ms(int ms) { send_timeout_ms_ = ms; }
  int send_timeout_ms() const { return send_timeout_ms_; }

protected:
  uint64_t max_message_ = AVA_MSG_MAX_DEFAULT;
  int stall_timeout_ms_ = 30000;
  int send_timeout_ms_ = -1;
};

class Listener {
public:
  virtual ~Listener() = default;
  // Waits for a peer; timeout_ms < 0 waits forever (AVA_E_TIMEOUT otherwise).
  virtual Status accept(std::unique_ptr<Channel> *out, int timeout_ms) = 0;
  // Accepts a peer without reading a byte from it: the worker supervisor
  // hands each connection to a new worker process, which makes the channel
  // with adopt_connection(). *fd is the connected socket (close-on-exec),
  // owned by the caller. Listeners that cannot do this return AVA_E_UNSUPPORTED.
  virtual Status accept_connection(int *fd, int timeout_ms);
  // Wakes a blocked accept(), which then returns AVA_E_CLOSED.
  virtual void shutdown() = 0;
  // The bound address, with the real port when 0 was asked for.
  virtual Address address() const = 0;
};

// connect_timeout_ms bounds the connection attempt (retrying while a unix
// socket file does not exist yet or the peer refuses).
Status connect_channel(const Address &address, int connect_timeout_ms,
                       std::unique_ptr<Channel> *out);
Status listen_channel(const Address &address, std::unique_ptr<Listener> *out);

// The worker side of a connection to a listener of listen_address, accepted
// by Listener::accept_connection() in another process or by systemd
// (Accept=yes): for unix, tcp and vsock the socket becomes the channel, as
// Listener::accept() would make it; for shm the guest's region hand-over is
// received on it first (within the hand-over timeout). Takes ownership of fd,
// which is closed on error too.
Status adopt_connection(const Address &listen_address, int fd, std::unique_ptr<Channel> *out);

// Wraps an already connected stream socket (e.g. one end of socketpair());
// takes ownership of fd, which is closed on error too. describe() reports
// description.
Status adopt_stream_socket(int fd, std::string description, std::unique_ptr<Channel> *out);
// Two channels connected to each other (AF_UNIX socketpair), for tests and
// in-process peers.
Status channel_pair(std::unique_ptr<Channel> *a, std::unique_ptr<Channel> *b);

} // namespace ava
