// SPDX-License-Identifier: GPL-2.0
/*
 * The netlink carrier of kernel connections (include/ava/knetlink.h): where
 * no ivshmem device is bound, a kernel connection reaches a user-space
 * worker on this kernel through the generic netlink family "ava_call", with
 * large messages in a per-connection shared area that the worker maps from
 * /dev/ava_call. Everything the worker sends is checked on ava.ko's copy.
 *
 * Locking: ava_knl_sem (read: a handler using a connection; write: a
 * connection joining or leaving ava_knl_conns) is outermost; the worker's
 * registration (ava_knl_lock, a spinlock, because the netlink release
 * notifier may not sleep) and the xarray's lock are innermost, and the
 * connection's own lock may nest inside the xarray's.
 */
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/netlink.h>
#include <linux/notifier.h>
#include <linux/rwsem.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>
#include <net/genetlink.h>

#include "ava/knetlink.h"
#include "ava_kcall_priv.h"

static unsigned int ava_knl_shm_kb = 4096;
module_param_named(knl_shm_kb, ava_knl_shm_kb, uint, 0444);
MODULE_PARM_DESC(knl_shm_kb, "netlink carrier: KiB of shared area per connection and direction "
			     "(default 4096; 0: inline messages only)");

/* Between retries of a send the worker's full socket refused. */
#define AVA_KNL_RETRY_MS 2
/* connection ids are below this; it must fit the s16 bound of a netlink policy */
#define AVA_KNL_MAX_CONNS (1u << 14)

struct ava_knl_shm {
	struct kref ref; /* the connection and each mapping */
	void *mem;       /* vmalloc_user: [0, half) ava.ko's, [half, 2 * half) the worker's */
	u64 half;
};

struct ava_knl_conn {
	u32 id;
	u32 portid; /* the worker that served HELLO */
	u64 gen;    /* its registration */
	struct ava_knl_shm *shm; /* NULL: inline messages only */
	wait_queue_head_t wq;    /* tx_busy cleared, or the connection failed */
	bool tx_busy;            /* our half holds a piece the worker has not released */
	/*
	 * A worker message arriving in pieces (AVA_KNL_A_MORE): only netlink
	 * handlers touch these, and the family's handlers run one at a time
	 * (no parallel_ops: genl_mutex).
	 */
	u8 *rx_buf;
	u64 rx_total;
	u64 rx_got;
};

static struct genl_family ava_knl_family;
static DECLARE_RWSEM(ava_knl_sem);
static DEFINE_XARRAY_ALLOC1(ava_knl_conns); /* id -> struct ava_kconn */
static u32 ava_knl_next_id;
static DEFINE_SPINLOCK(ava_knl_lock);
static u32 ava_knl_portid; /* 0: no worker */
static u64 ava_knl_gen;

static void ava_knl_shm_free(struct kref *ref)
{
	struct ava_knl_shm *shm = container_of(ref, struct ava_knl_shm, ref);

	vfree(shm->mem);
	kfree(shm);
}

static void ava_knl_shm_put(struct ava_knl_shm *shm)
{
	if (shm)
		kref_put(&shm->ref, ava_knl_shm_free);
}

/**
 * ava_knl_worker_present() - whether a worker has registered
 *
 * Return: true when a netlink connection could be opened now.
 */
bool ava_knl_worker_present(void)
{
	bool present;

	spin_lock(&ava_knl_lock);
	present = ava_knl_portid != 0;
	spin_unlock(&ava_knl_lock);
	return present;
}

/* 0 while conn's worker is still the registered one, else -EPIPE. */
static int ava_knl_worker_of(struct ava_kconn *conn, u32 *portid)
{
	int ret = 0;

	spin_lock(&ava_knl_lock);
	if (!ava_knl_portid || ava_knl_gen != conn->nl->gen)
		ret = -EPIPE;
	*portid = conn->nl->portid;
	spin_unlock(&ava_knl_lock);
	return ret;
}

/**
 * ava_knl_wake() - the connection failed: a sender waiting for the shared area gives up
 * @conn: a netlink connection
 */
void ava_knl_wake(struct ava_kconn *conn)
{
	wake_up(&conn->nl->wq);
}

/**
 * ava_knl_attach() - make conn a netlink connection of the registered worker
 * @conn: a connection with no carrier yet
 *
 * Return: 0, -ENODEV (no worker) or -ENOMEM.
 */
