/* Unaligned little-endian loads shared by the fat binary parsers. */
#ifndef AVA_CUDART_FATBIN_BYTES_H
#define AVA_CUDART_FATBIN_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Input may sit at any alignment, so loads go through memcpy. */
static inline uint16_t ava_fb_u16(const uint8_t *p) {
  return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t ava_fb_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t ava_fb_u64(const uint8_t *p) {
  return (uint64_t)ava_fb_u32(p) | (uint64_t)ava_fb_u32(p + 4) << 32;
}

/* True when [off, off + size) lies inside a buffer of len bytes, overflow-safe. */
static inline int ava_fb_in_bounds(uint64_t off, uint64_t size, uint64_t len) {
  return off <= len && size <= len - off;
}

#endif
