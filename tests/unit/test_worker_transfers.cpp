// SPDX-License-Identifier: MIT
// Staged transfers (AVA_MSG_DATA): what the worker's book sends reaches the
// guest's destination exactly, at every size around the chunk boundaries and
// with pieces that leave gaps; a failed command leaves the destination as it
// was; no other message overtakes the DATA of a command that is done; and the
// guest refuses DATA that lies.
#include <criterion/criterion.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ava/wire.h"
#include "shim/ava_shim.h"
#include "shim/transfers.hpp"
#include "transport/channel.hpp"
#include "worker/ava_worker_rt.h"
#include "worker/connection.hpp"
#include "worker/msg_scratch.hpp"
#include "worker/server.hpp"
#include "worker/transfers.hpp"
#include "worker/wcall.hpp"

#include "served_call.hpp"

namespace {

constexpr uint64_t kChunk = ava::TransferBook::kChunkBytes;

// A call being served, and the guest's table at the other end.
struct Guest : ava::testing::ServedCall {
  ava::guest::TransferTable table;
  bool place = false; // offer the table large payloads, as the guest's reader does
  int placed = 0;     // DATA messages whose bytes went straight into place

  // Receives until a message of another kind than DATA arrives (or the
  // channel ends), delivering every DATA; returns that kind (0 if none).
  uint16_t receive_until_other(int *data_messages, std::string *refused) {
    for (;;) {
      ava::MsgBuf msg;
      bool in_place = false;
      const ava::Status st =
          place ? peer->recv_placed(msg, 10000, true, table, &in_place) : peer->recv(msg, 10000);
      if (!st.is_ok())
        return 0;
      if (msg.header()->kind != AVA_MSG_DATA)
        return msg.header()->kind;
      ++*data_messages;
      placed += in_place ? 1 : 0;
      if (!table.deliver(msg, in_place, refused))
        return AVA_MSG_DATA;
    }
  }
};

// A status message after everything else, so the receiver knows where to stop.
void send_marker(Guest &g) {
  ava_msg_hdr req{};
  req.magic = AVA_MSG_MAGIC;
  g.connection->send_status(req, AVA_MSG_GOODBYE, AVA_OK);
}

std::vector<uint8_t> pattern(uint64_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (uint64_t i = 0; i < n; ++i)
    v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 13));
  return v;
}

struct SizeCase {
  const char *name;
  uint64_t bytes;
};

} // namespace

// One contiguous read of each size: every byte lands, in ceil(size/chunk) messages.
Test(worker_transfers, every_size_around_the_chunk_boundaries_arrives_whole, .timeout = 120) {
  const SizeCase cases[] = {
      {"1 byte", 1},
      {"a page less one", 4095},
      {"a chunk less one", kChunk - 1},
      {"a chunk", kChunk},
      {"a chunk and one", kChunk + 1},
      {"three chunks and 7", 3 * kChunk + 7},
      {"64 MiB and 3", (64ull << 20) + 3},
  };
  for (const SizeCase &c : cases)
    for (const bool place : {false, true}) {
      Guest g;
      g.place = place;
      std::vector<uint8_t> dst(c.bytes + 16, 0xA5);
      const uint64_t token = g.table.expect(dst.data() + 8, c.bytes);
      cr_assert_neq(token, 0u);
      const std::vector<uint8_t> want = pattern(c.bytes, static_cast<uint8_t>(c.bytes));
      {
        ava::CurrentCall in(g.call.get());
        ava_w_transfer *t = ava_w_transfer_begin(token, c.bytes, AVA_NO_HEAP);
        cr_assert_not_null(t, "%s: begin", c.name);
        std::memcpy(ava_w_transfer_staging(t), want.data(), c.bytes);
        cr_assert_eq(ava_w_transfer_piece(t, 0, 0, c.bytes), AVA_OK);
        ava_w_transfer_start(t, nullptr, nullptr, nullptr);
        int messages = 0;
        std::string refused;
        std::thread rx([&] {
          cr_expect_eq(g.receive_until_other(&messages, &refused), AVA_MSG_GOODBYE, "%s: %s",
                       c.name, refused.c_str());
        });
        ava_w_transfer_finished(t, 1);
        send_marker(g);
        rx.join();
        cr_expect_eq(messages, static_cast<int>((c.bytes + kChunk - 1) / kChunk), "%s: %d messages",
                     c.name, messages);
        // Payloads of 64 KiB and more go straight into the destination.
        const int large = static_cast<int>(c.bytes / kChunk) + (c.bytes % kChunk >= 65536 ? 1 : 0);
        cr_expect_eq(g.placed, place ? large : 0, "%s: %d of %d messages placed", c.name, g.placed,
                     messages);
      }
      cr_expect(std::memcmp(dst.data() + 8, want.data(), c.bytes) == 0, "%s: bytes differ", c.name);
      cr_expect(dst[7] == 0xA5 && dst[c.bytes + 8] == 0xA5, "%s: bytes outside were written",
                c.name);
      cr_expect_eq(g.table.open(), 0u, "%s: the destination is still open", c.name);
      cr_expect_eq(g.connection->transfers().pool()->used(), 0u, "%s: staging kept", c.name);
    }
}

