// SPDX-License-Identifier: MIT
// Assertions shared by the VM tests: a guest program's result against the
// native run of the same program on the host, and a clean guest kernel.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "proc.hpp"
#include "remoted.hpp"
#include "vm_session.hpp"

namespace vmtest {

constexpr int kNativeTimeoutMs = 120000;

// Fails the test when the machine cannot run VMs or the image (ctest's
// vm_image fixture) is missing.
void require_vm();

// Fails the test when the image has no avactl (built by the tree with libnl).
void require_avactl();

ProcResult native(const std::vector<std::string> &argv);

// Same exit status and byte-for-byte the same stdout; no "ava:" on stderr.
void expect_same_as_native(const VmResults &r, const std::string &check, const ProcResult &n);
// clinfo: like expect_same_as_native except the ICD loader's own lines,
// as in tests/e2e/test_e2e_clinfo.cpp.
void expect_clinfo_same_as_native(const VmResults &r, const std::string &check,
                                  const ProcResult &n);
// The host workers ran calls of spec for at least min_sessions guest
// processes: the guest programs compared with native runs were remoted, not
// served by a real library inside the guest.
void expect_remoted(const remoted::WorkerReport &report, const std::string &spec,
                    uint64_t min_sessions, const std::string &what);
// The guest powered off after the whole job, and its kernel logged no bug.
void expect_clean_run(VmSession &vm, int exit_code);

std::vector<std::string> ocl_programs();

// The guest's result of check name; a failed expectation (and nullptr) when
// the guest reported none.
const VmCheck *check_result(const VmResults &r, const std::string &name);
// That check exited 0; its output is in the message otherwise.
void expect_ok(const VmResults &r, const std::string &name);
// The extra kernel modules the image holds (AVA_VM_EXTRA_KO of image.env),
// by name without ".ko".
std::set<std::string> image_modules(const std::map<std::string, std::string> &image_env);

// "ava_check NAME LIMIT 'argv0' 'argv1'..." for a job script.
std::string check_line(const std::string &check, int limit_s, const std::vector<std::string> &argv);

} // namespace vmtest
