// Fat binary container and wrapper parsing on real CUDA 13 nvcc output.
#include <criterion/criterion.h>

#include <cstring>
#include <string>

#include "fatbin_test_support.hpp"

using ava::test::Bytes;

namespace {

struct Variant {
  const char *file;
  ava_fatbin_compression compression;
};

const Variant kVariants[] = {
    {"kernels_plain.fatbin", AVA_FATBIN_COMPRESSION_NONE},
    {"kernels_zstd.fatbin", AVA_FATBIN_COMPRESSION_ZSTD},
    {"kernels_lz4.fatbin", AVA_FATBIN_COMPRESSION_LZ4},
};

} // namespace

Test(fatbin_container, total_len_is_section_size) {
  for (const auto &v : kVariants) {
    Bytes fb = ava::test::read_input(v.file);
    cr_assert_gt(fb.size(), 16u, "%s missing", v.file);
    size_t total = 0;
    cr_assert_eq(ava_fatbin_total_len(fb.data(), fb.size(), &total), 0, "%s", v.file);
    cr_expect_eq(total, fb.size(), "%s", v.file);
  }
}

Test(fatbin_container, entries_for_sm80_sm90_and_ptx) {
  for (const auto &v : kVariants) {
    Bytes fb = ava::test::read_input(v.file);
    auto entries = ava::test::entries_of(fb);
    cr_assert_eq(entries.size(), 3u, "%s: %zu entries", v.file, entries.size());
    const ava_fatbin_entry *want[] = {
        ava::test::find_entry(entries, AVA_FATBIN_KIND_ELF, 80),
        ava::test::find_entry(entries, AVA_FATBIN_KIND_ELF, 90),
        ava::test::find_entry(entries, AVA_FATBIN_KIND_PTX, 90),
    };
    for (const auto *e : want) {
      cr_assert_not_null(e, "%s", v.file);
      cr_expect_eq(e->compression, v.compression, "%s arch %u", v.file, e->arch);
      cr_expect(e->flags & AVA_FATBIN_FLAG_64BIT);
      cr_expect_leq(e->payload_size, fb.size());
    }
  }
}

Test(fatbin_container, compressed_equals_uncompressed) {
  Bytes plain = ava::test::read_input("kernels_plain.fatbin");
  auto plain_entries = ava::test::entries_of(plain);
  cr_assert_eq(plain_entries.size(), 3u);
  for (const auto &v : kVariants) {
    // libzstd is a dependency (scripts/install-deps.sh): a build without it is incomplete.
    cr_assert(v.compression != AVA_FATBIN_COMPRESSION_ZSTD || ava_fatbin_have_zstd(),
              "built without libzstd: the zstd variant cannot be checked");
    Bytes fb = ava::test::read_input(v.file);
    auto entries = ava::test::entries_of(fb);
    cr_assert_eq(entries.size(), 3u);
    for (const auto &pe : plain_entries) {
      const ava_fatbin_entry *e = ava::test::find_entry(entries, pe.kind, pe.arch);
      cr_assert_not_null(e);
      Bytes got = ava::test::decompressed(*e);
      Bytes want = ava::test::decompressed(pe);
      cr_assert_gt(got.size(), 0u, "%s kind %u arch %u", v.file, pe.kind, pe.arch);
      // Raw PTX entries are NUL-padded to 8 bytes; compressed ones are not.
      size_t n = got.size();
      cr_assert_leq(n, want.size());
      cr_expect_eq(std::memcmp(got.data(), want.data(), n), 0, "%s kind %u arch %u", v.file,
                   pe.kind, pe.arch);
      for (size_t i = n; i < want.size(); i++)
        cr_expect_eq(want[i], 0);
      if (pe.kind == AVA_FATBIN_KIND_ELF) {
        cr_expect_eq(std::memcmp(got.data(),
                                 "\x7f"
                                 "ELF",
                                 4),
                     0);
        cr_expect_eq(n, want.size());
      }
    }
  }
}

Test(fatbin_container, iterator_stops_and_stays_stopped) {
  Bytes fb = ava::test::read_input("kernels_plain.fatbin");
  ava_fatbin_iter it;
  cr_assert_eq(ava_fatbin_iter_init(&it, fb.data(), fb.size()), 0);
  ava_fatbin_entry e;
  int n = 0;
  while (ava_fatbin_next(&it, &e) == 1 && n < 100)
    n++;
  cr_expect_eq(n, 3);
  cr_expect_eq(ava_fatbin_next(&it, &e), 0);
}

// The executable carries one wrapper per module in .nvFatBinSegment; their
// pointers are link-time addresses inside .nv_fatbin.
Test(fatbin_container, executable_wrappers) {
  Bytes exe = ava::test::read_input("kernels_exe");
  auto seg = ava::test::host_section(exe, ".nvFatBinSegment");
  auto fat = ava::test::host_section(exe, ".nv_fatbin");
  cr_assert(seg.has_value() && fat.has_value());
  cr_assert_eq(seg->size % AVA_FATBIN_WRAPPER_SIZE, 0u);
  bool found_kernels = false;
  for (uint64_t off = 0; off < seg->size; off += AVA_FATBIN_WRAPPER_SIZE) {
    const uint8_t *w = exe.data() + seg->offset + off;
    uint32_t version = 0;
    uint64_t addr = 0;
    cr_assert_eq(ava_fatbin_wrapper_addr(w, seg->size - off, &version, &addr), 0);
    cr_assert_geq(addr, fat->addr);
    cr_assert_lt(addr, fat->addr + fat->size);
    uint64_t file_off = fat->offset + (addr - fat->addr);
    size_t avail = fat->offset + fat->size - file_off;
    size_t total = 0;
    cr_assert_eq(ava_fatbin_total_len(exe.data() + file_off, avail, &total), 0);
    Bytes fb(exe.begin() + file_off, exe.begin() + file_off + total);
    auto entries = ava::test::entries_of(fb);
    cr_assert_gt(entries.size(), 0u);
    const ava_fatbin_entry *sm80 = ava::test::find_entry(entries, AVA_FATBIN_KIND_ELF, 80);
    if (sm80 == nullptr)
      continue;
    Bytes cubin = ava::test::decompressed(*sm80);
    ava_kernel_params p;
    if (ava_cubin_kernel_params(cubin.data(), cubin.size(), "_Z6k_intsiiPi", &p) == 0) {
      found_kernels = true;
      cr_expect_eq(p.count, 3u);
      cr_expect_not_null(ava::test::find_entry(entries, AVA_FATBIN_KIND_PTX, 90));
    }
  }
  cr_expect(found_kernels, "no wrapper led to the test kernels");
}

// In a live process the wrapper holds a real pointer.
Test(fatbin_container, wrapper_with_live_pointer) {
  Bytes fb = ava::test::read_input("kernels_plain.fatbin");
  uint8_t wrapper[AVA_FATBIN_WRAPPER_SIZE] = {};
  uint32_t magic = AVA_FATBIN_WRAPPER_MAGIC, version = 1;
  uint64_t ptr = reinterpret_cast<uintptr_t>(fb.data());
  std::memcpy(wrapper, &magic, 4);
  std::memcpy(wrapper + 4, &version, 4);
  std::memcpy(wrapper + 8, &ptr, 8);
  const void *data = nullptr;
  size_t len = 0;
  cr_assert_eq(ava_fatbin_wrapper(wrapper, sizeof wrapper, &data, &len), 0);
  cr_expect_eq(data, fb.data());
  cr_expect_eq(len, fb.size());
  cr_expect_eq(ava_fatbin_wrapper(wrapper, SIZE_MAX, &data, &len), 0);
}
