// SPDX-License-Identifier: MIT
// One boot of the test guest (vm/run-vm.sh) running a job script, and the
// parsing of what it reports: the framed results of vm/guest/lib.sh and the
// guest kernel's log.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proc.hpp"

struct VmCheck {
  std::string out;
  std::string err;
  int rc = -1; // -1: no status reported (a note, or the guest never got there)
};

struct VmResults {
  std::map<std::string, VmCheck> checks;
  bool done = false; // the job ran to its end and the guest powered off
};

VmResults parse_vm_results(const std::string &text);

// Lines of a kernel log that mean the kernel hit a bug: BUG: (and slub_debug's
// BUG reports), WARNING:, Oops, lockdep reports, Call Trace, KASAN, general
// protection faults, panics.
std::vector<std::string> kernel_problems(const std::string &log);

// Why the VM tests cannot run on this machine (empty: they can). Only a
// missing QEMU counts: everything else the tests need is built by the tree.
std::string vm_unavailable_reason();

// The image's facts (vm/build-image.sh's image.env), e.g. AVA_VM_HAVE_KMOD.
std::map<std::string, std::string> vm_image_env();

class VmSession {
public:
  // Writes the job script and starts the guest; extra_args go to run-vm.sh.
  VmSession(const std::string &name, const std::string &job,
            const std::vector<std::string> &extra_args = {});
  VmSession(const VmSession &) = delete;
  VmSession &operator=(const VmSession &) = delete;

  // Waits (bounded by run-vm.sh's own limit) for the guest to power off.
  int wait();
  // Waits until the job has reported a check or note called name.
  bool wait_for_check(const std::string &name, int timeout_ms);
  // Waits until the guest calls `ava_sync name` in the job and answers it
  // (the guest then continues): the moment the host acts on its side.
  bool wait_for_sync(const std::string &name, int timeout_ms);
  bool release_sync();
  ~VmSession();

  const std::string &dir() const { return dir_; }
  std::string results_text() const;
  std::string console_text() const;
  VmResults results() const { return parse_vm_results(results_text()); }
  // The kernel log the job reported at its end, else the serial console.
  std::string kernel_log() const;

private:
  std::string dir_;
  std::unique_ptr<BackgroundProc> vm_;
  int sync_fd_ = -1; // our end of the guest's virtio-serial port ava.0
  int exit_code_ = -1;
  bool exited_ = false;
};

// Shell-quotes a word for the guest's job script.
std::string sh_quote(const std::string &word);
