// SPDX-License-Identifier: MIT
// A hostile guest of the CUDA runtime worker, for the tests that send a real
// `ava worker --spec cudart` raw messages no guest library would
// (test_e2e_cudart_bad, test_e2e_cudart_copies): the worker, and calls that
// answer with the cudaError_t the worker returned.
#pragma once

#include <signal.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cudart_wire.h"
#include "proc.hpp"
#include "raw_guest.hpp"

namespace e2e {

// cudaError_t values (driver_types.h), written out: the tests do not include CUDA.
constexpr uint64_t kCudaSuccess = 0;
constexpr uint64_t kCudaErrorInvalidValue = 1;
constexpr uint64_t kCudaErrorInvalidPitchValue = 12;
constexpr uint64_t kCudaErrorInvalidMemcpyDirection = 21;
constexpr uint64_t kCudaErrorInvalidKernelImage = 200;
// What a call that reached no answer gives (the reply's status was not AVA_OK).
constexpr uint64_t kNoAnswer = UINT64_MAX;

inline Bytes read_bytes(const char *path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The ava executable: AVA_E2E_AVA_BIN where a build was carried to another
// place (scripts/gpu-check.sh), else the one this test was built with.
inline std::string ava_bin() {
  const char *carried = std::getenv("AVA_E2E_AVA_BIN");
  return carried != nullptr && carried[0] != '\0' ? carried : AVA_BIN;
}

// The nvcc-built fat binary of tests/cuda, likewise (AVA_E2E_CUDA_TEST_FATBIN).
inline std::string test_fatbin_path() {
  const char *carried = std::getenv("AVA_E2E_CUDA_TEST_FATBIN");
  return carried != nullptr && carried[0] != '\0' ? carried : CUDA_TEST_FATBIN;
}

// A worker serving cudart (or another CUDA spec) on a unix socket of its
// own; extra options (e.g. --shared: every guest in one process) after the
// others, env entries added to its environment.
struct CudartWorker {
  std::string dir = make_temp_dir();
  std::string path = dir + "/worker.sock";
  BackgroundProc proc;
  explicit CudartWorker(const std::vector<std::string> &extra = {},
                        const std::string &spec = "cudart",
                        const std::vector<std::string> &env = {})
      : proc(argv(path, spec, extra), env) {}
  ~CudartWorker() {
    proc.kill_now(SIGTERM);
    proc.wait_exit(5000);
    const std::string rm = "rm -rf " + dir;
    [[maybe_unused]] int rc = system(rm.c_str());
  }
  bool started(std::string *seen) { return proc.wait_for_line("worker.sock", 20000, seen); }
  bool alive() { return kill(proc.pid(), 0) == 0 && proc.wait_exit(0) == -1; }

private:
  static std::vector<std::string> argv(const std::string &path, const std::string &spec,
                                       const std::vector<std::string> &extra) {
    std::vector<std::string> a = {ava_bin(),  "worker",       "--spec",     spec,
                                  "--listen", "unix:" + path, "--ready-fd", "1"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

inline RawGuest cudart_guest(const CudartWorker &w) {
  return RawGuest(w.path, AVA_CUDART_SPEC_ID, AVA_CUDART_SPEC_HASH, AVA_CUDART_SPEC_NAME);
}

// The reply's cudaError_t: every cudart reply struct starts with it.
inline uint64_t ret_of(const Bytes &reply) {
  uint64_t ret = 0;
  if (RawGuest::header(reply).status != AVA_OK || !RawGuest::reply_struct(reply, &ret))
    return kNoAnswer;
  return ret;
}

// A sync CALL of func with args A; the cudaError_t of its reply (kNoAnswer
// if the worker refused the message itself), the reply in *reply if given.
template <class A>
uint64_t call_ret(RawGuest &g, uint32_t func, const A &args, const Bytes &payload = {},
                  Bytes *reply = nullptr) {
  Bytes r;
  if (!g.call(func, &args, sizeof args, payload, &r))
    return kNoAnswer;
  if (reply != nullptr)
    *reply = r;
  return ret_of(r);
}

// The bytes of an OUT buffer of a reply, by its descriptor.
inline Bytes out_buffer(const Bytes &reply, const ava_buf_desc &d) {
  const uint64_t at = sizeof(ava_msg_hdr) + RawGuest::header(reply).args_len + d.offset;
  if (d.length > reply.size() || at > reply.size() - d.length)
    return {};
  return Bytes(reply.begin() + static_cast<long>(at),
               reply.begin() + static_cast<long>(at + d.length));
}

// ava_cudart_register_module(fatbin, len, names, ...): the return value and
// the handles of the module and of its first kernel. With a variable name,
// the module also has one variable of var_size bytes.
inline uint64_t register_module(RawGuest &g, const Bytes &fatbin, uint64_t claimed_len,
                                const std::string &kernel, uint64_t *function,
                                uint64_t *module = nullptr, const std::string &var = {},
                                uint64_t var_size = 0) {
  ava_cudart_ava_cudart_register_module_call a{};
  std::string names = kernel + '\0';
  if (!var.empty())
    names += var + '\0';
  const uint64_t var_info[2] = {var_size, 0};
  const uint64_t names_at = AVA_PAYLOAD_SPAN(fatbin.size());
  const uint64_t info_at = names_at + AVA_PAYLOAD_SPAN(names.size());
  Bytes payload(info_at + AVA_PAYLOAD_SPAN(sizeof var_info), 0);
  std::memcpy(payload.data(), fatbin.data(), fatbin.size());
  std::memcpy(payload.data() + names_at, names.data(), names.size());
  std::memcpy(payload.data() + info_at, var_info, sizeof var_info);
  a.fatbin = {0, fatbin.size(), AVA_BUF_PRESENT | AVA_BUF_IN, 0};
  a.len = claimed_len;
  a.names = {names_at, names.size(), AVA_BUF_PRESENT | AVA_BUF_IN, 0};
  a.names_len = names.size();
  a.count = 1;
  if (!var.empty()) {
    a.nvars = 1;
    a.var_info = {info_at, sizeof var_info, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
  }
  a.module = {0, 8, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  a.functions = {0, 8, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  Bytes r;
  const uint64_t ret = call_ret(g, AVA_CUDART_FN_AVA_CUDART_REGISTER_MODULE, a, payload, &r);
  ava_cudart_ava_cudart_register_module_reply v{};
  *function = 0;
  if (ret != kCudaSuccess || !RawGuest::reply_struct(r, &v))
    return ret;
  const Bytes fn = out_buffer(r, v.functions), mod = out_buffer(r, v.module);
  if (fn.size() == 8)
    std::memcpy(function, fn.data(), 8);
  if (module != nullptr && mod.size() == 8)
    std::memcpy(module, mod.data(), 8);
  return ret;
}

// cudaRuntimeGetVersion answers: the worker still serves this guest.
inline bool still_serves(RawGuest &g) {
  ava_cudart_cudaRuntimeGetVersion_call a{};
  a.runtimeVersion = {0, sizeof(int), AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  return call_ret(g, AVA_CUDART_FN_CUDARUNTIMEGETVERSION, a) == kCudaSuccess;
}

} // namespace e2e