int ava_knl_attach(struct ava_kconn *conn)
{
	struct ava_knl_conn *kc;
	u64 half = (u64)ava_knl_shm_kb << 10;
	int ret;

	kc = kzalloc(sizeof(*kc), GFP_KERNEL);
	if (!kc)
		return -ENOMEM;
	init_waitqueue_head(&kc->wq);
	half = round_up(half, PAGE_SIZE);
	if (half > AVA_KCONN_MAX_MSG)
		half = AVA_KCONN_MAX_MSG;
	if (half) {
		kc->shm = kzalloc(sizeof(*kc->shm), GFP_KERNEL);
		if (!kc->shm)
			goto err_nomem;
		kref_init(&kc->shm->ref);
		kc->shm->half = half;
		kc->shm->mem = vmalloc_user(2 * half);
		if (!kc->shm->mem)
			goto err_nomem;
	}
	spin_lock(&ava_knl_lock);
	kc->portid = ava_knl_portid;
	kc->gen = ava_knl_gen;
	spin_unlock(&ava_knl_lock);
	if (!kc->portid) {
		ret = -ENODEV;
		goto err_free;
	}
	conn->nl = kc;
	down_write(&ava_knl_sem);
	ret = xa_alloc_cyclic(&ava_knl_conns, &kc->id, conn, XA_LIMIT(1, AVA_KNL_MAX_CONNS - 1),
			      &ava_knl_next_id, GFP_KERNEL);
	up_write(&ava_knl_sem);
	if (ret < 0) {
		conn->nl = NULL;
		ret = ret == -EBUSY ? -EBUSY : -ENOMEM;
		goto err_free;
	}
	return 0;

err_nomem:
	ret = -ENOMEM;
err_free:
	if (kc->shm)
		ava_knl_shm_put(kc->shm);
	kfree(kc);
	return ret;
}

/**
 * ava_knl_detach() - no handler can reach conn after this; frees its carrier part
 * @conn: a netlink connection (its threads stopped)
 */
void ava_knl_detach(struct ava_kconn *conn)
{
	struct ava_knl_conn *kc = conn->nl;

	if (!kc)
		return;
	down_write(&ava_knl_sem);
	xa_erase(&ava_knl_conns, kc->id);
	up_write(&ava_knl_sem);
	/* a worker mapping keeps the area until it unmaps */
	ava_knl_shm_put(kc->shm);
	kvfree(kc->rx_buf);
	kfree(kc);
	conn->nl = NULL;
}

/* Copies bytes [off, off + len) of the message that segs make up to dst. */
static void ava_knl_copy(u8 *dst, const struct ava_kseg *segs, unsigned int nsegs, u64 off,
			 u64 len)
{
	unsigned int i;

	for (i = 0; i < nsegs && len; i++) {
		u64 n;

		if (off >= segs[i].len) {
			off -= segs[i].len;
			continue;
		}
		n = min(segs[i].len - off, len);
		if (segs[i].ptr)
			memcpy(dst, (const u8 *)segs[i].ptr + off, n);
		else
			memset(dst, 0, n);
		dst += n;
		len -= n;
		off = 0;
	}
}

/* One MSG: the whole (inline) message, or the piece of len bytes now in our half. */
static struct sk_buff *ava_knl_build(struct ava_kconn *conn, const struct ava_kseg *segs,
				     unsigned int nsegs, u64 len, bool in_shm, bool more)
{
	size_t size = nla_total_size(sizeof(u32)) + nla_total_size(0) +
		      (in_shm ? nla_total_size_64bit(sizeof(u64)) : nla_total_size(len));
	struct sk_buff *skb = genlmsg_new(size, GFP_KERNEL);
	struct nlattr *data;
	void *hdr;

	if (!skb)
		return NULL;
	hdr = genlmsg_put(skb, 0, 0, &ava_knl_family, 0, AVA_KNL_CMD_MSG);
	if (!hdr || nla_put_u32(skb, AVA_KNL_A_CONN, conn->nl->id))
		goto err;
	if (in_shm) {
		if (nla_put_u64_64bit(skb, AVA_KNL_A_SHM_LEN, len, AVA_KNL_A_PAD))
			goto err;
	} else {
		data = nla_reserve(skb, AVA_KNL_A_DATA, len);
		if (!data)
			goto err;
		ava_knl_copy(nla_data(data), segs, nsegs, 0, len);
	}
	if (more && nla_put_flag(skb, AVA_KNL_A_MORE))
		goto err;
	genlmsg_end(skb, hdr);
	return skb;

err:
	nlmsg_free(skb);
	return NULL;
}

