// SPDX-License-Identifier: GPL-2.0
/*
 * Generic netlink family "ava": slot and device state for avactl, and the
 * per-slot policy the host enforces. Host-written numbers are only reported.
 */
#include <linux/cred.h>
#include <net/genetlink.h>

#include "ava_police.h"
#include "ava_priv.h"

static struct genl_family ava_genl_family;

static const struct nla_policy ava_nl_policy[AVA_A_MAX + 1] = {
	[AVA_A_SLOT] = NLA_POLICY_MAX(NLA_U32, AVA_DEV_MAX_SLOTS - 1),
	[AVA_A_POLICY_ENABLED] = NLA_POLICY_MAX(NLA_U8, 1),
	[AVA_A_POLICY_CMDS_PER_SEC] = { .type = NLA_U64 },
	[AVA_A_POLICY_BYTES_PER_SEC] = { .type = NLA_U64 },
	[AVA_A_POLICY_MEM_QUOTA] = { .type = NLA_U64 },
	[AVA_A_POLICY_POLICED] = NLA_POLICY_MAX(NLA_U8, 1),
};

/* Caller holds ava_global_lock (the device stays bound) and dev->lock. */
static int ava_nl_fill_slot(struct sk_buff *msg, struct ava_dev *dev, struct ava_slot *slot)
{
	struct ava_slot_entry *e = ava_dev_entry(dev, slot->index);
	struct ava_region_hdr *rh = ava_dev_region(dev, slot->index);
	bool broken = READ_ONCE(rh->state) & AVA_REGION_BROKEN;

	if (nla_put_u32(msg, AVA_A_SLOT, slot->index) ||
	    nla_put_u32(msg, AVA_A_GUEST_STATE, slot->guest_state) ||
	    nla_put_u32(msg, AVA_A_HOST_STATE, READ_ONCE(e->host_state)) ||
	    nla_put_u32(msg, AVA_A_GENERATION, slot->guest_gen) ||
	    nla_put_u32(msg, AVA_A_PID, slot->guest_pid) ||
	    nla_put_u8(msg, AVA_A_KERNEL, slot->busy && slot->kernel) ||
	    nla_put_u8(msg, AVA_A_BROKEN, slot->busy && broken) ||
	    nla_put_u64_64bit(msg, AVA_A_KICKS, atomic64_read(&slot->kicks), AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_WAITS, atomic64_read(&slot->waits), AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_INTERRUPTS, atomic64_read(&slot->interrupts), AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_TIMEOUTS, atomic64_read(&slot->timeouts), AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_REFUSED, atomic64_read(&slot->refused), AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_COMMANDS, READ_ONCE(e->commands), AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_BYTES_IN, READ_ONCE(e->bytes_in), AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_BYTES_OUT, READ_ONCE(e->bytes_out), AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_ERRORS, READ_ONCE(e->errors), AVA_A_PAD) ||
	    nla_put_u8(msg, AVA_A_POLICY_ENABLED, !(slot->policy_flags & AVA_POLICY_DISABLED)) ||
	    nla_put_u64_64bit(msg, AVA_A_POLICY_CMDS_PER_SEC, slot->cmds_per_sec, AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_POLICY_BYTES_PER_SEC, slot->bytes_per_sec, AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_POLICY_MEM_QUOTA, slot->mem_quota, AVA_A_PAD) ||
	    nla_put_u8(msg, AVA_A_POLICY_POLICED, !!(slot->policy_flags & AVA_POLICY_POLICED)) ||
	    nla_put_u8(msg, AVA_A_POLICED, slot->busy && (slot->claim_flags & AVA_CLAIM_POLICED)))
		return -EMSGSIZE;
	return 0;
}

/*
 * Who may see a slot's pids and counters: an admin (CAP_NET_ADMIN) every
 * slot, anyone else only the slots that processes of its own euid hold.
 */
static bool ava_nl_may_see(struct sk_buff *skb, const struct ava_slot *slot)
{
	if (netlink_capable(skb, CAP_NET_ADMIN))
		return true;
	return slot->busy && !slot->kernel && uid_eq(slot->guest_uid, current_euid());
}

static struct ava_dev *ava_nl_dev(struct netlink_ext_ack *extack)
{
	lockdep_assert_held(&ava_global_lock);
	if (!ava_global_dev)
		NL_SET_ERR_MSG(extack, "no ivshmem device bound to ava.ko");
	return ava_global_dev;
}

