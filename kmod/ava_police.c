// SPDX-License-Identifier: GPL-2.0
/*
 * Policed claims of /dev/ava (include/ava/ivshmem.h, "Policed claims").
 *
 * AVA_IOC_SUBMIT: the process of a policed claim cannot map its command
 * ring. It hands whole messages to ava.ko, which reads each header and
 * argument block into kernel memory, checks them there (framing, HELLO
 * first, the spec's table through ava_cmd_police()) and writes the messages
 * it accepts into the ring from those copies, their payload straight from
 * user memory. The ring's indices that count are checked_head (ours) and
 * cmd_tail (the host's) in the slot table, which no process maps.
 *
 * Locking, outermost first: the file's submit mutex, dev->io for reading
 * around each access to shared memory (copies from user memory under it run
 * with page faults disabled, so a fault cannot stall remove()), the table
 * registry's mutex (ava_cmds.c) innermost.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "ava_kcall_priv.h"
#include "ava_police.h"

#ifndef ITER_SOURCE
#define ITER_SOURCE WRITE /* kernels before ITER_SOURCE/ITER_DEST: data flows from the iter */
#endif

/* The largest argument block ava.ko copies; cava's are far smaller. */
#define AVA_POLICE_MAX_ARGS (64u * 1024u)
/* Payload goes from user memory into the ring this many bytes per hold of dev->io. */
#define AVA_POLICE_CHUNK (256u * 1024u)
/* Waits for space re-check at least this often (signals, a gone device). */
#define AVA_POLICE_SLICE_MS 50
/* Polling without interrupts: short sleeps first, then longer ones. */
#define AVA_POLICE_POLL_FAST_ROUNDS 100
#define AVA_POLICE_POLL_FAST_MIN_US 50
#define AVA_POLICE_POLL_FAST_MAX_US 200
#define AVA_POLICE_POLL_SLOW_MIN_US 1000
#define AVA_POLICE_POLL_SLOW_MAX_US 2000

/* The message being taken; in struct ava_police to spare the stack. */
struct ava_police_msg {
	struct ava_msg_hdr hdr; /* the checked copy: what goes into the ring */
	struct ava_hello hello; /* a HELLO's argument block */
	const u8 *args;         /* the checked argument block: &hello or police->args */
	u64 taken;              /* bytes of the message read from the gather list */
	u64 written;            /* bytes of it written into the ring */
	struct ava_cmds *cmds;  /* a HELLO's table: the claim's once the HELLO is in the ring */
	const char *spec;       /* for the log */
	s32 status;             /* AVA_E_* when refused */
	char why[112];
};

struct ava_police {
	struct mutex lock;     /* serialises submits; taken before dev->io */
	struct ava_kprod tx;   /* the command ring: head checked_head, tail cmd_tail */
	struct ava_region_hdr *rh;
	struct ava_slot_entry *entry;
	struct ava_cmds *cmds; /* the spec's table once its HELLO is in the ring, else NULL */
	u8 *args;              /* AVA_POLICE_MAX_ARGS: the argument block being checked */
	struct ava_police_msg msg;
};

#define AVA_POLICE_REFUSED 1

static const char *const ava_police_whys[] = {
	[AVA_CMD_WHY_NONE] = "refused",
	[AVA_CMD_WHY_FUNC] = "no such supported function",
	[AVA_CMD_WHY_ARGS_LEN] = "an argument block of the wrong length",
	[AVA_CMD_WHY_CLASS] = "a sync/async class the spec does not allow",
	[AVA_CMD_WHY_TABLE] = "the command table contradicts itself",
	[AVA_CMD_WHY_BUF_IN] = "a buffer sent as input, which the spec does not allow",
	[AVA_CMD_WHY_BUF_OUT] = "a buffer asked as output, which the spec does not allow",
	[AVA_CMD_WHY_BUF_BOUND] = "a buffer above the spec's bound",
	[AVA_CMD_WHY_BUF_FLAGS] = "a buffer with unknown flags or non-zero reserved bits",
	[AVA_CMD_WHY_BUF_RANGE] = "a buffer outside the payload or heap",
};