// Rows with gaps between them, more than one message's worth of pieces.
Test(worker_transfers, pieces_leave_the_gaps_between_them_alone) {
  Guest g;
  constexpr uint64_t kRows = 1000, kLen = 100, kPitch = 160;
  std::vector<uint8_t> dst(kRows * kPitch, 0x5A);
  const uint64_t token = g.table.expect(dst.data(), dst.size());
  const std::vector<uint8_t> staging = pattern(dst.size(), 3);
  ava::CurrentCall in(g.call.get());
  ava_w_transfer *t = ava_w_transfer_begin(token, dst.size(), AVA_NO_HEAP);
  cr_assert_not_null(t);
  std::memcpy(ava_w_transfer_staging(t), staging.data(), staging.size());
  for (uint64_t r = 0; r < kRows; ++r)
    cr_assert_eq(ava_w_transfer_piece(t, r * kPitch, r * kPitch, kLen), AVA_OK);
  cr_expect_eq(ava_w_transfer_piece(t, 0, dst.size() - 1, 2), AVA_E_LENGTH,
               "a piece past the staging");
  ava_w_transfer_start(t, nullptr, nullptr, nullptr);
  int messages = 0;
  std::string refused;
  std::thread rx([&] { g.receive_until_other(&messages, &refused); });
  ava_w_transfer_finished(t, 1);
  send_marker(g);
  rx.join();
  cr_expect(refused.empty(), "%s", refused.c_str());
  cr_expect_eq(messages, static_cast<int>((kRows + ava::TransferBook::kMaxPieces - 1) /
                                          ava::TransferBook::kMaxPieces));
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < dst.size(); ++i)
    wrong += dst[i] != ((i % kPitch) < kLen ? staging[i] : 0x5A);
  cr_expect_eq(wrong, 0u, "%llu bytes wrong", static_cast<unsigned long long>(wrong));
}

// The command failed: one FAILED message, the destination untouched and closed.
Test(worker_transfers, a_failed_command_leaves_the_destination_as_it_was) {
  Guest g;
  std::vector<uint8_t> dst(4096, 0x11);
  const uint64_t token = g.table.expect(dst.data(), dst.size());
  ava::CurrentCall in(g.call.get());
  ava_w_transfer *t = ava_w_transfer_begin(token, dst.size(), AVA_NO_HEAP);
  std::memset(ava_w_transfer_staging(t), 0xEE, dst.size());
  cr_assert_eq(ava_w_transfer_piece(t, 0, 0, dst.size()), AVA_OK);
  ava_w_transfer_start(t, nullptr, nullptr, nullptr);
  int messages = 0;
  std::string refused;
  std::thread rx([&] { g.receive_until_other(&messages, &refused); });
  ava_w_transfer_finished(t, 0);
  send_marker(g);
  rx.join();
  cr_expect_eq(messages, 1);
  cr_expect(refused.empty(), "%s", refused.c_str());
  cr_expect_eq(std::count(dst.begin(), dst.end(), 0x11), static_cast<long>(dst.size()));
  cr_expect_eq(g.table.open(), 0u);
}

namespace {
std::atomic<int> g_poll_answer{0};
int poll_answer(void *) {
  return g_poll_answer.load();
}
int g_released = 0;
void count_release(void *) {
  ++g_released;
}
} // namespace

