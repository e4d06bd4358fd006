// SPDX-License-Identifier: GPL-2.0
/*
 * Calls on a kernel connection (include/ava/kcall.h), made by the stubs of
 * a cava-generated module ava_<spec>.ko. They mirror shim/call.cpp and
 * shim/reply.cpp: the same message, the same reply checks, async errors
 * surfacing at a later sync call of the same thread, callback registrations
 * with lifetimes. Everything a reply says is checked before use.
 */
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "ava_kcall_priv.h"

/* Buffers and registrations of most calls fit without growing the arrays. */
#define AVA_KCALL_INLINE_BUFS 4
#define AVA_KCALL_INLINE_REGS 2

struct ava_kreg {
	u32 id;
	u32 lifetime;
};

struct ava_kcall_impl {
	struct ava_kconn *conn;
	u32 flags;
	bool invoked;
	bool delivered; /* the worker accepted the call (it saw its registrations) */
	bool have_reply;
	/* IN buffers, in payload order */
	struct ava_kseg *bufs;
	unsigned int nbufs, cap_bufs;
	u64 payload_len;
	struct ava_kreg *regs;
	unsigned int nregs, cap_regs;
	struct ava_kwaiter waiter;
	const u8 *payload; /* of the reply */
	u64 reply_payload_len;
	struct ava_kasync_error async_error; /* tid 0: none */
	struct ava_kseg inline_bufs[AVA_KCALL_INLINE_BUFS];
	struct ava_kreg inline_regs[AVA_KCALL_INLINE_REGS];
};

static int ava_kcall_fail(struct ava_kcall *c, int error)
{
	if (!c->failed)
		c->failed = error;
	return c->failed;
}

/*
 * A call the spec's command table does not allow never leaves the guest:
 * status is the AVA_E_* the host would have answered, for the caller.
 */
static int ava_kcall_refuse(struct ava_kcall *c, struct ava_kconn *conn, int status)
{
	if (conn->slot)
		atomic64_inc(&conn->slot->refused);
	c->status = status;
	return ava_kcall_fail(c, -EINVAL);
}

/*
 * Checks a call against the spec's command table (include/ava/cmdtab.h)
 * with the checker the host and processes' slots use. The kernel builds its
 * own payload, so no frame: buffer ranges are ava.ko's own.
 * Returns 0 or an AVA_E_*.
 */
static int ava_kcall_police(const struct ava_cmd_table *t, u32 func_id, u32 flags,
			    const u8 *args, u32 args_len)
{
	struct ava_cmd_verdict verdict;

	return ava_cmd_police(t, func_id, flags, args, args_len, NULL, &verdict);
}

/* Grows an array of inline_cap elements (at first in inline storage) by one slot. */
static void *ava_kcall_grow(void *array, const void *inline_array, unsigned int *cap,
			    size_t elem)
{
	unsigned int new_cap = *cap * 2;
	void *bigger;

	bigger = kmalloc_array(new_cap, elem, GFP_KERNEL);
	if (!bigger)
		return NULL;
	memcpy(bigger, array, *cap * elem);
	if (array != inline_array)
		kfree(array);
	*cap = new_cap;
	return bigger;
}

/**
 * ava_kcall_begin() - start a call
 * @c: the call, on the stub's stack
 * @conn: the module's connection
 * @func_id: the function's wire id
 * @flags: AVA_F_SYNC or AVA_F_ASYNC, maybe with AVA_F_FLUSH
 *
 * Return: 0, -ENODEV (no connection), -EINVAL or -ENOMEM.
 */