/**
 * ava_police_wake() - end the AVA_IOC_WAITs of a slot
 * @slot: the slot; its waiters return 0 and re-check
 */
void ava_police_wake(struct ava_slot *slot)
{
	atomic_inc(&slot->irq_seq);
	wake_up_all(&slot->wq);
}

/* Counts and logs a refused message and skips the rest of it. */
static int ava_police_refuse(struct ava_file *af, struct ava_police_msg *m, struct iov_iter *iter,
			     int status, const char *why)
{
	struct ava_slot *slot = af->slot;

	atomic64_inc(&slot->refused);
	/* %pE: a spec name from a HELLO is the process's bytes */
	pr_notice_ratelimited("ava: slot %u (pid %d): refused call %u of spec %*pE: %s (status %d)\n",
			      slot->index, task_tgid_nr(current), m->hdr.func_id,
			      (int)strnlen(m->spec, AVA_SPEC_NAME_MAX), m->spec, why, status);
	iov_iter_advance(iter, m->hdr.total_len - m->taken);
	m->taken = m->hdr.total_len;
	m->status = status;
	return AVA_POLICE_REFUSED;
}

static int ava_police_refuse_verdict(struct ava_file *af, struct ava_police_msg *m,
				     struct iov_iter *iter, const struct ava_cmd_verdict *v)
{
	const char *why = v->why < ARRAY_SIZE(ava_police_whys) ? ava_police_whys[v->why] : "?";

	if (v->why >= AVA_CMD_WHY_BUF_IN)
		scnprintf(m->why, sizeof(m->why), "%s (buffer %u, got %llu, limit %llu)", why,
			  v->buf, v->got, v->limit);
	else
		scnprintf(m->why, sizeof(m->why), "%s (got %llu, limit %llu)", why, v->got,
			  v->limit);
	return ava_police_refuse(af, m, iter, v->status ? v->status : AVA_E_PROTO, m->why);
}

/* The first message: a HELLO naming a registered table. */
static int ava_police_hello(struct ava_file *af, struct ava_police_msg *m, struct iov_iter *iter)
{
	struct ava_hello *hello = &m->hello;

	if (m->hdr.args_len == AVA_HELLO_V1_SIZE)
		return ava_police_refuse(af, m, iter, AVA_E_VERSION,
					 "a HELLO of protocol 1 (a guest library older than ava.ko)");
	if (m->hdr.args_len != sizeof(*hello))
		return ava_police_refuse(af, m, iter, AVA_E_PROTO,
					 "a HELLO whose argument block is not struct ava_hello");
	/* the items are the payload: the worker reads them, ava.ko bounds them */
	if (m->hdr.total_len - sizeof(m->hdr) - m->hdr.args_len > AVA_HELLO_ITEMS_MAX)
		return ava_police_refuse(af, m, iter, AVA_E_TOO_BIG,
					 "a HELLO whose items are above AVA_HELLO_ITEMS_MAX");
	if (copy_from_iter(hello, sizeof(*hello), iter) != sizeof(*hello))
		return -EFAULT;
	m->taken += sizeof(*hello);
	if (!memchr(hello->spec_name, 0, sizeof(hello->spec_name)))
		return ava_police_refuse(af, m, iter, AVA_E_SPEC,
					 "a HELLO with an unterminated spec name");
	m->spec = hello->spec_name;
	m->cmds = ava_cmds_get(hello->spec_id, hello->spec_hash, hello->spec_name);
	if (!m->cmds) {
		bool known = ava_cmds_name_known(hello->spec_name);

		scnprintf(m->why, sizeof(m->why), "%s (id %u, hash %#llx)",
			  known ? "its table is registered with another id or layout hash" :
				  "no command table registered for it",
			  hello->spec_id, hello->spec_hash);
		return ava_police_refuse(af, m, iter, known ? AVA_E_SPEC : AVA_E_UNSUPPORTED,
					 m->why);
	}
	m->args = (const u8 *)hello;
	return 0;
}

