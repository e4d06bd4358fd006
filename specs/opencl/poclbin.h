/* SPDX-License-Identifier: MIT */
/*
 * PoCL program binaries ("poclbin"), as PoCL 3.1 writes them (format
 * version 9): the worker checks a guest's binary before PoCL sees it.
 *
 * PoCL unpacks such a binary without bounds checks: it trusts every length
 * in it, copies the file names it holds into a 1024-byte path and writes
 * the files there (a "/../" in a name escapes its cache directory), and
 * reads a 77-byte header whatever the binary's length. A guest could thus
 * make its worker read or write out of bounds, or write files where the
 * worker may. The check accepts exactly the structure PoCL writes:
 *
 *   header   "poclbin\0" u64 device_id  u32 version (9)  u32 num_kernels
 *            u64 flags   u32 root_entries (1)  char build_hash[41]
 *   root     u64 bytes, then files filling exactly those bytes
 *   kernel   u64 struct_size  u64 binaries_size  u32 arginfo_size
 *   (each)   str name  u32 num_args  u32 num_locals  u64 reqd_wg_size[3]
 *            u64 local_sizes[num_locals]  str attributes  u64 has_arg_metadata
 *            num_args x { u32 access  u32 address  u64 type_qualifier
 *                         u32 type  u32 type_size  str name  str type_name }
 *            files filling exactly binaries_size bytes
 *   file     str relative_path  str content
 *   str      u32 length, then that many bytes
 *
 * All integers are little-endian; the binary ends with its last kernel.
 * A path starts with '/', holds only [A-Za-z0-9._-] between single
 * slashes, and has no "." or ".." component.
 */
#ifndef AVA_POCLBIN_H
#define AVA_POCLBIN_H
/* The worker's alone: the spec's kernel-mode code has no use for it. */
#ifndef __KERNEL__

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The bytes PoCL reads of any binary, a poclbin or not, to tell. */
#define AVA_POCLBIN_HEADER_SIZE 77u

/* Nonzero when data starts with the poclbin magic (PoCL then unpacks it). */
int ava_poclbin_is_poclbin(const unsigned char *data, size_t size);

/*
 * 0 when data[0, size) is a poclbin PoCL 3.1 can unpack safely; otherwise
 * -1, with the reason in why (NUL-terminated, at most why_size bytes).
 */
int ava_poclbin_check(const unsigned char *data, size_t size, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif /* __KERNEL__ */
#endif /* AVA_POCLBIN_H */
