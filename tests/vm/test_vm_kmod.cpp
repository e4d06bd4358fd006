// SPDX-License-Identifier: MIT
// The guest's kmod channel: ava.ko in the guest, `ava vmhost` on the host.
// One boot runs clinfo and every OpenCL test program over /dev/ava (compared
// with native runs); another checks slots and faults: processes at once on
// distinct slots, mmap limited to the slot, a guest process or a host worker
// killed mid-call, garbage in a slot's ring, rmmod with an open slot; one
// more, that a claim finds its slot zeroed whatever an earlier claim left.
#include <criterion/criterion.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ocl_run.hpp"
#include "vm_checks.hpp"
#include "vm_host.hpp"
#include "vm_session.hpp"
#include "vm_shm.hpp"

namespace {

using vmtest::check_result;
using vmtest::expect_ok;

constexpr int kCheckLimitS = 240;
constexpr int kSlots = 4;
constexpr int kSyncTimeoutMs = 300000;
// A guest call whose worker died must fail within this (the sleeper's call
// would otherwise last kSleepMs).
constexpr int kErrorWithinS = 30;
constexpr int kSleepMs = 50000; // libdemo allows at most 60 s
// A guest killed mid-call: vmhost ends the worker (still inside the long
// call) shortly after ava.ko released the slot, well before the call is over.
constexpr int kKilledSleepMs = 50000;
constexpr int kFreedWithinMs = 15000;

std::string kmod_env() {
  return "insmod /lib/modules/ava-vm/ava.ko || echo 'ava.ko did not load'\n"
         "export LD_LIBRARY_PATH=" +
         sh_quote(AVA_GUEST_LIB_DIR) + " AVA_WORKER=kmod:/dev/ava\n";
}

// Skips unless the tree has ava.ko and `ava vmhost`: both are part of this
// tree once kmod/ exists, so a missing piece is a build problem, not a skip.
void require_kmod() {
  vmtest::require_vm();
  const auto env = vm_image_env();
  auto it = env.find("AVA_VM_HAVE_KMOD");
  cr_assert(it != env.end() && it->second == "1",
            "the guest image has no ava.ko (is kmod/ in this tree? see the vm_image test)");
}

pid_t vmhost_child_pid(const VmShm &shm, unsigned slot) {
  return static_cast<pid_t>(shm.slot(slot).worker_pid);
}

} // namespace

Test(vm_kmod, opencl_and_clinfo_over_dev_ava, .timeout = 1200) {
  require_kmod();
  const std::string dir = make_temp_dir();
  VmHost host(dir, kSlots, {}, ocl::child_env());
  cr_assert(host.ready(), "ava vmhost did not start:\n%s", host.output().c_str());

  std::vector<std::pair<std::string, std::vector<std::string>>> programs = {
      {"kmod.clinfo", {CLINFO}},
      {"kmod.clinfo-l", {CLINFO, "-l"}},
      {"kmod.clinfo-raw", {CLINFO, "--raw"}}};
  for (const std::string &name : vmtest::ocl_programs())
    programs.push_back({"kmod." + name, {std::string(OCL_DIR) + "/ocl_" + name}});
  std::string job = kmod_env();
  for (const auto &[check, argv] : programs)
    job += vmtest::check_line(check, kCheckLimitS, argv);
  VmSession vm("kmod-opencl", job, host.vm_args());
  std::vector<ProcResult> native;
  for (const auto &p : programs)
    native.push_back(vmtest::native(p.second));

  const int rc = vm.wait();
  const VmResults r = vm.results();
  for (size_t i = 0; i < programs.size(); ++i) {
    if (programs[i].first.starts_with("kmod.clinfo"))
      vmtest::expect_clinfo_same_as_native(r, programs[i].first, native[i]);
    else
      vmtest::expect_same_as_native(r, programs[i].first, native[i]);
  }
  vmtest::expect_remoted(host.report("opencl", programs.size()), "opencl", programs.size(),
                         "kmod: a slot worker per program");
  vmtest::expect_clean_run(vm, rc);
}

