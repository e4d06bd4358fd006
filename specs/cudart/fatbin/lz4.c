/*
 * LZ4 block format decoder (no frame), written from the public format
 * description: a sequence is a token (high nibble literal count, low
 * nibble match length - 4, 15 meaning "more bytes follow, each added,
 * until one below 255"), the literals, a 2-byte little-endian back
 * offset and the extra match length bytes. The last sequence has literals
 * only. Every read and write is checked against its buffer.
 */
#include <string.h>

#include "fatbin.h"

/* Reads an extended length; *len must not overflow size_t. */
static int read_ext_len(const uint8_t **ip, const uint8_t *end, size_t *len) {
  for (;;) {
    if (*ip >= end)
      return AVA_FATBIN_E_CORRUPT;
    uint8_t b = *(*ip)++;
    if (*len > SIZE_MAX - b)
      return AVA_FATBIN_E_CORRUPT;
    *len += b;
    if (b != 255)
      return AVA_FATBIN_OK;
  }
}

int ava_lz4_block_decompress(const void *src, size_t src_len, void *dst, size_t dst_cap,
                             size_t *out_len) {
  if (out_len == NULL || (src == NULL && src_len != 0) || (dst == NULL && dst_cap != 0))
    return AVA_FATBIN_E_INVALID;
  /* Before any pointer arithmetic: src may be NULL when src_len is 0. */
  if (src_len == 0)
    return AVA_FATBIN_E_CORRUPT;
  const uint8_t *ip = src;
  const uint8_t *iend = ip + src_len;
  uint8_t *out = dst;
  size_t op = 0;
  for (;;) {
    if (ip >= iend)
      return AVA_FATBIN_E_CORRUPT;
    uint8_t token = *ip++;
    size_t lit = token >> 4;
    if (lit == 15 && read_ext_len(&ip, iend, &lit) != AVA_FATBIN_OK)
      return AVA_FATBIN_E_CORRUPT;
    if (lit > (size_t)(iend - ip))
      return AVA_FATBIN_E_CORRUPT;
    if (lit > dst_cap - op)
      return AVA_FATBIN_E_OVERFLOW;
    if (lit != 0)
      memcpy(out + op, ip, lit);
    ip += lit;
    op += lit;
    if (ip == iend)
      break; /* last sequence: literals only */
    if (iend - ip < 2)
      return AVA_FATBIN_E_CORRUPT;
    size_t offset = (size_t)ip[0] | (size_t)ip[1] << 8;
    ip += 2;
    if (offset == 0 || offset > op)
      return AVA_FATBIN_E_CORRUPT;
    size_t mlen = token & 15u;
    if (mlen == 15 && read_ext_len(&ip, iend, &mlen) != AVA_FATBIN_OK)
      return AVA_FATBIN_E_CORRUPT;
    if (mlen > SIZE_MAX - 4)
      return AVA_FATBIN_E_CORRUPT;
    mlen += 4;
    if (mlen > dst_cap - op)
      return AVA_FATBIN_E_OVERFLOW;
    /* Byte by byte: source and destination overlap when offset < mlen. */
    const uint8_t *from = out + op - offset;
    for (size_t i = 0; i < mlen; i++)
      out[op + i] = from[i];
    op += mlen;
  }
  *out_len = op;
  return AVA_FATBIN_OK;
}