/* A CALL: the claim's spec, a valid class, then the table. */
static int ava_police_call(struct ava_file *af, struct ava_police_msg *m, struct iov_iter *iter)
{
	struct ava_police *p = af->police;
	const struct ava_cmd_table *t = ava_cmds_table(p->cmds);
	const struct ava_msg_hdr *h = &m->hdr;
	u32 mode = h->flags & (AVA_F_SYNC | AVA_F_ASYNC);
	const struct ava_cmd_desc *d;
	struct ava_cmd_frame frame;
	struct ava_cmd_verdict v;

	if (h->spec_id != t->spec_id)
		return ava_police_refuse(af, m, iter, AVA_E_SPEC, "a CALL of another spec");
	if ((h->flags & ~AVA_F_ALL) || (mode != AVA_F_SYNC && mode != AVA_F_ASYNC))
		return ava_police_refuse(af, m, iter, AVA_E_PROTO,
					 "header flags not exactly one of sync and async");
	/* the framing check made total_len >= header + args_len */
	frame.payload_len = h->total_len - sizeof(*h) - h->args_len;
	frame.heap_size = af->dev->hdr.heap_size;
	d = ava_cmd_lookup(t, h->func_id);
	if (!d || !(d->flags & AVA_CMD_SUPPORTED) || h->args_len != d->args_len) {
		/*
		 * The checker refuses an unknown function or a wrong length
		 * before it reads the block: nothing of it has been copied.
		 */
		if (!ava_cmd_police(t, h->func_id, h->flags, p->args, h->args_len, &frame, &v))
			ava_cmd_refuse(&v, AVA_E_PROTO, AVA_CMD_WHY_TABLE, 0, 0, 0);
		return ava_police_refuse_verdict(af, m, iter, &v);
	}
	if (h->args_len > AVA_POLICE_MAX_ARGS)
		return ava_police_refuse(af, m, iter, AVA_E_TOO_BIG,
					 "an argument block above what ava.ko copies");
	if (copy_from_iter(p->args, h->args_len, iter) != h->args_len)
		return -EFAULT;
	m->taken += h->args_len;
	if (ava_cmd_police(t, h->func_id, h->flags, p->args, h->args_len, &frame, &v))
		return ava_police_refuse_verdict(af, m, iter, &v);
	m->args = p->args;
	return 0;
}

/* Takes dev->io for reading; -ENODEV (not held) once the device is gone. */
static int ava_police_lock_io(struct ava_dev *dev)
{
	down_read(&dev->io);
	if (READ_ONCE(dev->gone)) {
		up_read(&dev->io);
		return -ENODEV;
	}
	return 0;
}

/* 0: the ring may be used. Caller holds dev->io. */
static int ava_police_stopped(struct ava_file *af)
{
	if (READ_ONCE(af->dev->gone))
		return -ENODEV;
	if (READ_ONCE(af->police->rh->state) & (AVA_REGION_BROKEN | AVA_REGION_CLOSED))
		return -EPIPE;
	if (ava_dev_host_state(af->dev) != AVA_HOST_UP)
		return -EPIPE;
	return 0;
}

/* The command ring is corrupt or a message was cut short. Caller holds dev->io. */
static int ava_police_break(struct ava_file *af, const char *why)
{
	ava_slot_or_state(af->police->rh, AVA_REGION_BROKEN);
	ava_dev_ring(af->dev, AVA_DEV_SLOT_VECTOR(af->slot->index));
	pr_warn_ratelimited("ava: slot %u (pid %d): command ring broken: %s\n", af->slot->index,
			    task_tgid_nr(current), why);
	return -EPIPE;
}

/*
 * Reads the host's cmd_tail, but only while the host serves this claim:
 * before that it may hold anything, and the tail counts as 0 (the host
 * zeroes cmd_tail before it shows SERVING). Caller holds dev->io.
 */
