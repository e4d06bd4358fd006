// SPDX-License-Identifier: MIT
// ava.ko under a randomised exerciser (tests/vm/guest/kmod_exerciser.c) in a
// guest booted with slub_debug=FZPU and panic_on_warn=1: processes and
// threads open, mmap, ioctl (every /dev/ava ioctl, random and boundary
// arguments), SUBMIT mutated messages to policed and plain claims (the demo
// spec's table registered by ava_demo.ko), send random netlink requests to
// both families and try to unload ava.ko while files are open; a second
// run, without ava_demo.ko, races unloads and reloads of ava.ko against all
// of that, and a third unbinds and binds the PCI device under it. The kernel must log no bug (a
// WARNING panics the guest), and ava.ko must unload cleanly at the end. AVA_EXERCISER_SEED repeats
// a run; AVA_EXERCISER_SECONDS=N makes the first run last N s (a longer hunt).
#include <criterion/criterion.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <string>

#include "vm_checks.hpp"
#include "vm_host.hpp"
#include "vm_session.hpp"

namespace {

using vmtest::check_result;
using vmtest::expect_ok;

constexpr int kSlots = 4;
// Test time: three runs of the exerciser, about two minutes together.
constexpr int kPoliceSeconds = 60;
constexpr int kReloadSeconds = 30;
constexpr int kUnbindSeconds = 30;
constexpr const char *kModDir = "/lib/modules/ava-vm/";
// Every wait in ava.ko ends within this: the exerciser fills rings it never drains.
constexpr const char *kParams = "wait_max_ms=2000";

std::string seed() {
  const char *s = std::getenv("AVA_EXERCISER_SEED");
  if (s != nullptr && *s != '\0')
    return s;
  return std::to_string(std::chrono::system_clock::now().time_since_epoch().count() & 0xffffffff);
}

int police_seconds() {
  const char *s = std::getenv("AVA_EXERCISER_SECONDS");
  const int n = s != nullptr ? std::atoi(s) : 0;
  return n > 0 && n <= 3600 ? n : kPoliceSeconds;
}

std::string exerciser_job(const std::string &seed) {
  const std::string dir = kModDir, ex = sh_quote(KMOD_EXERCISER);
  const int seconds = police_seconds();
  std::string job = "insmod " + dir + "ava.ko " + kParams + " || echo 'ava.ko did not load'\n";
  job += "ava_check load.demo 120 insmod " + dir + "ava_demo.ko\n";
  // Half the slots policed: SUBMIT reaches ava.ko's checks there, mmap rules differ.
  job += "ava_check police 30 sh -c 'avactl policy --slot 0 --police on && "
         "avactl policy --slot 2 --police on'\n";
  job += "ava_check exercise " + std::to_string(seconds + 90) + " " + ex + " --seed " + seed +
         " --seconds " + std::to_string(seconds) + " --procs 3 --threads 4\n";
  job += "ava_check unload.demo 60 rmmod ava_demo\n";
  job += "ava_check exercise.reload " + std::to_string(kReloadSeconds + 90) + " " + ex +
         " --seed " + seed + " --seconds " + std::to_string(kReloadSeconds) +
         " --procs 2 --threads 4 --reload " + dir + "ava.ko --params " + kParams + "\n";
  // Unbinding and binding the device under the same load (with ava_demo.ko's
  // kernel connection on it again).
  // The exerciser's netlink requests may have disabled slots (it runs as
  // root), and the host recycles the slots its processes left: wait for that.
  job += "ava_check policy.reset 30 avactl policy all enable cmds-per-sec 0 bytes-per-sec 0 "
         "mem-quota 0\n";
  job += "ava_wait_for 600 sh -c '[ $(avactl slots | grep -c \" idle \") -ge " +
         std::to_string(kSlots) + " ]'\n";
  job += "ava_check load.demo.again 120 insmod " + dir + "ava_demo.ko\n";
  job += "pci=$(basename $(readlink -f /sys/bus/pci/drivers/ava/0000:*))\n";
  job += "ava_check exercise.unbind " + std::to_string(kUnbindSeconds + 90) + " " + ex +
         " --seed " + seed + " --seconds " + std::to_string(kUnbindSeconds) +
         " --procs 2 --threads 4 --unbind $pci\n";
  job += "ava_check unload.demo.again 60 rmmod ava_demo\n";
  // The last reload may have failed (its reason is in exercise.reload's stderr).
  job += "ava_check rmmod 60 sh -c 'if grep -q \"^ava \" /proc/modules; then rmmod ava; fi; "
         "! grep -q \"^ava \" /proc/modules'\n";
  return job;
}

} // namespace

Test(vm_exerciser, random_operations_leave_no_kernel_bug, .timeout = 900) {
  vmtest::require_vm();
  auto env = vm_image_env();
  cr_assert(env["AVA_VM_HAVE_KMOD"] == "1", "the guest image has no ava.ko (see vm_image)");
  const std::set<std::string> extra = vmtest::image_modules(env);
  cr_assert(extra.count("ava_demo"), "the guest image lacks ava_demo.ko (AVA_VM_EXTRA_KO=%s)",
            env["AVA_VM_EXTRA_KO"].c_str());
  vmtest::require_avactl();
  const std::string dir = make_temp_dir();
  VmHost host(dir, kSlots, {"demo"}, {});
  cr_assert(host.ready(), "ava vmhost did not start:\n%s", host.output().c_str());
  const std::string s = seed();
  VmSession vm("exerciser", exerciser_job(s), [&] {
    std::vector<std::string> a = host.vm_args();
    a.insert(a.end(), {"--cmdline", "slub_debug=FZPU panic_on_warn=1"});
    return a;
  }());
  const int rc = vm.wait();
  const VmResults r = vm.results();
  for (const char *name :
       {"load.demo", "police", "exercise", "unload.demo", "exercise.reload", "policy.reset",
        "load.demo.again", "exercise.unbind", "unload.demo.again", "rmmod"})
    expect_ok(r, name);
  for (const char *name : {"exercise", "exercise.reload", "exercise.unbind"})
    if (const VmCheck *c = check_result(r, name))
      cr_expect(c->out.find("\ndone\n") != std::string::npos,
                "[%s] the exerciser did not finish (seed %s):\n%s%s", name, s.c_str(),
                c->out.c_str(), c->err.c_str());
  cr_expect(!process_gone(host.pid()), "ava vmhost died under the exerciser");
  // A WARNING panics the guest (panic_on_warn): the job then never ends.
  vmtest::expect_clean_run(vm, rc);
  if (!r.done || rc != 0)
    cr_log_error("exerciser seed %s (AVA_EXERCISER_SEED=%s repeats it)", s.c_str(), s.c_str());
}
