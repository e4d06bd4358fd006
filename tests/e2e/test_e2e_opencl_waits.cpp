// SPDX-License-Identifier: MIT
// Waiting for the device costs no CPU, as natively (issue 15, "no polling"):
// tests/opencl/programs/waits.c blocks in clFinish and clWaitForEvents on
// commands held behind a user event while a helper thread watches the
// waiting thread's state. Natively PoCL sleeps. Remoted, the reply of those
// calls (ava_device_wait in the spec) is waited for without the spin that
// catches quick replies, so on a machine with few CPUs the waiter does not
// hold back the driver's threads (clpeak's kernel latency). With spin
// budgets of a second on every channel, a waiter that spun first would be
// seen awake for the helper's whole watch (800 ms), and the output differs.
#include <criterion/criterion.h>

#include <string>

#include "ocl_run.hpp"

Test(e2e_opencl_waits, a_thread_waiting_for_the_device_sleeps_at_once, .timeout = 600) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  std::vector<std::string> env = ocl::child_env();
  env.push_back("AVA_SHM_SPIN_NS=1000000000");
  env.push_back("AVA_SOCKET_SPIN_NS=1000000000");
  env.push_back("AVA_SPIN_US=100000");
  remoted::expect_same_as_native(AVA_BIN, {std::string(OCL_DIR) + "/ocl_waits"},
                                 ocl::comparison(env));
}
