// SPDX-License-Identifier: GPL-2.0
/*
 * The SPSC byte ring of include/ava/ring.h in kernel C, for ava.ko's kernel
 * connections and the command rings of policed claims (ava_police.c): the
 * same rules as transport/shm_ring.cpp (record layout, PAD, index checks).
 * The host writes the other index and the records it produces: each shared
 * value is read once into a local and checked before it is used; a
 * violation is reported as -EPIPE and the caller marks the region BROKEN.
 */
#include <linux/compiler.h>
#include <linux/string.h>

#include "ava_kcall_priv.h"

#define AVA_KREC_HDR ((u64)sizeof(struct ava_ring_rec))

/*
 * One 8-byte load, so a peer rewriting the header meanwhile cannot make us
 * check one value and use another. Ring data is 8-byte aligned (page
 * offsets, records padded to 8); length is the low half (little-endian).
 */
static void ava_kring_read_rec(const u8 *at, u32 *kind, u32 *length)
{
	u64 word = READ_ONCE(*(const u64 *)at);

	*length = (u32)word;
	*kind = (u32)(word >> 32);
}

static void ava_kring_write_rec(u8 *at, u32 kind, u32 length)
{
	WRITE_ONCE(*(u64 *)at, ((u64)kind << 32) | length);
}

/**
 * ava_kring_init() - describe one ring of a slot
 * @v: the view to fill
 * @ctl: the ring's control block in the region header
 * @data: the ring's data area
 * @size: its size, a power of two from the validated device header
 */
void ava_kring_init(struct ava_kring_view *v, struct ava_ring_ctl *ctl, u8 *data, u64 size)
{
	v->ctl = ctl;
	v->head_word = &ctl->head;
	v->tail_word = &ctl->tail;
	v->data = data;
	v->size = size;
}

/**
 * ava_kring_set_indices() - keep a ring's indices outside its control block
 * @v: a view filled by ava_kring_init()
 * @head_word: the producer's index (8-byte aligned, in memory the peer reads)
 * @tail_word: the consumer's index
 *
 * For a policed claim's command ring: the process may write its region
 * header, so the indices that matter live in the slot table
 * (include/ava/ivshmem.h, "Policed claims"). The sleeping words stay in
 * v->ctl.
 */
void ava_kring_set_indices(struct ava_kring_view *v, u64 *head_word, u64 *tail_word)
{
	v->head_word = head_word;
	v->tail_word = tail_word;
}

/**
 * ava_kcons_next() - look at the next record without consuming it
 * @c: the consumer
 * @rec: filled in when a record is ready
 * @why: set to a description when the ring is corrupt
 *
 * Skips a PAD record (at most one can precede a record: after it the record
 * starts at offset 0, where a PAD would have to fill the whole ring).
 *
 * Return: 1 (ready), 0 (empty) or -EPIPE (corrupt).
 */
int ava_kcons_next(struct ava_kcons *c, struct ava_krec *rec, const char **why)
{
	u64 tail = c->tail;
	int pads;

	for (pads = 0; pads < 2; pads++) {
		/* pairs with the producer's release store of head: the records below it are visible */
		u64 head = smp_load_acquire(c->v.head_word);
		u64 avail, pos, to_end, span;
		u32 kind, length;

		if (head < c->seen_head) {
			*why = "head went backwards";
			return -EPIPE;
		}
		if (head % 8) {
			*why = "head is not a multiple of 8";
			return -EPIPE;
		}
		if (head - tail > c->v.size) {
			*why = "head is more than the ring size ahead of tail";
			return -EPIPE;
		}
		c->seen_head = head;
		avail = head - tail;
		if (!avail) {
			if (tail != c->tail) {
				c->tail = tail;
				/* pairs with the producer's acquire load of tail: it may reuse the PAD */
				smp_store_release(c->v.tail_word, c->tail);
			}
			return 0;
		}
		pos = tail & (c->v.size - 1);
		to_end = c->v.size - pos;
		ava_kring_read_rec(c->v.data + pos, &kind, &length);
		span = AVA_KREC_HDR + AVA_REC_ALIGN(length);
		if (kind == AVA_REC_PAD) {
			if (span != to_end || span > avail) {
				*why = "a PAD record does not fill the rest of the ring";
				return -EPIPE;
			}
			tail += span;
			continue;
		}
		if (kind != AVA_REC_MSG && kind != AVA_REC_MSG_PART && kind != AVA_REC_MSG_END) {
			*why = "a record of unknown kind";
			return -EPIPE;
		}
		if (!length || span > avail || span > to_end ||
		    span > AVA_RING_MAX_RECORD(c->v.size)) {
			*why = "a record does not fit the ring";
			return -EPIPE;
		}
		if (tail != c->tail) {
			c->tail = tail;
			smp_store_release(c->v.tail_word, c->tail);
		}
		rec->kind = kind;
		rec->length = length;
		rec->bytes = c->v.data + pos + AVA_KREC_HDR;
		return 1;
	}
	*why = "two PAD records in a row";
	return -EPIPE;
}

