// SPDX-License-Identifier: MIT
// The guest library's decoding of what a (hostile) worker sends: the reader
// that routes REPLY and CALLBACK messages (shim/connection.cpp), the reply
// checks (shim/reply.cpp) and the generated callback dispatch of the wtest
// spec (tests/wtest), in process over an in-memory channel.
//
// Each input is a sequence of worker messages (fuzz_input.hpp). For the n-th
// REPLY record the harness sends a CALL with call_id n and the record's
// function, waits for its reply and checks it as a stub would: check_reply
// with the reply struct length the record's thread_id names, then every
// 24-byte slot of the reply struct as a returned buffer descriptor, copying
// what check_out_buffer allows. The REPLY's ids are made to match its call so
// that the checks behind them are reached. CALLBACKs name registration 1 (an
// event callback) or 2 (a data callback), which the callbacks here read in
// full, so that ASan sees what the dispatch hands them; their declaration id
// is left to the fuzzer (a mismatch must be refused, never dispatched).
// DATA messages name transfer 1 or 2 (destinations of 64 bytes and 4 KiB
// on the heap, so ASan sees a piece written past them) or none (0).
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "shim/ava_shim.h"
#include "shim/callback_registry.hpp"
#include "shim/config.hpp"
#include "shim/connection.hpp"
#include "shim/reply.hpp"
#include "tests/fuzz/fuzz_input.hpp"
#include "transport/channel.hpp"
#include "wtest.h"
#include "wtest_wire.h"

extern "C" const struct ava_guest_spec *wtest_guest_spec(void);

namespace {

using ava::Status;
using ava::fuzz::Message;

constexpr size_t kMaxRecords = 64;
constexpr size_t kMaxCalls = 8;
constexpr int kReplyWaitMs = 200;
constexpr uint64_t kOutCapacity = 4096;

class GuestFuzzChannel final : public ava::Channel {
public:
  explicit GuestFuzzChannel(std::deque<Message> input) : input_(std::move(input)) {}

  // Whatever the guest sends (CALLs, CALLBACK_DONEs, GOODBYE) goes nowhere,
  // but each CALL releases the next batch of worker messages: up to and
  // including the next REPLY, so that replies come after their calls.
  Status send(const struct iovec *iov, int iovcnt) override {
    ava_msg_hdr hdr{};
    if (iovcnt > 0 && iov[0].iov_len >= sizeof hdr)
      std::memcpy(&hdr, iov[0].iov_base, sizeof hdr);
    std::lock_guard lock(mu_);
    if (closed_)
      return Status::error(AVA_E_CLOSED, "fuzz channel closed");
    if (hdr.kind == AVA_MSG_CALL)
      ++calls_;
    else if (hdr.kind == AVA_MSG_CALLBACK_DONE)
      ++callbacks_done_;
    cv_.notify_all();
    return Status::ok();
  }

  // Waits (boundedly) until the guest answered every CALLBACK it was handed:
  // closing earlier would drop callbacks still queued for its callback thread.
  void wait_callbacks_answered() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(kReplyWaitMs),
                 [this] { return closed_ || callbacks_done_ >= callbacks_; });
  }

  Status recv(ava::MsgBuf &buf, int timeout_ms) override {
    std::unique_lock lock(mu_);
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(timeout_ms < 0 ? kReplyWaitMs : timeout_ms);
    for (;;) {
      if (closed_)
        return Status::error(AVA_E_CLOSED, "fuzz channel closed");
      if (input_.empty())
        return Status::error(AVA_E_CLOSED, "end of fuzz input");
      // A REPLY waits for its CALL; everything else comes at once.
      if (input_.front().hdr().kind != AVA_MSG_REPLY || replies_ < calls_)
        break;
      if (cv_.wait_until(lock, until) == std::cv_status::timeout)
        return Status::error(AVA_E_TIMEOUT, "no fuzz message yet");
    }
    Message m = std::move(input_.front());
    input_.pop_front();
    if (m.hdr().kind == AVA_MSG_REPLY)
      ++replies_;
    if (m.hdr().kind == AVA_MSG_CALLBACK)
      ++callbacks_;
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

private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Message> input_;
  uint64_t calls_ = 0;
  uint64_t replies_ = 0;
  uint64_t callbacks_ = 0;
  uint64_t callbacks_done_ = 0;
  bool closed_ = false;
};

volatile size_t g_sink;

