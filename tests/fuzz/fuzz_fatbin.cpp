// SPDX-License-Identifier: MIT
// The CUDA fat binary, cubin and PTX parsers (specs/cudart/fatbin/fatbin.h),
// which both the guest library and the worker run on what a program (or a
// guest) hands them. Every input goes through each entry point: as a fat
// binary container (each entry decompressed and, if a cubin or PTX, searched
// for kernel parameters), as a cubin, as PTX, as an LZ4 block and as a
// wrapper. Kernel names come from the input itself (".entry NAME" in PTX,
// ".nv.info.NAME" in a cubin), so that the seeds (nvcc output of
// tests/cuda/kernels.cu) reach the parameter parsers.
#include <cctype>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fatbin.h"

namespace {

constexpr size_t kMaxNames = 8;
constexpr uint64_t kMaxDecompressed = 16u << 20;

// Names following `marker` up to a byte that cannot be part of a symbol.
void find_names(const uint8_t *data, size_t size, const char *marker,
                std::vector<std::string> *names) {
  const size_t mlen = std::strlen(marker);
  const uint8_t *p = data;
  const uint8_t *end = data + size;
  while (names->size() < kMaxNames && p < end) {
    const void *hit = memmem(p, static_cast<size_t>(end - p), marker, mlen);
    if (hit == nullptr)
      return;
    const uint8_t *q = static_cast<const uint8_t *>(hit) + mlen;
    const uint8_t *start = q;
    while (q < end && (std::isalnum(*q) || *q == '_' || *q == '$'))
      ++q;
    if (q > start && q - start < 256)
      names->emplace_back(reinterpret_cast<const char *>(start), static_cast<size_t>(q - start));
    p = q;
  }
}

void kernel_params(const uint8_t *data, size_t size, bool ptx) {
  std::vector<std::string> names = {"k_noparams", "k_extern_c"};
  find_names(data, size, ptx ? ".entry " : ".nv.info.", &names);
  auto params = std::make_unique<ava_kernel_params>();
  for (const std::string &name : names) {
    if (ptx)
      ava_ptx_kernel_params(reinterpret_cast<const char *>(data), size, name.c_str(), params.get());
    else
      ava_cubin_kernel_params(data, size, name.c_str(), params.get());
  }
}

void container(const uint8_t *data, size_t size) {
  size_t total = 0;
  if (ava_fatbin_total_len(data, size, &total) != AVA_FATBIN_OK)
    return;
  ava_fatbin_iter it;
  if (ava_fatbin_iter_init(&it, data, total) != AVA_FATBIN_OK)
    return;
  ava_fatbin_entry entry;
  for (int n = 0; n < 64 && ava_fatbin_next(&it, &entry) == 1; ++n) {
    if (entry.uncompressed_size > kMaxDecompressed)
      continue;
    std::vector<uint8_t> out(entry.uncompressed_size);
    size_t out_len = 0;
    if (ava_fatbin_decompress(&entry, out.data(), out.size(), &out_len) != AVA_FATBIN_OK)
      continue;
    if (entry.kind == AVA_FATBIN_KIND_ELF || entry.kind == AVA_FATBIN_KIND_PTX)
      kernel_params(out.data(), out_len, entry.kind == AVA_FATBIN_KIND_PTX);
  }
  std::vector<ava_fatbin_entry> all(16);
  size_t count = 0;
  ava_fatbin_entries(data, total, all.data(), all.size(), &count);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A copy of exactly size bytes, so that ASan sees any read past the input.
  std::vector<uint8_t> copy(data, data + size);
  container(copy.data(), copy.size());
  kernel_params(copy.data(), copy.size(), false);
  kernel_params(copy.data(), copy.size(), true);
  std::vector<uint8_t> lz4(64 * 1024);
  size_t lz4_len = 0;
  ava_lz4_block_decompress(copy.data(), copy.size(), lz4.data(), lz4.size(), &lz4_len);
  uint32_t version = 0;
  uint64_t addr = 0;
  ava_fatbin_wrapper_addr(copy.data(), copy.size(), &version, &addr);
  return 0;
}
