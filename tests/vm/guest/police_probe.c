/* SPDX-License-Identifier: MIT */
/*
 * police_probe: runs in the test guest against /dev/ava claims that ava.ko
 * polices (include/ava/ivshmem.h, "Policed claims"; `avactl policy all police
 * on` and ava_demo.ko loaded, so that the demo spec's table is registered).
 * Checks AVA_IOC_SUBMIT message by message: what may be mapped, framing
 * errors, each refusal status, a refusal in the middle of a batch, payload
 * faults, and (`big`) messages larger than the command ring, which go in
 * pieces while ava.ko waits for the host to make room, and (`cut`) a fault
 * in the middle of such a message, which breaks the region. `plain` checks
 * a claim of a slot without the policy. Prints "ok ..." or "FAIL ..." per
 * check; exit status 0 when all held.
 */
#define _GNU_SOURCE
#include "ava/ivshmem.h"
#include "demo_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

static int fails;
#define CHECK(c, ...)                          \
	do {                                   \
		if (c) {                       \
			printf("ok   " __VA_ARGS__); \
		} else {                       \
			fails++;               \
			printf("FAIL " __VA_ARGS__); \
		}                              \
		printf("\n");                  \
	} while (0)

static void fill_hdr(struct ava_msg_hdr *h, unsigned kind, unsigned args_len,
		     unsigned long long payload)
{
	memset(h, 0, sizeof(*h));
	h->magic = AVA_MSG_MAGIC;
	h->abi_version = AVA_ABI_VERSION;
	h->kind = kind;
	h->spec_id = AVA_DEMO_SPEC_ID;
	h->args_len = args_len;
	h->total_len = sizeof(*h) + args_len + payload;
	h->thread_id = getpid();
}

static int submit(int fd, struct iovec *iov, int n, unsigned long long total, struct ava_submit *s)
{
	memset(s, 0, sizeof(*s));
	s->iov = (unsigned long)iov;
	s->iovcnt = n;
	s->total = total;
	return ioctl(fd, AVA_IOC_SUBMIT, s) ? -errno : 0;
}

struct hello_msg { struct ava_msg_hdr h; struct ava_hello a; };
struct version_msg { struct ava_msg_hdr h; struct ava_demo_demo_version_call a; };

static void make_hello(struct hello_msg *m, const char *name, unsigned id, unsigned long long hash)
{
	fill_hdr(&m->h, AVA_MSG_HELLO, sizeof(m->a), 0);
	memset(&m->a, 0, sizeof(m->a));
	ava_hello_fill(&m->a, id, hash, name, getpid(), "test");
}

static void make_version(struct version_msg *m, unsigned flags)
{
	fill_hdr(&m->h, AVA_MSG_CALL, sizeof(m->a), 0);
	m->h.func_id = AVA_DEMO_FN_DEMO_VERSION;
	m->h.flags = flags;
	m->h.call_id = 7;
	memset(&m->a, 0, sizeof(m->a));
}

static int plain(void)
{
	struct ava_slot_info info;
	struct ava_submit s;
	struct version_msg v;
	struct iovec iov;
	int fd = open("/dev/ava", O_RDWR);
	void *p;

	CHECK(fd >= 0, "plain: open (%s)", fd < 0 ? strerror(errno) : "");
	if (fd < 0)
		return 1;
	CHECK(!ioctl(fd, AVA_IOC_SLOT_INFO, &info) && info.flags == 0, "plain: flags 0 (%u)", info.flags);
	p = mmap(NULL, info.slot_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED, "plain: whole slot maps");
	make_version(&v, AVA_F_SYNC);
	iov.iov_base = &v;
	iov.iov_len = sizeof(v);
	CHECK(submit(fd, &iov, 1, sizeof(v), &s) == -EPERM, "plain: SUBMIT is EPERM");
	CHECK(!ioctl(fd, AVA_IOC_WAKE), "plain: WAKE");
	close(fd);
	return fails != 0;
}

