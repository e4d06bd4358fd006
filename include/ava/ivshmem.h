/* SPDX-License-Identifier: MIT */
/*
 * ava over ivshmem: the layout of a VM's shared-memory device (BAR2 of the
 * ivshmem-doorbell PCI device 1af4:1110 in the guest, a memfd owned by
 * `ava vmhost` on the host), the /dev/ava ioctls of ava.ko, and the generic
 * netlink family "ava". Compiles in the kernel and in user space.
 *
 *   0          4096         8192       4096 (1 + n)                        total_size
 *   +----------+------------+---+------------+----------+---+------------+----+
 *   | dev hdr  | entry 0    |...| entry n-1  | slot 0   |...| slot n-1   |(0) |
 *   | (host)   | 128 B+pad  |   | 128 B+pad  | slot_size|   | slot_size  |    |
 *   +----------+------------+---+------------+----------+---+------------+----+
 *              ^ the slot table: entry i at AVA_DEV_ENTRY_OFF(i), one page each
 *                                            ^ slots_off, slot i at
 *                                              slots_off + i * slot_size
 *
 * Each slot's table entry has a page of its own (layout version 2), so the
 * host worker of slot i maps exactly its entry's page and its slot: a worker
 * a hostile guest took over cannot touch another slot's entry (its ring
 * indices, counters or state). The rest of an entry's page is zero.
 *
 * Each slot is one region of include/ava/ring.h (region header page, command
 * ring, reply ring, heap) with features AVA_REGION_F_DOORBELL: one guest
 * process (the one that opened /dev/ava) is its guest side, one host worker
 * its worker side. A process maps its own slot and nothing else.
 *
 * The host writes the device header before the VM starts and changes only
 * host_state afterwards. ava.ko copies the header once at probe, checks the
 * copy (magic, version, sizes, every slot inside total_size, slots page
 * aligned, vectors) and uses only that copy.
 *
 * Slot table entry: the first cache line is written only by ava.ko, the
 * second only by the host. Each side reads the other's line with acquire
 * loads and treats it as untrusted numbers.
 *
 *   guest line:  guest_state  guest_gen  guest_pid  policy_flags  cmds_per_sec
 *                bytes_per_sec  mem_quota  claim_flags  checked_head
 *   host line:   host_state  host_gen  worker_pid  commands  bytes_in  bytes_out
 *                errors  cmd_tail
 *
 * Slot life cycle (gen counts claims; both gens start at 0, host_state IDLE):
 *   claimable      host_state == IDLE, host_gen == guest_gen, guest_state != CLAIMED,
 *                  and the slot is not disabled by policy
 *   open()         ava.ko zeroes the slot (rings and heap: nothing of an
 *                  earlier claim survives, whether or not the host scrubbed
 *                  it), writes a fresh region header into it (indices
 *                  zero, READY), stores guest_pid, then guest_gen + 1 and
 *                  guest_state = CLAIMED (release), and rings vector 0
 *   host           sees CLAIMED with guest_gen != host_gen: checks the region,
 *                  starts a worker on it, stores worker_pid, host_gen = guest_gen,
 *                  host_state = SERVING (release)
 *   release()      ava.ko ORs AVA_REGION_CLOSED into the region state, stores
 *                  guest_state = RELEASED, rings the slot's vector and vector 0
 *   host           once the worker has gone (it sees CLOSED and ends its
 *                  session, releasing the guest's objects), host_state = IDLE:
 *                  the slot is claimable again
 *   worker death   the host ORs AVA_REGION_BROKEN into the region state, stores
 *                  host_state = IDLE and interrupts the slot: the guest's
 *                  calls fail, and its release makes the slot claimable
 *
 * Policed claims (claim_flags & AVA_CLAIM_POLICED, latched at open() from
 * the slot's AVA_POLICY_POLICED): the process may not write the command
 * ring, which it cannot map (an mmap() covering it fails with EACCES). It hands whole messages to AVA_IOC_SUBMIT;
 * ava.ko checks each against the command table of the spec named in the
 * claim's HELLO (tables come from the spec modules, ava_cmds_register() in
 * kcall.h) and copies the ones it accepts into the ring. Since the process
 * can write the region header, the command ring's indices that matter live
 * in the slot table, which no process maps:
 *
 *   checked_head  (guest line) ava.ko's head: the host consumes only below it
 *   cmd_tail      (host line) the host's tail: ava.ko reuses only below it;
 *                 the host zeroes it before it shows SERVING for a claim,
 *                 and ava.ko reads it only while host_gen is the claim's
 *
 * The ring control block in the region header keeps its sleeping words
 * (a process that scribbles on them only delays itself). The host still
 * checks every command with the same table: a guest kernel that lies about
 * AVA_CLAIM_POLICED gains nothing.
 *
 * Doorbells and interrupts (ivshmem-doorbell, vectors = 1 + nslots): vector 0
 * is the control vector (slot table changes), vector 1 + i belongs to slot
 * i. The guest rings the host by writing (host_peer << 16) | vector to BAR0's
 * Doorbell register; the host interrupts the guest through the eventfd the
 * ivshmem server protocol gave it for that vector of the guest's peer.
 *
 * Waiting on a slot follows ring.h: the sleeper stores 1 in its word
 * (c_sleeping or sleeping of a ring control block in the slot's region
 * header), issues a full barrier, re-checks, and then waits: the guest with
 * AVA_IOC_WAIT (ava.ko sleeps while the word still holds the expected value,
 * waking on the slot's interrupt), the host on the eventfd of the slot's
 * vector. The waker stores 0 and rings (guest: AVA_IOC_KICK) or interrupts
 * (host).
 */
