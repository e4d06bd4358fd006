// Malformed fat binaries, cubins and PTX: every case must give an error code,
// never a crash or a read outside the given bytes (run under ASan/UBSan too).
#include <criterion/criterion.h>
#include <lz4.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <string>

#include "fatbin_test_support.hpp"

using ava::test::Bytes;
using ava::test::load;
using ava::test::store;

namespace {

const char *const kKernels[] = {"_Z6k_intsiiPi",
                                "_Z6k_ptrsPKfPfm",
                                "_Z8k_struct6TriplePd",
                                "_Z8k_float46float4cPf",
                                "_Z10k_noparamsv",
                                "_Z7k_templIdEvPT_S0_s",
                                "k_extern_c"};

// Offsets of each entry header inside the container.
std::vector<size_t> entry_offsets(const Bytes &fb) {
  std::vector<size_t> out;
  for (const auto &e : ava::test::entries_of(fb))
    out.push_back(e.header - fb.data());
  return out;
}

int entries_rc(const Bytes &fb) {
  std::vector<ava_fatbin_entry> out(16);
  size_t n = 0;
  return ava_fatbin_entries(fb.data(), fb.size(), out.data(), out.size(), &n);
}

// Copies into an exactly sized heap buffer so ASan sees any overread.
Bytes exact(const Bytes &b, size_t len) {
  return Bytes(b.begin(), b.begin() + len);
}

Bytes sm80_cubin() {
  Bytes fb = ava::test::read_input("kernels_plain.fatbin");
  auto entries = ava::test::entries_of(fb);
  const ava_fatbin_entry *e = ava::test::find_entry(entries, AVA_FATBIN_KIND_ELF, 80);
  return e == nullptr ? Bytes{} : ava::test::decompressed(*e);
}

// Exercises every parser on whatever the (possibly mutated) bytes hold.
void parse_everything(const Bytes &fb) {
  std::vector<ava_fatbin_entry> entries(16);
  size_t n = 0;
  if (ava_fatbin_entries(fb.data(), fb.size(), entries.data(), entries.size(), &n) != 0)
    return;
  for (size_t i = 0; i < n; i++) {
    const auto &e = entries[i];
    if (e.uncompressed_size > (64u << 20))
      continue;
    Bytes out(e.uncompressed_size);
    size_t len = 0;
    if (ava_fatbin_decompress(&e, out.data(), out.size(), &len) != 0)
      continue;
    out.resize(len);
    for (const char *k : kKernels) {
      ava_kernel_params p;
      if (e.kind == AVA_FATBIN_KIND_ELF)
        ava_cubin_kernel_params(out.data(), out.size(), k, &p);
      if (e.kind == AVA_FATBIN_KIND_PTX)
        ava_ptx_kernel_params(reinterpret_cast<const char *>(out.data()), out.size(), k, &p);
    }
  }
}

} // namespace

Test(fatbin_bad_input, truncated_container_everywhere) {
  Bytes fb = ava::test::read_input("kernels_plain.fatbin");
  cr_assert_gt(fb.size(), 16u);
  for (size_t len = 0; len < fb.size(); len++) {
    Bytes cut = exact(fb, len);
    cr_assert_lt(entries_rc(cut), 0, "len %zu", len);
    size_t total = 0;
    cr_assert_lt(ava_fatbin_total_len(cut.data(), cut.size(), &total), 0);
  }
}

// The header's size is rewritten to match each cut, so the entry parser
// itself meets the truncation: only cuts at entry ends are valid.
Test(fatbin_bad_input, truncated_entries_with_consistent_header) {
  Bytes fb = ava::test::read_input("kernels_plain.fatbin");
  auto offs = entry_offsets(fb);
  cr_assert_eq(offs.size(), 3u);
  std::set<size_t> valid = {16, fb.size()};
  for (size_t i = 1; i < offs.size(); i++)
    valid.insert(offs[i]);
  for (size_t len = 16; len < fb.size(); len++) {
    Bytes cut = exact(fb, len);
    store<uint64_t>(cut, 8, len - 16);
    int rc = entries_rc(cut);
    if (valid.count(len) != 0) {
      cr_assert_eq(rc, 0, "len %zu", len);
    } else {
      cr_assert_lt(rc, 0, "len %zu", len);
    }
  }
}

