// SPDX-License-Identifier: MIT
// Zero-copy buffers on the worker side: over a real shm channel, descriptors
// with AVA_BUF_HEAP point the API at the shared heap; ones that lie about
// their range are refused with a status, and the worker keeps serving;
// buffers the spec's code touches, and strings, are never used in the heap
// in place.
#include <criterion/criterion.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "test_transport_shm_support.hpp"
#include "tests/wtest/wtest.h"
#include "tests/wtest/wtest_hooks.h"
#include "worker/plugin_set.hpp"
#include "worker/server.hpp"
#include "worker/testing/fake_guest.hpp"

using namespace ava::testing;
using shm_test::Pair;
using shm_test::small_options;

namespace {

// A shm pair whose worker end is served by serve_guest() on a thread.
struct HeapSession {
  Pair pair{small_options(64 * 1024, 1 << 20)};
  ava::PluginSet plugins{"", {}};
  ava::WorkerOptions options;
  std::thread server;
  std::unique_ptr<FakeGuest> guest;
  ava::Channel::Heap heap;
  ava::Channel::Heap worker_heap; // the same memory, mapped where the worker has it

  HeapSession() {
    plugins.add(ava_worker_spec_export());
    heap = pair.guest->heap();
    worker_heap = pair.worker->heap();
    cr_assert(heap.base != nullptr && heap.size >= (1u << 20));
    server = std::thread([this] { ava::serve_guest(std::move(pair.worker), plugins, options); });
    guest = std::make_unique<FakeGuest>(std::move(pair.guest));
    cr_assert_eq(guest->hello(), AVA_OK);
  }
  ~HeapSession() {
    guest->goodbye();
    guest.reset();
    server.join();
  }
};

ava_buf_desc heap_desc(uint64_t offset, uint64_t length, uint32_t dir) {
  return ava_buf_desc{offset, length, AVA_BUF_PRESENT | AVA_BUF_HEAP | dir, 0};
}

} // namespace

Test(worker_heap, buffers_in_the_heap_are_used_in_place, .timeout = 60) {
  HeapSession s;
  const uint64_t size = 300000;
  uint64_t obj = s.guest->create_obj(size);
  cr_assert_neq(obj, 0u);
  for (uint64_t i = 0; i < size; ++i)
    s.heap.base[4096 + i] = static_cast<uint8_t>(i * 7);
  ava_wtest_wt_obj_write_call w{
      .obj = obj, .data = heap_desc(4096, size, AVA_BUF_IN), .size = size};
  Received reply;
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_WRITE, w, &reply), AVA_OK);
  cr_expect_eq(reply.reply<ava_wtest_wt_obj_write_reply>().ret, WT_OK);

  std::memset(s.heap.base + 512 * 1024, 0, size);
  ava_wtest_wt_obj_read_call r{
      .obj = obj, .data = heap_desc(512 * 1024, size, AVA_BUF_OUT), .size = size};
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_READ, r, &reply), AVA_OK);
  const auto out = reply.reply<ava_wtest_wt_obj_read_reply>();
  cr_expect_eq(out.ret, WT_OK);
  // The reply points back into the heap: nothing was copied into the message.
  cr_expect_eq(out.data.flags, AVA_BUF_PRESENT | AVA_BUF_OUT | AVA_BUF_HEAP);
  cr_expect_eq(out.data.offset, 512u * 1024);
  cr_expect_eq(out.data.length, size);
  cr_expect_eq(reply.payload.size(), 0u);
  cr_expect(std::memcmp(s.heap.base + 4096, s.heap.base + 512 * 1024, size) == 0);
}

Test(worker_heap, lying_heap_descriptors_are_refused, .timeout = 60) {
  HeapSession s;
  uint64_t obj = s.guest->create_obj(64);
  cr_assert_neq(obj, 0u);
  const uint64_t hs = s.heap.size;
  struct Case {
    const char *what;
    ava_buf_desc desc;
    uint64_t size;
    int status;
  };
  const Case cases[] = {
      {"offset past the heap", heap_desc(hs + 8, 8, AVA_BUF_IN), 8, AVA_E_LENGTH},
      {"range past the heap", heap_desc(hs - 8, 64, AVA_BUF_IN), 64, AVA_E_LENGTH},
      {"offset + length overflows", heap_desc(UINT64_MAX - 4, 64, AVA_BUF_IN), 64, AVA_E_LENGTH},
      {"length differs from the size", heap_desc(0, 32, AVA_BUF_IN), 64, AVA_E_LENGTH},
      {"heap flag without present", ava_buf_desc{0, 8, AVA_BUF_HEAP | AVA_BUF_IN, 0}, 8,
       AVA_E_PROTO},
      {"unknown flag", ava_buf_desc{0, 8, AVA_BUF_PRESENT | AVA_BUF_IN | 0x40, 0}, 8, AVA_E_PROTO},
      {"reserved set", ava_buf_desc{0, 8, AVA_BUF_PRESENT | AVA_BUF_HEAP | AVA_BUF_IN, 1}, 8,
       AVA_E_PROTO},
  };
  for (const Case &c : cases) {
    ava_wtest_wt_obj_write_call w{.obj = obj, .data = c.desc, .size = c.size};
    Received reply;
    cr_expect_eq(s.guest->call(AVA_WTEST_FN_WT_OBJ_WRITE, w, &reply), c.status, "[%s]", c.what);
    cr_expect_eq(s.guest->add(2, 3), 5, "[%s] the worker stopped serving", c.what);
  }
}

