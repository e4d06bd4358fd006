/*
 * Kernel parameter layouts from a cubin (ELF64, little-endian): find the
 * section named ".nv.info.<kernel>" and decode its EIATTR records (format
 * in fatbin.h). Only the bytes of [elf, elf + len) are read.
 */
#include <string.h>

#include "fatbin.h"
#include "fatbin_bytes.h"

enum {
  ELF_HEADER_SIZE = 64,
  ELF_SHDR_SIZE = 64,
  SHN_XINDEX = 0xffff,
  SHT_NOBITS = 8,
  EIFMT_NVAL = 1,
  EIFMT_BVAL = 2,
  EIFMT_HVAL = 3,
  EIFMT_SVAL = 4,
  EIATTR_PARAM_CBANK = 0x0a,
  EIATTR_KPARAM_INFO = 0x17,
  EIATTR_CBANK_PARAM_SIZE = 0x19,
};

struct ElfView {
  const uint8_t *base;
  size_t len;
  uint64_t shoff;
  uint64_t shnum;
  uint64_t shentsize;
};

struct SectionView {
  const uint8_t *data;
  size_t size;
};

static const uint8_t *section_header(const struct ElfView *elf, uint64_t index) {
  return elf->base + elf->shoff + index * elf->shentsize;
}

static int section_bytes(const struct ElfView *elf, uint64_t index, struct SectionView *out) {
  const uint8_t *sh = section_header(elf, index);
  uint64_t off = ava_fb_u64(sh + 24);
  uint64_t size = ava_fb_u64(sh + 32);
  if (ava_fb_u32(sh + 4) == SHT_NOBITS)
    size = 0;
  if (!ava_fb_in_bounds(off, size, elf->len))
    return AVA_FATBIN_E_BAD_BOUNDS;
  out->data = elf->base + off;
  out->size = (size_t)size;
  return AVA_FATBIN_OK;
}

static int open_elf(const void *data, size_t len, struct ElfView *elf, uint64_t *shstrndx) {
  const uint8_t *p = data;
  if (len < ELF_HEADER_SIZE)
    return AVA_FATBIN_E_TRUNCATED;
  if (memcmp(p,
             "\x7f"
             "ELF",
             4) != 0)
    return AVA_FATBIN_E_BAD_MAGIC;
  if (p[4] != 2 || p[5] != 1)
    return AVA_FATBIN_E_BAD_VERSION; /* ELF64, little-endian */
  elf->base = p;
  elf->len = len;
  elf->shoff = ava_fb_u64(p + 0x28);
  elf->shentsize = ava_fb_u16(p + 0x3a);
  elf->shnum = ava_fb_u16(p + 0x3c);
  *shstrndx = ava_fb_u16(p + 0x3e);
  if (elf->shentsize < ELF_SHDR_SIZE)
    return AVA_FATBIN_E_CORRUPT;
  if (!ava_fb_in_bounds(elf->shoff, elf->shentsize, len))
    return AVA_FATBIN_E_BAD_BOUNDS;
  /* Section 0 carries the real count and string index when they overflow 16 bits. */
  const uint8_t *sh0 = elf->base + elf->shoff;
  if (elf->shnum == 0)
    elf->shnum = ava_fb_u64(sh0 + 32);
  if (*shstrndx == SHN_XINDEX)
    *shstrndx = ava_fb_u32(sh0 + 40);
  if (elf->shnum == 0)
    return AVA_FATBIN_E_NOT_FOUND;
  if (elf->shnum > (len - elf->shoff) / elf->shentsize)
    return AVA_FATBIN_E_BAD_BOUNDS;
  if (*shstrndx >= elf->shnum)
    return AVA_FATBIN_E_BAD_BOUNDS;
  return AVA_FATBIN_OK;
}

/* True when strtab holds prefix+name, NUL-terminated, at offset off. */
static int name_matches(const struct SectionView *strtab, uint64_t off, const char *prefix,
                        const char *name) {
  size_t plen = strlen(prefix);
  size_t nlen = strlen(name);
  if (!ava_fb_in_bounds(off, (uint64_t)plen + nlen + 1, strtab->size))
    return 0;
  const char *s = (const char *)strtab->data + off;
  return memcmp(s, prefix, plen) == 0 && memcmp(s + plen, name, nlen) == 0 &&
         s[plen + nlen] == '\0';
}

