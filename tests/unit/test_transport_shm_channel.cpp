// SPDX-License-Identifier: MIT
// The shm channel between honest peers: round trips from 64 B to 256 MiB
// (MSG and MSG_PART records), ring wrap-around, when the reader gives space
// back, batched sends, shutdown, timeouts, peer death, concurrent use, the
// heap and the hand-over itself.
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>

#include "test_transport_shm_support.hpp"

using ava::Channel;
using ava::MsgBuf;
using ava::Status;
using namespace shm_test;

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

struct RoundTrip {
  uint64_t ring_bytes;
  uint64_t total;
  bool from_guest;
};

const RoundTrip kRoundTrips[] = {
    {4096, 64, true},
    {4096, 65, false},
    {4096, 2040, true},    // the largest MSG record of a 4 KiB ring
    {4096, 2041, true},    // the smallest split one
    {4096, 100000, false}, // many pieces through a small ring
    {64 * kMiB, 64, true}, // the default sizes from here on
    {64 * kMiB, 4096, false},
    {64 * kMiB, kMiB, true},
    {64 * kMiB, 32 * kMiB - 8, true}, // the largest MSG record
    {64 * kMiB, 32 * kMiB - 7, false},
    {64 * kMiB, 256 * kMiB, true},
    {64 * kMiB, 256 * kMiB + 13, false},
};

// Sends from one thread and receives on another, as a real peer would.
void round_trip(const RoundTrip &c) {
  Pair pair(small_options(c.ring_bytes, 4096));
  Channel &from = c.from_guest ? *pair.guest : *pair.worker;
  Channel &to = c.from_guest ? *pair.worker : *pair.guest;
  const std::vector<uint8_t> message = make_message(c.total, 7);
  Status sent;
  std::thread sender([&] { sent = send_message(from, message); });
  MsgBuf buf;
  Status st = to.recv(buf, kWaitMs);
  sender.join();
  cr_assert_eq(sent.code, AVA_OK, "%lu bytes: send: %s", (unsigned long)c.total,
               sent.message.c_str());
  cr_assert_eq(st.code, AVA_OK, "%lu bytes: recv: %s", (unsigned long)c.total, st.message.c_str());
  cr_assert(matches(buf, c.total, 7), "%lu bytes: contents differ", (unsigned long)c.total);
  // And once more the other way, so both rings carry it.
  std::thread back([&] { sent = send_message(to, message); });
  st = from.recv(buf, kWaitMs);
  back.join();
  cr_assert_eq(st.code, AVA_OK, "%lu bytes back: %s", (unsigned long)c.total, st.message.c_str());
  cr_assert(matches(buf, c.total, 7), "%lu bytes back: contents differ", (unsigned long)c.total);
}

} // namespace

Test(shm_channel, round_trips, .timeout = 300) {
  for (const RoundTrip &c : kRoundTrips)
    round_trip(c);
}

namespace {

void many_messages(uint64_t spin_ns) {
  Pair pair(small_options(4096, 4096, spin_ns));
  constexpr uint64_t kCount = 10000;
  std::atomic<bool> failed{false};
  std::thread sender([&] {
    for (uint64_t i = 0; i < kCount && !failed; ++i) {
      // Odd sizes move the records across every offset, with PADs and pieces.
      const uint64_t total = kHdr + (i * 37) % 3000;
      if (!send_message(*pair.guest, make_message(total, i)).is_ok())
        failed = true;
    }
  });
  MsgBuf buf;
  for (uint64_t i = 0; i < kCount; ++i) {
    Status st = pair.worker->recv(buf, kWaitMs);
    if (!st.is_ok()) {
      failed = true;
      sender.join();
      cr_assert_fail("message %lu: %s", (unsigned long)i, st.message.c_str());
    }
    if (!matches(buf, kHdr + (i * 37) % 3000, i)) {
      failed = true;
      sender.join();
      cr_assert_fail("message %lu: contents differ", (unsigned long)i);
    }
  }
  sender.join();
  cr_expect(!failed);
}

} // namespace

