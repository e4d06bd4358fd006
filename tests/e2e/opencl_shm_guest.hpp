// SPDX-License-Identifier: MIT
// A guest of the OpenCL worker that speaks raw messages over shm, for tests
// in which the guest is the attacker (it chooses what the shared heap holds
// and what the descriptors say), and the worker it attacks: `ava worker
// --spec opencl` on a shm address of a temporary directory.
#pragma once

#include <criterion/criterion.h>

#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include "e2e_env.hpp"
#include "opencl_wire.h"
#include "proc.hpp"
#include "tests/common/wire_message.hpp"
#include "transport/channel.hpp"

namespace opencl_shm {

constexpr int kWaitMs = 30000;
// The payload of a CALL: IN buffers, each with its zero guard, 8-aligned.
struct Payload {
  std::vector<uint8_t> bytes;
  ava_buf_desc in(const void *data, uint64_t len) {
    const uint64_t at = bytes.size();
    bytes.resize(at + AVA_PAYLOAD_SPAN(len), 0);
    std::memcpy(bytes.data() + at, data, len);
    return {at, len, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
  }
};

inline ava_buf_desc out(uint64_t len) {
  return {0, len, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
}

// A guest speaking raw messages of the OpenCL spec over a shm channel.
class ShmGuest {
public:
  explicit ShmGuest(const std::string &address) {
    ava::Address a;
    ava::Status st = ava::parse_address(address, ava::ChannelKind::Shm, &a);
    cr_assert(st.is_ok(), "%s: %s", address.c_str(), st.message.c_str());
    st = ava::connect_channel(a, kWaitMs, &channel_);
    cr_assert(st.is_ok(), "connect %s: %s", address.c_str(), st.message.c_str());
    heap_ = channel_->heap();
    cr_assert(heap_.base != nullptr && heap_.size >= 1 << 20, "the shm channel has no heap");
    ava_hello h{};
    ava_hello_fill(&h, AVA_OPENCL_SPEC_ID, AVA_OPENCL_SPEC_HASH, AVA_OPENCL_SPEC_NAME,
                   static_cast<uint64_t>(getpid()), "test");
    wire_test::MsgHeader m;
    m.kind = AVA_MSG_HELLO;
    m.spec_id = AVA_OPENCL_SPEC_ID;
    m.flags = 0;
    send(wire_test::build_message(m, &h, sizeof h));
    ava::MsgBuf ack;
    cr_assert(channel_->recv(ack, kWaitMs).is_ok(), "no HELLO_ACK");
    cr_assert_eq(ack.header()->kind, AVA_MSG_HELLO_ACK);
    cr_assert_eq(ack.header()->status, AVA_OK, "the worker refused the HELLO");
  }

  uint8_t *heap(uint64_t offset) { return heap_.base + offset; }
  uint64_t heap_size() const { return heap_.size; }

  // A sync CALL; the REPLY's status, and the reply into *reply.
  template <class A>
  int call(uint32_t func, const A &args, ava::MsgBuf *reply, const Payload &payload = {}) {
    wire_test::MsgHeader m;
    m.spec_id = AVA_OPENCL_SPEC_ID;
    m.func_id = func;
    m.call_id = ++call_id_;
    send(wire_test::build_message(m, &args, sizeof args, payload.bytes.data(),
                                  payload.bytes.size()));
    for (;;) {
      ava::Status st = channel_->recv(*reply, kWaitMs);
      cr_assert(st.is_ok(), "no reply to function %u (the worker is gone?): %s", func,
                st.message.c_str());
      if (reply->header()->kind == AVA_MSG_REPLY && reply->header()->call_id == m.call_id)
        return reply->header()->status;
    }
  }

  template <class R> static R reply_struct(const ava::MsgBuf &r) {
    R value{};
    const uint64_t at = sizeof(ava_msg_hdr) + sizeof(ava_reply_common);
    cr_assert_geq(r.size(), at + sizeof value, "short reply");
    std::memcpy(&value, r.data() + at, sizeof value);
    return value;
  }

  // The bytes an OUT descriptor of reply r names: in the heap or its payload.
  std::vector<uint8_t> out_bytes(const ava::MsgBuf &r, const ava_buf_desc &d) {
    if ((d.flags & AVA_BUF_PRESENT) == 0)
      return {};
    if ((d.flags & AVA_BUF_HEAP) != 0) {
      cr_assert(d.offset <= heap_.size && d.length <= heap_.size - d.offset);
      return {heap_.base + d.offset, heap_.base + d.offset + d.length};
    }
    const uint64_t payload_at = sizeof(ava_msg_hdr) + r.header()->args_len;
    cr_assert(d.offset <= r.size() - payload_at && d.length <= r.size() - payload_at - d.offset,
              "an out buffer outside the reply");
    return {r.data() + payload_at + d.offset, r.data() + payload_at + d.offset + d.length};
  }
  template <class T> T out_value(const ava::MsgBuf &r, const ava_buf_desc &d) {
    std::vector<uint8_t> b = out_bytes(r, d);
    T value{};
    cr_assert_eq(b.size(), sizeof value, "an out value of %zu bytes", b.size());
    std::memcpy(&value, b.data(), sizeof value);
    return value;
  }

private:
  void send(const std::vector<uint8_t> &msg) {
    struct iovec iov = {const_cast<uint8_t *>(msg.data()), msg.size()};
    ava::Status st = channel_->send(&iov, 1);
    cr_assert(st.is_ok(), "send: %s", st.message.c_str());
  }

  std::unique_ptr<ava::Channel> channel_;
  ava::Channel::Heap heap_;
  uint64_t call_id_ = 0;
};

inline uint64_t first_platform(ShmGuest &g) {
  ava_opencl_clGetPlatformIDs_call a{.num_entries = 1, .platforms = out(8), .num_platforms = {}};
  ava::MsgBuf r;
  cr_assert_eq(g.call(AVA_OPENCL_FN_CLGETPLATFORMIDS, a, &r), AVA_OK);
  const auto v = ShmGuest::reply_struct<ava_opencl_clGetPlatformIDs_reply>(r);
  cr_assert_eq(v.ret, CL_SUCCESS, "clGetPlatformIDs: %ld", static_cast<long>(v.ret));
  const uint64_t id = g.out_value<uint64_t>(r, v.platforms);
  cr_assert_neq(id, 0u);
  return id;
}

// The first device of the first platform, and a context on it.
struct OpenclContext {
  uint64_t platform = 0, device = 0, context = 0;
};

inline OpenclContext open_context(ShmGuest &g) {
  OpenclContext o;
  o.platform = first_platform(g);
  ava::MsgBuf r;
  ava_opencl_clGetDeviceIDs_call d{.platform = o.platform,
                                   .device_type = CL_DEVICE_TYPE_ALL,
                                   .num_entries = 1,
                                   .devices = out(8),
                                   .num_devices = {}};
  cr_assert_eq(g.call(AVA_OPENCL_FN_CLGETDEVICEIDS, d, &r), AVA_OK);
  const auto dv = ShmGuest::reply_struct<ava_opencl_clGetDeviceIDs_reply>(r);
  cr_assert_eq(dv.ret, CL_SUCCESS);
  o.device = g.out_value<uint64_t>(r, dv.devices);

  Payload p;
  ava_opencl_clCreateContext_call c{.properties = {},
                                    .num_devices = 1,
                                    .devices = p.in(&o.device, sizeof o.device),
                                    .pfn_notify = 0,
                                    .user_data = 0,
                                    .errcode_ret = out(4)};
  cr_assert_eq(g.call(AVA_OPENCL_FN_CLCREATECONTEXT, c, &r, p), AVA_OK);
  o.context = ShmGuest::reply_struct<ava_opencl_clCreateContext_reply>(r).ret;
  cr_assert_neq(o.context, 0u, "clCreateContext failed");
  return o;
}

// Started by the constructor, which returns once it listens.
struct Worker {
  std::string dir = make_temp_dir();
  std::string address = "shm:" + dir + "/worker.sock";
  BackgroundProc proc{argv(address), env()};
  Worker() {
    std::string seen;
    cr_assert(proc.wait_for_line("worker.sock", 20000, &seen), "the worker did not start:\n%s",
              seen.c_str());
  }
  Worker(const Worker &) = delete;
  Worker &operator=(const Worker &) = delete;
  // After an attack: the worker is alive and serves another guest.
  void expect_serves_another() {
    ShmGuest other(address);
    first_platform(other);
    cr_expect_eq(proc.wait_exit(0), -1, "the worker died");
  }
  static std::vector<std::string> argv(const std::string &address) {
    std::vector<std::string> a = {AVA_BIN,    "worker", "--spec",     "opencl",
                                  "--listen", address,  "--ready-fd", "1"};
    for (const std::string &m : worker_mode_args())
      a.push_back(m);
    return a;
  }
  static std::vector<std::string> env() {
    std::vector<std::string> e = clean_env();
    e.push_back("ASAN_OPTIONS=detect_leaks=0:use_sigaltstack=0"); // as tests/opencl/ocl_run.hpp
    e.push_back("POCL_MEMORY_LIMIT=4");
    return e;
  }
  ~Worker() {
    proc.kill_now(SIGTERM);
    proc.wait_exit(10000);
    const std::string rm = "rm -rf " + dir;
    [[maybe_unused]] int rc = system(rm.c_str());
  }
};

} // namespace opencl_shm