// The API says the command is done (its status), but its completion callback
// has not run: the next message to the guest still comes after the DATA.
Test(worker_transfers, a_done_command_s_data_goes_before_any_later_message) {
  Guest g;
  std::vector<uint8_t> dst(kChunk + 10, 0);
  const uint64_t token = g.table.expect(dst.data(), dst.size());
  const std::vector<uint8_t> want = pattern(dst.size(), 9);
  g_poll_answer = 0;
  g_released = 0;
  ava_w_transfer *t;
  {
    ava::CurrentCall in(g.call.get());
    t = ava_w_transfer_begin(token, dst.size(), AVA_NO_HEAP);
    std::memcpy(ava_w_transfer_staging(t), want.data(), want.size());
    ava_w_transfer_piece(t, 0, 0, want.size());
    ava_w_transfer_start(t, poll_answer, count_release, nullptr);
  }
  int messages = 0;
  std::string refused;
  uint16_t kind = 0;
  std::thread rx([&] { kind = g.receive_until_other(&messages, &refused); });
  // Not done yet: the marker goes alone. Then done: DATA first.
  send_marker(g);
  rx.join();
  cr_expect_eq(messages, 0, "DATA before the command was done");
  cr_expect_eq(kind, AVA_MSG_GOODBYE);
  g_poll_answer = 1;
  std::thread rx2([&] { kind = g.receive_until_other(&messages, &refused); });
  send_marker(g);
  rx2.join();
  cr_expect_eq(messages, 2, "the DATA went after the message, or not at all");
  cr_expect(std::memcmp(dst.data(), want.data(), want.size()) == 0);
  cr_expect_eq(g_released, 0, "released while the API may still hold the staging");
  ava_w_transfer_finished(t, 1); // late: sends nothing more
  cr_expect_eq(g_released, 1);
  cr_expect_eq(g.connection->transfers().delivered(), 1u);
}

// PoCL calls no completion callback for a command that failed (an event of
// its wait list did): the poll before the next message finds it failed,
// sends FAILED, and gives the staging back then, though the API's reference
// stays; a callback that comes late after all gives nothing back twice.
Test(worker_transfers, a_failed_command_without_a_callback_gives_its_staging_back) {
  Guest g;
  std::vector<uint8_t> dst(4 * kChunk, 0x11);
  const uint64_t token = g.table.expect(dst.data(), dst.size());
  g_poll_answer = -1;
  g_released = 0;
  ava_w_transfer *t;
  {
    ava::CurrentCall in(g.call.get());
    t = ava_w_transfer_begin(token, dst.size(), AVA_NO_HEAP);
    cr_assert_not_null(t);
    ava_w_transfer_piece(t, 0, 0, dst.size());
    ava_w_transfer_start(t, poll_answer, count_release, nullptr);
  }
  ava::StagingPool &pool = *g.connection->transfers().pool();
  cr_expect_geq(pool.used(), dst.size(), "no staging taken");
  int messages = 0;
  std::string refused;
  std::thread rx([&] { g.receive_until_other(&messages, &refused); });
  send_marker(g);
  rx.join();
  cr_expect_eq(messages, 1, "%d DATA messages for a failed command", messages);
  cr_expect(refused.empty(), "%s", refused.c_str());
  cr_expect_eq(g.table.open(), 0u, "no FAILED END");
  cr_expect_eq(std::count(dst.begin(), dst.end(), 0x11), static_cast<long>(dst.size()));
  cr_expect_eq(pool.used(), 0u, "the staging of a failed command stays taken");
  cr_expect_eq(g_released, 0, "the API's reference went with the staging");
  ava_w_transfer_finished(t, 0); // a driver that calls back after all
  cr_expect_eq(pool.used(), 0u);
  cr_expect_eq(g_released, 1);
}

