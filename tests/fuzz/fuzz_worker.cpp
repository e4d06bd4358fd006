// SPDX-License-Identifier: MIT
// The worker's CALL decoding and dispatch with a real plugin (the spec named
// by AVA_FUZZ_SPEC at compile time: demo, opencl, cudart or cuda), in
// process: each input is one guest session, HELLO (made here, with the
// plugin's id and hash) and then the input's messages (fuzz_input.hpp),
// served by serve_guest() over an in-memory channel. The session's teardown
// releases what the calls created, as a disconnect does, so driver state
// does not pile up across inputs.
//
// The headers are bent towards what the reader accepts (a CALL of this spec,
// a function it has, a sync/async class the function allows, a few guest
// threads) so that the fuzzer spends its time in the decoders and the
// plugin, not in the first check of the reader; those checks have their own
// unit tests.
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_input.hpp"
#include "transport/channel.hpp"
#include "worker/plugin_set.hpp"
#include "worker/server.hpp"

#ifdef AVA_FUZZ_OPENCL
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#endif

#ifdef AVA_FUZZ_OPENCL
// PoCL's program binary loader trusts the lengths inside a binary: a crafted
// one makes it read gigabytes past the buffer (heap-buffer-overflow in
// clCreateProgramWithBinary, found by this harness; tests/fuzz/README.md).
// The worker now checks a binary's structure first (specs/opencl/poclbin.h),
// and that check runs here on every binary; what passes it still carries
// LLVM bitcode for LLVM's reader, not ours to fuzz, so the harness passes on
// only binaries this PoCL produced itself (clGetProgramInfo
// CL_PROGRAM_BINARIES, as the recorded programs do) and answers the rest with
// CL_INVALID_BINARY.
namespace {
std::mutex g_binaries_mu;
std::set<std::string> g_binaries;
} // namespace

extern "C" cl_int clGetProgramInfo(cl_program program, cl_program_info name, size_t size,
                                   void *value, size_t *size_ret) {
  using Fn = cl_int (*)(cl_program, cl_program_info, size_t, void *, size_t *);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "clGetProgramInfo"));
  const cl_int ret = real(program, name, size, value, size_ret);
  if (ret != CL_SUCCESS || name != CL_PROGRAM_BINARIES || value == nullptr)
    return ret;
  size_t sizes[64];
  size_t sizes_len = 0;
  if (real(program, CL_PROGRAM_BINARY_SIZES, sizeof sizes, sizes, &sizes_len) != CL_SUCCESS)
    return ret;
  auto *const *binaries = static_cast<unsigned char *const *>(value);
  std::lock_guard lock(g_binaries_mu);
  for (size_t i = 0; i < sizes_len / sizeof(size_t) && i < size / sizeof(void *); ++i)
    if (binaries[i] != nullptr)
      g_binaries.emplace(reinterpret_cast<const char *>(binaries[i]), sizes[i]);
  return ret;
}

extern "C" cl_program clCreateProgramWithBinary(cl_context context, cl_uint num_devices,
                                                const cl_device_id *devices, const size_t *lengths,
                                                const unsigned char **binaries,
                                                cl_int *binary_status, cl_int *errcode_ret) {
  using Fn = cl_program (*)(cl_context, cl_uint, const cl_device_id *, const size_t *,
                            const unsigned char **, cl_int *, cl_int *);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "clCreateProgramWithBinary"));
  for (cl_uint i = 0; lengths != nullptr && binaries != nullptr && i < num_devices; ++i) {
    bool known;
    {
      std::lock_guard lock(g_binaries_mu);
      known = binaries[i] != nullptr &&
              g_binaries.count(
                  std::string(reinterpret_cast<const char *>(binaries[i]), lengths[i])) != 0;
    }
    if (!known) {
      for (cl_uint j = 0; binary_status != nullptr && j < num_devices; ++j)
        binary_status[j] = CL_INVALID_BINARY;
      if (errcode_ret != nullptr)
        *errcode_ret = CL_INVALID_BINARY;
      return nullptr;
    }
  }
  return real(context, num_devices, devices, lengths, binaries, binary_status, errcode_ret);
}

#endif

namespace {

using ava::Status;
using ava::fuzz::Message;

constexpr size_t kMaxRecords = 512;
constexpr uint64_t kMaxThreads = 8;
// How long the channel waits for the reply of a sync call before it goes on
// (with the next message, or by reporting the guest gone).
constexpr auto kDrainLimit = std::chrono::seconds(1);

// Plays the guest: hands out the queued messages in their order as the
// guest's threads would send them, each only once the sync call its thread
// made before has its reply (async calls stream), and answers each CALLBACK
// with a CALLBACK_DONE as the guest library would.
class FuzzChannel final : public ava::Channel {
public:
  explicit FuzzChannel(std::deque<Message> input) : input_(std::move(input)) {}