static int ava_nl_get_slot(struct sk_buff *skb, struct genl_info *info)
{
	struct ava_dev *dev;
	struct sk_buff *msg;
	void *hdr;
	u32 index;
	int ret;

	if (!info->attrs[AVA_A_SLOT]) {
		NL_SET_ERR_MSG(info->extack, "AVA_A_SLOT missing");
		return -EINVAL;
	}
	index = nla_get_u32(info->attrs[AVA_A_SLOT]);
	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	mutex_lock(&ava_global_lock);
	dev = ava_nl_dev(info->extack);
	if (!dev) {
		ret = -ENODEV;
		goto err_unlock;
	}
	if (index >= dev->hdr.nslots) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[AVA_A_SLOT], "no such slot");
		ret = -ENOENT;
		goto err_unlock;
	}
	hdr = genlmsg_put_reply(msg, info, &ava_genl_family, 0, AVA_CMD_GET_SLOT);
	if (!hdr) {
		ret = -EMSGSIZE;
		goto err_unlock;
	}
	mutex_lock(&dev->lock);
	if (ava_nl_may_see(skb, &dev->slots[index])) {
		ret = ava_nl_fill_slot(msg, dev, &dev->slots[index]);
	} else {
		NL_SET_ERR_MSG(info->extack, "the slot is not held by this user (CAP_NET_ADMIN sees all)");
		ret = -EPERM;
	}
	mutex_unlock(&dev->lock);
	if (ret)
		goto err_unlock;
	mutex_unlock(&ava_global_lock);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

err_unlock:
	mutex_unlock(&ava_global_lock);
	nlmsg_free(msg);
	return ret;
}

static int ava_nl_dump_slots(struct sk_buff *skb, struct netlink_callback *cb)
{
	unsigned long index = cb->args[0];
	struct ava_dev *dev;
	void *hdr;
	int ret;

	mutex_lock(&ava_global_lock);
	dev = ava_nl_dev(cb->extack);
	if (!dev) {
		ret = -ENODEV;
		goto out;
	}
	for (; index < dev->hdr.nslots; index++) {
		bool visible;

		mutex_lock(&dev->lock);
		visible = ava_nl_may_see(cb->skb, &dev->slots[index]);
		mutex_unlock(&dev->lock);
		if (!visible)
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
				  &ava_genl_family, NLM_F_MULTI, AVA_CMD_GET_SLOT);
		if (!hdr)
			break;
		mutex_lock(&dev->lock);
		ret = ava_nl_fill_slot(skb, dev, &dev->slots[index]);
		mutex_unlock(&dev->lock);
		if (ret) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
	}
	cb->args[0] = index;
	ret = skb->len;
out:
	mutex_unlock(&ava_global_lock);
	return ret;
}

static int ava_nl_fill_device(struct sk_buff *msg, struct ava_dev *dev)
{
	u64 kicks = 0, waits = 0, timeouts = 0;
	u32 i, open = 0;

	mutex_lock(&dev->lock);
	for (i = 0; i < dev->hdr.nslots; i++) {
		struct ava_slot *slot = &dev->slots[i];

		open += slot->busy;
		kicks += atomic64_read(&slot->kicks);
		waits += atomic64_read(&slot->waits);
		timeouts += atomic64_read(&slot->timeouts);
	}
	mutex_unlock(&dev->lock);

	if (nla_put_u32(msg, AVA_A_NSLOTS, dev->hdr.nslots) ||
	    nla_put_u64_64bit(msg, AVA_A_SLOT_SIZE, dev->hdr.slot_size, AVA_A_PAD) ||
	    nla_put_u8(msg, AVA_A_HOST_UP, ava_dev_host_state(dev) == AVA_HOST_UP) ||
	    nla_put_u32(msg, AVA_A_OPEN_SLOTS, open) ||
	    nla_put_u32(msg, AVA_A_VECTORS, dev->nvecs) ||
	    nla_put_u64_64bit(msg, AVA_A_KICKS, kicks, AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_WAITS, waits, AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_INTERRUPTS, atomic64_read(&dev->irqs), AVA_A_PAD) ||
	    nla_put_u64_64bit(msg, AVA_A_TIMEOUTS, timeouts, AVA_A_PAD) ||
	    nla_put_u32(msg, AVA_A_TABLES, ava_cmds_count()))
		return -EMSGSIZE;
	return 0;
}

static int ava_nl_get_device(struct sk_buff *skb, struct genl_info *info)
{
	struct ava_dev *dev;
	struct sk_buff *msg;
	void *hdr;
	int ret;

	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	mutex_lock(&ava_global_lock);
	dev = ava_nl_dev(info->extack);
	if (!dev) {
		ret = -ENODEV;
		goto err_unlock;
	}
	hdr = genlmsg_put_reply(msg, info, &ava_genl_family, 0, AVA_CMD_GET_DEVICE);
	if (!hdr) {
		ret = -EMSGSIZE;
		goto err_unlock;
	}
	ret = ava_nl_fill_device(msg, dev);
	if (ret)
		goto err_unlock;
	mutex_unlock(&ava_global_lock);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

err_unlock:
	mutex_unlock(&ava_global_lock);
	nlmsg_free(msg);
	return ret;
}