// A non-blocking write's bytes that came in the call's own message (a
// socket's) stay there as the transfer's staging: no copy, charged to the
// pool; the buffer goes back to the guest's kept buffers (MsgScratch) once
// the command and the call are both done, whichever ends last. Bytes of a
// small call, or outside the message, are copied as before.
Test(worker_transfers, a_calls_bytes_stay_in_its_message_as_staging) {
  constexpr uint64_t kMessage = 4ull << 20;
  constexpr uint64_t kBytes = 2ull << 20;
  for (const bool command_first : {true, false}) {
    Guest g;
    auto scratch = std::make_shared<ava::MsgScratch>();
    ava::MsgBuf message;
    cr_assert(message.reserve(kMessage));
    message.set_size(kMessage);
    const std::vector<uint8_t> bytes = pattern(kBytes, 7);
    uint8_t *const at = message.data() + 4096;
    std::memcpy(at, bytes.data(), kBytes);
    g.call->message_buf = &message;
    g.call->scratch = &scratch;
    ava::StagingPool &pool = *g.connection->transfers().pool();
    ava_w_transfer *t;
    {
      ava::CurrentCall in(g.call.get());
      t = ava_w_transfer_begin_in(at, kBytes);
      cr_assert_not_null(t);
      ava_w_transfer_start(t, nullptr, nullptr, nullptr);
    }
    cr_expect_eq(ava_w_transfer_staging(t), static_cast<void *>(at), "the bytes were copied");
    cr_expect_eq(message.capacity(), 0u, "the call's buffer was not kept");
    cr_expect_geq(pool.used(), kBytes, "not charged to the staging limit");
    if (command_first) {
      ava_w_transfer_finished(t, 1);
      cr_expect_not(scratch->has(), "given back while the call still runs");
      cr_expect_eq(pool.used(), 0u);
      g.call.reset();
    } else {
      g.call.reset();
      cr_expect_not(scratch->has(), "given back while the command still reads it");
      cr_expect(std::equal(bytes.begin(), bytes.end(), at), "the staging changed under the API");
      ava_w_transfer_finished(t, 1);
    }
    cr_expect_eq(pool.used(), 0u, "[command first: %d] the charge stayed", command_first);
    ava::MsgBuf back = scratch->take();
    cr_expect_eq(back.capacity(), kMessage, "[command first: %d] not back in the kept buffers",
                 command_first);
    cr_expect_eq(back.data() + 4096, at, "another buffer came back");
  }

  // A small call's bytes, and bytes outside the message (past its end, in
  // its buffer's spare room): copied.
  Guest g;
  auto scratch = std::make_shared<ava::MsgScratch>();
  ava::MsgBuf message;
  cr_assert(message.reserve(kMessage));
  const uint64_t size = kMessage / 2;
  message.set_size(size);
  std::vector<uint8_t> elsewhere = pattern(kBytes, 9);
  g.call->message_buf = &message;
  g.call->scratch = &scratch;
  ava::CurrentCall in(g.call.get());
  struct {
    const uint8_t *ptr;
    uint64_t bytes;
  } copied[] = {{message.data(), ava::MsgScratch::kMin - 1},
                {elsewhere.data(), kBytes},
                {message.data() + size - kBytes + 1, kBytes}};
  for (const auto &c : copied) {
    ava_w_transfer *t = ava_w_transfer_begin_in(c.ptr, c.bytes);
    cr_assert_not_null(t);
    cr_expect_neq(ava_w_transfer_staging(t), static_cast<const void *>(c.ptr));
    cr_expect_eq(std::memcmp(ava_w_transfer_staging(t), c.ptr, c.bytes), 0);
    cr_expect_eq(message.capacity(), kMessage, "the call's buffer was kept");
    ava_w_transfer_abort(t);
  }
}

Test(worker_transfers, a_token_in_use_and_an_aborted_transfer) {
  Guest g;
  ava::CurrentCall in(g.call.get());
  ava_w_transfer *a = ava_w_transfer_begin(77, 16, AVA_NO_HEAP);
  cr_assert_not_null(a);
  cr_expect_null(ava_w_transfer_begin(77, 16, AVA_NO_HEAP), "a token in use");
  ava_w_transfer_abort(a);
  ava_w_transfer *b = ava_w_transfer_begin(77, 16, AVA_NO_HEAP);
  cr_expect_not_null(b, "an aborted transfer's token is free again");
  ava_w_transfer_abort(b);
  cr_expect_eq(g.connection->transfers().pool()->used(), 0u);
  cr_expect_null(ava_w_transfer_begin(78, ava::TransferBook::kStagingLimit + 1, AVA_NO_HEAP),
                 "more than a guest's whole staging");
}

Test(worker_transfers, outside_a_call_nothing_is_staged) {
  cr_expect_null(ava_w_transfer_begin(1, 16, AVA_NO_HEAP));
  ava_w_transfer_abort(nullptr);
  ava_w_transfer_finished(nullptr, 1);
  cr_expect_eq(ava_w_transfer_piece(nullptr, 0, 0, 1), AVA_E_PROTO);
}

