// Helpers shared by the fat binary tests: loading the nvcc-built inputs and
// reading host ELF sections, kept apart from the parser under test.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "fatbin.h"

namespace ava::test {

using Bytes = std::vector<uint8_t>;

inline Bytes read_input(const std::string &name) {
  std::ifstream in(std::string(AVA_CUDA_TEST_DIR) + "/" + name, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

template <typename T> T load(const Bytes &b, size_t off) {
  T v{};
  if (off <= b.size() && sizeof v <= b.size() - off)
    std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}

struct HostSection {
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// Offset of the section header named `name` in an ELF64 file. Inputs come
// from our own nvcc run, so only light checks here.
inline std::optional<size_t> section_header_at(const Bytes &elf, const std::string &name) {
  if (elf.size() < 64 || std::memcmp(elf.data(),
                                     "\x7f"
                                     "ELF",
                                     4) != 0)
    return std::nullopt;
  auto shoff = load<uint64_t>(elf, 0x28);
  auto shentsize = load<uint16_t>(elf, 0x3a);
  auto shnum = load<uint16_t>(elf, 0x3c);
  auto shstrndx = load<uint16_t>(elf, 0x3e);
  auto sh = [&](size_t i) { return shoff + i * shentsize; };
  auto strtab = load<uint64_t>(elf, sh(shstrndx) + 24);
  for (size_t i = 0; i < shnum; i++) {
    auto name_off = load<uint32_t>(elf, sh(i));
    if (strtab + name_off >= elf.size())
      continue;
    const char *s = reinterpret_cast<const char *>(elf.data() + strtab + name_off);
    if (strnlen(s, elf.size() - strtab - name_off) == name.size() && name == s)
      return sh(i);
  }
  return std::nullopt;
}

inline std::optional<HostSection> host_section(const Bytes &elf, const std::string &name) {
  auto at = section_header_at(elf, name);
  if (!at)
    return std::nullopt;
  return HostSection{load<uint64_t>(elf, *at + 16), load<uint64_t>(elf, *at + 24),
                     load<uint64_t>(elf, *at + 32)};
}

template <typename T> void store(Bytes &b, size_t off, T v) {
  if (off <= b.size() && sizeof v <= b.size() - off)
    std::memcpy(b.data() + off, &v, sizeof v);
}

inline std::vector<ava_fatbin_entry> entries_of(const Bytes &fatbin) {
  std::vector<ava_fatbin_entry> out(16);
  size_t n = 0;
  if (ava_fatbin_entries(fatbin.data(), fatbin.size(), out.data(), out.size(), &n) != 0)
    return {};
  out.resize(n);
  return out;
}

inline const ava_fatbin_entry *find_entry(const std::vector<ava_fatbin_entry> &entries,
                                          uint16_t kind, uint32_t arch) {
  for (const auto &e : entries)
    if (e.kind == kind && e.arch == arch)
      return &e;
  return nullptr;
}

inline Bytes decompressed(const ava_fatbin_entry &e) {
  Bytes out(e.uncompressed_size);
  size_t n = 0;
  if (ava_fatbin_decompress(&e, out.data(), out.size(), &n) != 0)
    return {};
  out.resize(n);
  return out;
}

} // namespace ava::test