namespace {

std::string faults_job() {
  const std::string probe = sh_quote(SLOT_PROBE), demo = sh_quote(DEMO_PROBE);
  const std::string sleep = std::to_string(kSleepMs), limit = std::to_string(kErrorWithinS);
  std::string job = kmod_env();
  // Three processes at once, each on its own slot.
  job += "for i in 1 2 3; do ava_start multi.$i 240 " + demo +
         " sleep 3000; done\n"
         "ava_wait_for 600 sh -c 'grep -q ready multi.1.out && grep -q ready multi.2.out && "
         "grep -q ready multi.3.out'\n";
  job += "ava_check multi.avactl 30 avactl slots\n";
  job += "ava_sync multi\n"
         "for i in 1 2 3; do ava_finish multi.$i; done\n";
  // mmap: this slot and nothing beyond it.
  job += "ava_check mmap 60 " + probe + "\n";
  // A guest process killed mid-call.
  job += "ava_start gkill 240 " + demo + " sleep " + std::to_string(kKilledSleepMs) +
         "\n"
         "ava_wait_for 600 grep -q ready gkill.out\n"
         "ava_sync gkill.before\n"
         "kill -9 $(cat gkill.pid)\n"
         "ava_finish gkill\n"
         "ava_sync gkill.after\n";
  job += "ava_check gkill.avactl 30 avactl slots\n";
  // The host's worker killed mid-call: the call must fail, not hang.
  job += "ava_start wkill " + limit + " " + demo + " sleep " + sleep +
         "\n"
         "ava_wait_for 600 grep -q ready wkill.out\n"
         "ava_sync wkill\n"
         "ava_finish wkill\n";
  // Garbage in a slot's reply ring.
  job += "ava_start garbage " + limit + " " + demo + " sleep " + sleep +
         "\n"
         "ava_wait_for 600 grep -q ready garbage.out\n"
         "ava_sync garbage\n"
         "ava_finish garbage\n";
  // After all that, a fresh process still gets a working slot.
  job += "ava_check after 120 " + demo + " bad-handles\n";
  // rmmod is refused while a slot is open, and works once it is closed.
  job += "ava_start holder 120 " + probe +
         " /dev/ava hold 60\n"
         "ava_wait_for 600 grep -q holding holder.out\n"
         "ava_check rmmod.busy 30 rmmod ava\n"
         "kill $(cat holder.pid)\n"
         "ava_finish holder\n"
         "ava_check rmmod.idle 30 rmmod ava\n";
  return job;
}

// Waits for the guest's `ava_sync name`; false (and a failed expectation) if
// it never comes.
bool at_sync(VmSession &vm, const char *name) {
  const bool reached = vm.wait_for_sync(name, kSyncTimeoutMs);
  cr_expect(reached, "the guest never reached '%s' (logs in %s)", name, vm.dir().c_str());
  return reached;
}

} // namespace