// Beyond the limit a taker waits for staging to come free, and gives up
// after its patience; blocks come back for reuse, and kept ones give way.
Test(worker_transfers, the_pool_waits_for_staging_to_come_free_and_reuses_it) {
  uint64_t cap = 0;
  ava::StagingPool pool(1 << 20, std::chrono::milliseconds(200));
  void *all = pool.take(1 << 20, &cap);
  cr_assert_not_null(all);
  cr_expect_eq(cap, uint64_t{1} << 20);
  cr_expect_null(pool.take(1, &cap), "full: gives up after its patience");
  pool.give(all, 1 << 20);
  cr_expect_eq(pool.used(), 0u);
  cr_expect_eq(pool.take((1 << 20) - 100, &cap), all, "the kept block is used again");
  cr_expect_eq(cap, uint64_t{1} << 20);
  pool.give(all, cap);
  void *small = pool.take(100 * 1024, &cap);
  cr_expect_neq(small, all, "a block more than twice the size is not wasted on a small one");
  pool.give(small, cap);
  void *other = pool.take(900 * 1024, &cap);
  cr_expect_not_null(other, "kept blocks give way to a new one within the limit");
  pool.give(other, cap);

  // A kept block that gives way to a take that then finds no room is
  // freed all the same (the ASan build's leak check sees it otherwise).
  ava::StagingPool tight(1 << 20, std::chrono::milliseconds(50));
  void *held_half = tight.take(1 << 19, &cap);
  cr_assert_not_null(held_half);
  const uint64_t half_cap = cap;
  void *kept = tight.take(1 << 18, &cap);
  cr_assert_not_null(kept);
  tight.give(kept, cap);
  cr_expect_null(tight.take(3 << 18, &cap), "no room while half is held");
  cr_expect_not(tight.reserve(3 << 18), "no room to reserve either");
  cr_expect(tight.reserve(1 << 19), "the other half");
  tight.unreserve(1 << 19);
  tight.give(held_half, half_cap);
  cr_expect_eq(tight.used(), 0u);

  ava::StagingPool patient(1 << 20, std::chrono::milliseconds(60000));
  void *held = patient.take(1 << 20, &cap);
  cr_assert_not_null(held);
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    uint64_t c = 0;
    void *p = patient.take(1 << 19, &c);
    got = p != nullptr;
    if (p != nullptr)
      patient.give(p, c);
  });
  patient.give(held, cap);
  waiter.join();
  cr_expect(got.load(), "a waiter gets staging once it is given back");
  cr_expect_eq(patient.used(), 0u);
}

namespace {

// What a ring's callbacks saw (ava_w_transfer_ring).
struct RingProbe {
  std::mutex mu;
  std::vector<uint32_t> advanced;
  int released = 0;
  size_t advanced_count() {
    std::lock_guard lock(mu);
    return advanced.size();
  }
};
int ring_poll(void *, uint32_t) {
  return 0; // the segments' completions drive it
}
void ring_advance(void *ctx, uint32_t k) {
  auto *p = static_cast<RingProbe *>(ctx);
  std::lock_guard lock(p->mu);
  p->advanced.push_back(k);
}
void ring_release(void *ctx) {
  auto *p = static_cast<RingProbe *>(ctx);
  std::lock_guard lock(p->mu);
  ++p->released;
}

struct RingCase {
  const char *name;
  int fail_at; // the segment whose command fails, or -1
  int drop_at; // the pair before which the guest goes, or -1
};

} // namespace