static void ava_nl_apply_policy(struct ava_slot *slot, struct nlattr **attrs)
{
	if (attrs[AVA_A_POLICY_ENABLED]) {
		if (nla_get_u8(attrs[AVA_A_POLICY_ENABLED]))
			slot->policy_flags &= ~AVA_POLICY_DISABLED;
		else
			slot->policy_flags |= AVA_POLICY_DISABLED;
	}
	if (attrs[AVA_A_POLICY_CMDS_PER_SEC])
		slot->cmds_per_sec = nla_get_u64(attrs[AVA_A_POLICY_CMDS_PER_SEC]);
	if (attrs[AVA_A_POLICY_BYTES_PER_SEC])
		slot->bytes_per_sec = nla_get_u64(attrs[AVA_A_POLICY_BYTES_PER_SEC]);
	if (attrs[AVA_A_POLICY_MEM_QUOTA])
		slot->mem_quota = nla_get_u64(attrs[AVA_A_POLICY_MEM_QUOTA]);
	/* latched at open(): only later claims change */
	if (attrs[AVA_A_POLICY_POLICED]) {
		if (nla_get_u8(attrs[AVA_A_POLICY_POLICED]))
			slot->policy_flags |= AVA_POLICY_POLICED;
		else
			slot->policy_flags &= ~AVA_POLICY_POLICED;
	}
	ava_slot_publish_policy(slot);
}

static int ava_nl_set_policy(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct ava_dev *dev;
	u32 first, last, i;
	int ret = 0;

	if (!attrs[AVA_A_POLICY_ENABLED] && !attrs[AVA_A_POLICY_CMDS_PER_SEC] &&
	    !attrs[AVA_A_POLICY_BYTES_PER_SEC] && !attrs[AVA_A_POLICY_MEM_QUOTA] &&
	    !attrs[AVA_A_POLICY_POLICED]) {
		NL_SET_ERR_MSG(info->extack, "no AVA_A_POLICY_* attribute");
		return -EINVAL;
	}
	mutex_lock(&ava_global_lock);
	dev = ava_nl_dev(info->extack);
	if (!dev) {
		ret = -ENODEV;
		goto out;
	}
	first = 0;
	last = dev->hdr.nslots - 1;
	if (attrs[AVA_A_SLOT]) {
		first = nla_get_u32(attrs[AVA_A_SLOT]);
		if (first >= dev->hdr.nslots) {
			NL_SET_ERR_MSG_ATTR(info->extack, attrs[AVA_A_SLOT], "no such slot");
			ret = -ENOENT;
			goto out;
		}
		last = first;
	}
	mutex_lock(&dev->lock);
	for (i = first; i <= last; i++)
		ava_nl_apply_policy(&dev->slots[i], attrs);
	mutex_unlock(&dev->lock);
	/* the slot table changed: the host re-reads it on the control vector */
	ava_dev_ring(dev, AVA_DEV_CTL_VECTOR);
out:
	mutex_unlock(&ava_global_lock);
	return ret;
}

static const struct genl_small_ops ava_nl_ops[] = {
	{
		.cmd = AVA_CMD_GET_SLOT,
		.doit = ava_nl_get_slot,
		.dumpit = ava_nl_dump_slots,
	},
	{
		.cmd = AVA_CMD_SET_POLICY,
		.flags = GENL_ADMIN_PERM,
		.doit = ava_nl_set_policy,
	},
	{
		.cmd = AVA_CMD_GET_DEVICE,
		/* device-wide counters sum every user's traffic */
		.flags = GENL_ADMIN_PERM,
		.doit = ava_nl_get_device,
	},
};

/*
 * resv_start_op stays 0, as 6.1 asks of new families: every command is
 * validated strictly against ava_nl_policy, reserved header fields included.
 */
static struct genl_family ava_genl_family __ro_after_init = {
	.name = AVA_GENL_NAME,
	.version = AVA_GENL_VERSION,
	.maxattr = AVA_A_MAX,
	.policy = ava_nl_policy,
	.module = THIS_MODULE,
	.small_ops = ava_nl_ops,
	.n_small_ops = ARRAY_SIZE(ava_nl_ops),
};

/**
 * ava_netlink_register() - register the "ava" generic netlink family
 *
 * Return: 0 or -errno.
 */
int ava_netlink_register(void)
{
	return genl_register_family(&ava_genl_family);
}

/**
 * ava_netlink_unregister() - unregister the family; waits for running handlers
 */
void ava_netlink_unregister(void)
{
	genl_unregister_family(&ava_genl_family);
}
