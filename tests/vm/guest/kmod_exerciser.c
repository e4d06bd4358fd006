/* SPDX-License-Identifier: MIT */
/*
 * kmod_exerciser: a randomised exerciser of ava.ko from user space, run in
 * the test guest (test_vm_exerciser) as root. For a bounded time (and at
 * most a number of operations per thread) several processes, each with
 * several threads, share a table of open /dev/ava and /dev/ava_call files
 * and, at random: open and close them (also one another's, concurrently),
 * mmap them with odd offsets, lengths, protections and flags and touch what
 * got mapped, issue every /dev/ava ioctl (and unknown ones) with random and
 * boundary arguments and bad pointers, hand AVA_IOC_SUBMIT mutated messages
 * (from a valid HELLO and demo calls: flipped bits, lying lengths, odd
 * kinds, flags and ids, gather lists of odd shapes and bad addresses),
 * send requests with random attributes to both generic netlink families
 * ("ava" and "ava_call"), and fork short-lived children that die (killed)
 * while they sleep in AVA_IOC_WAIT. The first process also tries to unload
 * ava.ko now and then (it must be refused while files are open), and, with
 * --reload KO, has every process drop its files now and then (opening and
 * closing at once, and talking netlink, meanwhile) while it unloads ava.ko,
 * and loads it again whenever an unload succeeded.
 *
 *   kmod_exerciser [--seed N] [--seconds S] [--ops N] [--procs P]
 *                  [--threads T] [--reload PATH_TO_AVA_KO [--params P]]
 *                  [--unbind PCI_ADDRESS]
 *
 * With --unbind the first process, instead of unloading, unbinds the PCI
 * device from ava.ko through sysfs and binds it again, now and then: files
 * then fail with ENODEV, mappings fault (counted as faults).
 *
 * Prints "seed N" first (rerun with --seed N to repeat a failing run, as
 * far as scheduling allows), then counts per operation. Exit status 0 when
 * it ran to the end: ava.ko's bugs show in the kernel log, which the test
 * checks; 1 when an unload succeeded while this program held files open,
 * 2 for bad arguments or setup failures.
 */
#define _GNU_SOURCE
#include "ava/ivshmem.h"
#include "ava/knetlink.h"
#include "demo_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 8
#define MAX_THREADS 16
#define FD_TABLE 24
#define PAGE 4096ul

static uint64_t opt_seed;
static unsigned opt_seconds = 60;
static unsigned long opt_ops = 1000000;
static unsigned opt_procs = 3;
static unsigned opt_threads = 4;
static const char *opt_reload;
static const char *opt_params = "";
static const char *opt_unbind; /* PCI address of the ivshmem device bound to ava */
static long long deadline_ms;

/* one process's shared table: threads use and close one another's files */
static _Atomic int fds[FD_TABLE];
/*
 * With --reload, shared by all processes: while set, threads hold no file
 * (they open and close at once, and talk netlink), so that the unloads of
 * the first process can succeed, racing with those opens and requests.
 */
static _Atomic int *drain;

enum op {
	OP_OPEN, OP_CLOSE, OP_MMAP, OP_IOCTL, OP_WAIT, OP_SUBMIT, OP_NL_AVA, OP_NL_CALL,
	OP_CALLDEV, OP_CHILD, OP_NOPS
};
static const char *const op_names[OP_NOPS] = {
	"open", "close", "mmap", "ioctl", "wait", "submit", "nl-ava", "nl-call", "ava_call", "child"
};
static _Atomic unsigned long op_count[OP_NOPS];
static _Atomic unsigned long faults; /* SIGBUS/SIGSEGV in a mapping we touched */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* xorshift64*: one state per thread */
struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545F4914F6CDD1Dull;
}

static uint64_t below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

static void fill_random(struct rng *r, void *p, size_t n)
{
	uint8_t *b = p;

	while (n--)
		*b++ = (uint8_t)rnd(r);
}

/* A number that is often a boundary: 0, 1, -1, a power of two and its neighbours. */
static uint64_t boundary(struct rng *r)
{
	static const uint64_t fixed[] = {
		0, 1, 2, 3, 4, 7, 8, 63, 64, 4095, 4096, 4097, 8192, 65535, 65536,
		1u << 20, (1u << 20) + 1, 0x7fffffffull, 0x80000000ull, 0xffffffffull,
		0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull,
	};
	uint64_t v;

	switch (below(r, 4)) {
	case 0:
		return fixed[below(r, sizeof(fixed) / sizeof(fixed[0]))];
	case 1:
		v = 1ull << below(r, 64);
		return v + below(r, 3) - 1;
	case 2:
		return below(r, 1u << 16);
	default:
		return rnd(r);
	}
}