// A read in segments through two slots: segments complete two at a time in
// reverse order, and go to the guest in order, each freeing its slot once
// sent; a failed one ends the transfer FAILED after the segments before it;
// a guest that goes frees every slot at once, so no command waits for good.
Test(worker_transfers, a_ring_sends_segments_in_order_and_frees_each_slot_once) {
  constexpr uint64_t kSeg = 96 * 1024;
  constexpr uint32_t kSlots = 2, kSegments = 6;
  constexpr uint64_t kBytes = (kSegments - 1) * kSeg + 7;
  const RingCase cases[] = {
      {"every segment done", -1, -1},
      {"segment 2 failed", 2, -1},
      {"the guest gone before segment 2", -1, 1},
  };
  for (const RingCase &c : cases) {
    Guest g;
    g.place = true;
    std::vector<uint8_t> dst(kBytes + 16, 0xA5);
    const uint64_t token = g.table.expect(dst.data() + 8, kBytes);
    const std::vector<uint8_t> want = pattern(kBytes, 5);
    RingProbe probe;
    {
      ava::CurrentCall in(g.call.get());
      ava_w_transfer *t = ava_w_transfer_begin(token, kSlots * kSeg, AVA_NO_HEAP);
      cr_assert_not_null(t);
      cr_assert_eq(ava_w_transfer_ring(t, kBytes, kSeg, kSlots, ring_poll, ring_advance,
                                       ring_release, &probe),
                   AVA_OK, "%s: ring", c.name);
      ava_w_transfer_start(t, nullptr, nullptr, nullptr); // its commands are enqueued
      int messages = 0;
      std::string refused;
      std::thread rx([&] { g.receive_until_other(&messages, &refused); });
      for (uint32_t k = 0; k < kSegments; k += 2) {
        if (static_cast<int>(k / 2) == c.drop_at)
          g.connection->transfers().drop_all();
        // Both slots are free again: the segments before were sent (or dropped).
        cr_expect_geq(probe.advanced_count(), k, "%s: segment %u's slot is not free", c.name, k);
        for (uint32_t s = k; s < k + 2; ++s)
          std::memcpy(ava_w_transfer_slot(t, s), want.data() + s * kSeg,
                      std::min(kSeg, kBytes - s * kSeg));
        const size_t before = probe.advanced_count();
        ava_w_transfer_segment_done(t, k + 1, static_cast<int>(k + 1) != c.fail_at);
        cr_expect_eq(probe.advanced_count(), before, "%s: segment %u went before %u", c.name, k + 1,
                     k);
        ava_w_transfer_segment_done(t, k, static_cast<int>(k) != c.fail_at);
      }
      send_marker(g);
      rx.join();
      cr_expect(refused.empty(), "%s: %s", c.name, refused.c_str());
    }
    const uint64_t good = c.fail_at >= 0   ? c.fail_at * kSeg
                          : c.drop_at >= 0 ? 2 * c.drop_at * kSeg
                                           : kBytes;
    cr_expect(std::memcmp(dst.data() + 8, want.data(), good) == 0, "%s: bytes differ", c.name);
    cr_expect_eq(std::count(dst.begin() + 8 + static_cast<long>(good), dst.end() - 8, 0xA5),
                 static_cast<long>(kBytes - good), "%s: bytes past the good ones written", c.name);
    cr_expect(dst[7] == 0xA5 && dst[kBytes + 8] == 0xA5, "%s: bytes outside written", c.name);
    std::vector<uint32_t> every(kSegments);
    for (uint32_t k = 0; k < kSegments; ++k)
      every[k] = k;
    cr_expect(probe.advanced == every, "%s: %zu slots given back, not each once in order", c.name,
              probe.advanced.size());
    cr_expect_eq(probe.released, 1, "%s: released %d times", c.name, probe.released);
    cr_expect_eq(g.table.open(), c.drop_at >= 0 ? 1u : 0u, "%s: open destinations", c.name);
    cr_expect_eq(g.connection->transfers().pool()->used(), 0u, "%s: staging kept", c.name);
  }
}

namespace {

struct Lie {
  const char *name;
  uint64_t token;
  uint32_t flags;
  std::vector<ava_data_piece> pieces;
  uint64_t bytes;     // payload bytes actually sent
  int64_t args_fudge; // added to args_len
};

ava::MsgBuf data_message(const Lie &l) {
  ava_data d{static_cast<uint32_t>(l.pieces.size()), l.flags};
  const uint64_t args = sizeof d + l.pieces.size() * sizeof(ava_data_piece);
  ava::MsgBuf m;
  const uint64_t total = sizeof(ava_msg_hdr) + args + l.bytes;
  cr_assert(m.reserve(total));
  ava_msg_hdr h{};
  h.magic = AVA_MSG_MAGIC;
  h.abi_version = AVA_ABI_VERSION;
  h.kind = AVA_MSG_DATA;
  h.total_len = total;
  h.call_id = l.token;
  h.args_len = static_cast<uint32_t>(static_cast<int64_t>(args) + l.args_fudge);
  std::memcpy(m.data(), &h, sizeof h);
  std::memcpy(m.data() + sizeof h, &d, sizeof d);
  if (!l.pieces.empty())
    std::memcpy(m.data() + sizeof h + sizeof d, l.pieces.data(),
                l.pieces.size() * sizeof(ava_data_piece));
  std::memset(m.data() + sizeof h + args, 0xCC, l.bytes);
  m.set_size(total);
  return m;
}

} // namespace

