// SPDX-License-Identifier: MIT
// The worker refuses malformed guest traffic with the right status, never
// crashes on it, and keeps serving the guest afterwards.
#include <criterion/criterion.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>

#include "tests/wtest/wtest.h"
#include "tests/wtest/wtest_hooks.h"
#include "worker/testing/fake_guest.hpp"

using namespace ava;
using namespace ava::testing;

namespace {

constexpr uint64_t kMaxMessage = 1u << 20;
constexpr uint64_t kBogusHandle = 0xdead0000beefull;

struct Ctx {
  FakeGuest *guest;
  uint64_t obj;
  uint64_t other;
};

struct CallCase {
  const char *name;
  std::function<RawMessage(const Ctx &)> build;
  int expected;
  // With expected AVA_OK: the call's return value (the first field of every
  // generated reply struct).
  int64_t ret = 0;
};

using AddCall = ava_wtest_wt_add_call;
using WriteCall = ava_wtest_wt_obj_write_call;

RawMessage add_call(const Ctx &c) {
  AddCall a{.a = 2, .b = 3};
  return c.guest->make_call(AVA_WTEST_FN_WT_ADD, &a, sizeof a);
}

// An obj_write of `size` bytes whose descriptor and payload a case may spoil.
RawMessage write_call(const Ctx &c, uint64_t size,
                      const std::function<void(WriteCall &, Payload &)> &spoil) {
  std::string data(size, 'w');
  Payload p;
  WriteCall a{.obj = c.obj, .data = p.add(data.data(), size), .size = size};
  spoil(a, p);
  return c.guest->make_call(AVA_WTEST_FN_WT_OBJ_WRITE, &a, sizeof a, p);
}

RawMessage read_call(const Ctx &c, uint64_t size, ava_buf_desc d) {
  ava_wtest_wt_obj_read_call a{.obj = c.obj, .data = d, .size = size};
  return c.guest->make_call(AVA_WTEST_FN_WT_OBJ_READ, &a, sizeof a);
}

RawMessage sum_call(const Ctx &c, std::vector<uint64_t> ids, uint64_t count) {
  Payload p;
  ava_wtest_wt_sum_sizes_call a{
      .objs = p.add(ids.data(), ids.size() * 8), .count = count, .total = Payload::out(8)};
  return c.guest->make_call(AVA_WTEST_FN_WT_SUM_SIZES, &a, sizeof a, p);
}

// The generated handlers pass an unknown or wrongly typed id on to the library
// as NULL, which it refuses with WT_ERR_INVALID; had the worker passed on
// anything else (the id, another object), it would answer WT_ERR_NOT_LIVE.
const CallCase kCases[] = {
    {"bad spec id",
     [](const Ctx &c) {
       RawMessage m = add_call(c);
       m.hdr().spec_id = AVA_WTEST_SPEC_ID + 1;
       return m;
     },
     AVA_E_SPEC},
    {"function id out of range",
     [](const Ctx &c) {
       AddCall a{.a = 1, .b = 1};
       return c.guest->make_call(AVA_WTEST_NFUNCS, &a, sizeof a);
     },
     AVA_E_FUNC},
    {"function id huge",
     [](const Ctx &c) {
       AddCall a{.a = 1, .b = 1};
       return c.guest->make_call(0xffffffffu, &a, sizeof a);
     },
     AVA_E_FUNC},
    {"unsupported function",
     [](const Ctx &c) {
       AddCall a{.a = 1, .b = 1};
       return c.guest->make_call(AVA_WTEST_FN_WT_UNSUPPORTED, &a, sizeof a);
     },
     AVA_E_UNSUPPORTED},
    {"sync call of an async function",
     [](const Ctx &c) {
       ava_wtest_wt_async_set_call a{.obj = c.obj, .value = 1};
       return c.guest->make_call(AVA_WTEST_FN_WT_ASYNC_SET, &a, sizeof a);
     },
     AVA_E_PROTO},
    {"both sync and async",
     [](const Ctx &c) {
       RawMessage m = add_call(c);
       m.hdr().flags = AVA_F_SYNC | AVA_F_ASYNC;
       return m;
     },
     AVA_E_PROTO},
    {"unknown header flag",
     [](const Ctx &c) {
       RawMessage m = add_call(c);
       m.hdr().flags = AVA_F_SYNC | 0x100;
       return m;
     },
     AVA_E_PROTO},
    {"reserved header field",
     [](const Ctx &c) {
       RawMessage m = add_call(c);
       m.hdr().reserved = 1;
       return m;
     },
     AVA_E_PROTO},
    {"args_len beyond total_len",
     [](const Ctx &c) {
       RawMessage m = add_call(c);
       m.hdr().args_len = sizeof(AddCall) + 1;
       return m;
     },
     AVA_E_LENGTH},
    {"args block too small",
     [](const Ctx &c) {
       AddCall a{.a = 1, .b = 1};
       return c.guest->make_call(AVA_WTEST_FN_WT_ADD, &a, sizeof a - 4);
     },
     AVA_E_LENGTH},
    {"args block too large",
     [](const Ctx &c) {
       uint64_t a[3] = {1, 1, 1};
       return c.guest->make_call(AVA_WTEST_FN_WT_ADD, a, sizeof a);
     },
     AVA_E_LENGTH},
    {"buffer offset beyond payload",
     [](const Ctx &c) {
       return write_call(c, 4, [](WriteCall &a, Payload &) { a.data.offset = 4096; });
     },
     AVA_E_LENGTH},
    {"buffer offset wraps around",
     [](const Ctx &c) {
       return write_call(c, 4, [](WriteCall &a, Payload &) { a.data.offset = ~0ull - 1; });
     },
     AVA_E_LENGTH},
    {"buffer length beyond payload",
     [](const Ctx &c) {
       return write_call(c, 4, [](WriteCall &a, Payload &) {
         a.data.length = 1000;
         a.size = 1000;
       });
     },
     AVA_E_LENGTH},
    {"no room for the guard byte",
     [](const Ctx &c) {
       return write_call(c, 8, [](WriteCall &, Payload &p) { p.bytes().resize(8); });
     },
     AVA_E_LENGTH},
    {"non-zero guard byte",
     [](const Ctx &c) {
       return write_call(c, 5, [](WriteCall &, Payload &p) { p.bytes()[5] = 'x'; });
     },
     AVA_E_PROTO},
    {"misaligned buffer offset",
     [](const Ctx &c) {
       return write_call(c, 2, [](WriteCall &a, Payload &p) {
         p.bytes().assign(16, 0);
         p.bytes()[1] = 'a';
         p.bytes()[2] = 'b';
         a.data.offset = 1;
       });
     },
     AVA_E_PROTO},
    {"unknown buffer flag",
     [](const Ctx &c) {
       return write_call(c, 4, [](WriteCall &a, Payload &) { a.data.flags |= 0x10; });
     },
     AVA_E_PROTO},
    {"buffer reserved field",
     [](const Ctx &c) {
       return write_call(c, 4, [](WriteCall &a, Payload &) { a.data.reserved = 1; });
     },
     AVA_E_PROTO},
    {"IN buffer without PRESENT",
     [](const Ctx &c) {
       return write_call(c, 4, [](WriteCall &a, Payload &) { a.data.flags = AVA_BUF_IN; });
     },
     AVA_E_PROTO},
    {"absent buffer with a length",
     [](const Ctx &c) {
       return write_call(c, 4, [](WriteCall &a, Payload &) { a.data = {0, 4, 0, 0}; });
     },
     AVA_E_PROTO},
    {"OUT buffer where IN is expected",
     [](const Ctx &c) {
       return write_call(c, 4, [](WriteCall &a, Payload &) { a.data = Payload::out(4); });
     },
     AVA_E_PROTO},
    {"IN|OUT buffer where IN is expected",
     [](const Ctx &c) {
       return write_call(c, 4, [](WriteCall &a, Payload &) { a.data.flags |= AVA_BUF_OUT; });
     },
     AVA_E_PROTO},
    {"IN buffer length differs from the annotation",
     [](const Ctx &c) { return write_call(c, 4, [](WriteCall &a, Payload &) { a.size = 3; }); },
     AVA_E_LENGTH},
    {"OUT buffer length differs from the annotation",
     [](const Ctx &c) { return read_call(c, 8, Payload::out(16)); }, AVA_E_LENGTH},
    {"OUT-only buffer with an offset",
     [](const Ctx &c) {
       ava_buf_desc d = Payload::out(8);
       d.offset = 8;
       return read_call(c, 8, d);
     },
     AVA_E_PROTO},
    {"OUT buffer above max_message",
     [](const Ctx &c) { return read_call(c, 2 * kMaxMessage, Payload::out(2 * kMaxMessage)); },
     AVA_E_TOO_BIG},
    {"OUT buffer above its static bound",
     [](const Ctx &c) {
       ava_wtest_wt_get_value_call a{.obj = c.obj, .value = Payload::out(8)};
       return c.guest->make_call(AVA_WTEST_FN_WT_GET_VALUE, &a, sizeof a);
     },
     AVA_E_LENGTH},
    {"count * size overflows", [](const Ctx &c) { return sum_call(c, {c.obj}, (1ull << 61) + 1); },
     AVA_E_LENGTH},
    {"unknown handle",
     [](const Ctx &c) {
       return write_call(c, 4, [](WriteCall &a, Payload &) { a.obj = kBogusHandle; });
     },
     AVA_OK, WT_ERR_INVALID},
    {"wrong handle type",
     [](const Ctx &c) {
       ava_wtest_wt_other_ping_call a{.other = c.obj};
       return c.guest->make_call(AVA_WTEST_FN_WT_OTHER_PING, &a, sizeof a);
     },
     AVA_OK, WT_ERR_INVALID},
    {"unknown handle in an array",
     [](const Ctx &c) {
       return sum_call(c, {c.obj, kBogusHandle}, 2);
     },
     AVA_OK, WT_ERR_INVALID},
    {"wrongly typed handle in an array",
     [](const Ctx &c) {
       return sum_call(c, {c.other, c.obj}, 2);
     },
     AVA_OK, WT_ERR_INVALID},
    {"a good call among them",
     [](const Ctx &c) {
       return sum_call(c, {c.obj, c.obj}, 2);
     },
     AVA_OK, WT_OK},
};

struct Session {
  WorkerHarness harness;
  std::unique_ptr<FakeGuest> guest;
  Ctx ctx{};

