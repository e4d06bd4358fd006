/* SPDX-License-Identifier: MIT */
/*
 * <stdlib.h> for kernel builds (see README.md): the allocation functions,
 * so that spec code written for user space (utility code, code around
 * calls) compiles unchanged into a kernel module.
 *
 * They sleep (GFP_KERNEL): process context only, as every kernel-mode stub.
 * Memory comes from kvmalloc (kmalloc, falling back to vmalloc for large
 * sizes) behind a small header that remembers the size, which realloc needs
 * and the kernel's kvrealloc takes as an argument. Sizes above INT_MAX fail
 * with NULL, as kvmalloc would after a warning: a size from the host or a
 * caller must not splat the kernel log.
 */
#ifndef AVA_KCOMPAT_STDLIB_H
#define AVA_KCOMPAT_STDLIB_H

#ifndef __KERNEL__
#error "ava/kcompat is for kernel builds only"
#endif

#include <linux/limits.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>

/* Keeps the memory after it aligned as kmalloc's own (8 bytes on x86-64 and more). */
struct ava_kcompat_alloc_head {
	size_t size;
	size_t pad;
};

static inline void *ava_kcompat_alloc(size_t size, gfp_t gfp)
{
	struct ava_kcompat_alloc_head *h;

	if (size > INT_MAX - sizeof(*h))
		return NULL;
	h = kvmalloc(sizeof(*h) + size, gfp);
	if (h == NULL)
		return NULL;
	h->size = size;
	return h + 1;
}

static inline void *malloc(size_t size)
{
	return ava_kcompat_alloc(size, GFP_KERNEL);
}

static inline void *calloc(size_t count, size_t size)
{
	size_t bytes;

	if (check_mul_overflow(count, size, &bytes))
		return NULL;
	return ava_kcompat_alloc(bytes, GFP_KERNEL | __GFP_ZERO);
}

static inline void free(void *ptr)
{
	if (ptr != NULL)
		kvfree((struct ava_kcompat_alloc_head *)ptr - 1);
}

static inline void *realloc(void *ptr, size_t size)
{
	void *grown;

	if (ptr == NULL)
		return malloc(size);
	grown = malloc(size);
	if (grown == NULL)
		return NULL; /* ptr stays valid, as in C */
	memcpy(grown, ptr, min(size, ((struct ava_kcompat_alloc_head *)ptr - 1)->size));
	free(ptr);
	return grown;
}

#endif /* AVA_KCOMPAT_STDLIB_H */