static int ava_police_refresh(struct ava_file *af)
{
	struct ava_police *p = af->police;
	const char *why;

	/* pairs with the host's release store of host_state after host_gen and cmd_tail */
	if (smp_load_acquire(&p->entry->host_state) != AVA_SLOT_SERVING ||
	    READ_ONCE(p->entry->host_gen) != af->slot->guest_gen)
		return 0;
	if (ava_kprod_refresh(&p->tx, &why))
		return ava_police_break(af, why);
	return 0;
}

/* Publishes what was appended and wakes a sleeping host. Caller holds dev->io. */
static void ava_police_publish(struct ava_file *af)
{
	struct ava_police *p = af->police;
	u32 *c_sleeping = &p->rh->cmd.c_sleeping;

	if (p->tx.head == p->tx.published)
		return;
	/* a release store of checked_head: pairs with the host's acquire load of checked_head */
	ava_kprod_publish(&p->tx);
	/*
	 * Pairs with the host's full barrier between its store of 1 to
	 * c_sleeping and its re-check of checked_head: it sees our head or we
	 * see its 1. The process may scribble on c_sleeping: that only delays
	 * its own commands.
	 */
	smp_mb();
	if (!READ_ONCE(*c_sleeping))
		return;
	WRITE_ONCE(*c_sleeping, 0);
	if (af->dev->doorbell)
		atomic64_inc(&af->slot->kicks);
	ava_dev_ring(af->dev, AVA_DEV_SLOT_VECTOR(af->slot->index));
}

/* After the full barrier: whether to stop sleeping (space, or a reason to stop). */
static bool ava_police_wake_up(struct ava_file *af, u64 length, int *ret)
{
	*ret = ava_police_stopped(af);
	if (!*ret)
		*ret = ava_police_refresh(af);
	return *ret || ava_kprod_fits(&af->police->tx, length);
}

/*
 * Waits (killable, in slices) until a record of length bytes fits, as ring.h
 * says: sleeping = 1, full barrier, re-check, sleep until the slot's
 * interrupt (or poll without interrupts). Gives up after ava_wait_max_ms in
 * which the host consumed nothing. Caller holds dev->io, as AVA_IOC_WAIT
 * does: remove() sets gone and wakes the slot first.
 */
static int ava_police_wait_space(struct ava_file *af, u64 length)
{
	struct ava_police *p = af->police;
	struct ava_dev *dev = af->dev;
	struct ava_slot *slot = af->slot;
	u32 *sleeping = &p->rh->cmd.sleeping;
	unsigned long deadline = jiffies + msecs_to_jiffies(READ_ONCE(ava_wait_max_ms));
	u64 seen = p->tx.seen_tail;
	unsigned int round;
	bool slept = false;
	long slice;
	int ret, seq;

	for (round = 0;; round++) {
		/* the host can only make room by consuming what it sees */
		ava_police_publish(af);
		if (ava_police_wake_up(af, length, &ret))
			return ret;
		if (p->tx.seen_tail != seen) {
			seen = p->tx.seen_tail;
			deadline = jiffies + msecs_to_jiffies(READ_ONCE(ava_wait_max_ms));
		}
		if (fatal_signal_pending(current))
			return -EINTR;
		if (time_after_eq(jiffies, deadline)) {
			atomic64_inc(&slot->timeouts);
			return -ETIMEDOUT;
		}
		if (!slept) {
			atomic64_inc(&slot->waits);
			slept = true;
		}
		seq = atomic_read(&slot->irq_seq);
		WRITE_ONCE(*sleeping, 1);
		/*
		 * Pairs with the host's full barrier between its release store
		 * of cmd_tail and its read of sleeping (notify_producer): it
		 * sees our 1 and interrupts, or we see its tail.
		 */
		smp_mb();
		if (ava_police_wake_up(af, length, &ret)) {
			WRITE_ONCE(*sleeping, 0);
			if (ret)
				return ret;
			continue;
		}
		slice = min_t(long, msecs_to_jiffies(AVA_POLICE_SLICE_MS),
			      (long)(deadline - jiffies));
		if (!dev->doorbell) {
			if (round < AVA_POLICE_POLL_FAST_ROUNDS)
				usleep_range(AVA_POLICE_POLL_FAST_MIN_US, AVA_POLICE_POLL_FAST_MAX_US);
			else
				usleep_range(AVA_POLICE_POLL_SLOW_MIN_US, AVA_POLICE_POLL_SLOW_MAX_US);
		} else if (slice > 0) {
			wait_event_killable_timeout(slot->wq, atomic_read(&slot->irq_seq) != seq ||
						    READ_ONCE(dev->gone), slice);
		}
		WRITE_ONCE(*sleeping, 0);
	}
}

