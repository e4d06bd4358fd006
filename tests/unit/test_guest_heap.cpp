// SPDX-License-Identifier: MIT
// The guest's allocator for the shared heap (shim/heap.hpp): blocks are
// 64-byte aligned and inside the heap, freed blocks merge with their
// neighbours, an allocation that asks to keep a share free (a mapping,
// Connection::map_block) is refused when it would eat into that share,
// while ordinary allocations may still use it, and a patient one (a lent
// transfer) waits for blocks to come back, within bounds.
#include <criterion/criterion.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "shim/heap.hpp"

namespace {

constexpr uint64_t kHeap = 1 << 20;

struct KeepCase {
  const char *name;
  uint64_t used_before; // bytes allocated first, without a share
  uint64_t bytes;
  uint64_t keep_free;
  bool fits;
};

const KeepCase kKeepCases[] = {
    {"all of an empty heap, nothing kept", 0, kHeap, 0, true},
    {"three quarters, a quarter kept", 0, kHeap / 4 * 3, kHeap / 4, true},
    {"one byte past three quarters, a quarter kept", 0, kHeap / 4 * 3 + 1, kHeap / 4, false},
    {"half after half, a quarter kept", kHeap / 2, kHeap / 2, kHeap / 4, false},
    {"a quarter after half, a quarter kept", kHeap / 2, kHeap / 4, kHeap / 4, true},
    {"a share larger than the heap", 0, 64, kHeap + 1, false},
    {"a share of everything", 0, 64, kHeap, false},
};

} // namespace

Test(guest_heap, a_share_kept_free_refuses_what_would_eat_into_it) {
  std::vector<uint8_t> memory(kHeap);
  for (const KeepCase &c : kKeepCases) {
    ava::guest::HeapAllocator heap(memory.data(), memory.size());
    void *first = c.used_before != 0 ? heap.allocate(c.used_before) : nullptr;
    cr_assert(c.used_before == 0 || first != nullptr, "%s: first block", c.name);
    void *p = heap.allocate(c.bytes, c.keep_free);
    cr_expect_eq(p != nullptr, c.fits, "%s: %s", c.name, p != nullptr ? "fitted" : "refused");
    if (p != nullptr) {
      uint64_t offset = 0;
      cr_expect(heap.contains(p, c.bytes, &offset), "%s: outside the heap", c.name);
      cr_expect_eq(offset % 64, 0u, "%s: misaligned", c.name);
      cr_expect(heap.release(p), "%s: release", c.name);
    }
    // Without a share, what is left is still there for ordinary blocks.
    void *rest = heap.allocate(kHeap - c.used_before);
    cr_expect_not_null(rest, "%s: the rest of the heap was lost", c.name);
    heap.release(rest);
    if (first != nullptr)
      cr_expect(heap.release(first), "%s: release of the first block", c.name);
  }
}

Test(guest_heap, freed_blocks_merge_and_count_as_free_again) {
  std::vector<uint8_t> memory(kHeap);
  ava::guest::HeapAllocator heap(memory.data(), memory.size());
  std::vector<void *> blocks;
  for (int i = 0; i < 8; ++i) {
    blocks.push_back(heap.allocate(kHeap / 8, 0));
    cr_assert_not_null(blocks.back(), "block %d", i);
  }
  cr_expect_null(heap.allocate(64), "a full heap gave a block");
  // Released out of order: the free list must merge back into one block.
  for (int i : {1, 3, 5, 7, 0, 2, 4, 6})
    cr_expect(heap.release(blocks[i]), "release %d", i);
  cr_expect_not(heap.release(blocks[0]), "a block released twice");
  void *all = heap.allocate(kHeap / 4 * 3, kHeap / 4);
  cr_expect_not_null(all, "three quarters with a quarter kept after everything was freed");
  cr_expect(heap.release(all));
  int stack_value = 0;
  cr_expect_not(heap.release(&stack_value), "a pointer outside the heap");
}

// A full heap: a patient allocation gets the block another thread gives
// back; one whose wait runs out fails, and after that none waits (a test
// timeout would catch a 60 s wait) until a block comes back.
Test(guest_heap, a_patient_allocation_waits_for_a_block_to_come_back, .timeout = 30) {
  std::vector<uint8_t> memory(kHeap);
  ava::guest::HeapAllocator heap(memory.data(), memory.size());
  void *all = heap.allocate(kHeap);
  cr_assert_not_null(all);
  std::thread giver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    heap.release(all);
  });
  void *p = heap.allocate_patiently(kHeap / 2, std::chrono::seconds(20));
  giver.join();
  cr_expect_not_null(p, "the block given back was not taken");
  void *q = heap.allocate(kHeap / 2);
  cr_assert_not_null(q);
  cr_expect_null(heap.allocate_patiently(kHeap / 2, std::chrono::milliseconds(20)),
                 "a full heap gave a block");
  cr_expect_null(heap.allocate_patiently(kHeap / 2, std::chrono::seconds(60)),
                 "a full heap gave a block");
  heap.release(q);
  void *again = heap.allocate_patiently(kHeap / 2, std::chrono::seconds(60));
  cr_expect_not_null(again, "after a block came back the heap should give one");
  // Nothing in use to wait for: a block larger than the free space is refused at once.
  heap.release(p);
  heap.release(again);
  cr_expect_null(heap.allocate_patiently(kHeap + 64, std::chrono::seconds(60)));
}