Test(fatbin_bad_input, lying_sizes_and_offsets) {
  Bytes fb = ava::test::read_input("kernels_plain.fatbin");
  auto offs = entry_offsets(fb);
  cr_assert_eq(offs.size(), 3u);
  const size_t e1 = offs[1];
  struct Case {
    const char *what;
    size_t at;
    int width;
    uint64_t value;
    int want;
  };
  const Case cases[] = {
      {"body 2^63", 8, 8, 1ull << 63, AVA_FATBIN_E_TRUNCATED},
      {"body max", 8, 8, UINT64_MAX, AVA_FATBIN_E_BAD_BOUNDS},
      {"body past end", 8, 8, fb.size() - 15, AVA_FATBIN_E_TRUNCATED},
      {"container header size 4", 6, 2, 4, AVA_FATBIN_E_BAD_BOUNDS},
      {"container header size past end", 6, 2, 0xffff, AVA_FATBIN_E_TRUNCATED},
      {"container version", 4, 2, 2, AVA_FATBIN_E_BAD_VERSION},
      {"container magic", 0, 4, 0xba55ed51, AVA_FATBIN_E_BAD_MAGIC},
      {"entry payload 2^63", e1 + 8, 8, 1ull << 63, AVA_FATBIN_E_BAD_BOUNDS},
      {"entry payload max", e1 + 8, 8, UINT64_MAX, AVA_FATBIN_E_BAD_BOUNDS},
      {"entry payload past end", e1 + 8, 8, fb.size(), AVA_FATBIN_E_BAD_BOUNDS},
      {"entry header 0", e1 + 4, 4, 0, AVA_FATBIN_E_BAD_BOUNDS},
      {"entry header 63", e1 + 4, 4, 63, AVA_FATBIN_E_BAD_BOUNDS},
      {"entry header 2^31", e1 + 4, 4, 1u << 31, AVA_FATBIN_E_TRUNCATED},
      {"entry header max", e1 + 4, 4, UINT32_MAX, AVA_FATBIN_E_TRUNCATED},
      {"identifier past end", e1 + 32, 8, (uint64_t)16 << 32 | 0xfffffff0u,
       AVA_FATBIN_E_BAD_BOUNDS},
      {"identifier length max", e1 + 32, 8, (uint64_t)UINT32_MAX << 32 | 8u,
       AVA_FATBIN_E_BAD_BOUNDS},
      {"both compression flags", e1 + 40, 8, 0xa011, AVA_FATBIN_E_UNKNOWN_COMPRESSION},
      {"compressed size over payload", e1 + 40, 8, 0x8011, AVA_FATBIN_E_BAD_BOUNDS},
  };
  for (const auto &c : cases) {
    Bytes bad = fb;
    if (std::string(c.what) == "compressed size over payload")
      store<uint32_t>(bad, e1 + 16, static_cast<uint32_t>(load<uint64_t>(fb, e1 + 8) + 1));
    if (c.width == 2)
      store<uint16_t>(bad, c.at, static_cast<uint16_t>(c.value));
    if (c.width == 4)
      store<uint32_t>(bad, c.at, static_cast<uint32_t>(c.value));
    if (c.width == 8)
      store<uint64_t>(bad, c.at, c.value);
    cr_expect_eq(entries_rc(bad), c.want, "%s: got %d", c.what, entries_rc(bad));
  }
}

