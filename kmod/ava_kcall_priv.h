/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel connections of ava.ko (include/ava/kcall.h): the ring producer and
 * consumer in C (ava_kring.c), a connection on a kernel-owned slot
 * (ava_kconn.c, ava_kopen.c) or on the netlink carrier to a worker on this
 * kernel (ava_knl.c: no slot, no reader thread: the worker's messages arrive
 * in netlink handlers) and the calls made on it (ava_kcall.c).
 *
 * One connection = one slot + two kthreads:
 *   reader    consumes the reply ring: a REPLY goes to the caller waiting
 *             for its call_id, a CALLBACK to the callback thread's queue
 *   callback  runs the spec's decoder for each queued CALLBACK (it may make
 *             calls itself) and answers CALLBACK_DONE
 * Callers send under send_lock and sleep (killable, bounded) on a
 * completion until the reader hands them their reply.
 *
 * Locking, outermost first: send_lock (the command ring's producer), then
 * dev->io for reading (shared memory stays mapped), then dev->lock (slot
 * claims only); lock (a spinlock: pending waiters, the abandoned ids,
 * broken, deferred async errors, the callback queue) and the callbacks
 * xarray's lock are innermost and never held across a sleep.
 */
#ifndef AVA_KCALL_PRIV_H
#define AVA_KCALL_PRIV_H

#include <linux/completion.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "ava/kcall.h"
#include "ava_priv.h"

/* ---- ava_kring.c: one direction of a slot's region ---- */

struct ava_kring_view {
	struct ava_ring_ctl *ctl; /* in the slot's region header: the sleeping words */
	/*
	 * The ring's indices: ctl->head and ctl->tail, or, for a policed
	 * claim's command ring, checked_head and cmd_tail of its slot table
	 * entry (ava_kring_set_indices()), which no process maps.
	 */
	u64 *head_word;
	u64 *tail_word;
	u8 *data;
	u64 size; /* from ava.ko's validated copy of the device header */
};

struct ava_kprod {
	struct ava_kring_view v;
	u64 head;      /* our bytes appended, published or not */
	u64 published; /* the last head stored to shared memory */
	u64 seen_tail; /* the consumer's tail as last checked */
};

struct ava_kcons {
	struct ava_kring_view v;
	u64 tail;      /* our bytes consumed */
	u64 seen_head; /* the producer's head as last checked */
};

struct ava_krec {
	u32 kind;
	u32 length;
	const u8 *bytes; /* in shared memory: copy, then check the copy */
};

void ava_kring_init(struct ava_kring_view *v, struct ava_ring_ctl *ctl, u8 *data, u64 size);
void ava_kring_set_indices(struct ava_kring_view *v, u64 *head_word, u64 *tail_word);
/* 1: *rec is the next record; 0: empty; -EPIPE: corrupt (*why says how) */
int ava_kcons_next(struct ava_kcons *c, struct ava_krec *rec, const char **why);
void ava_kcons_consume(struct ava_kcons *c, const struct ava_krec *rec);
/* 0 or -EPIPE: the tail read from shared memory is impossible */
int ava_kprod_refresh(struct ava_kprod *p, const char **why);
bool ava_kprod_fits(const struct ava_kprod *p, u64 length);
u8 *ava_kprod_append(struct ava_kprod *p, u32 kind, u32 length);
void ava_kprod_publish(struct ava_kprod *p);
/* the largest record body: a message above this goes as MSG_PART/MSG_END */
static inline u64 ava_kprod_max_piece(const struct ava_kprod *p)
{
	return AVA_RING_MAX_RECORD(p->v.size) - sizeof(struct ava_ring_rec);
}

/* ---- ava_kconn.c (shared memory) and ava_kopen.c (threads, open, close) ---- */

/* Largest message either way: replies are copied into kvmalloc'ed memory. */
#define AVA_KCONN_MAX_MSG (64ull << 20)
#define AVA_KCONN_ABANDONED 64     /* ids of calls whose callers gave up */
#define AVA_KCONN_ASYNC_ERRORS 16  /* deferred async errors, one per thread */
#define AVA_KCONN_MAX_CALLBACKS 1024
#define AVA_KCONN_MAX_CALLBACK_BYTES (64ull << 20)

/* A piece of a message being sent: bytes, or zeros when ptr is NULL. */
struct ava_kseg {
	const void *ptr;
	u64 len;
};

/* A caller waiting for the reply to call_id. */
struct ava_kwaiter {
	struct list_head node; /* in conn->pending, under conn->lock */
	u64 call_id;
	struct completion done;
	void *msg; /* the reply (kvmalloc), owned by the waiter once done */
	u64 len;
	int error; /* 0 or why the connection failed the waiter */
};

/* A callback registration (ava_kcall_callback). */
struct ava_kcb {
	void (*fn)(void);
	void *userdata;
	u32 lifetime;
	u64 coupled;
};

struct ava_kasync_error {
	pid_t tid; /* 0: free */
	u32 ret_class;
	u32 func_id;
	s64 value;
};

struct ava_knl_conn;

struct ava_kconn {
	const struct ava_kspec *spec;
	struct ava_dev *dev; /* referenced; NULL on the netlink carrier */
	struct ava_knl_conn *nl; /* the netlink carrier's part (ava_knl.c); NULL on a slot */
	struct ava_slot *slot;
	struct list_head dev_node; /* in dev->kconns while it holds the slot, under dev->lock */
	struct ava_region_hdr *rh;
	unsigned long timeout; /* jiffies */

	struct mutex send_lock;
	struct ava_kprod tx;  /* under send_lock */
	struct ava_kcons rx;  /* the opener during HELLO, then the reader only */

	spinlock_t lock;
	struct list_head pending;
	u64 abandoned[AVA_KCONN_ABANDONED];
	unsigned int abandoned_next;
	int broken; /* 0 or the errno every later call fails with */
	struct ava_kasync_error async_errors[AVA_KCONN_ASYNC_ERRORS];
	unsigned int async_next;
	struct list_head cb_queue;
	unsigned int cb_count;
	u64 cb_bytes;
	wait_queue_head_t cb_wq;

	atomic64_t next_call_id;
	atomic64_t next_seq;
	struct xarray callbacks; /* id -> struct ava_kcb */
	struct task_struct *reader;
	struct task_struct *cb_thread;
};

int ava_kconn_send(struct ava_kconn *conn, const struct ava_kseg *segs, unsigned int nsegs,
		   u64 total);
int ava_kconn_recv(struct ava_kconn *conn, void **msg, u64 *len, bool reader,
		   unsigned long deadline);
void ava_kconn_fail(struct ava_kconn *conn, int error);
void ava_kconn_abandon(struct ava_kconn *conn, struct ava_kwaiter *w);
int ava_kconn_add_waiter(struct ava_kconn *conn, struct ava_kwaiter *w);
void ava_kconn_fill_hdr(struct ava_kconn *conn, struct ava_msg_hdr *hdr, u16 kind);
/* A received message (kvmalloc'ed, header checked) to its waiter or the callback queue. */
int ava_kconn_route(struct ava_kconn *conn, void *msg, u64 len);

/* ---- ava_knl.c: the netlink carrier (include/ava/knetlink.h) ---- */

int ava_knl_register(void);
void ava_knl_unregister(void);
bool ava_knl_worker_present(void);
int ava_knl_attach(struct ava_kconn *conn);
void ava_knl_detach(struct ava_kconn *conn);
void ava_knl_wake(struct ava_kconn *conn);
int ava_knl_send(struct ava_kconn *conn, const struct ava_kseg *segs, unsigned int nsegs,
		 u64 total);

/* ava_kcall.c: the callback thread runs decoders with these */
bool ava_kcall_lookup_callback(struct ava_kconn *conn, u64 id, struct ava_kcb *out);
void ava_kcall_drop_callbacks(struct ava_kconn *conn);
void ava_kcall_stash_async_error(struct ava_kconn *conn, const struct ava_kasync_error *e);

#endif /* AVA_KCALL_PRIV_H */