int ava_kcall_begin(struct ava_kcall *c, struct ava_kconn *conn, ava_u32 func_id, ava_u32 flags)
{
	struct ava_kcall_impl *impl;
	u32 mode = flags & (AVA_F_SYNC | AVA_F_ASYNC);

	memset(c, 0, sizeof(*c));
	c->conn = conn;
	c->func_id = func_id;
	if (!conn)
		return ava_kcall_fail(c, -ENODEV);
	if ((flags & ~AVA_F_ALL) || (mode != AVA_F_SYNC && mode != AVA_F_ASYNC))
		return ava_kcall_fail(c, -EINVAL);
	if (func_id == 0 || func_id >= conn->spec->nfuncs)
		return ava_kcall_refuse(c, conn, AVA_E_FUNC);
	impl = kzalloc(sizeof(*impl), GFP_KERNEL);
	if (!impl)
		return ava_kcall_fail(c, -ENOMEM);
	impl->conn = conn;
	impl->flags = flags;
	impl->bufs = impl->inline_bufs;
	impl->cap_bufs = AVA_KCALL_INLINE_BUFS;
	impl->regs = impl->inline_regs;
	impl->cap_regs = AVA_KCALL_INLINE_REGS;
	INIT_LIST_HEAD(&impl->waiter.node);
	c->impl = impl;
	return 0;
}
EXPORT_SYMBOL_GPL(ava_kcall_begin);

/**
 * ava_kcall_put_buffer() - describe a buffer argument
 * @c: the call
 * @d: its descriptor in the argument block
 * @ptr: kernel memory, or NULL (sent as absent)
 * @count: elements
 * @elem_size: bytes per element
 * @dir: AVA_BUF_IN, AVA_BUF_OUT or both (0: absent)
 *
 * IN bytes are referenced until ava_kcall_invoke() copies them into the ring.
 *
 * Return: 0, -EINVAL, -E2BIG or -ENOMEM.
 */
int ava_kcall_put_buffer(struct ava_kcall *c, struct ava_buf_desc *d, const void *ptr,
			 ava_u64 count, ava_u64 elem_size, ava_u32 dir)
{
	struct ava_kcall_impl *impl = c->impl;
	u64 bytes, span;

	if (c->failed)
		return c->failed;
	if (!d)
		return ava_kcall_fail(c, -EINVAL);
	memset(d, 0, sizeof(*d));
	if (impl->invoked || (dir & ~(AVA_BUF_IN | AVA_BUF_OUT)))
		return ava_kcall_fail(c, -EINVAL);
	if (check_mul_overflow(count, elem_size, &bytes))
		return ava_kcall_fail(c, -E2BIG);
	if (!ptr || !dir)
		return 0;
	if (!(dir & AVA_BUF_IN)) {
		d->length = bytes;
		d->flags = AVA_BUF_PRESENT | AVA_BUF_OUT;
		return 0;
	}
	if (bytes > AVA_KCONN_MAX_MSG || impl->payload_len > AVA_KCONN_MAX_MSG)
		return ava_kcall_fail(c, -E2BIG);
	span = AVA_PAYLOAD_SPAN(bytes);
	if (impl->nbufs == impl->cap_bufs) {
		struct ava_kseg *bigger = ava_kcall_grow(impl->bufs, impl->inline_bufs,
							 &impl->cap_bufs, sizeof(*bigger));

		if (!bigger)
			return ava_kcall_fail(c, -ENOMEM);
		impl->bufs = bigger;
	}
	impl->bufs[impl->nbufs].ptr = ptr;
	impl->bufs[impl->nbufs].len = bytes;
	impl->nbufs++;
	d->offset = impl->payload_len;
	d->length = bytes;
	d->flags = AVA_BUF_PRESENT | AVA_BUF_IN | (dir & AVA_BUF_OUT);
	impl->payload_len += span;
	return 0;
}
EXPORT_SYMBOL_GPL(ava_kcall_put_buffer);

/**
 * ava_kcall_callback() - register a kernel callback for this call
 * @c: the call
 * @fn: the callback (NULL: none)
 * @userdata: passed back to it
 * @lifetime: AVA_LIFETIME_CALL/COUPLED/MANUAL/STATIC (ava_shim.h's values)
 * @coupled_handle: for COUPLED: the handle whose release drops it
 *
 * The callback runs on the connection's callback kthread.
 *
 * Return: the registration's wire id, 0 when fn is NULL or on failure (the
 * call is then failed).
 */