Test(vm_kmod, slots_and_faults, .timeout = 1200) {
  require_kmod();
  vmtest::require_avactl();
  const std::string dir = make_temp_dir();
  VmHost host(dir, kSlots, {}, ocl::child_env());
  cr_assert(host.ready(), "ava vmhost did not start:\n%s", host.output().c_str());
  VmShm shm(host.shm_path());
  cr_assert(shm.ok(), "cannot read the VM's shared memory: %s", shm.error().c_str());
  VmSession vm("kmod-faults", faults_job(), host.vm_args());
  const ProcResult sleeper_native = vmtest::native({DEMO_PROBE, "sleep", "3000"});
  const ProcResult bad_handles_native = vmtest::native({DEMO_PROBE, "bad-handles"});

  // Three processes at once: three slots served, by three workers.
  if (at_sync(vm, "multi")) {
    const std::vector<unsigned> serving = shm.serving_slots();
    std::set<unsigned> guests, workers;
    for (unsigned s : serving) {
      guests.insert(shm.slot(s).guest_pid);
      workers.insert(shm.slot(s).worker_pid);
    }
    cr_expect(serving.size() == 3 && guests.size() == 3 && workers.size() == 3,
              "3 guest processes at once: %zu slots serving, %zu guest pids, %zu workers",
              serving.size(), guests.size(), workers.size());
    vm.release_sync();
  }
  // A guest process killed mid-call: its slot and its worker go.
  pid_t worker = 0;
  unsigned slot = 0;
  if (at_sync(vm, "gkill.before")) {
    const std::vector<unsigned> serving = shm.serving_slots();
    cr_expect_eq(serving.size(), 1u, "one sleeping guest process: %zu slots serving",
                 serving.size());
    if (!serving.empty()) {
      slot = serving[0];
      worker = vmhost_child_pid(shm, slot);
    }
    vm.release_sync();
  }
  if (at_sync(vm, "gkill.after")) {
    const bool freed = eventually(kFreedWithinMs, [&] {
      const ava_slot_entry e = shm.slot(slot);
      return e.host_state == AVA_SLOT_IDLE && e.guest_state != AVA_SLOT_CLAIMED &&
             process_gone(worker);
    });
    const ava_slot_entry e = shm.slot(slot);
    cr_expect(freed,
              "slot %u after its guest process was killed: guest state %u, host state %u, "
              "worker %d %s",
              slot, e.guest_state, e.host_state, worker, process_gone(worker) ? "gone" : "alive");
    vm.release_sync();
  }
  // The host's worker killed mid-call.
  if (at_sync(vm, "wkill")) {
    const std::vector<unsigned> serving = shm.serving_slots();
    cr_expect_eq(serving.size(), 1u, "one sleeping guest process: %zu slots serving",
                 serving.size());
    if (!serving.empty())
      cr_expect_eq(kill(vmhost_child_pid(shm, serving[0]), SIGKILL), 0,
                   "killing worker %d of slot %u", vmhost_child_pid(shm, serving[0]), serving[0]);
    vm.release_sync();
  }
  // Garbage in the sleeping call's reply ring.
  if (at_sync(vm, "garbage")) {
    const std::vector<unsigned> serving = shm.serving_slots();
    cr_expect_eq(serving.size(), 1u, "one sleeping guest process: %zu slots serving",
                 serving.size());
    if (!serving.empty())
      shm.scribble_reply_ring(serving[0]);
    vm.release_sync();
  }

  const int rc = vm.wait();
  const VmResults r = vm.results();
  for (const char *name : {"multi.1", "multi.2", "multi.3"})
    vmtest::expect_same_as_native(r, name, sleeper_native);
  if (const VmCheck *c = check_result(r, "mmap"))
    cr_expect(c->rc == 0, "[mmap] a process could map beyond its slot (exit %d):\n%s%s", c->rc,
              c->out.c_str(), c->err.c_str());
  if (const VmCheck *c = check_result(r, "gkill"))
    cr_expect_eq(c->rc, 128 + SIGKILL, "[gkill] the sleeper should have died of SIGKILL: %d",
                 c->rc);
  for (const char *name : {"wkill", "garbage"}) {
    if (const VmCheck *c = check_result(r, name)) {
      cr_expect(c->rc != 124, "[%s] the guest call did not return within %d s:\n%s%s", name,
                kErrorWithinS, c->out.c_str(), c->err.c_str());
      cr_expect(c->out.find("sleep: 0\n") == std::string::npos,
                "[%s] the interrupted call reported success:\n%s", name, c->out.c_str());
      cr_expect(c->err.find("ava: lost connection") != std::string::npos,
                "[%s] the guest library reported no lost connection:\n%s", name, c->err.c_str());
    }
  }
  vmtest::expect_same_as_native(r, "after", bad_handles_native);
  // multi.1-3 and after, whose outputs were compared, ran on slot workers
  // (the killed ones may leave no report).
  vmtest::expect_remoted(host.report("demo", 4), "demo", 4, "faults: multi.1-3, after");
  if (const VmCheck *c = check_result(r, "rmmod.busy"))
    cr_expect(c->rc != 0, "[rmmod] rmmod ava succeeded while a slot was open");
  if (const VmCheck *c = check_result(r, "rmmod.idle"))
    cr_expect_eq(c->rc, 0, "[rmmod] rmmod ava failed after the slot was closed:\n%s",
                 c->err.c_str());
  for (const char *name : {"multi.avactl", "gkill.avactl"})
    if (const VmCheck *c = check_result(r, name))
      cr_expect_eq(c->rc, 0, "[%s] avactl slots failed (%d):\n%s%s", name, c->rc, c->out.c_str(),
                   c->err.c_str());
  cr_expect(!process_gone(host.pid()), "ava vmhost died during the faults");
  vmtest::expect_clean_run(vm, rc);
}

