// SPDX-License-Identifier: MIT
// The per-guest handle table on its own, its per-thread lookup cache included.
#include <criterion/criterion.h>

#include <atomic>
#include <new>
#include <thread>
#include <vector>

#include "ava/wire.h"
#include "worker/handle_table.hpp"

using ava::HandleTable;

namespace {
// What a release call does to the table: take one of the guest's
// references, then (the API released it) forget the id if that was the last.
bool drop(HandleTable &table, uint64_t id, uint32_t type = 1) {
  bool taken = false;
  return table.take(id, type, &taken) != nullptr && table.release(id);
}
} // namespace

Test(worker_handles, ids_are_stable_and_type_checked) {
  HandleTable table;
  int a = 0, b = 0;
  uint64_t ia = table.insert(&a, 1, true);
  uint64_t ib = table.insert(&b, 1, false);
  cr_expect_neq(ia, 0u);
  cr_expect_neq(ia, ib);
  cr_expect_eq(table.insert(&a, 1, false), ia, "same object and type, same id");
  uint64_t ia2 = table.insert(&a, 2, false);
  cr_expect_neq(ia2, ia, "another type is another handle");
  cr_expect_eq(table.lookup(ia, 1), &a);
  cr_expect_null(table.lookup(ia, 2));
  cr_expect_null(table.lookup(ia2, 1));
  cr_expect_null(table.lookup(0, 1));
  cr_expect_null(table.lookup(12345, 1));
  bool taken = false;
  cr_expect_eq(table.take(ia, 1, &taken), &a);
  cr_expect(taken);
  cr_expect(table.release(ia));
  cr_expect_null(table.take(ia, 1, &taken));
  cr_expect_not(table.release(ia));
  cr_expect_null(table.lookup(ia, 1));
  uint64_t again = table.insert(&a, 1, true);
  cr_expect_gt(again, ia2, "ids are not reused");
}

Test(worker_handles, pop_newest_goes_backwards_and_keeps_ownership) {
  HandleTable table;
  int objs[4];
  table.insert(&objs[0], 1, true);
  table.insert(&objs[1], 1, false);
  table.insert(&objs[2], 2, true);
  table.insert(&objs[1], 1, true); // later ownership upgrades the entry
  table.insert(&objs[3], 1, false);
  const void *order[] = {&objs[3], &objs[2], &objs[1], &objs[0]};
  const uint32_t refs[] = {0, 1, 1, 1};
  HandleTable::Entry e;
  for (int i = 0; i < 4; ++i) {
    cr_assert(table.pop_newest(&e));
    cr_expect_eq(e.object, order[i], "entry %d", i);
    cr_expect_eq(e.refs, refs[i], "entry %d", i);
  }
  cr_expect_not(table.pop_newest(&e));
  cr_expect_eq(table.size(), 0u);
}

// Reference-counted APIs (OpenCL): every create or retain is one reference
// the guest owns; the id lives until the last one is released.
Test(worker_handles, references_keep_an_id_alive) {
  HandleTable table;
  int a = 0, root = 0;
  uint64_t ia = table.insert(&a, 1, true);
  cr_expect(table.retain(ia));
  cr_expect_eq(table.insert(&a, 1, true), ia, "a second create of the same object");
  bool taken = false;
  cr_expect_not(drop(table, ia), "3 references, 1 dropped");
  cr_expect_not(drop(table, ia), "2 references, 1 dropped");
  cr_expect_eq(table.lookup(ia, 1), &a);
  cr_expect(drop(table, ia), "the last reference forgets the id");
  cr_expect_null(table.lookup(ia, 1));
  cr_expect_not(table.retain(ia));

  uint64_t ir = table.insert(&root, 1, false);
  cr_expect_eq(table.take(ir, 1, &taken), &root, "a root device passes");
  cr_expect_not(taken, "without a reference the guest never had");
  cr_expect_not(table.release(ir), "never owned: the guest cannot drop it");
  cr_expect(table.retain(ir));
  cr_expect_not(drop(table, ir), "retained and released, but not the guest's to forget");
  cr_expect_eq(table.lookup(ir, 1), &root);
}

