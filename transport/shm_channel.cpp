// SPDX-License-Identifier: MIT
#include "transport/shm_channel.hpp"

#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "transport/gather.hpp"

namespace ava::detail {
namespace {

constexpr uint64_t kHdrBytes = sizeof(ava_msg_hdr);
// A sleeper wakes at least this often to notice a dead peer (its bootstrap
// socket at EOF), since a dead peer cannot wake it.
constexpr int kSleepSliceMs = 50;
// Spinning with pause instructions catches a peer that answers within a few
// microseconds. Past that, the rest of the spin budget yields between checks:
// when a machine has more runnable threads than CPUs (2 vCPUs, reader and
// shadow threads on both sides), the thread being waited for then gets the
// CPU instead of a spinner; measured on such a host, a null call through the
// whole stack took ~84 us with pure pausing and ~50 us with this.
constexpr std::chrono::nanoseconds kPauseSpin{2000};

// Shared futexes (no FUTEX_PRIVATE_FLAG): the words live in a MAP_SHARED
// mapping and the waker is another process.
long futex_wait(uint32_t *word, uint32_t expected, int timeout_ms) {
  struct timespec ts = {timeout_ms / 1000, static_cast<long>(timeout_ms % 1000) * 1000000L};
  return ::syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout_ms < 0 ? nullptr : &ts, nullptr,
                   0);
}

void futex_wake(uint32_t *word) {
  ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void full_fence() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

// Called after a full fence that follows the caller's publication.
void wake_if_sleeping(RegionSignals &signals, uint32_t *word) {
  if (__atomic_load_n(word, __ATOMIC_RELAXED) == 0)
    return;
  __atomic_store_n(word, 0, __ATOMIC_RELAXED);
  signals.wake_peer(word);
}

// Futexes in the shared mapping; the peer's death shows on the bootstrap
// socket (nothing travels on it after the hand-over, so any event on it, EOF,
// error or stray bytes, means the peer is gone or misbehaving). A watcher
// thread blocks in poll() on it and wakes every sleeper when it fires, so
// sleepers need no timeout to notice a dead peer, and an idle channel costs
// no wake-ups. Without the thread (it could not be started) sleepers fall
// back to slices and poll the socket themselves.
class FutexSignals final : public RegionSignals {
public:
  explicit FutexSignals(UniqueFd socket) : socket_(std::move(socket)) {
    try {
      watcher_ = std::thread([this] { watch(); });
    } catch (const std::system_error &) {
      // Slices instead (see wakes_on_peer_death()).
    }
  }
  ~FutexSignals() override {
    ::shutdown(socket_.get(), SHUT_RDWR); // ends the watcher's poll
    if (watcher_.joinable())
      watcher_.join();
  }

  bool sleep(uint32_t *word, int ms) override {
    if (ms < 0 && !watcher_.joinable())
      ms = kSleepSliceMs;
    {
      std::lock_guard lock(mu_);
      if (gone_)
        return false;
      sleepers_.push_back(word);
    }
    // A watcher that fired after we looked stored 0 in word first: this
    // futex_wait then returns at once (EAGAIN) instead of missing the wake-up.
    const long rc = futex_wait(word, 1u, ms);
    const int err = errno;
    {
      std::lock_guard lock(mu_);
      auto it = std::find(sleepers_.begin(), sleepers_.end(), word);
      if (it != sleepers_.end())
        sleepers_.erase(it);
    }
    return rc == 0 || err != ETIMEDOUT;
  }
  void wake_peer(uint32_t *word) override { futex_wake(word); }
  void wake_self(uint32_t *word) override { futex_wake(word); }
  bool peer_gone() override {
    {
      std::lock_guard lock(mu_);
      if (gone_)
        return true;
    }
    pollfd p{socket_.get(), POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && p.revents != 0;
  }
  bool wakes_on_peer_death() const override { return watcher_.joinable(); }
  void shutdown() override {
    // The descriptor stays open until destruction so that a concurrent call
    // never polls a number that was closed and reused meanwhile.
    ::shutdown(socket_.get(), SHUT_RDWR);
  }

private:
  void watch() {
    pollfd p{socket_.get(), POLLIN | POLLRDHUP, 0};
    while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    std::lock_guard lock(mu_);
    gone_ = true;
    for (uint32_t *word : sleepers_) {
      __atomic_store_n(word, 0u, __ATOMIC_RELAXED);
      futex_wake(word);
    }
  }

  UniqueFd socket_;
  std::mutex mu_;
  std::vector<uint32_t *> sleepers_; // mu_
  bool gone_ = false;                // mu_
  std::thread watcher_;
};

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

std::string n(uint64_t v) {
  return std::to_string(v);
}

std::string fmt_ms(int ms) {
  return ms < 0 ? std::string("ever") : std::to_string(ms) + " ms";
}

RingView ring_view(const ShmMapping &map, ava_ring_ctl *ctl, uint64_t off, uint64_t size) {
  return RingView{ctl, map.base() + off, size};
}

} // namespace

std::unique_ptr<RegionSignals> make_futex_signals(UniqueFd bootstrap_socket) {
  return std::make_unique<FutexSignals>(std::move(bootstrap_socket));
}

void ShmChannel::Cursor::copy(uint8_t *dst, uint64_t bytes) {
  while (bytes > 0 && index < iovcnt) {
    const size_t avail = iov[index].iov_len - offset;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(avail, bytes));
    if (take > 0) {
      if (dst != nullptr) {
        std::memcpy(dst, static_cast<const uint8_t *>(iov[index].iov_base) + offset, take);
        dst += take;
      }
      bytes -= take;
      offset += take;
    }
    if (offset == iov[index].iov_len) {
      ++index;
      offset = 0;
    }
  }
}

ShmChannel::ShmChannel(ShmMapping map, const RegionLayout &layout, ShmSide side,
                       std::unique_ptr<RegionSignals> signals, std::string description,
                       uint64_t spin_ns, PolicedRing policed)
    : map_(std::move(map)), layout_(layout), side_(side), signals_(std::move(signals)),
      description_(std::move(description)), spin_ns_(spin_ns), submitter_(policed.submitter) {
  ava_region_hdr *hdr = map_.header();
  RingView cmd = ring_view(map_, &hdr->cmd, layout_.cmd_off, layout_.cmd_size);
  cmd.head_word = policed.cmd_head;
  cmd.tail_word = policed.cmd_tail;
  const RingView reply = ring_view(map_, &hdr->reply, layout_.reply_off, layout_.reply_size);
  if (side_ == ShmSide::Guest) {
    tx_ = RingProducer(cmd);
    rx_ = RingConsumer(reply);
  } else {
    tx_ = RingProducer(reply);
    rx_ = RingConsumer(cmd);
  }
}

ShmChannel::~ShmChannel() {
  shutdown();
}

Channel::Heap ShmChannel::heap() {
  if (layout_.heap_size == 0)
    return {};
  return {map_.base() + layout_.heap_off, layout_.heap_size};
}

uint32_t ShmChannel::region_state() const {
  // Pairs with the atomic ORs of state in break_region() and shutdown() (ours
  // and the peer's): a side that sees BROKEN or CLOSED sees what came before.
  return __atomic_load_n(&map_.header()->state, __ATOMIC_ACQUIRE);
}

bool ShmChannel::peer_gone() {
  if (peer_gone_.load(std::memory_order_relaxed))
    return true;
  if (signals_->peer_gone()) {
    peer_gone_.store(true, std::memory_order_relaxed);
    return true;
  }
  return false;
}

template <typename Probe>
ShmChannel::Wait ShmChannel::wait_for(uint32_t *word, const Deadline &deadline, SpinGovernor &gov,
                                      bool spin, Probe probe) {
  using Clock = std::chrono::steady_clock;
  // A wait that does not spin tells the governor nothing.
  bool full = false;
  const auto budget = spin ? gov.next(&full) : std::chrono::nanoseconds(0);
  Clock::time_point spin_start{};
  bool spinning = budget.count() > 0;
  bool yielding = false;
  bool slept = false;
  for (uint64_t round = 0;; ++round) {
    RingProbe p = probe();
    if (p == RingProbe::Ready && spin)
      gov.ended(full, slept);
    if (p != RingProbe::Empty)
      return p == RingProbe::Ready ? Wait::Ready : Wait::Corrupt;
    if (shut_.load(std::memory_order_acquire))
      return Wait::Shut;
    const uint32_t state = region_state();
    if (broken_.load(std::memory_order_acquire) || (state & AVA_REGION_BROKEN) != 0)
      return Wait::Broken;
    if ((state & AVA_REGION_CLOSED) != 0 || peer_gone_.load(std::memory_order_relaxed)) {
      // The peer may have published just before it went: one last look.
      p = probe();
      if (p != RingProbe::Empty)
        return p == RingProbe::Ready ? Wait::Ready : Wait::Corrupt;
      return Wait::PeerGone;
    }
    if (deadline.expired())
      return Wait::Timeout;
    if (spinning) {
      if (round == 0) {
        spin_start = Clock::now();
      } else if (round % 8 == 0) {
        const auto spun = Clock::now() - spin_start;
        spinning = spun < budget;
        yielding = spun >= kPauseSpin;
      }
      if (yielding)
        sched_yield();
      else
        cpu_relax();
      continue;
    }
    __atomic_store_n(word, 1u, __ATOMIC_RELAXED);
    // Pairs with the full fence in notify_consumer()/notify_producer() (the
    // peer's, between publishing its index and reading this word) and the
    // full barriers in shutdown() and break_region() (either side's): either
    // we see their publication below, or they see 1 and wake us.
    full_fence();
    const uint32_t stop_bits = AVA_REGION_BROKEN | AVA_REGION_CLOSED;
    if (probe() != RingProbe::Empty || shut_.load(std::memory_order_relaxed) ||
        (region_state() & stop_bits) != 0) {
      __atomic_store_n(word, 0u, __ATOMIC_RELAXED);
      continue;
    }
    int slice = signals_->wakes_on_peer_death() ? -1 : kSleepSliceMs;
    if (!deadline.forever())
      slice = slice < 0 ? deadline.remaining_ms() : std::min(slice, deadline.remaining_ms());
    slept = true;
    const bool woken = slice != 0 && signals_->sleep(word, slice);
    __atomic_store_n(word, 0u, __ATOMIC_RELAXED);
    if (!woken)
      peer_gone();
  }
}

void ShmChannel::notify_consumer() {
  // Pairs with the full fence in the consumer's wait_for() between its store
  // of 1 to c_sleeping and its re-check of head: the head we published is
  // seen there, or we see its 1 here.
  full_fence();
  wake_if_sleeping(*signals_, tx_.peer_wait_word());
}

void ShmChannel::notify_producer() {
  // Pairs with the full fence in the producer's wait_for() between its store
  // of 1 to sleeping and its re-check of tail.
  full_fence();
  wake_if_sleeping(*signals_, rx_.peer_wait_word());
}

void ShmChannel::consumed(uint64_t bytes) {
  unnotified_ += bytes;
  // The threshold keeps a large message's pieces flowing: the producer,
  // waiting for room for its next piece, hears of each one read.
  if (unnotified_ < std::min<uint64_t>(kNotifyBytes, rx_.size() / 8) && rx_.has_backlog())
    return;
  unnotified_ = 0;
  rx_.publish_tail();
  notify_producer();
}

Status ShmChannel::closed_status(const char *op) const {
  return Status::error(AVA_E_CLOSED, description_ + ": " + op + ": channel shut down");
}

Status ShmChannel::usable(const char *op, bool for_recv) {
  if (shut_.load(std::memory_order_acquire))
    return closed_status(op);
  if (broken_.load(std::memory_order_acquire))
    return Status::error(AVA_E_CLOSED,
                         description_ + ": " + op + ": channel broken earlier: " + broken_reason_);
  const uint32_t state = region_state();
  if ((state & AVA_REGION_BROKEN) != 0)
    return Status::error(AVA_E_CLOSED, description_ + ": " + op +
                                           ": the shared region was marked broken by the peer");
  if (!for_recv && ((state & AVA_REGION_CLOSED) != 0 || peer_gone_.load(std::memory_order_relaxed)))
    return Status::error(AVA_E_CLOSED, description_ + ": " + op + ": peer closed the channel");
  return Status::ok();
}

Status ShmChannel::break_region(int code, std::string why) {
  bool expected = false;
  if (breaking_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
    broken_reason_ = why;
    broken_.store(true, std::memory_order_release);
  }
  // Pairs with the acquire loads of state in region_state() on both sides.
  __atomic_fetch_or(&map_.header()->state, AVA_REGION_BROKEN, __ATOMIC_SEQ_CST);
  // The fetch_or above is a full barrier; it pairs with the fence in every
  // sleeper's wait_for(), so each sleeper sees BROKEN or is woken here.
  signals_->note_error();
  for (uint32_t *word : {tx_.peer_wait_word(), rx_.peer_wait_word()})
    wake_if_sleeping(*signals_, word);
  for (uint32_t *word : {tx_.wait_word(), rx_.wait_word()})
    if (__atomic_exchange_n(word, 0u, __ATOMIC_RELAXED) != 0)
      signals_->wake_self(word);
  return Status::error(code, description_ + ": " + why);
}

Status ShmChannel::wait_failure(Wait w, const char *op, bool mid_message) {
  switch (w) {
  case Wait::Shut:
    return closed_status(op);
  case Wait::Broken:
    if (broken_.load(std::memory_order_acquire))
      return Status::error(AVA_E_CLOSED, description_ + ": " + op +
                                             ": channel broken earlier: " + broken_reason_);
    return Status::error(AVA_E_CLOSED, description_ + ": " + op +
                                           ": the shared region was marked broken by the peer");
  case Wait::PeerGone:
    return Status::error(AVA_E_CLOSED, description_ + ": " + op + ": peer closed the channel" +
                                           (mid_message ? " mid-message" : ""));
  default:
    return Status::error(AVA_E_CLOSED, description_ + ": " + op + ": unexpected wait result");
  }
}

Status ShmChannel::next_record(RingRecord *rec, int wait_ms, bool spin, bool mid_message,
                               uint64_t got, uint64_t total) {
  std::string why;
  const Wait w = wait_for(rx_.wait_word(), Deadline(wait_ms), rx_spin_, spin, [&] {
    // A reply from the inbox (bytes == nullptr) may come between messages only.
    if (!mid_message && inbox_ready_.load(std::memory_order_acquire)) {
      rec->bytes = nullptr;
      return RingProbe::Ready;
    }
    return rx_.next(rec, &why);
  });
  if (w == Wait::Ready)
    return Status::ok();
  if (w == Wait::Corrupt)
    return break_region(AVA_E_PROTO, "corrupt ring: " + why);
  if (w == Wait::Timeout) {
    if (!mid_message)
      return Status::error(AVA_E_TIMEOUT, description_ + ": no message within " + fmt_ms(wait_ms));
    return break_region(AVA_E_TIMEOUT, "peer stalled mid-message (" + n(got) + " of " + n(total) +
                                           " bytes, nothing more for " + fmt_ms(wait_ms) + ")");
  }
  return wait_failure(w, "recv", mid_message);
}

Status ShmChannel::copy_header(const RingRecord &rec, ava_msg_hdr *hdr) {
  if (rec.kind == AVA_REC_MSG_END)
    return break_region(AVA_E_PROTO, "MSG_END record with no MSG_PART before it");
  if (rec.length < kHdrBytes)
    return break_region(AVA_E_PROTO, "message record of " + n(rec.length) +
                                         " bytes is shorter than its 64-byte header");
  // Checked on a private copy: the peer may rewrite the ring meanwhile.
  std::memcpy(hdr, rec.bytes, kHdrBytes);
  if (hdr->magic != AVA_MSG_MAGIC || hdr->abi_version != AVA_ABI_VERSION)
    return break_region(AVA_E_PROTO, "message header has a bad magic or ABI version");
  if (rec.kind == AVA_REC_MSG && hdr->total_len != rec.length)
    return break_region(AVA_E_PROTO, "message header says total_len " + n(hdr->total_len) +
                                         " but its record holds " + n(rec.length) + " bytes");
  if (rec.kind == AVA_REC_MSG_PART && hdr->total_len <= rec.length)
    return break_region(AVA_E_PROTO, "first MSG_PART of a message of " + n(hdr->total_len) +
                                         " bytes holds " + n(rec.length) + " bytes");
  if (hdr->total_len > max_message_)
    return break_region(AVA_E_TOO_BIG, "message of " + n(hdr->total_len) +
                                           " bytes exceeds the limit of " + n(max_message_) +
                                           " bytes");
  return Status::ok();
}

Status ShmChannel::receive(MsgBuf &buf, int timeout_ms, bool spin) {
  buf.set_size(0);
  Status st = usable("recv", true);
  if (!st.is_ok())
    return st;
  if (take_inbox(buf))
    return Status::ok();
  RingRecord rec;
  st = next_record(&rec, timeout_ms, spin, false, 0, 0);
  if (!st.is_ok())
    return st;
  if (rec.bytes == nullptr && take_inbox(buf))
    return Status::ok();
  ava_msg_hdr hdr;
  st = copy_header(rec, &hdr);
  if (!st.is_ok())
    return st;
  // Only now, with total_len vetted against max_message, may the peer make us allocate.
  if (!buf.reserve(hdr.total_len))
    return break_region(AVA_E_NOMEM,
                        "cannot allocate " + n(hdr.total_len) + " bytes for a message");
  std::memcpy(buf.data(), &hdr, kHdrBytes);
  std::memcpy(buf.data() + kHdrBytes, rec.bytes + kHdrBytes, rec.length - kHdrBytes);
  consumed(rx_.consume(rec));
  if (rec.kind == AVA_REC_MSG) {
    buf.set_size(hdr.total_len);
    signals_->note_received(hdr.total_len);
    return Status::ok();
  }
  st = recv_parts(buf, rec);
  if (st.is_ok())
    signals_->note_received(hdr.total_len);
  return st;
}

Status ShmChannel::recv_parts(MsgBuf &buf, const RingRecord &first) {
  const uint64_t total = buf.header()->total_len;
  uint64_t got = first.length;
  while (got < total) {
    RingRecord rec;
    Status st = next_record(&rec, stall_timeout_ms_, true, true, got, total);
    if (!st.is_ok())
      return st;
    auto so_far = [&] { return " (message of " + n(total) + " bytes, " + n(got) + " so far)"; };
    if (rec.kind == AVA_REC_MSG)
      return break_region(AVA_E_PROTO,
                          "a MSG record arrived between the pieces of a message" + so_far());
    if (rec.length > total - got)
      return break_region(AVA_E_PROTO,
                          "a piece of " + n(rec.length) + " bytes overruns the message" + so_far());
    const bool last = got + rec.length == total;
    if (last != (rec.kind == AVA_REC_MSG_END))
      return break_region(AVA_E_PROTO, std::string(last ? "the last piece is not MSG_END"
                                                        : "MSG_END before the message is whole") +
                                           so_far());
    std::memcpy(buf.data() + got, rec.bytes, rec.length);
    got += rec.length;
    consumed(rx_.consume(rec));
  }
  buf.set_size(total);
  return Status::ok();
}

Status ShmChannel::wait_for_space(uint64_t length) {
  // The consumer can only make room for what it can see.
  tx_.publish();
  notify_consumer();
  std::string why;
  const Wait w = wait_for(tx_.wait_word(), Deadline(send_timeout_ms()), tx_spin_, true, [&] {
    const RingProbe p = tx_.refresh(&why);
    if (p != RingProbe::Ready)
      return p;
    return tx_.fits(length) ? RingProbe::Ready : RingProbe::Empty;
  });
  if (w == Wait::Ready)
    return Status::ok();
  if (w == Wait::Timeout) {
    // Part of a message may be out already: the stream cannot go on.
    return break_region(AVA_E_TIMEOUT,
                        "send: the peer read nothing for " + fmt_ms(send_timeout_ms()));
  }
  if (w == Wait::Corrupt)
    return break_region(AVA_E_PROTO, "corrupt ring index: " + why);
  return wait_failure(w, "send", false);
}

Status ShmChannel::write_record(uint32_t kind, uint64_t length, Cursor &cursor) {
  if (!tx_.fits(length)) {
    std::string why;
    if (tx_.refresh(&why) == RingProbe::Corrupt)
      return break_region(AVA_E_PROTO, "corrupt ring index: " + why);
    if (!tx_.fits(length)) {
      Status st = wait_for_space(length);
      if (!st.is_ok())
        return st;
    }
  }
  uint8_t *dst = tx_.append(kind, static_cast<uint32_t>(length));
  cursor.copy(dst, length);
  return Status::ok();
}

bool ShmChannel::take_inbox(MsgBuf &buf) {
  // Only a policed slot's refusals fill the inbox: every other recv stops here.
  if (!inbox_ready_.load(std::memory_order_acquire))
    return false;
  std::lock_guard lock(inbox_mu_);
  if (inbox_.empty())
    return false;
  const std::vector<uint8_t> &msg = inbox_.front();
  if (!buf.reserve(msg.size()))
    return false;
  std::memcpy(buf.data(), msg.data(), msg.size());
  buf.set_size(msg.size());
  inbox_.pop_front();
  inbox_ready_.store(!inbox_.empty(), std::memory_order_release);
  return true;
}

Status ShmChannel::on_refused(const ava_msg_hdr &hdr, int status) {
  signals_->note_error();
  if (hdr.kind == AVA_MSG_HELLO) {
    const char *why = status == AVA_E_UNSUPPORTED
                          ? "no command table is registered for the spec: load its module "
                            "ava_<spec>.ko"
                      : status == AVA_E_VERSION
                          ? "the guest library speaks another protocol version than ava.ko"
                          : nullptr;
    return Status::error(
        status == AVA_E_UNSUPPORTED || status == AVA_E_VERSION ? status : AVA_E_SPEC,
        description_ + ": ava.ko polices this slot and refused the HELLO (" +
            (why != nullptr ? std::string(why) : "status " + n(static_cast<uint64_t>(-status))) +
            ")");
  }
  // As the host does: an async call is dropped, a sync one answered.
  if (hdr.kind != AVA_MSG_CALL || (hdr.flags & AVA_F_SYNC) == 0)
    return Status::ok();
  struct {
    ava_msg_hdr hdr;
    ava_reply_common common;
  } reply{};
  reply.hdr.magic = AVA_MSG_MAGIC;
  reply.hdr.abi_version = AVA_ABI_VERSION;
  reply.hdr.kind = AVA_MSG_REPLY;
  reply.hdr.spec_id = hdr.spec_id;
  reply.hdr.func_id = hdr.func_id;
  reply.hdr.total_len = sizeof reply;
  reply.hdr.thread_id = hdr.thread_id;
  reply.hdr.seq = hdr.seq;
  reply.hdr.call_id = hdr.call_id;
  reply.hdr.args_len = sizeof(ava_reply_common);
  reply.hdr.flags = AVA_F_SYNC;
  reply.hdr.status = status;
  try {
    const auto *bytes = reinterpret_cast<const uint8_t *>(&reply);
    std::lock_guard lock(inbox_mu_);
    inbox_.emplace_back(bytes, bytes + sizeof reply);
    inbox_ready_.store(true, std::memory_order_release);
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, description_ + ": no memory for a refused call's reply");
  }
  // The reader may sleep in ava.ko: clearing its word makes a wait that has
  // not started yet return at once, and the wake-up ends one in progress.
  full_fence();
  __atomic_store_n(rx_.wait_word(), 0u, __ATOMIC_RELAXED);
  signals_->wake_self(rx_.wait_word());
  return Status::ok();
}

