// SPDX-License-Identifier: MIT
// Kernel-mode OpenCL: in the guest, the test module ava_opencl_test.ko runs a
// vector add through ava_opencl.ko (cava's kernel backend of specs/opencl)
// and ava.ko's kernel connection to the OpenCL worker (PoCL) that
// `ava vmhost --spec opencl` starts on the host. The module checks every
// element and logs its PASS line; the guest kernel logs no bug; while loaded
// one slot is served, held by the kernel, and after
// `rmmod ava_opencl_test ava_opencl` that slot is IDLE again and its worker
// gone; then ava.ko itself unloads.
#include <criterion/criterion.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <sstream>
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

constexpr int kSlots = 2;
constexpr int kSyncTimeoutMs = 600000;
constexpr int kFreedWithinMs = 15000;
constexpr const char *kModDir = "/lib/modules/ava-vm/";

std::string kernel_job() {
  const std::string dir = kModDir;
  std::string job = "insmod " + dir + "ava.ko || echo 'ava.ko did not load'\n";
  job += "ava_check load.opencl 120 insmod " + dir + "ava_opencl.ko\n";
  // The host compiles the program with PoCL: slow under a loaded machine.
  job += "ava_check load.test 600 insmod " + dir + "ava_opencl_test.ko\n";
  job += "ava_check slots 30 avactl slots\n";
  job += "ava_sync loaded\n"
         "ava_check unload 120 rmmod ava_opencl_test ava_opencl\n"
         "ava_sync unloaded\n"
         "ava_check rmmod.idle 30 rmmod ava\n";
  return job;
}

} // namespace

Test(vm_kernel_opencl, vector_add_from_kernel_space, .timeout = 1200) {
  vmtest::require_vm();
  auto env = vm_image_env();
  cr_assert(env["AVA_VM_HAVE_KMOD"] == "1", "the guest image has no ava.ko (see vm_image)");
  const std::set<std::string> extra = vmtest::image_modules(env);
  cr_assert(extra.count("ava_opencl") && extra.count("ava_opencl_test"),
            "the guest image lacks ava_opencl.ko or ava_opencl_test.ko (AVA_VM_EXTRA_KO=%s): "
            "build the vm_kernel_opencl_modules target before the vm_image test",
            env["AVA_VM_EXTRA_KO"].c_str());
  vmtest::require_avactl();
  const std::string dir = make_temp_dir();
  VmHost host(dir, kSlots, {"opencl"}, ocl::child_env());
  cr_assert(host.ready(), "ava vmhost did not start:\n%s", host.output().c_str());
  VmShm shm(host.shm_path());
  cr_assert(shm.ok(), "cannot read the VM's shared memory: %s", shm.error().c_str());
  VmSession vm("kernel-opencl", kernel_job(), host.vm_args());

  unsigned slot = 0;
  pid_t worker = 0;
  const bool loaded = vm.wait_for_sync("loaded", kSyncTimeoutMs);
  cr_expect(loaded, "the guest never reached 'loaded' (logs in %s)", vm.dir().c_str());
  if (loaded) {
    const std::vector<unsigned> serving = shm.serving_slots();
    cr_expect_eq(serving.size(), 1u, "ava_opencl.ko's connection: %zu slots serving",
                 serving.size());
    if (!serving.empty()) {
      slot = serving[0];
      worker = static_cast<pid_t>(shm.slot(slot).worker_pid);
      cr_expect_eq(shm.slot(slot).guest_pid, 0u, "a kernel-owned slot shows guest pid %u",
                   shm.slot(slot).guest_pid);
      cr_expect(!process_gone(worker), "the slot's worker %d is not running", worker);
    }
    vm.release_sync();
  }
  const bool unloaded = vm.wait_for_sync("unloaded", kSyncTimeoutMs);
  cr_expect(unloaded, "the guest never reached 'unloaded' (logs in %s)", vm.dir().c_str());
  if (unloaded) {
    const bool freed = eventually(kFreedWithinMs, [&] {
      const ava_slot_entry e = shm.slot(slot);
      return e.host_state == AVA_SLOT_IDLE && e.guest_state != AVA_SLOT_CLAIMED &&
             process_gone(worker);
    });
    const ava_slot_entry e = shm.slot(slot);
    cr_expect(freed, "slot %u after rmmod: guest state %u, host state %u, worker %d %s", slot,
              e.guest_state, e.host_state, worker, process_gone(worker) ? "gone" : "alive");
    cr_expect(shm.serving_slots().empty(), "a slot is still served after rmmod");
    vm.release_sync();
  }

  const int rc = vm.wait();
  const VmResults r = vm.results();
  expect_ok(r, "load.opencl");
  expect_ok(r, "load.test");
  expect_ok(r, "unload");
  expect_ok(r, "rmmod.idle");
  if (const VmCheck *c = check_result(r, "slots"))
    cr_expect(c->out.find(" kernel ") != std::string::npos,
              "[slots] avactl does not show the slot held by the kernel:\n%s", c->out.c_str());
  const std::string klog = vm.kernel_log();
  std::istringstream lines(klog);
  for (std::string line; std::getline(lines, line);)
    if (line.find("ava_opencl") != std::string::npos)
      cr_log_info("guest: %s", line.c_str());
  cr_expect(klog.find("ava_opencl_test: PASS vector add of ") != std::string::npos &&
                klog.find("ava_opencl_test: FAIL") == std::string::npos,
            "the test module did not pass (logs in %s):\n%s", vm.dir().c_str(), klog.c_str());
  vmtest::expect_clean_run(vm, rc);
}