#ifndef AVA_IVSHMEM_H
#define AVA_IVSHMEM_H

#include "ava/ring.h"

#include <linux/ioctl.h>

#define AVA_DEV_MAGIC 0x44415641u /* "AVAD" read as little-endian bytes */
#define AVA_DEV_VERSION 2u /* 2: a page per slot table entry */
#define AVA_DEV_HDR_SIZE 4096u
#define AVA_DEV_TABLE_OFF 4096u    /* the slot table follows the header page */
#define AVA_DEV_ENTRY_STRIDE 4096u /* one page per entry */
#define AVA_DEV_MAX_SLOTS 32u      /* vectors stay few */
/* Where slot i's table entry lies, and where the table of n entries ends. */
#define AVA_DEV_ENTRY_OFF(i) (AVA_DEV_TABLE_OFF + (ava_u64)(i) * AVA_DEV_ENTRY_STRIDE)
#define AVA_DEV_TABLE_END(n) AVA_DEV_ENTRY_OFF(n)
#define AVA_DEV_CTL_VECTOR 0u
#define AVA_DEV_SLOT_VECTOR(i) (1u + (i))

/* ava_dev_hdr.host_state */
#define AVA_HOST_DOWN 0u /* no host serves the device (or it has gone) */
#define AVA_HOST_UP 1u

/*
 *   0 magic  4 version  8 features  12 host_state  16 total_size  24 nslots
 *  28 vectors  32 slots_off  40 slot_size  48 cmd_size  56 reply_size
 *  64 heap_size  72 host_peer  76 reserved up to 128
 */
struct ava_dev_hdr {
	ava_u32 magic;
	ava_u32 version;
	ava_u32 features;   /* none defined yet: zero */
	ava_u32 host_state; /* AVA_HOST_*; the only field that changes */
	ava_u64 total_size; /* size of the shared memory */
	ava_u32 nslots;     /* 1 ... AVA_DEV_MAX_SLOTS */
	ava_u32 vectors;    /* interrupt vectors the host serves: 1 + nslots */
	ava_u64 slots_off;  /* multiple of 4096, at or after AVA_DEV_TABLE_END(nslots) */
	ava_u64 slot_size;  /* multiple of 4096; one ring.h region each */
	ava_u64 cmd_size;   /* the layout of every slot's region: */
	ava_u64 reply_size; /*   header page, command ring, reply ring, heap */
	ava_u64 heap_size;  /*   in that order, each page aligned */
	ava_u32 host_peer;  /* the host's ivshmem peer id (< 65536) */
	ava_u8 reserved[52];
};
AVA_STATIC_ASSERT(sizeof(struct ava_dev_hdr) == 128, "ava_dev_hdr size");
AVA_STATIC_ASSERT(offsetof(struct ava_dev_hdr, host_peer) == 72, "ava_dev_hdr.host_peer");

/* ava_slot_entry.guest_state */
#define AVA_SLOT_FREE 0u
#define AVA_SLOT_CLAIMED 1u
#define AVA_SLOT_RELEASED 2u

/* ava_slot_entry.host_state */
#define AVA_SLOT_IDLE 0u
#define AVA_SLOT_SERVING 1u

/* ava_slot_entry.policy_flags */
#define AVA_POLICY_DISABLED 0x1u /* open() skips the slot */
#define AVA_POLICY_POLICED 0x2u  /* claims by processes are policed (AVA_CLAIM_POLICED) */

/* ava_slot_entry.claim_flags: fixed for one claim (guest_gen) */
#define AVA_CLAIM_POLICED 0x1u /* commands go through ava.ko: read checked_head, write cmd_tail */