static int policed(int big)
{
	struct ava_slot_info info;
	struct ava_submit s;
	struct hello_msg hello;
	struct version_msg v, v2;
	struct iovec iov[3];
	long pg = 4096;
	int fd = open("/dev/ava", O_RDWR), ret;
	void *p;
	unsigned i;

	CHECK(fd >= 0, "open (%s)", fd < 0 ? strerror(errno) : "");
	if (fd < 0)
		return 1;
	CHECK(!ioctl(fd, AVA_IOC_SLOT_INFO, &info) && info.flags == AVA_CLAIM_POLICED,
	      "slot %u policed (flags %u)", info.index, info.flags);
	errno = 0;
	p = mmap(NULL, info.slot_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(p == MAP_FAILED && errno == EACCES, "whole slot: EACCES (%s)", strerror(errno));
	p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(p == MAP_FAILED && errno == EACCES, "[0, 8192): EACCES");
	p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, pg + info.cmd_size - pg);
	CHECK(p == MAP_FAILED && errno == EACCES, "last ring page: EACCES");
	p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED, "header page maps");
	p = mmap(NULL, info.slot_size - pg - info.cmd_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 pg + info.cmd_size);
	CHECK(p != MAP_FAILED, "[reply_off, slot_size) maps");
	p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, info.slot_size - pg);
	CHECK(p == MAP_FAILED && errno == EINVAL, "beyond the slot: EINVAL");

	make_version(&v, AVA_F_SYNC);
	iov[0].iov_base = &v;
	iov[0].iov_len = sizeof(v);
	ret = submit(fd, iov, 1, sizeof(v) + 1, &s);
	CHECK(ret == -EINVAL, "total mismatch: EINVAL (%d)", ret);
	ret = submit(fd, iov, 0, 0, &s);
	CHECK(ret == -EINVAL, "iovcnt 0: EINVAL");
	ret = submit(fd, iov, 1025, sizeof(v), &s);
	CHECK(ret == -EINVAL, "iovcnt 1025: EINVAL");
	ret = submit(fd, iov, 1, sizeof(v), &s);
	CHECK(ret == 0 && s.done == sizeof(v) && s.status == AVA_E_STATE,
	      "CALL before HELLO: AVA_E_STATE (%d, done %lu, status %d)", ret, s.done, s.status);
	v.h.magic = 0;
	ret = submit(fd, iov, 1, sizeof(v), &s);
	CHECK(ret == -EINVAL && s.done == 0, "bad magic: EINVAL (%d, done %lu)", ret, s.done);
	make_hello(&hello, "nosuch\n", 9, 9);
	iov[0].iov_base = &hello;
	iov[0].iov_len = sizeof(hello);
	ret = submit(fd, iov, 1, sizeof(hello), &s);
	CHECK(ret == 0 && s.done == sizeof(hello) && s.status == AVA_E_UNSUPPORTED,
	      "unknown spec: AVA_E_UNSUPPORTED (%d, status %d)", ret, s.status);
	make_hello(&hello, AVA_DEMO_SPEC_NAME, AVA_DEMO_SPEC_ID, AVA_DEMO_SPEC_HASH + 1);
	ret = submit(fd, iov, 1, sizeof(hello), &s);
	CHECK(ret == 0 && s.status == AVA_E_SPEC, "wrong hash: AVA_E_SPEC (%d)", s.status);

	/* HELLO + bad CALL + good CALL in one submit: stops after the bad one */
	make_hello(&hello, AVA_DEMO_SPEC_NAME, AVA_DEMO_SPEC_ID, AVA_DEMO_SPEC_HASH);
	make_version(&v, AVA_F_SYNC);
	v.h.func_id = 99;
	make_version(&v2, AVA_F_ASYNC);
	iov[0].iov_base = &hello;
	iov[0].iov_len = sizeof(hello);
	iov[1].iov_base = &v;
	iov[1].iov_len = sizeof(v);
	iov[2].iov_base = &v2;
	iov[2].iov_len = sizeof(v2);
	ret = submit(fd, iov, 3, sizeof(hello) + sizeof(v) + sizeof(v2), &s);
	CHECK(ret == 0 && s.done == sizeof(hello) + sizeof(v) && s.status == AVA_E_FUNC,
	      "HELLO taken, func 99: AVA_E_FUNC (%d, done %lu, status %d)", ret, s.done, s.status);
	iov[0].iov_base = &hello;
	ret = submit(fd, iov, 1, sizeof(hello), &s);
	CHECK(ret == 0 && s.status == AVA_E_STATE, "second HELLO: AVA_E_STATE (%d)", s.status);

	make_version(&v, AVA_F_ASYNC);
	iov[0].iov_base = &v;
	iov[0].iov_len = sizeof(v);
	ret = submit(fd, iov, 1, sizeof(v), &s);
	CHECK(ret == 0 && s.status == AVA_E_PROTO, "async demo_version: class AVA_E_PROTO (%d)", s.status);
	make_version(&v, AVA_F_SYNC | AVA_F_ASYNC);
	ret = submit(fd, iov, 1, sizeof(v), &s);
	CHECK(ret == 0 && s.status == AVA_E_PROTO, "sync|async: AVA_E_PROTO (%d)", s.status);
	make_version(&v, AVA_F_SYNC);
	v.h.spec_id = 5;
	ret = submit(fd, iov, 1, sizeof(v), &s);
	CHECK(ret == 0 && s.status == AVA_E_SPEC, "other spec id: AVA_E_SPEC (%d)", s.status);
	make_version(&v, AVA_F_SYNC);
	ret = submit(fd, iov, 1, sizeof(v), &s);
	CHECK(ret == 0 && s.done == sizeof(v) && s.status == 0, "demo_version taken (%d, status %d)",
	      ret, s.status);

	{
		/* demo_obj_write: IN buffer ranges */
		struct { struct ava_msg_hdr h; struct ava_demo_demo_obj_write_call a; char pay[64]; } w;
		fill_hdr(&w.h, AVA_MSG_CALL, sizeof(w.a), sizeof(w.pay));
		w.h.func_id = AVA_DEMO_FN_DEMO_OBJ_WRITE;
		w.h.flags = AVA_F_SYNC;
		memset(&w.a, 0, sizeof(w.a));
		memset(w.pay, 'x', sizeof(w.pay));
		w.a.obj = 1;
		w.a.data.flags = AVA_BUF_PRESENT | AVA_BUF_IN;
		w.a.data.offset = 8;
		w.a.data.length = 57;
		iov[0].iov_base = &w;
		iov[0].iov_len = sizeof(w);
		ret = submit(fd, iov, 1, sizeof(w), &s);
		CHECK(ret == 0 && s.status == AVA_E_LENGTH,
		      "buffer outside payload: AVA_E_LENGTH (%d)", s.status);
		w.a.data.length = 56; /* ends where the payload ends: no room for the guard byte */
		ret = submit(fd, iov, 1, sizeof(w), &s);
		CHECK(ret == 0 && s.status == AVA_E_LENGTH, "no guard byte: AVA_E_LENGTH (%d)",
		      s.status);
		w.a.data.length = 55;
		w.pay[63] = 0;
		w.a.data.reserved = 1;
		ret = submit(fd, iov, 1, sizeof(w), &s);
		CHECK(ret == 0 && s.status == AVA_E_PROTO, "reserved buffer bits: AVA_E_PROTO (%d)", s.status);
		w.a.data.reserved = 0;
		ret = submit(fd, iov, 1, sizeof(w), &s);
		CHECK(ret == 0 && s.status == 0 && s.done == sizeof(w), "obj_write taken (%d)", s.status);
	}
	{
		/* GOODBYE with an argument block; an unknown kind */
		struct { struct ava_msg_hdr h; char a[8]; } g;
		fill_hdr(&g.h, AVA_MSG_GOODBYE, 8, 0);
		iov[0].iov_base = &g;
		iov[0].iov_len = sizeof(g);
		ret = submit(fd, iov, 1, sizeof(g), &s);
		CHECK(ret == 0 && s.status == AVA_E_PROTO, "GOODBYE with args: AVA_E_PROTO (%d)", s.status);
		fill_hdr(&g.h, AVA_MSG_REPLY, 8, 0);
		ret = submit(fd, iov, 1, sizeof(g), &s);
		CHECK(ret == 0 && s.status == AVA_E_PROTO, "REPLY from a guest: AVA_E_PROTO (%d)", s.status);
	}
	{
		/* EFAULT in the payload of a one-record message: forgotten, claim usable */
		struct { struct ava_msg_hdr h; struct ava_demo_demo_obj_write_call a; } w;
		fill_hdr(&w.h, AVA_MSG_CALL, sizeof(w.a), 4096);
		w.h.func_id = AVA_DEMO_FN_DEMO_OBJ_WRITE;
		w.h.flags = AVA_F_SYNC;
		memset(&w.a, 0, sizeof(w.a));
		w.a.data.flags = AVA_BUF_PRESENT | AVA_BUF_IN;
		w.a.data.length = 100;
		iov[0].iov_base = &w;
		iov[0].iov_len = sizeof(w);
		iov[1].iov_base = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		iov[1].iov_len = 4096;
		ret = submit(fd, iov, 2, sizeof(w) + 4096, &s);
		CHECK(ret == -EFAULT && s.done == 0, "payload fault: EFAULT (%d, done %lu)", ret, s.done);
		make_version(&v, AVA_F_SYNC);
		iov[0].iov_base = &v;
		iov[0].iov_len = sizeof(v);
		ret = submit(fd, iov, 1, sizeof(v), &s);
		CHECK(ret == 0 && s.status == 0, "still usable after EFAULT (%d)", ret);
	}
	if (big) {
		/* messages larger than the ring: MSG_PART/MSG_END, and waits for space */
		size_t n = info.cmd_size * 2 + 1000;
		struct { struct ava_msg_hdr h; struct ava_demo_demo_obj_write_call a; } w;
		char *pay = calloc(1, n);
		void *hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		fill_hdr(&w.h, AVA_MSG_CALL, sizeof(w.a), n);
		w.h.func_id = AVA_DEMO_FN_DEMO_OBJ_WRITE;
		w.h.flags = AVA_F_SYNC;
		memset(&w.a, 0, sizeof(w.a));
		w.a.data.flags = AVA_BUF_PRESENT | AVA_BUF_IN;
		w.a.data.length = n - 8;
		iov[0].iov_base = &w;
		iov[0].iov_len = sizeof(w);
		iov[1].iov_base = pay;
		iov[1].iov_len = n;
		for (i = 0; i < 3; i++) {
			ret = submit(fd, iov, 2, sizeof(w) + n, &s);
			CHECK(ret == 0 && s.status == 0 && s.done == sizeof(w) + n,
			      "big message %u taken (%d, done %lu, status %d)", i, ret, s.done, s.status);
		}
		make_version(&v, AVA_F_SYNC);
		iov[0].iov_base = &v;
		iov[0].iov_len = sizeof(v);
		ret = submit(fd, iov, 1, sizeof(v), &s);
		CHECK(ret == 0 && s.status == 0, "demo_version after the big ones (%d)", ret);
		if (big == 2) {
			/* a fault after part of a big message reached the host breaks the region */
			iov[0].iov_base = &w;
			iov[0].iov_len = sizeof(w);
			iov[1].iov_base = pay;
			iov[1].iov_len = n - 4096;
			iov[2].iov_base = hole;
			iov[2].iov_len = 4096;
			ret = submit(fd, iov, 3, sizeof(w) + n, &s);
			CHECK(ret == -EFAULT && s.done == 0, "fault mid big message: EFAULT (%d)", ret);
			iov[0].iov_base = &v;
			iov[0].iov_len = sizeof(v);
			ret = submit(fd, iov, 1, sizeof(v), &s);
			CHECK(ret == -EPIPE, "then EPIPE (%d)", ret);
		}
	}
	CHECK(!ioctl(fd, AVA_IOC_WAKE), "WAKE");
	close(fd);
	return fails != 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "plain"))
		return plain();
	if (argc > 1 && !strcmp(argv[1], "big"))
		return policed(1);
	if (argc > 1 && !strcmp(argv[1], "cut"))
		return policed(2);
	return policed(0);
}
