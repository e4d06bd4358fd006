// SPDX-License-Identifier: MIT
// The worker's check of PoCL program binaries (specs/opencl/poclbin.h):
// a binary this PoCL wrote passes, and each way a guest could make PoCL's
// unpacker read or write out of bounds (lengths, counts, file names that
// climb out of the cache directory, a build hash that names another
// directory, trailing or missing bytes) is refused, naming what is wrong.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "poclbin.h"

namespace {

using Bytes = std::vector<unsigned char>;

// A binary of this machine's PoCL: two kernels, one with a __local argument.
const Bytes &real_binary() {
  static const Bytes binary = [] {
    cl_platform_id platform;
    cl_device_id device;
    cl_int err = clGetPlatformIDs(1, &platform, nullptr);
    cr_assert_eq(err, CL_SUCCESS, "no OpenCL platform: %d", err);
    err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr);
    cr_assert_eq(err, CL_SUCCESS);
    cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    cr_assert_eq(err, CL_SUCCESS);
    const char *source = "__kernel void scale(__global int *a, int k, __local int *l) {\n"
                         "  a[get_global_id(0)] *= k;\n}\n"
                         "__kernel void other(__global float *b) { b[0] = 1; }\n";
    cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
    cr_assert_eq(err, CL_SUCCESS);
    err = clBuildProgram(program, 1, &device, "-cl-kernel-arg-info", nullptr, nullptr);
    cr_assert_eq(err, CL_SUCCESS, "build: %d", err);
    size_t size = 0;
    clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
    Bytes out(size);
    unsigned char *data = out.data();
    err = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr);
    cr_assert_eq(err, CL_SUCCESS);
    clReleaseProgram(program);
    clReleaseContext(context);
    return out;
  }();
  return binary;
}

bool passes(const Bytes &b, std::string *why = nullptr) {
  char buf[256];
  const int rc = ava_poclbin_check(b.data(), b.size(), buf, sizeof buf);
  if (why != nullptr)
    *why = buf;
  return rc == 0;
}

size_t find(const Bytes &b, const std::string &s, size_t from = 0) {
  auto it = std::search(b.begin() + static_cast<std::ptrdiff_t>(from), b.end(), s.begin(), s.end());
  cr_assert(it != b.end(), "the real binary has no \"%s\"", s.c_str());
  return static_cast<size_t>(it - b.begin());
}

void put_u32(Bytes &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + static_cast<size_t>(i)] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t get_u32(const Bytes &b, size_t at) {
  return static_cast<uint32_t>(b[at]) | static_cast<uint32_t>(b[at + 1]) << 8 |
         static_cast<uint32_t>(b[at + 2]) << 16 | static_cast<uint32_t>(b[at + 3]) << 24;
}
void replace(Bytes &b, const std::string &from, const std::string &to) {
  cr_assert_eq(from.size(), to.size());
  std::memcpy(&b[find(b, from)], to.data(), to.size());
}

// Header offsets (poclbin.h).
constexpr size_t kVersion = 16, kKernels = 20, kRoots = 32, kHash = 36, kRootBytes = 77;

struct Mutation {
  const char *name;
  void (*apply)(Bytes &);
  const char *why; // a word the refusal must name
};

// The first kernel record starts right after the root entry.
size_t first_kernel(const Bytes &b) {
  return kRootBytes + 8 + get_u32(b, kRootBytes);
}