/* ---- touching mappings: a fault (e.g. a device removed) is counted, not fatal ---- */

/* volatile: the handler reads it, so the stores around the accesses must stay */
static __thread sigjmp_buf *volatile touch_jmp;

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
	char msg[96];
	int n;

	(void)ctx;
	if (touch_jmp)
		siglongjmp(*touch_jmp, 1);
	/* not in a mapping we touched: a bug of this program, said before it dies */
	n = snprintf(msg, sizeof(msg), "kmod_exerciser: signal %d (code %d) at %p\n", sig,
		     si->si_code, si->si_addr);
	if (n > 0)
		(void)!write(2, msg, (size_t)n);
	_exit(3);
}

static void touch(struct rng *r, volatile uint8_t *p, size_t len, int prot)
{
	sigjmp_buf jb;
	unsigned i;

	if (sigsetjmp(jb, 1)) {
		touch_jmp = NULL;
		faults++;
		return;
	}
	touch_jmp = &jb;
	for (i = 0; i < 8 && len; i++) {
		size_t off = below(r, len);

		if (prot & PROT_READ)
			(void)p[off];
		/* never the region header page: the host reads it as the claim's own */
		if ((prot & PROT_WRITE) && below(r, 2))
			p[off] = (uint8_t)rnd(r);
	}
	touch_jmp = NULL;
}

/* ---- the file table ---- */

static int pick_fd(struct rng *r)
{
	return atomic_load(&fds[below(r, FD_TABLE)]);
}

static void op_open(struct rng *r)
{
	static const char *const paths[] = { "/dev/ava", "/dev/ava", "/dev/ava", AVA_KNL_DEVICE };
	static const int flags[] = { O_RDWR, O_RDONLY, O_WRONLY, O_RDWR | O_NONBLOCK };
	int fd = open(paths[below(r, 4)], flags[below(r, 4)] | O_CLOEXEC);
	int old;

	if (fd < 0)
		return;
	old = atomic_exchange(&fds[below(r, FD_TABLE)], fd);
	if (old >= 0)
		close(old);
}

static void op_close(struct rng *r)
{
	int fd = atomic_exchange(&fds[below(r, FD_TABLE)], -1);

	if (fd >= 0)
		close(fd);
}

static void op_mmap(struct rng *r)
{
	static const int prots[] = { PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE, PROT_NONE,
				     PROT_READ | PROT_EXEC };
	static const int mflags[] = { MAP_SHARED, MAP_SHARED, MAP_PRIVATE, MAP_SHARED | MAP_POPULATE,
				      MAP_SHARED | MAP_NORESERVE };
	struct ava_slot_info info;
	int fd = pick_fd(r);
	uint64_t len, off;
	int prot = prots[below(r, 5)];
	void *p;

	if (fd < 0)
		return;
	if (ioctl(fd, AVA_IOC_SLOT_INFO, &info))
		info.slot_size = 8ull << 20; /* /dev/ava_call, or a closed file */
	switch (below(r, 5)) {
	case 0: /* the whole slot and its parts */
		off = below(r, 4) * PAGE;
		len = info.slot_size - off;
		break;
	case 1: /* near the end of the slot */
		off = info.slot_size - below(r, 3) * PAGE;
		len = (below(r, 3) + 1) * PAGE;
		break;
	case 2: /* within, random */
		off = below(r, info.slot_size / PAGE + 2) * PAGE;
		len = (below(r, 64) + 1) * PAGE - below(r, 2) * below(r, PAGE);
		break;
	case 3: /* boundary numbers, mostly refused by mm or ava.ko */
		off = boundary(r) & ~(PAGE - 1);
		len = boundary(r);
		break;
	default: /* policed claims: the header page and [reply_off, ...) */
		off = below(r, 2) ? 0 : PAGE + (below(r, 2) ? 0 : PAGE);
		len = PAGE * (below(r, 3) + 1);
		break;
	}
	if (!len || len > (1ull << 32))
		len = PAGE;
	p = mmap(NULL, len, prot, mflags[below(r, 5)], fd, (off_t)off);
	if (p == MAP_FAILED)
		return;
	/* writes only past the region header page, which the worker reads as the claim's */
	if (off >= PAGE)
		touch(r, p, len, prot);
	else if (len > PAGE)
		touch(r, (uint8_t *)p + PAGE, len - PAGE, prot);
	else
		touch(r, p, len, prot & PROT_READ);
	munmap(p, len);
}

