// SPDX-License-Identifier: MIT
// Memory for large message and staging buffers. Fresh anonymous memory costs
// a page fault per 4 KiB page on first touch, and under a paravirtualised
// MMU each fault is dear: a 64 MiB copy into fresh 4 KiB pages ran at
// ~250 MiB/s on our 2-vCPU machines, into fresh transparent huge pages at
// 2-5.6 GiB/s, into reused memory at ~10 GiB/s. So blocks from big_block_min
// up are whole 2 MiB pages (their own mapping, with MADV_HUGEPAGE, which
// counts where THP is "madvise", Debian's default); smaller ones are malloc's.
#pragma once

#include <cstdint>

namespace ava {

inline constexpr uint64_t kBigBlockMin = uint64_t{2} << 20;

// At least bytes, aligned to align (a power of two; 0: malloc's alignment,
// 8 or better) or nullptr. Large blocks are 2 MiB aligned whatever align
// says. zeroed: all zero (a fresh mapping is, so large blocks cost no extra
// pass).
void *big_block_alloc(uint64_t bytes, bool zeroed, uint64_t align = 0);
// Frees a block from big_block_alloc of the same bytes; nullptr is a no-op.
void big_block_free(void *block, uint64_t bytes);

} // namespace ava
