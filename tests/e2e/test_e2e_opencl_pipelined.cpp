// SPDX-License-Identifier: MIT
// Pipelined transfers (issue 15): a large buffer read or write goes as a run
// of pieces through the shared heap. tests/opencl/programs/pipelined.c moves
// sizes around piece multiples at odd offsets, blocking and not, on in-order
// and out-of-order queues, behind a user event, from several threads, and
// makes the errors of the whole call; remoted with 64 KiB pieces its output
// must be the native one on every channel (unix and tcp have no heap and
// send the transfers whole). On shm the pieces must really have gone: the
// worker ran thousands more calls than with pipelining off
// (AVA_PIPELINE_CHUNK=0), one per piece. A guest whose worker is killed in
// the middle of such transfers gets an error, not a hang, and a guest of the
// same worker beside it goes on with whole data. Over sockets (no heap) the
// blocking reads of 1 MiB and more go staged instead, their bytes placed
// straight into the program's buffer: the worker's report counts one staged
// transfer more for each than with AVA_STAGE_BLOCKING=0, with the same output;
// and their non-blocking writes of 1 MiB and more run on the bytes where they
// came in (the report's in_place), none with AVA_STAGE_IN_PLACE=0.
#include <criterion/criterion.h>

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "ocl_run.hpp"
#include "opencl_worker.hpp"
#include "worker_mode.hpp"

namespace {

const std::string kProgram = std::string(OCL_DIR) + "/ocl_pipelined";
// The program's transfers of 128 KiB and more come to 789 extra pieces per
// size set (pipelined.c kSizes), made 24 times (3 offsets, blocking or
// not, read and write, two queues): 18936 calls, more with the waits.
constexpr uint64_t kExtraCalls = 15000;
// Its blocking reads of at least 1 MiB without a wait list: 4 sizes at 2 of
// the 3 offsets on 2 queues (AVA_STAGE_BLOCKING=0 sends those in replies; a
// blocking read behind a wait list goes staged either way).
constexpr uint64_t kStagedBlockingReads = 16;
// Its non-blocking writes of at least 1 MiB without a wait list, the same
// 4 sizes at 2 of the 3 offsets on 2 queues (a write behind a wait list goes
// whole).
constexpr uint64_t kInPlaceWrites = 16;

// The program's buffers stay ordinary ones (AVA_BUFFERS_IN_HEAP=0): in the
// heap their transfers would go gated, in one copy, instead of in pieces
// (tests/opencl/programs/heap_buffers.c covers those). Pieces still carry the
// transfers of buffers the heap has no room for.
std::vector<std::string> env_with_chunk(const char *chunk) {
  std::vector<std::string> env = ocl::child_env();
  env.push_back(std::string("AVA_PIPELINE_CHUNK=") + chunk);
  env.push_back("AVA_BUFFERS_IN_HEAP=0");
  return env;
}

} // namespace

Test(e2e_opencl_pipelined, pieces_at_every_boundary_match_native, .timeout = 900) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  remoted::Comparison cmp = ocl::comparison(env_with_chunk("65536"));
  const ProcResult native = run_proc({kProgram}, cmp.native_env, cmp.timeout_ms);
  cr_assert_eq(native.exit_code, 0, "native: %s", native.err.c_str());
  uint64_t piece_calls = 0;
  uint64_t tcp_staged = 0;
  uint64_t tcp_in_place = 0;
  for (const std::string &ch : cmp.channels) {
    const remoted::RemotedRun r = remoted::run_remoted(AVA_BIN, ch, {kProgram}, cmp);
    for (const std::string &d : remoted::differences(native, r, cmp))
      cr_expect_fail("[%s] %s", ch.c_str(), d.c_str());
    if (ch == "shm")
      piece_calls = r.report.of("opencl").calls;
    if (ch == "tcp") {
      tcp_staged = r.report.of("opencl").staged;
      tcp_in_place = r.report.of("opencl").in_place;
    }
  }
  remoted::Comparison unstaged = cmp;
  unstaged.remoted_env.push_back("AVA_STAGE_BLOCKING=0");
  const remoted::RemotedRun tcp_whole = remoted::run_remoted(AVA_BIN, "tcp", {kProgram}, unstaged);
  for (const std::string &d : remoted::differences(native, tcp_whole, unstaged))
    cr_expect_fail("[tcp, blocking reads in replies] %s", d.c_str());
  cr_expect_geq(tcp_staged, tcp_whole.report.of("opencl").staged + kStagedBlockingReads,
                "over tcp %lu transfers went staged, %lu with AVA_STAGE_BLOCKING=0: the large "
                "blocking reads did not",
                (unsigned long)tcp_staged, (unsigned long)tcp_whole.report.of("opencl").staged);
  remoted::Comparison copied = cmp;
  copied.remoted_env.push_back("AVA_STAGE_IN_PLACE=0");
  const remoted::RemotedRun tcp_copied = remoted::run_remoted(AVA_BIN, "tcp", {kProgram}, copied);
  for (const std::string &d : remoted::differences(native, tcp_copied, copied))
    cr_expect_fail("[tcp, non-blocking writes copied] %s", d.c_str());
  cr_expect_geq(tcp_in_place, kInPlaceWrites,
                "over tcp only %lu non-blocking writes ran on their message's bytes",
                (unsigned long)tcp_in_place);
  cr_expect_eq(tcp_copied.report.of("opencl").in_place, 0u,
               "with AVA_STAGE_IN_PLACE=0 %lu writes still ran in place",
               (unsigned long)tcp_copied.report.of("opencl").in_place);
  cmp.remoted_env = env_with_chunk("0");
  const remoted::RemotedRun whole = remoted::run_remoted(AVA_BIN, "shm", {kProgram}, cmp);
  for (const std::string &d : remoted::differences(native, whole, cmp))
    cr_expect_fail("[shm, whole transfers] %s", d.c_str());
  const uint64_t whole_calls = whole.report.of("opencl").calls;
  cr_expect_geq(piece_calls, whole_calls + kExtraCalls,
                "with 64 KiB pieces the worker ran %lu calls, whole %lu: the transfers did not "
                "go in pieces",
                (unsigned long)piece_calls, (unsigned long)whole_calls);
}