// A worker that lies gets its DATA refused, and the destination stays as it was.
Test(worker_transfers, the_guest_refuses_data_that_lies) {
  const Lie lies[] = {
      {"a token nobody expects", 999, AVA_DATA_END, {{0, 8}}, 8, 0},
      {"a piece past the destination", 1, 0, {{60, 8}}, 8, 0},
      {"an offset past the destination", 1, 0, {{65, 0}}, 0, 0},
      {"a length that wraps", 1, 0, {{8, UINT64_MAX - 4}}, 8, 0},
      {"fewer bytes than the pieces", 1, 0, {{0, 16}}, 8, 0},
      {"more bytes than the pieces", 1, 0, {{0, 8}}, 16, 0},
      {"unknown flags", 1, 0x80, {}, 0, 0},
      {"FAILED without END", 1, AVA_DATA_FAILED, {}, 0, 0},
      {"FAILED with pieces", 1, AVA_DATA_FAILED | AVA_DATA_END, {{0, 8}}, 8, 0},
      {"an argument block shorter than its pieces", 1, 0, {{0, 8}}, 8, -8},
      {"bytes in a heap block nobody lent", 1, AVA_DATA_HEAP, {{0, 8}}, 0, 0},
  };
  for (const Lie &l : lies) {
    ava::guest::TransferTable table;
    std::vector<uint8_t> dst(64, 0x42);
    cr_assert_eq(table.expect(dst.data(), dst.size()), 1u);
    std::string reason;
    cr_expect_not(table.deliver(data_message(l), false, &reason), "%s: accepted", l.name);
    cr_expect_not(reason.empty(), "%s: no reason", l.name);
    cr_expect_eq(std::count(dst.begin(), dst.end(), 0x42), 64, "%s: written", l.name);
  }
  ava::guest::TransferTable table;
  std::vector<uint8_t> dst(64, 0x42);
  const uint64_t token = table.expect(dst.data(), dst.size());
  std::string reason;
  cr_expect(table.deliver(data_message({"ok", token, 0, {{56, 8}, {0, 0}}, 8, 0}), false, &reason),
            "%s", reason.c_str());
  cr_expect_eq(dst[56], 0xCC);
  cr_expect_eq(table.open(), 1u, "without END the destination stays open");
  cr_expect(table.deliver(data_message({"end", token, AVA_DATA_END, {}, 0, 0}), false, &reason));
  cr_expect_eq(table.open(), 0u);
  table.cancel(token, 0); // harmless after the end
}

// On a socket channel a large DATA payload goes straight into its
// destination, but only where deliver would have copied it: a lie, an
// unknown token or a tombstone is received whole and judged by deliver, and
// the destination stays as it was.
Test(worker_transfers, large_data_is_placed_only_where_deliver_would_copy_it) {
  constexpr uint64_t kBytes = 128 * 1024;
  struct Case {
    const char *name;
    uint64_t offset; // of the one piece
    bool known;      // the token is expected
    bool tombstone;  // ... but its call was abandoned
    bool placed;     // what should happen
    bool accepted;
  };
  const Case cases[] = {
      {"a piece that fits", 8, true, false, true, true},
      {"a piece past the destination", 64, true, false, false, false},
      {"a token nobody expects", 8, false, false, false, false},
      {"a tombstone's bytes", 8, true, true, false, true},
  };
  for (const Case &c : cases) {
    std::unique_ptr<ava::Channel> worker, guest;
    cr_assert(ava::channel_pair(&worker, &guest).is_ok());
    ava::guest::TransferTable table;
    std::vector<uint8_t> dst(kBytes + 16, 0x42);
    const uint64_t token = table.expect(dst.data(), dst.size());
    if (c.tombstone)
      table.cancel(token, 77);
    ava::MsgBuf m =
        data_message({c.name, c.known ? token : token + 100, 0, {{c.offset, kBytes}}, kBytes, 0});
    const struct iovec iov = {m.data(), m.size()};
    std::thread tx([&] { cr_expect(worker->send(&iov, 1).is_ok(), "%s: send", c.name); });
    ava::MsgBuf msg;
    bool placed = false;
    cr_assert(guest->recv_placed(msg, 10000, true, table, &placed).is_ok(), "%s: recv", c.name);
    tx.join();
    cr_expect_eq(placed, c.placed, "%s: placed %d", c.name, placed);
    std::string reason;
    cr_expect_eq(table.deliver(msg, placed, &reason), c.accepted, "%s: %s", c.name, reason.c_str());
    const auto untouched = std::count(dst.begin(), dst.end(), 0x42);
    if (c.placed) {
      cr_expect_eq(untouched, 16, "%s: %ld bytes untouched", c.name, static_cast<long>(untouched));
      cr_expect(dst[7] == 0x42 && dst[8] == 0xCC && dst[kBytes + 7] == 0xCC &&
                    dst[kBytes + 8] == 0x42,
                "%s: the bytes landed elsewhere", c.name);
    } else {
      cr_expect_eq(untouched, static_cast<long>(dst.size()), "%s: written", c.name);
    }
  }
}

