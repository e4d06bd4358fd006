// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/ava: each open file claims one slot of the shared memory, maps only
 * that slot, rings the host and waits for it (include/ava/ivshmem.h). A
 * policed claim maps all of it but the command ring and hands its messages
 * to AVA_IOC_SUBMIT (ava_police.c).
 *
 * Shared memory is written by the host too. Every value read from it is read
 * once and only compared; lengths and offsets come from the validated header
 * copy or from ava.ko's own state.
 */
#include <linux/cred.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "ava_layout_check.h"
#include "ava_police.h"
#include "ava_priv.h"

/* polling without interrupts (ivshmem-plain): short sleeps first, then longer ones */
#define AVA_POLL_FAST_ROUNDS 100
#define AVA_POLL_FAST_MIN_US 50
#define AVA_POLL_FAST_MAX_US 200
#define AVA_POLL_SLOW_MIN_US 1000
#define AVA_POLL_SLOW_MAX_US 2000

/* a claim zeroes its slot this many bytes at a time, rescheduling in between */
#define AVA_SLOT_SCRUB_CHUNK (64u << 10)

/**
 * ava_slot_or_state() - set bits of a region's state word
 * @rh: the slot's region header; the caller keeps shared memory mapped
 * @bits: AVA_REGION_* bits
 */
void ava_slot_or_state(struct ava_region_hdr *rh, u32 bits)
{
	/* the host updates the same word with atomic ORs: plain RMW could lose its bits */
	atomic_or(bits, (atomic_t *)&rh->state);
}

/* Stores guest_state with release semantics: pairs with the host's acquire load of guest_state. */
static void ava_slot_store_guest_state(struct ava_slot_entry *e, u32 state)
{
	smp_store_release(&e->guest_state, state);
}

/**
 * ava_slot_release_stale() - take over the slot table at probe
 * @dev: the device being probed, shared memory mapped and header validated
 *
 * Adopts the guest line ava.ko left behind (a VM reboot or module reload
 * keeps the host's generation and the policy), polices every slot when the
 * module parameter "police" says so, and releases slots a previous ava.ko
 * instance still showed as claimed, so the host recycles them. No file or
 * netlink request can reach the slots yet: dev->lock is not needed.
 */
void ava_slot_release_stale(struct ava_dev *dev)
{
	bool released = false;
	u32 i;

	for (i = 0; i < dev->hdr.nslots; i++) {
		struct ava_slot *slot = &dev->slots[i];
		struct ava_slot_entry *e = ava_dev_entry(dev, i);
		struct ava_layout_adopted a;

		ava_layout_adopt_entry(READ_ONCE(e->guest_state), READ_ONCE(e->guest_gen),
				       READ_ONCE(e->policy_flags), &a);
		slot->guest_gen = a.guest_gen;
		slot->policy_flags = a.policy_flags;
		slot->cmds_per_sec = READ_ONCE(e->cmds_per_sec);
		slot->bytes_per_sec = READ_ONCE(e->bytes_per_sec);
		slot->mem_quota = READ_ONCE(e->mem_quota);
		/* the module parameter "police": no process claim escapes ava.ko's checks */
		if (ava_police_all) {
			slot->policy_flags |= AVA_POLICY_POLICED;
			ava_slot_publish_policy(slot);
		}
		slot->guest_state = a.guest_state;
		if (a.release)
			ava_slot_or_state(ava_dev_region(dev, i), AVA_REGION_CLOSED);
		if (a.guest_state != AVA_SLOT_FREE)
			ava_slot_store_guest_state(e, AVA_SLOT_RELEASED);
		if (a.release) {
			ava_dev_ring(dev, AVA_DEV_SLOT_VECTOR(i));
			released = true;
		}
	}
	if (released) {
		dev_info(&dev->pdev->dev, "released slots left claimed by a previous instance\n");
		ava_dev_ring(dev, AVA_DEV_CTL_VECTOR);
	}
}

/**
 * ava_slot_publish_policy() - write a slot's policy into its guest line
 * @slot: the slot; caller holds dev->lock and keeps shared memory mapped
 */
