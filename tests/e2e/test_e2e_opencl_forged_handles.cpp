// SPDX-License-Identifier: MIT
// A hostile guest of the OpenCL worker (PoCL behind it) over shm: it lends
// info queries that return objects (clGetContextInfo CL_CONTEXT_DEVICES,
// clGetDeviceInfo CL_DEVICE_PLATFORM, clGetCommandQueueInfo CL_QUEUE_CONTEXT)
// an out buffer in the shared heap, larger than the answer and filled with
// addresses it chose. The worker must answer with the one real id and
// zeroes: never an id for a planted address (the ICD dispatch would jump
// through it), never a raw driver pointer. The planted values name no object
// later, and the worker keeps serving another guest.
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

namespace {

constexpr int kWaitMs = 30000;
constexpr uint64_t kSlots = 64; // the buffer lent; each answer fills one slot
// What the guest plants: pointer-looking values, one per slot.
constexpr uint64_t kPlanted = 0x00007f4141410000ull;

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

ava_buf_desc out(uint64_t len) {
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
    h.spec_hash = AVA_OPENCL_SPEC_HASH;
    h.pid = static_cast<uint64_t>(getpid());
    h.spec_id = AVA_OPENCL_SPEC_ID;
    std::strncpy(h.spec_name, AVA_OPENCL_SPEC_NAME, sizeof(h.spec_name) - 1);
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

uint64_t first_platform(ShmGuest &g) {
  ava_opencl_clGetPlatformIDs_call a{.num_entries = 1, .platforms = out(8), .num_platforms = {}};
  ava::MsgBuf r;
  cr_assert_eq(g.call(AVA_OPENCL_FN_CLGETPLATFORMIDS, a, &r), AVA_OK);
  const auto v = ShmGuest::reply_struct<ava_opencl_clGetPlatformIDs_reply>(r);
  cr_assert_eq(v.ret, CL_SUCCESS, "clGetPlatformIDs: %ld", static_cast<long>(v.ret));
  const uint64_t id = g.out_value<uint64_t>(r, v.platforms);
  cr_assert_neq(id, 0u);
  return id;
}

// The answer of an info query lent kSlots heap slots that hold kPlanted + i:
// slot 0 must be expected, every other slot zero; the size the driver
// reported, when asked for, one slot.
template <class Call, class Reply>
void expect_no_forged_ids(ShmGuest &g, uint32_t func, Call a, uint64_t heap_at, bool ask_size,
                          uint64_t expected, const char *what) {
  for (uint64_t i = 0; i < kSlots; ++i) {
    const uint64_t v = kPlanted + i * 0x1000;
    std::memcpy(g.heap(heap_at + i * 8), &v, sizeof v);
  }
  a.param_value_size = kSlots * 8;
  a.param_value = {heap_at, kSlots * 8, AVA_BUF_PRESENT | AVA_BUF_OUT | AVA_BUF_HEAP, 0};
  a.param_value_size_ret = ask_size ? out(8) : ava_buf_desc{};
  ava::MsgBuf r;
  cr_assert_eq(g.call(func, a, &r), AVA_OK, "[%s] status", what);
  const auto v = ShmGuest::reply_struct<Reply>(r);
  cr_assert_eq(v.ret, CL_SUCCESS, "[%s] ret %ld", what, static_cast<long>(v.ret));
  if (ask_size)
    cr_expect_eq(g.out_value<uint64_t>(r, v.param_value_size_ret), 8u, "[%s] size", what);
  const std::vector<uint8_t> bytes = g.out_bytes(r, v.param_value);
  cr_assert_eq(bytes.size(), kSlots * 8, "[%s] %zu bytes back", what, bytes.size());
  std::vector<uint64_t> slots(kSlots);
  std::memcpy(slots.data(), bytes.data(), bytes.size());
  cr_expect_eq(slots[0], expected, "[%s] slot 0: 0x%lx, not the id 0x%lx", what,
               static_cast<unsigned long>(slots[0]), static_cast<unsigned long>(expected));
  for (uint64_t i = 1; i < kSlots; ++i)
    cr_expect_eq(slots[i], 0u, "[%s] slot %lu came back as 0x%lx", what,
                 static_cast<unsigned long>(i), static_cast<unsigned long>(slots[i]));

  // Whatever came back besides the answer, and the planted values
  // themselves, name no device: the API's invalid-object error.
  std::vector<uint64_t> probes = {kPlanted, kPlanted + 0x1000};
  for (uint64_t i = 1; i < kSlots; ++i)
    if (slots[i] != 0)
      probes.push_back(slots[i]);
  for (uint64_t id : probes) {
    ava_opencl_clGetDeviceInfo_call q{.device = id,
                                      .param_name = CL_DEVICE_NAME,
                                      .param_value_size = 64,
                                      .param_value = out(64),
                                      .param_value_size_ret = {}};
    cr_assert_eq(g.call(AVA_OPENCL_FN_CLGETDEVICEINFO, q, &r), AVA_OK,
                 "[%s] using 0x%lx as a device", what, static_cast<unsigned long>(id));
    cr_expect_eq(ShmGuest::reply_struct<ava_opencl_clGetDeviceInfo_reply>(r).ret, CL_INVALID_DEVICE,
                 "[%s] 0x%lx is a device", what, static_cast<unsigned long>(id));
  }
}

struct Worker {
  std::string dir = make_temp_dir();
  std::string address = "shm:" + dir + "/worker.sock";
  BackgroundProc proc{argv(address), env()};
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

} // namespace

Test(e2e_opencl_forged_handles, planted_heap_values_never_become_handles, .timeout = 300) {
  Worker w;
  std::string seen;
  cr_assert(w.proc.wait_for_line("worker.sock", 20000, &seen), "the worker did not start:\n%s",
            seen.c_str());
  {
    ShmGuest g(w.address);
    const uint64_t platform = first_platform(g);
    ava::MsgBuf r;
    ava_opencl_clGetDeviceIDs_call d{.platform = platform,
                                     .device_type = CL_DEVICE_TYPE_ALL,
                                     .num_entries = 1,
                                     .devices = out(8),
                                     .num_devices = {}};
    cr_assert_eq(g.call(AVA_OPENCL_FN_CLGETDEVICEIDS, d, &r), AVA_OK);
    const auto dv = ShmGuest::reply_struct<ava_opencl_clGetDeviceIDs_reply>(r);
    cr_assert_eq(dv.ret, CL_SUCCESS);
    const uint64_t device = g.out_value<uint64_t>(r, dv.devices);

    Payload p;
    ava_opencl_clCreateContext_call c{.properties = {},
                                      .num_devices = 1,
                                      .devices = p.in(&device, sizeof device),
                                      .pfn_notify = 0,
                                      .user_data = 0,
                                      .errcode_ret = out(4)};
    cr_assert_eq(g.call(AVA_OPENCL_FN_CLCREATECONTEXT, c, &r, p), AVA_OK);
    const uint64_t context = ShmGuest::reply_struct<ava_opencl_clCreateContext_reply>(r).ret;
    cr_assert_neq(context, 0u, "clCreateContext failed");
    ava_opencl_clCreateCommandQueue_call q{
        .context = context, .device = device, .properties = 0, .errcode_ret = out(4)};
    cr_assert_eq(g.call(AVA_OPENCL_FN_CLCREATECOMMANDQUEUE, q, &r), AVA_OK);
    const uint64_t queue = ShmGuest::reply_struct<ava_opencl_clCreateCommandQueue_reply>(r).ret;
    cr_assert_neq(queue, 0u, "clCreateCommandQueue failed");

    ava_opencl_clGetContextInfo_call ci{};
    ci.context = context;
    ci.param_name = CL_CONTEXT_DEVICES;
    expect_no_forged_ids<ava_opencl_clGetContextInfo_call, ava_opencl_clGetContextInfo_reply>(
        g, AVA_OPENCL_FN_CLGETCONTEXTINFO, ci, 64 * 1024, true, device, "CL_CONTEXT_DEVICES");
    // No param_value_size_ret: the worker still translates only what was written.
    ava_opencl_clGetDeviceInfo_call di{};
    di.device = device;
    di.param_name = CL_DEVICE_PLATFORM;
    expect_no_forged_ids<ava_opencl_clGetDeviceInfo_call, ava_opencl_clGetDeviceInfo_reply>(
        g, AVA_OPENCL_FN_CLGETDEVICEINFO, di, 128 * 1024, false, platform, "CL_DEVICE_PLATFORM");
    ava_opencl_clGetCommandQueueInfo_call qi{};
    qi.command_queue = queue;
    qi.param_name = CL_QUEUE_CONTEXT;
    expect_no_forged_ids<ava_opencl_clGetCommandQueueInfo_call,
                         ava_opencl_clGetCommandQueueInfo_reply>(
        g, AVA_OPENCL_FN_CLGETCOMMANDQUEUEINFO, qi, 192 * 1024, true, context, "CL_QUEUE_CONTEXT");
  }
  // Another guest is served as ever.
  ShmGuest other(w.address);
  first_platform(other);
  cr_expect_eq(w.proc.wait_exit(0), -1, "the worker died");
}