  explicit Session(WorkerOptions options = make_options()) : harness(std::move(options)) {
    harness.plugins().add(ava_worker_spec_export());
    guest = harness.connect();
    cr_assert(guest != nullptr);
    cr_assert_eq(guest->hello(), AVA_OK);
    ctx.guest = guest.get();
    ctx.obj = guest->create_obj(64);
    cr_assert_neq(ctx.obj, 0u);
    ctx.other = guest->create_other();
    cr_assert_neq(ctx.other, 0u);
  }
  static WorkerOptions make_options() {
    WorkerOptions options;
    options.max_message = kMaxMessage;
    return options;
  }
};

} // namespace

Test(worker_protocol, malformed_calls_get_error_replies, .timeout = 60) {
  Session s;
  for (const CallCase &c : kCases) {
    RawMessage message = c.build(s.ctx);
    Received reply;
    int status = s.guest->call(message, &reply);
    cr_expect_eq(status, c.expected, "%s: status %d, expected %d", c.name, status, c.expected);
    if (status == AVA_OK && c.expected == AVA_OK) {
      const auto ret = reply.reply<int64_t>();
      cr_expect_eq(ret, c.ret, "%s: returned %ld, expected %ld", c.name, ret, c.ret);
    }
    cr_expect_eq(s.guest->add(20, 22), 42, "%s: the next good call failed", c.name);
  }
  s.guest->goodbye();
  cr_expect(s.harness.finish(0).is_ok());
  cr_expect_eq(wt_lib_bad_releases(), 0u);
}