// wt_get_info's epilogue rewrites its out buffer (objects into ids, as
// OpenCL's info queries do), so cava makes it worker-private. A guest lends
// a heap range filled with the address of a library object nobody gave it,
// larger than what the library writes: the library writes to worker memory,
// the epilogue never reads the planted values, and only the finished ids
// reach the guest's range, where the reply says they are.
Test(worker_heap, buffers_spec_code_touches_are_worker_private, .timeout = 60) {
  HeapSession s;
  const uint64_t obj = s.guest->create_obj(16);
  cr_assert_neq(obj, 0u);
  wt_obj victim = nullptr; // the library's, never handed to a guest
  cr_assert_eq(wt_obj_create(16, &victim), WT_OK);
  constexpr uint64_t kAt = 8192;
  constexpr uint64_t kSlots = 8;
  for (uint64_t i = 0; i < kSlots; ++i)
    std::memcpy(s.heap.base + kAt + i * 8, &victim, sizeof victim);

  ava_wtest_wt_get_info_call c{.obj = obj,
                               .size = kSlots * 8,
                               .value = heap_desc(kAt, kSlots * 8, AVA_BUF_OUT),
                               .size_ret = Payload::out(8)};
  Received reply;
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_GET_INFO, c, &reply), AVA_OK);
  const auto r = reply.reply<ava_wtest_wt_get_info_reply>();
  cr_expect_eq(r.ret, WT_OK);
  const auto *written = static_cast<const uint8_t *>(wt_lib_info_buffer());
  const ava::Channel::Heap &wh = s.worker_heap;
  cr_expect(written != nullptr && (written < wh.base || written >= wh.base + wh.size),
            "the library wrote its answer into the guest's heap");
  cr_expect_eq(r.value.flags, AVA_BUF_PRESENT | AVA_BUF_OUT | AVA_BUF_HEAP);
  cr_expect_eq(r.value.offset, kAt);
  cr_expect_eq(r.value.length, kSlots * 8);
  cr_expect_eq(reply.out<uint64_t>(r.size_ret), 8u);
  uint64_t slots[kSlots];
  std::memcpy(slots, s.heap.base + kAt, sizeof slots);
  cr_expect_eq(slots[0], obj, "the library's answer, as the guest's id");
  for (uint64_t i = 1; i < kSlots; ++i)
    cr_expect_eq(slots[i], 0u, "slot %lu: 0x%lx instead of zero", static_cast<unsigned long>(i),
                 static_cast<unsigned long>(slots[i]));

  // The planted address names no object of this guest: it reaches the
  // library as NULL.
  ava_wtest_wt_get_value_call g{.obj = reinterpret_cast<uintptr_t>(victim),
                                .value = Payload::out(4)};
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_GET_VALUE, g, &reply), AVA_OK);
  cr_expect_eq(reply.reply<ava_wtest_wt_get_value_reply>().ret, WT_ERR_INVALID);
  cr_expect_eq(s.guest->add(2, 3), 5, "the worker stopped serving");
  cr_expect_eq(wt_obj_release(victim), WT_OK);
}

// A string in the heap is read to its NUL by the spec's annotations
// (wt_set_label: ava_buffer(strlen(label) + 1)) and by the library. A guest
// leaves the NUL out and puts the string's last byte right before a page
// the worker cannot read: the worker reads neither past the bytes sent
// (before, strlen ran on into that page: SIGSEGV) nor anything the guest
// changes later. The call is refused, the worker serves on, and a string
// sent with its NUL there works.
Test(worker_heap, strings_in_the_heap_end_where_the_guest_said, .timeout = 60) {
  HeapSession s;
  const uint64_t obj = s.guest->create_obj(16);
  cr_assert_neq(obj, 0u);
  const long page = sysconf(_SC_PAGESIZE);
  const uint64_t guard = (s.heap.size - static_cast<uint64_t>(page)) & ~(page - 1ul);
  cr_assert_eq(mprotect(s.worker_heap.base + guard, static_cast<size_t>(page), PROT_NONE), 0);

  std::memcpy(s.heap.base + guard - 3, "abc", 3);
  ava_wtest_wt_set_label_call c{.obj = obj, .label = heap_desc(guard - 3, 3, AVA_BUF_IN)};
  Received reply;
  cr_expect_eq(s.guest->call(AVA_WTEST_FN_WT_SET_LABEL, c, &reply), AVA_E_LENGTH,
               "a string without its NUL was taken");
  cr_expect_eq(s.guest->add(2, 3), 5, "the worker stopped serving");

  std::memcpy(s.heap.base + guard - 4, "abc", 4);
  c.label = heap_desc(guard - 4, 4, AVA_BUF_IN);
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_SET_LABEL, c, &reply), AVA_OK);
  cr_expect_eq(reply.reply<ava_wtest_wt_set_label_reply>().ret, WT_OK);
  std::memcpy(s.heap.base + guard - 4, "xyz", 4); // the guest's later change reaches nobody
  ava_wtest_wt_get_label_call g{.obj = obj, .label = Payload::out(8), .capacity = 8};
  cr_assert_eq(s.guest->call(AVA_WTEST_FN_WT_GET_LABEL, g, &reply), AVA_OK);
  const auto r = reply.reply<ava_wtest_wt_get_label_reply>();
  cr_expect_eq(r.ret, WT_OK);
  char label[8] = {};
  const std::vector<uint8_t> bytes = reply.bytes(r.label);
  std::memcpy(label, bytes.data(), std::min<size_t>(bytes.size(), sizeof label - 1));
  cr_expect_str_eq(label, "abc");
  cr_assert_eq(
      mprotect(s.worker_heap.base + guard, static_cast<size_t>(page), PROT_READ | PROT_WRITE), 0);
}
