/* SPDX-License-Identifier: MIT */
/*
 * knl_probe: a hostile worker on ava.ko's netlink carrier
 * (include/ava/knetlink.h), in plain netlink, run in the test guest. It
 * registers (writing "ready" to the file argv[1]), accepts the HELLO of the
 * first kernel connection, checks /dev/ava_call's mmap rules on it, then,
 * once the connection's first CALL arrives, answers with malformed
 * messages that ava.ko must refuse one by one (the call then fails with
 * -EPIPE), and exits, which unregisters it. One line per check; exit
 * status 0 when every check held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ava/knetlink.h"
#include "ava/wire.h"

#define WAIT_MS 60000

static int failures;
static int sock;
static uint32_t seq_next = 1;
static uint16_t family;
static uint8_t rx[1 << 17];

struct req {
	struct nlmsghdr nlh;
	struct genlmsghdr g;
	uint8_t attrs[256];
};

static void put_attr(struct req *r, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr *a = (struct nlattr *)((uint8_t *)r + NLMSG_ALIGN(r->nlh.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((uint8_t *)a + NLA_HDRLEN, data, len);
	r->nlh.nlmsg_len = NLMSG_ALIGN(r->nlh.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static void start(struct req *r, uint16_t type, uint8_t cmd)
{
	memset(r, 0, sizeof(*r));
	r->nlh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	r->nlh.nlmsg_type = type;
	r->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	r->nlh.nlmsg_seq = seq_next++;
	r->g.cmd = cmd;
	r->g.version = 1;
}

/*
 * Receives until the answer to seq: 0 or -errno from its ack; a MSG of
 * ava.ko meanwhile goes to *msg (when non-NULL) and is returned as 1.
 */
static int recv_until(uint32_t seq, struct nlmsghdr **msg)
{
	for (;;) {
		struct pollfd p = { sock, POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, WAIT_MS) != 1)
			return -ETIMEDOUT;
		n = recv(sock, rx, sizeof(rx), 0);
		if (n < 0)
			return -errno;
		for (struct nlmsghdr *h = (struct nlmsghdr *)rx; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_ERROR && h->nlmsg_seq == seq)
				return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			if (h->nlmsg_type == family && msg && seq == 0) {
				*msg = h;
				return 1;
			}
		}
	}
}

static int send_req(struct req *r)
{
	if (send(sock, r, r->nlh.nlmsg_len, 0) < 0)
		return -errno;
	return recv_until(r->nlh.nlmsg_seq, NULL);
}

static uint16_t resolve(const char *name)
{
	struct req r;

	start(&r, GENL_ID_CTRL, CTRL_CMD_GETFAMILY);
	r.nlh.nlmsg_flags = NLM_F_REQUEST;
	put_attr(&r, CTRL_ATTR_FAMILY_NAME, name, (uint16_t)(strlen(name) + 1));
	if (send(sock, &r, r.nlh.nlmsg_len, 0) < 0 || recv(sock, rx, sizeof(rx), 0) <= 0)
		return 0;
	struct nlmsghdr *h = (struct nlmsghdr *)rx;
	if (h->nlmsg_type != GENL_ID_CTRL)
		return 0;
	int len = (int)h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
	for (struct nlattr *a = (struct nlattr *)((uint8_t *)NLMSG_DATA(h) + GENL_HDRLEN);
	     len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= len;
	     len -= NLA_ALIGN(a->nla_len), a = (struct nlattr *)((uint8_t *)a + NLA_ALIGN(a->nla_len)))
		if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID)
			return *(uint16_t *)((uint8_t *)a + NLA_HDRLEN);
	return 0;
}

/* The attribute of a MSG from ava.ko, or NULL. */
static struct nlattr *attr_of(struct nlmsghdr *h, uint16_t type)
{
	int len = (int)h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);

	for (struct nlattr *a = (struct nlattr *)((uint8_t *)NLMSG_DATA(h) + GENL_HDRLEN);
	     len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= len;
	     len -= NLA_ALIGN(a->nla_len), a = (struct nlattr *)((uint8_t *)a + NLA_ALIGN(a->nla_len)))
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
	return NULL;
}

static void expect(const char *what, int got, int want)
{
	printf("%s: %d%s\n", what, got, got == want ? "" : " (UNEXPECTED)");
	if (got != want)
		failures++;
}

/* A MSG to ava.ko: conn, then data inline, or shm_len when data is NULL. */
static int send_msg(uint32_t conn, const void *data, uint16_t len, const uint64_t *shm_len)
{
	struct req r;

	start(&r, family, AVA_KNL_CMD_MSG);
	put_attr(&r, AVA_KNL_A_CONN, &conn, sizeof(conn));
	if (data)
		put_attr(&r, AVA_KNL_A_DATA, data, len);
	if (shm_len)
		put_attr(&r, AVA_KNL_A_SHM_LEN, shm_len, sizeof(*shm_len));
	return send_req(&r);
}

