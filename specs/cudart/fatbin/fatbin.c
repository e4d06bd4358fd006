/* Fat binary wrapper and container parsing; layout in fatbin.h. */
#include "fatbin.h"

#include <string.h>

#include "fatbin_bytes.h"

#include <limits.h>
#include <lz4.h>

#ifdef AVA_HAVE_ZSTD
#include <zstd.h>
#include <zstd_errors.h>
#endif

int ava_fatbin_total_len(const void *data, size_t avail, size_t *total) {
  if (data == NULL || total == NULL)
    return AVA_FATBIN_E_INVALID;
  const uint8_t *p = data;
  if (avail < AVA_FATBIN_HEADER_SIZE)
    return AVA_FATBIN_E_TRUNCATED;
  if (ava_fb_u32(p) != AVA_FATBIN_MAGIC)
    return AVA_FATBIN_E_BAD_MAGIC;
  if (ava_fb_u16(p + 4) != 1)
    return AVA_FATBIN_E_BAD_VERSION;
  uint16_t header_size = ava_fb_u16(p + 6);
  if (header_size < AVA_FATBIN_HEADER_SIZE)
    return AVA_FATBIN_E_BAD_BOUNDS;
  uint64_t body = ava_fb_u64(p + 8);
  if (body > SIZE_MAX - header_size)
    return AVA_FATBIN_E_BAD_BOUNDS;
  uint64_t len = header_size + body;
  if (len > avail)
    return AVA_FATBIN_E_TRUNCATED;
  *total = (size_t)len;
  return AVA_FATBIN_OK;
}

int ava_fatbin_wrapper_addr(const void *wrapper, size_t avail, uint32_t *version, uint64_t *addr) {
  if (wrapper == NULL || addr == NULL)
    return AVA_FATBIN_E_INVALID;
  const uint8_t *p = wrapper;
  if (avail < AVA_FATBIN_WRAPPER_SIZE)
    return AVA_FATBIN_E_TRUNCATED;
  if (ava_fb_u32(p) != AVA_FATBIN_WRAPPER_MAGIC)
    return AVA_FATBIN_E_BAD_MAGIC;
  uint32_t v = ava_fb_u32(p + 4);
  if (v != 1 && v != 2)
    return AVA_FATBIN_E_BAD_VERSION;
  uint64_t a = ava_fb_u64(p + 8);
  if (a == 0)
    return AVA_FATBIN_E_BAD_BOUNDS;
  if (version != NULL)
    *version = v;
  *addr = a;
  return AVA_FATBIN_OK;
}

int ava_fatbin_wrapper(const void *wrapper, size_t avail, const void **fatbin, size_t *fatbin_len) {
  if (fatbin == NULL || fatbin_len == NULL)
    return AVA_FATBIN_E_INVALID;
  uint64_t addr = 0;
  int rc = ava_fatbin_wrapper_addr(wrapper, avail, NULL, &addr);
  if (rc != AVA_FATBIN_OK)
    return rc;
  if (addr > UINTPTR_MAX)
    return AVA_FATBIN_E_BAD_BOUNDS;
  const void *data = (const void *)(uintptr_t)addr;
  /* In a live process the container's extent is only known from its own header. */
  size_t len = 0;
  rc = ava_fatbin_total_len(data, SIZE_MAX, &len);
  if (rc != AVA_FATBIN_OK)
    return rc;
  *fatbin = data;
  *fatbin_len = len;
  return AVA_FATBIN_OK;
}

int ava_fatbin_iter_init(struct ava_fatbin_iter *it, const void *data, size_t len) {
  if (it == NULL || data == NULL)
    return AVA_FATBIN_E_INVALID;
  size_t total = 0;
  int rc = ava_fatbin_total_len(data, len, &total);
  if (rc != AVA_FATBIN_OK)
    return rc;
  it->base = data;
  it->len = total;
  it->pos = ava_fb_u16(it->base + 6);
  return AVA_FATBIN_OK;
}