// A guest process sends calls the demo spec's command table forbids through
// its /dev/ava slot while another process holds a second slot: each bad call
// is refused by the host with the table's status and counted in the slot's
// errors (what `avactl stats` shows), and the other process is unaffected.
Test(vm_kmod, command_table_policing_of_a_guest_slot, .timeout = 1200) {
  require_kmod();
  const std::string dir = make_temp_dir();
  VmHost host(dir, kSlots, {}, ocl::child_env());
  cr_assert(host.ready(), "ava vmhost did not start:\n%s", host.output().c_str());
  VmShm shm(host.shm_path());
  cr_assert(shm.ok(), "cannot read the VM's shared memory: %s", shm.error().c_str());
  vmtest::require_avactl();
  const std::string demo = sh_quote(DEMO_PROBE);
  std::string job = kmod_env();
  job += "ava_start held 240 " + demo +
         " sleep 3000\n"
         "ava_wait_for 600 grep -q ready held.out\n";
  // What netlink shows a user without CAP_NET_ADMIN: only the slots its own
  // processes hold (none of root's held one), and no device-wide counters.
  const std::string run_as = sh_quote(RUN_AS), avactl = "/bin/avactl";
  job += "chmod 666 /dev/ava\n";
  job += "ava_start user.held 240 " + run_as + " 65534 " + demo +
         " sleep 3000\n"
         "ava_wait_for 600 grep -q ready user.held.out\n";
  job += vmtest::check_line("nl.user.slots", 30, {RUN_AS, "65534", avactl, "slots"});
  job += vmtest::check_line("nl.user.device", 30, {RUN_AS, "65534", avactl, "device"});
  job += vmtest::check_line("nl.other.slots", 30, {RUN_AS, "1000", avactl, "slots"});
  job += "ava_check nl.root.slots 30 avactl slots\n";
  job += "ava_finish user.held\n";
  // After the user's slot is free again: kmod_raw's claim keeps its counters.
  job += vmtest::check_line("policing", kCheckLimitS, {KMOD_RAW});
  job += "ava_check policing.stats 30 avactl stats\n";
  job += "ava_finish held\n";
  VmSession vm("kmod-policing", job, host.vm_args());
  const ProcResult held_native = vmtest::native({DEMO_PROBE, "sleep", "3000"});
  const int rc = vm.wait();
  const VmResults r = vm.results();
  if (const VmCheck *c = check_result(r, "policing"))
    cr_expect_eq(c->rc, 0, "[policing] a bad call was not refused as the table says:\n%s%s",
                 c->out.c_str(), c->err.c_str());
  vmtest::expect_same_as_native(r, "held", held_native);
  vmtest::expect_same_as_native(r, "user.held", held_native);
  vmtest::expect_remoted(host.report("demo", 2), "demo", 2, "held, user.held");
  // Slot rows of `avactl slots` (the lines after its header).
  auto rows = [](const std::string &out) {
    std::vector<std::string> lines = ocl::split_lines(out);
    if (!lines.empty())
      lines.erase(lines.begin());
    return lines;
  };
  if (const VmCheck *c = check_result(r, "nl.user.slots")) {
    const std::vector<std::string> seen = rows(c->out);
    cr_expect(c->rc == 0 && seen.size() == 1 && seen[0].find(" claimed ") != std::string::npos,
              "[nl.user.slots] user 65534 should see exactly its own held slot:\n%s%s",
              c->out.c_str(), c->err.c_str());
  }
  if (const VmCheck *c = check_result(r, "nl.other.slots"))
    cr_expect(c->rc == 0 && rows(c->out).empty(),
              "[nl.other.slots] user 1000 sees slots of other users:\n%s%s", c->out.c_str(),
              c->err.c_str());
  if (const VmCheck *c = check_result(r, "nl.user.device"))
    cr_expect(c->rc != 0, "[nl.user.device] an unprivileged user read the device's counters:\n%s",
              c->out.c_str());
  if (const VmCheck *c = check_result(r, "nl.root.slots"))
    cr_expect(c->rc == 0 && rows(c->out).size() == kSlots,
              "[nl.root.slots] root should see every slot:\n%s%s", c->out.c_str(), c->err.c_str());
  // The slot kmod_raw used keeps its counters until the next claim.
  bool counted = false;
  for (unsigned i = 0; i < kSlots; ++i)
    counted |= shm.slot(i).errors == 3;
  cr_expect(counted, "no slot counted the 3 refused calls");
  if (const VmCheck *c = check_result(r, "policing.stats"))
    cr_expect(c->rc == 0 && c->out.find("errors      3 (host)") != std::string::npos,
              "[policing] avactl stats does not show the 3 refusals:\n%s%s", c->out.c_str(),
              c->err.c_str());
  vmtest::expect_clean_run(vm, rc);
}