Test(worker_protocol, malformed_async_calls_are_dropped, .timeout = 60) {
  Session s;
  std::vector<RawMessage> bad;
  ava_wtest_wt_async_set_call a{.obj = s.ctx.obj, .value = 1};
  const uint32_t set = AVA_WTEST_FN_WT_ASYNC_SET;
  bad.push_back(s.guest->make_call(set, &a, sizeof a, {}, AVA_F_ASYNC));
  bad.back().hdr().spec_id = 1;
  bad.push_back(s.guest->make_call(AVA_WTEST_NFUNCS + 7, &a, sizeof a, {}, AVA_F_ASYNC));
  bad.push_back(s.guest->make_call(AVA_WTEST_FN_WT_ADD, &a, sizeof a, {}, AVA_F_ASYNC));
  bad.push_back(s.guest->make_call(AVA_WTEST_FN_WT_UNSUPPORTED, &a, sizeof a, {}, AVA_F_ASYNC));
  bad.push_back(s.guest->make_call(set, &a, sizeof a - 8, {}, AVA_F_ASYNC));
  // Reaches its handler, whose buffer check fails: an async error, not a reply.
  Payload p;
  ava_wtest_wt_async_write_call w{.obj = s.ctx.obj, .data = p.add("abcd", 4), .size = 3};
  bad.push_back(s.guest->make_call(AVA_WTEST_FN_WT_ASYNC_WRITE, &w, sizeof w, p, AVA_F_ASYNC));
  for (RawMessage &m : bad)
    cr_assert(s.guest->send(m).is_ok());
  // A reply to any of them would arrive first and fail this call's call_id check.
  ava_wtest_wt_finish_call f{};
  Received reply;
  cr_expect_eq(s.guest->call(AVA_WTEST_FN_WT_FINISH, f, &reply), AVA_OK);
  cr_expect_eq(reply.common().async_error_class, kStatusClass);
  cr_expect_eq(reply.common().async_error_func, AVA_WTEST_FN_WT_ASYNC_WRITE);
  cr_expect_eq(reply.common().async_error_value, WT_ERR_TRANSPORT, "the spec's error value");
  cr_expect_eq(s.guest->add(1, 2), 3);
  cr_expect_eq(wt_lib_async_calls(), 0u);
  s.guest->goodbye();
  cr_expect(s.harness.finish(0).is_ok());
}

