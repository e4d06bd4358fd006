// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel connection (include/ava/kcall.h), its shared-memory side:
 * sending into the command ring, receiving from the reply ring, waiting, and
 * failing the connection. The threads, open and close are in ava_kopen.c;
 * see ava_kcall_priv.h for the threads and locks.
 *
 * Waits follow ring.h: store 1 in our sleeping word, full barrier, re-check,
 * then sleep on the slot's waitqueue (the slot's interrupt wakes it) or, with
 * no interrupts (ivshmem-plain), poll. Every wait is bounded by a slice so a
 * dead host, a removed device or kthread_stop() is noticed.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "ava_kcall_priv.h"

#define AVA_KCONN_SLICE_MS 50
#define AVA_KCONN_POLL_MIN_US 50
#define AVA_KCONN_POLL_MAX_US 200

static u32 ava_kconn_region_state(struct ava_kconn *conn)
{
	/* pairs with the atomic ORs of state on both sides */
	return smp_load_acquire(&conn->rh->state);
}

static void ava_kconn_wake_host(struct ava_kconn *conn, u32 *word)
{
	/* pairs with the full barrier of the host's sleeper between its 1 and its re-check */
	smp_mb();
	if (!READ_ONCE(*word))
		return;
	WRITE_ONCE(*word, 0);
	atomic64_inc(&conn->slot->kicks);
	ava_dev_ring(conn->dev, AVA_DEV_SLOT_VECTOR(conn->slot->index));
}

/**
 * ava_kconn_fail() - fail the connection: every waiter and every later call
 * @conn: the connection
 * @error: the errno they get (the first one sticks)
 */
void ava_kconn_fail(struct ava_kconn *conn, int error)
{
	struct ava_kwaiter *w, *tmp;

	spin_lock(&conn->lock);
	if (!conn->broken)
		conn->broken = error;
	list_for_each_entry_safe(w, tmp, &conn->pending, node) {
		list_del_init(&w->node);
		w->error = conn->broken;
		complete(&w->done);
	}
	spin_unlock(&conn->lock);
	wake_up_all(&conn->cb_wq);
	if (conn->nl)
		ava_knl_wake(conn);
}

/* A corrupt ring: the region is BROKEN for both sides. Caller holds dev->io. */
static int ava_kconn_break(struct ava_kconn *conn, const char *why)
{
	if (!READ_ONCE(conn->dev->gone)) {
		atomic_or(AVA_REGION_BROKEN, (atomic_t *)&conn->rh->state);
		ava_dev_ring(conn->dev, AVA_DEV_SLOT_VECTOR(conn->slot->index));
	}
	pr_warn_ratelimited("ava: kernel connection for %s on slot %u broken: %s\n",
			    conn->spec->name, conn->slot->index, why);
	ava_kconn_fail(conn, -EPIPE);
	return -EPIPE;
}

/* 0: keep waiting; else why not. Caller holds dev->io. */
static int ava_kconn_stopped(struct ava_kconn *conn)
{
	int broken;

	if (READ_ONCE(conn->dev->gone))
		return -ENODEV;
	spin_lock(&conn->lock);
	broken = conn->broken;
	spin_unlock(&conn->lock);
	if (broken)
		return broken;
	if (ava_kconn_region_state(conn) & AVA_REGION_BROKEN)
		return -EPIPE;
	if (ava_dev_host_state(conn->dev) != AVA_HOST_UP)
		return -EHOSTDOWN;
	return 0;
}

typedef int (*ava_kconn_probe_fn)(struct ava_kconn *conn, void *arg);

/*
 * Waits until probe says ready (> 0) or fails (< 0). reader: the reader
 * kthread (stops on kthread_stop, no deadline unless one is given); else a
 * caller (killable). deadline 0: none. Caller holds dev->io.
 */
