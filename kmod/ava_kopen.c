// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel connection (include/ava/kcall.h): a slot claimed the way
 * /dev/ava's open() claims one, HELLO on it, a reader kthread that consumes
 * the reply ring (replies to their callers, CALLBACKs to the callback
 * kthread) and the callback kthread; close says GOODBYE and releases the
 * slot. See ava_kcall_priv.h for the threads and locks.
 */
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "ava_kcall_priv.h"

#define AVA_KCONN_DEFAULT_TIMEOUT_MS 60000u

static char *ava_kcarrier = "auto";
module_param_named(kcarrier, ava_kcarrier, charp, 0644);
MODULE_PARM_DESC(kcarrier, "carrier of new kernel connections: auto (an ivshmem device with its "
			   "host up, else a registered netlink worker), ivshmem or netlink");

/* A message received from the worker and queued for the callback thread. */
struct ava_kcb_msg {
	struct list_head node;
	void *msg;
	u64 len;
};

/* ---- the reader and callback threads ---- */

static int ava_kconn_deliver_reply(struct ava_kconn *conn, void *msg, u64 len)
{
	u64 call_id = ((const struct ava_msg_hdr *)msg)->call_id;
	struct ava_kwaiter *w;
	unsigned int i;

	spin_lock(&conn->lock);
	list_for_each_entry(w, &conn->pending, node) {
		if (w->call_id != call_id)
			continue;
		list_del_init(&w->node);
		w->msg = msg;
		w->len = len;
		/* under the lock: a caller giving up meanwhile sees the waiter done */
		complete(&w->done);
		spin_unlock(&conn->lock);
		return 0;
	}
	for (i = 0; i < AVA_KCONN_ABANDONED; i++) {
		if (call_id && conn->abandoned[i] == call_id) {
			conn->abandoned[i] = 0;
			spin_unlock(&conn->lock);
			kvfree(msg);
			return 0;
		}
	}
	spin_unlock(&conn->lock);
	kvfree(msg);
	return -EPROTO;
}

static int ava_kconn_queue_callback(struct ava_kconn *conn, void *msg, u64 len)
{
	struct ava_kcb_msg *m = kmalloc(sizeof(*m), GFP_KERNEL);

	if (!m) {
		kvfree(msg);
		return -ENOMEM;
	}
	m->msg = msg;
	m->len = len;
	spin_lock(&conn->lock);
	if (conn->cb_count >= AVA_KCONN_MAX_CALLBACKS ||
	    len > AVA_KCONN_MAX_CALLBACK_BYTES - conn->cb_bytes) {
		spin_unlock(&conn->lock);
		kvfree(msg);
		kfree(m);
		return -ENOSPC;
	}
	list_add_tail(&m->node, &conn->cb_queue);
	conn->cb_count++;
	conn->cb_bytes += len;
	spin_unlock(&conn->lock);
	wake_up(&conn->cb_wq);
	return 0;
}

/**
 * ava_kconn_route() - hand a received message to its waiter or the callback thread
 * @conn: the connection
 * @msg: the message (kvmalloc'ed, its header checked); consumed
 * @len: its length
 *
 * A HELLO_ACK goes to the opener's waiter (call id 0) of a netlink
 * connection; on a slot, HELLO is answered before anything routes.
 *
 * Return: 0 or -errno (the connection must then fail).
 */
int ava_kconn_route(struct ava_kconn *conn, void *msg, u64 len)
{
	const struct ava_msg_hdr *hdr = msg;

	switch (hdr->kind) {
	case AVA_MSG_REPLY:
	case AVA_MSG_HELLO_ACK:
		return ava_kconn_deliver_reply(conn, msg, len);
	case AVA_MSG_CALLBACK:
		return ava_kconn_queue_callback(conn, msg, len);
	default:
		kvfree(msg);
		return -EPROTO;
	}
}

static void ava_kconn_idle_until_stopped(void)
{
	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (kthread_should_stop())
			break;
		schedule();
	}
	__set_current_state(TASK_RUNNING);
}