  Status send(const struct iovec *iov, int iovcnt) override {
    std::vector<uint8_t> bytes;
    for (int i = 0; i < iovcnt; ++i) {
      const auto *p = static_cast<const uint8_t *>(iov[i].iov_base);
      bytes.insert(bytes.end(), p, p + iov[i].iov_len);
    }
    std::lock_guard lock(mu_);
    if (closed_)
      return Status::error(AVA_E_CLOSED, "fuzz channel closed");
    progress_ = std::chrono::steady_clock::now();
    // Batched sends carry several messages back to back.
    for (size_t pos = 0; pos + sizeof(ava_msg_hdr) <= bytes.size();) {
      ava_msg_hdr hdr;
      std::memcpy(&hdr, bytes.data() + pos, sizeof hdr);
      if (hdr.total_len < sizeof hdr || hdr.total_len > bytes.size() - pos)
        return Status::error(AVA_E_PROTO, "worker sent a malformed message");
      if (hdr.kind == AVA_MSG_REPLY && hdr.call_id != kHelloCallId) {
        if (auto it = busy_.find(hdr.thread_id); it != busy_.end() && --it->second == 0)
          busy_.erase(it);
      } else if (hdr.kind == AVA_MSG_CALLBACK) {
        Message done;
        done.size = sizeof(ava_msg_hdr);
        done.words.assign(sizeof(ava_msg_hdr) / 8, 0);
        done.hdr() = hdr;
        done.hdr().kind = AVA_MSG_CALLBACK_DONE;
        done.hdr().total_len = sizeof(ava_msg_hdr);
        done.hdr().args_len = 0;
        done.hdr().status = AVA_OK;
        input_.push_front(std::move(done));
      }
      pos += hdr.total_len;
    }
    cv_.notify_all();
    return Status::ok();
  }

  Status recv(ava::MsgBuf &buf, int timeout_ms) override {
    std::unique_lock lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    auto until = timeout_ms < 0 ? now + kDrainLimit : now + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      if (closed_)
        return Status::error(AVA_E_CLOSED, "fuzz channel closed");
      // A CALLBACK_DONE answers a call that is still running: it cannot wait.
      const bool answered = busy_.empty();
      if (!input_.empty() && (input_.front().hdr().kind == AVA_MSG_CALLBACK_DONE ||
                              busy_.count(input_.front().hdr().thread_id) == 0))
        break;
      // A call that never returns must not stall the input forever (a real
      // guest would wait, but its other threads would go on).
      const bool stalled = std::chrono::steady_clock::now() >= progress_ + kDrainLimit;
      if (input_.empty() && (answered || stalled))
        return Status::error(AVA_E_CLOSED, "end of fuzz input"); // the guest leaves
      if (stalled)
        break;
      if (std::chrono::steady_clock::now() >= until)
        return Status::error(AVA_E_TIMEOUT, "no fuzz message yet");
      cv_.wait_until(lock, std::min(until, progress_ + kDrainLimit));
    }
    Message m = std::move(input_.front());
    input_.pop_front();
    progress_ = std::chrono::steady_clock::now();
    if (m.hdr().kind == AVA_MSG_CALL && (m.hdr().flags & AVA_F_SYNC) != 0)
      ++busy_[m.hdr().thread_id];
    if (!buf.reserve(m.size))
      return Status::error(AVA_E_NOMEM, "out of memory");
    std::memcpy(buf.data(), m.data(), m.size);
    buf.set_size(m.size);
    return Status::ok();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      cv_.notify_all();
    }
    // The session tears down next: the worker fails the user events the
    // input never set (ava_w_at_departure), which ends the commands and
    // waits behind them, so that its shadow threads can be joined.
  }

  std::string describe() const override { return "fuzz"; }

  static constexpr uint64_t kHelloCallId = ~0ull;

private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Message> input_;
  std::map<uint64_t, uint64_t> busy_; // guest thread -> its sync CALLs not yet answered
  bool closed_ = false;
  std::chrono::steady_clock::time_point progress_ = std::chrono::steady_clock::now();
};

// Functions whose real effect is not decoding but the end of the process or
// a long wait: demo_crash raises SIGSEGV on purpose (the fault tests' crash)
// and demo_sleep_ms sleeps up to a minute. Calls of them are dropped from the
// input (neither creates a handle, so later handle ids stay as recorded).
constexpr const char *kSkipped[] = {"demo_crash", "demo_sleep_ms"};
std::vector<bool> g_skip;

ava::PluginSet *g_plugins = nullptr;
const ava_worker_spec *g_spec = nullptr;
ava::WorkerOptions *g_options = nullptr;