// A call abandoned (no reply in call_timeout_ms) leaves its token as a
// tombstone: the worker's late DATA is checked and dropped, never written
// into the program's memory (the program saw the call fail and may reuse
// it) and never taken for a protocol break; the tombstone goes with the
// transfer's END or with the abandoned call's late reply. A call whose reply
// said it failed forgets its token at once.
Test(worker_transfers, late_data_of_an_abandoned_call_goes_nowhere) {
  std::string reason;
  {
    ava::guest::TransferTable table;
    std::vector<uint8_t> dst(64, 0x42);
    const uint64_t token = table.expect(dst.data(), dst.size());
    table.cancel(token, 77);
    cr_expect_eq(table.open(), 1u, "the tombstone is gone before its DATA");
    cr_expect(table.deliver(data_message({"late", token, 0, {{0, 8}}, 8, 0}), false, &reason), "%s",
              reason.c_str());
    cr_expect_eq(std::count(dst.begin(), dst.end(), 0x42), 64, "late DATA was written");
    // Its lies are still lies.
    cr_expect_not(table.deliver(data_message({"past", token, 0, {{65, 0}}, 0, 0}), false, &reason));
    cr_expect(table.deliver(data_message({"end", token, AVA_DATA_END, {}, 0, 0}), false, &reason),
              "%s", reason.c_str());
    cr_expect_eq(table.open(), 0u);
    cr_expect_not(
        table.deliver(data_message({"after end", token, 0, {{0, 8}}, 8, 0}), false, &reason));
  }
  {
    ava::guest::TransferTable table;
    std::vector<uint8_t> dst(64, 0x42);
    const uint64_t mine = table.expect(dst.data(), dst.size());
    const uint64_t other = table.expect(dst.data(), dst.size());
    table.cancel(mine, 77);
    table.cancel(other, 78);
    table.reply_arrived(77); // DATA for call 77 would have come before it
    cr_expect_eq(table.open(), 1u, "only call 77's tombstone goes");
    cr_expect_not(
        table.deliver(data_message({"after reply", mine, 0, {{0, 8}}, 8, 0}), false, &reason));
    cr_expect(
        table.deliver(data_message({"other", other, AVA_DATA_END, {}, 0, 0}), false, &reason));
  }
  {
    ava::guest::TransferTable table;
    std::vector<uint8_t> dst(64, 0x42);
    const uint64_t token = table.expect(dst.data(), dst.size());
    table.cancel(token, 0);
    cr_expect_eq(table.open(), 0u, "a call that was answered keeps no tombstone");
  }
}

// A thread waiting for a transfer's END while another reads (the guest's
// pieces wait for the one a window back): the END wakes it, and a wait for
// one that never comes gives up after its patience.
Test(worker_transfers, a_wait_for_a_transfers_end_wakes_at_the_end) {
  ava::guest::TransferTable table;
  std::vector<uint8_t> dst(64, 0);
  const uint64_t token = table.expect(dst.data(), dst.size());
  const uint64_t never = table.expect(dst.data(), dst.size());
  cr_expect(table.is_open(token));
  std::thread reader([&] {
    std::string reason;
    cr_expect(table.deliver(data_message({"end", token, AVA_DATA_END, {}, 0, 0}), false, &reason),
              "%s", reason.c_str());
  });
  cr_expect(table.wait_ended(token, std::chrono::milliseconds(60000)), "no END seen");
  reader.join();
  cr_expect_not(table.is_open(token));
  cr_expect_not(table.wait_ended(never, std::chrono::milliseconds(1)), "an END that never came");
  table.cancel(never, 0);
  cr_expect(table.wait_ended(never, std::chrono::milliseconds(0)), "a cancelled token is over");
}
