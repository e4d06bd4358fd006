// SPDX-License-Identifier: MIT
// An array's replicas and the coherence of its byte ranges (array.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace parla {
class Device;
}

namespace parla::detail {

struct Replica {
  Device *device;
  void *memory;
};

// Bytes [begin, end) are valid in these memory spaces (0: the host).
struct Segment {
  size_t begin;
  size_t end;
  std::vector<uintptr_t> valid;
};

struct ArrayState {
  std::mutex mu;
  size_t bytes = 0;
  char *host = nullptr; // the host replica
  bool host_owned = false;
  std::map<uintptr_t, Replica> replicas; // by memory space, the host's not included
  std::vector<Segment> segments;         // sorted, covering [0, bytes)

  ~ArrayState();
  // Under mu:
  void split(size_t begin, size_t end);
  void bring(Segment &s, uintptr_t space);
  void *replica(Device &d); // made on first use
  size_t valid_bytes(uintptr_t space, size_t begin, size_t end) const;
  // Without waiting for mu (false when it is busy).
  bool try_valid_bytes(uintptr_t space, size_t begin, size_t end, size_t *out);
  // The device goes away: bytes valid only there go to the host first.
  void evict(Device &d);
};

} // namespace parla::detail