void ava_slot_publish_policy(struct ava_slot *slot)
{
	struct ava_slot_entry *e = ava_dev_entry(slot->dev, slot->index);

	WRITE_ONCE(e->cmds_per_sec, slot->cmds_per_sec);
	WRITE_ONCE(e->bytes_per_sec, slot->bytes_per_sec);
	WRITE_ONCE(e->mem_quota, slot->mem_quota);
	/* pairs with the host's acquire load of policy_flags before the limits */
	smp_store_release(&e->policy_flags, slot->policy_flags);
}

/**
 * ava_slot_zap_all() - remove every user mapping of shared memory
 * @dev: a device marked gone, with no mmap() in flight
 */
void ava_slot_zap_all(struct ava_dev *dev)
{
	struct ava_file *af;

	mutex_lock(&dev->lock);
	list_for_each_entry(af, &dev->files, node)
		unmap_mapping_range(af->filp->f_mapping, 0, 0, 1);
	mutex_unlock(&dev->lock);
}

static bool ava_slot_claimable(struct ava_slot *slot)
{
	struct ava_slot_entry *e = ava_dev_entry(slot->dev, slot->index);
	u32 host_state;

	if (slot->busy || slot->guest_state == AVA_SLOT_CLAIMED)
		return false;
	if (slot->policy_flags & AVA_POLICY_DISABLED)
		return false;

	/* pairs with the host's release store of host_state after host_gen */
	host_state = smp_load_acquire(&e->host_state);
	return ava_layout_host_allows_claim(host_state, READ_ONCE(e->host_gen), slot->guest_gen);
}

static void ava_slot_claim(struct ava_slot *slot, u32 pid, bool kernel)
{
	struct ava_dev *dev = slot->dev;
	const struct ava_dev_hdr *h = &dev->hdr;
	struct ava_region_hdr *rh = ava_dev_region(dev, slot->index);
	struct ava_slot_entry *e = ava_dev_entry(dev, slot->index);
	struct ava_region_hdr fresh;

	/* state stays 0 (not READY) until the release store below */
	ava_layout_region_fill(h, &fresh, pid);
	memset((u8 *)rh + sizeof(fresh), 0, AVA_REGION_HDR_SIZE - sizeof(fresh));
	memcpy(rh, &fresh, sizeof(fresh));
	/* pairs with the worker's acquire load of state before it copies the header */
	smp_store_release(&rh->state, AVA_REGION_READY);

	slot->busy = true;
	slot->kernel = kernel;
	slot->guest_pid = pid;
	slot->guest_uid = kernel ? GLOBAL_ROOT_UID : current_euid();
	slot->guest_gen++;
	slot->guest_state = AVA_SLOT_CLAIMED;
	/* kernel connections build their own messages: never policed */
	slot->claim_flags = !kernel && (slot->policy_flags & AVA_POLICY_POLICED) ?
			    AVA_CLAIM_POLICED : 0;
	WRITE_ONCE(e->guest_pid, pid);
	WRITE_ONCE(e->guest_gen, slot->guest_gen);
	WRITE_ONCE(e->claim_flags, slot->claim_flags);
	WRITE_ONCE(e->checked_head, 0);
	/*
	 * The host's acquire load of guest_state then sees the region, pid,
	 * gen, claim flags and the zero checked_head.
	 */
	ava_slot_store_guest_state(e, AVA_SLOT_CLAIMED);
	ava_dev_ring(dev, AVA_DEV_CTL_VECTOR);
}

/*
 * Zeroes all of a slot past its region header page (command ring, reply
 * ring, heap), which ava_slot_claim() rewrites: nothing of an earlier claim
 * (another process's, or another VM's on a host that did not scrub it)
 * reaches the next claimant or its worker. Chunks that already read as zero
 * (what the host's scrub leaves) are only read, not written. The caller
 * holds dev->io for reading and has reserved the
 * slot (busy), so no claim, mapping or kernel connection uses it meanwhile.
 *
 * Return: 0, or -ENODEV when remove() began meanwhile (it waits for dev->io).
 */
