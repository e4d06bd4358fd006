// SPDX-License-Identifier: MIT
// Fuzz-style test of the worker's decoder with the real demo plugin: valid
// CALLs of several demo functions are mutated (truncated, oversized, garbage
// headers, lying buffer descriptors, missing guard bytes, unknown handles)
// and sent to a real `ava worker`. After every mutated message a good call
// must still be answered (or, for a broken stream, the worker must close the
// connection and accept a new one). In the ASan build any memory error kills
// the worker, which this test notices.
#include <criterion/criterion.h>

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "demo_wire.h"
#include "e2e_env.hpp"
#include "proc.hpp"
#include "raw_guest.hpp"

namespace {

using e2e::Bytes;
using e2e::RawGuest;

// Sends demo_version and waits for its reply, skipping other replies.
// false: the connection is gone (the worker closed it).
bool still_answers(RawGuest &g) {
  ava_demo_demo_version_call a{};
  Bytes m = g.message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_VERSION, AVA_F_SYNC, &a, sizeof a, {});
  const uint64_t id = RawGuest::header(m).call_id;
  if (!g.send_all(m))
    return false;
  for (int i = 0; i < 64; ++i) {
    Bytes r;
    if (!g.recv_msg(&r, 10000))
      return false;
    if (RawGuest::header(r).kind == AVA_MSG_REPLY && RawGuest::header(r).call_id == id) {
      ava_demo_demo_version_reply v{};
      if (r.size() < sizeof(ava_msg_hdr) + sizeof(ava_reply_common) + sizeof v)
        return false;
      std::memcpy(&v, r.data() + sizeof(ava_msg_hdr) + sizeof(ava_reply_common), sizeof v);
      return RawGuest::header(r).status == AVA_OK && v.ret == 10203;
    }
  }
  return false;
}

