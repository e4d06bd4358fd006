/* SPDX-License-Identifier: MIT */
/*
 * The worker's check of PoCL program binaries (see poclbin.h for the
 * layout and why). Written here: no library parses this format but PoCL's
 * own unpacker, which is what must not see an unchecked binary.
 */
#include "poclbin.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define POCLBIN_MAGIC "poclbin"   /* and its NUL: 8 bytes */
#define POCLBIN_VERSION 9u        /* what PoCL 3.1 writes and reads */
#define POCLBIN_HASH_SIZE 41u     /* SHA1_digest_t: 40 letters and a NUL */
#define POCLBIN_MAX_KERNELS 4096u /* bounds PoCL's allocations per kernel */
#define POCLBIN_MAX_ARGS 4096u    /* PoCL allocas 8 bytes per argument */
#define POCLBIN_MAX_LOCALS 4096u
#define POCLBIN_MAX_NAME 1024u /* kernel, argument and type names */
#define POCLBIN_MAX_PATH 255u  /* PoCL appends it to its cache dir in 1024 bytes */

struct reader {
	const unsigned char *p;
	size_t left;
	char *why;
	size_t why_size;
	size_t start_left; /* for offsets in messages */
};

static int fail(struct reader *r, const char *fmt, ...)
{
	if (r->why != NULL && r->why_size > 0) {
		int n = snprintf(r->why, r->why_size, "offset %zu: ", r->start_left - r->left);
		va_list ap;
		va_start(ap, fmt);
		if (n >= 0 && (size_t)n < r->why_size)
			vsnprintf(r->why + n, r->why_size - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int skip(struct reader *r, size_t n, const char *what)
{
	if (n > r->left)
		return fail(r, "%s needs %zu bytes, %zu left", what, n, r->left);
	r->p += n;
	r->left -= n;
	return 0;
}

static int read_u32(struct reader *r, uint32_t *v, const char *what)
{
	if (r->left < 4)
		return fail(r, "%s: the binary ends", what);
	*v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
	     (uint32_t)r->p[3] << 24;
	return skip(r, 4, what);
}

static int read_u64(struct reader *r, uint64_t *v, const char *what)
{
	uint32_t lo, hi;
	if (read_u32(r, &lo, what) || read_u32(r, &hi, what))
		return -1;
	*v = (uint64_t)hi << 32 | lo;
	return 0;
}

/* A str: its length (at most max) and bytes; *s points at them. */
static int read_str(struct reader *r, uint32_t max, const unsigned char **s, uint32_t *len,
		    const char *what)
{
	if (read_u32(r, len, what))
		return -1;
	if (*len > max)
		return fail(r, "%s of %u bytes (at most %u)", what, *len, max);
	*s = r->p;
	return skip(r, *len, what);
}

static int is_name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

/* "/a/b.c": components of name characters, none "." or "..". */
static int check_path(struct reader *r, const unsigned char *s, uint32_t len)
{
	if (len == 0 || s[0] != '/')
		return fail(r, "a file name that does not start with '/'");
	uint32_t i = 0;
	while (i < len) {
		uint32_t start = ++i; /* past the '/' */
		while (i < len && s[i] != '/') {
			if (!is_name_char(s[i]))
				return fail(r, "a file name with byte 0x%02x", s[i]);
			++i;
		}
		const uint32_t n = i - start;
		if (n == 0)
			return fail(r, "a file name with an empty component");
		if ((n == 1 && s[start] == '.') || (n == 2 && s[start] == '.' && s[start + 1] == '.'))
			return fail(r, "a file name with a '.' or '..' component");
	}
	return 0;
}

/* Files filling exactly `bytes` bytes. */
static int check_files(struct reader *r, uint64_t bytes, const char *what)
{
	if (bytes > r->left)
		return fail(r, "%s of %llu bytes, %zu left", what, (unsigned long long)bytes,
			    r->left);
	const size_t end_left = r->left - (size_t)bytes;
	while (r->left > end_left) {
		const unsigned char *s;
		uint32_t len;
		if (read_str(r, POCLBIN_MAX_PATH, &s, &len, "a file name") || check_path(r, s, len) ||
		    read_str(r, UINT32_MAX, &s, &len, "a file's content"))
			return -1;
		if (r->left < end_left)
			return fail(r, "a file runs past the end of %s", what);
	}
	return 0;
}

static int check_header(struct reader *r, uint32_t *kernels)
{
	if (r->left < AVA_POCLBIN_HEADER_SIZE)
		return fail(r, "%zu bytes, shorter than the %u-byte header", r->left,
			    AVA_POCLBIN_HEADER_SIZE);
	if (memcmp(r->p, POCLBIN_MAGIC, 8) != 0)
		return fail(r, "no poclbin magic");
	uint64_t device_id, flags;
	uint32_t version, roots;
	if (skip(r, 8, "magic") || read_u64(r, &device_id, "device id") ||
	    read_u32(r, &version, "version") || read_u32(r, kernels, "kernel count") ||
	    read_u64(r, &flags, "flags") || read_u32(r, &roots, "root entries"))
		return -1;
	(void)device_id; /* PoCL compares it with its device's and skips the binary if unequal */
	(void)flags;
	if (version != POCLBIN_VERSION)
		return fail(r, "format version %u (this worker checks version %u, PoCL 3.1's)",
			    version, POCLBIN_VERSION);
	if (*kernels == 0 || *kernels > POCLBIN_MAX_KERNELS)
		return fail(r, "%u kernels (1 to %u)", *kernels, POCLBIN_MAX_KERNELS);
	if (roots != 1) /* PoCL asserts its CPU devices' one entry, program.bc */
		return fail(r, "%u root entries (PoCL's CPU devices write 1)", roots);
	/* The hash names the cache directory: letters A-P with a '/' after two. */
	const unsigned char *h = r->p;
	for (uint32_t i = 0; i + 1 < POCLBIN_HASH_SIZE; ++i)
		if (i == 2 ? h[i] != '/' : (h[i] < 'A' || h[i] > 'P'))
			return fail(r, "a build hash with byte 0x%02x at %u", h[i], i);
	if (h[POCLBIN_HASH_SIZE - 1] != '\0')
		return fail(r, "a build hash without its NUL");
	return skip(r, POCLBIN_HASH_SIZE, "build hash");
}

static int check_kernel(struct reader *r)
{
	const size_t start_left = r->left;
	uint64_t struct_size, binaries_size, u64;
	uint32_t arginfo_size, num_args, num_locals, u32, len;
	const unsigned char *s;
	if (read_u64(r, &struct_size, "kernel size") ||
	    read_u64(r, &binaries_size, "kernel files size") ||
	    read_u32(r, &arginfo_size, "argument info size") ||
	    read_str(r, POCLBIN_MAX_NAME, &s, &len, "a kernel name"))
		return -1;
	if (len == 0)
		return fail(r, "a kernel without a name");
	for (uint32_t i = 0; i < len; ++i)
		if (!is_name_char(s[i]) || s[i] == '.' || s[i] == '-')
			return fail(r, "a kernel name with byte 0x%02x", s[i]);
	if (read_u32(r, &num_args, "argument count") || read_u32(r, &num_locals, "local count"))
		return -1;
	if (num_args > POCLBIN_MAX_ARGS || num_locals > POCLBIN_MAX_LOCALS)
		return fail(r, "%u arguments and %u locals (at most %u and %u)", num_args,
			    num_locals, POCLBIN_MAX_ARGS, POCLBIN_MAX_LOCALS);
	if (skip(r, 3 * 8 + (size_t)num_locals * 8, "work-group sizes and locals") ||
	    read_str(r, UINT32_MAX, &s, &len, "attributes") ||
	    read_u64(r, &u64, "argument metadata flags"))
		return -1;
	const size_t args_left = r->left;
	for (uint32_t i = 0; i < num_args; ++i)
		if (skip(r, 4 + 4 + 8, "argument qualifiers") ||
		    read_u32(r, &u32, "argument type") || read_u32(r, &u32, "argument type size") ||
		    read_str(r, POCLBIN_MAX_NAME, &s, &len, "an argument name") ||
		    read_str(r, POCLBIN_MAX_NAME, &s, &len, "an argument type name"))
			return -1;
	if (args_left - r->left != arginfo_size)
		return fail(r, "argument info of %zu bytes, its size says %u", args_left - r->left,
			    arginfo_size);
	const size_t files_left = r->left;
	if (check_files(r, binaries_size, "a kernel's files"))
		return -1;
	if (files_left - r->left != binaries_size || start_left - r->left != struct_size)
		return fail(r, "a kernel of %zu bytes, its size says %llu", start_left - r->left,
			    (unsigned long long)struct_size);
	return 0;
}

int ava_poclbin_is_poclbin(const unsigned char *data, size_t size)
{
	return data != NULL && size >= 8 && memcmp(data, POCLBIN_MAGIC, 8) == 0;
}

int ava_poclbin_check(const unsigned char *data, size_t size, char *why, size_t why_size)
{
	struct reader r = {data, data != NULL ? size : 0, why, why_size, data != NULL ? size : 0};
	if (why != NULL && why_size > 0)
		why[0] = '\0';
	uint32_t kernels;
	uint64_t root_bytes;
	if (check_header(&r, &kernels) || read_u64(&r, &root_bytes, "root entry size") ||
	    check_files(&r, root_bytes, "the root entry"))
		return -1;
	if (root_bytes == 0) /* PoCL asserts it is not */
		return fail(&r, "an empty root entry");
	for (uint32_t k = 0; k < kernels; ++k)
		if (check_kernel(&r))
			return -1;
	if (r.left != 0)
		return fail(&r, "%zu bytes after the last kernel", r.left);
	return 0;
}
