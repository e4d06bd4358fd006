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
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_input.hpp"
#include "transport/channel.hpp"
#include "worker/plugin_set.hpp"
#include "worker/server.hpp"

namespace {

using ava::Status;
using ava::fuzz::Message;

constexpr size_t kMaxRecords = 512;
constexpr uint64_t kMaxThreads = 4;
// After the last message: how long the channel waits for the replies of the
// sync calls still running before it reports the guest gone.
constexpr auto kDrainLimit = std::chrono::seconds(5);

// Plays the guest: hands out the queued messages, counts replies, and
// answers each CALLBACK with a CALLBACK_DONE as the guest library would.
class FuzzChannel final : public ava::Channel {
public:
  explicit FuzzChannel(std::deque<Message> input) : input_(std::move(input)) {
    for (Message &m : input_)
      if (m.hdr().kind == AVA_MSG_CALL && (m.hdr().flags & AVA_F_SYNC) != 0)
        ++sync_calls_;
  }

  Status send(const struct iovec *iov, int iovcnt) override {
    std::vector<uint8_t> bytes;
    for (int i = 0; i < iovcnt; ++i) {
      const auto *p = static_cast<const uint8_t *>(iov[i].iov_base);
      bytes.insert(bytes.end(), p, p + iov[i].iov_len);
    }
    std::lock_guard lock(mu_);
    if (closed_)
      return Status::error(AVA_E_CLOSED, "fuzz channel closed");
    // Batched sends carry several messages back to back.
    for (size_t pos = 0; pos + sizeof(ava_msg_hdr) <= bytes.size();) {
      ava_msg_hdr hdr;
      std::memcpy(&hdr, bytes.data() + pos, sizeof hdr);
      if (hdr.total_len < sizeof hdr || hdr.total_len > bytes.size() - pos)
        return Status::error(AVA_E_PROTO, "worker sent a malformed message");
      if (hdr.kind == AVA_MSG_REPLY && hdr.call_id != kHelloCallId) {
        ++replies_;
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
      if (!input_.empty())
        break;
      // Out of input: the guest leaves once its sync calls are answered.
      if (drain_deadline_ == std::chrono::steady_clock::time_point{})
        drain_deadline_ = std::chrono::steady_clock::now() + kDrainLimit;
      if (replies_ >= sync_calls_ || std::chrono::steady_clock::now() >= drain_deadline_)
        return Status::error(AVA_E_CLOSED, "end of fuzz input");
      if (std::chrono::steady_clock::now() >= until)
        return Status::error(AVA_E_TIMEOUT, "no fuzz message yet");
      cv_.wait_until(lock, std::min(until, drain_deadline_));
    }
    Message m = std::move(input_.front());
    input_.pop_front();
    if (!buf.reserve(m.size))
      return Status::error(AVA_E_NOMEM, "out of memory");
    std::memcpy(buf.data(), m.data(), m.size);
    buf.set_size(m.size);
    return Status::ok();
  }

  void shutdown() override {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }

  std::string describe() const override { return "fuzz"; }

  static constexpr uint64_t kHelloCallId = ~0ull;

private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Message> input_;
  uint64_t sync_calls_ = 0;
  uint64_t replies_ = 0;
  bool closed_ = false;
  std::chrono::steady_clock::time_point drain_deadline_{};
};

// Functions whose real effect is not decoding but the end of the process or
// an unbounded wait: demo_crash raises SIGSEGV on purpose (the fault tests'
// crash), demo_sleep_ms sleeps up to a minute, and an OpenCL user event that
// is never set makes every command waiting on it (clFinish, clWaitForEvents)
// wait forever. Calls of them are dropped from the input.
constexpr const char *kSkipped[] = {"demo_crash", "demo_sleep_ms", "clCreateUserEvent"};
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
  hello.spec_hash = g_spec->hash;
  hello.pid = 1;
  hello.spec_id = g_spec->id;
  std::snprintf(hello.spec_name, sizeof hello.spec_name, "%s", g_spec->name);
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
  std::vector<Message> records = ava::fuzz::split_records(data, size, kMaxRecords);
  std::deque<Message> input;
  input.push_back(hello_message());
  std::map<uint64_t, uint64_t> threads;
  for (Message &m : records) {
    if (normalise(m, threads))
      input.push_back(std::move(m));
  }
  ava::serve_guest(std::make_unique<FuzzChannel>(std::move(input)), *g_plugins, *g_options);
  return 0;
}