/* A pointer argument: NULL, a bad address, a kernel address, or a buffer of random bytes. */
static void *bad_or_buf(struct rng *r, void *buf, size_t n)
{
	switch (below(r, 8)) {
	case 0:
		return NULL;
	case 1:
		return (void *)(uintptr_t)1;
	case 2:
		return (void *)(uintptr_t)0xffff888000000000ull;
	case 3:
		return (void *)(uintptr_t)(0x7fffffffeull << 12); /* the last user page */
	default:
		fill_random(r, buf, n);
		return buf;
	}
}

static void op_ioctl(struct rng *r)
{
	static const unsigned cmds[] = { AVA_IOC_SLOT_INFO, AVA_IOC_KICK, AVA_IOC_WAIT,
					 AVA_IOC_SUBMIT, AVA_IOC_WAKE };
	uint8_t buf[256];
	int fd = pick_fd(r);
	unsigned cmd;

	if (fd < 0)
		return;
	switch (below(r, 4)) {
	case 0: /* a known number with other sizes and directions */
		cmd = _IOC(below(r, 4), AVA_IOC_MAGIC, below(r, 8), below(r, 256));
		break;
	case 1:
		cmd = (unsigned)rnd(r);
		break;
	default:
		cmd = cmds[below(r, 5)];
		break;
	}
	/* a bounded wait: AVA_IOC_WAIT's arguments are op_wait's business */
	if (cmd == AVA_IOC_WAIT)
		return;
	if (cmd == AVA_IOC_SUBMIT) {
		/* random bytes for a struct ava_submit: kept short by iovcnt and total */
		struct ava_submit *s = (struct ava_submit *)buf;

		fill_random(r, buf, sizeof(*s));
		s->iov = (uintptr_t)bad_or_buf(r, buf + 64, 128);
		s->iovcnt = (unsigned)below(r, 1100);
		s->total = boundary(r);
		ioctl(fd, cmd, below(r, 8) ? (void *)s : bad_or_buf(r, buf, sizeof(buf)));
		return;
	}
	ioctl(fd, cmd, bad_or_buf(r, buf, sizeof(buf)));
}

static void op_wait(struct rng *r)
{
	struct ava_wait w;
	int fd = pick_fd(r);

	if (fd < 0)
		return;
	w.offset = below(r, 3) ? (uint32_t)below(r, 64) * 4 : (uint32_t)boundary(r);
	w.expected = below(r, 2) ? (uint32_t)boundary(r) : 0;
	w.timeout_ms = (uint32_t)below(r, 20); /* a thread waking it may come, or not */
	w.flags = below(r, 8) ? 0 : (uint32_t)rnd(r);
	if (!below(r, 16)) {
		ioctl(fd, AVA_IOC_WAIT, bad_or_buf(r, &w, 0));
		return;
	}
	ioctl(fd, AVA_IOC_WAIT, &w);
	if (!below(r, 4))
		ioctl(pick_fd(r), AVA_IOC_WAKE);
}

/* ---- SUBMIT with mutated messages ---- */

struct msgbuf {
	uint8_t b[4096];
	size_t len;
};

static void msg_hdr(struct msgbuf *m, unsigned kind, unsigned func, unsigned flags,
		    size_t args_len, size_t payload)
{
	struct ava_msg_hdr *h = (struct ava_msg_hdr *)m->b;

	memset(m->b, 0, sizeof(*h) + args_len + payload);
	h->magic = AVA_MSG_MAGIC;
	h->abi_version = AVA_ABI_VERSION;
	h->kind = kind;
	h->spec_id = AVA_DEMO_SPEC_ID;
	h->func_id = func;
	h->flags = flags;
	h->args_len = args_len;
	h->total_len = sizeof(*h) + args_len + payload;
	h->thread_id = getpid();
	h->call_id = 1;
	m->len = h->total_len;
}