static bool ava_knl_tx_free(struct ava_kconn *conn)
{
	bool ready;

	spin_lock(&conn->lock);
	ready = !conn->nl->tx_busy || conn->broken;
	spin_unlock(&conn->lock);
	return ready;
}

/* Under send_lock: waits (killable, bounded) until our half of the area is free. */
static int ava_knl_claim_tx(struct ava_kconn *conn, unsigned long deadline)
{
	long left = (long)(deadline - jiffies);
	int ret;

	if (left <= 0 || !wait_event_killable_timeout(conn->nl->wq, ava_knl_tx_free(conn), left))
		return -ETIMEDOUT;
	if (fatal_signal_pending(current))
		return -EINTR;
	spin_lock(&conn->lock);
	ret = conn->broken;
	if (!ret)
		conn->nl->tx_busy = true;
	spin_unlock(&conn->lock);
	return ret;
}

/* Sends one MSG, retrying a full worker socket until deadline. */
static int ava_knl_unicast(struct ava_kconn *conn, const struct ava_kseg *segs,
			   unsigned int nsegs, u64 len, bool in_shm, bool more,
			   unsigned long deadline)
{
	struct sk_buff *skb;
	u32 portid;
	int ret;

	for (;;) {
		ret = ava_knl_worker_of(conn, &portid);
		if (ret)
			return ret;
		skb = ava_knl_build(conn, segs, nsegs, len, in_shm, more);
		if (!skb)
			return -ENOMEM;
		/* MSG_DONTWAIT: a full socket is -EAGAIN, and the skb is gone either way */
		ret = genlmsg_unicast(&init_net, skb, portid);
		if (ret != -EAGAIN && ret != -ENOBUFS)
			return ret == -ECONNREFUSED ? -EPIPE : ret; /* refused: the socket is gone */
		if (fatal_signal_pending(current))
			return -EINTR;
		if (time_after_eq(jiffies, deadline))
			return -ETIMEDOUT;
		msleep(AVA_KNL_RETRY_MS);
	}
}

/**
 * ava_knl_send() - send one message to the worker
 * @conn: a netlink connection
 * @segs: the message's pieces (header first)
 * @nsegs: how many
 * @total: their sum
 *
 * Inline up to AVA_KNL_INLINE_MAX, else through our half of the shared
 * area, in pieces of at most its size when larger (waiting, killable and
 * bounded, for the worker to release each piece). A full worker socket is
 * retried until the connection's timeout. A message cut short after its
 * first piece went out fails the connection: the worker holds a part of it.
 *
 * Return: 0, -E2BIG, -ENOMEM, -EPIPE, -ETIMEDOUT or -EINTR.
 */
int ava_knl_send(struct ava_kconn *conn, const struct ava_kseg *segs, unsigned int nsegs,
		 u64 total)
{
	struct ava_knl_conn *kc = conn->nl;
	unsigned long deadline = jiffies + conn->timeout;
	bool in_shm = total > AVA_KNL_INLINE_MAX;
	u64 off = 0, piece = total;
	bool more;
	int ret;

	if (in_shm && !kc->shm)
		return -E2BIG;
	mutex_lock(&conn->send_lock);
	spin_lock(&conn->lock);
	ret = conn->broken;
	spin_unlock(&conn->lock);
	if (ret)
		goto out;
	do {
		if (in_shm) {
			piece = min(total - off, kc->shm->half);
			ret = ava_knl_claim_tx(conn, deadline);
			if (ret) {
				/* a worker that never releases the area has stopped serving */
				if (ret == -ETIMEDOUT)
					ava_kconn_fail(conn, -EPIPE);
				break;
			}
			ava_knl_copy(kc->shm->mem, segs, nsegs, off, piece);
		}
		more = off + piece < total;
		ret = ava_knl_unicast(conn, segs, nsegs, piece, in_shm, more, deadline);
		if (ret && in_shm) {
			spin_lock(&conn->lock);
			kc->tx_busy = false;
			spin_unlock(&conn->lock);
		}
		if (ret == -EPIPE || ret == -ETIMEDOUT || (ret && off))
			ava_kconn_fail(conn, -EPIPE);
		off += piece;
	} while (!ret && off < total);
out:
	mutex_unlock(&conn->send_lock);
	return ret;
}