static int ava_kconn_wait(struct ava_kconn *conn, u32 *word, ava_kconn_probe_fn probe,
			  void *arg, bool reader, unsigned long deadline)
{
	struct ava_slot *slot = conn->slot;
	long slice, left;
	int ret, seq;

	for (;;) {
		/* a removed device's memory is gone: look at gone before any shared byte */
		ret = ava_kconn_stopped(conn);
		if (ret)
			return ret;
		ret = probe(conn, arg);
		if (ret)
			return ret > 0 ? 0 : ret;
		if (ava_kconn_region_state(conn) & AVA_REGION_CLOSED) {
			/* the worker may have published just before it went: one last look */
			ret = probe(conn, arg);
			return ret > 0 ? 0 : ret ? ret : -EPIPE;
		}
		if (reader && kthread_should_stop())
			return -ESHUTDOWN;
		if (!reader && fatal_signal_pending(current))
			return -EINTR;
		slice = msecs_to_jiffies(AVA_KCONN_SLICE_MS);
		if (deadline) {
			if (time_after_eq(jiffies, deadline))
				return -ETIMEDOUT;
			slice = min_t(long, slice, (long)(deadline - jiffies));
		}
		seq = atomic_read(&slot->irq_seq);
		WRITE_ONCE(*word, 1);
		/* pairs with the host's full barrier between publishing and reading our word */
		smp_mb();
		if (probe(conn, arg) || (ava_kconn_region_state(conn) &
					 (AVA_REGION_BROKEN | AVA_REGION_CLOSED))) {
			WRITE_ONCE(*word, 0);
			continue;
		}
		if (!conn->dev->doorbell) {
			usleep_range(AVA_KCONN_POLL_MIN_US, AVA_KCONN_POLL_MAX_US);
		} else if (reader) {
			left = wait_event_interruptible_timeout(slot->wq,
				atomic_read(&slot->irq_seq) != seq || READ_ONCE(conn->dev->gone) ||
				kthread_should_stop(), slice);
			(void)left;
		} else {
			atomic64_inc(&slot->waits);
			left = wait_event_killable_timeout(slot->wq,
				atomic_read(&slot->irq_seq) != seq || READ_ONCE(conn->dev->gone),
				slice);
			(void)left;
		}
		WRITE_ONCE(*word, 0);
	}
}

static int ava_kconn_probe_space(struct ava_kconn *conn, void *arg)
{
	const char *why;
	u64 length = *(const u64 *)arg;

	if (ava_kprod_refresh(&conn->tx, &why))
		return ava_kconn_break(conn, why);
	return ava_kprod_fits(&conn->tx, length);
}

struct ava_kcursor {
	const struct ava_kseg *segs;
	unsigned int nsegs;
	unsigned int index;
	u64 offset;
};

static void ava_kcursor_copy(struct ava_kcursor *cur, u8 *dst, u64 bytes)
{
	while (bytes && cur->index < cur->nsegs) {
		const struct ava_kseg *s = &cur->segs[cur->index];
		u64 take = min(s->len - cur->offset, bytes);

		if (take) {
			if (s->ptr)
				memcpy(dst, (const u8 *)s->ptr + cur->offset, take);
			else
				memset(dst, 0, take);
			dst += take;
			bytes -= take;
			cur->offset += take;
		}
		if (cur->offset == s->len) {
			cur->index++;
			cur->offset = 0;
		}
	}
}

/* Caller holds send_lock and dev->io. */
static int ava_kconn_write_record(struct ava_kconn *conn, u32 kind, u64 length,
				  struct ava_kcursor *cur)
{
	const char *why;
	int ret;

	if (!ava_kprod_fits(&conn->tx, length)) {
		if (ava_kprod_refresh(&conn->tx, &why))
			return ava_kconn_break(conn, why);
		if (!ava_kprod_fits(&conn->tx, length)) {
			/* the worker can only make room for what it can see */
			ava_kprod_publish(&conn->tx);
			ava_kconn_wake_host(conn, &conn->tx.v.ctl->c_sleeping);
			ret = ava_kconn_wait(conn, &conn->tx.v.ctl->sleeping, ava_kconn_probe_space,
					     &length, false, jiffies + conn->timeout);
			if (ret)
				return ret;
		}
	}
	ava_kcursor_copy(cur, ava_kprod_append(&conn->tx, kind, (u32)length), length);
	return 0;
}

