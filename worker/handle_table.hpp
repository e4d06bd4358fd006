// SPDX-License-Identifier: MIT
// Per-guest handle table: the guest only ever sees 64-bit ids, never worker
// pointers. Shared by all shadow threads of a guest, hence locked; lookups,
// one or more per call, are answered from a small per-thread cache while the
// table has forgotten nothing since (its epoch), without the lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

namespace ava {

class HandleTable {
public:
  struct Entry {
    uint64_t id;
    void *object;
    uint32_t type;
    uint32_t refs; // references the guest owns (see insert)
  };

  // Ids carry a random tag in bits 32..55 and a counter below: a by-value
  // argument that happens to be a small integer is never mistaken for a
  // handle where spec code has to guess (OpenCL kernel arguments).
  HandleTable();

  // Returns the id of (object, type), registering it if new; ids are never
  // reused. With owned the guest gets one more reference to drop (a create
  // or retain), which teardown drops for it if it does not. Throws
  // std::bad_alloc.
  // Returns 0, registering nothing, when the table holds its limit.
  uint64_t insert(void *object, uint32_t type, bool owned);
  // Registers a new object (one owned reference) under an id the guest chose
  // (AVA_GUEST_ID_BIT space); false if id is outside that space or taken,
  // or the table holds its limit.
  // Throws std::bad_alloc.
  bool insert_as(void *object, uint32_t type, uint64_t id);
  // The object behind id if it has the given type, else nullptr.
  void *lookup(uint64_t id, uint32_t type) const;
  // The references the guest holds to (object, type) now; 0 if unknown.
  uint32_t held(void *object, uint32_t type) const;
  // The guest took one more reference to id (retain); false if unknown.
  bool retain(uint64_t id);
  // A release call's first step: the object behind id (of type), with one of
  // the guest's references taken for the call (*taken) where it holds one.
  // nullptr when it holds none of an object it created (it dropped them all,
  // or another of its calls is dropping the last): the API must not drop a
  // reference the guest does not own. An object it never created (a root
  // device) passes without a reference taken.
  void *take(uint64_t id, uint32_t type, bool *taken);
  // The release call failed: the reference it took is the guest's again.
  void untake(uint64_t id);
  // The release call succeeded. When the guest's last reference to an
  // object it created is gone the id is forgotten and true is returned; ids
  // of objects the guest never created stay (they live on without it: a
  // root device, even when retained and released again).
  bool release(uint64_t id);
  // Removes the most recently created entry; false when empty. Never allocates,
  // so teardown can always run to the end.
  bool pop_newest(Entry *out);
  size_t size() const;
  // At most this many entries (the guest's objects budget); 0: no limit.
  void set_limit(size_t entries);

private:
  struct Key {
    void *object;
    uint32_t type;
    bool operator==(const Key &) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key &k) const {
      return std::hash<void *>()(k.object) ^ (static_cast<size_t>(k.type) * 0x9e3779b97f4a7c15ull);
    }
  };
  struct Value {
    void *object;
    uint32_t type;
    uint32_t refs;
    bool created; // registered as owned at least once (made by the guest's calls)
  };

  // Drops the object -> id entry if it still names id (not a newer alias).
  void forget_object_locked(uint64_t id, const Value &value);
  // Erases an id: lookups cached before no longer answer.
  void erase_locked(std::map<uint64_t, Value>::iterator it);

  // Which table a cached lookup belongs to (never 0, never reused: a new
  // table at a freed one's address must not find its entries).
  const uint64_t instance_;
  // Bumped (release, under mutex_) whenever an id is erased. An id's object
  // and type never change while it exists, so a cached lookup taken at the
  // current epoch is still what the table would answer.
  std::atomic<uint64_t> epoch_{0};

  mutable std::mutex mutex_;
  uint64_t next_id_;
  size_t limit_ = 0;
  std::map<uint64_t, Value> by_id_; // ordered: teardown goes newest first
  std::unordered_map<Key, uint64_t, KeyHash> by_object_;
};

} // namespace ava
