/* SPDX-License-Identifier: MIT */
/*
 * ava shared-memory region: the layout shared by a guest and a worker, used by
 * the local `shm` channel (a memfd passed over a unix socket) and by each slot
 * of ava.ko's ivshmem region (guest kernel <-> host). Both sides map the same
 * bytes; neither trusts what the other writes.
 *
 *   0                      4096                                      size
 *   +----------------------+-----------------+-----------------+------+
 *   | ava_region_hdr        | command ring    | reply ring      | heap |
 *   | (4 KiB, 1 page)       | data (cmd_size) | data            |      |
 *   |  .cmd, .reply: ctl    |                 | (reply_size)    |      |
 *   +----------------------+-----------------+-----------------+------+
 *
 * Each ring is a single-producer single-consumer byte ring of records. Its
 * control block (struct ava_ring_ctl) lives in the region header, its data
 * at cmd_off / reply_off:
 *
 *   ctl:   | head, sleeping (producer line) | tail, c_sleeping (consumer line) |
 *   data:  +--------+-------+-----+--------+-------+-----+---------+---------+
 *          | rec hdr| bytes | pad | rec hdr| bytes | pad | ...     | PAD rec |
 *          +--------+-------+-----+--------+-------+-----+---------+---------+
 *   record at data[tail % size]: ava_ring_rec { length, kind } + bytes,
 *   padded to 8; a record never wraps: when it does not fit before the end,
 *   the producer writes an AVA_REC_PAD record that fills the rest exactly.
 *   A record (header + padded bytes) is at most size / 2
 *   (AVA_RING_MAX_RECORD), so a PAD plus the record after it always fit an
 *   empty ring.
 *
 * head and tail are free-running byte counters (u64, never wrap in
 * practice), always multiples of 8, and both zero when the region is handed
 * over. The producer owns head, the consumer owns tail; each keeps its own
 * copy and never reloads it from shared memory. The consumer reads head once
 * per check into a local, checks head - tail <= size and that head never
 * goes backwards, and checks every record's length against what is left
 * (and kind, and size / 2); the producer checks the tail it reads the same
 * way. Any violation marks the region broken (AVA_REGION_BROKEN) instead of
 * being followed, and both sides then fail every operation.
 *
 * One message (include/ava/wire.h) travels as one AVA_REC_MSG record whose
 * bytes are exactly the message, or, when larger than a record may be, as
 * AVA_REC_MSG_PART records followed by one AVA_REC_MSG_END record carrying
 * consecutive pieces: the first piece starts with the message header (at
 * least 64 bytes), the pieces add up to exactly its total_len, and only PAD
 * records may come between them. The receiver reassembles.
 *
 * The heap is memory for zero-copy buffers: struct ava_buf_desc with flag
 * AVA_BUF_HEAP gives an offset into it instead of into the payload. The
 * guest allocates there; the worker only reads and writes inside [0,
 * heap_size) after checking bounds.
 *
 * The creator (guest) fills in the header, then sets AVA_REGION_READY with a
 * release store. The attaching side (worker) copies the header once, checks
 * the copy completely (magic, version, known features, sizes powers of two
 * within [AVA_RING_MIN_SIZE, AVA_RING_MAX_SIZE], offsets multiples of
 * AVA_REGION_ALIGN at or after the header, every area inside total_size,
 * areas disjoint, reserved bytes zero, indices zero) and uses only that copy
 * of the layout from then on. A local memfd must also be sealed against
 * shrinking (F_SEAL_SHRINK), so that no access inside total_size can fault.
 *
 * Waiting: a consumer spins briefly, then sets its `c_sleeping` word to 1,
 * issues a full barrier, checks head again and only then waits (futex on a
 * local memfd; interrupt/doorbell for ivshmem). A producer, after its
 * release store of head, issues a full barrier and reads `c_sleeping`; when
 * it is 1 it stores 0 and wakes the consumer. A producer waiting for space
 * does the same with `sleeping` and tail. A sleeper stores 0 itself when it
 * wakes, and bounds every wait so that a dead peer is noticed.
 */
#ifndef AVA_RING_H
#define AVA_RING_H

#include "ava/wire.h"

#define AVA_REGION_MAGIC 0x4e474941u /* "AIGN" */
#define AVA_REGION_VERSION 1u
#define AVA_REGION_HDR_SIZE 4096u
#define AVA_REGION_ALIGN 4096u /* offsets of rings and heap are multiples of this */
#define AVA_CACHELINE 64u

