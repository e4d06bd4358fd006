/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * ava.ko's checks of what the host and processes hand it about the ivshmem
 * layout (include/ava/ivshmem.h), as pure functions on copies: the device
 * header, the slot table lines ava.ko adopts at probe, the host line's say
 * on claims, the region header a claim writes, and the page ranges of a
 * slot that mmap() allows. ava.ko reads shared memory once into plain
 * values and passes them here; nothing here touches shared memory, sleeps
 * or logs, so it compiles in user space as well (the fuzz harness
 * tests/fuzz/fuzz_ivshmem_header.c).
 */
#ifndef AVA_LAYOUT_CHECK_H
#define AVA_LAYOUT_CHECK_H

#include "ava/ivshmem.h"

#ifdef __KERNEL__
#include <linux/string.h>
#else
#include <stddef.h>
#include <string.h>
#endif

/* The end of the slot table ava.ko uses: nslots entries, a page each. */
#define AVA_LAYOUT_TABLE_END(nslots) AVA_DEV_TABLE_END(nslots)

static inline int ava_layout_pow2(ava_u64 v)
{
	return v && !(v & (v - 1));
}

static inline int ava_layout_ring_size_ok(ava_u64 size)
{
	return size >= AVA_RING_MIN_SIZE && size <= AVA_RING_MAX_SIZE && ava_layout_pow2(size);
}

/**
 * ava_layout_check_hdr() - check a copy of the device header
 * @h: the copy (the live header may change meanwhile: only the copy is used)
 * @bar_len: bytes of BAR2 (the shared memory the guest sees)
 * @page: the guest's page size (mmap() maps whole pages of a slot)
 *
 * Once it passes, every slot i lies in [slots_off + i * slot_size,
 * + slot_size) inside total_size, which lies inside BAR2, after the slot
 * table; each slot holds its header page, both rings and the heap in that
 * order, all page aligned; the rings are powers of two a record header and
 * half a ring fit; and every product and sum of them fits 64 bits.
 *
 * Return: NULL, or the rule the header breaks.
 */
static inline const char *ava_layout_check_hdr(const struct ava_dev_hdr *h, ava_u64 bar_len,
					       ava_u64 page)
{
	ava_u64 need, slots_len;

	if (h->magic != AVA_DEV_MAGIC)
		return "bad magic: no ava layout in BAR2";
	if (h->version != AVA_DEV_VERSION)
		return "unsupported layout version";
	if (h->features)
		return "unknown features";
	if (h->total_size > bar_len)
		return "total_size exceeds BAR2";
	if (h->nslots < 1 || h->nslots > AVA_DEV_MAX_SLOTS)
		return "nslots not in 1..32";
	if (h->vectors < 1 || h->vectors > 1 + h->nslots)
		return "vectors not in 1..1+nslots";
	if (!ava_layout_pow2(page) || page < AVA_REGION_ALIGN)
		return "the page size is no power of two of at least 4096";
	if (h->slots_off % page || h->slots_off < AVA_LAYOUT_TABLE_END(h->nslots))
		return "slots_off not page aligned after the slot table";
	if (!h->slot_size || h->slot_size % page)
		return "slot_size not a non-zero multiple of the page size";
	if (__builtin_mul_overflow(h->slot_size, (ava_u64)h->nslots, &slots_len) ||
	    __builtin_add_overflow(slots_len, h->slots_off, &need) || need > h->total_size)
		return "the slots do not fit total_size";
	if (!ava_layout_ring_size_ok(h->cmd_size) || !ava_layout_ring_size_ok(h->reply_size))
		return "ring sizes not powers of two in [4096, 1 GiB]";
	/* rings of at least 4096 bytes are page aligned only up to their size */
	if (h->cmd_size % page || h->reply_size % page)
		return "ring sizes not multiples of the page size";
	if (h->heap_size % page)
		return "heap_size not a multiple of the page size";
	/* both rings are at most 1 GiB, so only the heap can overflow the sum */
	if (__builtin_add_overflow(AVA_REGION_HDR_SIZE + h->cmd_size + h->reply_size, h->heap_size,
				   &need) || need > h->slot_size)
		return "4096 + cmd_size + reply_size + heap_size exceeds slot_size";
	if (h->host_peer > 0xffff)
		return "host_peer not below 65536";
	return NULL;
}

/**
 * ava_layout_slot_off() - where a slot's region starts in the shared memory
 * @h: a header that passed ava_layout_check_hdr()
 * @index: slot number below h->nslots
 *
 * Return: its byte offset; the slot ends slot_size later, inside total_size.
 */