ava_u64 ava_kcall_callback(struct ava_kcall *c, void (*fn)(void), void *userdata,
			   ava_u32 lifetime, ava_u64 coupled_handle)
{
	struct ava_kcall_impl *impl = c->impl;
	struct ava_kcb *cb;
	u32 id;

	if (c->failed || !fn)
		return 0;
	if (impl->invoked || lifetime > AVA_LIFETIME_STATIC) {
		ava_kcall_fail(c, -EINVAL);
		return 0;
	}
	if (impl->nregs == impl->cap_regs) {
		struct ava_kreg *bigger = ava_kcall_grow(impl->regs, impl->inline_regs,
							 &impl->cap_regs, sizeof(*bigger));

		if (!bigger) {
			ava_kcall_fail(c, -ENOMEM);
			return 0;
		}
		impl->regs = bigger;
	}
	cb = kmalloc(sizeof(*cb), GFP_KERNEL);
	if (!cb) {
		ava_kcall_fail(c, -ENOMEM);
		return 0;
	}
	cb->fn = fn;
	cb->userdata = userdata;
	cb->lifetime = lifetime;
	cb->coupled = lifetime == AVA_LIFETIME_COUPLED ? coupled_handle : 0;
	if (xa_alloc(&impl->conn->callbacks, &id, cb, xa_limit_31b, GFP_KERNEL)) {
		kfree(cb);
		ava_kcall_fail(c, -ENOMEM);
		return 0;
	}
	impl->regs[impl->nregs].id = id;
	impl->regs[impl->nregs].lifetime = lifetime;
	impl->nregs++;
	return id;
}
EXPORT_SYMBOL_GPL(ava_kcall_callback);

static bool ava_kcall_status_known(s32 status)
{
	return status <= AVA_E_PROTO && status >= AVA_E_STATE;
}

/* Checks the reply like shim/reply.cpp's check_reply(). */
static int ava_kcall_check_reply(struct ava_kcall *c, u32 reply_len, const void **reply)
{
	struct ava_kcall_impl *impl = c->impl;
	const u8 *msg = impl->waiter.msg;
	struct ava_reply_common common;
	struct ava_msg_hdr hdr;

	if (impl->waiter.len < sizeof(hdr))
		return -EPROTO;
	memcpy(&hdr, msg, sizeof(hdr));
	if (hdr.total_len != impl->waiter.len || hdr.kind != AVA_MSG_REPLY ||
	    hdr.call_id != impl->waiter.call_id || hdr.spec_id != impl->conn->spec->id ||
	    hdr.func_id != c->func_id || hdr.reserved ||
	    hdr.args_len > hdr.total_len - sizeof(hdr))
		return -EPROTO;
	if (hdr.args_len >= sizeof(common)) {
		memcpy(&common, msg + sizeof(hdr), sizeof(common));
		if (common.async_error_class) {
			impl->async_error.tid = current->pid;
			impl->async_error.value = common.async_error_value;
			impl->async_error.ret_class = common.async_error_class;
			impl->async_error.func_id = common.async_error_func;
		}
	}
	if (hdr.status != AVA_OK) {
		if (!ava_kcall_status_known(hdr.status))
			return -EPROTO;
		c->status = hdr.status;
		return -EREMOTEIO;
	}
	if (hdr.args_len < sizeof(common) + (u64)reply_len)
		return -EPROTO;
	impl->delivered = true;
	impl->have_reply = true;
	impl->payload = msg + sizeof(hdr) + hdr.args_len;
	impl->reply_payload_len = hdr.total_len - sizeof(hdr) - hdr.args_len;
	if (reply)
		*reply = msg + sizeof(hdr) + sizeof(common);
	return 0;
}

