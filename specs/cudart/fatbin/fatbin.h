/*
 * CUDA fat binary parsing: the wrapper nvcc emits in .nvFatBinSegment, the
 * fat binary container in .nv_fatbin, its (optionally compressed) entries,
 * kernel parameter layouts from cubin .nv.info.<kernel> sections and from
 * PTX .entry signatures.
 *
 * Everything parsed here comes from an untrusted program or guest: every
 * function reads only inside the [data, data + len) range it is given and
 * reports malformed input as a negative AVA_FATBIN_E_* code.
 *
 * Layouts, learned from CUDA 13.0 nvcc output on this host and checked
 * against public notes (Cricket's fatbin-decompress.h, nvopen-tools'
 * fatbin/FORMAT_SPECIFICATION.md); all integers little-endian.
 *
 *   Wrapper (.nvFatBinSegment, 24 bytes, one per translation unit)
 *   +0  u32 magic 0x466243b1
 *   +4  u32 version (1; 2 for the relocatable-device-code link stub)
 *   +8  u64 pointer to the fat binary container
 *   +16 u64 pointer (v2: list of prelinked fat binaries; v1: unused)
 *
 *   Container (.nv_fatbin; several may be concatenated in one section)
 *   +0  u32 magic 0xBA55ED50
 *   +4  u16 version (1)
 *   +6  u16 header size (16): the first entry starts here
 *   +8  u64 size of all entries after the header
 *   then entries back to back, no terminator:
 *
 *   Entry header (64 bytes; 80 for PTX since CUDA 12.8, 112 for sm_100+)
 *   +0  u16 kind (1 PTX, 2 ELF cubin)
 *   +2  u16 entry version (0x0101)
 *   +4  u32 entry header size: payload starts at entry + this
 *   +8  u64 payload size, padded to 8: next entry at entry + hsize + this
 *   +16 u32 compressed size (0 when not compressed)
 *   +20 u32 offset of an options block inside the header (PTX) or 0
 *   +24 u16 code version minor, +26 u16 major
 *   +28 u32 arch (sm_80 -> 80)
 *   +32 u32 identifier offset (from entry start), +36 u32 identifier length
 *   +40 u64 flags: 0x1 64-bit, 0x2 debug, 0x10 linux,
 *               0x2000 LZ4 compressed, 0x8000 zstd compressed
 *   +48 u64 reserved
 *   +56 u64 uncompressed size (0 when not compressed)
 *
 *   Compression (CUDA 13 nvcc/fatbinary): by default PTX and debug images
 *   are compressed, cubins not; -Xfatbin -compress-all compresses every
 *   entry. --compress-mode=default|size|balance yield zstd frames (flag
 *   0x8000), --compress-mode=speed a raw LZ4 block (flag 0x2000).
 *   -Xfatbin -compress=false stores everything raw.
 *
 *   .nv.info.<kernel> (cubin ELF64 section): records, 4-byte aligned:
 *   +0 u8 format: 1 no value, 2 byte value, 3 u16 value (all 4 bytes long),
 *                 4 sized: +2 u16 size, then size bytes of payload
 *   +1 u8 attribute
 *   EIATTR_PARAM_CBANK      0x0a sized: u32 sym, u16 offset, u16 size
 *   EIATTR_KPARAM_INFO      0x17 sized: u32 index, u16 ordinal, u16 offset,
 *                                 u32 flags, parameter size = flags >> 18
 *   EIATTR_CBANK_PARAM_SIZE 0x19 u16 value: parameter buffer size
 */
#ifndef AVA_CUDART_FATBIN_H
#define AVA_CUDART_FATBIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AVA_FATBIN_WRAPPER_MAGIC 0x466243b1u
#define AVA_FATBIN_MAGIC 0xba55ed50u
#define AVA_FATBIN_WRAPPER_SIZE 24u
#define AVA_FATBIN_HEADER_SIZE 16u
#define AVA_FATBIN_ENTRY_MIN_SIZE 64u

enum {
  AVA_FATBIN_OK = 0,
  AVA_FATBIN_E_TRUNCATED = -1,           /* input ends inside a structure */
  AVA_FATBIN_E_BAD_MAGIC = -2,           /* wrong magic number */
  AVA_FATBIN_E_BAD_VERSION = -3,         /* unknown structure version */
  AVA_FATBIN_E_BAD_BOUNDS = -4,          /* offset/size points outside its container */
  AVA_FATBIN_E_UNKNOWN_COMPRESSION = -5, /* compression this build cannot decode */
  AVA_FATBIN_E_NOT_FOUND = -6,           /* kernel/section not present */
  AVA_FATBIN_E_TOO_MANY = -7,            /* more items than the caller's array or our limits */
  AVA_FATBIN_E_CORRUPT = -8,  /* inconsistent contents (bad compressed stream, bad ELF) */
  AVA_FATBIN_E_OVERFLOW = -9, /* output would exceed the destination */
  AVA_FATBIN_E_INVALID = -10, /* NULL or otherwise unusable argument */
};