static inline ava_u64 ava_layout_slot_off(const struct ava_dev_hdr *h, ava_u32 index)
{
	return h->slots_off + (ava_u64)index * h->slot_size;
}

/* What ava.ko takes over at probe from its own line of a slot table entry. */
struct ava_layout_adopted {
	ava_u32 guest_state;  /* AVA_SLOT_FREE or AVA_SLOT_RELEASED */
	ava_u32 guest_gen;
	ava_u32 policy_flags; /* only the AVA_POLICY_* bits */
	int release;          /* it showed CLAIMED: close the region and ring the host */
};

/**
 * ava_layout_adopt_entry() - read the guest line a previous ava.ko left
 * @guest_state: its guest_state, read once
 * @guest_gen: its guest_gen
 * @policy_flags: its policy_flags
 * @out: what this instance starts from
 *
 * Generations and policy survive a module reload or VM reboot; a slot left
 * CLAIMED is released (the host recycles it), any other state but FREE
 * becomes RELEASED.
 */
static inline void ava_layout_adopt_entry(ava_u32 guest_state, ava_u32 guest_gen,
					  ava_u32 policy_flags, struct ava_layout_adopted *out)
{
	out->guest_gen = guest_gen;
	out->policy_flags = policy_flags & (AVA_POLICY_DISABLED | AVA_POLICY_POLICED);
	out->guest_state = guest_state == AVA_SLOT_FREE ? AVA_SLOT_FREE : AVA_SLOT_RELEASED;
	out->release = guest_state == AVA_SLOT_CLAIMED;
}

/**
 * ava_layout_host_allows_claim() - whether the host line lets a slot be claimed
 * @host_state: the host's host_state (acquire load)
 * @host_gen: the host's host_gen, read after it
 * @guest_gen: ava.ko's own generation of the slot
 *
 * Return: non-zero when the host shows the slot IDLE and has caught up with
 * the last claim (its worker for it is gone).
 */
static inline int ava_layout_host_allows_claim(ava_u32 host_state, ava_u32 host_gen,
					       ava_u32 guest_gen)
{
	return host_state == AVA_SLOT_IDLE && host_gen == guest_gen;
}

/**
 * ava_layout_region_fill() - the region header a claim writes into its slot
 * @h: a header that passed ava_layout_check_hdr()
 * @rh: filled in completely (zeros, then the layout); state stays 0: the
 *      caller publishes AVA_REGION_READY last, with release semantics
 * @pid: the guest pid shown to the worker
 *
 * The layout comes from the checked header copy only.
 */
static inline void ava_layout_region_fill(const struct ava_dev_hdr *h, struct ava_region_hdr *rh,
					  ava_u32 pid)
{
	memset(rh, 0, sizeof(*rh));
	rh->magic = AVA_REGION_MAGIC;
	rh->version = AVA_REGION_VERSION;
	rh->features = AVA_REGION_F_DOORBELL;
	rh->total_size = h->slot_size;
	rh->cmd_off = AVA_REGION_HDR_SIZE;
	rh->cmd_size = h->cmd_size;
	rh->reply_off = AVA_REGION_HDR_SIZE + h->cmd_size;
	rh->reply_size = h->reply_size;
	rh->heap_off = AVA_REGION_HDR_SIZE + h->cmd_size + h->reply_size;
	rh->heap_size = h->heap_size;
	rh->guest_pid = pid;
}

/**
 * ava_layout_map_check() - whether mmap() may map a range of a slot
 * @h: a header that passed ava_layout_check_hdr()
 * @pgoff: the mapping's offset in pages (from user space)
 * @len: its length in bytes, a non-zero multiple of @page (from the mm)
 * @page: the page size
 * @policed: the claim is policed: no byte of its command ring
 *
 * Return: 0, -1 (outside the slot: EINVAL) or -2 (the command ring of a
 * policed claim: EACCES). When 0, [pgoff * page, + len) lies in the slot.
 */
static inline int ava_layout_map_check(const struct ava_dev_hdr *h, ava_u64 pgoff, ava_u64 len,
				       ava_u64 page, int policed)
{
	ava_u64 off;

	/* slot_size is page aligned: bounding pgoff first keeps the product and the sum in range */
	if (pgoff > h->slot_size / page)
		return -1;
	off = pgoff * page;
	if (len > h->slot_size - off)
		return -1;
	if (policed && off < AVA_REGION_HDR_SIZE + h->cmd_size && off + len > AVA_REGION_HDR_SIZE)
		return -2;
	return 0;
}

#endif /* AVA_LAYOUT_CHECK_H */