// AVA_F_FLUSH is for the guest's batching (shim/batch.*); the worker only
// accepts it: flushing calls of either class run like any other.
Test(worker_protocol, flush_flag_is_accepted, .timeout = 60) {
  Session s;
  ava_wtest_wt_async_set_call set{.obj = s.ctx.obj, .value = 41};
  RawMessage async_flush = s.guest->make_call(AVA_WTEST_FN_WT_ASYNC_SET, &set, sizeof set, {},
                                              AVA_F_ASYNC | AVA_F_FLUSH);
  cr_assert(s.guest->send(async_flush).is_ok());
  ava_wtest_wt_get_value_call get{.obj = s.ctx.obj, .value = Payload::out(sizeof(int32_t))};
  RawMessage sync_flush =
      s.guest->make_call(AVA_WTEST_FN_WT_GET_VALUE, &get, sizeof get, {}, AVA_F_SYNC | AVA_F_FLUSH);
  Received reply;
  cr_assert_eq(s.guest->call(sync_flush, &reply), AVA_OK);
  const auto r = reply.reply<ava_wtest_wt_get_value_reply>();
  cr_expect_eq(r.ret, WT_OK);
  cr_expect_eq(reply.out<int32_t>(r.value), 41, "the async flushing call ran first");
  cr_expect_eq(reply.common().async_error_class, 0u);
  cr_expect_eq(wt_lib_async_calls(), 1u);
  AddCall a{.a = 4, .b = 5};
  RawMessage add =
      s.guest->make_call(AVA_WTEST_FN_WT_ADD, &a, sizeof a, {}, AVA_F_SYNC | AVA_F_FLUSH);
  cr_assert_eq(s.guest->call(add, &reply), AVA_OK);
  cr_expect_eq(reply.reply<ava_wtest_wt_add_reply>().ret, 9);
}

Test(worker_protocol, too_many_guest_threads, .timeout = 60) {
  WorkerOptions options = Session::make_options();
  options.max_guest_threads = 3; // the session setup used thread 1
  Session s(options);
  cr_expect_eq(s.guest->add(1, 1, 2), 2);
  cr_expect_eq(s.guest->add(1, 1, 3), 2);
  AddCall a{.a = 1, .b = 1};
  Received reply;
  cr_expect_eq(s.guest->call(AVA_WTEST_FN_WT_ADD, a, &reply, {}, 4), AVA_E_NOMEM);
  cr_expect_eq(s.guest->add(1, 1, 1), 2);
  cr_expect_eq(s.guest->add(1, 1, 3), 2);
}

