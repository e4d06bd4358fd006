// SPDX-License-Identifier: MIT
// Policed /dev/ava slots (include/ava/ivshmem.h): with `insmod ava.ko police=1`
// (or `avactl policy all police on`), ava.ko in the guest checks every command of a process against
// the spec's command table (registered by ava_demo.ko and ava_opencl.ko) before it reaches the
// host. In one boot:
//   - kmod_raw's forbidden calls (unknown id, lying size, forbidden buffer
//     direction) get the table's statuses, yet the host counts no error on
//     that slot: none of them left the guest; avactl stats counts them;
//   - police_probe: AVA_IOC_SUBMIT message by message (mappings, framing,
//     every refusal status, faults, messages larger than the ring, a fault
//     that cuts one short), and a claim without the policy; kmod_raw
//     --unknown-spec: the library's channel names the missing module;
//   - a demo program on another slot and OpenCL programs (buffers, kernel
//     arguments, callbacks, four threads with async enqueues) run through
//     policed slots with their native output;
//   - the host's device-memory quota still refuses an allocation over it,
//     demo objects and OpenCL buffers alike (tests/vm/guest/ocl_quota.c).
#include <criterion/criterion.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ocl_run.hpp"
#include "vm_checks.hpp"
#include "vm_host.hpp"
#include "vm_session.hpp"

namespace {

using vmtest::check_result;
using vmtest::expect_ok;

constexpr int kSlots = 6; // two kernel connections, a held demo, one or two probes
constexpr int kCheckLimitS = 300;
constexpr const char *kModDir = "/lib/modules/ava-vm/";
// The held demo's call must outlive the probes before `stats.after` (about
// 3 s under TCG on an idle machine, each claim zeroing its slot): a 3 s call
// was not always still running there.
constexpr const char *kHeldSleepMs = "20000";
const char *const kOclPrograms[] = {"buffer", "kernel_args", "callbacks", "threads_many_queues"};

// The "slot N:" blocks of `avactl stats` that contain needle.
std::vector<std::string> slot_blocks(const std::string &stats, const std::string &needle) {
  std::vector<std::string> blocks;
  std::istringstream in(stats);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("slot ", 0) == 0 || blocks.empty())
      blocks.emplace_back();
    blocks.back() += line + "\n";
  }
  std::erase_if(blocks, [&](const std::string &b) { return b.find(needle) == std::string::npos; });
  return blocks;
}

std::string policed_job() {
  const std::string dir = kModDir;
  // police=1: every slot policed from the start (avactl turns it off below).
  std::string job = "insmod " + dir + "ava.ko police=1 || echo 'ava.ko did not load'\n";
  job += "ava_check load.demo 120 insmod " + dir + "ava_demo.ko\n";
  job += "ava_check load.opencl 120 insmod " + dir + "ava_opencl.ko\n";
  job += "ava_check police 30 avactl policy 0\n";
  job += "export LD_LIBRARY_PATH=" + sh_quote(AVA_GUEST_LIB_DIR) + " AVA_WORKER=kmod:/dev/ava\n";
  job += "ava_start held 240 " + sh_quote(DEMO_PROBE) + " sleep " + kHeldSleepMs +
         "\n"
         "ava_wait_for 600 grep -q ready held.out\n";
  job += vmtest::check_line("policed", kCheckLimitS, {KMOD_RAW});
  // ava.ko's refusal counts are per slot and outlive the claim: before the
  // probe may take the same slot.
  job += "ava_check stats 30 avactl stats\n";
  job += vmtest::check_line("unknown", kCheckLimitS, {KMOD_RAW, "--unknown-spec"});
  for (const char *mode : {"checks", "big", "cut"})
    job += vmtest::check_line(std::string("probe.") + mode, kCheckLimitS, {POLICE_PROBE, mode});
  job += "ava_check stats.after 30 avactl slots\n";
  for (const char *p : kOclPrograms)
    job += vmtest::check_line(std::string("ocl.") + p, kCheckLimitS,
                              {std::string(OCL_DIR) + "/ocl_" + p});
  job += "ava_finish held\n";
  // The host's policies hold on policed slots too: a 2 MiB object in a
  // 1 MiB device-memory quota is refused there, and counted (the last
  // program's slot keeps its counters for avactl stats).
  job += "ava_check quota.set 30 avactl policy all mem-quota 1048576\n";
  job += vmtest::check_line("quota", kCheckLimitS, {DEMO_PROBE, "big", "2"});
  job += vmtest::check_line("quota.opencl", kCheckLimitS, {OCL_QUOTA});
  job += "ava_check quota.stats 30 avactl stats\n";
  // Without the policy, claims map their whole slot and may not submit.
  job += "ava_check police.off 30 avactl policy all police off\n";
  job += vmtest::check_line("probe.plain", kCheckLimitS, {POLICE_PROBE, "plain"});
  job += "ava_check unload 120 rmmod ava_opencl ava_demo\n";
  return job;
}

} // namespace