// tests/opencl/failed_reads.c over unix, tcp and shm: blocking reads behind
// a user event that fails while they wait end as natively: CL_SUCCESS, a
// failed event, the destination as it was (a reply's buffer brought bytes
// the command never wrote). They go staged (over sockets one staging block,
// and a ring of segments; on shm a lent block of the heap), or, for a
// buffer in shm's heap, gated; the worker's report shows them staged. On
// shm a read in pieces behind such a list once made PoCL abort the worker
// (pocl_update_event_failed): reads behind wait lists no longer go in
// pieces.
Test(e2e_opencl_pipelined, a_staged_blocking_read_behind_a_failed_event_ends_as_natively,
     .timeout = 600) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  remoted::Comparison cmp = ocl::comparison(ocl::child_env());
  cmp.channels = {"unix", "tcp", "shm"};
  const std::string program = std::string(OCL_DIR) + "/ocl_failed_reads";
  const ProcResult native = run_proc({program}, cmp.native_env, cmp.timeout_ms);
  cr_assert_eq(native.exit_code, 0, "native: %s", native.err.c_str());
  for (const std::string &ch : cmp.channels) {
    const remoted::RemotedRun r = remoted::run_remoted(AVA_BIN, ch, {program}, cmp);
    for (const std::string &d : remoted::differences(native, r, cmp))
      cr_expect_fail("[%s] %s", ch.c_str(), d.c_str());
    cr_expect_geq(r.report.of("opencl").staged, 4u, "[%s] %lu transfers staged", ch.c_str(),
                  (unsigned long)r.report.of("opencl").staged);
  }
}

// tests/opencl/pipeline_victim.c over shm with 1 MiB pieces: the victim's
// worker process is killed (SIGKILL) while the victim moves 24 MiB
// transfers in pieces; its call fails with an OpenCL error and the program
// ends. A bystander of the same `ava worker` (a process of its own, a heap
// of its own) completes its rounds with every byte checked. With a shared
// worker (--shared) there is one process for both: the victim alone runs,
// and the killing must still end it cleanly.
Test(e2e_opencl_pipelined, a_worker_killed_mid_transfer_fails_its_guest_alone, .timeout = 600) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  OpenclWorker w("", "shm");
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  std::vector<std::string> env = ocl::child_env();
  for (const std::string &e : guest_env(w.address))
    env.push_back(e);
  env.push_back("AVA_PIPELINE_CHUNK=1048576");
  const std::string program = std::string(OCL_DIR) + "/ocl_pipeline_victim";

  BackgroundProc victim({program, "victim"}, env);
  std::string seen;
  cr_assert(victim.wait_for_line("ready", ocl::kTimeoutMs, &seen), "the victim: %s", seen.c_str());
  const std::vector<pid_t> before = child_pids(w.proc.pid());
  const pid_t target = shared_worker_mode() ? w.proc.pid() : (before.size() == 1 ? before[0] : -1);
  cr_assert_gt(target, 0, "%zu worker processes for one guest", before.size());
  std::unique_ptr<BackgroundProc> bystander;
  if (!shared_worker_mode()) {
    bystander = std::make_unique<BackgroundProc>(std::vector<std::string>{program, "12"}, env);
    cr_assert(bystander->wait_for_line("ready", ocl::kTimeoutMs, &seen), "the bystander: %s",
              seen.c_str());
  }
  cr_assert_eq(kill(target, SIGKILL), 0);

  cr_expect_eq(victim.wait_exit(ocl::kTimeoutMs), 0, "the victim did not end cleanly");
  victim.wait_for_line("\x01(end)", 5000, &seen);
  cr_expect(seen.find("after ") != std::string::npos &&
                seen.find(": CL_SUCCESS") == std::string::npos,
            "the victim: %s", seen.c_str());
  if (bystander) {
    cr_expect_eq(bystander->wait_exit(ocl::kTimeoutMs), 0, "the bystander failed");
    bystander->wait_for_line("\x01(end)", 5000, &seen);
    cr_expect(seen.find("rounds: 12") != std::string::npos, "the bystander: %s", seen.c_str());
  }
}

