// SPDX-License-Identifier: MIT
// Helpers shared by the shm channel tests: a connected guest/worker pair,
// patterned messages, and raw access to the region for playing a bad peer.
#pragma once

#include <criterion/criterion.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/temp_dir.hpp"
#include "transport/channel.hpp"
#include "transport/shm.hpp"
#include "transport/shm_channel.hpp"

namespace shm_test {

using ava::testing::TempDir;

constexpr uint64_t kHdr = sizeof(ava_msg_hdr);
constexpr int kWaitMs = 10000;

inline ava_msg_hdr make_hdr(uint64_t total_len, uint64_t seq = 0) {
  ava_msg_hdr hdr{};
  hdr.magic = AVA_MSG_MAGIC;
  hdr.abi_version = AVA_ABI_VERSION;
  hdr.kind = AVA_MSG_CALL;
  hdr.total_len = total_len;
  hdr.seq = seq;
  return hdr;
}

inline uint8_t pattern(uint64_t seq, uint64_t i) {
  return static_cast<uint8_t>(i * 131 + seq * 7 + 1);
}

// A message of total bytes (header + patterned body) in one buffer.
inline std::vector<uint8_t> make_message(uint64_t total, uint64_t seq) {
  std::vector<uint8_t> m(total);
  ava_msg_hdr hdr = make_hdr(total, seq);
  std::memcpy(m.data(), &hdr, kHdr);
  for (uint64_t i = kHdr; i < total; ++i)
    m[i] = pattern(seq, i - kHdr);
  return m;
}

inline ava::Status send_message(ava::Channel &ch, const std::vector<uint8_t> &m) {
  struct iovec iov = {const_cast<uint8_t *>(m.data()), m.size()};
  return ch.send(&iov, 1);
}

// Whether buf holds exactly what make_message(total, seq) made.
inline bool matches(const ava::MsgBuf &buf, uint64_t total, uint64_t seq) {
  if (buf.size() != total || buf.header()->total_len != total || buf.header()->seq != seq)
    return false;
  const uint8_t *body = buf.data() + kHdr;
  for (uint64_t i = 0; i < total - kHdr; ++i)
    if (body[i] != pattern(seq, i))
      return false;
  return true;
}

inline ava::Address shm_address(const std::string &path) {
  ava::Address addr;
  addr.kind = ava::ChannelKind::Shm;
  addr.path = path;
  return addr;
}

inline ava::ShmOptions small_options(uint64_t ring_bytes = 4096, uint64_t heap_bytes = 4096,
                                     uint64_t spin_ns = ava::default_shm_spin_ns()) {
  ava::ShmOptions options;
  options.ring_bytes = ring_bytes;
  options.heap_bytes = heap_bytes;
  options.spin_ns = spin_ns;
  return options;
}

// Spin budgets worth covering whatever the default on this machine: none
// (straight to the futex), a short one, and the default of larger machines.
constexpr uint64_t kSpinBudgets[] = {0, 1000, 20000};

// A listening worker side and a connected guest/worker channel pair.
struct Pair {
  TempDir dir;
  std::unique_ptr<ava::Listener> listener;
  std::unique_ptr<ava::Channel> guest;
  std::unique_ptr<ava::Channel> worker;

  explicit Pair(const ava::ShmOptions &options = small_options()) {
    ava::Status st = ava::listen_shm(shm_address(dir.path + "/w.sock"), options, &listener);
    cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
    ava::Status accepted;
    std::thread acceptor([&] { accepted = listener->accept(&worker, kWaitMs); });
    st = ava::connect_shm(listener->address(), kWaitMs, options, &guest);
    acceptor.join();
    cr_assert_eq(st.code, AVA_OK, "connect: %s", st.message.c_str());
    cr_assert_eq(accepted.code, AVA_OK, "accept: %s", accepted.message.c_str());
  }
  ~Pair() {
    guest.reset();
    worker.reset();
    listener.reset();
  }
  Pair(const Pair &) = delete;
  Pair &operator=(const Pair &) = delete;
};

inline ava::detail::ShmChannel &as_shm(ava::Channel &ch) {
  auto *shm = dynamic_cast<ava::detail::ShmChannel *>(&ch);
  cr_assert_not_null(shm, "not a shm channel: %s", ch.describe().c_str());
  return *shm;
}

inline ava_region_hdr *region(ava::Channel &ch) {
  return reinterpret_cast<ava_region_hdr *>(as_shm(ch).region_base());
}

inline uint32_t region_state(ava::Channel &ch) {
  return __atomic_load_n(&region(ch)->state, __ATOMIC_ACQUIRE);
}

// One side's receiving ring as the peer sees it (guest: reply, worker: command).
struct RawRing {
  ava_ring_ctl *ctl;
  uint8_t *data;
  uint64_t size;

  void write_record(uint64_t at, uint32_t kind, uint32_t length, const void *bytes = nullptr) {
    ava_ring_rec rec{length, kind};
    std::memcpy(data + (at & (size - 1)), &rec, sizeof rec);
    if (bytes != nullptr)
      std::memcpy(data + (at & (size - 1)) + sizeof rec, bytes, length);
  }
  void set_head(uint64_t head) { __atomic_store_n(&ctl->head, head, __ATOMIC_RELEASE); }
  void set_tail(uint64_t tail) { __atomic_store_n(&ctl->tail, tail, __ATOMIC_RELEASE); }
  uint64_t head() const { return __atomic_load_n(&ctl->head, __ATOMIC_ACQUIRE); }
  uint64_t tail() const { return __atomic_load_n(&ctl->tail, __ATOMIC_ACQUIRE); }
};

// The ring that `receiver` reads (written by its peer).
inline RawRing inbound_ring(ava::Channel &receiver, bool receiver_is_guest) {
  ava::detail::ShmChannel &shm = as_shm(receiver);
  ava_region_hdr *hdr = region(receiver);
  const ava::detail::RegionLayout &l = shm.layout();
  if (receiver_is_guest)
    return {&hdr->reply, shm.region_base() + l.reply_off, l.reply_size};
  return {&hdr->cmd, shm.region_base() + l.cmd_off, l.cmd_size};
}

} // namespace shm_test
