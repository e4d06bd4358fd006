// SPDX-License-Identifier: MIT
// The shm transport's checks of what the peer wrote into shared memory: the
// region header (check_region_header, the worker attaching to a guest's
// memfd) and the ring indices and records (RingConsumer reading the peer's
// head and records, RingProducer reading the peer's tail).
//
// Input: one byte choosing the ring size (4, 8 or 16 KiB) and the header
// expectations, the region header and its file size, a few peer indices,
// and the ring's bytes. The consumer reads every record it is handed in full
// (ASan checks the ring's bounds); each time it finds the ring empty, the
// "peer" publishes the next head from the input. Then the same ring bytes
// and first head are the command ring of a worker-side ShmChannel (in an
// anonymous mapping, with a peer that never wakes anyone), whose recv()
// reassembles the messages (MSG, MSG_PART/MSG_END) as the worker does.
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "transport/shm_channel.hpp"
#include "transport/shm_region.hpp"
#include "transport/shm_ring.hpp"

namespace {

using ava::detail::RingConsumer;
using ava::detail::RingProbe;
using ava::detail::RingProducer;
using ava::detail::RingRecord;
using ava::detail::RingView;

constexpr int kHeads = 8;

class Input {
public:
  Input(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  template <class T> T take() {
    T value{};
    const size_t n = sizeof(T) < size_ - pos_ ? sizeof(T) : size_ - pos_;
    std::memcpy(&value, data_ + pos_, n);
    pos_ += n;
    return value;
  }
  const uint8_t *rest() const { return data_ + pos_; }
  size_t rest_size() const { return size_ - pos_; }

private:
  const uint8_t *data_;
  size_t size_;
  size_t pos_ = 0;
};

volatile uint32_t g_sink;

void check_header(Input &in, uint8_t mode) {
  const ava_region_hdr hdr = in.take<ava_region_hdr>();
  const uint64_t file_size = in.take<uint64_t>();
  ava::detail::RegionExpect expect;
  expect.feature = (mode & 0x08) != 0 ? AVA_REGION_F_DOORBELL : AVA_REGION_F_FUTEX;
  expect.attached_ok = (mode & 0x10) != 0;
  expect.in_use_ok = (mode & 0x20) != 0;
  ava::detail::RegionLayout layout;
  if (ava::detail::check_region_header(hdr, file_size, &layout, expect).is_ok()) {
    // What a worker relies on once the header passed: every part inside the file.
    if (layout.cmd_off + layout.cmd_size > file_size ||
        layout.reply_off + layout.reply_size > file_size ||
        layout.heap_off + layout.heap_size > file_size ||
        !ava::detail::shm_ring_size_ok(layout.cmd_size) ||
        !ava::detail::shm_ring_size_ok(layout.reply_size))
      __builtin_trap();
  }
}

void consume_ring(Input &in, uint64_t size, const uint64_t (&heads)[kHeads]) {
  // Separate allocations, so that ASan notices a read past either.
  auto ctl = std::make_unique<ava_ring_ctl>();
  std::unique_ptr<uint8_t[]> data(new uint8_t[size]);
  std::memset(data.get(), 0, size);
  std::memcpy(data.get(), in.rest(), in.rest_size() < size ? in.rest_size() : size);
  RingView view;
  view.ctl = ctl.get();
  view.data = data.get();
  view.size = size;
  RingConsumer consumer(view);
  int next_head = 0;
  ctl->head = heads[next_head++];
  std::string why;
  for (int step = 0; step < 256; ++step) {
    RingRecord rec;
    const RingProbe probe = consumer.next(&rec, &why);
    if (probe == RingProbe::Corrupt)
      return;
    if (probe == RingProbe::Empty) {
      if (next_head == kHeads)
        return;
      ctl->head = heads[next_head++];
      continue;
    }
    std::vector<uint8_t> copy(rec.bytes, rec.bytes + rec.length);
    g_sink = copy.empty() ? 0 : copy.front() + copy.back();
    consumer.consume(rec);
  }
}

void produce_ring(uint64_t size, const uint64_t (&tails)[kHeads]) {
  auto ctl = std::make_unique<ava_ring_ctl>();
  std::unique_ptr<uint8_t[]> data(new uint8_t[size]);
  RingView view;
  view.ctl = ctl.get();
  view.data = data.get();
  view.size = size;
  RingProducer producer(view);
  std::string why;
  for (int i = 0; i < kHeads; ++i) {
    // The lengths come from the tails too, so that wrap-around and PADs occur.
    const uint32_t length = static_cast<uint32_t>(tails[i] >> 48) % producer.max_payload() + 1;
    if (producer.refresh(&why) == RingProbe::Corrupt)
      return;
    if (producer.fits(length)) {
      std::memset(producer.append(AVA_REC_MSG, length), 0xa5, length);
      producer.publish();
    }
    ctl->tail = tails[i] & 0xffffffffffffull;
  }
}

// A peer that is there but never signals: waits end at once.
class SilentPeer final : public ava::detail::RegionSignals {
public:
  bool sleep(uint32_t *, int) override { return false; }
  void wake_peer(uint32_t *) override {}
  void wake_self(uint32_t *) override {}
  bool peer_gone() override { return false; }
};

void channel_recv(const Input &in, uint64_t ring, uint64_t head) {
  const uint64_t total = AVA_REGION_HDR_SIZE + 2 * ring;
  void *p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return;
  ava::detail::ShmMapping map(static_cast<uint8_t *>(p), total);
  ava_region_hdr *hdr = map.header();
  hdr->magic = AVA_REGION_MAGIC;
  hdr->version = AVA_REGION_VERSION;
  hdr->features = AVA_REGION_F_FUTEX;
  hdr->state = AVA_REGION_READY | AVA_REGION_ATTACHED;
  hdr->total_size = total;
  hdr->cmd_off = AVA_REGION_HDR_SIZE;
  hdr->cmd_size = ring;
  hdr->reply_off = AVA_REGION_HDR_SIZE + ring;
  hdr->reply_size = ring;
  hdr->heap_off = total; // no heap
  hdr->cmd.head = head;
  std::memcpy(map.base() + AVA_REGION_HDR_SIZE, in.rest(),
              in.rest_size() < ring ? in.rest_size() : ring);
  ava::detail::RegionLayout layout;
  if (!ava::detail::check_mapped_region(map, {AVA_REGION_F_FUTEX, true, true}, &layout).is_ok())
    return;
  ava::detail::ShmChannel channel(std::move(map), layout, ava::detail::ShmSide::Worker,
                                  std::make_unique<SilentPeer>(), "fuzz", 0);
  channel.set_max_message(1u << 20);
  channel.set_stall_timeout_ms(0);
  for (int i = 0; i < 16; ++i) {
    ava::MsgBuf buf;
    if (!channel.recv(buf, 0).is_ok())
      return;
    g_sink = buf.size() > 0 ? buf.data()[buf.size() - 1] : 0;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Input in(data, size);
  const uint8_t mode = in.take<uint8_t>();
  const uint64_t ring_size = uint64_t{4096} << (mode % 3);
  check_header(in, mode);
  uint64_t indices[kHeads];
  for (uint64_t &index : indices)
    index = in.take<uint64_t>();
  produce_ring(ring_size, indices);
  consume_ring(in, ring_size, indices);
  channel_recv(in, ring_size, indices[0]);
  return 0;
}
