/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ava.ko internals shared by its files: the device (one ivshmem PCI device
 * carrying the ava layout of include/ava/ivshmem.h), its slots and the open
 * files of /dev/ava.
 *
 * Locking, outermost first:
 *   ava_global_lock  the bound device pointer; netlink handlers hold it for
 *                    their whole run, so they never see a removed device
 *   dev->io          read-held by every file operation that touches shared
 *                    memory or BAR0; remove() takes it for writing after
 *                    setting dev->gone, so once it has it no such access is
 *                    in flight and none will start
 *   dev->lock        slot claims, local slot state, the lists of open files
 *                    and of kernel connections; remove() sets dev->gone
 *                    under it and fails every kernel connection listed
 *
 * Kernel connections (ava_kconn.c) take their own send mutex before dev->io
 * and their spinlock innermost; see ava_kcall_priv.h. A policed file's
 * submit mutex (ava_police.c) is taken before dev->io; the command table
 * registry's mutex is innermost.
 */
#ifndef AVA_PRIV_H
#define AVA_PRIV_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/uidgid.h>
#include <linux/pci.h>
#include <linux/rwsem.h>
#include <linux/wait.h>

#include "ava/ivshmem.h"

#define AVA_DRV_NAME "ava"

/* ivshmem BAR0 registers */
#define AVA_REG_IVPOSITION 8
#define AVA_REG_DOORBELL 12

struct ava_dev;

/* One slot of the shared memory, as ava.ko tracks it locally. */
struct ava_slot {
	struct ava_dev *dev;
	u32 index;
	/*
	 * Authoritative copies of this slot's guest line in shared memory:
	 * ava.ko writes that line but never reads it back, so the host
	 * cannot steer claims by scribbling on it.
	 */
	u32 guest_state;
	u32 guest_gen;
	u32 guest_pid;
	u32 policy_flags;
	u64 cmds_per_sec;
	u64 bytes_per_sec;
	u64 mem_quota;
	u32 claim_flags; /* AVA_CLAIM_* of the current claim, as written to the guest line */
	kuid_t guest_uid; /* the claiming process's euid: whose slot netlink shows it as */
	bool busy;   /* held by an open file or a kernel connection */
	bool kernel; /* held by a kernel connection (ava_kcall.c) */
	/* bumped by each interrupt that concerns the slot; AVA_IOC_WAIT returns on a change */
	atomic_t irq_seq;
	wait_queue_head_t wq;
	atomic64_t kicks;
	atomic64_t waits;
	atomic64_t interrupts;
	atomic64_t timeouts;
	atomic64_t refused; /* calls a command table refused (kernel and policed) */
};

/* dev_id of one MSI-X vector */
struct ava_vec {
	struct ava_dev *dev;
	u32 vector;
};

struct ava_dev {
	struct kref kref;
	struct pci_dev *pdev; /* referenced until the last put */
	void __iomem *regs;   /* BAR0 */
	void *shm;            /* BAR2, write-back mapping */
	phys_addr_t shm_phys;
	resource_size_t shm_len;
	struct ava_dev_hdr hdr; /* validated copy; the live header is only read for host_state */
	struct miscdevice misc;
	bool misc_registered;
	struct rw_semaphore io;
	struct mutex lock;
	bool gone;        /* set once by remove(), read under io or lock */
	bool doorbell;    /* MSI-X granted: the host serves doorbells and interrupts */
	bool per_slot_vectors; /* 1 + nslots vectors: vector 1 + i concerns slot i only */
	unsigned int nvecs;
	struct list_head files;
	struct list_head kconns; /* kernel connections on this device's slots, under lock */
	atomic64_t irqs; /* every interrupt handled, whichever vector */
	struct ava_vec vecs[1 + AVA_DEV_MAX_SLOTS];
	struct ava_slot slots[AVA_DEV_MAX_SLOTS];
};

struct ava_police;

/* An open file of /dev/ava: one claimed slot. */
struct ava_file {
	struct ava_dev *dev;
	struct ava_slot *slot;
	struct file *filp;
	struct list_head node; /* in dev->files */
	struct ava_police *police; /* a policed claim's state (ava_police.c), else NULL */
};

extern struct mutex ava_global_lock;
extern struct ava_dev *ava_global_dev; /* under ava_global_lock */
extern unsigned int ava_wait_max_ms;
extern bool ava_police_all; /* module parameter "police" */

/* ava_pci.c */
int ava_pci_register(void);
void ava_pci_unregister(void);
void ava_dev_put(struct ava_dev *dev);
void ava_dev_ring(struct ava_dev *dev, u32 vector);
u32 ava_dev_host_state(struct ava_dev *dev);
struct ava_slot_entry *ava_dev_entry(struct ava_dev *dev, u32 index);
struct ava_region_hdr *ava_dev_region(struct ava_dev *dev, u32 index);

/* ava_slot.c */
extern const struct file_operations ava_slot_fops;
void ava_slot_zap_all(struct ava_dev *dev);
void ava_slot_publish_policy(struct ava_slot *slot);
void ava_slot_release_stale(struct ava_dev *dev);
int ava_slot_claim_free(struct ava_dev *dev, u32 pid, bool kernel, struct ava_slot **out);
void ava_slot_unclaim(struct ava_slot *slot);
void ava_slot_or_state(struct ava_region_hdr *rh, u32 bits);

/* ava_kopen.c */
void ava_kconn_dev_gone(struct ava_dev *dev);

/* ava_netlink.c */
int ava_netlink_register(void);
void ava_netlink_unregister(void);

#endif /* AVA_PRIV_H */