Test(fatbin_bad_input, bad_wrapper) {
  uint8_t w[AVA_FATBIN_WRAPPER_SIZE] = {};
  uint32_t magic = AVA_FATBIN_WRAPPER_MAGIC, version = 1;
  uint64_t addr = 0x1000;
  std::memcpy(w, &magic, 4);
  std::memcpy(w + 4, &version, 4);
  std::memcpy(w + 8, &addr, 8);
  uint64_t got = 0;
  cr_expect_eq(ava_fatbin_wrapper_addr(w, sizeof w, nullptr, &got), 0);
  for (size_t len = 0; len < sizeof w; len++) {
    Bytes cut(w, w + len);
    // An empty vector has no data pointer: that is an invalid argument.
    int want = len == 0 ? AVA_FATBIN_E_INVALID : AVA_FATBIN_E_TRUNCATED;
    cr_expect_eq(ava_fatbin_wrapper_addr(cut.data(), len, nullptr, &got), want);
  }
  uint8_t bad[sizeof w];
  std::memcpy(bad, w, sizeof w);
  bad[0] ^= 1;
  cr_expect_eq(ava_fatbin_wrapper_addr(bad, sizeof bad, nullptr, &got), AVA_FATBIN_E_BAD_MAGIC);
  std::memcpy(bad, w, sizeof w);
  bad[4] = 3;
  cr_expect_eq(ava_fatbin_wrapper_addr(bad, sizeof bad, nullptr, &got), AVA_FATBIN_E_BAD_VERSION);
  std::memcpy(bad, w, sizeof w);
  std::memset(bad + 8, 0, 8);
  const void *data = nullptr;
  size_t len = 0;
  cr_expect_eq(ava_fatbin_wrapper(bad, sizeof bad, &data, &len), AVA_FATBIN_E_BAD_BOUNDS);
  // A live wrapper pointing at a non-fatbin gives bad magic, not a crash.
  Bytes junk(64, 0x5a);
  uint64_t ptr = reinterpret_cast<uintptr_t>(junk.data());
  std::memcpy(bad, w, sizeof w);
  std::memcpy(bad + 8, &ptr, 8);
  cr_expect_eq(ava_fatbin_wrapper(bad, sizeof bad, &data, &len), AVA_FATBIN_E_BAD_MAGIC);
}

// Compressed payload sizes and claimed output sizes that lie.
Test(fatbin_bad_input, compressed_lies) {
  for (const char *file : {"kernels_lz4.fatbin", "kernels_zstd.fatbin"}) {
    Bytes fb = ava::test::read_input(file);
    auto entries = ava::test::entries_of(fb);
    cr_assert_eq(entries.size(), 3u);
    for (const auto &orig : entries) {
      if (orig.compression == AVA_FATBIN_COMPRESSION_ZSTD && !ava_fatbin_have_zstd())
        continue;
      Bytes out(orig.uncompressed_size + 64);
      size_t len = 0;
      ava_fatbin_entry e = orig;
      e.payload_size = orig.payload_size / 2; // stream cut short
      cr_expect_lt(ava_fatbin_decompress(&e, out.data(), out.size(), &len), 0, "%s", file);
      e = orig;
      e.uncompressed_size = orig.uncompressed_size / 2; // real output overflows
      cr_expect_eq(ava_fatbin_decompress(&e, out.data(), out.size(), &len), AVA_FATBIN_E_OVERFLOW,
                   "%s", file);
      e = orig;
      e.uncompressed_size = orig.uncompressed_size + 64; // stream ends early
      cr_expect_eq(ava_fatbin_decompress(&e, out.data(), out.size(), &len), AVA_FATBIN_E_CORRUPT,
                   "%s", file);
      e = orig;
      cr_expect_eq(ava_fatbin_decompress(&e, out.data(), orig.uncompressed_size - 1, &len),
                   AVA_FATBIN_E_OVERFLOW, "%s", file);
    }
  }
}

