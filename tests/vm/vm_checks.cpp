// SPDX-License-Identifier: MIT
#include "vm_checks.hpp"

#include <criterion/criterion.h>
#include <sys/stat.h>

#include <sstream>

#include "ocl_run.hpp"

namespace vmtest {
namespace {

const VmCheck *find_check(const VmResults &r, const std::string &check) {
  auto it = r.checks.find(check);
  cr_expect(it != r.checks.end(), "[%s] the guest reported no result (did the job get there?)",
            check.c_str());
  return it == r.checks.end() ? nullptr : &it->second;
}

void expect_outputs(const std::string &check, const VmCheck &g, const ProcResult &n,
                    const std::string &native_out, const std::string &guest_out) {
  cr_expect_eq(g.rc, n.exit_code, "[%s] guest exit %d, native %d (124: guest timeout), stderr:\n%s",
               check.c_str(), g.rc, n.exit_code, g.err.c_str());
  cr_expect(guest_out == native_out, "[%s] guest output differs from native:\n%s\nstderr:\n%s",
            check.c_str(), ocl::line_diff(native_out, guest_out, "native", "guest").c_str(),
            g.err.c_str());
  cr_expect(g.err.find("ava:") == std::string::npos, "[%s] unexpected ava message:\n%s",
            check.c_str(), g.err.c_str());
}

} // namespace

void require_vm() {
  // QEMU is one of make's dependencies (scripts/install-deps.sh): without it
  // the run is incomplete, which must read as a failure. `ctest -LE vm`
  // leaves the VM tests out on purpose.
  const std::string why = vm_unavailable_reason();
  cr_assert(why.empty(), "cannot run the VM tests: %s (ctest -LE vm leaves them out)", why.c_str());
  struct stat st {};
  const std::string initrd = std::string(VM_IMAGE_DIR) + "/initramfs.cpio.gz";
  cr_assert(stat(initrd.c_str(), &st) == 0,
            "%s is missing: the vm_image test (vm/build-image.sh) builds it; run ctest with it, "
            "or vm/build-image.sh --build <build dir>",
            initrd.c_str());
}

void require_avactl() {
  cr_assert(vm_image_env()["AVA_VM_HAVE_AVACTL"] == "1",
            "the guest image has no avactl: the tree builds it (libnl-genl-3 is a dependency); "
            "see the vm_image test");
}

ProcResult native(const std::vector<std::string> &argv) {
  return run_proc(argv, ocl::child_env(), kNativeTimeoutMs);
}

void expect_same_as_native(const VmResults &r, const std::string &check, const ProcResult &n) {
  cr_assert_eq(n.exit_code, 0, "[%s] native run failed (%d):\n%s", check.c_str(), n.exit_code,
               n.err.c_str());
  if (const VmCheck *g = find_check(r, check))
    expect_outputs(check, *g, n, n.out, g->out);
}

void expect_clinfo_same_as_native(const VmResults &r, const std::string &check,
                                  const ProcResult &n) {
  cr_assert_eq(n.exit_code, 0, "[%s] native clinfo failed (%d):\n%s", check.c_str(), n.exit_code,
               n.err.c_str());
  if (const VmCheck *g = find_check(r, check))
    expect_outputs(check, *g, n, ocl::without_loader_lines(n.out),
                   ocl::without_loader_lines(g->out));
}

void expect_remoted(const remoted::WorkerReport &report, const std::string &spec,
                    uint64_t min_sessions, const std::string &what) {
  const std::string why = remoted::not_remoted_reason(report, spec, min_sessions);
  cr_expect(why.empty(), "[%s] %s", what.c_str(), why.c_str());
}

void expect_clean_run(VmSession &vm, int exit_code) {
  const VmResults r = vm.results();
  cr_expect_eq(exit_code, 0,
               "run-vm.sh exited with %d (124: the guest hit its time limit); "
               "logs in %s",
               exit_code, vm.dir().c_str());
  cr_expect(r.done, "the guest job did not run to its end; logs in %s, console tail:\n%s",
            vm.dir().c_str(),
            vm.console_text()
                .substr(vm.console_text().size() > 4000 ? vm.console_text().size() - 4000 : 0)
                .c_str());
  std::string found;
  for (const std::string &line : kernel_problems(vm.kernel_log()))
    found += line + "\n";
  cr_expect(found.empty(), "the guest kernel reported problems (logs in %s):\n%s", vm.dir().c_str(),
            found.c_str());
}

std::vector<std::string> ocl_programs() {
  std::vector<std::string> names;
  std::istringstream in(OCL_PROGRAMS);
  std::string name;
  while (std::getline(in, name, ','))
    if (!name.empty())
      names.push_back(name);
  return names;
}

std::string check_line(const std::string &check, int limit_s,
                       const std::vector<std::string> &argv) {
  std::string line = "ava_check " + check + " " + std::to_string(limit_s);
  for (const std::string &a : argv)
    line += " " + sh_quote(a);
  return line + "\n";
}

const VmCheck *check_result(const VmResults &r, const std::string &name) {
  auto it = r.checks.find(name);
  cr_expect(it != r.checks.end(), "[%s] no result from the guest", name.c_str());
  return it == r.checks.end() ? nullptr : &it->second;
}

void expect_ok(const VmResults &r, const std::string &name) {
  if (const VmCheck *c = check_result(r, name))
    cr_expect_eq(c->rc, 0, "[%s] exit %d:\n%s%s", name.c_str(), c->rc, c->out.c_str(),
                 c->err.c_str());
}

std::set<std::string> image_modules(const std::map<std::string, std::string> &image_env) {
  std::set<std::string> out;
  auto it = image_env.find("AVA_VM_EXTRA_KO");
  if (it == image_env.end())
    return out;
  std::istringstream in(it->second);
  for (std::string w; in >> w;) {
    std::erase(w, '"');
    out.insert(w);
  }
  return out;
}

} // namespace vmtest