namespace {

struct HelloCase {
  const char *name;
  std::function<RawMessage()> build;
  uint16_t reply_kind;
  int expected;
};

RawMessage hello_message(const char *name, uint32_t id, uint64_t hash) {
  ava_hello h{};
  ava_hello_fill(&h, id, hash, "", 1, "test");
  std::memcpy(h.spec_name, name, std::min(std::strlen(name), sizeof h.spec_name));
  return RawMessage(AVA_MSG_HELLO, 0, &h, sizeof h);
}

const HelloCase kHelloCases[] = {
    {"unknown spec",
     [] { return hello_message("nosuchspec", AVA_WTEST_SPEC_ID, AVA_WTEST_SPEC_HASH); },
     AVA_MSG_HELLO_ACK, AVA_E_UNSUPPORTED},
    {"wrong spec id",
     [] { return hello_message("wtest", AVA_WTEST_SPEC_ID + 1, AVA_WTEST_SPEC_HASH); },
     AVA_MSG_HELLO_ACK, AVA_E_SPEC},
    {"wrong spec hash",
     [] { return hello_message("wtest", AVA_WTEST_SPEC_ID, AVA_WTEST_SPEC_HASH ^ 1); },
     AVA_MSG_HELLO_ACK, AVA_E_SPEC},
    {"path in the spec name",
     [] { return hello_message("../wtest", AVA_WTEST_SPEC_ID, AVA_WTEST_SPEC_HASH); },
     AVA_MSG_HELLO_ACK, AVA_E_UNSUPPORTED},
    {"unterminated spec name",
     [] {
       return hello_message(std::string(40, 'x').c_str(), AVA_WTEST_SPEC_ID, AVA_WTEST_SPEC_HASH);
     },
     AVA_MSG_HELLO_ACK, AVA_E_SPEC},
    {"short HELLO",
     [] {
       uint64_t half = 0;
       return RawMessage(AVA_MSG_HELLO, 0, &half, sizeof half);
     },
     AVA_MSG_HELLO_ACK, AVA_E_PROTO},
    {"sync CALL before HELLO",
     [] {
       AddCall a{.a = 1, .b = 2};
       RawMessage m(AVA_MSG_CALL, AVA_WTEST_FN_WT_ADD, &a, sizeof a);
       m.hdr().flags = AVA_F_SYNC;
       m.hdr().call_id = 5;
       return m;
     },
     AVA_MSG_REPLY, AVA_E_STATE},
    {"CALLBACK_DONE before HELLO", [] { return RawMessage(AVA_MSG_CALLBACK_DONE, 0, nullptr, 0); },
     AVA_MSG_GOODBYE, AVA_E_STATE},
};

} // namespace

Test(worker_protocol, bad_hello_is_refused_and_closed, .timeout = 60) {
  WorkerHarness harness;
  harness.plugins().add(ava_worker_spec_export());
  size_t index = 0;
  for (const HelloCase &c : kHelloCases) {
    auto guest = harness.connect();
    cr_assert(guest != nullptr);
    RawMessage m = c.build();
    cr_assert(guest->send(m).is_ok());
    Received reply;
    Status s = guest->recv(&reply);
    cr_assert(s.is_ok(), "%s: no answer: %s", c.name, s.message.c_str());
    cr_expect_eq(reply.hdr.kind, c.reply_kind, "%s: kind %u", c.name, reply.hdr.kind);
    cr_expect_eq(reply.hdr.status, c.expected, "%s: status %d", c.name, reply.hdr.status);
    cr_expect_eq(reply.hdr.call_id, m.hdr().call_id, "%s", c.name);
    cr_expect_eq(guest->recv(&reply).code, AVA_E_CLOSED, "%s: still open", c.name);
    cr_expect_eq(harness.finish(index++).code, c.expected, "%s", c.name);
  }
}

namespace {

struct StreamCase {
  const char *name;
  std::function<RawMessage()> build;
};

const StreamCase kStreamCases[] = {
    {"unknown message kind", [] { return RawMessage(42, 0, nullptr, 0); }},
    {"REPLY from the guest", [] { return RawMessage(AVA_MSG_REPLY, 0, nullptr, 0); }},
    {"CALLBACK from the guest", [] { return RawMessage(AVA_MSG_CALLBACK, 0, nullptr, 0); }},
    {"second HELLO", [] { return hello_message("wtest", AVA_WTEST_SPEC_ID, AVA_WTEST_SPEC_HASH); }},
};

} // namespace

