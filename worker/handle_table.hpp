// SPDX-License-Identifier: MIT
// Per-guest handle table: the guest only ever sees 64-bit ids, never worker
// pointers. Shared by all shadow threads of a guest, hence locked.
#pragma once

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
    bool owned;
  };

  // Returns the id of (object, type), registering it if new; ids start at 1
  // and are never reused. Registering an existing object as owned makes it
  // owned. Throws std::bad_alloc.
  uint64_t insert(void *object, uint32_t type, bool owned);
  // The object behind id if it has the given type, else nullptr.
  void *lookup(uint64_t id, uint32_t type) const;
  // Forgets id; false if it was unknown.
  bool release(uint64_t id);
  // Removes the most recently created entry; false when empty. Never allocates,
  // so teardown can always run to the end.
  bool pop_newest(Entry *out);
  size_t size() const;

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
    bool owned;
  };

  mutable std::mutex mutex_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Value> by_id_; // ordered: teardown goes newest first
  std::unordered_map<Key, uint64_t, KeyHash> by_object_;
};

} // namespace ava
