// SPDX-License-Identifier: MIT
// The shm channel against a lying peer: the test writes into the shared
// region "as the other side" (ring indices, records, pieces, the header at
// hand-over, the hello itself). The victim must answer AVA_E_PROTO (or
// AVA_E_TOO_BIG / AVA_E_TIMEOUT where that is the rule), mark the region
// broken so that both sides fail from then on, and never crash or hang;
// a healthy channel in the same process keeps working.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <functional>

#include "test_transport_shm_support.hpp"
#include "transport/shm_bootstrap.hpp"

using ava::Channel;
using ava::MsgBuf;
using ava::Status;
using namespace shm_test;

namespace {

constexpr uint64_t kRing = 4096;

// A message's bytes as they would sit in a record.
std::vector<uint8_t> message_bytes(uint64_t length, uint64_t total_len) {
  std::vector<uint8_t> m = make_message(std::max<uint64_t>(length, kHdr), 1);
  m.resize(length);
  if (length >= kHdr) {
    ava_msg_hdr hdr = make_hdr(total_len, 1);
    std::memcpy(m.data(), &hdr, kHdr);
  }
  return m;
}

struct Env {
  Channel &victim;
  Channel &peer;
  RawRing ring; // the ring the victim reads
};

// Writes a record at the head and publishes it; returns the new head.
uint64_t put(RawRing &ring, uint64_t head, uint32_t kind, const std::vector<uint8_t> &bytes) {
  ring.write_record(head, kind, static_cast<uint32_t>(bytes.size()), bytes.data());
  head += sizeof(ava_ring_rec) + AVA_REC_ALIGN(bytes.size());
  ring.set_head(head);
  return head;
}

struct DataCase {
  const char *name;
  std::function<void(Env &)> corrupt;
  int expected;
  const char *says;
  uint64_t max_message = 3500; // of the victim
};

const DataCase kDataCases[] = {
    {"head beyond tail + size", [](Env &e) { e.ring.set_head(kRing + 8); }, AVA_E_PROTO,
     "more than the ring size"},
    {"head not a multiple of 8",
     [](Env &e) {
       put(e.ring, 0, AVA_REC_MSG, message_bytes(64, 64));
       e.ring.set_head(36);
     },
     AVA_E_PROTO, "multiple of 8"},
    {"head goes backwards",
     [](Env &e) {
       cr_assert_eq(send_message(e.peer, make_message(64, 1)).code, AVA_OK);
       cr_assert_eq(send_message(e.peer, make_message(64, 2)).code, AVA_OK);
       // Both read: records below a head already seen are read without
       // looking at head again, so the next look is at the next recv.
       MsgBuf buf;
       cr_assert_eq(e.victim.recv(buf, kWaitMs).code, AVA_OK);
       cr_assert_eq(e.victim.recv(buf, kWaitMs).code, AVA_OK);
       e.ring.set_head(80);
     },
     AVA_E_PROTO, "backwards"},
    {"record longer than what is published",
     [](Env &e) {
       e.ring.write_record(0, AVA_REC_MSG, 200);
       e.ring.set_head(72);
     },
     AVA_E_PROTO, "does not fit"},
    {"record larger than half the ring",
     [](Env &e) { put(e.ring, 0, AVA_REC_MSG, message_bytes(3000, 3000)); }, AVA_E_PROTO,
     "per record"},
    {"record runs past the end of the ring",
     [](Env &e) {
       // Two honest messages move the tail to 64 bytes before the end.
       MsgBuf buf;
       for (uint64_t i = 0; i < 2; ++i) {
         cr_assert_eq(send_message(e.peer, make_message(2008, i)).code, AVA_OK);
         cr_assert_eq(e.victim.recv(buf, kWaitMs).code, AVA_OK);
       }
       cr_assert_eq(e.ring.tail(), kRing - 64);
       // Only the header: the bytes would land beyond the ring.
       e.ring.write_record(kRing - 64, AVA_REC_MSG, 120);
       e.ring.set_head(kRing - 64 + 128);
     },
     AVA_E_PROTO, "before the end"},
    {"unknown record kind", [](Env &e) { put(e.ring, 0, 9, message_bytes(64, 64)); }, AVA_E_PROTO,
     "unknown kind"},
    {"empty record", [](Env &e) { put(e.ring, 0, AVA_REC_MSG, {}); }, AVA_E_PROTO, "does not fit"},
    {"PAD short of the end", [](Env &e) { put(e.ring, 0, AVA_REC_PAD, std::vector<uint8_t>(8)); },
     AVA_E_PROTO, "PAD record"},
    {"message shorter than its header",
     [](Env &e) { put(e.ring, 0, AVA_REC_MSG, std::vector<uint8_t>(16, 1)); }, AVA_E_PROTO,
     "shorter than its 64-byte header"},
    {"header total_len differs from the record",
     [](Env &e) { put(e.ring, 0, AVA_REC_MSG, message_bytes(128, 256)); }, AVA_E_PROTO,
     "says total_len"},
    {"bad message magic",
     [](Env &e) {
       std::vector<uint8_t> m = message_bytes(128, 128);
       m[0] ^= 0xff;
       put(e.ring, 0, AVA_REC_MSG, m);
     },
     AVA_E_PROTO, "bad magic"},
    {"MSG_END with no MSG_PART",
     [](Env &e) { put(e.ring, 0, AVA_REC_MSG_END, message_bytes(64, 64)); }, AVA_E_PROTO,
     "no MSG_PART"},
    {"MSG_PART without MSG_END: a new MSG follows",
     [](Env &e) {
       uint64_t head = put(e.ring, 0, AVA_REC_MSG_PART, message_bytes(1000, 3000));
       put(e.ring, head, AVA_REC_MSG, message_bytes(64, 64));
     },
     AVA_E_PROTO, "between the pieces"},
    {"oversize MSG_PART sequence",
     [](Env &e) {
       uint64_t head = put(e.ring, 0, AVA_REC_MSG_PART, message_bytes(1000, 1500));
       put(e.ring, head, AVA_REC_MSG_END, std::vector<uint8_t>(1000, 2));
     },
     AVA_E_PROTO, "overruns"},
    {"last piece not marked MSG_END",
     [](Env &e) {
       uint64_t head = put(e.ring, 0, AVA_REC_MSG_PART, message_bytes(1000, 2000));
       put(e.ring, head, AVA_REC_MSG_PART, std::vector<uint8_t>(1000, 2));
     },
     AVA_E_PROTO, "not MSG_END"},
    {"MSG_END before the message is whole",
     [](Env &e) {
       uint64_t head = put(e.ring, 0, AVA_REC_MSG_PART, message_bytes(1000, 3000));
       put(e.ring, head, AVA_REC_MSG_END, std::vector<uint8_t>(1000, 2));
     },
     AVA_E_PROTO, "before the message is whole"},
    {"first MSG_PART holds the whole message",
     [](Env &e) { put(e.ring, 0, AVA_REC_MSG_PART, message_bytes(1000, 1000)); }, AVA_E_PROTO,
     "first MSG_PART"},
    {"MSG_PART sequence above max_message",
     [](Env &e) { put(e.ring, 0, AVA_REC_MSG_PART, message_bytes(1000, 1u << 30)); }, AVA_E_TOO_BIG,
     "exceeds the limit"},
    {"message above max_message",
     [](Env &e) { put(e.ring, 0, AVA_REC_MSG, message_bytes(2000, 2000)); }, AVA_E_TOO_BIG,
     "exceeds the limit", 1500},
    {"MSG_PART without MSG_END, then silence",
     [](Env &e) { put(e.ring, 0, AVA_REC_MSG_PART, message_bytes(1000, 3000)); }, AVA_E_TIMEOUT,
     "stalled mid-message"},
};

// Both sides fail from now on; neither hangs.
void expect_dead(Channel &ch, const char *name, const char *side) {
  MsgBuf buf;
  Status st = ch.recv(buf, 1000);
  cr_expect_eq(st.code, AVA_E_CLOSED, "%s: %s recv afterwards: %d %s", name, side, st.code,
               st.message.c_str());
  st = send_message(ch, make_message(64, 9));
  cr_expect_eq(st.code, AVA_E_CLOSED, "%s: %s send afterwards: %d %s", name, side, st.code,
               st.message.c_str());
}

void expect_healthy(Pair &healthy, const char *name) {
  MsgBuf buf;
  cr_assert_eq(send_message(*healthy.guest, make_message(300, 5)).code, AVA_OK, "%s", name);
  cr_assert_eq(healthy.worker->recv(buf, kWaitMs).code, AVA_OK, "%s", name);
  cr_assert(matches(buf, 300, 5), "%s: the healthy channel is disturbed", name);
}

void run_data_case(const DataCase &c, bool victim_is_guest, Pair &healthy) {
  Pair pair(small_options(kRing));
  Channel &victim = victim_is_guest ? *pair.guest : *pair.worker;
  Channel &peer = victim_is_guest ? *pair.worker : *pair.guest;
  victim.set_max_message(c.max_message);
  victim.set_stall_timeout_ms(200);
  Env env{victim, peer, inbound_ring(victim, victim_is_guest)};
  c.corrupt(env);
  const char *side = victim_is_guest ? "guest" : "worker";
  MsgBuf buf;
  Status st = victim.recv(buf, kWaitMs);
  cr_expect_eq(st.code, c.expected, "%s (%s victim): code %d, expected %d: %s", c.name, side,
               st.code, c.expected, st.message.c_str());
  cr_expect(st.message.find(c.says) != std::string::npos, "%s (%s victim): '%s' lacks '%s'", c.name,
            side, st.message.c_str(), c.says);
  cr_log_info("%s (%s victim) -> %s", c.name, side, st.message.c_str());
  cr_expect(region_state(victim) & AVA_REGION_BROKEN, "%s: region not marked broken", c.name);
  expect_dead(victim, c.name, "victim");
  expect_dead(peer, c.name, "peer");
  expect_healthy(healthy, c.name);
}

} // namespace

