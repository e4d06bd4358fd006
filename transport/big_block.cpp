// SPDX-License-Identifier: MIT
#include "transport/big_block.hpp"

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace ava {
namespace {

constexpr uint64_t kHuge = uint64_t{2} << 20;

// The mapping's length for bytes: whole huge pages, or 0 on overflow.
uint64_t mapped_length(uint64_t bytes) {
  if (bytes > UINT64_MAX - (2 * kHuge))
    return 0;
  return (bytes + kHuge - 1) / kHuge * kHuge;
}

} // namespace

void *big_block_alloc(uint64_t bytes, bool zeroed, uint64_t align) {
  if (bytes < kBigBlockMin) {
    size_t n = bytes > 0 ? static_cast<size_t>(bytes) : 1;
    if (align <= alignof(std::max_align_t))
      return zeroed ? std::calloc(1, n) : std::malloc(n);
    if ((align & (align - 1)) != 0 || align > kHuge)
      return nullptr;
    n = (n + align - 1) / align * align; // aligned_alloc wants a multiple
    void *block = std::aligned_alloc(static_cast<size_t>(align), n);
    if (block != nullptr && zeroed)
      std::memset(block, 0, n);
    return block;
  }
  const uint64_t length = mapped_length(bytes);
  if (length == 0 || length + kHuge > SIZE_MAX)
    return nullptr;
  // Over-map by one huge page and cut the ends off, so the block starts on
  // a 2 MiB boundary: only then can the kernel back it with huge pages.
  void *raw =
      ::mmap(nullptr, length + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    return nullptr;
  const auto begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + kHuge - 1) / kHuge * kHuge;
  if (aligned > begin)
    (void)::munmap(raw, aligned - begin);
  const uintptr_t tail = begin + length + kHuge - (aligned + length);
  if (tail > 0)
    (void)::munmap(reinterpret_cast<void *>(aligned + length), tail);
  void *block = reinterpret_cast<void *>(aligned);
#ifdef MADV_HUGEPAGE
  // Only an advice: where THP is off the block is 4 KiB pages, as malloc's.
  (void)::madvise(block, length, MADV_HUGEPAGE);
#endif
  return block;
}

void big_block_free(void *block, uint64_t bytes) {
  if (block == nullptr)
    return;
  if (bytes < kBigBlockMin) {
    std::free(block);
    return;
  }
  (void)::munmap(block, mapped_length(bytes));
}

} // namespace ava