void on_event(wt_obj, int32_t event, const char *message, void *) {
  g_sink = static_cast<size_t>(event) + (message != nullptr ? std::strlen(message) : 0);
}

void on_data(wt_obj, const void *data, uint64_t size, void *) {
  const auto *p = static_cast<const uint8_t *>(data);
  size_t sum = 0;
  for (uint64_t i = 0; p != nullptr && i < size; ++i)
    sum += p[i];
  g_sink = sum;
}

struct PlannedCall {
  uint32_t func_id;
  uint32_t reply_len;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const ava_guest_spec *spec = wtest_guest_spec();
  std::vector<Message> records = ava::fuzz::split_records(data, size, kMaxRecords);
  std::deque<Message> input;
  std::vector<PlannedCall> calls;
  for (Message &m : records) {
    ava_msg_hdr &h = m.hdr();
    if (h.kind == AVA_MSG_REPLY) {
      if (calls.size() == kMaxCalls)
        continue;
      h.func_id %= spec->nfuncs;
      h.spec_id = spec->id;
      calls.push_back({h.func_id, static_cast<uint32_t>(h.thread_id & 0xff)});
      h.call_id = calls.size();
    } else if (h.kind == AVA_MSG_CALLBACK) {
      h.spec_id = spec->id;
      h.call_id = h.call_id % 3; // 0: unknown, 1: event, 2: data
    } else if (h.kind == AVA_MSG_DATA) {
      h.call_id = h.call_id % 3; // 0: unknown, 1 and 2: the destinations below
    }
    input.push_back(std::move(m));
  }

  ava::guest::CallbackRegistry callbacks;
  callbacks.add(
      {reinterpret_cast<void (*)(void)>(&on_event), nullptr, 0, 0, AVA_WTEST_CB_WT_EVENT_CALLBACK});
  callbacks.add(
      {reinterpret_cast<void (*)(void)>(&on_data), nullptr, 0, 0, AVA_WTEST_CB_WT_DATA_CALLBACK});
  ava::guest::TransferTable transfers;
  auto small = std::make_unique<uint8_t[]>(64);
  auto large = std::make_unique<uint8_t[]>(4096);
  (void)transfers.expect(small.get(), 64);
  (void)transfers.expect(large.get(), 4096);
  ava::GuestConfig config;
  config.call_timeout_ms = kReplyWaitMs;
  config.callback_timeout_ms = 1000;
  auto owned = std::make_unique<GuestFuzzChannel>(std::move(input));
  GuestFuzzChannel *channel = owned.get(); // lives as long as conn
  auto conn = std::make_shared<ava::guest::Connection>(spec, &callbacks, &transfers,
                                                       std::move(owned), "fuzz", config);
  if (!conn->start().is_ok())
    return 0;
  for (size_t n = 0; n < calls.size(); ++n) {
    ava_msg_hdr call{};
    call.magic = AVA_MSG_MAGIC;
    call.abi_version = AVA_ABI_VERSION;
    call.kind = AVA_MSG_CALL;
    call.spec_id = spec->id;
    call.func_id = calls[n].func_id;
    call.total_len = sizeof call;
    call.thread_id = 1;
    call.call_id = n + 1;
    call.flags = AVA_F_SYNC;
    struct iovec iov = {&call, sizeof call};
    ava::guest::ReplyWaiter waiter;
    uint64_t order = 0;
    if (!conn->send_call(&iov, 1, sizeof call, call.call_id, &waiter, false, &order).is_ok())
      break;
    ava::MsgBuf reply;
    if (!conn->wait_reply(&waiter, call.call_id, kReplyWaitMs, true, &reply).is_ok())
      break;
    ava::guest::ReplyExpect expect{spec->id, call.func_id, call.call_id, calls[n].reply_len};
    ava::guest::ReplyView view;
    if (!ava::guest::check_reply(reply, expect, &view).is_ok())
      continue;
    uint8_t out[kOutCapacity];
    for (uint32_t at = 0; at + sizeof(ava_buf_desc) <= calls[n].reply_len;
         at += sizeof(ava_buf_desc)) {
      ava_buf_desc desc;
      std::memcpy(&desc, view.reply + at, sizeof desc);
      uint64_t copy_len = 0;
      if (ava::guest::check_out_buffer(desc, view.payload_len, sizeof out, true, &copy_len)
              .is_ok() &&
          copy_len > 0)
        std::memcpy(out, view.payload + desc.offset, copy_len);
    }
  }
  channel->wait_callbacks_answered();
  conn->close();
  return 0;
}