// A sync call whose reply carries a handle in its first reply field.
uint64_t create_object(RawGuest &g) {
  ava_demo_demo_obj_create_call a{};
  Bytes payload(AVA_PAYLOAD_SPAN(5), 0);
  std::memcpy(payload.data(), "fuzz", 5);
  a.name = {0, 5, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
  a.size = 64;
  a.out = {0, 8, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  Bytes m = g.message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_OBJ_CREATE, AVA_F_SYNC, &a, sizeof a, payload);
  Bytes r;
  if (!g.send_all(m) || !g.recv_msg(&r, 10000) || RawGuest::header(r).status != AVA_OK)
    return 0;
  ava_demo_demo_obj_create_reply v{};
  const size_t at = sizeof(ava_msg_hdr) + sizeof(ava_reply_common);
  if (r.size() < at + sizeof v)
    return 0;
  std::memcpy(&v, r.data() + at, sizeof v);
  const uint64_t payload_len = r.size() - sizeof(ava_msg_hdr) - RawGuest::header(r).args_len;
  if (v.out.length != 8 || v.out.offset > payload_len || payload_len - v.out.offset < 8)
    return 0;
  uint64_t id = 0;
  std::memcpy(&id, r.data() + sizeof(ava_msg_hdr) + RawGuest::header(r).args_len + v.out.offset, 8);
  return id;
}

// Valid calls to start mutating from.
std::vector<Bytes> templates(const RawGuest &g, uint64_t obj) {
  std::vector<Bytes> out;
  {
    ava_demo_demo_obj_write_call a{};
    Bytes payload(AVA_PAYLOAD_SPAN(8), 0);
    std::memcpy(payload.data(), "abcdefgh", 8);
    a.obj = obj;
    a.data = {0, 8, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
    a.size = 8;
    out.push_back(
        g.message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_OBJ_WRITE, AVA_F_SYNC, &a, sizeof a, payload));
  }
  {
    ava_demo_demo_obj_read_call a{};
    a.obj = obj;
    a.offset = 8;
    a.data = {0, 16, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
    a.size = 16;
    out.push_back(g.message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_OBJ_READ, AVA_F_SYNC, &a, sizeof a, {}));
  }
  {
    ava_demo_demo_obj_xor_call a{};
    Bytes payload(AVA_PAYLOAD_SPAN(4), 0);
    a.obj = obj;
    a.data = {0, 4, AVA_BUF_PRESENT | AVA_BUF_IN | AVA_BUF_OUT, 0};
    a.size = 4;
    out.push_back(
        g.message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_OBJ_XOR, AVA_F_SYNC, &a, sizeof a, payload));
  }
  {
    ava_demo_demo_sum_sizes_call a{};
    Bytes payload(AVA_PAYLOAD_SPAN(16), 0);
    std::memcpy(payload.data(), &obj, 8);
    std::memcpy(payload.data() + 8, &obj, 8);
    a.objs = {0, 16, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
    a.count = 2;
    a.total = {0, 8, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
    out.push_back(
        g.message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_SUM_SIZES, AVA_F_SYNC, &a, sizeof a, payload));
  }
  {
    ava_demo_demo_obj_set_label_call a{};
    Bytes payload(AVA_PAYLOAD_SPAN(6), 0);
    std::memcpy(payload.data(), "label", 6);
    a.obj = obj;
    a.label = {0, 6, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
    out.push_back(
        g.message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_OBJ_SET_LABEL, AVA_F_SYNC, &a, sizeof a, payload));
  }
  {
    ava_demo_demo_obj_fill_call a{};
    a.obj = obj;
    a.value = 3;
    out.push_back(
        g.message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_OBJ_FILL, AVA_F_ASYNC, &a, sizeof a, {}));
  }
  {
    ava_demo_demo_obj_get_name_call a{};
    a.obj = obj;
    a.name = {0, 32, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
    a.capacity = 32;
    a.length_ret = {0, 8, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
    out.push_back(
        g.message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_OBJ_GET_NAME, AVA_F_SYNC, &a, sizeof a, {}));
  }
  return out;
}

// One random mutation; keeps scalar arguments (sizes) as they were so the
// real library is never asked for gigabytes, but lies everywhere else.
Bytes mutate(const Bytes &in, std::mt19937_64 &rng) {
  Bytes m = in;
  auto *h = reinterpret_cast<ava_msg_hdr *>(m.data());
  const size_t args_at = sizeof(ava_msg_hdr);
  const uint32_t args_len = h->args_len;
  auto pick = [&](uint64_t n) { return n ? rng() % n : 0; };
  // Descriptors sit at 8-byte aligned positions of the argument block; with
  // no room for one, the header's reserved field is hit instead.
  static ava_buf_desc scratch;
  auto desc_at = [&](size_t i) -> ava_buf_desc * {
    if (args_len < sizeof(ava_buf_desc) || m.size() < args_at + args_len)
      return &scratch;
    const size_t slots = (args_len - sizeof(ava_buf_desc)) / 8 + 1;
    return reinterpret_cast<ava_buf_desc *>(m.data() + args_at + (i % slots) * 8);
  };
  switch (pick(14)) {
  case 0: // truncated: the header says less than there is
    m.resize(args_at + pick(m.size() - args_at + 1));
    reinterpret_cast<ava_msg_hdr *>(m.data())->total_len = m.size();
    break;
  case 1: // argument block larger than the message
    h->args_len = static_cast<uint32_t>(m.size() - args_at + 1 + pick(1000));
    break;
  case 2: // argument block smaller than the function's
    h->args_len = static_cast<uint32_t>(pick(args_len));
    break;
  case 3:
    h->func_id = static_cast<uint32_t>(pick(AVA_DEMO_NFUNCS + 4));
    if (h->func_id == AVA_DEMO_FN_DEMO_CRASH || h->func_id == AVA_DEMO_FN_DEMO_SLEEP_MS)
      h->func_id = 0;
    break;
  case 4:
    h->flags = static_cast<uint32_t>(rng());
    break;
  case 5:
    h->kind = static_cast<uint16_t>(pick(12));
    break;
  case 6:
    h->spec_id ^= 1u << pick(32);
    break;
  case 7:
    h->reserved = 1;
    break;
  case 8: // descriptor offset anywhere
    desc_at(pick(8))->offset = rng() >> pick(64);
    break;
  case 9: // descriptor length anywhere
    desc_at(pick(8))->length = rng() >> pick(64);
    break;
  case 10:
    desc_at(pick(8))->flags = static_cast<uint32_t>(rng());
    break;
  case 11: // guard bytes and padding not zero
    for (size_t i = args_at + args_len; i < m.size(); ++i)
      m[i] = 0xff;
    break;
  case 12: // handles that do not exist
    for (size_t i = args_at; i + 8 <= args_at + args_len; i += 8) {
      uint64_t v;
      std::memcpy(&v, m.data() + i, 8);
      if (v > 0xffff)
        continue;
      v ^= 1u << pick(16);
      std::memcpy(m.data() + i, &v, 8);
    }
    break;
  default: // a few random bytes anywhere after the size fields
    for (int k = 0; k < 4 && m.size() > 24; ++k)
      m[24 + pick(m.size() - 24)] = static_cast<uint8_t>(rng());
    reinterpret_cast<ava_msg_hdr *>(m.data())->total_len = m.size();
    break;
  }
  return m;
}

} // namespace

