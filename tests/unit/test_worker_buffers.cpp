// SPDX-License-Identifier: MIT
// The worker's data path for well-formed calls: IN, OUT and IN|OUT buffers,
// absent buffers, handle arrays both ways, buffers the API keeps, and the
// reply layout (8-byte aligned items, each followed by a zero guard).
#include <criterion/criterion.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/wtest/wtest.h"
#include "tests/wtest/wtest_hooks.h"
#include "worker/testing/fake_guest.hpp"

using namespace ava;
using namespace ava::testing;

namespace {

struct Session {
  WorkerHarness harness;
  std::unique_ptr<FakeGuest> guest;

  Session() {
    harness.plugins().add(ava_worker_spec_export());
    guest = harness.connect();
    cr_assert(guest != nullptr);
    cr_assert_eq(guest->hello(), AVA_OK);
  }
};

using WriteCall = ava_wtest_wt_obj_write_call;
using ReadCall = ava_wtest_wt_obj_read_call;
using SumCall = ava_wtest_wt_sum_sizes_call;

std::vector<uint8_t> pattern(uint64_t size, uint8_t seed) {
  std::vector<uint8_t> bytes(size);
  for (uint64_t i = 0; i < size; ++i)
    bytes[i] = static_cast<uint8_t>(seed + i * 31 + (i >> 8));
  return bytes;
}

// The reply payload keeps items 8-byte aligned, each followed by a zero byte.
void expect_layout(const Received &reply, const ava_buf_desc &d) {
  cr_expect_eq(d.offset % 8, 0u);
  cr_expect_eq(d.flags, AVA_BUF_PRESENT | AVA_BUF_OUT);
  cr_assert_lt(d.offset + d.length, reply.payload.size());
  cr_expect_eq(reply.payload[d.offset + d.length], 0);
  cr_expect_eq(reply.hdr.total_len,
               sizeof(ava_msg_hdr) + reply.hdr.args_len + reply.payload.size());
}

} // namespace

Test(worker_buffers, write_then_read_round_trip, .timeout = 60) {
  Session s;
  const uint64_t sizes[] = {0, 1, 7, 8, 9, 4095, 65536, 1u << 20};
  for (uint64_t size : sizes) {
    uint64_t obj = s.guest->create_obj(size);
    cr_assert_neq(obj, 0u);
    std::vector<uint8_t> data = pattern(size, static_cast<uint8_t>(size));
    Payload p;
    WriteCall w{.obj = obj, .data = p.add(data.data(), size), .size = size};
    Received reply;
    cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_WRITE, w, &reply, p), AVA_OK, "write %lu", size);
    cr_expect_eq(reply.reply<ava_wtest_wt_obj_write_reply>().ret, WT_OK);

    ReadCall r{.obj = obj, .data = Payload::out(size), .size = size};
    cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_READ, r, &reply), AVA_OK, "read %lu", size);
    auto rr = reply.reply<ava_wtest_wt_obj_read_reply>();
    cr_expect_eq(rr.ret, WT_OK);
    cr_expect_eq(rr.data.length, size);
    expect_layout(reply, rr.data);
    cr_expect(reply.bytes(rr.data) == data, "read %lu: bytes differ", size);
  }
}

Test(worker_buffers, in_out_buffer, .timeout = 60) {
  Session s;
  const uint64_t size = 1000;
  uint64_t obj = s.guest->create_obj(size);
  std::vector<uint8_t> content = pattern(size, 3);
  Payload p;
  WriteCall w{.obj = obj, .data = p.add(content.data(), size), .size = size};
  Received reply;
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_WRITE, w, &reply, p), AVA_OK);

  std::vector<uint8_t> data = pattern(size, 77);
  Payload q;
  ava_wtest_wt_obj_xor_call x{
      .obj = obj, .data = q.add(data.data(), size, AVA_BUF_IN | AVA_BUF_OUT), .size = size};
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_XOR, x, &reply, q), AVA_OK);
  auto xr = reply.reply<ava_wtest_wt_obj_xor_reply>();
  cr_expect_eq(xr.ret, WT_OK);
  expect_layout(reply, xr.data);
  std::vector<uint8_t> got = reply.bytes(xr.data);
  cr_assert_eq(got.size(), size);
  for (uint64_t i = 0; i < size; ++i)
    cr_assert_eq(got[i], data[i] ^ content[i], "byte %lu", i);
}

Test(worker_buffers, in_and_out_buffers_of_one_call, .timeout = 60) {
  Session s;
  uint64_t obj = s.guest->create_obj(8);
  const std::vector<uint8_t> in = pattern(100, 9);
  Payload p;
  ava_wtest_wt_echo_call e{.obj = obj,
                           .in = p.add(in.data(), in.size()),
                           .in_size = in.size(),
                           .out = Payload::out(60),
                           .out_size = 60};
  Received reply;
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_ECHO, e, &reply, p), AVA_OK);
  auto er = reply.reply<ava_wtest_wt_echo_reply>();
  cr_expect_eq(er.ret, WT_OK);
  expect_layout(reply, er.out);
  cr_expect(reply.bytes(er.out) == std::vector<uint8_t>(in.begin(), in.begin() + 60));
}

