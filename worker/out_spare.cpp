// SPDX-License-Identifier: MIT
#include "worker/out_spare.hpp"

#include <algorithm>
#include <cstring>

namespace ava {

void *OutSpare::take(uint64_t bytes, uint64_t *size) {
  if (block_ == nullptr || size_ < bytes)
    return nullptr;
  void *block = block_;
  *size = size_;
  block_ = nullptr;
  size_ = 0;
  return block;
}

void OutSpare::give(void *block, uint64_t size, uint64_t used) {
  if (block == nullptr)
    return;
  if (size < kMin || size > kMax || size <= size_) {
    big_block_free(block, size);
    return;
  }
  std::memset(block, 0, std::min(used, size));
  release();
  block_ = block;
  size_ = size;
}

void OutSpare::release() {
  big_block_free(block_, size_);
  block_ = nullptr;
  size_ = 0;
}

} // namespace ava