/**
 * ava_kconn_send() - write one message into the command ring
 * @conn: the connection
 * @segs: the message's pieces (header first)
 * @nsegs: how many
 * @total: their sum, the header's total_len
 *
 * Splits it into MSG_PART/MSG_END records when it is larger than a record
 * may be; waits (killable, bounded) for space.
 *
 * Return: 0 or -errno.
 */
int ava_kconn_send(struct ava_kconn *conn, const struct ava_kseg *segs, unsigned int nsegs,
		   u64 total)
{
	struct ava_kcursor cur = { .segs = segs, .nsegs = nsegs };
	u64 piece_max = conn->nl ? 0 : ava_kprod_max_piece(&conn->tx);
	u64 left, piece;
	int ret;

	if (total > AVA_KCONN_MAX_MSG)
		return -E2BIG;
	if (conn->nl)
		return ava_knl_send(conn, segs, nsegs, total);
	mutex_lock(&conn->send_lock);
	down_read(&conn->dev->io);
	ret = ava_kconn_stopped(conn);
	if (!ret && (ava_kconn_region_state(conn) & AVA_REGION_CLOSED))
		ret = -EPIPE;
	if (ret)
		goto out;
	if (total <= piece_max) {
		ret = ava_kconn_write_record(conn, AVA_REC_MSG, total, &cur);
	} else {
		for (left = total; left && !ret; left -= piece) {
			piece = min(left, piece_max);
			ret = ava_kconn_write_record(conn, piece == left ? AVA_REC_MSG_END :
					AVA_REC_MSG_PART, piece, &cur);
		}
	}
	if (!ret) {
		ava_kprod_publish(&conn->tx);
		ava_kconn_wake_host(conn, &conn->tx.v.ctl->c_sleeping);
	} else if (ret != -ENODEV && ret != -EPIPE && ret != -EHOSTDOWN) {
		/* part of a message may be in the ring: nothing can follow it */
		ava_kconn_fail(conn, -EPIPE);
	}
out:
	up_read(&conn->dev->io);
	mutex_unlock(&conn->send_lock);
	return ret;
}

/**
 * ava_kconn_fill_hdr() - a message header of this connection's spec
 * @conn: the connection
 * @hdr: filled in; total_len is the bare header's, thread_id the caller's pid
 * @kind: AVA_MSG_*
 */
void ava_kconn_fill_hdr(struct ava_kconn *conn, struct ava_msg_hdr *hdr, u16 kind)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->magic = AVA_MSG_MAGIC;
	hdr->abi_version = AVA_ABI_VERSION;
	hdr->kind = kind;
	hdr->spec_id = conn->spec->id;
	hdr->total_len = sizeof(*hdr);
	hdr->thread_id = current->pid;
}

/**
 * ava_kconn_add_waiter() - expect the reply to w->call_id
 * @conn: the connection
 * @w: the waiter, with call_id set
 *
 * Return: 0, or the connection's error when it is broken.
 */
int ava_kconn_add_waiter(struct ava_kconn *conn, struct ava_kwaiter *w)
{
	int ret;

	init_completion(&w->done);
	w->msg = NULL;
	w->error = 0;
	spin_lock(&conn->lock);
	ret = conn->broken;
	if (!ret)
		list_add_tail(&w->node, &conn->pending);
	else
		INIT_LIST_HEAD(&w->node);
	spin_unlock(&conn->lock);
	return ret;
}

/**
 * ava_kconn_abandon() - the caller stops waiting (timeout, fatal signal, send failed)
 * @conn: the connection
 * @w: the waiter; when the reader completed it meanwhile, its reply stays in w
 *
 * A late reply to an abandoned call is dropped instead of breaking the connection.
 */
void ava_kconn_abandon(struct ava_kconn *conn, struct ava_kwaiter *w)
{
	spin_lock(&conn->lock);
	if (!list_empty(&w->node)) {
		list_del_init(&w->node);
		conn->abandoned[conn->abandoned_next] = w->call_id;
		conn->abandoned_next = (conn->abandoned_next + 1) % AVA_KCONN_ABANDONED;
	}
	spin_unlock(&conn->lock);
}

/* ---- receiving ---- */

struct ava_krx {
	struct ava_krec rec;
	const char *why;
};