// What a release asks before the API drops a reference (ava_handle_held):
// how many the guest still holds, the release's own already taken, so 0 is
// its last; the driver's count would also count commands of its own.
Test(worker_handles, held_counts_the_guests_references) {
  HandleTable table;
  int k = 0, other = 0, root = 0;
  const uint64_t id = table.insert(&k, 1, true);
  cr_expect_eq(table.held(&k, 1), 1u, "created");
  cr_expect(table.retain(id));
  cr_expect_eq(table.held(&k, 1), 2u, "retained");
  cr_expect_eq(table.held(&k, 2), 0u, "another type");
  cr_expect_eq(table.held(&other, 1), 0u, "never seen");
  bool taken = false;
  cr_assert_eq(table.take(id, 1, &taken), &k);
  cr_expect_eq(table.held(&k, 1), 1u, "a release under way: one left");
  cr_expect_not(table.release(id));
  cr_assert_eq(table.take(id, 1, &taken), &k);
  cr_expect_eq(table.held(&k, 1), 0u, "the last one is being released");
  table.untake(id);
  cr_expect_eq(table.held(&k, 1), 1u, "a refused release gives it back");
  cr_expect(drop(table, id));
  cr_expect_eq(table.held(&k, 1), 0u, "forgotten");
  table.insert(&root, 1, false);
  cr_expect_eq(table.held(&root, 1), 0u, "a root device: the guest holds no reference");
}

// A release takes one of the guest's references before the API drops one: a
// guest that holds none cannot make the API over-release (PoCL then frees a
// context its programs still use), also while another of its threads is
// releasing the last one; a release the API refused gives it back.
Test(worker_handles, a_release_takes_a_reference_the_guest_holds) {
  HandleTable table;
  int ctx = 0;
  const uint64_t id = table.insert(&ctx, 1, true);
  bool taken = false;
  cr_assert_eq(table.take(id, 1, &taken), &ctx);
  cr_expect(taken);
  cr_expect_null(table.take(id, 1, &taken), "the last one is being released");
  cr_expect_not(taken);
  cr_expect_null(table.take(id, 2, &taken), "another type");
  table.untake(id); // the API refused the release
  cr_expect_eq(table.take(id, 1, &taken), &ctx, "given back, it can be released again");
  cr_expect(table.release(id));
  cr_expect_null(table.take(id, 1, &taken), "forgotten");

  // Threads releasing one object they hold 4 references to, 64 times each:
  // exactly 4 releases reach the API.
  const uint64_t many = table.insert(&ctx, 3, true);
  for (int i = 0; i < 3; ++i)
    cr_assert(table.retain(many));
  std::atomic<int> reached{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 64; ++i) {
        bool mine = false;
        if (table.take(many, 3, &mine) != nullptr && mine) {
          reached.fetch_add(1);
          table.release(many);
        }
      }
    });
  for (std::thread &t : threads)
    t.join();
  cr_expect_eq(reached.load(), 4);
  cr_expect_null(table.lookup(many, 3));
}

// Objects created by async calls get the ids the guest chose.
Test(worker_handles, guest_chosen_ids) {
  HandleTable table;
  int a = 0, b = 0;
  const uint64_t mine = AVA_GUEST_ID_BIT | 7;
  cr_expect(table.insert_as(&a, 1, mine));
  cr_expect_eq(table.lookup(mine, 1), &a);
  cr_expect_not(table.insert_as(&b, 1, mine), "an id is taken once");
  cr_expect_not(table.insert_as(&b, 1, 7), "outside the guest's space");
  cr_expect_not(table.insert_as(&b, 1, AVA_GUEST_ID_MASK | 8), "bit 63 set");
  cr_expect_eq(table.insert(&a, 1, false), mine, "the object answers with the guest's id");
  // A second id for the same object (aliases) lives on its own references.
  const uint64_t again = AVA_GUEST_ID_BIT | 8;
  cr_expect(table.insert_as(&a, 1, again));
  cr_expect(drop(table, again));
  cr_expect_eq(table.lookup(mine, 1), &a, "the older id survives the alias' release");
  cr_expect(drop(table, mine));
  cr_expect_null(table.lookup(mine, 1));
  cr_expect_eq(table.size(), 0u);
}