static int ava_kconn_reader(void *data)
{
	struct ava_kconn *conn = data;
	const char *what;
	void *msg;
	u64 len;
	int ret;

	for (;;) {
		down_read(&conn->dev->io);
		ret = ava_kconn_recv(conn, &msg, &len, true, 0);
		up_read(&conn->dev->io);
		if (ret == -ESHUTDOWN)
			return 0;
		if (!ret) {
			what = ((const struct ava_msg_hdr *)msg)->kind == AVA_MSG_GOODBYE ?
				"the worker said goodbye" : "an unexpected message";
			ret = ava_kconn_route(conn, msg, len);
		} else {
			what = "the slot failed";
		}
		if (ret) {
			if (ret == -EPROTO)
				pr_warn_ratelimited("ava: kernel connection for %s: %s\n",
						    conn->spec->name, what);
			ava_kconn_fail(conn, ret == -ETIMEDOUT || ret == -EPROTO ? -EPIPE : ret);
			break;
		}
	}
	ava_kconn_idle_until_stopped();
	return 0;
}

static void ava_kconn_answer_callback(struct ava_kconn *conn, const struct ava_msg_hdr *req)
{
	struct ava_msg_hdr done;
	struct ava_kseg seg = { &done, sizeof(done) };

	ava_kconn_fill_hdr(conn, &done, AVA_MSG_CALLBACK_DONE);
	done.func_id = req->func_id;
	done.call_id = req->call_id;
	done.seq = req->seq;
	ava_kconn_send(conn, &seg, 1, sizeof(done));
}

static void ava_kconn_run_callback(struct ava_kconn *conn, const void *msg, u64 len)
{
	const struct ava_msg_hdr *hdr = msg;
	const u8 *args = (const u8 *)msg + sizeof(*hdr);
	ava_kcallback_fn dispatch = conn->spec->callback_dispatch;
	const char *problem = NULL;
	struct ava_kcb cb;

	if (hdr->args_len > len - sizeof(*hdr))
		problem = "its argument block exceeds the message";
	else if (hdr->spec_id != conn->spec->id)
		problem = "it names another spec";
	else if (hdr->reserved)
		problem = "its header has non-zero reserved bits";
	else if (!dispatch)
		problem = "this spec declares no callbacks";
	else if (!ava_kcall_lookup_callback(conn, hdr->call_id, &cb))
		problem = "its registration is unknown";
	else if (dispatch(hdr->func_id, cb.fn, cb.userdata, args, hdr->args_len,
			  args + hdr->args_len, len - sizeof(*hdr) - hdr->args_len))
		problem = "it is malformed";
	if (problem)
		pr_warn_ratelimited("ava: ignored a %s callback (declaration %u): %s\n",
				    conn->spec->name, hdr->func_id, problem);
	ava_kconn_answer_callback(conn, hdr);
}

static int ava_kconn_callbacks(void *data)
{
	struct ava_kconn *conn = data;
	struct ava_kcb_msg *m;

	for (;;) {
		wait_event_interruptible(conn->cb_wq, kthread_should_stop() ||
					 !list_empty_careful(&conn->cb_queue));
		if (kthread_should_stop())
			return 0;
		spin_lock(&conn->lock);
		m = list_first_entry_or_null(&conn->cb_queue, struct ava_kcb_msg, node);
		if (m) {
			list_del(&m->node);
			conn->cb_count--;
			conn->cb_bytes -= m->len;
		}
		spin_unlock(&conn->lock);
		if (!m)
			continue;
		ava_kconn_run_callback(conn, m->msg, m->len);
		kvfree(m->msg);
		kfree(m);
	}
}

/* ---- open and close ---- */

static int ava_kconn_check_ack(struct ava_kconn *conn, void *msg, u64 len);

/* The caller checked the spec name's length. */
static void ava_kconn_fill_hello(struct ava_kconn *conn, struct ava_msg_hdr *hdr,
				 struct ava_hello *hello)
{
	memset(hello, 0, sizeof(*hello));
	ava_hello_fill(hello, conn->spec->id, conn->spec->hash, conn->spec->name, current->pid,
		       "ava.ko");
	hello->flags = AVA_HELLO_KERNEL;
	ava_kconn_fill_hdr(conn, hdr, AVA_MSG_HELLO);
	hdr->total_len = sizeof(*hdr) + sizeof(*hello);
	hdr->args_len = sizeof(*hello);
}

static int ava_kconn_hello(struct ava_kconn *conn)
{
	struct ava_msg_hdr hdr;
	struct ava_hello hello;
	struct ava_kseg segs[2] = { { &hdr, sizeof(hdr) }, { &hello, sizeof(hello) } };
	void *msg = NULL;
	u64 len;
	int ret;

	ava_kconn_fill_hello(conn, &hdr, &hello);
	ret = ava_kconn_send(conn, segs, 2, hdr.total_len);
	if (ret)
		return ret;

	down_read(&conn->dev->io);
	ret = ava_kconn_recv(conn, &msg, &len, false, jiffies + conn->timeout);
	up_read(&conn->dev->io);
	if (ret)
		return ret;
	return ava_kconn_check_ack(conn, msg, len);
}