static int decode_entry(const uint8_t *e, size_t avail, struct ava_fatbin_entry *out,
                        size_t *advance) {
  if (avail < AVA_FATBIN_ENTRY_MIN_SIZE)
    return AVA_FATBIN_E_TRUNCATED;
  uint32_t hsize = ava_fb_u32(e + 4);
  uint64_t padded = ava_fb_u64(e + 8);
  if (hsize < AVA_FATBIN_ENTRY_MIN_SIZE)
    return AVA_FATBIN_E_BAD_BOUNDS;
  if (hsize > avail)
    return AVA_FATBIN_E_TRUNCATED;
  if (!ava_fb_in_bounds(hsize, padded, avail))
    return AVA_FATBIN_E_BAD_BOUNDS;

  memset(out, 0, sizeof *out);
  out->kind = ava_fb_u16(e);
  out->version = ava_fb_u16(e + 2);
  out->code_minor = ava_fb_u16(e + 24);
  out->code_major = ava_fb_u16(e + 26);
  out->arch = ava_fb_u32(e + 28);
  out->flags = ava_fb_u64(e + 40);
  out->header = e;
  out->header_size = hsize;
  out->payload = e + hsize;

  uint32_t id_off = ava_fb_u32(e + 32);
  uint32_t id_len = ava_fb_u32(e + 36);
  if (id_len != 0) {
    if (!ava_fb_in_bounds(id_off, id_len, (uint64_t)hsize + padded))
      return AVA_FATBIN_E_BAD_BOUNDS;
    out->identifier = (const char *)e + id_off;
    out->identifier_len = id_len;
  }

  uint64_t comp_flags = out->flags & (AVA_FATBIN_FLAG_LZ4 | AVA_FATBIN_FLAG_ZSTD);
  if (comp_flags == 0) {
    out->compression = AVA_FATBIN_COMPRESSION_NONE;
    out->payload_size = (size_t)padded;
    out->uncompressed_size = padded;
  } else {
    if (comp_flags == (AVA_FATBIN_FLAG_LZ4 | AVA_FATBIN_FLAG_ZSTD))
      return AVA_FATBIN_E_UNKNOWN_COMPRESSION;
    out->compression = comp_flags == AVA_FATBIN_FLAG_LZ4 ? AVA_FATBIN_COMPRESSION_LZ4
                                                         : AVA_FATBIN_COMPRESSION_ZSTD;
    uint32_t csize = ava_fb_u32(e + 16);
    if (csize > padded)
      return AVA_FATBIN_E_BAD_BOUNDS;
    out->payload_size = csize;
    out->uncompressed_size = ava_fb_u64(e + 56);
  }
  *advance = (size_t)hsize + (size_t)padded;
  return AVA_FATBIN_OK;
}

int ava_fatbin_next(struct ava_fatbin_iter *it, struct ava_fatbin_entry *entry) {
  if (it == NULL || entry == NULL || it->base == NULL)
    return AVA_FATBIN_E_INVALID;
  if (it->pos >= it->len)
    return 0;
  size_t advance = 0;
  int rc = decode_entry(it->base + it->pos, it->len - it->pos, entry, &advance);
  if (rc != AVA_FATBIN_OK) {
    /* A later call must not read past the bad entry. */
    it->pos = it->len;
    return rc;
  }
  it->pos += advance;
  return 1;
}

int ava_fatbin_entries(const void *data, size_t len, struct ava_fatbin_entry *out, size_t cap,
                       size_t *count) {
  if (count == NULL || (out == NULL && cap != 0))
    return AVA_FATBIN_E_INVALID;
  struct ava_fatbin_iter it;
  int rc = ava_fatbin_iter_init(&it, data, len);
  if (rc != AVA_FATBIN_OK)
    return rc;
  size_t n = 0;
  struct ava_fatbin_entry entry;
  while ((rc = ava_fatbin_next(&it, &entry)) == 1) {
    if (n == cap)
      return AVA_FATBIN_E_TOO_MANY;
    out[n++] = entry;
  }
  if (rc < 0)
    return rc;
  *count = n;
  return AVA_FATBIN_OK;
}

int ava_fatbin_have_zstd(void) {
#ifdef AVA_HAVE_ZSTD
  return 1;
#else
  return 0;
#endif
}