Test(shm_channel, many_messages_wrap_the_ring) {
  for (uint64_t spin : kSpinBudgets)
    many_messages(spin);
}

// The reader gives space back (tail, and a wake-up for a writer waiting for
// room) once per backlog, or per 1/8 of the ring (at most 64 KiB), not per
// message: each store to tail lands on the line the writer reads after every
// message. Reading a backlog never leaves the writer short for good: the
// last record of it publishes everything.
Test(shm_channel, the_reader_gives_space_back_once_per_backlog) {
  constexpr uint64_t kRingBytes = 64 * 1024;            // gives back every 8 KiB
  constexpr uint64_t kCount = 150;                      // 150 * 72 = 10800 bytes
  constexpr uint64_t kSpan = kHdr + 8;                  // a 64-byte message's record
  constexpr uint64_t kFirstGiveBack = 8192 / kSpan + 1; // the record that passes 8 KiB
  Pair pair(small_options(kRingBytes));
  for (uint64_t i = 0; i < kCount; ++i)
    cr_assert_eq(send_message(*pair.guest, make_message(kHdr, i)).code, AVA_OK);
  RawRing ring = inbound_ring(*pair.worker, false);
  cr_assert_eq(ring.head(), kCount * kSpan);
  MsgBuf buf;
  for (uint64_t i = 1; i <= kCount; ++i) {
    Status st = pair.worker->recv(buf, kWaitMs);
    cr_assert_eq(st.code, AVA_OK, "message %lu: %s", (unsigned long)i, st.message.c_str());
    cr_assert(matches(buf, kHdr, i - 1), "message %lu: contents differ", (unsigned long)i);
    const uint64_t expected = i == kCount           ? kCount * kSpan
                              : i >= kFirstGiveBack ? kFirstGiveBack * kSpan
                                                    : 0;
    cr_assert_eq(ring.tail(), expected, "after message %lu: tail %lu, expected %lu",
                 (unsigned long)i, (unsigned long)ring.tail(), (unsigned long)expected);
  }
}

Test(shm_channel, batched_send_delivers_each_message) {
  Pair pair(small_options(8192));
  // Sizes include one that needs MSG_PART records (above 4096 - 8).
  const uint64_t sizes[] = {64, 100, 5000, 64, 4088, 300};
  std::vector<std::vector<uint8_t>> messages;
  for (uint64_t i = 0; i < std::size(sizes); ++i)
    messages.push_back(make_message(sizes[i], i));
  // Cut the batch at odd places, headers included, so entries straddle messages.
  std::vector<uint8_t> flat;
  for (const auto &m : messages)
    flat.insert(flat.end(), m.begin(), m.end());
  std::vector<struct iovec> iov;
  for (size_t at = 0; at < flat.size();) {
    const size_t len = std::min<size_t>(flat.size() - at, 37 + at % 101);
    iov.push_back({flat.data() + at, len});
    at += len;
  }
  Status sent;
  std::thread sender([&] { sent = pair.guest->send(iov.data(), static_cast<int>(iov.size())); });
  MsgBuf buf;
  for (uint64_t i = 0; i < std::size(sizes); ++i) {
    Status st = pair.worker->recv(buf, kWaitMs);
    cr_assert_eq(st.code, AVA_OK, "message %lu: %s", (unsigned long)i, st.message.c_str());
    cr_assert(matches(buf, sizes[i], i), "message %lu differs", (unsigned long)i);
  }
  sender.join();
  cr_assert_eq(sent.code, AVA_OK, "%s", sent.message.c_str());
  Status st = pair.worker->recv(buf, 0);
  cr_expect_eq(st.code, AVA_E_TIMEOUT, "nothing more: %s", st.message.c_str());
}