Status ShmChannel::send_submitted(const struct iovec *iov, int iovcnt, uint64_t total) {
  const struct iovec *rest = iov; // what ava.ko has not taken yet
  int rest_n = iovcnt;
  std::vector<struct iovec> adjusted; // rest, when it starts inside a piece
  Cursor headers{iov, iovcnt};
  uint64_t at = 0;   // bytes ava.ko has taken
  uint64_t next = 0; // where the message under `headers` starts
  ava_msg_hdr hdr{};
  for (;;) {
    uint64_t taken = 0;
    int refused = 0;
    Status st = submitter_->submit(rest, rest_n, total - at, &taken, &refused);
    if (!st.is_ok())
      return Status::error(st.code, description_ + ": send: " + st.message);
    if (taken == 0 || taken > total - at)
      return Status::error(AVA_E_PROTO, description_ + ": send: ava.ko took " + n(taken) + " of " +
                                            n(total - at) + " bytes");
    at += taken;
    if (refused == 0 && at == total)
      break;
    // The gather list was framed by check_gather_messages: walk its headers
    // to the message that ends where ava.ko stopped.
    while (next < at) {
      headers.copy(reinterpret_cast<uint8_t *>(&hdr), kHdrBytes);
      headers.copy(nullptr, hdr.total_len - kHdrBytes);
      next += hdr.total_len;
    }
    if (next != at)
      return Status::error(AVA_E_PROTO, description_ + ": send: ava.ko stopped inside a message");
    if (refused != 0) {
      st = on_refused(hdr, refused);
      if (!st.is_ok())
        return st;
    }
    if (at == total)
      break;
    rest = iov + headers.index;
    rest_n = iovcnt - headers.index;
    if (headers.offset != 0) {
      try {
        adjusted.assign(rest, iov + iovcnt);
      } catch (const std::bad_alloc &) {
        return Status::error(AVA_E_NOMEM, description_ + ": send: out of memory");
      }
      adjusted.front().iov_base =
          static_cast<uint8_t *>(adjusted.front().iov_base) + headers.offset;
      adjusted.front().iov_len -= headers.offset;
      rest = adjusted.data();
    }
  }
  signals_->note_sent(total);
  return Status::ok();
}