static int zstd_decompress(const void *src, size_t src_len, void *dst, size_t dst_cap,
                           size_t *out_len) {
#ifdef AVA_HAVE_ZSTD
  /* libzstd bounds every write by dst_cap and rejects malformed frames. */
  size_t n = ZSTD_decompress(dst, dst_cap, src, src_len);
  if (ZSTD_isError(n)) {
    return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ? AVA_FATBIN_E_OVERFLOW
                                                               : AVA_FATBIN_E_CORRUPT;
  }
  *out_len = n;
  return AVA_FATBIN_OK;
#else
  (void)src, (void)src_len, (void)dst, (void)dst_cap, (void)out_len;
  return AVA_FATBIN_E_UNKNOWN_COMPRESSION;
#endif
}

int ava_lz4_block_decompress(const void *src, size_t src_len, void *dst, size_t dst_cap,
                             size_t *out_len) {
  if (out_len == NULL || (src == NULL && src_len != 0) || (dst == NULL && dst_cap != 0))
    return AVA_FATBIN_E_INVALID;
  /* liblz4 counts in int; no fat binary entry comes near its limit. */
  if (src_len == 0 || src_len > LZ4_MAX_INPUT_SIZE)
    return AVA_FATBIN_E_CORRUPT;
  const int cap = dst_cap > INT_MAX ? INT_MAX : (int)dst_cap;
  /* LZ4_decompress_safe bounds every read and write, whatever the input. */
  const int n = LZ4_decompress_safe(src, dst, (int)src_len, cap);
  if (n >= 0) {
    *out_len = (size_t)n;
    return AVA_FATBIN_OK;
  }
  /*
   * liblz4 does not say why it failed. A stream that still decodes once it
   * has filled all of dst holds more than dst can take: the size claimed
   * for it is a lie (overflow), not a broken stream.
   */
  if (cap > 0 && LZ4_decompress_safe_partial(src, dst, (int)src_len, cap, cap) == cap)
    return AVA_FATBIN_E_OVERFLOW;
  return AVA_FATBIN_E_CORRUPT;
}

int ava_fatbin_decompress(const struct ava_fatbin_entry *entry, void *dst, size_t dst_cap,
                          size_t *out_len) {
  if (entry == NULL || out_len == NULL || (dst == NULL && dst_cap != 0))
    return AVA_FATBIN_E_INVALID;
  if (entry->uncompressed_size > dst_cap)
    return AVA_FATBIN_E_OVERFLOW;
  size_t want = (size_t)entry->uncompressed_size;
  size_t got = 0;
  int rc;
  switch (entry->compression) {
  case AVA_FATBIN_COMPRESSION_NONE:
    if (entry->payload_size != want)
      return AVA_FATBIN_E_CORRUPT;
    if (want != 0)
      memcpy(dst, entry->payload, want);
    got = want;
    rc = AVA_FATBIN_OK;
    break;
  case AVA_FATBIN_COMPRESSION_LZ4:
    rc = ava_lz4_block_decompress(entry->payload, entry->payload_size, dst, want, &got);
    break;
  case AVA_FATBIN_COMPRESSION_ZSTD:
    rc = zstd_decompress(entry->payload, entry->payload_size, dst, want, &got);
    break;
  default:
    return AVA_FATBIN_E_UNKNOWN_COMPRESSION;
  }
  if (rc != AVA_FATBIN_OK)
    return rc;
  /* The header's size is a claim; a stream that ends early is corrupt. */
  if (got != want)
    return AVA_FATBIN_E_CORRUPT;
  *out_len = got;
  return AVA_FATBIN_OK;
}

const char *ava_fatbin_strerror(int code) {
  switch (code) {
  case AVA_FATBIN_OK:
    return "success";
  case AVA_FATBIN_E_TRUNCATED:
    return "input truncated";
  case AVA_FATBIN_E_BAD_MAGIC:
    return "bad magic number";
  case AVA_FATBIN_E_BAD_VERSION:
    return "unsupported version";
  case AVA_FATBIN_E_BAD_BOUNDS:
    return "offset or size out of bounds";
  case AVA_FATBIN_E_UNKNOWN_COMPRESSION:
    return "unsupported compression";
  case AVA_FATBIN_E_NOT_FOUND:
    return "not found";
  case AVA_FATBIN_E_TOO_MANY:
    return "too many items";
  case AVA_FATBIN_E_CORRUPT:
    return "corrupt contents";
  case AVA_FATBIN_E_OVERFLOW:
    return "output exceeds destination";
  case AVA_FATBIN_E_INVALID:
    return "invalid argument";
  default:
    return "unknown error";
  }
}