/* Appends the header of a record of length bytes, waiting for space; *body is where its bytes go. */
static int ava_police_reserve(struct ava_file *af, u32 kind, u64 length, u8 **body)
{
	struct ava_police *p = af->police;
	int ret = ava_police_lock_io(af->dev);

	if (ret)
		return ret;
	ret = ava_police_stopped(af);
	if (!ret && !ava_kprod_fits(&p->tx, length)) {
		ret = ava_police_refresh(af);
		if (!ret && !ava_kprod_fits(&p->tx, length))
			ret = ava_police_wait_space(af, length);
	}
	if (!ret)
		*body = ava_kprod_append(&p->tx, kind, (u32)length);
	up_read(&af->dev->io);
	return ret;
}

/*
 * Copies up to n payload bytes from user memory straight into the ring, with
 * page faults disabled so that none is taken under dev->io. Returns the bytes
 * copied, which may be 0 when the next page is not resident.
 */
static int ava_police_copy_payload(struct ava_file *af, u8 *body, size_t n,
				   struct iov_iter *iter, size_t *copied)
{
	int ret = ava_police_lock_io(af->dev);

	if (ret)
		return ret;
	pagefault_disable();
	*copied = copy_from_iter(body, n, iter);
	pagefault_enable();
	up_read(&af->dev->io);
	return 0;
}

/*
 * Writes the next length bytes of the message at body: header and argument
 * block from the checked copies, payload from user memory. A payload copy
 * that stops at a page not resident faults it in without dev->io and goes
 * on; one that cannot be faulted in is -EFAULT.
 */
static int ava_police_fill(struct ava_file *af, struct ava_police_msg *m, u8 *body, u64 length,
			   struct iov_iter *iter)
{
	u64 hdr_args = sizeof(m->hdr) + m->hdr.args_len;
	const u8 *src;
	size_t n, got;
	int ret;

	while (length) {
		if (m->written >= hdr_args) {
			n = min_t(u64, length, AVA_POLICE_CHUNK);
			ret = ava_police_copy_payload(af, body, n, iter, &got);
			if (ret)
				return ret;
			if (!got && fault_in_iov_iter_readable(iter, n) == n)
				return -EFAULT;
			m->taken += got;
			body += got;
			length -= got;
			m->written += got;
			continue;
		}
		if (m->written < sizeof(m->hdr)) {
			src = (const u8 *)&m->hdr + m->written;
			n = min_t(u64, length, sizeof(m->hdr) - m->written);
		} else {
			src = m->args + (m->written - sizeof(m->hdr));
			n = min_t(u64, length, hdr_args - m->written);
		}
		ret = ava_police_lock_io(af->dev);
		if (ret)
			return ret;
		memcpy(body, src, n);
		up_read(&af->dev->io);
		body += n;
		length -= n;
		m->written += n;
	}
	return 0;
}

/*
 * Writes an accepted message into the command ring as ava_kconn_send() does:
 * one MSG record, or MSG_PART records and a MSG_END when it is larger than
 * a record may be. A message cut short after part of it was published (or
 * a host that consumed nothing) breaks the region; one of which nothing was
 * published is forgotten.
 */