Test(shm_channel, bad_batch_sends_nothing) {
  Pair pair;
  std::vector<uint8_t> good = make_message(128, 1);
  std::vector<uint8_t> bad = make_message(128, 2);
  bad[0] ^= 0xff; // magic
  struct iovec iov[2] = {{good.data(), good.size()}, {bad.data(), bad.size()}};
  Status st = pair.guest->send(iov, 2);
  cr_expect_eq(st.code, AVA_E_PROTO, "%s", st.message.c_str());
  // A list that ends inside a message.
  iov[1] = {good.data(), 100};
  st = pair.guest->send(iov, 2);
  cr_expect_eq(st.code, AVA_E_PROTO, "%s", st.message.c_str());
  MsgBuf buf;
  st = pair.worker->recv(buf, 0);
  cr_expect_eq(st.code, AVA_E_TIMEOUT, "the good message must not go alone: %s",
               st.message.c_str());
  // The channel is still fine.
  cr_assert_eq(send_message(*pair.guest, good).code, AVA_OK);
  cr_assert_eq(pair.worker->recv(buf, kWaitMs).code, AVA_OK);
  cr_expect(matches(buf, 128, 1));
}

Test(shm_channel, timeouts) {
  Pair pair;
  MsgBuf buf;
  for (int ms : {0, 1, 30}) {
    Status st = pair.guest->recv(buf, ms);
    cr_expect_eq(st.code, AVA_E_TIMEOUT, "%d ms: %s", ms, st.message.c_str());
    cr_expect(st.message.find("shm:") != std::string::npos, "names the channel: %s",
              st.message.c_str());
  }
  // A timeout consumes nothing and breaks nothing.
  cr_assert_eq(send_message(*pair.worker, make_message(80, 3)).code, AVA_OK);
  cr_assert_eq(pair.guest->recv(buf, kWaitMs).code, AVA_OK);
  cr_expect(matches(buf, 80, 3));
}

