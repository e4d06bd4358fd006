// Kernel parameter layouts from cubin .nv.info sections and from PTX, checked
// against the signatures in kernels.cu.
#include <criterion/criterion.h>

#include <cstring>
#include <vector>

#include "fatbin_test_support.hpp"

using ava::test::Bytes;

namespace {

struct KernelCase {
  const char *name;
  std::vector<uint32_t> sizes;
  std::vector<uint32_t> offsets;
  uint32_t total;
};

const KernelCase kKernels[] = {
    {"_Z6k_intsiiPi", {4, 4, 8}, {0, 4, 8}, 16},
    {"_Z6k_ptrsPKfPfm", {8, 8, 8}, {0, 8, 16}, 24},
    {"_Z8k_struct6TriplePd", {24, 8}, {0, 24}, 32},
    {"_Z8k_float46float4cPf", {16, 1, 8}, {0, 16, 24}, 32},
    {"_Z10k_noparamsv", {}, {}, 0},
    {"_Z7k_templIdEvPT_S0_s", {8, 8, 2}, {0, 8, 16}, 18},
    {"k_extern_c", {8, 1, 8}, {0, 8, 16}, 24},
};

void expect_layout(const ava_kernel_params &p, const KernelCase &k, const char *what) {
  cr_assert_eq(p.count, k.sizes.size(), "%s %s: count %u", what, k.name, p.count);
  for (size_t i = 0; i < k.sizes.size(); i++) {
    cr_expect_eq(p.sizes[i], k.sizes[i], "%s %s param %zu size %u", what, k.name, i, p.sizes[i]);
    cr_expect_eq(p.offsets[i], k.offsets[i], "%s %s param %zu offset %u", what, k.name, i,
                 p.offsets[i]);
  }
  cr_expect_eq(p.total, k.total, "%s %s total %u", what, k.name, p.total);
}

Bytes entry_bytes(uint16_t kind, uint32_t arch) {
  Bytes fb = ava::test::read_input("kernels_plain.fatbin");
  auto entries = ava::test::entries_of(fb);
  const ava_fatbin_entry *e = ava::test::find_entry(entries, kind, arch);
  return e == nullptr ? Bytes{} : ava::test::decompressed(*e);
}

} // namespace

Test(fatbin_cubin_params, sm80_and_sm90_match_signatures) {
  for (uint32_t arch : {80u, 90u}) {
    Bytes cubin = entry_bytes(AVA_FATBIN_KIND_ELF, arch);
    cr_assert_gt(cubin.size(), 0u);
    for (const auto &k : kKernels) {
      ava_kernel_params p;
      int rc = ava_cubin_kernel_params(cubin.data(), cubin.size(), k.name, &p);
      cr_assert_eq(rc, 0, "sm_%u %s: %s", arch, k.name, ava_fatbin_strerror(rc));
      expect_layout(p, k, arch == 80 ? "sm_80" : "sm_90");
    }
  }
}

Test(fatbin_cubin_params, ptx_matches_signatures_and_cubin) {
  Bytes ptx = entry_bytes(AVA_FATBIN_KIND_PTX, 90);
  Bytes cubin = entry_bytes(AVA_FATBIN_KIND_ELF, 90);
  cr_assert_gt(ptx.size(), 0u);
  for (const auto &k : kKernels) {
    ava_kernel_params from_ptx, from_cubin;
    int rc = ava_ptx_kernel_params(reinterpret_cast<const char *>(ptx.data()), ptx.size(), k.name,
                                   &from_ptx);
    cr_assert_eq(rc, 0, "ptx %s: %s", k.name, ava_fatbin_strerror(rc));
    expect_layout(from_ptx, k, "ptx");
    cr_assert_eq(ava_cubin_kernel_params(cubin.data(), cubin.size(), k.name, &from_cubin), 0);
    cr_expect_eq(from_ptx.count, from_cubin.count);
    cr_expect_eq(from_ptx.total, from_cubin.total, "%s", k.name);
    cr_expect_eq(std::memcmp(from_ptx.sizes, from_cubin.sizes, from_ptx.count * 4), 0);
    cr_expect_eq(std::memcmp(from_ptx.offsets, from_cubin.offsets, from_ptx.count * 4), 0);
  }
}

Test(fatbin_cubin_params, unknown_kernel_is_not_found) {
  Bytes cubin = entry_bytes(AVA_FATBIN_KIND_ELF, 80);
  Bytes ptx = entry_bytes(AVA_FATBIN_KIND_PTX, 90);
  ava_kernel_params p;
  // A prefix of a real name must not match either.
  for (const char *name : {"nope", "_Z6k_ints", "k_extern", ""}) {
    cr_expect_eq(ava_cubin_kernel_params(cubin.data(), cubin.size(), name, &p),
                 AVA_FATBIN_E_NOT_FOUND, "%s", name);
    cr_expect_eq(
        ava_ptx_kernel_params(reinterpret_cast<const char *>(ptx.data()), ptx.size(), name, &p),
        AVA_FATBIN_E_NOT_FOUND, "%s", name);
  }
}

Test(fatbin_cubin_params, ptx_handwritten_forms) {
  const char ptx[] = ".version 8.0\n.target sm_80\n"
                     "// .entry commented_out(.param .u8 x)\n"
                     ".visible .entry k(\n"
                     "  .param .u64 .ptr .global .align 8 k_p0, // pointer\n"
                     "  .param .align 4 .b8 k_p1[12],\n"
                     "  .param .f16 k_p2,\n"
                     "  .param .b128 k_p3\n"
                     ")\n{\n ret;\n}\n"
                     ".entry k2 {\n ret;\n}\n";
  ava_kernel_params p;
  cr_assert_eq(ava_ptx_kernel_params(ptx, sizeof ptx - 1, "k", &p), 0);
  cr_assert_eq(p.count, 4u);
  uint32_t sizes[] = {8, 12, 2, 16}, offsets[] = {0, 8, 20, 32};
  for (uint32_t i = 0; i < 4; i++) {
    cr_expect_eq(p.sizes[i], sizes[i], "param %u", i);
    cr_expect_eq(p.offsets[i], offsets[i], "param %u", i);
  }
  cr_expect_eq(p.total, 48u);
  cr_assert_eq(ava_ptx_kernel_params(ptx, sizeof ptx - 1, "k2", &p), 0);
  cr_expect_eq(p.count, 0u);
  cr_expect_eq(ava_ptx_kernel_params(ptx, sizeof ptx - 1, "commented_out", &p),
               AVA_FATBIN_E_NOT_FOUND);
}
