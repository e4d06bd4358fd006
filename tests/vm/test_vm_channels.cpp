// SPDX-License-Identifier: MIT
// The guest's channels without ava.ko, in one boot: clinfo and every OpenCL
// test program over tcp (QEMU user networking) to a PoCL worker on the host,
// and the demo over vsock (vsock_loopback: worker and program both in the
// guest). Each guest result is compared with the native run on the host.
#include <criterion/criterion.h>

#include <signal.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "ocl_run.hpp"
#include "vm_checks.hpp"
#include "vm_session.hpp"

namespace {

constexpr int kCheckLimitS = 240;
constexpr int kVsockPort = 7400;

struct GuestProgram {
  std::string check; // result name, e.g. "tcp.clinfo-l"
  std::vector<std::string> argv;
  bool clinfo;
};

std::vector<GuestProgram> tcp_programs() {
  std::vector<GuestProgram> list = {
      {"tcp.clinfo", {CLINFO}, true},
      {"tcp.clinfo-l", {CLINFO, "-l"}, true},
      {"tcp.clinfo-raw", {CLINFO, "--raw"}, true},
  };
  for (const std::string &name : vmtest::ocl_programs())
    list.push_back({"tcp." + name, {std::string(OCL_DIR) + "/ocl_" + name}, false});
  return list;
}

std::vector<GuestProgram> vsock_programs() {
  return {{"vsock.demo_app", {DEMO_APP}, false},
          {"vsock.demo_probe-bad-handles", {DEMO_PROBE, "bad-handles"}, false},
          {"vsock.demo_probe-big", {DEMO_PROBE, "big", "20"}, false}};
}

std::string channels_job(const std::string &host_port) {
  std::string job = "export LD_LIBRARY_PATH=" + sh_quote(AVA_GUEST_LIB_DIR) + "\n";
  job += "export AVA_WORKER=tcp:10.0.2.2:" + host_port + "\n";
  for (const GuestProgram &p : tcp_programs())
    job += vmtest::check_line(p.check, kCheckLimitS, p.argv);
  // vsock: a demo worker inside the guest; its address is ready once written.
  const std::string port = std::to_string(kVsockPort);
  job += "env -u LD_LIBRARY_PATH -u AVA_WORKER " + sh_quote(AVA_BIN) +
         " worker --spec demo --listen vsock:1:" + port +
         " --report vsock.report --ready-fd 3 3>vsock.ready >vsock-worker.log 2>&1 &\n"
         "vsock_worker=$!\n"
         "if ava_wait_for 300 test -s vsock.ready; then ava_note vsock.ready ok; else "
         "ava_note vsock.ready \"$(cat vsock-worker.log)\"; fi\n"
         "export AVA_WORKER=vsock:1:" +
         port + "\n";
  for (const GuestProgram &p : vsock_programs())
    job += vmtest::check_line(p.check, kCheckLimitS, p.argv);
  // The transport's own vsock round trip, which the host may not run.
  job += vmtest::check_line("vsock.loopback", kCheckLimitS,
                            {"env", "AVA_TEST_VSOCK=1", VSOCK_LOOPBACK_TEST, "--jobs", "1"});
  job += "kill $vsock_worker; wait $vsock_worker\n"
         "ava_emit vsock.worker-log out vsock-worker.log\n"
         "ava_emit vsock.report out vsock.report\n";
  return job;
}

} // namespace

Test(vm_channels, opencl_over_tcp_and_demo_over_vsock, .timeout = 1200) {
  vmtest::require_vm();
  const std::string dir = make_temp_dir();
  const std::string report = dir + "/sessions.report";
  BackgroundProc worker(
      {AVA_BIN, "worker", "--listen", "tcp:127.0.0.1:0", "--ready-fd", "1", "--report", report},
      ocl::child_env());
  std::string address;
  cr_assert(worker.wait_for_line("tcp:", 30000, &address), "host worker did not start:\n%s",
            address.c_str());
  const size_t colon = address.find_last_of(':');
  std::string port = address.substr(colon + 1);
  port = port.substr(0, port.find_first_of("\r\n"));

  VmSession vm("channels", channels_job(port));
  // The native runs happen while the guest boots.
  std::vector<ProcResult> tcp_native, vsock_native;
  for (const GuestProgram &p : tcp_programs())
    tcp_native.push_back(vmtest::native(p.argv));
  for (const GuestProgram &p : vsock_programs())
    vsock_native.push_back(vmtest::native(p.argv));

  const int rc = vm.wait();
  const VmResults r = vm.results();
  const std::vector<GuestProgram> tcp = tcp_programs(), vsock = vsock_programs();
  for (size_t i = 0; i < tcp.size(); ++i) {
    if (tcp[i].clinfo)
      vmtest::expect_clinfo_same_as_native(r, tcp[i].check, tcp_native[i]);
    else
      vmtest::expect_same_as_native(r, tcp[i].check, tcp_native[i]);
  }
  auto ready = r.checks.find("vsock.ready");
  cr_expect(ready != r.checks.end() && ready->second.out == "ok",
            "[vsock] the guest's demo worker did not come up: %s",
            ready == r.checks.end() ? "(no report)" : ready->second.out.c_str());
  for (size_t i = 0; i < vsock.size(); ++i)
    vmtest::expect_same_as_native(r, vsock[i].check, vsock_native[i]);
  vmtest::expect_ok(r, "vsock.loopback");
  // Each compared guest program was a session of the host's (tcp) or the
  // guest's own (vsock) worker.
  worker.kill_now(SIGTERM);
  worker.wait_exit(10000);
  vmtest::expect_remoted(remoted::WorkerReport::read(report), "opencl", tcp.size(), "tcp");
  auto vsock_report = r.checks.find("vsock.report");
  vmtest::expect_remoted(
      remoted::WorkerReport::parse(vsock_report == r.checks.end() ? "" : vsock_report->second.out),
      "demo", vsock.size(), "vsock");
  const std::string rm = "rm -rf " + dir;
  [[maybe_unused]] int removed = system(rm.c_str());
  vmtest::expect_clean_run(vm, rc);
}