static int find_info_section(const void *data, size_t len, const char *kernel,
                             struct SectionView *out) {
  struct ElfView elf;
  uint64_t shstrndx = 0;
  int rc = open_elf(data, len, &elf, &shstrndx);
  if (rc != AVA_FATBIN_OK)
    return rc;
  struct SectionView strtab;
  rc = section_bytes(&elf, shstrndx, &strtab);
  if (rc != AVA_FATBIN_OK)
    return rc;
  for (uint64_t i = 0; i < elf.shnum; i++) {
    uint32_t name = ava_fb_u32(section_header(&elf, i));
    if (name_matches(&strtab, name, ".nv.info.", kernel))
      return section_bytes(&elf, i, out);
  }
  return AVA_FATBIN_E_NOT_FOUND;
}

struct ParamScan {
  struct ava_kernel_params *out;
  uint8_t seen[AVA_KERNEL_MAX_PARAMS];
  uint32_t cbank_size;
  int have_cbank;
  uint32_t cbank_param_size;
  int have_cbank_param_size;
};

static int take_kparam(struct ParamScan *scan, const uint8_t *payload, uint16_t size) {
  if (size < 12)
    return AVA_FATBIN_E_CORRUPT;
  uint16_t ordinal = ava_fb_u16(payload + 4);
  uint16_t offset = ava_fb_u16(payload + 6);
  uint32_t bytes = ava_fb_u32(payload + 8) >> 18;
  if (ordinal >= AVA_KERNEL_MAX_PARAMS)
    return AVA_FATBIN_E_TOO_MANY;
  if (scan->seen[ordinal])
    return AVA_FATBIN_E_CORRUPT;
  scan->seen[ordinal] = 1;
  scan->out->sizes[ordinal] = bytes;
  scan->out->offsets[ordinal] = offset;
  if (ordinal + 1u > scan->out->count)
    scan->out->count = ordinal + 1u;
  return AVA_FATBIN_OK;
}

static int scan_records(struct ParamScan *scan, const struct SectionView *info) {
  size_t pos = 0;
  while (pos < info->size) {
    if (info->size - pos < 4)
      return AVA_FATBIN_E_TRUNCATED;
    uint8_t format = info->data[pos];
    uint8_t attr = info->data[pos + 1];
    uint16_t value = ava_fb_u16(info->data + pos + 2);
    if (format == EIFMT_NVAL || format == EIFMT_BVAL || format == EIFMT_HVAL) {
      if (format == EIFMT_HVAL && attr == EIATTR_CBANK_PARAM_SIZE) {
        scan->cbank_param_size = value;
        scan->have_cbank_param_size = 1;
      }
      pos += 4;
      continue;
    }
    if (format != EIFMT_SVAL)
      return AVA_FATBIN_E_CORRUPT;
    if (value > info->size - pos - 4)
      return AVA_FATBIN_E_BAD_BOUNDS;
    const uint8_t *payload = info->data + pos + 4;
    if (attr == EIATTR_KPARAM_INFO) {
      int rc = take_kparam(scan, payload, value);
      if (rc != AVA_FATBIN_OK)
        return rc;
    } else if (attr == EIATTR_PARAM_CBANK) {
      if (value < 8)
        return AVA_FATBIN_E_CORRUPT;
      scan->cbank_size = ava_fb_u16(payload + 6);
      scan->have_cbank = 1;
    }
    pos += 4 + (size_t)value;
  }
  return AVA_FATBIN_OK;
}

int ava_cubin_kernel_params(const void *elf, size_t len, const char *kernel_name,
                            struct ava_kernel_params *out) {
  if (elf == NULL || kernel_name == NULL || out == NULL)
    return AVA_FATBIN_E_INVALID;
  struct SectionView info;
  int rc = find_info_section(elf, len, kernel_name, &info);
  if (rc != AVA_FATBIN_OK)
    return rc;

  struct ParamScan scan;
  memset(&scan, 0, sizeof scan);
  memset(out, 0, sizeof *out);
  scan.out = out;
  rc = scan_records(&scan, &info);
  if (rc != AVA_FATBIN_OK)
    return rc;

  uint64_t end = 0;
  for (uint32_t i = 0; i < out->count; i++) {
    if (!scan.seen[i])
      return AVA_FATBIN_E_CORRUPT; /* a gap in the ordinals */
    uint64_t e = (uint64_t)out->offsets[i] + out->sizes[i];
    if (e > end)
      end = e;
  }
  if (scan.have_cbank) {
    out->total = scan.cbank_size;
  } else if (scan.have_cbank_param_size) {
    out->total = scan.cbank_param_size;
  } else {
    out->total = (uint32_t)end;
  }
  if (end > out->total)
    return AVA_FATBIN_E_CORRUPT;
  return AVA_FATBIN_OK;
}