Test(e2e_fuzz, worker_survives_mutated_calls, .timeout = 600) {
  const std::string dir = make_temp_dir();
  const std::string sock = dir + "/worker.sock";
  BackgroundProc worker(worker_argv("unix:" + sock), clean_env());
  RawGuest g(sock, AVA_DEMO_SPEC_ID, AVA_DEMO_SPEC_HASH, AVA_DEMO_SPEC_NAME);
  bool up = false;
  for (int i = 0; i < 100 && !up; ++i) {
    up = g.connect_and_hello();
    if (!up)
      usleep(50000);
  }
  cr_assert(up, "could not say hello to the worker");
  uint64_t obj = create_object(g);
  cr_assert_neq(obj, 0u, "could not create an object");
  std::vector<Bytes> base = templates(g, obj);

  std::mt19937_64 rng(0xa7a5eedull);
  int reconnects = 0;
  const char *rounds_env = getenv("AVA_FUZZ_ROUNDS");
  const int kRounds = rounds_env ? atoi(rounds_env) : 20000;
  const bool verbose = getenv("AVA_FUZZ_VERBOSE") != nullptr;
  for (int round = 0; round < kRounds; ++round) {
    const Bytes &t = base[rng() % base.size()];
    const Bytes m = mutate(t, rng);
    if (verbose)
      fprintf(stderr, "round %d: func %u kind %u flags %x args_len %u total %zu\n", round,
              RawGuest::header(m).func_id, RawGuest::header(m).kind, RawGuest::header(m).flags,
              RawGuest::header(m).args_len, m.size());
    if (!g.send_all(m) || !still_answers(g)) {
      // A broken stream is closed by the worker; it must take new guests.
      cr_assert_eq(worker.wait_exit(0), -1, "the worker died at round %d", round);
      cr_assert(g.connect_and_hello(), "the worker no longer accepts guests (round %d)", round);
      ++reconnects;
      obj = create_object(g);
      cr_assert_neq(obj, 0u);
      base = templates(g, obj);
    }
  }
  cr_expect_eq(worker.wait_exit(0), -1, "the worker died");
  cr_expect_gt(reconnects, 0, "no mutation broke a stream: the fuzzer is too gentle");
  cr_expect_lt(reconnects, kRounds, "every mutation broke the stream");
  // A well-behaved guest still gets correct service.
  const ProcResult r = run_proc({DEMO_PROBE, "bad-handles"}, guest_env("unix:" + sock), 60000);
  cr_expect_eq(r.exit_code, 0, "%s", r.err.c_str());
  cr_expect(r.out.find("release: 0") != std::string::npos, "%s", r.out.c_str());
  worker.kill_now(SIGTERM);
  cr_expect_eq(worker.wait_exit(10000), 0, "the worker did not stop cleanly on SIGTERM");
  const std::string rm = "rm -rf " + dir;
  [[maybe_unused]] int rc = system(rm.c_str());
}
