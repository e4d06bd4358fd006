/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: ava.ko's checks of the ivshmem layout
 * (kmod/ava_layout_check.h, the same static inline code ava.ko runs),
 * compiled for user space. The input is what a hostile host controls plus
 * what a process hands mmap():
 *
 *   struct ava_dev_hdr (128 bytes)   the device header ava.ko copies at probe
 *   u64 bar_len                      the size of BAR2
 *   then, repeated while bytes last:
 *   struct ava_slot_entry (128)      a slot table entry (its guest line is
 *                                    what an earlier ava.ko left; the host line
 *                                    is the host's)
 *   u64 pgoff, u64 len, u8 policed   an mmap() of that slot
 *
 * For every header the check accepts it asserts what ava.ko relies on
 * afterwards: each slot and its rings and heap inside total_size and BAR2,
 * past the slot table, page aligned, with no sum or product wrapping; what
 * ava.ko adopts from a slot line and when it lets a slot be claimed; and
 * that every mapping it allows stays in the slot (and off a policed claim's
 * command ring). A broken promise traps.
 *
 * Build (the fuzz targets' CMake lives elsewhere): clang -fsanitize=fuzzer,address
 *   -I include -I kmod tests/fuzz/fuzz_ivshmem_header.c; seeds in tests/fuzz/corpus/ivshmem/.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ava_layout_check.h"

#define PAGE 4096ull
#define PROMISE(c)                       \
	do {                             \
		if (!(c))                \
			__builtin_trap(); \
	} while (0)

static void check_slot(const struct ava_dev_hdr *h, uint64_t bar_len, uint32_t i)
{
	struct ava_region_hdr rh;
	uint64_t off = ava_layout_slot_off(h, i);

	PROMISE(off >= AVA_LAYOUT_TABLE_END(h->nslots) && off >= AVA_DEV_ENTRY_OFF(h->nslots));
	PROMISE(off % PAGE == 0);
	PROMISE(off <= h->total_size && h->slot_size <= h->total_size - off);
	PROMISE(h->total_size <= bar_len);

	ava_layout_region_fill(h, &rh, 42);
	PROMISE(rh.magic == AVA_REGION_MAGIC && rh.state == 0 && rh.guest_pid == 42);
	PROMISE(rh.total_size == h->slot_size);
	PROMISE(rh.cmd_off == AVA_REGION_HDR_SIZE && rh.cmd_size >= AVA_RING_MIN_SIZE);
	PROMISE(rh.reply_off == rh.cmd_off + rh.cmd_size && rh.reply_size >= AVA_RING_MIN_SIZE);
	PROMISE(rh.heap_off == rh.reply_off + rh.reply_size);
	PROMISE(rh.heap_off <= rh.total_size && rh.heap_size <= rh.total_size - rh.heap_off);
	PROMISE(rh.cmd_off % PAGE == 0 && rh.reply_off % PAGE == 0 && rh.heap_off % PAGE == 0);
	/* ring indices wrap with a mask: both sizes are powers of two */
	PROMISE(!(rh.cmd_size & (rh.cmd_size - 1)) && !(rh.reply_size & (rh.reply_size - 1)));
	/* a record header fits the largest record of either ring */
	PROMISE(AVA_RING_MAX_RECORD(rh.cmd_size) > sizeof(struct ava_ring_rec));
	PROMISE(AVA_RING_MAX_RECORD(rh.reply_size) > sizeof(struct ava_ring_rec));
}

static void check_entry(const struct ava_slot_entry *e)
{
	struct ava_layout_adopted a;

	ava_layout_adopt_entry(e->guest_state, e->guest_gen, e->policy_flags, &a);
	PROMISE(a.guest_state == AVA_SLOT_FREE || a.guest_state == AVA_SLOT_RELEASED);
	PROMISE(!(a.policy_flags & ~(AVA_POLICY_DISABLED | AVA_POLICY_POLICED)));
	PROMISE(a.guest_gen == e->guest_gen);
	PROMISE(a.release == (e->guest_state == AVA_SLOT_CLAIMED));
	PROMISE(a.guest_state == AVA_SLOT_FREE || e->guest_state != AVA_SLOT_FREE);
	if (ava_layout_host_allows_claim(e->host_state, e->host_gen, a.guest_gen))
		PROMISE(e->host_state == AVA_SLOT_IDLE && e->host_gen == a.guest_gen);
}

static void check_map(const struct ava_dev_hdr *h, uint64_t pgoff, uint64_t len, int policed)
{
	uint64_t pages = h->slot_size / PAGE;
	uint64_t ring_end = AVA_REGION_HDR_SIZE + h->cmd_size;
	int ret;

	/* the mm hands over whole pages, never zero of them */
	len = (len % (2 * pages + 2) + 1) * PAGE;
	ret = ava_layout_map_check(h, pgoff, len, PAGE, policed);
	PROMISE(ret == 0 || ret == -1 || ret == -2);
	if (pgoff > pages || pgoff * PAGE + len > h->slot_size) {
		PROMISE(ret == -1);
		return;
	}
	/* inside the slot */
	if (policed && pgoff * PAGE < ring_end && pgoff * PAGE + len > AVA_REGION_HDR_SIZE)
		PROMISE(ret == -2);
	else
		PROMISE(ret == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ava_dev_hdr h;
	uint64_t bar_len;
	uint32_t i;

	if (size < sizeof(h) + sizeof(bar_len))
		return 0;
	memcpy(&h, data, sizeof(h));
	memcpy(&bar_len, data + sizeof(h), sizeof(bar_len));
	data += sizeof(h) + sizeof(bar_len);
	size -= sizeof(h) + sizeof(bar_len);
	if (ava_layout_check_hdr(&h, bar_len, PAGE))
		return 0;
	for (i = 0; i < h.nslots; i++)
		check_slot(&h, bar_len, i);
	while (size >= sizeof(struct ava_slot_entry) + 17) {
		struct ava_slot_entry e;
		uint64_t pgoff, len;

		memcpy(&e, data, sizeof(e));
		memcpy(&pgoff, data + sizeof(e), 8);
		memcpy(&len, data + sizeof(e) + 8, 8);
		check_entry(&e);
		check_map(&h, pgoff, len, data[sizeof(e) + 16] & 1);
		data += sizeof(e) + 17;
		size -= sizeof(e) + 17;
	}
	return 0;
}