/* On the netlink carrier: the HELLO_ACK arrives in a handler, for call id 0. */
static int ava_kconn_hello_nl(struct ava_kconn *conn)
{
	struct ava_msg_hdr hdr;
	struct ava_hello hello;
	struct ava_kseg segs[2] = { { &hdr, sizeof(hdr) }, { &hello, sizeof(hello) } };
	struct ava_kwaiter w = { .call_id = 0 };
	long left;
	int ret;

	ava_kconn_fill_hello(conn, &hdr, &hello);
	ret = ava_kconn_add_waiter(conn, &w);
	if (ret)
		return ret;
	ret = ava_kconn_send(conn, segs, 2, hdr.total_len);
	if (ret) {
		ava_kconn_abandon(conn, &w);
		return ret;
	}
	left = wait_for_completion_killable_timeout(&w.done, conn->timeout);
	if (left <= 0) {
		ava_kconn_abandon(conn, &w);
		if (!completion_done(&w.done))
			return left < 0 ? -EINTR : -ETIMEDOUT;
	}
	if (w.error)
		return w.error;
	if (!w.msg)
		return -EPIPE;
	if (w.len < sizeof(struct ava_msg_hdr)) {
		kvfree(w.msg);
		return -EPROTO;
	}
	return ava_kconn_check_ack(conn, w.msg, w.len);
}

/*
 * Consumes msg (len bytes, at least a header). A worker of protocol 2 on
 * answers with struct ava_hello_ack; a bare status is a protocol-1 worker.
 */
static int ava_kconn_check_ack(struct ava_kconn *conn, void *msg, u64 len)
{
	const struct ava_msg_hdr *ack = msg;
	struct ava_hello_ack block;
	bool has_block;
	int ret = 0;

	has_block = ack->args_len >= sizeof(block) && ack->args_len <= len - sizeof(*ack);
	if (has_block)
		memcpy(&block, (const u8 *)msg + sizeof(*ack), sizeof(block));
	if (ack->kind != AVA_MSG_HELLO_ACK) {
		ret = -EPROTO;
	} else if (!has_block || ack->status == AVA_E_VERSION) {
		ret = -EPROTONOSUPPORT;
		if (has_block)
			pr_warn("ava: no protocol version in common with the worker for %s: ava.ko speaks %u..%u, the worker %u..%u\n",
				conn->spec->name, AVA_PROTO_MIN, AVA_PROTO_MAX, block.proto_min,
				block.proto_max);
		else
			pr_warn("ava: the worker for %s speaks protocol 1; ava.ko speaks %u..%u\n",
				conn->spec->name, AVA_PROTO_MIN, AVA_PROTO_MAX);
		kvfree(msg);
		return ret;
	} else if (ack->status == AVA_E_SPEC || ack->status == AVA_E_UNSUPPORTED) {
		ret = -EREMOTEIO;
	} else if (ack->status == AVA_E_ACCESS) {
		ret = -EACCES;
	} else if (ack->status) {
		ret = -EPROTO;
	} else if (block.proto < AVA_PROTO_MIN || block.proto > AVA_PROTO_MAX) {
		ret = -EPROTO;
	}
	if (ret)
		pr_warn("ava: the worker refused kernel connection for %s (kind %u, status %d)\n",
			conn->spec->name, ack->kind, ack->status);
	kvfree(msg);
	return ret;
}

static struct ava_dev *ava_kconn_get_dev(void)
{
	struct ava_dev *dev;

	mutex_lock(&ava_global_lock);
	dev = ava_global_dev;
	if (dev)
		kref_get(&dev->kref);
	mutex_unlock(&ava_global_lock);
	return dev;
}

static void ava_kconn_release_slot(struct ava_kconn *conn)
{
	struct ava_dev *dev = conn->dev;

	down_read(&dev->io);
	mutex_lock(&dev->lock);
	list_del_init(&conn->dev_node);
	ava_slot_unclaim(conn->slot);
	mutex_unlock(&dev->lock);
	up_read(&dev->io);
}