Status ShmChannel::send(const struct iovec *iov, int iovcnt) {
  Status st = usable("send", false);
  if (!st.is_ok())
    return st;
  uint64_t total = 0;
  st = check_gather_messages(iov, iovcnt, max_message_, description_, &total);
  if (!st.is_ok())
    return st;
  if (submitter_ != nullptr)
    return send_submitted(iov, iovcnt, total);
  Cursor cursor{iov, iovcnt};
  const uint64_t piece_max = tx_.max_payload();
  for (uint64_t done = 0; done < total;) {
    ava_msg_hdr hdr{}; // check_gather_messages saw a whole header here
    Cursor peek = cursor;
    peek.copy(reinterpret_cast<uint8_t *>(&hdr), kHdrBytes);
    const uint64_t len = hdr.total_len;
    if (len <= piece_max) {
      st = write_record(AVA_REC_MSG, len, cursor);
    } else {
      for (uint64_t left = len; left > 0 && st.is_ok();) {
        const uint64_t piece = std::min(left, piece_max);
        st = write_record(piece == left ? AVA_REC_MSG_END : AVA_REC_MSG_PART, piece, cursor);
        left -= piece;
      }
    }
    if (!st.is_ok())
      return st;
    done += len;
  }
  // One publication and at most one wake-up for the whole batch.
  tx_.publish();
  notify_consumer();
  signals_->note_sent(total);
  return Status::ok();
}

void ShmChannel::shutdown() {
  const bool first = !shut_.exchange(true, std::memory_order_seq_cst);
  if (first) {
    // Pairs with the acquire loads of state in the peer's region_state().
    __atomic_fetch_or(&map_.header()->state, AVA_REGION_CLOSED, __ATOMIC_SEQ_CST);
    signals_->shutdown();
  }
  // Pairs with the full fence in every sleeper's wait_for() (ours and the
  // peer's): it sees shut_/CLOSED, or we see its 1 and wake it.
  full_fence();
  for (uint32_t *word : {rx_.wait_word(), tx_.wait_word()}) {
    __atomic_store_n(word, 0u, __ATOMIC_RELAXED);
    signals_->wake_self(word);
  }
  for (uint32_t *word : {rx_.peer_wait_word(), tx_.peer_wait_word()}) {
    __atomic_store_n(word, 0u, __ATOMIC_RELAXED);
    signals_->wake_peer(word);
  }
}

} // namespace ava::detail
