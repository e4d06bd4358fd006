// SPDX-License-Identifier: MIT
// Error codes of calls ava may send without waiting (issue 14): the program
// tests/opencl/programs/async_errors.c triggers the documented argument
// errors of each such function, each after a success of the same function
// on the same queue, and checks natively that PoCL returns what the OpenCL
// reference pages say. Remoted over unix, tcp and shm it must print the same
// codes at the same calls (ava_async_shape sends a call sync until a call of
// its shape succeeded). Which functions those are comes from the command
// table cava generates from the spec, so an async function without cases fails.
#include <criterion/criterion.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "ocl_run.hpp"

namespace {

const std::string kProgram = std::string(OCL_DIR) + "/ocl_async_errors";

// Spec helpers that the guest library's own code calls for an API function.
const std::map<std::string, std::string> kApiOfHelper = {
    {"ava_cl_unmap_buffer", "clEnqueueUnmapMemObject"},
    {"ava_cl_unmap_buffer_lent", "clEnqueueUnmapMemObject"},
    {"ava_cl_unmap_image", "clEnqueueUnmapMemObject"},
    {"ava_cl_unmap_in_heap", "clEnqueueUnmapMemObject"},
    {"ava_cl_heap_gate_release", "clEnqueueWriteBuffer"},
    {"ava_cl_write_buffer_staged", "clEnqueueWriteBuffer"},
    {"ava_cl_write_buffer_lent", "clEnqueueWriteBuffer"},
    {"ava_cl_write_buffer_rect_staged", "clEnqueueWriteBufferRect"},
    {"ava_cl_write_image_staged", "clEnqueueWriteImage"},
    {"ava_cl_svm_unmap", "clEnqueueSVMUnmap"},
    {"ava_cl_svm_memcpy", "clEnqueueSVMMemcpy"},
    {"ava_cl_svm_fill", "clEnqueueSVMMemFill"},
    {"ava_cl_set_kernel_arg_svm", "clSetKernelArgSVMPointer"},
};

// The functions the command table marks as sent without waiting, always or
// under a condition, under their API names.
std::set<std::string> async_functions(std::string *problem) {
  std::ifstream in(OPENCL_CMDS);
  std::stringstream text;
  text << in.rdbuf();
  // {"clFlush", AVA_OPENCL_FN_CLFLUSH,\n\t AVA_CMD_SUPPORTED | AVA_CMD_ASYNC | ...,
  const std::regex entry("\\{\"(\\w+)\", AVA_OPENCL_FN_\\w+,\\s*([A-Z_ |]+),");
  std::set<std::string> names;
  const std::string s = text.str();
  for (auto it = std::sregex_iterator(s.begin(), s.end(), entry); it != std::sregex_iterator();
       ++it) {
    const std::string flags = (*it)[2];
    if (flags.find("AVA_CMD_ASYNC") == std::string::npos &&
        flags.find("AVA_CMD_COND_ASYNC") == std::string::npos)
      continue;
    std::string name = (*it)[1];
    if (name.rfind("ava_", 0) == 0) {
      auto api = kApiOfHelper.find(name);
      if (api == kApiOfHelper.end()) {
        *problem += name + " is async: name the API function it serves in kApiOfHelper\n";
        continue;
      }
      name = api->second;
    }
    names.insert(name);
  }
  if (names.empty())
    *problem += std::string("no async functions found in ") + OPENCL_CMDS + "\n";
  return names;
}

} // namespace

Test(e2e_opencl_async_errors, every_async_function_has_cases) {
  std::string problem;
  const std::set<std::string> async = async_functions(&problem);
  cr_assert(problem.empty(), "%s", problem.c_str());
  const ProcResult r = ocl::native({kProgram, "--functions"});
  cr_assert_eq(r.exit_code, 0, "%s --functions: exit %d\n%s", kProgram.c_str(), r.exit_code,
               r.err.c_str());
  std::set<std::string> covered;
  for (const std::string &line : remoted::split_lines(r.out))
    covered.insert(line);
  std::string missing;
  for (const std::string &fn : async)
    if (!covered.count(fn))
      missing += " " + fn;
  cr_expect(missing.empty(), "async functions without error cases in async_errors.c:%s",
            missing.c_str());
}

Test(e2e_opencl_async_errors, codes_are_the_native_ones_at_the_call, .timeout = 600) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  remoted::expect_same_as_native(AVA_BIN, {kProgram}, ocl::comparison());
}
