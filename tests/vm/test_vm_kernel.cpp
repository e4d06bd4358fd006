// SPDX-License-Identifier: MIT
// Kernel-mode calls: in the guest, the test module ava_demo_test.ko calls the
// demo API through ava_demo.ko (cava's kernel backend) and ava.ko's kernel
// connection to a worker that `ava vmhost --spec demo` starts on the host.
// One boot: the module's own checks pass (its PASS line), ava.ko cannot be
// unloaded under a connection, the slot shows as held by "kernel", and after
// `rmmod ava_demo_test ava_demo` the slot is IDLE again and its worker gone.
// Then a kernel call in flight loses its worker (killed; garbage in the
// reply ring) or its caller (insmod killed): the call fails with the API's
// error value well before it would have ended, and unloading still frees
// the slot and ends the worker. Another boot unbinds the PCI device under a
// waiting kernel caller and a waiting process, and binds it again.
#include <criterion/criterion.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "vm_checks.hpp"
#include "vm_host.hpp"
#include "vm_session.hpp"
#include "vm_shm.hpp"

namespace {

using vmtest::check_result;
using vmtest::expect_ok;

constexpr int kSlots = 2;
constexpr int kSyncTimeoutMs = 300000;
constexpr int kFreedWithinMs = 15000;
constexpr const char *kModDir = "/lib/modules/ava-vm/";
// The faulted call would sleep this long; it must fail within kErrorWithinS.
constexpr int kFaultSleepMs = 50000;
constexpr int kErrorWithinS = 30;
// wkill: the host kills the worker; garbage: the host scribbles on the reply
// ring; gkill: the guest kills the calling insmod (SIGKILL).
const char *const kFaults[] = {"wkill", "garbage", "gkill"};

std::string kernel_job() {
  const std::string dir = kModDir;
  std::string job = "insmod " + dir + "ava.ko || echo 'ava.ko did not load'\n";
  job += "ava_check load.demo 120 insmod " + dir + "ava_demo.ko\n";
  job += "ava_check load.test 600 insmod " + dir + "ava_demo_test.ko\n";
  job += "ava_check slots 30 avactl slots\n";
  job += "ava_check rmmod.busy 30 rmmod ava\n"
         "ava_sync loaded\n"
         "ava_check unload 120 rmmod ava_demo_test ava_demo\n"
         "ava_sync unloaded\n";
  int n = 0;
  for (const std::string f : kFaults) {
    ++n;
    job += "ava_check load.demo." + f + " 120 insmod " + dir + "ava_demo.ko\n";
    job += "ava_start fault." + f + " " + std::to_string(kErrorWithinS) + " insmod " + dir +
           "ava_demo_test.ko fault_sleep_ms=" + std::to_string(kFaultSleepMs) + "\n";
    job += "ava_wait_for 600 sh -c '[ $(dmesg | grep -c \"fault: calling\") -ge " +
           std::to_string(n) + " ]'\n";
    job += "sleep 1\nava_sync fault." + f + "\n";
    if (f == "gkill")
      job += "kill -9 $(cat fault.gkill.pid)\n";
    job += "ava_finish fault." + f + "\n";
    job += "ava_check unload." + f + " 120 rmmod ava_demo_test ava_demo\n";
    job += "ava_sync after." + f + "\n";
  }
  job += "ava_check rmmod.idle 30 rmmod ava\n";
  return job;
}

// The guest released the slot: the host shows it IDLE and its worker is gone.
void expect_freed(const VmShm &shm, unsigned slot, pid_t worker, const char *after) {
  const bool freed = eventually(kFreedWithinMs, [&] {
    const ava_slot_entry e = shm.slot(slot);
    return e.host_state == AVA_SLOT_IDLE && e.guest_state != AVA_SLOT_CLAIMED &&
           process_gone(worker);
  });
  const ava_slot_entry e = shm.slot(slot);
  cr_expect(freed, "slot %u after %s: guest state %u, host state %u, worker %d %s", slot, after,
            e.guest_state, e.host_state, worker, process_gone(worker) ? "gone" : "alive");
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

} // namespace

Test(vm_kernel, demo_from_kernel_space, .timeout = 1200) {
  vmtest::require_vm();
  auto env = vm_image_env();
  cr_assert(env["AVA_VM_HAVE_KMOD"] == "1", "the guest image has no ava.ko (see vm_image)");
  const std::set<std::string> extra = vmtest::image_modules(env);
  cr_assert(extra.count("ava_demo_test") && extra.count("ava_demo"),
            "the guest image lacks ava_demo.ko or ava_demo_test.ko (AVA_VM_EXTRA_KO=%s): build "
            "the vm_kernel_modules target before the vm_image test",
            env["AVA_VM_EXTRA_KO"].c_str());
  vmtest::require_avactl();
  const std::string dir = make_temp_dir();
  VmHost host(dir, kSlots, {"demo"}, {});
  cr_assert(host.ready(), "ava vmhost did not start:\n%s", host.output().c_str());
  VmShm shm(host.shm_path());
  cr_assert(shm.ok(), "cannot read the VM's shared memory: %s", shm.error().c_str());
  VmSession vm("kernel-demo", kernel_job(), host.vm_args());

  unsigned slot = 0;
  pid_t worker = 0;
  bool loaded = vm.wait_for_sync("loaded", kSyncTimeoutMs);
  cr_expect(loaded, "the guest never reached 'loaded' (logs in %s)", vm.dir().c_str());
  if (loaded) {
    const std::vector<unsigned> serving = shm.serving_slots();
    cr_expect_eq(serving.size(), 1u, "ava_demo.ko's connection: %zu slots serving", serving.size());
    if (!serving.empty()) {
      slot = serving[0];
      worker = static_cast<pid_t>(shm.slot(slot).worker_pid);
      cr_expect_eq(shm.slot(slot).guest_pid, 0u, "a kernel-owned slot shows guest pid %u",
                   shm.slot(slot).guest_pid);
      cr_expect(!process_gone(worker), "the slot's worker %d is not running", worker);
    }
    vm.release_sync();
  }
  bool unloaded = vm.wait_for_sync("unloaded", kSyncTimeoutMs);
  cr_expect(unloaded, "the guest never reached 'unloaded' (logs in %s)", vm.dir().c_str());
  if (unloaded) {
    expect_freed(shm, slot, worker, "rmmod ava_demo_test ava_demo");
    vm.release_sync();
  }
  for (const std::string f : kFaults) {
    const bool at_fault = vm.wait_for_sync("fault." + f, kSyncTimeoutMs);
    cr_expect(at_fault, "the guest never reached 'fault.%s' (logs in %s)", f.c_str(),
              vm.dir().c_str());
    if (!at_fault)
      break;
    const std::vector<unsigned> serving = shm.serving_slots();
    cr_expect_eq(serving.size(), 1u, "[%s] %zu slots serving", f.c_str(), serving.size());
    if (!serving.empty()) {
      slot = serving[0];
      worker = static_cast<pid_t>(shm.slot(slot).worker_pid);
      if (f == "wkill")
        cr_expect_eq(kill(worker, SIGKILL), 0, "killing worker %d", worker);
      else if (f == "garbage")
        shm.scribble_reply_ring(slot);
    }
    vm.release_sync();
    const bool after = vm.wait_for_sync("after." + f, kSyncTimeoutMs);
    cr_expect(after, "the guest never reached 'after.%s'", f.c_str());
    if (!after)
      break;
    expect_freed(shm, slot, worker, ("the " + f + " fault and rmmod").c_str());
    vm.release_sync();
  }

  const int rc = vm.wait();
  const VmResults r = vm.results();
  expect_ok(r, "load.demo");
  expect_ok(r, "load.test");
  expect_ok(r, "unload");
  expect_ok(r, "rmmod.idle");
  if (const VmCheck *c = check_result(r, "rmmod.busy"))
    cr_expect(c->rc != 0, "[rmmod.busy] rmmod ava succeeded under a kernel connection");
  if (const VmCheck *c = check_result(r, "slots"))
    cr_expect(c->out.find(" kernel ") != std::string::npos,
              "[slots] avactl does not show the slot held by the kernel:\n%s", c->out.c_str());
  const std::string klog = vm.kernel_log();
  cr_expect(klog.find("ava_demo_test: PASS ") != std::string::npos &&
                klog.find("ava_demo_test: FAIL") == std::string::npos,
            "the test module did not pass (logs in %s):\n%s", vm.dir().c_str(), klog.c_str());
  cr_expect(klog.find("ava_demo_test: exit: released the kept object (0)") != std::string::npos,
            "the test module did not release its object at exit");
  for (const std::string f : kFaults) {
    // a killed insmod dies of SIGKILL; the others return (not 124: their time limit)
    const int want = f == "gkill" ? 128 + SIGKILL : 0;
    if (const VmCheck *c = check_result(r, ("fault." + f).c_str()))
      cr_expect_eq(c->rc, want, "[fault.%s] insmod exit %d, want %d (within %d s)", f.c_str(),
                   c->rc, want, kErrorWithinS);
    expect_ok(r, ("load.demo." + f).c_str());
    expect_ok(r, ("unload." + f).c_str());
  }
  // DEMO_ERR_TRANSPORT (-5): the call could not complete
  cr_expect_eq(count(klog, "ava_demo_test: fault: sleep_ms = -5,"), std::size(kFaults),
               "the faulted calls did not all fail with DEMO_ERR_TRANSPORT:\n%s", klog.c_str());
  vmtest::expect_clean_run(vm, rc);
}

namespace {

// The unbind test's limits: its waiters would otherwise sleep kFaultSleepMs
// (the kernel call) and 60 s (AVA_IOC_WAIT).
constexpr int kUnbindSlots = 3;
constexpr int kPromptMs = 15000;

std::string unbind_job() {
  const std::string dir = kModDir, probe = sh_quote(SLOT_PROBE);
  const std::string drv = "/sys/bus/pci/drivers/ava";
  std::string job = "insmod " + dir + "ava.ko || echo 'ava.ko did not load'\n";
  job += "ava_check load.demo 120 insmod " + dir + "ava_demo.ko\n";
  // A kernel caller inside a call, and a process asleep in AVA_IOC_WAIT.
  job += "ava_start kcall " + std::to_string(kErrorWithinS) + " insmod " + dir +
         "ava_demo_test.ko fault_sleep_ms=" + std::to_string(kFaultSleepMs) + "\n";
  job += "ava_wait_for 600 sh -c 'dmesg | grep -q \"fault: calling\"'\n";
  job += "ava_start uwait " + std::to_string(kErrorWithinS) + " " + probe + " /dev/ava wait\n";
  job += "ava_wait_for 600 grep -q waiting uwait.out\n";
  job += "sleep 1\n";
  job += "pci=$(basename $(readlink -f " + drv + "/0000:*))\n";
  job += "ava_check unbind 30 sh -c \"echo $pci > " + drv + "/unbind\"\n";
  job += "ava_finish kcall\nava_finish uwait\n";
  job += "ava_check gone 10 sh -c '! test -e /dev/ava'\n";
  job += "ava_check unload 120 rmmod ava_demo_test ava_demo\n";
  // Bound again: a working device for processes and kernel callers, once
  // the host has recycled the slots the probe released.
  const std::string idle = "ava_wait_for 600 sh -c '[ $(avactl slots | grep -c \" idle \") -ge " +
                           std::to_string(kUnbindSlots) + " ]'\n";
  job += "ava_check bind 30 sh -c \"echo $pci > " + drv + "/bind\"\n";
  job += idle;
  job += "ava_check probe.again 60 " + probe + " /dev/ava\n";
  job += idle;
  job += "ava_check load.demo.again 120 insmod " + dir + "ava_demo.ko\n";
  job += "ava_check load.test.again 600 insmod " + dir + "ava_demo_test.ko\n";
  job += "ava_check unload.again 120 rmmod ava_demo_test ava_demo\n";
  job += "ava_check rmmod 30 rmmod ava\n";
  return job;
}

} // namespace

// Unbinding the PCI device through sysfs while a kernel connection's caller
// waits for a reply and a process sleeps in AVA_IOC_WAIT: both fail
// promptly with ENODEV (the kernel call as DEMO_ERR_TRANSPORT), the kernel
// logs no bug, and after binding again processes and kernel modules work.
Test(vm_kernel, unbind_fails_waiters_and_rebinds, .timeout = 1200) {
  vmtest::require_vm();
  auto env = vm_image_env();
  cr_assert(env["AVA_VM_HAVE_KMOD"] == "1", "the guest image has no ava.ko (see vm_image)");
  const std::set<std::string> extra = vmtest::image_modules(env);
  cr_assert(extra.count("ava_demo_test") && extra.count("ava_demo"),
            "the guest image lacks ava_demo.ko or ava_demo_test.ko (AVA_VM_EXTRA_KO=%s)",
            env["AVA_VM_EXTRA_KO"].c_str());
  vmtest::require_avactl();
  const std::string dir = make_temp_dir();
  VmHost host(dir, kUnbindSlots, {"demo"}, {});
  cr_assert(host.ready(), "ava vmhost did not start:\n%s", host.output().c_str());
  VmSession vm("kernel-unbind", unbind_job(), host.vm_args());
  const int rc = vm.wait();
  const VmResults r = vm.results();
  for (const char *name : {"load.demo", "unbind", "gone", "unload", "bind", "probe.again",
                           "load.demo.again", "load.test.again", "unload.again", "rmmod"})
    expect_ok(r, name);
  if (const VmCheck *c = check_result(r, "kcall"))
    cr_expect_eq(c->rc, 0, "[kcall] the kernel caller did not return within %d s (exit %d)",
                 kErrorWithinS, c->rc);
  if (const VmCheck *c = check_result(r, "uwait")) {
    cr_expect_eq(c->rc, 0, "[uwait] the waiting process did not see ENODEV everywhere:\n%s%s",
                 c->out.c_str(), c->err.c_str());
    const size_t at = c->out.find("wait: ENODEV after ");
    const int ms = at == std::string::npos ? -1 : std::atoi(c->out.c_str() + at + 19);
    cr_expect(ms >= 0 && ms < kPromptMs, "[uwait] AVA_IOC_WAIT did not fail promptly:\n%s",
              c->out.c_str());
  }
  const std::string klog = vm.kernel_log();
  cr_expect_eq(count(klog, "ava_demo_test: fault: sleep_ms = -5,"), 1u,
               "the kernel call did not fail with DEMO_ERR_TRANSPORT on unbind:\n%s", klog.c_str());
  cr_expect(klog.find("ava_demo_test: PASS ") != std::string::npos &&
                klog.find("ava_demo_test: FAIL") == std::string::npos,
            "after binding again the test module did not pass (logs in %s)", vm.dir().c_str());
  vmtest::expect_clean_run(vm, rc);
}