static int ava_kconn_probe_rx(struct ava_kconn *conn, void *arg)
{
	struct ava_krx *rx = arg;
	int ret = ava_kcons_next(&conn->rx, &rx->rec, &rx->why);

	return ret < 0 ? ava_kconn_break(conn, rx->why) : ret;
}

static void ava_kconn_consumed(struct ava_kconn *conn, const struct ava_krec *rec)
{
	ava_kcons_consume(&conn->rx, rec);
	ava_kconn_wake_host(conn, &conn->rx.v.ctl->sleeping);
}

/**
 * ava_kconn_recv() - receive one whole message from the reply ring
 * @conn: the connection
 * @msg: set to the message (kvmalloc'ed; the caller kvfree()s it)
 * @len: set to its length, its header's total_len
 * @reader: the caller is the reader kthread (stops on kthread_stop()), else
 *          a killable caller
 * @deadline: jiffies bound of the wait for the first record (0: none)
 *
 * The caller holds dev->io and is the only consumer of the reply ring.
 *
 * Return: 0 or -errno (-ESHUTDOWN: the reader is being stopped).
 */
int ava_kconn_recv(struct ava_kconn *conn, void **msg, u64 *len, bool reader,
			  unsigned long deadline)
{
	struct ava_msg_hdr hdr;
	struct ava_krx rx;
	u64 got;
	u8 *buf;
	int ret;

	ret = ava_kconn_wait(conn, &conn->rx.v.ctl->c_sleeping, ava_kconn_probe_rx, &rx, reader,
			     deadline);
	if (ret)
		return ret;
	if (rx.rec.kind == AVA_REC_MSG_END)
		return ava_kconn_break(conn, "MSG_END with no MSG_PART before it");
	if (rx.rec.length < sizeof(hdr))
		return ava_kconn_break(conn, "a message shorter than its header");
	/* checked on a private copy: the host may rewrite the ring meanwhile */
	memcpy(&hdr, rx.rec.bytes, sizeof(hdr));
	if (hdr.magic != AVA_MSG_MAGIC || hdr.abi_version != AVA_ABI_VERSION)
		return ava_kconn_break(conn, "a message with a bad magic or ABI version");
	if (rx.rec.kind == AVA_REC_MSG && hdr.total_len != rx.rec.length)
		return ava_kconn_break(conn, "a message whose total_len differs from its record");
	if (rx.rec.kind == AVA_REC_MSG_PART && hdr.total_len <= rx.rec.length)
		return ava_kconn_break(conn, "a first MSG_PART as long as its message");
	if (hdr.total_len > AVA_KCONN_MAX_MSG)
		return ava_kconn_break(conn, "a message above the kernel connection's limit");
	buf = kvmalloc(hdr.total_len, GFP_KERNEL);
	if (!buf)
		return ava_kconn_break(conn, "no memory for a message");
	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), rx.rec.bytes + sizeof(hdr), rx.rec.length - sizeof(hdr));
	got = rx.rec.length;
	ava_kconn_consumed(conn, &rx.rec);
	while (got < hdr.total_len) {
		bool last;

		ret = ava_kconn_wait(conn, &conn->rx.v.ctl->c_sleeping, ava_kconn_probe_rx, &rx,
				     reader, jiffies + conn->timeout);
		if (ret == -ETIMEDOUT)
			ret = ava_kconn_break(conn, "the worker stalled mid-message");
		if (ret)
			goto err_free;
		ret = -EPIPE;
		if (rx.rec.kind == AVA_REC_MSG) {
			ava_kconn_break(conn, "a MSG record between the pieces of a message");
			goto err_free;
		}
		if (rx.rec.length > hdr.total_len - got) {
			ava_kconn_break(conn, "a piece overruns its message");
			goto err_free;
		}
		last = got + rx.rec.length == hdr.total_len;
		if (last != (rx.rec.kind == AVA_REC_MSG_END)) {
			ava_kconn_break(conn, "MSG_END does not end its message");
			goto err_free;
		}
		memcpy(buf + got, rx.rec.bytes, rx.rec.length);
		got += rx.rec.length;
		ava_kconn_consumed(conn, &rx.rec);
	}
	*msg = buf;
	*len = hdr.total_len;
	return 0;

err_free:
	kvfree(buf);
	return ret;
}