/* Lists a connection that claimed a slot, so that remove() fails it; -ENODEV once removed. */
static int ava_kconn_list(struct ava_kconn *conn)
{
	struct ava_dev *dev = conn->dev;
	int ret = 0;

	mutex_lock(&dev->lock);
	if (dev->gone)
		ret = -ENODEV;
	else
		list_add(&conn->dev_node, &dev->kconns);
	mutex_unlock(&dev->lock);
	return ret;
}

/**
 * ava_kconn_dev_gone() - fail every kernel connection of a removed device
 * @dev: the device; the caller (remove()) holds dev->lock and has set dev->gone
 *
 * Each connection's callers waiting for a reply get -ENODEV at once, and so
 * does every later call; the reader and callback threads stop touching the
 * slot, which they reach only after a look at dev->gone under dev->io.
 * Their owners still close them (ava_kconn_close()), which no longer
 * touches the device's memory.
 */
void ava_kconn_dev_gone(struct ava_dev *dev)
{
	struct ava_kconn *conn;

	lockdep_assert_held(&dev->lock);
	list_for_each_entry(conn, &dev->kconns, dev_node)
		ava_kconn_fail(conn, -ENODEV);
}

static void ava_kconn_free(struct ava_kconn *conn)
{
	struct ava_kcb_msg *m, *tmp;

	list_for_each_entry_safe(m, tmp, &conn->cb_queue, node) {
		list_del(&m->node);
		kvfree(m->msg);
		kfree(m);
	}
	ava_kcall_drop_callbacks(conn);
	xa_destroy(&conn->callbacks);
	if (conn->dev)
		ava_dev_put(conn->dev);
	kfree(conn);
}

/* The carrier's part of opening; on failure the caller frees conn. */
static int ava_kconn_open_nl(struct ava_kconn *conn)
{
	int ret = ava_knl_attach(conn);

	if (ret)
		return ret;
	ret = ava_kconn_hello_nl(conn);
	if (ret)
		goto err_detach;
	conn->cb_thread = kthread_run(ava_kconn_callbacks, conn, "ava_kcb/nl");
	if (IS_ERR(conn->cb_thread)) {
		ret = PTR_ERR(conn->cb_thread);
		conn->cb_thread = NULL;
		goto err_detach;
	}
	return 0;

err_detach:
	ava_kconn_fail(conn, -EPIPE);
	ava_knl_detach(conn);
	return ret;
}

/* auto: the device when its host is up, else a netlink worker, else the device's error. */
static bool ava_kconn_pick_netlink(struct ava_dev *dev)
{
	bool host_up = false;
	bool netlink, ivshmem;

	/* the string may be replaced through sysfs meanwhile */
	kernel_param_lock(THIS_MODULE);
	netlink = sysfs_streq(ava_kcarrier, "netlink");
	ivshmem = sysfs_streq(ava_kcarrier, "ivshmem");
	kernel_param_unlock(THIS_MODULE);
	if (netlink)
		return true;
	if (ivshmem)
		return false;
	if (dev) {
		/* under io: the shared memory stays mapped while we look */
		down_read(&dev->io);
		host_up = !READ_ONCE(dev->gone) && ava_dev_host_state(dev) == AVA_HOST_UP;
		up_read(&dev->io);
	}
	if (host_up)
		return false;
	return ava_knl_worker_present() || !dev;
}

/**
 * ava_kconn_open() - open a kernel connection and say HELLO for a spec
 * @spec: the generated module's spec constant
 * @timeout_ms: bound of every later wait for a reply (0: 60 s)
 * @out: the connection
 *
 * Process context; sleeps. The carrier (module parameter kcarrier, default
 * auto) is a kernel-owned slot of the ivshmem device when one is bound and
 * its host is up: claimed as /dev/ava's open() claims one (avactl shows it
 * held by "kernel"), and `ava vmhost` starts a worker for it as for any
 * slot. Otherwise it is the netlink carrier to the worker registered on
 * this kernel (`ava worker --netlink`, include/ava/knetlink.h).
 *
 * Return: 0, -ENODEV (no device and no worker), -EBUSY, -EHOSTDOWN, -EPIPE,
 * -ETIMEDOUT, -EINTR, -ENOMEM, -EINVAL, -EPROTO or -EREMOTEIO (the worker
 * refused the spec).
 */