static int ava_police_write(struct ava_file *af, struct ava_police_msg *m, struct iov_iter *iter)
{
	struct ava_police *p = af->police;
	u64 total = m->hdr.total_len;
	u64 max = ava_kprod_max_piece(&p->tx);
	u64 start = p->tx.head;
	u64 left, piece;
	u8 *body;
	u32 kind;
	int ret = 0;

	for (left = total; left; left -= piece) {
		piece = min(left, max);
		if (total <= max)
			kind = AVA_REC_MSG;
		else
			kind = piece == left ? AVA_REC_MSG_END : AVA_REC_MSG_PART;
		ret = ava_police_reserve(af, kind, piece, &body);
		if (!ret)
			ret = ava_police_fill(af, m, body, piece, iter);
		if (ret)
			break;
	}
	if (!ret)
		return 0;
	if (p->tx.published <= start) {
		/* nothing of it reached the host: drop its records, keep the whole messages before */
		p->tx.head = start;
		if (ret != -ETIMEDOUT)
			return ret;
	} else {
		/* the earlier pieces are the host's now: drop only what it has not seen */
		p->tx.head = p->tx.published;
	}
	if (ret == -ENODEV || ret == -EPIPE || ava_police_lock_io(af->dev))
		return ret;
	ava_police_break(af, ret == -ETIMEDOUT ? "the host consumed nothing while the ring was full" :
			 "a message was cut short");
	up_read(&af->dev->io);
	return ret;
}

/*
 * Takes the next message: 0 when it is in the ring, AVA_POLICE_REFUSED,
 * or -errno (it was not taken).
 */
static int ava_police_one(struct ava_file *af, struct iov_iter *iter, u64 left)
{
	struct ava_police *p = af->police;
	struct ava_police_msg *m = &p->msg;
	const struct ava_msg_hdr *h = &m->hdr;
	int ret;

	memset(m, 0, sizeof(*m));
	m->spec = p->cmds ? ava_cmds_table(p->cmds)->spec_name : "-";
	if (left < sizeof(m->hdr))
		return -EINVAL;
	if (copy_from_iter(&m->hdr, sizeof(m->hdr), iter) != sizeof(m->hdr))
		return -EFAULT;
	m->taken = sizeof(m->hdr);
	/* framing: whatever follows cannot be found without a sound header */
	if (h->magic != AVA_MSG_MAGIC || h->abi_version != AVA_ABI_VERSION ||
	    h->total_len < sizeof(*h) || h->total_len > left ||
	    h->args_len > h->total_len - sizeof(*h) || h->reserved)
		return -EINVAL;

	if (!p->cmds) {
		if (h->kind == AVA_MSG_HELLO)
			ret = ava_police_hello(af, m, iter);
		else
			ret = ava_police_refuse(af, m, iter, AVA_E_STATE, "a message before HELLO");
	} else {
		switch (h->kind) {
		case AVA_MSG_HELLO:
			ret = ava_police_refuse(af, m, iter, AVA_E_STATE, "a second HELLO");
			break;
		case AVA_MSG_CALL:
			ret = ava_police_call(af, m, iter);
			break;
		case AVA_MSG_CALLBACK_DONE:
		case AVA_MSG_GOODBYE:
			ret = h->args_len ? ava_police_refuse(af, m, iter, AVA_E_PROTO,
							      "an argument block where none belongs") : 0;
			break;
		default:
			ret = ava_police_refuse(af, m, iter, AVA_E_PROTO,
						"a message of a kind guests do not send");
			break;
		}
	}
	if (ret)
		return ret;
	ret = ava_police_write(af, m, iter);
	if (m->cmds) {
		/* a HELLO: the claim's spec from now on, once the host can see it */
		if (!ret)
			p->cmds = m->cmds;
		else
			ava_cmds_put(m->cmds);
		m->cmds = NULL;
	}
	return ret;
}

/* The messages of a submit, in order, until the first refused one. Caller holds p->lock. */
static int ava_police_take(struct ava_file *af, struct iov_iter *iter, u64 total, u64 *done,
			   s32 *status)
{
	struct ava_police_msg *m = &af->police->msg;
	int ret = 0;

	while (*done < total) {
		ret = ava_police_one(af, iter, total - *done);
		if (ret < 0)
			break;
		*done += m->hdr.total_len;
		if (ret == AVA_POLICE_REFUSED) {
			/* user space answers a refused sync call itself (AVA_IOC_WAKE) */
			*status = m->status;
			ret = 0;
			break;
		}
	}
	/* whole messages go to the host also when a later one failed */
	if (!ava_police_lock_io(af->dev)) {
		ava_police_publish(af);
		up_read(&af->dev->io);
	}
	return ret;
}