/* Sleeps (killable, bounded) for the reply; on failure the waiter is abandoned. */
static int ava_kcall_wait(struct ava_kcall_impl *impl)
{
	struct ava_kconn *conn = impl->conn;
	long left = wait_for_completion_killable_timeout(&impl->waiter.done, conn->timeout);

	if (left <= 0) {
		ava_kconn_abandon(conn, &impl->waiter);
		/* the reader may have completed it before we took the lock */
		if (!completion_done(&impl->waiter.done))
			return left < 0 ? -EINTR : -ETIMEDOUT;
	}
	if (impl->waiter.error)
		return impl->waiter.error;
	return impl->waiter.msg ? 0 : -EPIPE;
}

/**
 * ava_kcall_invoke() - send the call; for a sync call, wait for its reply
 * @c: the call
 * @args: the argument block
 * @args_len: its size
 * @reply: for a sync call, set to the reply's function part (NULL for async)
 * @reply_len: the size the stub expects there (checked)
 *
 * Return: 0, -ENODEV, -EHOSTDOWN, -EPIPE, -ETIMEDOUT, -EINTR, -ENOMEM,
 * -EINVAL, -E2BIG, -EPROTO or -EREMOTEIO (c->status holds the AVA_E_*).
 */
int ava_kcall_invoke(struct ava_kcall *c, const void *args, ava_u32 args_len,
		     const void **reply, ava_u32 reply_len)
{
	struct ava_kcall_impl *impl = c->impl;
	struct ava_kconn *conn;
	struct ava_msg_hdr hdr;
	struct ava_kseg *segs;
	unsigned int i, n = 0;
	bool sync;
	int ret;

	if (reply)
		*reply = NULL;
	if (c->failed)
		return c->failed;
	conn = impl->conn;
	if (impl->invoked || (!args && args_len))
		return ava_kcall_fail(c, -EINVAL);
	impl->invoked = true;
	if (conn->spec->cmds) {
		int status = ava_kcall_police(conn->spec->cmds, c->func_id, impl->flags, args,
					      args_len);

		if (status)
			return ava_kcall_refuse(c, conn, status);
	}
	if (args_len > AVA_KCONN_MAX_MSG - sizeof(hdr) ||
	    impl->payload_len > AVA_KCONN_MAX_MSG - sizeof(hdr) - args_len)
		return ava_kcall_fail(c, -E2BIG);
	sync = impl->flags & AVA_F_SYNC;

	ava_kconn_fill_hdr(conn, &hdr, AVA_MSG_CALL);
	hdr.func_id = c->func_id;
	hdr.total_len = sizeof(hdr) + args_len + impl->payload_len;
	hdr.seq = atomic64_inc_return(&conn->next_seq);
	hdr.call_id = atomic64_inc_return(&conn->next_call_id);
	hdr.args_len = args_len;
	hdr.flags = impl->flags;

	segs = kmalloc_array(2 + 2 * impl->nbufs, sizeof(*segs), GFP_KERNEL);
	if (!segs)
		return ava_kcall_fail(c, -ENOMEM);
	segs[n++] = (struct ava_kseg){ &hdr, sizeof(hdr) };
	if (args_len)
		segs[n++] = (struct ava_kseg){ args, args_len };
	for (i = 0; i < impl->nbufs; i++) {
		segs[n++] = impl->bufs[i];
		/* a NULL piece is zeros: the guard byte and the padding to 8 */
		segs[n++] = (struct ava_kseg){ NULL,
			AVA_PAYLOAD_SPAN(impl->bufs[i].len) - impl->bufs[i].len };
	}

	if (sync) {
		impl->waiter.call_id = hdr.call_id;
		ret = ava_kconn_add_waiter(conn, &impl->waiter);
		if (ret)
			goto out;
	}
	ret = ava_kconn_send(conn, segs, n, hdr.total_len);
	if (ret) {
		if (sync)
			ava_kconn_abandon(conn, &impl->waiter);
		goto out;
	}
	if (!sync) {
		impl->delivered = true;
		goto out;
	}
	ret = ava_kcall_wait(impl);
	if (!ret)
		ret = ava_kcall_check_reply(c, reply_len, reply);
out:
	kfree(segs);
	return ret ? ava_kcall_fail(c, ret) : 0;
}
EXPORT_SYMBOL_GPL(ava_kcall_invoke);

