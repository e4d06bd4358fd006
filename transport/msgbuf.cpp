// SPDX-License-Identifier: MIT
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

#include "transport/big_block.hpp"
#include "transport/channel.hpp"

namespace ava {
namespace {

// Words needed for bytes, or 0 when that does not fit in memory at all.
uint64_t words_for(uint64_t bytes) {
  if (bytes > UINT64_MAX - 7)
    return 0;
  const uint64_t words = (bytes + 7) / 8;
  if (words > SIZE_MAX / sizeof(uint64_t))
    return 0;
  return words;
}

} // namespace

void detail::MsgBlockFree::operator()(uint64_t *words) const {
  big_block_free(words, bytes);
}

MsgBuf::Storage MsgBuf::allocate(uint64_t words) {
  // Uninitialised: no zero fill, so a large message costs no extra pass.
  auto *block = static_cast<uint64_t *>(big_block_alloc(words * 8, false));
  return Storage(block, detail::MsgBlockFree{block != nullptr ? words * 8 : 0});
}

bool MsgBuf::reserve(uint64_t bytes) {
  if (bytes <= capacity_)
    return true;
  const uint64_t words = words_for(bytes);
  if (words == 0)
    return false;
  Storage fresh = allocate(words);
  if (!fresh)
    return false;
  storage_ = std::move(fresh);
  capacity_ = words * 8;
  size_ = 0;
  return true;
}

void MsgBuf::trim(uint64_t keep_bytes) {
  if (capacity_ <= keep_bytes)
    return;
  const uint64_t words = words_for(keep_bytes);
  if (words == 0) {
    storage_.reset();
    capacity_ = 0;
    size_ = 0;
    return;
  }
  Storage fresh = allocate(words);
  if (!fresh)
    return; // Trimming is an optimisation; keeping the big buffer is still correct.
  const uint64_t keep_size = std::min(size_, words * 8);
  if (keep_size > 0)
    std::memcpy(fresh.get(), storage_.get(), keep_size);
  storage_ = std::move(fresh);
  capacity_ = words * 8;
  size_ = keep_size;
}

void MsgBuf::lend_pages() {
  size_ = 0;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  if (capacity_ == 0 || page == 0 || page == static_cast<uintptr_t>(-1))
    return;
  const auto begin = reinterpret_cast<uintptr_t>(storage_.get());
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + capacity_) / page * page;
  if (last > first) {
    // Only an advice: a kernel without MADV_FREE keeps the pages, as before.
    static_cast<void>(::madvise(reinterpret_cast<void *>(first), last - first, MADV_FREE));
  }
}

} // namespace ava