/* Bounds of cmd_size and reply_size (both powers of two). */
#define AVA_RING_MIN_SIZE 4096ull
#define AVA_RING_MAX_SIZE (1ull << 30)
/* Largest record (header + padded bytes) in a ring of size bytes. */
#define AVA_RING_MAX_RECORD(size) (((ava_u64)(size)) / 2u)

/* ava_region_hdr.state bits */
#define AVA_REGION_READY 0x1u    /* set by the creator once initialised */
#define AVA_REGION_ATTACHED 0x2u /* set by the worker once it mapped the region */
#define AVA_REGION_BROKEN 0x4u   /* either side saw a corrupt ring */
#define AVA_REGION_CLOSED 0x8u   /* either side closed in an orderly way */

/* ava_region_hdr.features */
#define AVA_REGION_F_FUTEX 0x1u    /* sleeping sides wait on futexes (local memfd) */
#define AVA_REGION_F_DOORBELL 0x2u /* sleeping sides wait for a doorbell (ivshmem) */

/* ava_ring_rec.kind */
#define AVA_REC_PAD 1u      /* skip to the end of the ring */
#define AVA_REC_MSG 2u      /* one whole message */
#define AVA_REC_MSG_PART 3u /* a piece of a message (first piece starts with its header) */
#define AVA_REC_MSG_END 4u  /* the last piece of a message */

/* Producer-written and consumer-written words live on separate cache lines. */
struct ava_ring_ctl {
	ava_u64 head;       /* producer: bytes published so far */
	ava_u32 sleeping;   /* producer: 1 while it waits for space (futex word) */
	ava_u32 pad0;
	ava_u8 pad1[AVA_CACHELINE - 16];
	ava_u64 tail;       /* consumer: bytes consumed so far */
	ava_u32 c_sleeping; /* consumer: 1 while it waits for data (futex word) */
	ava_u32 pad2;
	ava_u8 pad3[AVA_CACHELINE - 16];
};
AVA_STATIC_ASSERT(sizeof(struct ava_ring_ctl) == 2 * AVA_CACHELINE, "ava_ring_ctl size");
AVA_STATIC_ASSERT(offsetof(struct ava_ring_ctl, tail) == AVA_CACHELINE, "ava_ring_ctl.tail");

struct ava_ring_rec {
	ava_u32 length; /* bytes after this header, before padding */
	ava_u32 kind;
};
AVA_STATIC_ASSERT(sizeof(struct ava_ring_rec) == 8, "ava_ring_rec size");

/*
 *   0  magic  4 version  8 features  12 state
 *  16 total_size (u64)   24 cmd_off   32 cmd_size   40 reply_off
 *  48 reply_size         56 heap_off  64 heap_size  72 guest_pid
 *  80 worker_pid         88 reserved up to 128; cmd ctl at 128, reply ctl at 256
 */
struct ava_region_hdr {
	ava_u32 magic;
	ava_u32 version;
	ava_u32 features;
	ava_u32 state; /* AVA_REGION_* bits, set with atomic OR */
	ava_u64 total_size;
	ava_u64 cmd_off;    /* data of the command ring (guest -> worker) */
	ava_u64 cmd_size;   /* power of two, >= 4096 */
	ava_u64 reply_off;  /* data of the reply ring (worker -> guest) */
	ava_u64 reply_size; /* power of two, >= 4096 */
	ava_u64 heap_off;
	ava_u64 heap_size;
	ava_u64 guest_pid;
	ava_u64 worker_pid;
	ava_u8 reserved[40]; /* zero */
	struct ava_ring_ctl cmd;
	struct ava_ring_ctl reply;
};
AVA_STATIC_ASSERT(offsetof(struct ava_region_hdr, cmd) == 128, "ava_region_hdr.cmd");
AVA_STATIC_ASSERT(offsetof(struct ava_region_hdr, reply) == 256, "ava_region_hdr.reply");
AVA_STATIC_ASSERT(sizeof(struct ava_region_hdr) <= AVA_REGION_HDR_SIZE, "ava_region_hdr fits a page");

#define AVA_REC_ALIGN(n) ((((ava_u64)(n)) + 7u) & ~(ava_u64)7u)

#endif /* AVA_RING_H */