/**
 * ava_kcall_get_buffer() - copy an OUT buffer of the reply
 * @c: the call, after a successful sync ava_kcall_invoke()
 * @d: the buffer's descriptor in the reply
 * @dst: where it goes
 * @capacity: bytes at dst
 *
 * Return: 0, -EINVAL (no reply) or -EPROTO (the descriptor is out of bounds).
 */
int ava_kcall_get_buffer(struct ava_kcall *c, const struct ava_buf_desc *d, void *dst,
			 ava_u64 capacity)
{
	struct ava_kcall_impl *impl = c->impl;
	struct ava_buf_desc b;

	if (c->failed)
		return c->failed;
	if (!impl->have_reply || !d)
		return ava_kcall_fail(c, -EINVAL);
	memcpy(&b, d, sizeof(b));
	if ((b.flags & ~AVA_BUF_ALL) || b.reserved)
		return ava_kcall_fail(c, -EPROTO);
	if (!(b.flags & AVA_BUF_PRESENT))
		return b.length || b.flags ? ava_kcall_fail(c, -EPROTO) : 0;
	if (b.offset > impl->reply_payload_len || b.length > impl->reply_payload_len - b.offset ||
	    b.length > capacity || (b.length && !dst))
		return ava_kcall_fail(c, -EPROTO);
	if (b.length)
		memcpy(dst, impl->payload + b.offset, b.length);
	return 0;
}
EXPORT_SYMBOL_GPL(ava_kcall_get_buffer);

/**
 * ava_kcall_stash_async_error() - keep an unconsumed async error for its thread
 * @conn: the connection
 * @e: the error; ignored when its thread already has one waiting
 */
void ava_kcall_stash_async_error(struct ava_kconn *conn, const struct ava_kasync_error *e)
{
	unsigned int i;

	spin_lock(&conn->lock);
	for (i = 0; i < AVA_KCONN_ASYNC_ERRORS; i++)
		if (conn->async_errors[i].tid == e->tid)
			goto out;
	conn->async_errors[conn->async_next] = *e;
	conn->async_next = (conn->async_next + 1) % AVA_KCONN_ASYNC_ERRORS;
out:
	spin_unlock(&conn->lock);
}

/**
 * ava_kcall_take_async_error() - the failure of an earlier async call
 * @c: the call (after its invoke)
 * @ret_class: the cava return class of the stub's function
 * @value: set to the failed async call's return value
 *
 * An error older than this reply (kept for this thread) comes first.
 *
 * Return: 1 when one of ret_class was taken, else 0.
 */