// A claim starts from a zeroed slot (ava.ko clears rings and heap before the
// claimant can map it). A guest process first fills its slot's heap and
// exits; then, while every slot is idle, the host test plants a pattern in
// all of them past the region header, as a host that did not scrub a
// released slot (or the memory of an earlier VM) would leave it: vmhost's
// own scrub ran before that, so only ava.ko's zeroing at claim stands
// between the pattern and the next claimant. One process then claims every
// slot and finds each reading zero everywhere it maps past the header.
Test(vm_kmod, claim_zeroes_the_slot, .timeout = 1200) {
  require_kmod();
  const std::string dir = make_temp_dir();
  VmHost host(dir, kSlots, {"demo"}, {});
  cr_assert(host.ready(), "ava vmhost did not start:\n%s", host.output().c_str());
  VmShm shm(host.shm_path());
  cr_assert(shm.ok(), "cannot read the VM's shared memory: %s", shm.error().c_str());
  const std::string probe = sh_quote(SLOT_PROBE);
  std::string job = kmod_env();
  job += "ava_check fill 60 " + probe + " /dev/ava fill 165\n";
  job += "ava_sync planted\n";
  job += "ava_check zeroes 120 " + probe + " /dev/ava zeroes " + std::to_string(kSlots) + "\n";
  VmSession vm("kmod-zeroes", job, host.vm_args());

  if (at_sync(vm, "planted")) {
    // the fill process's slot is released and scrubbed by vmhost first
    const bool idle = eventually(kFreedWithinMs, [&] {
      for (unsigned i = 0; i < shm.nslots(); ++i) {
        const ava_slot_entry e = shm.slot(i);
        if (e.host_state != AVA_SLOT_IDLE || e.guest_state == AVA_SLOT_CLAIMED || e.worker_pid != 0)
          return false;
      }
      return true;
    });
    cr_expect(idle, "the slots did not all become idle after the fill process");
    for (unsigned i = 0; i < shm.nslots(); ++i)
      shm.fill_slot(i, 0x5a);
    vm.release_sync();
  }
  const int rc = vm.wait();
  const VmResults r = vm.results();
  expect_ok(r, "fill");
  if (const VmCheck *c = check_result(r, "zeroes")) {
    cr_expect(c->rc == 0, "[zeroes] a claimant found an earlier claim's bytes (exit %d):\n%s%s",
              c->rc, c->out.c_str(), c->err.c_str());
    size_t zero = 0;
    for (size_t at = c->out.find(": zero\n"); at != std::string::npos;
         at = c->out.find(": zero\n", at + 1))
      ++zero;
    cr_expect_eq(zero, static_cast<size_t>(kSlots), "[zeroes] %zu of %d slots read zero:\n%s", zero,
                 kSlots, c->out.c_str());
  }
  vmtest::expect_clean_run(vm, rc);
}