static void check_mmap(uint32_t conn, uint64_t half)
{
	int fd = open(AVA_KNL_DEVICE, O_RDWR | O_CLOEXEC);
	void *p;

	expect("open " AVA_KNL_DEVICE, fd < 0 ? -errno : 0, 0);
	if (fd < 0)
		return;
	p = mmap(NULL, half, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(conn * 2 * half));
	expect("mmap.short", p == MAP_FAILED ? -errno : 0, -EINVAL);
	p = mmap(NULL, 2 * half, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)((conn + 7) * 2 * half));
	expect("mmap.other_conn", p == MAP_FAILED ? -errno : 0, -ENOENT);
	p = mmap(NULL, 2 * half, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, (off_t)(conn * 2 * half));
	expect("mmap.private", p == MAP_FAILED ? -errno : 0, -EINVAL);
	p = mmap(NULL, 2 * half, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(conn * 2 * half));
	expect("mmap.own", p == MAP_FAILED ? -errno : 0, 0);
	if (p != MAP_FAILED) {
		/* scribble on both halves: ava.ko trusts nothing there */
		memset(p, 0xa5, 2 * half);
		munmap(p, 2 * half);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct nlmsghdr *h = NULL;
	struct ava_msg_hdr hdr, ack;
	struct {
		struct ava_msg_hdr h;
		struct ava_hello_ack b;
	} hello_ack;
	struct nlattr *a;
	uint64_t half = 0, big;
	uint32_t conn;
	struct req r;
	uint8_t junk[96];
	FILE *ready;

	if (argc != 2) {
		fprintf(stderr, "usage: knl_probe READY_FILE\n");
		return 2;
	}
	sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (sock < 0 || bind(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("netlink socket");
		return 1;
	}
	family = resolve(AVA_KNL_GENL_NAME);
	if (!family) {
		fprintf(stderr, "no family " AVA_KNL_GENL_NAME "\n");
		return 1;
	}
	/* no ack asked: the answer is the reply (or an error) */
	start(&r, family, AVA_KNL_CMD_REGISTER);
	r.nlh.nlmsg_flags = NLM_F_REQUEST;
	if (send(sock, &r, r.nlh.nlmsg_len, 0) < 0 || recv(sock, rx, sizeof(rx), 0) <= 0)
		return 1;
	h = (struct nlmsghdr *)rx;
	expect("register", h->nlmsg_type == family ? 0 :
		h->nlmsg_type == NLMSG_ERROR ? ((struct nlmsgerr *)NLMSG_DATA(h))->error : -EPROTO, 0);
	a = h->nlmsg_type == family ? attr_of(h, AVA_KNL_A_SHM_SIZE) : NULL;
	if (a)
		memcpy(&half, (uint8_t *)a + NLA_HDRLEN, sizeof(half));
	printf("shared area: %llu bytes per half\n", (unsigned long long)half);
	h = NULL;
	ready = fopen(argv[1], "w");
	if (!ready || fprintf(ready, "ready\n") < 0 || fclose(ready))
		return 1;

	/* HELLO of the first connection: answer it properly */
	if (recv_until(0, &h) != 1 || !(a = attr_of(h, AVA_KNL_A_DATA)) ||
	    a->nla_len < NLA_HDRLEN + sizeof(hdr)) {
		fprintf(stderr, "no HELLO\n");
		return 1;
	}
	memcpy(&conn, (uint8_t *)attr_of(h, AVA_KNL_A_CONN) + NLA_HDRLEN, sizeof(conn));
	memcpy(&hdr, (uint8_t *)a + NLA_HDRLEN, sizeof(hdr));
	printf("hello: conn %u, kind %u\n", conn, hdr.kind);
	memset(&ack, 0, sizeof(ack));
	ack.magic = AVA_MSG_MAGIC;
	ack.abi_version = AVA_ABI_VERSION;
	ack.kind = AVA_MSG_HELLO_ACK;
	ack.spec_id = hdr.spec_id;
	ack.total_len = sizeof(ack);
	/* a protocol-2 answer: the header and its block */
	memset(&hello_ack, 0, sizeof(hello_ack));
	hello_ack.h = ack;
	hello_ack.h.args_len = sizeof(hello_ack.b);
	hello_ack.h.total_len = sizeof(hello_ack);
	hello_ack.b.proto = AVA_PROTO_MAX;
	hello_ack.b.proto_min = AVA_PROTO_MIN;
	hello_ack.b.proto_max = AVA_PROTO_MAX;
	hello_ack.b.session_id = 1;
	expect("hello_ack", send_msg(conn, &hello_ack, sizeof(hello_ack), NULL), 0);
	/* refused without harm to the connection */
	expect("msg.unknown_conn", send_msg(conn + 7, &ack, sizeof(ack), NULL), -ENOENT);
	start(&r, family, AVA_KNL_CMD_RELEASE);
	put_attr(&r, AVA_KNL_A_CONN, &conn, sizeof(conn));
	expect("release.spurious", send_req(&r), 0);
	if (half)
		check_mmap(conn, half);

	/* the first CALL: every answer to it is malformed */
	h = NULL;
	if (recv_until(0, &h) != 1) {
		fprintf(stderr, "no CALL\n");
		return 1;
	}
	printf("call: received\n");
	expect("msg.short", send_msg(conn, &ack, 10, NULL), -EINVAL);
	expect("msg.no_body", send_msg(conn, NULL, 0, NULL), -EINVAL);
	big = half + 8;
	expect("msg.shm_beyond", send_msg(conn, NULL, 0, &big), -EINVAL);
	memset(junk, 0x5a, sizeof(junk));
	expect("msg.bad_magic", send_msg(conn, junk, sizeof(junk), NULL), -EINVAL);
	ack.kind = AVA_MSG_REPLY;
	ack.total_len = sizeof(ack) + 8;
	expect("msg.bad_total_len", send_msg(conn, &ack, sizeof(ack), NULL), -EINVAL);
	printf("failures: %d\n", failures);
	return failures ? 1 : 0;
}