struct ava_slot_entry {
	/* written by ava.ko */
	ava_u32 guest_state;
	ava_u32 guest_gen;
	ava_u32 guest_pid;
	ava_u32 policy_flags;
	ava_u64 cmds_per_sec;  /* policy for the host to enforce; 0 = unlimited */
	ava_u64 bytes_per_sec; /* policy; 0 = unlimited */
	ava_u64 mem_quota;     /* policy: device memory bytes; 0 = unlimited */
	ava_u32 claim_flags;   /* AVA_CLAIM_*, written before guest_state = CLAIMED */
	ava_u32 guest_pad;
	ava_u64 checked_head;  /* policed claims: the command ring's head (release store) */
	ava_u8 guest_reserved[8];
	/* written by the host */
	ava_u32 host_state;
	ava_u32 host_gen;
	ava_u32 worker_pid;
	ava_u32 host_pad;
	ava_u64 commands;  /* messages the worker received */
	ava_u64 bytes_in;  /* bytes the worker received */
	ava_u64 bytes_out; /* bytes the worker sent */
	ava_u64 errors;    /* error replies and protocol errors */
	ava_u64 cmd_tail;  /* policed claims: the command ring's tail (release store) */
	ava_u8 host_reserved[8];
};
AVA_STATIC_ASSERT(sizeof(struct ava_slot_entry) == 2 * AVA_CACHELINE, "ava_slot_entry size");
AVA_STATIC_ASSERT(offsetof(struct ava_slot_entry, host_state) == AVA_CACHELINE,
		  "ava_slot_entry host line");
AVA_STATIC_ASSERT(offsetof(struct ava_slot_entry, claim_flags) == 40, "ava_slot_entry.claim_flags");
AVA_STATIC_ASSERT(offsetof(struct ava_slot_entry, checked_head) == 48,
		  "ava_slot_entry.checked_head");
AVA_STATIC_ASSERT(offsetof(struct ava_slot_entry, cmd_tail) == 112, "ava_slot_entry.cmd_tail");
AVA_STATIC_ASSERT(sizeof(struct ava_slot_entry) <= AVA_DEV_ENTRY_STRIDE,
		  "a slot table entry fits its page");

/* ---- /dev/ava ---- */

struct ava_slot_info {
	ava_u32 index;      /* slot number */
	ava_u32 generation; /* guest_gen of this claim */
	ava_u64 slot_size;  /* bytes to mmap at offset 0 */
	ava_u64 cmd_size;
	ava_u64 reply_size;
	ava_u64 heap_size;
	ava_u32 nslots;
	ava_u32 flags; /* AVA_CLAIM_* of this claim */
};
AVA_STATIC_ASSERT(sizeof(struct ava_slot_info) == 48, "ava_slot_info size");

/*
 * AVA_IOC_WAIT: sleeps while the u32 at byte `offset` of the slot's region
 * header still equals `expected`, at most timeout_ms (0: do not sleep).
 * Returns 0 once it differs (or on any interrupt of the slot: callers
 * re-check), -ETIMEDOUT, -EPIPE when the region is BROKEN or CLOSED or the
 * host is down, -EINTR on a signal, -EINVAL for an offset outside the
 * header page or not 4-aligned.
 */
struct ava_wait {
	ava_u32 offset;
	ava_u32 expected;
	ava_u32 timeout_ms;
	ava_u32 flags; /* zero */
};
AVA_STATIC_ASSERT(sizeof(struct ava_wait) == 16, "ava_wait size");

/*
 * AVA_IOC_SUBMIT (policed claims only; -EPERM otherwise): hands ava.ko the
 * whole messages in the gather list iov[0 .. iovcnt) of total bytes. ava.ko
 * takes them in order. It copies each one it accepts into the command ring
 * (waiting, killable, while the ring is full) and stops after the first it
 * refuses, which it counts in the slot's "refused": done says how many bytes
 * it took (the refused message included) and status why it refused that one
 * (an AVA_E_*, as the host would have answered), or 0. The caller submits
 * the rest again. Returns 0 with done == total when every message was taken,
 * or: -EINVAL (framing: a header that is not one, a message longer than what
 * is left, iovcnt out of range, non-zero flags), -EFAULT, -EPIPE (the region
 * is BROKEN or CLOSED, or the host is down), -EINTR (fatal signal; a message
 * cut short breaks the region), -ETIMEDOUT (the host consumed nothing for
 * ava_wait_max_ms while the ring was full; the region is then BROKEN).
 *
 * What ava.ko checks: the first message is HELLO, naming a spec whose
 * table is registered (else status AVA_E_UNSUPPORTED, or AVA_E_SPEC when the
 * name is registered with another id or layout hash), and no HELLO follows;
 * CALLs carry that spec's id and pass its table (function, exact argument
 * block, class, each buffer's direction, bound, flags and range in the
 * payload or the heap); CALLBACK_DONE and GOODBYE have no argument block.
 */