Test(shm_channel, shutdown_wakes_recv_and_send) {
  Pair pair(small_options(4096));
  Status recv_st;
  std::thread receiver([&] {
    MsgBuf buf;
    recv_st = pair.guest->recv(buf, -1);
  });
  // Fill the command ring so that a send has to wait for space nobody makes.
  Status send_st;
  std::thread sender([&] {
    const std::vector<uint8_t> m = make_message(2000, 1);
    for (int i = 0; i < 100 && (send_st = send_message(*pair.guest, m)).is_ok(); ++i) {
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  pair.guest->shutdown();
  receiver.join();
  sender.join();
  cr_expect_eq(recv_st.code, AVA_E_CLOSED, "%s", recv_st.message.c_str());
  cr_expect_eq(send_st.code, AVA_E_CLOSED, "%s", send_st.message.c_str());
  MsgBuf buf;
  cr_expect_eq(pair.guest->recv(buf, 0).code, AVA_E_CLOSED);
  // The worker sees an orderly close once it has drained what was sent.
  Status st;
  int drained = 0;
  while ((st = pair.worker->recv(buf, kWaitMs)).is_ok() && drained < 1000)
    ++drained;
  cr_expect_eq(st.code, AVA_E_CLOSED, "%s", st.message.c_str());
  cr_expect_gt(drained, 0);
  cr_expect(region_state(*pair.worker) & AVA_REGION_CLOSED);
  cr_expect_eq(send_message(*pair.worker, make_message(64, 1)).code, AVA_E_CLOSED);
}

Test(shm_channel, messages_sent_before_close_are_delivered) {
  Pair pair;
  for (uint64_t i = 0; i < 5; ++i)
    cr_assert_eq(send_message(*pair.worker, make_message(100 + i, i)).code, AVA_OK);
  pair.worker.reset();
  MsgBuf buf;
  for (uint64_t i = 0; i < 5; ++i) {
    Status st = pair.guest->recv(buf, kWaitMs);
    cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
    cr_expect(matches(buf, 100 + i, i));
  }
  Status st = pair.guest->recv(buf, kWaitMs);
  cr_expect_eq(st.code, AVA_E_CLOSED, "%s", st.message.c_str());
}

namespace {

// Waits for a child and says whether it exited with status 0.
bool child_ok(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

} // namespace

Test(shm_channel, guest_death_closes_the_worker_side) {
  TempDir dir;
  std::unique_ptr<ava::Listener> listener;
  cr_assert_eq(ava::listen_shm(shm_address(dir.path + "/w.sock"), small_options(), &listener).code,
               AVA_OK);
  const pid_t child = ::fork();
  cr_assert(child >= 0);
  if (child == 0) {
    std::unique_ptr<Channel> guest;
    Status st = ava::connect_shm(listener->address(), kWaitMs, small_options(), &guest);
    if (st.is_ok())
      st = send_message(*guest, make_message(64, 1));
    // Dies without any orderly close.
    ::_exit(st.is_ok() ? 0 : 1);
  }
  std::unique_ptr<Channel> worker;
  Status st = listener->accept(&worker, kWaitMs);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_assert(child_ok(child));
  MsgBuf buf;
  st = worker->recv(buf, kWaitMs);
  cr_expect_eq(st.code, AVA_OK, "the last message still arrives: %s", st.message.c_str());
  const auto start = std::chrono::steady_clock::now();
  st = worker->recv(buf, kWaitMs);
  cr_expect_eq(st.code, AVA_E_CLOSED, "%s", st.message.c_str());
  cr_expect(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(kWaitMs));
  cr_expect_eq(send_message(*worker, make_message(64, 1)).code, AVA_E_CLOSED);
}

Test(shm_channel, worker_death_closes_the_guest_side) {
  TempDir dir;
  std::unique_ptr<ava::Listener> listener;
  cr_assert_eq(ava::listen_shm(shm_address(dir.path + "/w.sock"), small_options(), &listener).code,
               AVA_OK);
  const ava::Address address = listener->address();
  const pid_t child = ::fork();
  cr_assert(child >= 0);
  if (child == 0) {
    std::unique_ptr<Channel> worker;
    Status st = listener->accept(&worker, kWaitMs);
    ::_exit(st.is_ok() ? 0 : 1);
  }
  // The child accepts; this process keeps its copy of the listener only so
  // that the socket file stays.
  std::unique_ptr<Channel> guest;
  Status st = ava::connect_shm(address, kWaitMs, small_options(), &guest);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_assert(child_ok(child));
  MsgBuf buf;
  st = guest->recv(buf, kWaitMs);
  cr_expect_eq(st.code, AVA_E_CLOSED, "%s", st.message.c_str());
  // A send that needs the dead peer to make room fails too instead of hanging.
  st = send_message(*guest, make_message(100000, 1));
  cr_expect_eq(st.code, AVA_E_CLOSED, "%s", st.message.c_str());
}

namespace {

void concurrent_both_ways(uint64_t spin_ns) {
  Pair pair(small_options(16384, 4096, spin_ns));
  constexpr uint64_t kCount = 3000;
  std::atomic<int> failures{0};
  auto sender = [&](Channel &ch, uint64_t base) {
    for (uint64_t i = 0; i < kCount; ++i)
      if (!send_message(ch, make_message(kHdr + (i * 13) % 9000, base + i)).is_ok()) {
        ++failures;
        return;
      }
  };
  auto receiver = [&](Channel &ch, uint64_t base) {
    MsgBuf buf;
    for (uint64_t i = 0; i < kCount; ++i)
      if (!ch.recv(buf, kWaitMs).is_ok() || !matches(buf, kHdr + (i * 13) % 9000, base + i)) {
        ++failures;
        return;
      }
  };
  std::thread threads[] = {std::thread(sender, std::ref(*pair.guest), 0),
                           std::thread(receiver, std::ref(*pair.worker), 0),
                           std::thread(sender, std::ref(*pair.worker), 1000000),
                           std::thread(receiver, std::ref(*pair.guest), 1000000)};
  for (std::thread &t : threads)
    t.join();
  cr_expect_eq(failures.load(), 0);
}

} // namespace

Test(shm_channel, concurrent_send_and_recv_both_ways) {
  for (uint64_t spin : kSpinBudgets)
    concurrent_both_ways(spin);
}

Test(shm_channel, heap_is_shared) {
  Pair pair(small_options(4096, 1 << 20));
  const Channel::Heap g = pair.guest->heap();
  const Channel::Heap w = pair.worker->heap();
  cr_assert_not_null(g.base);
  cr_assert_not_null(w.base);
  cr_assert_eq(g.size, uint64_t{1} << 20);
  cr_assert_eq(w.size, g.size);
  for (uint64_t i = 0; i < g.size; i += 4096)
    g.base[i] = static_cast<uint8_t>(i >> 12);
  for (uint64_t i = 0; i < w.size; i += 4096)
    cr_assert_eq(w.base[i], static_cast<uint8_t>(i >> 12));
  Pair no_heap(small_options(4096, 0));
  cr_expect_null(no_heap.guest->heap().base);
  cr_expect_null(no_heap.worker->heap().base);
}

Test(shm_channel, hand_over_state) {
  Pair pair;
  ava_region_hdr *hdr = region(*pair.guest);
  cr_expect_eq(region_state(*pair.guest), AVA_REGION_READY | AVA_REGION_ATTACHED);
  cr_expect_eq(hdr->worker_pid, static_cast<uint64_t>(::getpid()));
  cr_expect_eq(hdr->guest_pid, static_cast<uint64_t>(::getpid()));
  cr_expect_eq(hdr->features, AVA_REGION_F_FUTEX);
  for (Channel *ch : {pair.guest.get(), pair.worker.get()}) {
    const std::string d = ch->describe();
    cr_expect(d.find("shm:" + pair.dir.path + "/w.sock") == 0 &&
                  d.find("peer pid") != std::string::npos,
              "%s", d.c_str());
  }
  cr_expect_eq(pair.listener->address().to_string(), "shm:" + pair.dir.path + "/w.sock");
}

Test(shm_channel, abstract_socket_and_cleanup) {
  const std::string name = "@ava-test-shm-" + std::to_string(::getpid());
  std::unique_ptr<ava::Listener> listener;
  cr_assert_eq(ava::listen_shm(shm_address(name), small_options(), &listener).code, AVA_OK);
  std::unique_ptr<Channel> guest;
  std::unique_ptr<Channel> worker;
  std::thread acceptor([&] { listener->accept(&worker, kWaitMs); });
  Status st = ava::connect_shm(shm_address(name), kWaitMs, small_options(), &guest);
  acceptor.join();
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_assert_not_null(worker.get());

  TempDir dir;
  const std::string path = dir.path + "/w.sock";
  listener.reset();
  cr_assert_eq(ava::listen_shm(shm_address(path), small_options(), &listener).code, AVA_OK);
  cr_expect_eq(::access(path.c_str(), F_OK), 0);
  listener.reset();
  cr_expect_neq(::access(path.c_str(), F_OK), 0, "the listener removes its socket file");
}

Test(shm_channel, wrong_kind_of_worker_is_named) {
  TempDir dir;
  ava::Address unix_addr;
  unix_addr.path = dir.path + "/u.sock";
  std::unique_ptr<ava::Listener> unix_listener;
  cr_assert_eq(ava::listen_channel(unix_addr, &unix_listener).code, AVA_OK);
  std::unique_ptr<Channel> guest;
  Status st = ava::connect_shm(shm_address(unix_addr.path), 1000, small_options(), &guest);
  cr_expect_eq(st.code, AVA_E_PROTO, "%s", st.message.c_str());
  cr_expect(st.message.find("not a shm worker") != std::string::npos, "%s", st.message.c_str());
  // A shm worker cannot be stolen by a unix listener either, nor the reverse.
  std::unique_ptr<ava::Listener> shm_listener;
  st = ava::listen_shm(shm_address(unix_addr.path), small_options(), &shm_listener);
  cr_expect_eq(st.code, AVA_E_STATE, "%s", st.message.c_str());
}

Test(shm_channel, connect_timeout_without_worker) {
  TempDir dir;
  std::unique_ptr<Channel> guest;
  Status st = ava::connect_shm(shm_address(dir.path + "/none.sock"), 50, small_options(), &guest);
  cr_expect_eq(st.code, AVA_E_TIMEOUT, "%s", st.message.c_str());
}

Test(shm_channel, too_big_for_the_receiver) {
  Pair pair;
  pair.worker->set_max_message(1000);
  cr_assert_eq(send_message(*pair.guest, make_message(2000, 1)).code, AVA_OK);
  MsgBuf buf;
  Status st = pair.worker->recv(buf, kWaitMs);
  cr_expect_eq(st.code, AVA_E_TOO_BIG, "%s", st.message.c_str());
  cr_expect_eq(buf.capacity(), 0u, "a rejected header must not allocate");
  // The sender's own limit applies before anything is written.
  pair.guest->set_max_message(100);
  st = send_message(*pair.guest, make_message(200, 1));
  cr_expect(st.code == AVA_E_TOO_BIG || st.code == AVA_E_CLOSED, "%s", st.message.c_str());
}

Test(shm_channel, options_from_environment) {
  const uint64_t kDefaultSpin = ava::default_shm_spin_ns();
  cr_expect(kDefaultSpin == 0 || kDefaultSpin == 20000);
  cr_expect_eq(ava::ShmOptions{}.spin_ns, kDefaultSpin);
  struct Case {
    const char *ring;
    const char *heap;
    const char *spin;
    int code;
    uint64_t ring_bytes;
    uint64_t heap_bytes;
    uint64_t spin_ns;
  };
  const Case cases[] = {
      {nullptr, nullptr, nullptr, AVA_OK, 2 * kMiB, 1024 * kMiB, kDefaultSpin},
      {"1", "0", "0", AVA_OK, kMiB, 0, 0},
      {"", "", "", AVA_OK, 2 * kMiB, 1024 * kMiB, kDefaultSpin},
      {"1024", "4096", "1000000", AVA_OK, 1024 * kMiB, 4096 * kMiB, 1000000},
      {"3", nullptr, nullptr, AVA_E_PROTO, 0, 0, 0},
      {"2048", nullptr, nullptr, AVA_E_PROTO, 0, 0, 0},
      {"0", nullptr, nullptr, AVA_E_PROTO, 0, 0, 0},
      {"x", nullptr, nullptr, AVA_E_PROTO, 0, 0, 0},
      {nullptr, "-1", nullptr, AVA_E_PROTO, 0, 0, 0},
      {nullptr, nullptr, "2000000000", AVA_E_PROTO, 0, 0, 0},
  };
  for (const Case &c : cases) {
    auto set = [](const char *name, const char *value) {
      if (value == nullptr)
        ::unsetenv(name);
      else
        ::setenv(name, value, 1);
    };
    set("AVA_SHM_RING_MB", c.ring);
    set("AVA_SHM_HEAP_MB", c.heap);
    set("AVA_SHM_SPIN_NS", c.spin);
    ava::ShmOptions options;
    Status st = ava::shm_options_from_env(&options);
    cr_expect_eq(st.code, c.code, "%s/%s/%s: %s", c.ring ? c.ring : "-", c.heap ? c.heap : "-",
                 c.spin ? c.spin : "-", st.message.c_str());
    if (c.code != AVA_OK) {
      cr_expect(st.message.find("AVA_SHM_") != std::string::npos, "%s", st.message.c_str());
      continue;
    }
    cr_expect_eq(options.ring_bytes, c.ring_bytes);
    cr_expect_eq(options.heap_bytes, c.heap_bytes);
    cr_expect_eq(options.spin_ns, c.spin_ns);
  }
}

// How many of the pages in [off, off + len) of a region are in memory.
static uint64_t resident_pages(const ava::detail::ShmChannel &ch, uint64_t off, uint64_t len) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((len + page - 1) / page);
  cr_assert_eq(::mincore(ch.region_base() + off, len, vec.data()), 0, "mincore: %s",
               std::strerror(errno));
  uint64_t n = 0;
  for (unsigned char v : vec)
    n += v & 1;
  return n;
}

// Both rings are faulted in when the channel is set up, so neither side takes
// a page fault per page on its first lap; the heap stays untouched.
Test(shm_channel, rings_are_populated_at_connect) {
#ifndef MADV_POPULATE_WRITE
  cr_skip_test("this libc has no MADV_POPULATE_WRITE");
#endif
  Pair pair(small_options(kMiB, kMiB));
  const auto &worker = as_shm(*pair.worker);
  const auto &l = worker.layout();
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  cr_expect_eq(resident_pages(worker, l.cmd_off, l.cmd_size), l.cmd_size / page);
  cr_expect_eq(resident_pages(worker, l.reply_off, l.reply_size), l.reply_size / page);
  cr_expect_eq(resident_pages(worker, l.heap_off, l.heap_size), 0u);
}

Test(shm_channel, connect_channel_uses_the_environment) {
  ::setenv("AVA_SHM_RING_MB", "1", 1);
  ::setenv("AVA_SHM_HEAP_MB", "2", 1);
  TempDir dir;
  std::unique_ptr<ava::Listener> listener;
  Status st = ava::listen_channel(shm_address(dir.path + "/w.sock"), &listener);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  std::unique_ptr<Channel> guest;
  std::unique_ptr<Channel> worker;
  std::thread acceptor([&] { listener->accept(&worker, kWaitMs); });
  st = ava::connect_channel(listener->address(), kWaitMs, &guest);
  acceptor.join();
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_assert_not_null(worker.get());
  cr_expect_eq(as_shm(*guest).layout().cmd_size, kMiB);
  cr_expect_eq(as_shm(*worker).layout().heap_size, 2 * kMiB);
  ::setenv("AVA_SHM_RING_MB", "5", 1);
  std::unique_ptr<Channel> other;
  st = ava::connect_channel(listener->address(), kWaitMs, &other);
  cr_expect_eq(st.code, AVA_E_PROTO, "%s", st.message.c_str());
}

Test(shm_channel, address_forms) {
  struct Case {
    const char *text;
    ava::ChannelKind default_kind;
    int code;
    ava::ChannelKind kind;
    const char *path;
  };
  const Case cases[] = {
      {"shm:/tmp/w.sock", ava::ChannelKind::Tcp, AVA_OK, ava::ChannelKind::Shm, "/tmp/w.sock"},
      {"shm:@ava-w", ava::ChannelKind::Unix, AVA_OK, ava::ChannelKind::Shm, "@ava-w"},
      {"shm:w.sock", ava::ChannelKind::Unix, AVA_OK, ava::ChannelKind::Shm, "w.sock"},
      {"/tmp/w.sock", ava::ChannelKind::Shm, AVA_OK, ava::ChannelKind::Shm, "/tmp/w.sock"},
      {"w.sock", ava::ChannelKind::Shm, AVA_OK, ava::ChannelKind::Shm, "w.sock"},
      {"/tmp/w.sock", ava::ChannelKind::Unix, AVA_OK, ava::ChannelKind::Unix, "/tmp/w.sock"},
      {"shm:", ava::ChannelKind::Unix, AVA_E_PROTO, ava::ChannelKind::Shm, ""},
      {"shm:@", ava::ChannelKind::Unix, AVA_E_PROTO, ava::ChannelKind::Shm, ""},
  };
  for (const Case &c : cases) {
    ava::Address addr;
    Status st = ava::parse_address(c.text, c.default_kind, &addr);
    cr_expect_eq(st.code, c.code, "'%s': %s", c.text, st.message.c_str());
    if (c.code != AVA_OK || !st.is_ok())
      continue;
    cr_expect(addr.kind == c.kind, "'%s': kind", c.text);
    cr_expect_eq(addr.path, std::string(c.path), "'%s'", c.text);
    ava::Address again;
    cr_expect_eq(ava::parse_address(addr.to_string(), ava::ChannelKind::Tcp, &again).code, AVA_OK);
    cr_expect(again.kind == addr.kind && again.path == addr.path, "'%s' -> '%s' round trip", c.text,
              addr.to_string().c_str());
  }
  ava::ChannelKind kind = ava::ChannelKind::Unix;
  cr_expect_eq(ava::parse_channel_kind("shm", &kind).code, AVA_OK);
  cr_expect(kind == ava::ChannelKind::Shm);
  cr_expect_eq(shm_address("/x").to_string(), std::string("shm:/x"));
}