/* A valid message of the demo spec, one of a few kinds (kind 0: a HELLO). */
static void valid_msg(struct rng *r, struct msgbuf *m, unsigned kind)
{
	struct ava_msg_hdr *h;

	switch (kind) {
	case 0: {
		struct ava_hello *a;

		msg_hdr(m, AVA_MSG_HELLO, 0, 0, sizeof(*a), 0);
		a = (struct ava_hello *)(m->b + sizeof(struct ava_msg_hdr));
		ava_hello_fill(a, AVA_DEMO_SPEC_ID, AVA_DEMO_SPEC_HASH, AVA_DEMO_SPEC_NAME, getpid(),
			       "test");
		break;
	}
	case 1:
		msg_hdr(m, AVA_MSG_CALL, AVA_DEMO_FN_DEMO_VERSION, AVA_F_SYNC,
			sizeof(struct ava_demo_demo_version_call), 0);
		break;
	case 2: {
		struct ava_demo_demo_obj_write_call *a;
		size_t pay = 8 * (below(r, 32) + 1);

		msg_hdr(m, AVA_MSG_CALL, AVA_DEMO_FN_DEMO_OBJ_WRITE, AVA_F_SYNC, sizeof(*a), pay);
		a = (struct ava_demo_demo_obj_write_call *)(m->b + sizeof(struct ava_msg_hdr));
		a->obj = below(r, 4);
		a->data.flags = AVA_BUF_PRESENT | AVA_BUF_IN;
		a->data.offset = 0;
		a->data.length = pay - 1 - below(r, 7);
		break;
	}
	case 3:
		msg_hdr(m, AVA_MSG_GOODBYE, 0, 0, 0, 0);
		break;
	default:
		msg_hdr(m, AVA_MSG_CALLBACK_DONE, (unsigned)below(r, 4), 0, 0, 0);
		break;
	}
	h = (struct ava_msg_hdr *)m->b;
	h->call_id = rnd(r);
}

static void mutate(struct rng *r, struct msgbuf *m)
{
	struct ava_msg_hdr *h = (struct ava_msg_hdr *)m->b;
	unsigned n = (unsigned)below(r, 4), i;

	for (i = 0; i < n; i++) {
		switch (below(r, 10)) {
		case 0: /* flip bits anywhere */
			m->b[below(r, m->len)] ^= (uint8_t)(1u << below(r, 8));
			break;
		case 1:
			h->total_len = boundary(r);
			break;
		case 2:
			h->args_len = (uint32_t)boundary(r);
			break;
		case 3:
			h->kind = (uint16_t)below(r, 10);
			break;
		case 4:
			h->flags = (uint32_t)below(r, 16);
			break;
		case 5:
			h->func_id = (uint32_t)(below(r, 2) ? below(r, 40) : boundary(r));
			break;
		case 6:
			h->spec_id = (uint32_t)below(r, 8);
			break;
		case 7: /* cut short or grown: the gather list says another length */
			m->len = below(r, 2) ? below(r, m->len + 1) : m->len + below(r, 64);
			break;
		case 8:
			h->reserved = (uint32_t)rnd(r);
			break;
		default:
			fill_random(r, m->b + sizeof(*h), below(r, 64));
			break;
		}
	}
	if (m->len > sizeof(m->b))
		m->len = sizeof(m->b);
}

static uint8_t *hole; /* a page no one may read: EFAULT mid-message */