Test(worker_protocol, grossly_malformed_streams_close_the_connection, .timeout = 60) {
  WorkerHarness harness;
  harness.plugins().add(ava_worker_spec_export());
  size_t index = 0;
  for (const StreamCase &c : kStreamCases) {
    auto guest = harness.connect();
    cr_assert(guest != nullptr);
    cr_assert_eq(guest->hello(), AVA_OK);
    cr_assert_neq(guest->create_obj(8), 0u);
    RawMessage m = c.build();
    cr_assert(guest->send(m).is_ok());
    Received reply;
    cr_expect_eq(guest->recv(&reply).code, AVA_E_CLOSED, "%s: still open", c.name);
    cr_expect_eq(harness.finish(index++).code, AVA_E_PROTO, "%s", c.name);
  }
  // Every guest's object was released with its connection.
  cr_expect_eq(wt_lib_live_objects(), 0u);
  cr_expect_eq(wt_lib_bad_releases(), 0u);
}

namespace {

bool write_all(int fd, const void *data, size_t len) {
  const auto *p = static_cast<const uint8_t *>(data);
  while (len > 0) {
    ssize_t n = ::write(fd, p, len);
    if (n <= 0)
      return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

// Waits for the worker to close the socket, discarding what it sent.
bool closed_by_peer(int fd) {
  uint8_t buf[256];
  for (int i = 0; i < 1000; ++i) {
    struct pollfd p = {fd, POLLIN, 0};
    if (::poll(&p, 1, kWaitMs) <= 0)
      return false;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0)
      return true;
  }
  return false;
}

} // namespace

Test(worker_protocol, garbage_bytes_close_the_connection, .timeout = 60) {
  WorkerHarness harness;
  harness.plugins().add(ava_worker_spec_export());
  struct Garbage {
    const char *name;
    bool hello_first;
    bool protocol_error; // else the guest merely left
    std::function<std::vector<uint8_t>()> bytes;
  };
  const Garbage cases[] = {
      {"text instead of HELLO", false, true,
       [] {
         std::string s = "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(64, ' ');
         return std::vector<uint8_t>(s.begin(), s.end());
       }},
      {"bad magic after HELLO", true, true,
       [] {
         RawMessage m(AVA_MSG_CALL, 0, nullptr, 0);
         m.hdr().magic = 0x12345678;
         return std::vector<uint8_t>(m.data(), m.data() + m.size());
       }},
      {"total_len below the header", true, true,
       [] {
         RawMessage m(AVA_MSG_CALL, 0, nullptr, 0);
         m.hdr().total_len = 8;
         return std::vector<uint8_t>(m.data(), m.data() + m.size());
       }},
      {"truncated message", true, false,
       [] {
         RawMessage m(AVA_MSG_CALL, 0, nullptr, 0);
         m.hdr().total_len = 4096;
         return std::vector<uint8_t>(m.data(), m.data() + m.size());
       }},
  };
  size_t index = 0;
  for (const Garbage &c : cases) {
    int fd = harness.connect_raw();
    cr_assert_geq(fd, 0);
    if (c.hello_first) {
      ava_hello h{};
      ava_hello_fill(&h, AVA_WTEST_SPEC_ID, AVA_WTEST_SPEC_HASH, AVA_WTEST_SPEC_NAME, 0, "test");
      RawMessage m(AVA_MSG_HELLO, 0, &h, sizeof h);
      cr_assert(write_all(fd, m.data(), m.size()));
    }
    std::vector<uint8_t> bytes = c.bytes();
    cr_assert(write_all(fd, bytes.data(), bytes.size()), "%s", c.name);
    if (std::strcmp(c.name, "truncated message") == 0)
      ::shutdown(fd, SHUT_WR);
    cr_expect(closed_by_peer(fd), "%s: connection left open", c.name);
    cr_expect_eq(harness.finish(index++).code != AVA_OK, c.protocol_error, "%s", c.name);
    ::close(fd);
  }
}