Test(shm_corrupt, inbound_ring_table) {
  Pair healthy;
  for (const DataCase &c : kDataCases)
    for (bool victim_is_guest : {true, false})
      run_data_case(c, victim_is_guest, healthy);
}

namespace {

// The ring the victim writes (and the peer reads).
RawRing outbound_ring(Channel &victim, bool victim_is_guest) {
  return inbound_ring(victim, !victim_is_guest);
}

} // namespace

Test(shm_corrupt, tail_beyond_head) {
  Pair healthy;
  for (bool victim_is_guest : {true, false}) {
    Pair pair(small_options(kRing));
    Channel &victim = victim_is_guest ? *pair.guest : *pair.worker;
    Channel &peer = victim_is_guest ? *pair.worker : *pair.guest;
    RawRing ring = outbound_ring(victim, victim_is_guest);
    ring.set_tail(3 * kRing);
    Status st;
    // The victim reads the tail when it runs out of room it knows of.
    for (int i = 0; i < 3 && (st = send_message(victim, make_message(2000, 1))).is_ok(); ++i) {
    }
    cr_expect_eq(st.code, AVA_E_PROTO, "%s", st.message.c_str());
    cr_expect(st.message.find("impossible") != std::string::npos, "%s", st.message.c_str());
    cr_expect(region_state(victim) & AVA_REGION_BROKEN);
    expect_dead(victim, "tail beyond head", "victim");
    expect_dead(peer, "tail beyond head", "peer");
  }
  expect_healthy(healthy, "tail beyond head");
}