static void op_submit(struct rng *r)
{
	struct msgbuf msgs[4];
	struct iovec iov[12];
	struct ava_submit s;
	unsigned nmsg = (unsigned)below(r, 4) + 1, niov = 0, i;
	uint64_t total = 0;
	int fd = pick_fd(r);

	if (fd < 0)
		return;
	for (i = 0; i < nmsg; i++) {
		/* often a good HELLO first: the claim's later messages get past it */
		if (!i && below(r, 2)) {
			valid_msg(r, &msgs[i], 0);
		} else {
			valid_msg(r, &msgs[i], (unsigned)below(r, 5));
			if (below(r, 3))
				mutate(r, &msgs[i]);
		}
		/* one message in one to three pieces */
		if (below(r, 2) || msgs[i].len < 2) {
			iov[niov].iov_base = msgs[i].b;
			iov[niov++].iov_len = msgs[i].len;
		} else {
			size_t cut = below(r, msgs[i].len - 1) + 1;

			iov[niov].iov_base = msgs[i].b;
			iov[niov++].iov_len = cut;
			iov[niov].iov_base = msgs[i].b + cut;
			iov[niov++].iov_len = msgs[i].len - cut;
		}
		total += msgs[i].len;
	}
	if (!below(r, 10) && hole != MAP_FAILED) {
		iov[niov].iov_base = hole;
		iov[niov++].iov_len = below(r, PAGE) + 1;
		total += iov[niov - 1].iov_len;
	}
	memset(&s, 0, sizeof(s));
	s.iov = (uintptr_t)iov;
	s.iovcnt = niov;
	s.total = total;
	switch (below(r, 12)) {
	case 0:
		s.total = boundary(r);
		break;
	case 1:
		s.iovcnt = (uint32_t)(below(r, 2) ? below(r, 1100) : boundary(r));
		if (s.iovcnt > 12)
			s.iov = (uintptr_t)bad_or_buf(r, iov, 0);
		break;
	case 2:
		s.flags = (uint32_t)rnd(r);
		break;
	case 3:
		iov[below(r, niov)].iov_base = bad_or_buf(r, msgs[0].b, 0);
		break;
	case 4:
		iov[below(r, niov)].iov_len = boundary(r);
		break;
	default:
		break;
	}
	ioctl(fd, AVA_IOC_SUBMIT, &s);
}

/* ---- generic netlink ---- */

struct nlreq {
	struct nlmsghdr nlh;
	struct genlmsghdr g;
	uint8_t attrs[1024];
};

static uint16_t resolve_family(int sock, const char *name)
{
	struct nlreq q;
	uint8_t rx[8192];
	struct nlattr *a;
	struct nlmsghdr *h;
	ssize_t n;
	int len;

	memset(&q, 0, sizeof(q));
	q.nlh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	q.nlh.nlmsg_type = GENL_ID_CTRL;
	q.nlh.nlmsg_flags = NLM_F_REQUEST;
	q.g.cmd = CTRL_CMD_GETFAMILY;
	q.g.version = 1;
	a = (struct nlattr *)((uint8_t *)&q + q.nlh.nlmsg_len);
	a->nla_type = CTRL_ATTR_FAMILY_NAME;
	a->nla_len = NLA_HDRLEN + strlen(name) + 1;
	memcpy((uint8_t *)a + NLA_HDRLEN, name, strlen(name) + 1);
	q.nlh.nlmsg_len += NLA_ALIGN(a->nla_len);
	if (send(sock, &q, q.nlh.nlmsg_len, 0) < 0)
		return 0;
	n = recv(sock, rx, sizeof(rx), 0);
	h = (struct nlmsghdr *)rx;
	if (n <= 0 || !NLMSG_OK(h, (size_t)n) || h->nlmsg_type != GENL_ID_CTRL)
		return 0;
	len = (int)h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
	for (a = (struct nlattr *)((uint8_t *)NLMSG_DATA(h) + GENL_HDRLEN);
	     len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= len;
	     len -= NLA_ALIGN(a->nla_len), a = (struct nlattr *)((uint8_t *)a + NLA_ALIGN(a->nla_len)))
		if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID)
			return *(uint16_t *)((uint8_t *)a + NLA_HDRLEN);
	return 0;
}