Message hello_message() {
  Message m;
  m.size = sizeof(ava_msg_hdr) + sizeof(ava_hello);
  m.words.assign(m.size / 8, 0);
  ava_msg_hdr &h = m.hdr();
  h.magic = AVA_MSG_MAGIC;
  h.abi_version = AVA_ABI_VERSION;
  h.kind = AVA_MSG_HELLO;
  h.spec_id = g_spec->id;
  h.total_len = m.size;
  h.args_len = sizeof(ava_hello);
  h.call_id = FuzzChannel::kHelloCallId;
  ava_hello hello{};
  ava_hello_fill(&hello, g_spec->id, g_spec->hash, g_spec->name, 1, "fuzz");
  std::memcpy(m.data() + sizeof(ava_msg_hdr), &hello, sizeof hello);
  return m;
}

// Bends a message towards one the reader routes (see the top of the file);
// false: leave it out.
bool normalise(Message &m, std::map<uint64_t, uint64_t> &threads) {
  ava_msg_hdr &h = m.hdr();
  h.reserved = 0;
  if (h.kind != AVA_MSG_CALLBACK_DONE && h.kind != AVA_MSG_GOODBYE)
    h.kind = AVA_MSG_CALL;
  h.spec_id = g_spec->id;
  if (h.kind != AVA_MSG_CALL)
    return true;
  h.func_id %= g_spec->nfuncs;
  if (g_skip[h.func_id])
    return false;
  const uint32_t allowed = g_spec->func_flags[h.func_id] & (AVA_F_SYNC | AVA_F_ASYNC);
  uint32_t sent = h.flags & (AVA_F_SYNC | AVA_F_ASYNC);
  if ((sent != AVA_F_SYNC && sent != AVA_F_ASYNC) || (sent & allowed) == 0)
    sent = (allowed & AVA_F_SYNC) != 0 || allowed == 0 ? AVA_F_SYNC : AVA_F_ASYNC;
  h.flags = sent | (h.flags & AVA_F_FLUSH);
  // Guest thread ids in order of appearance, folded onto a few shadow threads.
  auto it = threads.find(h.thread_id);
  if (it == threads.end())
    it = threads.emplace(h.thread_id, threads.size() % kMaxThreads + 1).first;
  h.thread_id = it->second;
  return true;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  g_plugins = new ava::PluginSet(AVA_FUZZ_PLUGIN_DIR, {AVA_FUZZ_SPEC});
  Status found = g_plugins->find(AVA_FUZZ_SPEC, &g_spec);
  if (!found.is_ok()) {
    std::fprintf(stderr, "fuzz_worker: cannot load the %s plugin from %s: %s\n", AVA_FUZZ_SPEC,
                 AVA_FUZZ_PLUGIN_DIR, found.message.c_str());
    std::exit(1);
  }
  g_skip.assign(g_spec->nfuncs, false);
  for (uint32_t f = 0; f < g_spec->nfuncs; ++f)
    for (const char *name : kSkipped)
      g_skip[f] = g_skip[f] || (g_spec->func_names != nullptr && g_spec->func_names[f] != nullptr &&
                                std::strcmp(g_spec->func_names[f], name) == 0);
  g_options = new ava::WorkerOptions;
  g_options->callback_timeout_ms = 1000;
  g_options->max_message = 64ull << 20;
  g_options->max_guest_threads = kMaxThreads;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A driver that aborts on its own (PoCL's assertions) ends the process
  // before libFuzzer can write the input out: AVA_FUZZ_LAST_INPUT keeps it.
  if (const char *keep = std::getenv("AVA_FUZZ_LAST_INPUT"); keep != nullptr) {
    if (FILE *f = std::fopen(keep, "wb"); f != nullptr) {
      std::fwrite(data, 1, size, f);
      std::fclose(f);
    }
  }
  std::vector<Message> records = ava::fuzz::split_records(data, size, kMaxRecords);
  std::deque<Message> input;
  input.push_back(hello_message());
  std::map<uint64_t, uint64_t> threads;
  // AVA_FUZZ_TRACE lists the calls an input makes, to read a finding.
  static const bool trace = std::getenv("AVA_FUZZ_TRACE") != nullptr;
  for (Message &m : records) {
    if (!normalise(m, threads))
      continue;
    if (trace && m.hdr().kind == AVA_MSG_CALL)
      std::fprintf(stderr, "fuzz: thread %u %s %s (%u bytes)\n", unsigned(m.hdr().thread_id),
                   (m.hdr().flags & AVA_F_SYNC) != 0 ? "sync" : "async",
                   g_spec->func_names != nullptr ? g_spec->func_names[m.hdr().func_id] : "?",
                   unsigned(m.size));
    input.push_back(std::move(m));
  }
  ava::serve_guest(std::make_unique<FuzzChannel>(std::move(input)), *g_plugins, *g_options);
  return 0;
}