int ava_kcall_take_async_error(struct ava_kcall *c, ava_u32 ret_class, ava_s64 *value)
{
	struct ava_kcall_impl *impl = c->impl;
	struct ava_kconn *conn;
	unsigned int i;

	if (!impl || !ret_class || !value)
		return 0;
	conn = impl->conn;
	spin_lock(&conn->lock);
	for (i = 0; i < AVA_KCONN_ASYNC_ERRORS; i++) {
		struct ava_kasync_error *e = &conn->async_errors[i];

		if (e->tid == current->pid && e->ret_class == ret_class) {
			*value = e->value;
			e->tid = 0;
			spin_unlock(&conn->lock);
			return 1;
		}
	}
	spin_unlock(&conn->lock);
	if (impl->async_error.tid && impl->async_error.ret_class == ret_class) {
		*value = impl->async_error.value;
		impl->async_error.tid = 0;
		return 1;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(ava_kcall_take_async_error);

static void ava_kcall_unregister(struct ava_kconn *conn, u32 id)
{
	kfree(xa_erase(&conn->callbacks, id));
}

/**
 * ava_kcall_end() - release the reply and the call's registrations
 * @c: the call (also after a failed begin)
 */
void ava_kcall_end(struct ava_kcall *c)
{
	struct ava_kcall_impl *impl = c->impl;
	unsigned int i;

	if (!impl)
		return;
	for (i = 0; i < impl->nregs; i++) {
		/* the worker never saw the registrations of a call it did not accept */
		if (impl->regs[i].lifetime == AVA_LIFETIME_CALL || !impl->delivered)
			ava_kcall_unregister(impl->conn, impl->regs[i].id);
	}
	if (impl->async_error.tid)
		ava_kcall_stash_async_error(impl->conn, &impl->async_error);
	kvfree(impl->waiter.msg);
	if (impl->bufs != impl->inline_bufs)
		kfree(impl->bufs);
	if (impl->regs != impl->inline_regs)
		kfree(impl->regs);
	kfree(impl);
	c->impl = NULL;
}
EXPORT_SYMBOL_GPL(ava_kcall_end);

/**
 * ava_kcallback_buffer() - an IN buffer of a CALLBACK payload, checked
 * @d: its descriptor in the callback's argument block
 * @payload: the payload
 * @payload_len: its size
 * @ptr: set to the bytes (NULL when absent); they end with a zero guard byte
 *
 * Return: 0 or -EPROTO.
 */
int ava_kcallback_buffer(const struct ava_buf_desc *d, const ava_u8 *payload, ava_u64 payload_len,
			 const void **ptr)
{
	struct ava_buf_desc b;

	*ptr = NULL;
	memcpy(&b, d, sizeof(b));
	if ((b.flags & ~AVA_BUF_ALL) || b.reserved)
		return -EPROTO;
	if (!(b.flags & AVA_BUF_PRESENT))
		return b.length || b.flags ? -EPROTO : 0;
	if (!(b.flags & AVA_BUF_IN) || !payload || b.offset >= payload_len ||
	    b.length >= payload_len - b.offset || payload[b.offset + b.length])
		return -EPROTO;
	*ptr = payload + b.offset;
	return 0;
}
EXPORT_SYMBOL_GPL(ava_kcallback_buffer);

/**
 * ava_kcall_lookup_callback() - copy a registration for the callback thread
 * @conn: the connection
 * @id: the wire id the CALLBACK names
 * @out: the copy
 *
 * Return: whether it is registered.
 */
bool ava_kcall_lookup_callback(struct ava_kconn *conn, u64 id, struct ava_kcb *out)
{
	struct ava_kcb *cb;
	bool found = false;

	if (!id || id > U32_MAX)
		return false;
	xa_lock(&conn->callbacks);
	cb = xa_load(&conn->callbacks, (unsigned long)id);
	if (cb) {
		*out = *cb;
		found = true;
	}
	xa_unlock(&conn->callbacks);
	return found;
}

/**
 * ava_kcall_drop_callbacks() - free every registration (connection closing)
 * @conn: the connection, with its threads stopped
 */
void ava_kcall_drop_callbacks(struct ava_kconn *conn)
{
	struct ava_kcb *cb;
	unsigned long id;

	xa_for_each(&conn->callbacks, id, cb)
		kfree(xa_erase(&conn->callbacks, id));
}

/**
 * ava_kconn_handle_released() - drop the callbacks coupled to a handle
 * @conn: the connection
 * @handle: the handle the API just deallocated
 */
void ava_kconn_handle_released(struct ava_kconn *conn, ava_u64 handle)
{
	struct ava_kcb *cb;
	unsigned long id;

	if (!conn || !handle)
		return;
	/* under the lock: ava_kcall_end() of another thread may free entries meanwhile */
	xa_lock(&conn->callbacks);
	xa_for_each(&conn->callbacks, id, cb) {
		if (cb->lifetime == AVA_LIFETIME_COUPLED && cb->coupled == handle) {
			__xa_erase(&conn->callbacks, id);
			kfree(cb);
		}
	}
	xa_unlock(&conn->callbacks);
}
EXPORT_SYMBOL_GPL(ava_kconn_handle_released);