static int ava_slot_scrub(struct ava_slot *slot)
{
	struct ava_dev *dev = slot->dev;
	u8 *p = (u8 *)ava_dev_region(dev, slot->index) + AVA_REGION_HDR_SIZE;
	u64 left = dev->hdr.slot_size - AVA_REGION_HDR_SIZE;

	while (left) {
		size_t n = min_t(u64, left, AVA_SLOT_SCRUB_CHUNK);

		if (READ_ONCE(dev->gone))
			return -ENODEV;
		if (memchr_inv(p, 0, n))
			memset(p, 0, n);
		p += n;
		left -= n;
		cond_resched();
	}
	return 0;
}

/**
 * ava_slot_claim_free() - claim a free slot for a process or a kernel connection
 * @dev: the device; the caller holds dev->io for reading and a reference
 * @pid: the guest pid the host is shown (0 for a kernel connection)
 * @kernel: the slot is held by a kernel connection (avactl shows "kernel")
 * @out: the claimed slot
 *
 * The slot is reserved under dev->lock, zeroed without it (it may be large)
 * and only then shown to the host as claimed and handed to the caller.
 *
 * Return: 0, -ENODEV (device removed), -EHOSTDOWN (no host) or -EBUSY (no
 * free slot).
 */
int ava_slot_claim_free(struct ava_dev *dev, u32 pid, bool kernel, struct ava_slot **out)
{
	struct ava_slot *slot = NULL;
	u32 i;
	int ret = -EBUSY;

	*out = NULL;
	if (READ_ONCE(dev->gone))
		return -ENODEV;
	mutex_lock(&dev->lock);
	if (ava_dev_host_state(dev) != AVA_HOST_UP) {
		ret = -EHOSTDOWN;
		goto out_unlock;
	}
	for (i = 0; i < dev->hdr.nslots; i++) {
		if (ava_slot_claimable(&dev->slots[i])) {
			slot = &dev->slots[i];
			/* reserved: other claims skip it; netlink shows it to its new holder */
			slot->busy = true;
			slot->kernel = kernel;
			slot->guest_uid = kernel ? GLOBAL_ROOT_UID : current_euid();
			break;
		}
	}
	mutex_unlock(&dev->lock);
	if (!slot)
		return ret;

	ret = ava_slot_scrub(slot);
	mutex_lock(&dev->lock);
	if (!ret && READ_ONCE(dev->gone))
		ret = -ENODEV;
	if (ret) {
		slot->busy = false;
		slot->kernel = false;
		goto out_unlock;
	}
	ava_slot_claim(slot, pid, kernel);
	*out = slot;
out_unlock:
	mutex_unlock(&dev->lock);
	return ret;
}

/**
 * ava_slot_unclaim() - let go of a claimed slot (CLOSED + RELEASED, host rung)
 * @slot: the slot; the caller holds dev->io for reading and dev->lock
 *
 * The host ends the slot's worker, which frees everything the slot's guest
 * created, and then shows the slot IDLE again.
 */
void ava_slot_unclaim(struct ava_slot *slot)
{
	struct ava_dev *dev = slot->dev;

	lockdep_assert_held(&dev->lock);
	if (!READ_ONCE(dev->gone)) {
		ava_slot_or_state(ava_dev_region(dev, slot->index), AVA_REGION_CLOSED);
		ava_slot_store_guest_state(ava_dev_entry(dev, slot->index), AVA_SLOT_RELEASED);
		ava_dev_ring(dev, AVA_DEV_SLOT_VECTOR(slot->index));
		ava_dev_ring(dev, AVA_DEV_CTL_VECTOR);
	}
	slot->guest_state = AVA_SLOT_RELEASED;
	slot->guest_pid = 0;
	slot->claim_flags = 0;
	slot->busy = false;
	slot->kernel = false;
}

