// SPDX-License-Identifier: MIT
// Pipelined reads and writes of libdemo objects (specs/demo/demo.spec.c,
// demo_pieces): on a channel with a shared heap a large transfer goes as
// pieces, each through a lent block of the heap. The program's view must be
// the native one at every size around the piece boundaries, for refused
// transfers, from several threads, and a worker that dies in the middle
// must fail the call, not hang it.
#include <criterion/criterion.h>

#include <iterator>
#include <string>
#include <vector>

#include "e2e_env.hpp"
#include "proc.hpp"
#include "remoted.hpp"

namespace {

constexpr int kTimeoutMs = 180000;
// Small pieces, so that every size of the table is a handful of them
// (AVA_ZEROCOPY_MIN, 64 KiB, is the smallest piece that goes lent).
constexpr const char *kChunk = "65536";

remoted::Comparison comparison(const std::string &chunk) {
  remoted::Comparison cmp;
  cmp.spec = "demo";
  cmp.channels = {"unix", "tcp", "shm"};
  cmp.native_env = clean_env();
  cmp.remoted_env = clean_env();
  cmp.remoted_env.push_back("AVA_PIPELINE_CHUNK=" + chunk);
  cmp.timeout_ms = kTimeoutMs;
  return cmp;
}

// Calls the worker ran without the program waiting: the program itself makes
// none, so on shm they are the pieces.
uint64_t async_calls(const remoted::RemotedRun &r) {
  const remoted::WorkerReport::Totals t = r.report.of("demo");
  return t.calls - t.sync;
}

} // namespace

Test(e2e_demo_pieces, transfers_around_piece_boundaries_match_native, .timeout = 600) {
  remoted::expect_same_as_native(AVA_BIN, {DEMO_PIECES, "check", kChunk, "4"}, comparison(kChunk));
}

// A 1 MiB heap holds 16 pieces: four threads' pieces in flight fill it, so
// a piece waits for the blocks of those before it to come back (the thread
// reads the worker's ENDs itself when nobody else does).
Test(e2e_demo_pieces, a_full_heap_makes_pieces_wait_not_fail, .timeout = 300) {
  remoted::Comparison cmp = comparison(kChunk);
  cmp.channels = {"shm"};
  cmp.remoted_env.push_back("AVA_SHM_HEAP_MB=1");
  remoted::expect_same_as_native(AVA_BIN, {DEMO_PIECES, "check", kChunk, "4"}, cmp);
}

// The comparison above would pass if nothing went in pieces: the worker's
// report shows the pieces on shm, and none with pipelining off or without
// a heap. A piece too large for a small heap (a VM's slot) shrinks to fit
// it, in whole 64 KiB: 1 MiB pieces on a 1 MiB heap go as 64 KiB ones
// (they went whole, through the rings, at a fifth of the speed in a VM).
Test(e2e_demo_pieces, the_pieces_path_is_taken_on_shm_only, .timeout = 300) {
  const std::vector<std::string> argv = {DEMO_PIECES, "check", kChunk, "2"};
  const struct {
    const char *channel;
    const char *chunk;
    const char *heap_mb;
    bool pieces;
  } cases[] = {{"shm", kChunk, nullptr, true},
               {"shm", "1048576", "1", true},
               {"shm", "0", nullptr, false},
               {"unix", kChunk, nullptr, false}};
  for (const auto &c : cases) {
    remoted::Comparison cmp = comparison(c.chunk);
    if (c.heap_mb != nullptr)
      cmp.remoted_env.push_back(std::string("AVA_SHM_HEAP_MB=") + c.heap_mb);
    const remoted::RemotedRun r = remoted::run_remoted(AVA_BIN, c.channel, argv, cmp);
    const std::string why = remoted::not_remoted_reason(r.report, "demo");
    cr_expect(why.empty(), "[%s, chunk %s] %s", c.channel, c.chunk, why.c_str());
    cr_expect_eq(r.proc.exit_code, 0, "[%s, chunk %s] failed:\n%s%s", c.channel, c.chunk,
                 r.proc.out.c_str(), r.proc.err.c_str());
    // Every piece but a transfer's last goes without waiting, and a
    // transfer of less than two pieces goes whole: the table's transfers
    // make 80 such pieces (e.g. 7 * 64 KiB + 5 bytes: 7, once each way at
    // two offsets), each thread 4 per transfer, 20 transfers.
    if (c.pieces)
      cr_expect_geq(async_calls(r), 80u + 2 * 80u, "[%s, chunk %s] only %llu calls went as pieces",
                    c.channel, c.chunk, static_cast<unsigned long long>(async_calls(r)));
    else
      cr_expect_eq(async_calls(r), 0u, "[%s, chunk %s] %llu calls went as pieces", c.channel,
                   c.chunk, static_cast<unsigned long long>(async_calls(r)));
  }
}

// An async call's failure surfaces at the thread's next sync call (the
// demo's rule under ava; natively demo_obj_fill fails at once, so this is
// compared with the unix channel, where transfers go whole): a large write
// that reports it has still written, on every channel.
Test(e2e_demo_pieces, an_earlier_async_failure_reported_by_a_piecewise_write, .timeout = 300) {
  const std::vector<std::string> argv = {DEMO_PIECES, "deferred", kChunk};
  const remoted::RemotedRun whole = remoted::run_remoted(AVA_BIN, "unix", argv, comparison(kChunk));
  cr_assert_eq(whole.proc.exit_code, 0, "unix: %s", whole.proc.err.c_str());
  cr_expect(whole.proc.out.find("write: -1\nread: 0\nthe write wrote: yes\n") != std::string::npos,
            "unix: the write should report the fill's failure and have written:\n%s",
            whole.proc.out.c_str());
  const remoted::RemotedRun pieces = remoted::run_remoted(AVA_BIN, "shm", argv, comparison(kChunk));
  cr_expect_eq(pieces.proc.out, whole.proc.out, "shm (in pieces) differs from unix (whole):\n%s",
               remoted::line_diff(whole.proc.out, pieces.proc.out, "unix", "shm").c_str());
  // The fill, and the write's first 4 of 5 pieces.
  cr_expect_geq(async_calls(pieces), 1u + 4u, "shm: the write did not go in pieces");
}

// demo_crash kills the worker while another thread moves data in pieces:
// that thread's transfer fails (DEMO_ERR_TRANSPORT), and so does the next
// call; nothing hangs. Natively demo_crash kills the process, so this runs
// remoted only.
Test(e2e_demo_pieces, a_worker_dying_mid_transfer_fails_the_call, .timeout = 300) {
  for (const char *channel : {"shm", "unix"}) {
    const remoted::RemotedRun r =
        remoted::run_remoted(AVA_BIN, channel, {DEMO_PIECES, "crash", kChunk}, comparison(kChunk));
    cr_expect(!r.proc.timed_out, "[%s] the transfer hung:\n%s", channel, r.proc.err.c_str());
    cr_expect_eq(r.proc.exit_code, 0, "[%s] exit %d:\n%s%s", channel, r.proc.exit_code,
                 r.proc.out.c_str(), r.proc.err.c_str());
    cr_expect(r.proc.out.find("a transfer failed with -5\n") != std::string::npos &&
                  r.proc.out.find("after: -5\n") != std::string::npos,
              "[%s] expected DEMO_ERR_TRANSPORT (-5) from the transfer and after it:\n%s", channel,
              r.proc.out.c_str());
  }
}