static void put_attr(struct rng *r, struct nlreq *q, uint16_t type, size_t len)
{
	struct nlattr *a = (struct nlattr *)((uint8_t *)q + NLMSG_ALIGN(q->nlh.nlmsg_len));
	size_t room = sizeof(*q) - NLMSG_ALIGN(q->nlh.nlmsg_len);

	if (NLA_ALIGN(NLA_HDRLEN + len) > room)
		return;
	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	/* numbers that mean something (slot indices, small counts) as often as noise */
	if (len == 4 && below(r, 2))
		*(uint32_t *)((uint8_t *)a + NLA_HDRLEN) = (uint32_t)below(r, 40);
	else if (len == 8 && below(r, 2))
		*(uint64_t *)((uint8_t *)a + NLA_HDRLEN) = boundary(r);
	else if (len == 1)
		*((uint8_t *)a + NLA_HDRLEN) = (uint8_t)below(r, 3);
	else
		fill_random(r, (uint8_t *)a + NLA_HDRLEN, len);
	q->nlh.nlmsg_len = NLMSG_ALIGN(q->nlh.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

/* Sends one request of random shape to a family and drains the answers (bounded). */
static void nl_request(struct rng *r, int call_family)
{
	static const size_t lens[] = { 0, 1, 2, 4, 8, 3, 16, 64, 200 };
	const char *name = call_family ? AVA_KNL_GENL_NAME : AVA_GENL_NAME;
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	struct nlreq q;
	uint8_t rx[16384];
	uint16_t family;
	unsigned i, n;
	int sock, rounds;

	sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (sock < 0)
		return;
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	family = resolve_family(sock, name);
	if (!family)
		goto out;
	memset(&q, 0, sizeof(q));
	q.nlh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	q.nlh.nlmsg_type = family;
	q.nlh.nlmsg_flags = NLM_F_REQUEST | (below(r, 2) ? NLM_F_ACK : 0) |
			    (below(r, 3) ? 0 : NLM_F_DUMP);
	q.nlh.nlmsg_seq = (uint32_t)rnd(r);
	q.g.cmd = (uint8_t)(below(r, 8) ? below(r, 7) : rnd(r));
	q.g.version = (uint8_t)(below(r, 4) ? 1 : rnd(r));
	n = (unsigned)below(r, 6);
	for (i = 0; i < n; i++) {
		uint16_t type = (uint16_t)(below(r, 8) ? below(r, call_family ? 8 : 32) : rnd(r));

		put_attr(r, &q, type, lens[below(r, sizeof(lens) / sizeof(lens[0]))]);
	}
	if (!below(r, 10)) /* a length that lies */
		q.nlh.nlmsg_len = (uint32_t)below(r, sizeof(q) + 1);
	if (send(sock, &q, q.nlh.nlmsg_len, 0) < 0)
		goto out;
	/* a registered "worker" (ava_call REGISTER) is unregistered by the close below */
	for (rounds = 0; rounds < 64; rounds++) {
		ssize_t got = recv(sock, rx, sizeof(rx), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)rx;

		if (got <= 0)
			break;
		if (NLMSG_OK(h, (size_t)got) &&
		    (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR))
			break;
	}
out:
	close(sock);
}

/* /dev/ava_call: the netlink carrier's shared area, mapped at odd places */
static void op_calldev(struct rng *r)
{
	int fd = open(AVA_KNL_DEVICE, O_RDWR | O_CLOEXEC);
	uint64_t len = below(r, 2) ? (below(r, 4) + 1) << 20 : boundary(r) & ~(PAGE - 1);
	uint64_t off = below(r, 2) ? below(r, 8) * (8ull << 20) : boundary(r) & ~(PAGE - 1);
	void *p;

	if (fd < 0)
		return;
	if (!len || len > (1ull << 32))
		len = PAGE;
	p = mmap(NULL, len, PROT_READ | (below(r, 2) ? PROT_WRITE : 0), MAP_SHARED, fd, (off_t)off);
	if (p != MAP_FAILED) {
		touch(r, p, len, PROT_READ);
		munmap(p, len);
	}
	if (below(r, 2))
		ioctl(fd, (unsigned)rnd(r), bad_or_buf(r, &len, 0));
	close(fd);
}

/* A child that claims a slot and sleeps in AVA_IOC_WAIT until it is killed. */
static void op_child(struct rng *r)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return;
	if (pid == 0) {
		struct ava_wait w = { .offset = 0, .expected = AVA_REGION_MAGIC,
				      .timeout_ms = 60000 };
		int fd = open("/dev/ava", O_RDWR);
		void *p = MAP_FAILED;

		if (fd >= 0 && below(r, 2))
			p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0);
		for (;;)
			if (fd < 0 || ioctl(fd, AVA_IOC_WAIT, &w))
				break;
		(void)p;
		_exit(0);
	}
	usleep((useconds_t)below(r, 50000));
	kill(pid, below(r, 2) ? SIGKILL : SIGTERM);
	waitpid(pid, &status, 0);
}

/* ---- threads and processes ---- */

struct worker {
	pthread_t tid;
	struct rng rng;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned long i;