struct ava_submit {
	ava_u64 iov;    /* user address of struct iovec[iovcnt] */
	ava_u32 iovcnt; /* 1 ... AVA_SUBMIT_MAX_IOV */
	ava_u32 flags;  /* zero */
	ava_u64 total;  /* bytes in the gather list: whole messages */
	ava_u64 done;   /* out: bytes taken */
	ava_s32 status; /* out: AVA_E_* of the refused message that ends at done, or 0 */
	ava_u32 pad;
};
AVA_STATIC_ASSERT(sizeof(struct ava_submit) == 40, "ava_submit size");
#define AVA_SUBMIT_MAX_IOV 1024u

#define AVA_IOC_MAGIC 0xA7
#define AVA_IOC_SLOT_INFO _IOR(AVA_IOC_MAGIC, 1, struct ava_slot_info)
#define AVA_IOC_KICK _IO(AVA_IOC_MAGIC, 2) /* rings the host on the slot's vector */
#define AVA_IOC_WAIT _IOW(AVA_IOC_MAGIC, 3, struct ava_wait)
#define AVA_IOC_SUBMIT _IOWR(AVA_IOC_MAGIC, 4, struct ava_submit)
/* AVA_IOC_WAKE: ends the AVA_IOC_WAITs of this slot (they return 0 and re-check). */
#define AVA_IOC_WAKE _IO(AVA_IOC_MAGIC, 5)

/* ---- generic netlink family "ava" (avactl) ---- */

#define AVA_GENL_NAME "ava"
#define AVA_GENL_VERSION 1

enum ava_genl_cmd {
	AVA_CMD_UNSPEC,
	AVA_CMD_GET_SLOT,   /* doit with AVA_A_SLOT, or dump: one message per slot */
	AVA_CMD_SET_POLICY, /* AVA_A_SLOT (absent: every slot) + AVA_A_POLICY_*; admin only */
	AVA_CMD_GET_DEVICE, /* the device header and module counters */
	__AVA_CMD_MAX,
};
#define AVA_CMD_MAX (__AVA_CMD_MAX - 1)

enum ava_genl_attr {
	AVA_A_UNSPEC,
	AVA_A_PAD,          /* alignment of u64 attributes */
	AVA_A_SLOT,         /* u32 */
	AVA_A_GUEST_STATE,  /* u32 AVA_SLOT_FREE/CLAIMED/RELEASED */
	AVA_A_HOST_STATE,   /* u32 AVA_SLOT_IDLE/SERVING */
	AVA_A_GENERATION,   /* u32 */
	AVA_A_PID,          /* u32: the guest process holding the slot */
	AVA_A_BROKEN,       /* u8: region marked BROKEN */
	AVA_A_KICKS,        /* u64: doorbells rung (ava.ko) */
	AVA_A_WAITS,        /* u64: AVA_IOC_WAIT calls that slept */
	AVA_A_INTERRUPTS,   /* u64: interrupts received for the slot */
	AVA_A_TIMEOUTS,     /* u64: waits that timed out */
	AVA_A_COMMANDS,     /* u64: host-reported, see ava_slot_entry */
	AVA_A_BYTES_IN,     /* u64: host-reported */
	AVA_A_BYTES_OUT,    /* u64: host-reported */
	AVA_A_ERRORS,       /* u64: host-reported */
	AVA_A_POLICY_ENABLED,       /* u8 */
	AVA_A_POLICY_CMDS_PER_SEC,  /* u64, 0 = unlimited */
	AVA_A_POLICY_BYTES_PER_SEC, /* u64, 0 = unlimited */
	AVA_A_POLICY_MEM_QUOTA,     /* u64, 0 = unlimited */
	AVA_A_NSLOTS,       /* u32 */
	AVA_A_SLOT_SIZE,    /* u64 */
	AVA_A_HOST_UP,      /* u8 */
	AVA_A_OPEN_SLOTS,   /* u32 */
	AVA_A_VECTORS,      /* u32: MSI-X vectors ava.ko got; 0 = none, waits poll */
	AVA_A_KERNEL,       /* u8: the slot is held by a kernel connection (kcall.h), not a process */
	AVA_A_REFUSED,      /* u64: calls ava.ko refused by the spec's command table */
	AVA_A_POLICY_POLICED, /* u8: processes' claims of the slot are policed */
	AVA_A_POLICED,      /* u8: the current claim is policed (AVA_CLAIM_POLICED) */
	AVA_A_TABLES,       /* u32 (GET_DEVICE): command tables registered with ava.ko */
	__AVA_A_MAX,
};
#define AVA_A_MAX (__AVA_A_MAX - 1)

#endif /* AVA_IVSHMEM_H */