Test(worker_buffers, absent_buffers, .timeout = 60) {
  Session s;
  uint64_t obj = s.guest->create_obj(16);
  Received reply;
  WriteCall w{.obj = obj, .data = ava_buf_desc{}, .size = 0};
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_WRITE, w, &reply), AVA_OK);
  cr_expect_eq(reply.reply<ava_wtest_wt_obj_write_reply>().ret, WT_OK);
  ReadCall r{.obj = obj, .data = ava_buf_desc{}, .size = 0};
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_READ, r, &reply), AVA_OK);
  auto rr = reply.reply<ava_wtest_wt_obj_read_reply>();
  cr_expect_eq(rr.ret, WT_OK);
  cr_expect_eq(rr.data.flags, 0u);
  // The library sees NULL with a non-zero size and refuses it itself.
  ReadCall bad{.obj = obj, .data = ava_buf_desc{}, .size = 8};
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_READ, bad, &reply), AVA_OK);
  cr_expect_eq(reply.reply<ava_wtest_wt_obj_read_reply>().ret, WT_ERR_INVALID);
}

Test(worker_buffers, handle_arrays, .timeout = 60) {
  Session s;
  uint64_t ids[3];
  for (int i = 0; i < 3; ++i) {
    ids[i] = s.guest->create_obj(10u * (i + 1));
    cr_assert_neq(ids[i], 0u);
  }
  Payload p;
  SumCall sum{.objs = p.add(ids, sizeof ids), .count = 3, .total = Payload::out(8)};
  Received reply;
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_SUM_SIZES, sum, &reply, p), AVA_OK);
  auto sr = reply.reply<ava_wtest_wt_sum_sizes_reply>();
  cr_expect_eq(sr.ret, WT_OK);
  cr_expect_eq(reply.out<uint64_t>(sr.total), 60u);

  // A zero id is a NULL handle, which the library refuses.
  uint64_t with_null[2] = {ids[0], 0};
  Payload q;
  SumCall sum_null{
      .objs = q.add(with_null, sizeof with_null), .count = 2, .total = Payload::out(8)};
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_SUM_SIZES, sum_null, &reply, q), AVA_OK);
  cr_expect_eq(reply.reply<ava_wtest_wt_sum_sizes_reply>().ret, WT_ERR_INVALID);

  // Objects come back as the same ids (the library lists newest first).
  ava_wtest_wt_list_call list{.objs = Payload::out(2 * 8), .capacity = 2, .count = Payload::out(4)};
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_LIST, list, &reply), AVA_OK);
  auto lr = reply.reply<ava_wtest_wt_list_reply>();
  cr_expect_eq(lr.ret, WT_OK);
  cr_expect_eq(reply.out<uint32_t>(lr.count), 3u);
  expect_layout(reply, lr.objs);
  std::vector<uint8_t> bytes = reply.bytes(lr.objs);
  cr_assert_eq(bytes.size(), 16u);
  uint64_t listed[2];
  std::memcpy(listed, bytes.data(), sizeof listed);
  cr_expect_eq(listed[0], ids[2]);
  cr_expect_eq(listed[1], ids[1]);
}

Test(worker_buffers, released_handles_are_forgotten, .timeout = 60) {
  Session s;
  uint64_t obj = s.guest->create_obj(8);
  ava_wtest_wt_obj_release_call a{.obj = obj};
  Received reply;
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_RELEASE, a, &reply), AVA_OK);
  cr_expect_eq(reply.reply<ava_wtest_wt_obj_release_reply>().ret, WT_OK);
  // The id names nothing now: the library gets NULL, not the freed object.
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_RELEASE, a, &reply), AVA_OK);
  cr_expect_eq(reply.reply<ava_wtest_wt_obj_release_reply>().ret, WT_ERR_INVALID);
  cr_expect_eq(wt_lib_bad_releases(), 0u);
  cr_expect_eq(wt_lib_released(WT_KIND_OBJ), 1u);
  uint64_t again = s.guest->create_obj(8);
  cr_expect_neq(again, 0u);
  cr_expect_neq(again, obj, "ids are never reused");
}

Test(worker_buffers, kept_buffers_outlive_their_call, .timeout = 60) {
  Session s;
  uint64_t obj = s.guest->create_obj(8);
  const char label[] = "a label the library keeps";
  Payload p;
  ava_wtest_wt_set_label_call set{.obj = obj, .label = p.add(label, sizeof label)};
  Received reply;
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_SET_LABEL, set, &reply, p), AVA_OK);
  cr_expect_eq(reply.reply<ava_wtest_wt_set_label_reply>().ret, WT_OK);
  // Other traffic reuses the worker's message memory.
  for (int i = 0; i < 10; ++i)
    cr_assert_eq(s.guest->add(i, i), 2 * i);
  ava_wtest_wt_get_label_call get{.obj = obj, .label = Payload::out(64), .capacity = 64};
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_GET_LABEL, get, &reply), AVA_OK);
  auto gr = reply.reply<ava_wtest_wt_get_label_reply>();
  cr_expect_eq(gr.ret, WT_OK);
  std::vector<uint8_t> bytes = reply.bytes(gr.label);
  cr_assert_eq(bytes.size(), 64u);
  cr_expect_str_eq(reinterpret_cast<const char *>(bytes.data()), label);
  // Releasing the object frees its coupled copy (checked by ASan builds).
  ava_wtest_wt_obj_release_call rel{.obj = obj};
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_RELEASE, rel, &reply), AVA_OK);
  cr_expect_eq(reply.reply<ava_wtest_wt_obj_release_reply>().ret, WT_OK);
}