	for (i = 0; i < opt_ops && now_ms() < deadline_ms; i++) {
		unsigned op = (unsigned)below(&w->rng, 100);
		enum op kind;

		if (atomic_load(drain)) {
			unsigned j;
			int fd;

			for (j = 0; j < FD_TABLE; j++) {
				fd = atomic_exchange(&fds[j], -1);
				if (fd >= 0)
					close(fd);
			}
			/* open and close at once, or netlink: racing with the unload */
			if (op < 50) {
				fd = open(below(&w->rng, 4) ? "/dev/ava" : AVA_KNL_DEVICE,
					  O_RDWR | O_CLOEXEC);
				if (fd >= 0)
					close(fd);
				op_count[OP_OPEN]++;
			} else {
				nl_request(&w->rng, op < 75);
				op_count[op < 75 ? OP_NL_CALL : OP_NL_AVA]++;
			}
			continue;
		}

		/* weights: what ava.ko parses most gets most */
		if (op < 10)
			kind = OP_OPEN;
		else if (op < 17)
			kind = OP_CLOSE;
		else if (op < 32)
			kind = OP_MMAP;
		else if (op < 50)
			kind = OP_IOCTL;
		else if (op < 58)
			kind = OP_WAIT;
		else if (op < 80)
			kind = OP_SUBMIT;
		else if (op < 88)
			kind = OP_NL_AVA;
		else if (op < 94)
			kind = OP_NL_CALL;
		else if (op < 97)
			kind = OP_CALLDEV;
		else
			kind = OP_CHILD;
		switch (kind) {
		case OP_OPEN: op_open(&w->rng); break;
		case OP_CLOSE: op_close(&w->rng); break;
		case OP_MMAP: op_mmap(&w->rng); break;
		case OP_IOCTL: op_ioctl(&w->rng); break;
		case OP_WAIT: op_wait(&w->rng); break;
		case OP_SUBMIT: op_submit(&w->rng); break;
		case OP_NL_AVA: nl_request(&w->rng, 0); break;
		case OP_NL_CALL: nl_request(&w->rng, 1); break;
		case OP_CALLDEV: op_calldev(&w->rng); break;
		default: op_child(&w->rng); break;
		}
		op_count[kind]++;
	}
	return NULL;
}

static int files_open(void)
{
	int i, n = 0;

	for (i = 0; i < FD_TABLE; i++)
		n += atomic_load(&fds[i]) >= 0;
	return n;
}

static int write_sysfs(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n = -1;

	if (fd >= 0) {
		n = write(fd, text, strlen(text));
		close(fd);
	}
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Unbinds the device from ava.ko under the threads' feet, and binds it again. */
static void unbind_rebind(struct rng *r, unsigned long *unbinds)
{
	if (write_sysfs("/sys/bus/pci/drivers/ava/unbind", opt_unbind))
		return;
	(*unbinds)++;
	usleep(10000 + (useconds_t)below(r, 100000));
	if (write_sysfs("/sys/bus/pci/drivers/ava/bind", opt_unbind))
		fprintf(stderr, "kmod_exerciser: binding %s again: %s\n", opt_unbind, strerror(errno));
}

/* Unloads ava.ko (never waiting); with --reload loads it again. Returns 1 on a bug. */
static int try_unload(unsigned long *unloads, unsigned long *refused)
{
	int held, fd, bug = 0;

	if (syscall(SYS_delete_module, "ava", O_NONBLOCK) != 0) {
		(*refused)++;
		return 0;
	}
	(*unloads)++;
	/*
	 * A file in the table is open (threads take it out before closing
	 * it), and none can be opened while ava.ko is gone: one seen now was
	 * open when the unload succeeded.
	 */
	held = files_open();
	if (held) {
		fprintf(stderr, "kmod_exerciser: BUG: ava.ko unloaded while %d of its files were open\n",
			held);
		bug = 1;
	}
	if (!opt_reload)
		return bug;
	fd = open(opt_reload, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || syscall(SYS_finit_module, fd, opt_params, 0) != 0)
		fprintf(stderr, "kmod_exerciser: reloading %s: %s\n", opt_reload, strerror(errno));
	if (fd >= 0)
		close(fd);
	return bug;
}

static int process_main(unsigned index)
{
	struct worker workers[MAX_THREADS];
	unsigned long unloads = 0, refused = 0, unbinds = 0;
	struct rng rng = { opt_seed ^ (0x9E3779B97F4A7C15ull * (index + 1)) };
	struct sigaction sa;
	unsigned i;
	int bug = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < FD_TABLE; i++)
		atomic_store(&fds[i], -1);
	hole = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (i = 0; i < opt_threads; i++) {
		workers[i].rng.s = rnd(&rng) | 1;
		pthread_create(&workers[i].tid, NULL, worker_main, &workers[i]);
	}
	/* the first process: unload attempts while the threads run */
	while (index == 0 && now_ms() < deadline_ms) {
		usleep(100000 + (useconds_t)below(&rng, 200000));
		if (opt_unbind) {
			unbind_rebind(&rng, &unbinds);
			continue;
		}
		bug |= try_unload(&unloads, &refused);
		if (!opt_reload)
			continue;
		/* a drain: files close, and unloads race with opens and requests */
		atomic_store(drain, 1);
		for (i = 0; i < 40 && now_ms() < deadline_ms; i++) {
			unsigned long before = unloads;

			usleep(5000 + (useconds_t)below(&rng, 10000));
			bug |= try_unload(&unloads, &refused);
			if (unloads != before && below(&rng, 2))
				break;
			if (i == 39 && !below(&rng, 4))
				fprintf(stderr, "kmod_exerciser: no unload in a drain: %s\n",
					strerror(errno));
		}
		atomic_store(drain, 0);
	}
	for (i = 0; i < opt_threads; i++)
		pthread_join(workers[i].tid, NULL);
	for (i = 0; i < FD_TABLE; i++) {
		int fd = atomic_exchange(&fds[i], -1);

		if (fd >= 0)
			close(fd);
	}
	printf("process %u:", index);
	for (i = 0; i < OP_NOPS; i++)
		printf(" %s=%lu", op_names[i], atomic_load(&op_count[i]));
	printf(" faults=%lu", atomic_load(&faults));
	if (index == 0)
		printf(" unloads=%lu refused=%lu unbinds=%lu", unloads, refused, unbinds);
	printf("\n");
	fflush(stdout);
	return bug;
}