static const struct nla_policy ava_knl_policy[AVA_KNL_A_MAX + 1] = {
	[AVA_KNL_A_CONN] = NLA_POLICY_RANGE(NLA_U32, 1, AVA_KNL_MAX_CONNS - 1),
	[AVA_KNL_A_DATA] = { .type = NLA_BINARY },
	[AVA_KNL_A_SHM_LEN] = { .type = NLA_U64 },
	[AVA_KNL_A_SHM_SIZE] = { .type = NLA_U64 },
	[AVA_KNL_A_MORE] = { .type = NLA_FLAG },
};

/* The connection an attribute names, if the sender is its worker; under ava_knl_sem (read). */
static struct ava_kconn *ava_knl_lookup(struct genl_info *info)
{
	struct ava_kconn *conn;

	if (!info->attrs[AVA_KNL_A_CONN]) {
		NL_SET_ERR_MSG(info->extack, "AVA_KNL_A_CONN missing");
		return NULL;
	}
	conn = xa_load(&ava_knl_conns, nla_get_u32(info->attrs[AVA_KNL_A_CONN]));
	if (!conn || conn->nl->portid != info->snd_portid) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[AVA_KNL_A_CONN],
				    "no such connection of this worker");
		return NULL;
	}
	return conn;
}

static int ava_knl_break(struct ava_kconn *conn, struct genl_info *info, const char *why)
{
	pr_warn_ratelimited("ava: netlink connection %u for %s broken: %s\n", conn->nl->id,
			    conn->spec->name, why);
	/* why is a string literal: it outlives the request */
	if (info->extack)
		info->extack->_msg = why;
	ava_kconn_fail(conn, -EPIPE);
	return -EINVAL;
}

/* A whole worker message, in buf (kvmalloc'ed, ours now): checked, then routed. */
static int ava_knl_deliver(struct ava_kconn *conn, struct genl_info *info, u8 *buf, u64 len)
{
	struct ava_msg_hdr hdr;

	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.magic != AVA_MSG_MAGIC || hdr.abi_version != AVA_ABI_VERSION ||
	    hdr.total_len != len) {
		kvfree(buf);
		return ava_knl_break(conn, info, "a message with a bad header");
	}
	if (ava_kconn_route(conn, buf, len)) {
		const char *why = hdr.kind == AVA_MSG_GOODBYE ? "the worker said goodbye" :
								"an unexpected message";

		return ava_knl_break(conn, info, why);
	}
	return 0;
}

/* The first piece of a worker message that comes in pieces: its header says how long. */
static int ava_knl_msg_first(struct ava_kconn *conn, struct genl_info *info, const u8 *src,
			     u64 len)
{
	struct ava_knl_conn *kc = conn->nl;
	struct ava_msg_hdr hdr;

	if (len < sizeof(hdr))
		return ava_knl_break(conn, info, "a first piece shorter than a message header");
	memcpy(&hdr, src, sizeof(hdr));
	if (hdr.total_len <= len || hdr.total_len > AVA_KCONN_MAX_MSG)
		return ava_knl_break(conn, info, "a message in pieces of impossible length");
	kc->rx_buf = kvmalloc(hdr.total_len, GFP_KERNEL);
	if (!kc->rx_buf)
		return ava_knl_break(conn, info, "no memory for a message in pieces");
	/* total_len is re-checked on our copy of the header once the message is whole */
	memcpy(kc->rx_buf, src, len);
	kc->rx_total = hdr.total_len;
	kc->rx_got = len;
	return 0;
}