int ava_kconn_open(const struct ava_kspec *spec, unsigned int timeout_ms, struct ava_kconn **out)
{
	struct ava_kconn *conn;
	struct ava_dev *dev;
	bool netlink;
	u8 *base;
	int ret;

	*out = NULL;
	if (!spec || !spec->name || strlen(spec->name) >= AVA_SPEC_NAME_MAX)
		return -EINVAL;
	dev = ava_kconn_get_dev();
	netlink = ava_kconn_pick_netlink(dev);
	if (netlink && dev) {
		ava_dev_put(dev);
		dev = NULL;
	}
	if (!dev && !netlink)
		return -ENODEV;
	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn) {
		if (dev)
			ava_dev_put(dev);
		return -ENOMEM;
	}
	conn->spec = spec;
	conn->dev = dev;
	conn->timeout = msecs_to_jiffies(timeout_ms ? timeout_ms : AVA_KCONN_DEFAULT_TIMEOUT_MS);
	mutex_init(&conn->send_lock);
	spin_lock_init(&conn->lock);
	INIT_LIST_HEAD(&conn->pending);
	INIT_LIST_HEAD(&conn->cb_queue);
	INIT_LIST_HEAD(&conn->dev_node);
	init_waitqueue_head(&conn->cb_wq);
	atomic64_set(&conn->next_call_id, 0);
	atomic64_set(&conn->next_seq, 0);
	xa_init_flags(&conn->callbacks, XA_FLAGS_ALLOC1);
	if (netlink) {
		ret = ava_kconn_open_nl(conn);
		if (ret) {
			ava_kconn_free(conn);
			return ret;
		}
		*out = conn;
		return 0;
	}

	down_read(&dev->io);
	ret = ava_slot_claim_free(dev, 0, true, &conn->slot);
	up_read(&dev->io);
	if (ret) {
		ava_kconn_free(conn);
		return ret;
	}
	ret = ava_kconn_list(conn);
	if (ret)
		goto err_release;
	/* the layout comes from ava.ko's validated copy, never from the region header */
	conn->rh = ava_dev_region(dev, conn->slot->index);
	base = (u8 *)conn->rh;
	ava_kring_init(&conn->tx.v, &conn->rh->cmd, base + AVA_REGION_HDR_SIZE, dev->hdr.cmd_size);
	ava_kring_init(&conn->rx.v, &conn->rh->reply,
		       base + AVA_REGION_HDR_SIZE + dev->hdr.cmd_size, dev->hdr.reply_size);

	ret = ava_kconn_hello(conn);
	if (ret)
		goto err_release;
	conn->cb_thread = kthread_run(ava_kconn_callbacks, conn, "ava_kcb/%u", conn->slot->index);
	if (IS_ERR(conn->cb_thread)) {
		ret = PTR_ERR(conn->cb_thread);
		conn->cb_thread = NULL;
		goto err_release;
	}
	conn->reader = kthread_run(ava_kconn_reader, conn, "ava_krd/%u", conn->slot->index);
	if (IS_ERR(conn->reader)) {
		ret = PTR_ERR(conn->reader);
		conn->reader = NULL;
		goto err_stop_cb;
	}
	*out = conn;
	return 0;

err_stop_cb:
	kthread_stop(conn->cb_thread);
err_release:
	ava_kconn_release_slot(conn);
	ava_kconn_free(conn);
	return ret;
}
EXPORT_SYMBOL_GPL(ava_kconn_open);

/**
 * ava_kconn_close() - GOODBYE, release the slot and free the connection
 * @conn: the connection (NULL: nothing)
 *
 * A callback in progress finishes first (it may still make calls) and
 * answers CALLBACK_DONE before GOODBYE. The host then ends the slot's
 * worker, which frees everything the connection created, and shows the slot
 * IDLE again; a netlink worker ends the connection's session. No call may
 * be in progress or start on conn.
 */
void ava_kconn_close(struct ava_kconn *conn)
{
	struct ava_msg_hdr bye;
	struct ava_kseg seg = { &bye, sizeof(bye) };

	if (!conn)
		return;
	kthread_stop(conn->cb_thread);
	ava_kconn_fill_hdr(conn, &bye, AVA_MSG_GOODBYE);
	ava_kconn_send(conn, &seg, 1, sizeof(bye));
	if (conn->reader)
		kthread_stop(conn->reader);
	ava_kconn_fail(conn, -EPIPE);
	if (conn->nl)
		ava_knl_detach(conn);
	else
		ava_kconn_release_slot(conn);
	ava_kconn_free(conn);
}
EXPORT_SYMBOL_GPL(ava_kconn_close);