static int ava_slot_open(struct inode *inode, struct file *filp)
{
	/* misc_open() left our miscdevice here; remove() deregisters it before the last put */
	struct ava_dev *dev = container_of(filp->private_data, struct ava_dev, misc);
	struct ava_file *af;
	int ret;

	af = kzalloc(sizeof(*af), GFP_KERNEL);
	if (!af)
		return -ENOMEM;
	kref_get(&dev->kref);
	af->dev = dev;
	af->filp = filp;

	down_read(&dev->io);
	ret = ava_slot_claim_free(dev, task_tgid_nr(current), false, &af->slot);
	if (ret)
		goto err_unlock_io;
	ret = ava_police_open(af);
	if (ret)
		goto err_unclaim;
	mutex_lock(&dev->lock);
	list_add(&af->node, &dev->files);
	mutex_unlock(&dev->lock);
	up_read(&dev->io);
	filp->private_data = af;
	return 0;

err_unclaim:
	mutex_lock(&dev->lock);
	ava_slot_unclaim(af->slot);
	mutex_unlock(&dev->lock);
err_unlock_io:
	up_read(&dev->io);
	ava_dev_put(dev);
	kfree(af);
	return ret;
}

static int ava_slot_release(struct inode *inode, struct file *filp)
{
	struct ava_file *af = filp->private_data;
	struct ava_dev *dev = af->dev;

	down_read(&dev->io);
	mutex_lock(&dev->lock);
	ava_slot_unclaim(af->slot);
	list_del(&af->node);
	mutex_unlock(&dev->lock);
	up_read(&dev->io);

	ava_police_release(af);
	ava_dev_put(dev);
	kfree(af);
	return 0;
}

/*
 * Any page range of the slot; a policed claim's process gets none of its
 * command ring, which only ava.ko writes (ava_police.c).
 */
static int ava_slot_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct ava_file *af = filp->private_data;
	struct ava_dev *dev = af->dev;
	u64 len = vma->vm_end - vma->vm_start;
	phys_addr_t start;
	int ret;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	switch (ava_layout_map_check(&dev->hdr, vma->vm_pgoff, len, PAGE_SIZE,
				     af->slot->claim_flags & AVA_CLAIM_POLICED)) {
	case 0:
		break;
	case -2:
		return -EACCES;
	default:
		return -EINVAL;
	}
	down_read(&dev->io);
	if (READ_ONCE(dev->gone)) {
		ret = -ENODEV;
		goto out;
	}
	start = dev->shm_phys + ava_layout_slot_off(&dev->hdr, af->slot->index);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_IO | VM_DONTEXPAND | VM_DONTDUMP;
#endif
	/*
	 * vm_page_prot stays cacheable: BAR2 is host RAM, mapped write-back in
	 * the kernel too. vm_iomap_memory() maps from vm_pgoff into the slot.
	 */
	ret = vm_iomap_memory(vma, start, dev->hdr.slot_size);
out:
	up_read(&dev->io);
	return ret;
}

/* -EAGAIN: keep waiting. Caller holds dev->io for reading. */
static int ava_slot_wait_check(struct ava_file *af, const u32 *word, u32 expected, int seq)
{
	struct ava_dev *dev = af->dev;
	struct ava_region_hdr *rh = ava_dev_region(dev, af->slot->index);

	if (READ_ONCE(dev->gone))
		return -ENODEV;
	if (READ_ONCE(rh->state) & (AVA_REGION_BROKEN | AVA_REGION_CLOSED))
		return -EPIPE;
	if (ava_dev_host_state(dev) != AVA_HOST_UP)
		return -EPIPE;
	if (READ_ONCE(*word) != expected)
		return 0;
	if (atomic_read(&af->slot->irq_seq) != seq)
		return 0;
	return -EAGAIN;
}