namespace {

// The lines of a worker's report (one per ended session; 0 without one).
size_t lines_in(const std::string &path) {
  return remoted::split_lines(remoted::WorkerReport::read(path).text).size();
}

// Waits (woken by inotify, never napping) until the file at path, in dir,
// has at least n lines: a worker's report gains a line as each session ends.
bool wait_for_lines(const std::string &dir, const std::string &path, size_t n, int timeout_ms) {
  const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0 || inotify_add_watch(fd, dir.c_str(), IN_CLOSE_WRITE | IN_MODIFY | IN_CREATE) < 0)
    return false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool done = false;
  while (!(done = lines_in(path) >= n)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          until - std::chrono::steady_clock::now())
                          .count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0)
      break;
    char drain[4096];
    while (read(fd, drain, sizeof drain) > 0) {
    }
  }
  close(fd);
  return done;
}

// The mappings of the shm channels' memory (the guests' heaps and rings) in
// process pid.
size_t channel_mappings(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  size_t n = 0;
  for (std::string line; std::getline(maps, line);)
    n += line.find("memfd:ava-shm") != std::string::npos;
  return n;
}

} // namespace

// A worker serving every guest in one process (--shared) holds a guest's
// channel, and with it its shared heap, while the API may still write a
// block the guest lent. tests/opencl/failed_reads.c makes blocking reads
// through lent blocks whose commands fail (their wait list does), for which
// PoCL calls no completion callback: the worker must let go of the channel
// anyway once the guest left (it kept the whole heap mapped for good).
Test(e2e_opencl_pipelined, a_shared_worker_unmaps_a_guest_whose_lent_reads_failed, .timeout = 300) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  const std::string dir = make_temp_dir();
  const std::string address = "shm:" + dir + "/worker.sock";
  const std::string report = dir + "/sessions.report";
  BackgroundProc worker({AVA_BIN, "worker", "--spec", "opencl", "--listen", address, "--ready-fd",
                         "1", "--report", report, "--shared"},
                        ocl::child_env());
  std::string seen;
  cr_assert(worker.wait_for_line("worker.sock", 20000, &seen), "the worker: %s", seen.c_str());
  std::vector<std::string> env = ocl::child_env();
  for (const std::string &e : guest_env(address))
    env.push_back(e);
  const ProcResult r = run_proc({std::string(OCL_DIR) + "/ocl_failed_reads"}, env, ocl::kTimeoutMs);
  cr_assert_eq(r.exit_code, 0, "the program: %s", r.err.c_str());
  cr_expect(r.out.find("3145728 bytes behind an event that failed: CL_SUCCESS") !=
                std::string::npos,
            "%s", r.out.c_str());
  cr_assert(wait_for_lines(dir, report, 1, 20000), "the session never ended (report: %zu lines)",
            lines_in(report));
  const remoted::WorkerReport sessions = remoted::WorkerReport::read(report);
  cr_expect_geq(sessions.of("opencl").staged, 6u, "%lu transfers staged",
                (unsigned long)sessions.of("opencl").staged);
  // The report line is the session's last act; the accepting thread frees
  // the session just after, and /proc has no wake-up for that: looked at
  // again for up to 10 s.
  size_t mapped = channel_mappings(worker.pid());
  for (int i = 0; i < 500 && mapped != 0; ++i) {
    usleep(20000);
    mapped = channel_mappings(worker.pid());
  }
  cr_expect_eq(mapped, 0u, "the worker still maps the departed guest's channel %zu times", mapped);
  worker.kill_now(SIGTERM);
  worker.wait_exit(10000);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}