// liblz4 decodes the blocks; these check the codes ava maps its answers to.
Test(fatbin_bad_input, lz4_crafted_blocks) {
  struct Case {
    const char *what;
    std::vector<uint8_t> src;
    size_t cap;
    int want;
  };
  const Case cases[] = {
      {"empty", {}, 16, AVA_FATBIN_E_CORRUPT},
      {"literals only", {0x30, 'a', 'b', 'c'}, 16, AVA_FATBIN_OK},
      {"literals past input", {0x50, 'a'}, 16, AVA_FATBIN_E_CORRUPT},
      {"literals overflow", {0x30, 'a', 'b', 'c'}, 2, AVA_FATBIN_E_OVERFLOW},
      {"offset zero", {0x10, 'a', 0, 0}, 16, AVA_FATBIN_E_CORRUPT},
      {"offset before start", {0x10, 'a', 2, 0, 0x00}, 16, AVA_FATBIN_E_CORRUPT},
      {"offset cut", {0x10, 'a', 1}, 16, AVA_FATBIN_E_CORRUPT},
      // 'a', 20 more by a match at offset 1, then 11 literal 'b's: the
      // format's end rules (5 literals last, no match in the last 12 bytes)
      // hold.
      {"match run",
       {0x1f, 'a', 1, 0, 1, 0xb0, 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b'},
       32,
       AVA_FATBIN_OK},
      {"match run overflows",
       {0x1f, 'a', 1, 0, 1, 0xb0, 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b'},
       31,
       AVA_FATBIN_E_OVERFLOW},
      // Blocks that end in a match break the end rules: corrupt, whether or
      // not the match would also overflow.
      {"ends in a match", {0x14, 'a', 1, 0, 0x00}, 16, AVA_FATBIN_E_CORRUPT},
      {"ends in an overflowing match", {0x1f, 'a', 1, 0, 200, 0x00}, 16, AVA_FATBIN_E_CORRUPT},
      {"length bytes cut", {0xf0, 255, 255}, 1024, AVA_FATBIN_E_CORRUPT},
  };
  for (const auto &c : cases) {
    Bytes dst(c.cap);
    size_t len = 0;
    int rc = ava_lz4_block_decompress(c.src.empty() ? nullptr : c.src.data(), c.src.size(),
                                      dst.data(), dst.size(), &len);
    cr_expect_eq(rc, c.want, "%s: got %d", c.what, rc);
  }
}

// A block from liblz4's own compressor, whole, cut and with room that lies.
Test(fatbin_bad_input, lz4_compressed_block) {
  std::string text;
  for (int i = 0; text.size() < 8192; i++)
    text += "__global__ void k" + std::to_string(i % 97) + "(int *p) { p[0] = 1; }\n";
  std::vector<char> block(LZ4_compressBound(static_cast<int>(text.size())));
  const int n = LZ4_compress_default(text.data(), block.data(), static_cast<int>(text.size()),
                                     static_cast<int>(block.size()));
  cr_assert_gt(n, 0);
  Bytes out(text.size() + 64);
  size_t len = 0;
  cr_expect_eq(ava_lz4_block_decompress(block.data(), n, out.data(), text.size(), &len),
               AVA_FATBIN_OK);
  cr_expect_eq(len, text.size());
  cr_expect(std::memcmp(out.data(), text.data(), text.size()) == 0);
  cr_expect_eq(ava_lz4_block_decompress(block.data(), n, out.data(), text.size() / 2, &len),
               AVA_FATBIN_E_OVERFLOW);
  cr_expect_eq(ava_lz4_block_decompress(block.data(), n / 2, out.data(), text.size(), &len),
               AVA_FATBIN_E_CORRUPT);
  // More room than the block fills is no error here: the caller compares
  // the length with the size the header claims.
  cr_expect_eq(ava_lz4_block_decompress(block.data(), n, out.data(), out.size(), &len),
               AVA_FATBIN_OK);
  cr_expect_eq(len, text.size());
}

Test(fatbin_bad_input, cubin_headers_lie) {
  Bytes cubin = sm80_cubin();
  cr_assert_gt(cubin.size(), 64u);
  ava_kernel_params p;
  for (size_t len = 0; len < 64; len++) {
    Bytes cut = exact(cubin, len);
    int want = len == 0 ? AVA_FATBIN_E_INVALID : AVA_FATBIN_E_TRUNCATED;
    cr_expect_eq(ava_cubin_kernel_params(cut.data(), len, kKernels[0], &p), want);
  }
  auto shoff = load<uint64_t>(cubin, 0x28);
  // Cutting inside the section table or any section must not read past the cut.
  for (size_t len = 64; len < cubin.size(); len += 7) {
    Bytes cut = exact(cubin, len);
    int rc = ava_cubin_kernel_params(cut.data(), len, kKernels[0], &p);
    if (len < shoff)
      cr_expect_lt(rc, 0, "len %zu", len);
  }
  struct Case {
    const char *what;
    size_t at;
    int width;
    uint64_t value;
    int want;
  };
  const Case cases[] = {
      {"magic", 0, 1, 0x7e, AVA_FATBIN_E_BAD_MAGIC},
      {"elf32", 4, 1, 1, AVA_FATBIN_E_BAD_VERSION},
      {"big endian", 5, 1, 2, AVA_FATBIN_E_BAD_VERSION},
      {"shoff 2^63", 0x28, 8, 1ull << 63, AVA_FATBIN_E_BAD_BOUNDS},
      {"shoff past end", 0x28, 8, cubin.size(), AVA_FATBIN_E_BAD_BOUNDS},
      {"shentsize small", 0x3a, 2, 32, AVA_FATBIN_E_CORRUPT},
      {"shnum huge", 0x3c, 2, 0xfff0, AVA_FATBIN_E_BAD_BOUNDS},
      {"shstrndx out of range", 0x3e, 2, 0xfff0, AVA_FATBIN_E_BAD_BOUNDS},
  };
  for (const auto &c : cases) {
    Bytes bad = cubin;
    if (c.width == 1)
      bad[c.at] = static_cast<uint8_t>(c.value);
    if (c.width == 2)
      store<uint16_t>(bad, c.at, static_cast<uint16_t>(c.value));
    if (c.width == 8)
      store<uint64_t>(bad, c.at, c.value);
    int rc = ava_cubin_kernel_params(bad.data(), bad.size(), kKernels[0], &p);
    cr_expect_eq(rc, c.want, "%s: got %d", c.what, rc);
  }
}

// .nv.info records that run past their section or contradict each other.
Test(fatbin_bad_input, nv_info_records_lie) {
  Bytes cubin = sm80_cubin();
  const char *kernel = "k_extern_c";
  auto sh = ava::test::section_header_at(cubin, std::string(".nv.info.") + kernel);
  cr_assert(sh.has_value());
  const size_t off = load<uint64_t>(cubin, *sh + 24);
  const size_t size = load<uint64_t>(cubin, *sh + 32);
  ava_kernel_params p;
  cr_assert_eq(ava_cubin_kernel_params(cubin.data(), cubin.size(), kernel, &p), 0);

  // Find the first KPARAM_INFO record to corrupt.
  size_t kparam = 0;
  for (size_t pos = 0; pos + 4 <= size;) {
    uint8_t fmt = cubin[off + pos], attr = cubin[off + pos + 1];
    if (fmt == 4 && attr == 0x17) {
      kparam = off + pos;
      break;
    }
    pos += fmt == 4 ? 4 + load<uint16_t>(cubin, off + pos + 2) : 4;
  }
  cr_assert_neq(kparam, 0u);

  // Section sizes cut mid-record: every cut must fail or succeed cleanly.
  for (size_t cut = 0; cut < size; cut++) {
    Bytes bad = cubin;
    store<uint64_t>(bad, *sh + 32, cut);
    ava_cubin_kernel_params(bad.data(), bad.size(), kernel, &p);
  }
  struct Case {
    const char *what;
    size_t at;
    int width;
    uint64_t value;
    int want;
  };
  const Case cases[] = {
      {"section size past file", *sh + 32, 8, cubin.size(), AVA_FATBIN_E_BAD_BOUNDS},
      {"section offset 2^63", *sh + 24, 8, 1ull << 63, AVA_FATBIN_E_BAD_BOUNDS},
      {"section size 2", *sh + 32, 8, 2, AVA_FATBIN_E_TRUNCATED},
      {"record size past section", kparam + 2, 2, 0xfff0, AVA_FATBIN_E_BAD_BOUNDS},
      {"record size short", kparam + 2, 2, 0, AVA_FATBIN_E_CORRUPT},
      {"unknown format", kparam, 1, 9, AVA_FATBIN_E_CORRUPT},
      {"ordinal too large", kparam + 8, 2, 5000, AVA_FATBIN_E_TOO_MANY},
      {"ordinal gap", kparam + 8, 2, 7, AVA_FATBIN_E_CORRUPT},
      {"size past buffer", kparam + 12, 4, 0xfffc0000u, AVA_FATBIN_E_CORRUPT},
  };
  for (const auto &c : cases) {
    Bytes bad = cubin;
    if (c.width == 1)
      bad[c.at] = static_cast<uint8_t>(c.value);
    if (c.width == 2)
      store<uint16_t>(bad, c.at, static_cast<uint16_t>(c.value));
    if (c.width == 4)
      store<uint32_t>(bad, c.at, static_cast<uint32_t>(c.value));
    if (c.width == 8)
      store<uint64_t>(bad, c.at, c.value);
    int rc = ava_cubin_kernel_params(bad.data(), bad.size(), kernel, &p);
    cr_expect_eq(rc, c.want, "%s: got %d", c.what, rc);
  }
}

Test(fatbin_bad_input, ptx_signatures_lie) {
  const std::string good = ".entry k(\n.param .u64 a,\n.param .align 8 .b8 b[24]\n)\n{ ret; }\n";
  ava_kernel_params p;
  cr_assert_eq(ava_ptx_kernel_params(good.data(), good.size(), "k", &p), 0);
  cr_expect_eq(p.total, 32u);
  // Every cut inside the parameter list is an error, not a read past the cut.
  size_t close = good.find(')');
  for (size_t len = 0; len <= close; len++) {
    Bytes cut(good.begin(), good.begin() + len);
    int rc = ava_ptx_kernel_params(reinterpret_cast<const char *>(cut.data()), len, "k", &p);
    cr_expect_lt(rc, 0, "len %zu", len);
  }
  struct Case {
    const char *what;
    std::string ptx;
    int want;
  };
  std::string many = ".entry k(";
  for (int i = 0; i < 1100; i++)
    many += ".param .u32 p" + std::to_string(i) + ",";
  many += ".param .u32 last)";
  const Case cases[] = {
      {"huge array", ".entry k(.param .b8 a[99999999999])", AVA_FATBIN_E_CORRUPT},
      {"align not power of two", ".entry k(.param .align 3 .b8 a[4])", AVA_FATBIN_E_CORRUPT},
      {"align zero", ".entry k(.param .align 0 .b8 a[4])", AVA_FATBIN_E_CORRUPT},
      {"no type", ".entry k(.param a)", AVA_FATBIN_E_CORRUPT},
      {"not a param", ".entry k(.reg .u32 a)", AVA_FATBIN_E_CORRUPT},
      {"unclosed bracket", ".entry k(.param .b8 a[4)", AVA_FATBIN_E_CORRUPT},
      {"unclosed comment", ".entry k(/* .param .u32 a)", AVA_FATBIN_E_TRUNCATED},
      {"too many", many, AVA_FATBIN_E_TOO_MANY},
      {"NUL inside", std::string(".entry k(.param .u32 a\0, .param .u32 b)", 40),
       AVA_FATBIN_E_TRUNCATED},
  };
  for (const auto &c : cases) {
    Bytes text(c.ptx.begin(), c.ptx.end());
    int rc =
        ava_ptx_kernel_params(reinterpret_cast<const char *>(text.data()), text.size(), "k", &p);
    cr_expect_eq(rc, c.want, "%s: got %d", c.what, rc);
  }
}

// Random mutations biased towards headers; bounded and deterministic.
Test(fatbin_bad_input, fuzz_mutations) {
  std::mt19937_64 rng(0xa7a5eedULL);
  const char *files[] = {"kernels_plain.fatbin", "kernels_zstd.fatbin", "kernels_lz4.fatbin"};
  for (const char *file : files) {
    Bytes fb = ava::test::read_input(file);
    auto offs = entry_offsets(fb);
    cr_assert_eq(offs.size(), 3u);
    for (int iter = 0; iter < 400; iter++) {
      Bytes m = fb;
      int flips = 1 + static_cast<int>(rng() % 8);
      for (int f = 0; f < flips; f++) {
        size_t at;
        if (rng() % 4 != 0) {
          size_t base = rng() % 4 == 0 ? 0 : offs[rng() % offs.size()];
          at = base + rng() % 80;
        } else {
          at = rng() % m.size();
        }
        if (at < m.size())
          m[at] = static_cast<uint8_t>(rng());
      }
      Bytes cut = exact(m, m.size() - (rng() % 2 == 0 ? rng() % 64 : 0));
      parse_everything(cut);
    }
  }
  Bytes cubin = sm80_cubin();
  auto shoff = load<uint64_t>(cubin, 0x28);
  auto info = ava::test::host_section(cubin, ".nv.info.k_extern_c");
  cr_assert(info.has_value());
  for (int iter = 0; iter < 1500; iter++) {
    Bytes m = cubin;
    int flips = 1 + static_cast<int>(rng() % 6);
    for (int f = 0; f < flips; f++) {
      size_t region = rng() % 3;
      size_t at = region == 0   ? rng() % 64
                  : region == 1 ? shoff + rng() % (m.size() - shoff)
                                : info->offset + rng() % info->size;
      if (at < m.size())
        m[at] = static_cast<uint8_t>(rng());
    }
    for (const char *k : kKernels) {
      ava_kernel_params p;
      ava_cubin_kernel_params(m.data(), m.size(), k, &p);
    }
  }
}