Test(shm_corrupt, tail_goes_backwards) {
  Pair pair(small_options(kRing));
  RawRing ring = outbound_ring(*pair.guest, true);
  MsgBuf buf;
  cr_assert_eq(send_message(*pair.guest, make_message(2000, 1)).code, AVA_OK);
  cr_assert_eq(pair.worker->recv(buf, kWaitMs).code, AVA_OK);
  cr_assert_eq(send_message(*pair.guest, make_message(2000, 2)).code, AVA_OK);
  // This one needs the tail the worker just advanced.
  cr_assert_eq(send_message(*pair.guest, make_message(2000, 3)).code, AVA_OK);
  ring.set_tail(0);
  Status st = send_message(*pair.guest, make_message(2000, 4));
  cr_expect_eq(st.code, AVA_E_PROTO, "%s", st.message.c_str());
  cr_expect(st.message.find("backwards") != std::string::npos, "%s", st.message.c_str());
  cr_expect(region_state(*pair.guest) & AVA_REGION_BROKEN);
}

Test(shm_corrupt, peer_marks_broken_while_we_wait) {
  Pair pair;
  Status st;
  std::thread waiter([&] {
    MsgBuf buf;
    st = pair.guest->recv(buf, -1);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  __atomic_fetch_or(&region(*pair.worker)->state, AVA_REGION_BROKEN, __ATOMIC_SEQ_CST);
  // A peer that flips the bit without waking us is like a silent one: we
  // sleep (no polling) until it wakes us or leaves, as here.
  pair.worker.reset();
  waiter.join();
  cr_expect_eq(st.code, AVA_E_CLOSED, "%s", st.message.c_str());
  cr_expect(st.message.find("broken") != std::string::npos, "%s", st.message.c_str());
}

// ---------------------------------------------------------------- hand-over

namespace {

struct AttachCase {
  const char *name;
  std::function<void(ava_region_hdr *)> edit;
  const char *says;
};

const AttachCase kAttachCases[] = {
    {"wrong magic", [](ava_region_hdr *h) { h->magic ^= 1; }, "magic"},
    {"wrong version", [](ava_region_hdr *h) { h->version = 2; }, "version"},
    {"no futex feature", [](ava_region_hdr *h) { h->features = 0; }, "features"},
    {"unknown feature", [](ava_region_hdr *h) { h->features |= 0x100; }, "features"},
    {"already attached", [](ava_region_hdr *h) { h->state |= AVA_REGION_ATTACHED; }, "state"},
    {"already broken", [](ava_region_hdr *h) { h->state |= AVA_REGION_BROKEN; }, "state"},
    {"not ready", [](ava_region_hdr *h) { h->state = 0; }, "state"},
    {"ring size not a power of two", [](ava_region_hdr *h) { h->cmd_size = 5000; },
     "powers of two"},
    {"ring smaller than a page", [](ava_region_hdr *h) { h->reply_size = 2048; }, "powers of two"},
    {"ring too large", [](ava_region_hdr *h) { h->reply_size = uint64_t{1} << 31; },
     "powers of two"},
    {"ring outside the file", [](ava_region_hdr *h) { h->reply_off = h->total_size; }, "outside"},
    {"heap beyond the end", [](ava_region_hdr *h) { h->heap_size = h->total_size; }, "outside"},
    {"offset that overflows", [](ava_region_hdr *h) { h->heap_off = ~uint64_t{4095}; }, "outside"},
    {"heap size not page-sized", [](ava_region_hdr *h) { h->heap_size = 100; }, "heap size"},
    {"ring inside the header", [](ava_region_hdr *h) { h->cmd_off = 0; }, "after the header"},
    {"unaligned offset", [](ava_region_hdr *h) { h->cmd_off += 64; }, "multiple"},
    {"overlapping rings", [](ava_region_hdr *h) { h->reply_off = h->cmd_off; }, "overlap"},
    {"heap over the reply ring", [](ava_region_hdr *h) { h->heap_off = h->reply_off; }, "overlap"},
    {"total_size differs from the file", [](ava_region_hdr *h) { h->total_size += 4096; },
     "differs"},
    {"reserved bytes set", [](ava_region_hdr *h) { h->reserved[3] = 1; }, "reserved"},
    {"indices not zero", [](ava_region_hdr *h) { h->cmd.head = 8; }, "indices"},
};

// Connects a tampered guest; expects both sides to refuse with `says`.
void expect_refused(const char *name, const ava::detail::ShmGuestTamper &tamper, const char *says) {
  Pair healthy;
  std::unique_ptr<Channel> worker;
  Status accepted;
  std::thread acceptor([&] { accepted = healthy.listener->accept(&worker, kWaitMs); });
  std::unique_ptr<Channel> guest;
  Status st = ava::detail::connect_shm_tampered(healthy.listener->address(), kWaitMs,
                                                small_options(), tamper, &guest);
  acceptor.join();
  cr_expect_eq(st.code, AVA_E_PROTO, "%s: guest: %d %s", name, st.code, st.message.c_str());
  cr_expect(st.message.find("refused") != std::string::npos &&
                st.message.find(says) != std::string::npos,
            "%s: guest message '%s' lacks '%s'", name, st.message.c_str(), says);
  cr_expect_eq(accepted.code, AVA_E_PROTO, "%s: worker: %d %s", name, accepted.code,
               accepted.message.c_str());
  cr_expect(accepted.message.find(says) != std::string::npos, "%s: worker message '%s' lacks '%s'",
            name, accepted.message.c_str(), says);
  cr_expect_null(guest.get());
  cr_expect_null(worker.get());
  cr_log_info("%s -> %s", name, accepted.message.c_str());
  expect_healthy(healthy, name);
}

} // namespace

Test(shm_corrupt, bad_headers_at_hand_over) {
  for (const AttachCase &c : kAttachCases) {
    ava::detail::ShmGuestTamper tamper;
    tamper.edit_header = c.edit;
    expect_refused(c.name, tamper, c.says);
  }
}

Test(shm_corrupt, unsealed_or_foreign_descriptors) {
  const int unsealed = ::memfd_create("ava-test-unsealed", MFD_CLOEXEC);
  cr_assert(unsealed >= 0);
  cr_assert_eq(::ftruncate(unsealed, 16384), 0);
  int pipe_fds[2];
  cr_assert_eq(::pipe2(pipe_fds, O_CLOEXEC), 0);
  struct FdCase {
    const char *name;
    int fd;
    const char *says;
  } cases[] = {{"unsealed memfd", unsealed, "not sealed"},
               {"a pipe", pipe_fds[0], "not a regular file"}};
  for (const FdCase &c : cases) {
    ava::detail::ShmGuestTamper tamper;
    tamper.send_fd = c.fd;
    expect_refused(c.name, tamper, c.says);
  }
  ::close(unsealed);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

namespace {

int raw_connect(const ava::Address &address) {
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  cr_assert(fd >= 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strcpy(sa.sun_path, address.path.c_str());
  cr_assert_eq(::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
  return fd;
}

void send_with_fds(int sock, const void *data, size_t len, const std::vector<int> &fds) {
  iovec iov{const_cast<void *>(data), len};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * std::max<size_t>(fds.size(), 1)));
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  cr_assert_eq(::sendmsg(sock, &msg, MSG_NOSIGNAL), static_cast<ssize_t>(len));
}

} // namespace

Test(shm_corrupt, malformed_hellos) {
  Pair healthy;
  const int memfd = ::memfd_create("ava-test-hello", MFD_CLOEXEC);
  cr_assert(memfd >= 0);
  ava::detail::ShmHello good{ava::detail::kShmHelloMagic, ava::detail::kShmHelloVersion, 16384, 1,
                             0};
  ava::detail::ShmHello bad_magic = good;
  bad_magic.magic ^= 1;
  struct HelloCase {
    const char *name;
    const void *data;
    size_t len;
    std::vector<int> fds;
    const char *says;
  } cases[] = {
      {"short hello", &good, 5, {memfd}, "malformed"},
      {"long hello", "0123456789012345678901234567890123456789", 40, {}, "malformed"},
      {"bad magic", &bad_magic, sizeof bad_magic, {memfd}, "unknown kind"},
      {"no descriptor", &good, sizeof good, {}, "0 descriptors"},
      {"two descriptors", &good, sizeof good, {memfd, memfd}, "2 descriptors"},
  };
  for (const HelloCase &c : cases) {
    const int sock = raw_connect(healthy.listener->address());
    send_with_fds(sock, c.data, c.len, c.fds);
    std::unique_ptr<Channel> worker;
    Status st = healthy.listener->accept(&worker, kWaitMs);
    cr_expect_eq(st.code, AVA_E_PROTO, "%s: %d %s", c.name, st.code, st.message.c_str());
    cr_expect(st.message.find(c.says) != std::string::npos, "%s: '%s' lacks '%s'", c.name,
              st.message.c_str(), c.says);
    ava::detail::ShmHelloAck ack{};
    cr_expect_eq(::recv(sock, &ack, sizeof ack, 0), static_cast<ssize_t>(sizeof ack), "%s", c.name);
    cr_expect_eq(ack.status, AVA_E_PROTO, "%s", c.name);
    ::close(sock);
  }
  ::close(memfd);
  expect_healthy(healthy, "malformed hellos");
}

Test(shm_corrupt, silent_or_vanishing_guests_do_not_block_others) {
  Pair healthy;
  const int silent = raw_connect(healthy.listener->address());
  const int vanishing = raw_connect(healthy.listener->address());
  ::close(vanishing);
  std::unique_ptr<Channel> worker;
  Status accepted;
  std::thread acceptor([&] { accepted = healthy.listener->accept(&worker, kWaitMs); });
  std::unique_ptr<Channel> guest;
  Status st = ava::connect_shm(healthy.listener->address(), kWaitMs, small_options(), &guest);
  acceptor.join();
  cr_expect_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_expect_eq(accepted.code, AVA_OK, "%s", accepted.message.c_str());
  std::unique_ptr<Channel> none;
  st = healthy.listener->accept(&none, 100);
  cr_expect_eq(st.code, AVA_E_TIMEOUT, "the silent guest yields no channel: %s",
               st.message.c_str());
  ::close(silent);
}
