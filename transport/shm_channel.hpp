// SPDX-License-Identifier: MIT
// The shm channel proper: messages through the two rings of a mapped region
// (include/ava/ring.h) with spin-then-sleep waiting. How a side sleeps, wakes
// its peer and notices that the peer is gone is the carrier's business
// (RegionSignals): futexes and a bootstrap socket for the local shm channel
// (connect_shm/listen_shm in shm_bootstrap.cpp), ava.ko's ioctls in a guest
// (kmod_channel.cpp), eventfds on an ivshmem host (ivshmem_host.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "transport/channel.hpp"
#include "transport/fd_util.hpp"
#include "transport/region_signals.hpp"
#include "transport/shm_region.hpp"
#include "transport/shm_ring.hpp"
#include "transport/spin_governor.hpp"

namespace ava::detail {

enum class ShmSide { Guest, Worker };

// A policed /dev/ava slot (include/ava/ivshmem.h): ava.ko produces the
// command ring for the guest process, and keeps the ring's indices in the
// slot table, where the process cannot write.
struct PolicedRing {
  // Worker side: the command ring's head (ava.ko's) and tail (ours).
  ava_u64 *cmd_head = nullptr;
  ava_u64 *cmd_tail = nullptr;
  // Guest side: sends go to ava.ko instead of into the ring; owned by the signals.
  CommandSubmitter *submitter = nullptr;
};

class ShmChannel final : public Channel {
public:
  // The guest sends on the command ring and receives on the reply ring; the
  // worker the other way round.
  ShmChannel(ShmMapping map, const RegionLayout &layout, ShmSide side,
             std::unique_ptr<RegionSignals> signals, std::string description, uint64_t spin_ns,
             PolicedRing policed = {});
  ~ShmChannel() override;
  ShmChannel(const ShmChannel &) = delete;
  ShmChannel &operator=(const ShmChannel &) = delete;

  Status send(const struct iovec *iov, int iovcnt) override;
  Status recv(MsgBuf &buf, int timeout_ms) override { return receive(buf, timeout_ms, true); }
  Status recv_without_spin(MsgBuf &buf, int timeout_ms) override {
    return receive(buf, timeout_ms, false);
  }
  void shutdown() override;
  std::string describe() const override { return description_; }
  Heap heap() override;

  // For tests that play a misbehaving peer by writing into the region.
  uint8_t *region_base() const { return map_.base(); }
  const RegionLayout &layout() const { return layout_; }

private:
  enum class Wait { Ready, Timeout, Shut, PeerGone, Broken, Corrupt };

  // Whether op may start; recv still drains what a closed peer left.
  Status usable(const char *op, bool for_recv);
  Status receive(MsgBuf &buf, int timeout_ms, bool spin);
  // Waits for probe() to say Ready (or Corrupt) with spin-then-sleep on word.
  // Spins (gov's budget, unless !spin), then sleeps on word until probe finds
  // something.
  template <typename Probe>
  Wait wait_for(uint32_t *word, const Deadline &deadline, SpinGovernor &gov, bool spin,
                Probe probe);
  bool peer_gone();
  uint32_t region_state() const;

  // Waits up to wait_ms for the next record; got/total describe a message
  // being reassembled (mid_message) for the error text.
  Status next_record(RingRecord *rec, int wait_ms, bool spin, bool mid_message, uint64_t got,
                     uint64_t total);
  Status copy_header(const RingRecord &rec, ava_msg_hdr *hdr);
  Status recv_parts(MsgBuf &buf, const RingRecord &first);
  // Reads a gather list front to back.
  struct Cursor {
    const struct iovec *iov;
    int iovcnt;
    int index = 0;
    size_t offset = 0;                   // bytes of iov[index] already read
    void copy(uint8_t *dst, uint64_t n); // dst nullptr: skip n bytes
  };
  Status write_record(uint32_t kind, uint64_t length, Cursor &cursor);
  // Policed guest: hands messages to ava.ko; a refused sync CALL gets the
  // REPLY the host would have sent, from the inbox.
  Status send_submitted(const struct iovec *iov, int iovcnt, uint64_t total);
  Status on_refused(const ava_msg_hdr &hdr, int status);
  bool take_inbox(MsgBuf &buf);
  Status wait_for_space(uint64_t length);
  void notify_consumer();
  void notify_producer();
  // After a consume that freed bytes: gives them back to the producer (tail)
  // and tells it if it waits for space, unless records are left to read and
  // less than kNotifyBytes were freed since it was last told. Whoever reads
  // next gets to the end of that backlog and tells it then, so a waiting
  // producer is never forgotten; it waits at most until the backlog is read.
  // Touching the producer's line (its futex word) and ours (tail) once per
  // backlog instead of once per message is what lets the reader keep up
  // with a producer of small async calls.
  void consumed(uint64_t bytes);
  static constexpr uint64_t kNotifyBytes = 64 * 1024;

  // Marks the region broken (the peer fails too) and returns code.
  Status break_region(int code, std::string why);
  Status wait_failure(Wait w, const char *op, bool mid_message);
  Status closed_status(const char *op) const;

  ShmMapping map_;
  RegionLayout layout_;
  ShmSide side_;
  std::unique_ptr<RegionSignals> signals_;
  std::string description_;
  uint64_t spin_ns_;
  SpinGovernor rx_spin_{std::chrono::nanoseconds(spin_ns_)}; // waits for data
  SpinGovernor tx_spin_{std::chrono::nanoseconds(spin_ns_)}; // waits for room
  RingProducer tx_;
  RingConsumer rx_;
  uint64_t unnotified_ = 0; // bytes consumed since notify_producer (receiver's)
  CommandSubmitter *submitter_ = nullptr;
  std::mutex inbox_mu_;
  std::deque<std::vector<uint8_t>> inbox_;
  std::atomic<bool> inbox_ready_{false};
  std::atomic<bool> shut_{false};
  std::atomic<bool> breaking_{false}; // the first break_region() call wins
  std::atomic<bool> broken_{false};
  std::atomic<bool> peer_gone_{false};
  std::string broken_reason_; // written once, before broken_ is set
};

} // namespace ava::detail