static int usage(void)
{
	fprintf(stderr, "usage: kmod_exerciser [--seed N] [--seconds S] [--ops N] [--procs P] "
			"[--threads T] [--reload AVA_KO [--params PARAMS]] [--unbind PCI_ADDRESS]\n");
	return 2;
}

int main(int argc, char **argv)
{
	pid_t pids[MAX_PROCS];
	int i, status, ret = 0;

	opt_seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	for (i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			return usage();
		if (!strcmp(argv[i], "--seed"))
			opt_seed = strtoull(v, NULL, 0);
		else if (!strcmp(argv[i], "--seconds"))
			opt_seconds = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(argv[i], "--ops"))
			opt_ops = strtoul(v, NULL, 0);
		else if (!strcmp(argv[i], "--procs"))
			opt_procs = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(argv[i], "--threads"))
			opt_threads = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(argv[i], "--reload"))
			opt_reload = v;
		else if (!strcmp(argv[i], "--params"))
			opt_params = v;
		else if (!strcmp(argv[i], "--unbind"))
			opt_unbind = v;
		else
			return usage();
		i++;
	}
	if (!opt_procs || opt_procs > MAX_PROCS || !opt_threads || opt_threads > MAX_THREADS)
		return usage();
	if (!opt_seed)
		opt_seed = 1; /* xorshift needs a non-zero state */
	printf("seed %llu (rerun: --seed %llu --seconds %u --procs %u --threads %u)\n",
	       (unsigned long long)opt_seed, (unsigned long long)opt_seed, opt_seconds, opt_procs,
	       opt_threads);
	fflush(stdout);
	drain = mmap(NULL, sizeof(*drain), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (drain == MAP_FAILED) {
		perror("kmod_exerciser: mmap");
		return 2;
	}
	atomic_store(drain, 0);
	deadline_ms = now_ms() + (long long)opt_seconds * 1000;
	for (i = 0; i < (int)opt_procs; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("kmod_exerciser: fork");
			return 2;
		}
		if (pids[i] == 0)
			_exit(process_main((unsigned)i));
	}
	for (i = 0; i < (int)opt_procs; i++) {
		if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status)) {
			fprintf(stderr, "kmod_exerciser: process %d ended abnormally (status %#x)\n", i,
				status);
			ret = 1;
		} else if (WEXITSTATUS(status)) {
			fprintf(stderr, "kmod_exerciser: process %d exited with %d\n", i,
				WEXITSTATUS(status));
			ret = 1;
		}
	}
	printf("done\n");
	return ret;
}