static int ava_knl_msg(struct ava_kconn *conn, struct genl_info *info)
{
	struct nlattr *data = info->attrs[AVA_KNL_A_DATA];
	struct nlattr *shm_len = info->attrs[AVA_KNL_A_SHM_LEN];
	bool more = nla_get_flag(info->attrs[AVA_KNL_A_MORE]);
	struct ava_knl_conn *kc = conn->nl;
	struct ava_knl_shm *shm = kc->shm;
	const u8 *src;
	u64 len;
	u8 *buf;

	if (!!data == !!shm_len)
		return ava_knl_break(conn, info, "a message needs exactly one of DATA and SHM_LEN");
	if (data) {
		len = nla_len(data);
		src = nla_data(data);
	} else {
		len = nla_get_u64(shm_len);
		if (!shm || len > shm->half)
			return ava_knl_break(conn, info, "a shared-area message beyond the area");
		src = (const u8 *)shm->mem + shm->half;
	}
	if (!kc->rx_buf && more)
		return ava_knl_msg_first(conn, info, src, len);
	if (kc->rx_buf) {
		/* checked on our copy: the worker may rewrite its half meanwhile */
		if (len > kc->rx_total - kc->rx_got || (more && len == kc->rx_total - kc->rx_got) ||
		    (!more && len != kc->rx_total - kc->rx_got))
			return ava_knl_break(conn, info, "pieces that do not add up to their message");
		memcpy(kc->rx_buf + kc->rx_got, src, len);
		kc->rx_got += len;
		if (more)
			return 0;
		buf = kc->rx_buf;
		len = kc->rx_total;
		kc->rx_buf = NULL;
		return ava_knl_deliver(conn, info, buf, len);
	}
	if (len < sizeof(struct ava_msg_hdr) || len > AVA_KCONN_MAX_MSG)
		return ava_knl_break(conn, info, "a message of impossible length");
	buf = kvmalloc(len, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	/* checked on our copy: the worker may rewrite its half meanwhile */
	memcpy(buf, src, len);
	return ava_knl_deliver(conn, info, buf, len);
}

static int ava_knl_do_conn(struct sk_buff *skb, struct genl_info *info)
{
	struct ava_kconn *conn;
	int ret = 0;

	down_read(&ava_knl_sem);
	conn = ava_knl_lookup(info);
	if (!conn) {
		ret = -ENOENT;
		goto out;
	}
	switch (info->genlhdr->cmd) {
	case AVA_KNL_CMD_MSG:
		ret = ava_knl_msg(conn, info);
		break;
	case AVA_KNL_CMD_RELEASE:
		spin_lock(&conn->lock);
		conn->nl->tx_busy = false;
		spin_unlock(&conn->lock);
		wake_up(&conn->nl->wq);
		break;
	case AVA_KNL_CMD_CLOSE:
		ava_kconn_fail(conn, -EPIPE);
		break;
	}
out:
	up_read(&ava_knl_sem);
	return ret;
}

static int ava_knl_do_register(struct sk_buff *skb, struct genl_info *info)
{
	u64 half = ava_knl_shm_kb ? round_up((u64)ava_knl_shm_kb << 10, PAGE_SIZE) : 0;
	struct sk_buff *msg;
	void *hdr;
	int ret = 0;

	if (half > AVA_KCONN_MAX_MSG)
		half = AVA_KCONN_MAX_MSG;
	msg = genlmsg_new(nla_total_size_64bit(sizeof(u64)), GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &ava_knl_family, 0, AVA_KNL_CMD_REGISTER);
	if (!hdr || nla_put_u64_64bit(msg, AVA_KNL_A_SHM_SIZE, half, AVA_KNL_A_PAD)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	spin_lock(&ava_knl_lock);
	if (ava_knl_portid && ava_knl_portid != info->snd_portid) {
		ret = -EBUSY;
	} else if (!ava_knl_portid) {
		ava_knl_portid = info->snd_portid;
		ava_knl_gen++;
	}
	spin_unlock(&ava_knl_lock);
	if (ret) {
		NL_SET_ERR_MSG(info->extack, "another worker is registered");
		nlmsg_free(msg);
		return ret;
	}
	return genlmsg_reply(msg, info);
}

static const struct genl_small_ops ava_knl_ops[] = {
	{
		.cmd = AVA_KNL_CMD_REGISTER,
		.flags = GENL_ADMIN_PERM,
		.doit = ava_knl_do_register,
	},
	{
		.cmd = AVA_KNL_CMD_MSG,
		.flags = GENL_ADMIN_PERM,
		.doit = ava_knl_do_conn,
	},
	{
		.cmd = AVA_KNL_CMD_RELEASE,
		.flags = GENL_ADMIN_PERM,
		.doit = ava_knl_do_conn,
	},
	{
		.cmd = AVA_KNL_CMD_CLOSE,
		.flags = GENL_ADMIN_PERM,
		.doit = ava_knl_do_conn,
	},
};

static struct genl_family ava_knl_family __ro_after_init = {
	.name = AVA_KNL_GENL_NAME,
	.version = AVA_KNL_GENL_VERSION,
	.maxattr = AVA_KNL_A_MAX,
	.policy = ava_knl_policy,
	.module = THIS_MODULE,
	.small_ops = ava_knl_ops,
	.n_small_ops = ARRAY_SIZE(ava_knl_ops),
};

/* The worker's socket closed: it died or exited. May not sleep. */
static int ava_knl_release(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct netlink_notify *n = ptr;
	struct ava_kconn *conn;
	unsigned long id;
	bool ours;

	if (event != NETLINK_URELEASE || n->protocol != NETLINK_GENERIC || n->net != &init_net)
		return NOTIFY_DONE;
	spin_lock(&ava_knl_lock);
	ours = ava_knl_portid && n->portid == ava_knl_portid;
	if (ours)
		ava_knl_portid = 0;
	spin_unlock(&ava_knl_lock);
	if (!ours)
		return NOTIFY_DONE;
	xa_lock(&ava_knl_conns);
	xa_for_each(&ava_knl_conns, id, conn) {
		if (conn->nl->portid != n->portid)
			continue;
		ava_kconn_fail(conn, -EPIPE);
	}
	xa_unlock(&ava_knl_conns);
	return NOTIFY_OK;
}

static struct notifier_block ava_knl_notifier = {
	.notifier_call = ava_knl_release,
};

/* ---- /dev/ava_call: the worker maps connections' shared areas ---- */

static int ava_knl_dev_open(struct inode *inode, struct file *filp)
{
	return capable(CAP_NET_ADMIN) ? 0 : -EPERM;
}

static void ava_knl_vm_open(struct vm_area_struct *vma)
{
	struct ava_knl_shm *shm = vma->vm_private_data;

	kref_get(&shm->ref);
}

static void ava_knl_vm_close(struct vm_area_struct *vma)
{
	ava_knl_shm_put(vma->vm_private_data);
}

static const struct vm_operations_struct ava_knl_vm_ops = {
	.open = ava_knl_vm_open,
	.close = ava_knl_vm_close,
};

static int ava_knl_dev_mmap(struct file *filp, struct vm_area_struct *vma)
{
	u64 half = ava_knl_shm_kb ? round_up((u64)ava_knl_shm_kb << 10, PAGE_SIZE) : 0;
	u64 area_pages, id;
	struct ava_kconn *conn;
	struct ava_knl_shm *shm;
	int ret;

	if (half > AVA_KCONN_MAX_MSG)
		half = AVA_KCONN_MAX_MSG;
	if (!half || !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	area_pages = (2 * half) >> PAGE_SHIFT;
	if (vma->vm_pgoff % area_pages || vma->vm_end - vma->vm_start != 2 * half)
		return -EINVAL;
	id = vma->vm_pgoff / area_pages;
	if (!id || id >= AVA_KNL_MAX_CONNS)
		return -ENOENT;
	down_read(&ava_knl_sem);
	conn = xa_load(&ava_knl_conns, id);
	shm = conn && conn->nl->shm && conn->nl->shm->half == half ? conn->nl->shm : NULL;
	if (!shm) {
		up_read(&ava_knl_sem);
		return -ENOENT;
	}
	kref_get(&shm->ref);
	up_read(&ava_knl_sem);
	ret = remap_vmalloc_range(vma, shm->mem, 0);
	if (ret) {
		ava_knl_shm_put(shm);
		return ret;
	}
	vma->vm_private_data = shm;
	vma->vm_ops = &ava_knl_vm_ops;
	return 0;
}

static const struct file_operations ava_knl_fops = {
	.owner = THIS_MODULE,
	.open = ava_knl_dev_open,
	.mmap = ava_knl_dev_mmap,
	.llseek = noop_llseek,
};

static struct miscdevice ava_knl_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "ava_call",
	.fops = &ava_knl_fops,
	.mode = 0600,
};

/**
 * ava_knl_register() - the family, the release notifier and /dev/ava_call
 *
 * Return: 0 or -errno.
 */
int ava_knl_register(void)
{
	int ret = genl_register_family(&ava_knl_family);

	if (ret)
		return ret;
	ret = netlink_register_notifier(&ava_knl_notifier);
	if (ret)
		goto err_family;
	ret = misc_register(&ava_knl_misc);
	if (ret)
		goto err_notifier;
	return 0;

err_notifier:
	netlink_unregister_notifier(&ava_knl_notifier);
err_family:
	genl_unregister_family(&ava_knl_family);
	return ret;
}

/**
 * ava_knl_unregister() - undo ava_knl_register() (no connection is left: modules
 * using kcall.h hold ava.ko)
 */
void ava_knl_unregister(void)
{
	misc_deregister(&ava_knl_misc);
	netlink_unregister_notifier(&ava_knl_notifier);
	genl_unregister_family(&ava_knl_family);
}