Test(worker_handles, ids_are_tagged) {
  HandleTable table;
  int a = 0;
  uint64_t id = table.insert(&a, 1, false);
  cr_expect_geq(id >> 32, 0x800000u, "a tag above a 32-bit value");
  cr_expect_lt(id >> 56, 1u, "the top byte stays free");
}

Test(worker_handles, concurrent_use) {
  HandleTable table;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::vector<std::vector<int>> objects(kThreads, std::vector<int>(kPerThread));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        uint64_t id = table.insert(&objects[t][i], 1, true);
        if (table.lookup(id, 1) != &objects[t][i])
          return;
        if (i % 2 == 0)
          drop(table, id);
      }
    });
  }
  for (auto &thread : threads)
    thread.join();
  cr_expect_eq(table.size(), static_cast<size_t>(kThreads * kPerThread / 2));
}

// The guest's objects budget (guest.objects): a new entry beyond it is
// refused, known objects still get their ids, and room comes back as the
// guest releases.
Test(worker_handles, the_table_holds_at_most_its_limit) {
  ava::HandleTable t;
  t.set_limit(3);
  int objects[5];
  const uint64_t a = t.insert(&objects[0], 1, true);
  const uint64_t b = t.insert(&objects[1], 1, true);
  cr_assert(a != 0 && b != 0 && t.insert(&objects[2], 2, false) != 0);
  cr_expect_eq(t.insert(&objects[3], 1, true), 0u, "a fourth entry");
  cr_expect_not(t.insert_as(&objects[3], 1, AVA_GUEST_ID_BIT | 5), "a fourth, chosen id");
  cr_expect_eq(t.insert(&objects[0], 1, true), a, "a known object is no new entry");
  cr_expect_eq(t.size(), 3u);
  cr_expect(drop(t, b));
  cr_expect_neq(t.insert(&objects[4], 1, true), 0u, "released room is room again");
  t.set_limit(0);
  cr_expect_neq(t.insert(&objects[3], 1, true), 0u, "0: no limit");
}

// Lookups are answered from a per-thread cache while the table has erased
// nothing since; whatever is cached, a lookup answers as the table does.
Test(worker_handles, cached_lookups_follow_the_table) {
  int a = 0, b = 0, c = 0;
  // A released id, looked up just before, is gone for this thread and others.
  {
    HandleTable table;
    const uint64_t id = table.insert(&a, 1, true);
    cr_assert_eq(table.lookup(id, 1), &a);
    cr_assert_eq(table.lookup(id, 1), &a); // from the cache
    cr_expect_null(table.lookup(id, 2), "the type is checked on a cached id too");
    cr_assert(drop(table, id));
    cr_expect_null(table.lookup(id, 1));
    void *seen = &b;
    std::thread([&] { seen = table.lookup(id, 1); }).join();
    cr_expect_null(seen);
  }
  // A guest id taken again after its release names the new object.
  {
    HandleTable table;
    const uint64_t mine = AVA_GUEST_ID_BIT | 9;
    cr_assert(table.insert_as(&a, 1, mine));
    cr_assert_eq(table.lookup(mine, 1), &a);
    cr_assert(drop(table, mine));
    cr_assert(table.insert_as(&b, 1, mine));
    cr_expect_eq(table.lookup(mine, 1), &b);
  }
  // Another table, even at a freed one's address and with the same ids (the
  // fuzzing build's fixed tag), shares nothing with it.
  const uint64_t mine = AVA_GUEST_ID_BIT | 10;
  alignas(HandleTable) unsigned char storage[sizeof(HandleTable)];
  auto *first = new (storage) HandleTable();
  cr_assert(first->insert_as(&a, 1, mine));
  cr_assert_eq(first->lookup(mine, 1), &a);
  first->~HandleTable();
  auto *second = new (storage) HandleTable();
  cr_expect_null(second->lookup(mine, 1), "a new table knows no ids");
  cr_assert(second->insert_as(&c, 1, mine));
  cr_expect_eq(second->lookup(mine, 1), &c);
  second->~HandleTable();
}