static int ava_slot_wait_poll(struct ava_file *af, const u32 *word, u32 expected, int seq,
			      unsigned int timeout_ms)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);
	unsigned int round;
	int ret;

	for (round = 0;; round++) {
		if (round < AVA_POLL_FAST_ROUNDS)
			usleep_range(AVA_POLL_FAST_MIN_US, AVA_POLL_FAST_MAX_US);
		else
			usleep_range(AVA_POLL_SLOW_MIN_US, AVA_POLL_SLOW_MAX_US);
		ret = ava_slot_wait_check(af, word, expected, seq);
		if (ret != -EAGAIN)
			return ret;
		if (signal_pending(current))
			return -EINTR;
		if (time_after_eq(jiffies, deadline))
			return -ETIMEDOUT;
	}
}

static int ava_slot_wait(struct ava_file *af, const struct ava_wait *w)
{
	struct ava_dev *dev = af->dev;
	struct ava_slot *slot = af->slot;
	unsigned int timeout_ms = min(w->timeout_ms, READ_ONCE(ava_wait_max_ms));
	const u32 *word;
	long left;
	int seq, ret;

	if (w->offset >= AVA_REGION_HDR_SIZE || w->offset % sizeof(u32) || w->flags)
		return -EINVAL;
	word = (const u32 *)((const u8 *)ava_dev_region(dev, slot->index) + w->offset);
	seq = atomic_read(&slot->irq_seq);
	ret = ava_slot_wait_check(af, word, w->expected, seq);
	if (ret != -EAGAIN)
		return ret;
	if (!timeout_ms)
		return -ETIMEDOUT;

	atomic64_inc(&slot->waits);
	if (!dev->doorbell) {
		ret = ava_slot_wait_poll(af, word, w->expected, seq, timeout_ms);
	} else {
		left = wait_event_interruptible_timeout(slot->wq,
			(ret = ava_slot_wait_check(af, word, w->expected, seq)) != -EAGAIN,
			msecs_to_jiffies(timeout_ms));
		if (left < 0)
			ret = -EINTR;
		else if (!left)
			ret = -ETIMEDOUT;
	}
	if (ret == -ETIMEDOUT)
		atomic64_inc(&slot->timeouts);
	return ret;
}

static long ava_slot_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct ava_file *af = filp->private_data;
	struct ava_dev *dev = af->dev;
	struct ava_slot *slot = af->slot;
	void __user *uarg = (void __user *)arg;
	struct ava_slot_info info;
	struct ava_wait w;
	long ret;

	switch (cmd) {
	case AVA_IOC_SLOT_INFO:
		if (READ_ONCE(dev->gone))
			return -ENODEV;
		/* the header copy never changes, and this file holds the slot's generation */
		memset(&info, 0, sizeof(info));
		info.index = slot->index;
		info.generation = slot->guest_gen;
		info.slot_size = dev->hdr.slot_size;
		info.cmd_size = dev->hdr.cmd_size;
		info.reply_size = dev->hdr.reply_size;
		info.heap_size = dev->hdr.heap_size;
		info.nslots = dev->hdr.nslots;
		info.flags = slot->claim_flags;
		return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
	case AVA_IOC_KICK:
		down_read(&dev->io);
		if (READ_ONCE(dev->gone)) {
			ret = -ENODEV;
		} else {
			if (dev->doorbell)
				atomic64_inc(&slot->kicks);
			ava_dev_ring(dev, AVA_DEV_SLOT_VECTOR(slot->index));
			ret = 0;
		}
		up_read(&dev->io);
		return ret;
	case AVA_IOC_WAIT:
		/* copied before taking dev->io: a faulting copy must not stall remove() */
		if (copy_from_user(&w, uarg, sizeof(w)))
			return -EFAULT;
		down_read(&dev->io);
		ret = READ_ONCE(dev->gone) ? -ENODEV : ava_slot_wait(af, &w);
		up_read(&dev->io);
		return ret;
	case AVA_IOC_SUBMIT:
		return ava_police_submit(af, uarg);
	case AVA_IOC_WAKE:
		ava_police_wake(slot);
		return 0;
	default:
		return -ENOTTY;
	}
}

const struct file_operations ava_slot_fops = {
	.owner = THIS_MODULE,
	.open = ava_slot_open,
	.release = ava_slot_release,
	.mmap = ava_slot_mmap,
	.unlocked_ioctl = ava_slot_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};