/**
 * ava_police_submit() - AVA_IOC_SUBMIT (include/ava/ivshmem.h)
 * @af: the open file
 * @uarg: the user's struct ava_submit
 *
 * done and status are written back whenever the messages were looked at,
 * also when it fails: done then counts the whole messages taken before.
 *
 * Return: 0, -EPERM (not a policed claim), -EINVAL, -EFAULT, -EPIPE,
 * -EINTR, -ETIMEDOUT or -ENODEV (the device was removed).
 */
long ava_police_submit(struct ava_file *af, void __user *uarg)
{
	struct ava_submit __user *usub = uarg;
	struct iovec iovstack[UIO_FASTIOV], *iov = iovstack;
	struct ava_police *p = af->police;
	struct ava_submit sub;
	struct iov_iter iter;
	s32 status = 0;
	u64 done = 0;
	ssize_t len;
	long ret;

	if (!p)
		return -EPERM;
	if (copy_from_user(&sub, usub, sizeof(sub)))
		return -EFAULT;
	if (sub.flags || !sub.iovcnt || sub.iovcnt > AVA_SUBMIT_MAX_IOV)
		return -EINVAL;
	/* checks every iovec and caps the sum: it must be total exactly */
	len = import_iovec(ITER_SOURCE, u64_to_user_ptr(sub.iov), sub.iovcnt, ARRAY_SIZE(iovstack),
			   &iov, &iter);
	if (len < 0)
		return len;
	if ((u64)len != sub.total) {
		ret = -EINVAL;
		goto out_free_iov;
	}
	if (mutex_lock_killable(&p->lock)) {
		ret = -EINTR;
		goto out_free_iov;
	}
	ret = ava_police_take(af, &iter, sub.total, &done, &status);
	mutex_unlock(&p->lock);
	if (put_user(done, &usub->done) || put_user(status, &usub->status))
		ret = ret ? ret : -EFAULT;
out_free_iov:
	kfree(iov);
	return ret;
}

/**
 * ava_police_open() - set up a policed claim's state
 * @af: the open file, its slot just claimed
 *
 * Nothing for a claim that is not policed.
 *
 * Return: 0 or -ENOMEM.
 */
int ava_police_open(struct ava_file *af)
{
	struct ava_dev *dev = af->dev;
	struct ava_slot *slot = af->slot;
	struct ava_police *p;

	if (!(slot->claim_flags & AVA_CLAIM_POLICED))
		return 0;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->args = kvmalloc(AVA_POLICE_MAX_ARGS, GFP_KERNEL);
	if (!p->args)
		goto err_free_police;
	mutex_init(&p->lock);
	p->rh = ava_dev_region(dev, slot->index);
	p->entry = ava_dev_entry(dev, slot->index);
	/* the layout comes from ava.ko's validated copy, never from the region header */
	ava_kring_init(&p->tx.v, &p->rh->cmd, (u8 *)p->rh + AVA_REGION_HDR_SIZE, dev->hdr.cmd_size);
	ava_kring_set_indices(&p->tx.v, &p->entry->checked_head, &p->entry->cmd_tail);
	af->police = p;
	return 0;

err_free_police:
	kfree(p);
	return -ENOMEM;
}

/**
 * ava_police_release() - free a policed claim's state
 * @af: the file being released, its slot let go; no submit can run
 */
void ava_police_release(struct ava_file *af)
{
	struct ava_police *p = af->police;

	if (!p)
		return;
	if (p->cmds)
		ava_cmds_put(p->cmds);
	mutex_destroy(&p->lock);
	kvfree(p->args);
	kfree(p);
	af->police = NULL;
}