/**
 * ava_kcons_consume() - hand a record's space back to the producer
 * @c: the consumer
 * @rec: the record ava_kcons_next() returned, copied out by now
 */
void ava_kcons_consume(struct ava_kcons *c, const struct ava_krec *rec)
{
	c->tail += AVA_KREC_HDR + AVA_REC_ALIGN(rec->length);
	/* pairs with the producer's acquire load of tail: our copy is complete first */
	smp_store_release(c->v.tail_word, c->tail);
}

/**
 * ava_kprod_refresh() - read the consumer's tail
 * @p: the producer
 * @why: set to a description when the tail is impossible
 *
 * Return: 0 or -EPIPE.
 */
int ava_kprod_refresh(struct ava_kprod *p, const char **why)
{
	/* pairs with the consumer's release store of tail */
	u64 tail = smp_load_acquire(p->v.tail_word);

	if (tail < p->seen_tail) {
		*why = "tail went backwards";
		return -EPIPE;
	}
	if (tail % 8 || tail > p->published) {
		*why = "tail is beyond what was published";
		return -EPIPE;
	}
	p->seen_tail = tail;
	return 0;
}

static u64 ava_kprod_cost(const struct ava_kprod *p, u64 length)
{
	u64 span = AVA_KREC_HDR + AVA_REC_ALIGN(length);
	u64 to_end = p->v.size - (p->head & (p->v.size - 1));

	return span <= to_end ? span : to_end + span;
}

/**
 * ava_kprod_fits() - whether a record of length bytes fits now
 * @p: the producer
 * @length: the record's body, at most ava_kprod_max_piece()
 *
 * Return: true when ava_kprod_append() may be called.
 */
bool ava_kprod_fits(const struct ava_kprod *p, u64 length)
{
	return ava_kprod_cost(p, length) <= p->v.size - (p->head - p->seen_tail);
}

/**
 * ava_kprod_append() - write a record header (and a PAD before it if needed)
 * @p: the producer, with ava_kprod_fits() true for length
 * @kind: AVA_REC_MSG, AVA_REC_MSG_PART or AVA_REC_MSG_END
 * @length: the record's body
 *
 * Return: where the body goes; it is published by ava_kprod_publish().
 */
u8 *ava_kprod_append(struct ava_kprod *p, u32 kind, u32 length)
{
	u64 span = AVA_KREC_HDR + AVA_REC_ALIGN(length);
	u64 pos = p->head & (p->v.size - 1);
	u64 to_end = p->v.size - pos;

	if (span > to_end) {
		ava_kring_write_rec(p->v.data + pos, AVA_REC_PAD, (u32)(to_end - AVA_KREC_HDR));
		p->head += to_end;
		pos = 0;
	}
	ava_kring_write_rec(p->v.data + pos, kind, length);
	p->head += span;
	return p->v.data + pos + AVA_KREC_HDR;
}

/**
 * ava_kprod_publish() - make the appended records visible to the consumer
 * @p: the producer
 */
void ava_kprod_publish(struct ava_kprod *p)
{
	if (p->head == p->published)
		return;
	p->published = p->head;
	/* pairs with the consumer's acquire load of head: the records are complete */
	smp_store_release(p->v.head_word, p->head);
}