const Mutation kMutations[] = {
    {"appended byte", [](Bytes &b) { b.push_back(0); }, "after the last kernel"},
    {"last byte gone", [](Bytes &b) { b.pop_back(); }, "left"},
    {"version 8", [](Bytes &b) { put_u32(b, kVersion, 8); }, "version"},
    {"no kernels", [](Bytes &b) { put_u32(b, kKernels, 0); }, "kernels"},
    {"a kernel more", [](Bytes &b) { put_u32(b, kKernels, get_u32(b, kKernels) + 1); }, "ends"},
    {"a million kernels", [](Bytes &b) { put_u32(b, kKernels, 1000000); }, "kernels"},
    {"two root entries", [](Bytes &b) { put_u32(b, kRoots, 2); }, "root entries"},
    {"hash names a parent", [](Bytes &b) { b[kHash] = '.'; }, "build hash"},
    {"hash without its NUL", [](Bytes &b) { b[kHash + 40] = 'A'; }, "NUL"},
    {"root entry a byte longer",
     [](Bytes &b) { put_u32(b, kRootBytes, get_u32(b, kRootBytes) + 1); }, ""},
    {"root entry past the end", [](Bytes &b) { put_u32(b, kRootBytes, 0xfffffff0u); }, "left"},
    {"file climbs out", [](Bytes &b) { replace(b, "/program.bc", "/../gram.bc"); }, "'..'"},
    {"file in the cache root", [](Bytes &b) { replace(b, "/program.bc", "//rogram.bc"); },
     "empty component"},
    {"kernel file climbs out",
     [](Bytes &b) { replace(b, "/scale/0-0-0/scale.so", "/../../../../tmp/x.so"); }, "'..'"},
    {"file name with a control byte", [](Bytes &b) { replace(b, "/program.bc", "/progr\x01m.bc"); },
     "0x01"},
    {"file name longer than the binary",
     [](Bytes &b) { put_u32(b, find(b, "/program.bc") - 4, 0xffffffffu); }, "file name"},
    {"kernel size a byte more",
     [](Bytes &b) {
       const size_t k = first_kernel(b);
       put_u32(b, k, get_u32(b, k) + 1);
     },
     "size says"},
    {"argument info size a byte more",
     [](Bytes &b) {
       const size_t k = first_kernel(b) + 16;
       put_u32(b, k, get_u32(b, k) + 1);
     },
     "argument info"},
    {"a million arguments",
     [](Bytes &b) {
       const size_t name = first_kernel(b) + 20;
       put_u32(b, name + 4 + get_u32(b, name), 1000000);
     },
     "arguments"},
    {"kernel name with a slash",
     [](Bytes &b) {
       const size_t name = first_kernel(b) + 24;
       b[name] = '/';
     },
     "kernel name"},
};

} // namespace

Test(poclbin, a_binary_this_pocl_wrote_passes) {
  std::string why;
  cr_assert(passes(real_binary(), &why), "refused: %s", why.c_str());
  cr_expect(ava_poclbin_is_poclbin(real_binary().data(), real_binary().size()));
}

// Criterion copies parameters into a process of its own: indexes, not pointers.
ParameterizedTestParameters(poclbin, each_mutation_is_refused) {
  static int indexes[std::size(kMutations)];
  for (size_t i = 0; i < std::size(kMutations); ++i)
    indexes[i] = static_cast<int>(i);
  return cr_make_param_array(int, indexes, std::size(kMutations));
}

ParameterizedTest(int *index, poclbin, each_mutation_is_refused) {
  const Mutation *m = &kMutations[*index];
  Bytes b = real_binary();
  m->apply(b);
  std::string why;
  cr_assert_not(passes(b, &why), "%s: passed", m->name);
  cr_expect(why.find(m->why) != std::string::npos, "%s: the reason \"%s\" does not name \"%s\"",
            m->name, why.c_str(), m->why);
}

// Every prefix of the binary is refused (PoCL would read past its end).
Test(poclbin, every_truncation_is_refused) {
  const Bytes &real = real_binary();
  for (size_t n = 0; n < real.size(); n += (n < 1024 ? 1 : 97)) {
    Bytes b(real.begin(), real.begin() + static_cast<std::ptrdiff_t>(n));
    cr_assert_not(passes(b), "the first %zu of %zu bytes passed", n, real.size());
  }
  cr_expect_eq(ava_poclbin_check(nullptr, 100, nullptr, 0), -1);
}

// The binary the worker fuzzer found over-reading PoCL's heap.
Test(poclbin, the_fuzzers_overread_binary_is_refused) {
  std::ifstream in(AVA_FUZZ_OVERREAD, std::ios::binary);
  cr_assert(in.good(), "cannot read %s", AVA_FUZZ_OVERREAD);
  const Bytes message{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const size_t at = find(message, std::string("poclbin", 8));
  const Bytes b(message.begin() + static_cast<std::ptrdiff_t>(at), message.end());
  std::string why;
  cr_expect_not(passes(b, &why));
  cr_log_info("refused: %s", why.c_str());
}

Test(poclbin, other_binaries_are_not_poclbins) {
  const unsigned char bitcode[] = {'B', 'C', 0xc0, 0xde, 0, 0, 0, 0, 0, 0};
  cr_expect_not(ava_poclbin_is_poclbin(bitcode, sizeof bitcode));
  cr_expect_not(ava_poclbin_is_poclbin(real_binary().data(), 7));
  cr_expect_not(ava_poclbin_is_poclbin(nullptr, 100));
}