Test(vm_policed, the_guest_kernel_refuses_what_the_table_forbids, .timeout = 1800) {
  vmtest::require_vm();
  auto env = vm_image_env();
  cr_assert(env["AVA_VM_HAVE_KMOD"] == "1", "the guest image has no ava.ko (see vm_image)");
  cr_assert(env["AVA_VM_HAVE_AVACTL"] == "1", "the guest image has no avactl (see vm_image)");
  const std::set<std::string> extra = vmtest::image_modules(env);
  cr_assert(extra.count("ava_demo") && extra.count("ava_opencl"),
            "the guest image lacks ava_demo.ko or ava_opencl.ko (AVA_VM_EXTRA_KO=%s)",
            env["AVA_VM_EXTRA_KO"].c_str());
  const std::string dir = make_temp_dir();
  VmHost host(dir, kSlots, {}, ocl::child_env());
  cr_assert(host.ready(), "ava vmhost did not start:\n%s", host.output().c_str());
  VmSession vm("policed", policed_job(), host.vm_args());
  const ProcResult held_native = vmtest::native({DEMO_PROBE, "sleep", kHeldSleepMs});
  std::vector<ProcResult> ocl_native;
  for (const char *p : kOclPrograms)
    ocl_native.push_back(vmtest::native({std::string(OCL_DIR) + "/ocl_" + p}));

  const int rc = vm.wait();
  const VmResults r = vm.results();
  for (const char *name : {"load.demo", "load.opencl", "police", "police.off", "unload"})
    expect_ok(r, name);
  if (const VmCheck *c = check_result(r, "police"))
    cr_expect(c->out.find("  police         on\n") != std::string::npos,
              "[police] ava.ko police=1 left slot 0 unpoliced:\n%s", c->out.c_str());
  if (const VmCheck *c = check_result(r, "policed"))
    cr_expect_eq(c->rc, 0, "[policed] a bad call did not get the table's status:\n%s%s",
                 c->out.c_str(), c->err.c_str());
  for (const char *name : {"unknown", "probe.checks", "probe.big", "probe.cut", "probe.plain"})
    if (const VmCheck *c = check_result(r, name)) {
      cr_expect_eq(c->rc, 0, "[%s] exit %d:\n%s%s", name, c->rc, c->out.c_str(), c->err.c_str());
      cr_log_info("[%s]\n%s", name, c->out.c_str());
    }
  // Every refusal happened in the guest: the slot kmod_raw used shows 3
  // refused by ava.ko and no error on the host (counters last until the
  // slot's next claim).
  if (const VmCheck *c = check_result(r, "stats")) {
    const std::vector<std::string> blocks = slot_blocks(c->out, "refused     3 (");
    cr_expect(c->rc == 0 && blocks.size() == 1,
              "[stats] avactl stats does not show kmod_raw's 3 refusals in the guest:\n%s%s",
              c->out.c_str(), c->err.c_str());
    for (const std::string &b : blocks)
      cr_expect(b.find("errors      0 (host)") != std::string::npos,
                "[stats] the host saw kmod_raw's bad calls:\n%s", b.c_str());
    cr_log_info("avactl stats:\n%s", c->out.c_str());
  }
  if (const VmCheck *c = check_result(r, "quota")) {
    cr_expect(c->rc != 0 && c->out.find("create: 0") == std::string::npos &&
                  c->out.find("create: -") != std::string::npos,
              "[quota] a 2 MiB object was created in a 1 MiB quota:\n%s%s", c->out.c_str(),
              c->err.c_str());
  }
  expect_ok(r, "quota.set");
  expect_ok(r, "quota.opencl");
  if (const VmCheck *c = check_result(r, "quota.opencl"))
    cr_log_info("ocl_quota:\n%s%s", c->out.c_str(), c->err.c_str());
  if (const VmCheck *c = check_result(r, "quota.stats"))
    cr_expect(c->rc == 0 && !slot_blocks(c->out, "errors      3 (host)").empty(),
              "[quota.stats] no slot counts ocl_quota's 3 refused buffers:\n%s", c->out.c_str());
  // After the probes: their slots are released and none is broken; the held
  // demo program is the one process still holding a slot, policed, served.
  if (const VmCheck *c = check_result(r, "stats.after")) {
    std::istringstream rows(c->out);
    std::string line;
    std::getline(rows, line); // the header
    int processes = 0, broken = 0, held_ok = 0;
    for (; std::getline(rows, line);) {
      std::istringstream cols(line);
      std::string slot, guest, host, gen, pid, is_broken, policed;
      cols >> slot >> guest >> host >> gen >> pid >> is_broken >> policed;
      broken += is_broken == "yes";
      if (guest == "claimed" && pid != "kernel") {
        ++processes;
        held_ok += host == "serving" && policed == "yes";
      }
    }
    cr_expect(c->rc == 0 && processes == 1 && held_ok == 1 && broken == 0,
              "[stats.after] expected the held demo as the one policed, served process slot and "
              "no broken slot (%d process slots, %d broken):\n%s%s",
              processes, broken, c->out.c_str(), c->err.c_str());
  }
  vmtest::expect_same_as_native(r, "held", held_native);
  for (size_t i = 0; i < std::size(kOclPrograms); ++i)
    vmtest::expect_same_as_native(r, std::string("ocl.") + kOclPrograms[i], ocl_native[i]);
  vmtest::expect_remoted(host.report("demo", 1), "demo", 1, "held");
  vmtest::expect_remoted(host.report("opencl", std::size(kOclPrograms)), "opencl",
                         std::size(kOclPrograms), "ocl.*");
  vmtest::expect_clean_run(vm, rc);
}