enum ava_fatbin_kind {
  AVA_FATBIN_KIND_PTX = 1,
  AVA_FATBIN_KIND_ELF = 2,
};

#define AVA_FATBIN_FLAG_64BIT 0x1ull
#define AVA_FATBIN_FLAG_DEBUG 0x2ull
#define AVA_FATBIN_FLAG_LINUX 0x10ull
#define AVA_FATBIN_FLAG_LZ4 0x2000ull
#define AVA_FATBIN_FLAG_ZSTD 0x8000ull

enum ava_fatbin_compression {
  AVA_FATBIN_COMPRESSION_NONE = 0,
  AVA_FATBIN_COMPRESSION_LZ4 = 1,
  AVA_FATBIN_COMPRESSION_ZSTD = 2,
};

/* One entry; pointers point into the container given to the iterator. */
struct ava_fatbin_entry {
  uint16_t kind; /* enum ava_fatbin_kind, other values passed through */
  uint16_t version;
  uint32_t arch; /* 80 for sm_80 / compute_80 */
  uint16_t code_major;
  uint16_t code_minor;
  uint64_t flags;
  enum ava_fatbin_compression compression;
  const uint8_t *header;
  size_t header_size;
  const uint8_t *payload; /* stored bytes (compressed if compressed), no padding */
  size_t payload_size;
  uint64_t uncompressed_size; /* == payload_size when not compressed */
  const char *identifier;     /* not NUL-terminated; NULL when absent */
  size_t identifier_len;
};

struct ava_fatbin_iter {
  const uint8_t *base;
  size_t len; /* container length, header included */
  size_t pos;
};

/*
 * Reads the wrapper at `wrapper` (at most `avail` bytes, SIZE_MAX if
 * unknown) and returns the fat binary it points to. The length comes from
 * the container header, so it is only as trustworthy as the program.
 */
int ava_fatbin_wrapper(const void *wrapper, size_t avail, const void **fatbin, size_t *fatbin_len);

/*
 * Checks the wrapper's magic and version and returns the container address
 * it holds, without dereferencing it (for wrappers read from a file, where
 * the address must first be mapped to a file offset).
 */
int ava_fatbin_wrapper_addr(const void *wrapper, size_t avail, uint32_t *version, uint64_t *addr);

/* Length of the container at `data` (header + entries), checked against avail. */
int ava_fatbin_total_len(const void *data, size_t avail, size_t *total);

/* Validates the container header; iteration stays inside `len` bytes. */
int ava_fatbin_iter_init(struct ava_fatbin_iter *it, const void *data, size_t len);

/* 1 and *entry filled, 0 at the end, negative AVA_FATBIN_E_* on bad input. */
int ava_fatbin_next(struct ava_fatbin_iter *it, struct ava_fatbin_entry *entry);

/* All entries of one container into out[0..cap); E_TOO_MANY if more. */
int ava_fatbin_entries(const void *data, size_t len, struct ava_fatbin_entry *out, size_t cap,
                       size_t *count);

/*
 * Writes the entry's uncompressed contents to dst (copies when not
 * compressed). The output must be exactly entry->uncompressed_size bytes.
 */
int ava_fatbin_decompress(const struct ava_fatbin_entry *entry, void *dst, size_t dst_cap,
                          size_t *out_len);

/*
 * Raw LZ4 block format (no frame), as fatbinary --compress-mode=speed writes,
 * decoded by liblz4: E_OVERFLOW when the block holds more than dst_cap,
 * E_CORRUPT when it is malformed (liblz4 holds blocks to the format's
 * end-of-block rules: the last 5 bytes are literals, no match starts in the
 * last 12).
 */
int ava_lz4_block_decompress(const void *src, size_t src_len, void *dst, size_t dst_cap,
                             size_t *out_len);

/* 1 if this build can decode zstd entries. */
int ava_fatbin_have_zstd(void);

#define AVA_KERNEL_MAX_PARAMS 1024u

struct ava_kernel_params {
  uint32_t count;
  uint32_t total; /* bytes of the parameter buffer */
  uint32_t sizes[AVA_KERNEL_MAX_PARAMS];
  uint32_t offsets[AVA_KERNEL_MAX_PARAMS];
};

/* Parameter layout of `kernel_name` (mangled) from a cubin's .nv.info.<name>. */
int ava_cubin_kernel_params(const void *elf, size_t len, const char *kernel_name,
                            struct ava_kernel_params *out);

/* Parameter layout of `kernel_name` from a PTX module's .entry signature. */
int ava_ptx_kernel_params(const char *ptx, size_t len, const char *kernel_name,
                          struct ava_kernel_params *out);

/* Short English text for an AVA_FATBIN_E_* code. */
const char *ava_fatbin_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif
