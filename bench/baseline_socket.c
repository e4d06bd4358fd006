/* SPDX-License-Identifier: MIT */
/*
 * Baseline: the floor under the unix and tcp channels. Two processes joined
 * by a stream socket (an AF_UNIX socket pair, or a TCP_NODELAY connection on
 * 127.0.0.1) exchange 64-byte messages with plain blocking read and write.
 *
 *   rt_p50, rt_p99  round trip of one 64-byte message there and back (µs),
 *                   processes placed by the kernel (see measure())
 *   rt_same_cpu_*   the same with both processes pinned to one CPU
 *   rt_cross_cpu_*  the same with the processes pinned to two CPUs
 *   msg_rate        64-byte messages per second, one write() each, drained by the peer
 *
 * With --bulk only this, the floor under a remoted transfer (clpeak over tcp):
 *   stream_bw       MiB/s of one large transfer one way, written in 4 MiB
 *                   writes from one buffer and read by the peer into its own
 *                   4 MiB buffer; the median of BULK_ROUNDS transfers of
 *                   512 MiB (64 MiB with --quick), size column = bytes moved
 *
 * usage: baseline_socket unix|tcp [--bulk] [--quick] [--iters N]
 */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

/* Messages of the short burst that sizes the timed one. */
#define STREAM_CALIBRATION 20000u
#define STREAM_MAX (50u * 1000 * 1000)

/* Bulk transfers: how they are written and read, how many are timed. */
#define BULK_BLOCK (4u << 20)
#define BULK_BYTES (512ull << 20)
#define BULK_BYTES_QUICK (64ull << 20)
#define BULK_ROUNDS 3

/*
 * What a message asks of the child (its first 8 bytes). MSG_BULK: seq raw
 * bytes follow the message; the child reads them all, then answers MSG_ACK.
 */
enum { MSG_QUIT = 1, MSG_PING = 2, MSG_STREAM = 3, MSG_STREAM_END = 4, MSG_ACK = 5, MSG_BULK = 6 };

struct msg {
	uint64_t kind;
	uint64_t seq;
	uint8_t pad[BENCH_MSG_SIZE - 16];
};
_Static_assert(sizeof(struct msg) == BENCH_MSG_SIZE, "messages are 64 bytes");

static int write_all(int fd, const void *data, size_t size)
{
	const uint8_t *p = data;
	while (size > 0) {
		ssize_t n = write(fd, p, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		size -= (size_t)n;
	}
	return 0;
}

/* Returns 0, or -1 on error or when the peer closed (a dead peer reads as EOF). */
static int read_all(int fd, void *data, size_t size)
{
	uint8_t *p = data;
	while (size > 0) {
		ssize_t n = read(fd, p, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		size -= (size_t)n;
	}
	return 0;
}

/*
 * The child's part of MSG_BULK: bytes raw bytes, of which the first `have`
 * are already in its message buffer; read into a buffer of the block's size,
 * as a receiver copying into its destination would. 0, or -1 when the
 * connection broke.
 */
static int bulk_receive(int fd, uint64_t bytes, size_t have)
{
	static uint8_t *sink;
	if (sink == NULL && (sink = malloc(BULK_BLOCK)) == NULL)
		return -1;
	uint64_t left = bytes - (have < bytes ? have : bytes);
	while (left > 0) {
		ssize_t n = read(fd, sink, left < BULK_BLOCK ? (size_t)left : BULK_BLOCK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		left -= (uint64_t)n;
	}
	struct msg ack = {.kind = MSG_ACK, .seq = bytes};
	return write_all(fd, &ack, sizeof ack);
}

/* Reads in large chunks, as a channel's receive path would, and parses whole messages. */
static int child_main(int fd)
{
	enum { BUFFER = 64 * 1024 };
	static uint8_t buffer[BUFFER];
	size_t have = 0;
	uint64_t expected = 0;
	while (1) {
		ssize_t n = read(fd, buffer + have, BUFFER - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1;
		have += (size_t)n;
		size_t used = 0;
		for (; have - used >= sizeof(struct msg); used += sizeof(struct msg)) {
			struct msg msg;
			memcpy(&msg, buffer + used, sizeof msg);
			switch (msg.kind) {
			case MSG_QUIT:
				return 0;
			case MSG_PING:
				if (write_all(fd, &msg, sizeof msg) != 0)
					return 1;
				break;
			case MSG_STREAM:
				if (msg.seq != expected++)
					return 1;
				break;
			case MSG_STREAM_END:
				msg.kind = MSG_ACK;
				msg.seq = expected;
				expected = 0;
				if (write_all(fd, &msg, sizeof msg) != 0)
					return 1;
				break;
			case MSG_BULK: {
				/* The parent writes nothing after the bulk bytes before the ACK. */
				size_t after = have - used - sizeof msg;
				if (after > msg.seq || bulk_receive(fd, msg.seq, after) != 0)
					return 1;
				used = have - sizeof msg;
				break;
			}
			default:
				return 1;
			}
		}
		memmove(buffer, buffer + used, have - used);
		have -= used;
	}
}

static int tcp_pair(int fds[2])
{
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof addr;
	int one = 1;
	int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fds[0] = fds[1] = -1;
	if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 ||
	    listen(listener, 1) != 0 || getsockname(listener, (struct sockaddr *)&addr, &len) != 0)
		goto fail;
	/* The kernel completes a loopback connect from the backlog before accept runs. */
	fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&addr, sizeof addr) != 0)
		goto fail;
	fds[1] = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	if (fds[1] < 0)
		goto fail;
	close(listener);
	for (int i = 0; i < 2; i++)
		if (setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
			goto fail_pair;
	return 0;
fail:
	if (listener >= 0)
		close(listener);
fail_pair:
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return -1;
}

/* Times count round trips after the warm-up ones into samples. */
static int ping_pong(int fd, uint64_t warmup, uint64_t count, uint64_t *samples)
{
	struct msg msg;
	memset(&msg, 0, sizeof msg);
	for (uint64_t i = 0; i < warmup + count; i++) {
		msg.kind = MSG_PING;
		msg.seq = i;
		uint64_t t0 = bench_now_ns();
		if (write_all(fd, &msg, sizeof msg) != 0 || read_all(fd, &msg, sizeof msg) != 0) {
			fprintf(stderr, "baseline_socket: ping-pong: %s\n",
				errno ? strerror(errno) : "the peer closed the socket");
			return -1;
		}
		uint64_t t1 = bench_now_ns();
		if (msg.kind != MSG_PING || msg.seq != i) {
			fprintf(stderr, "baseline_socket: the echo does not match the ping\n");
			return -1;
		}
		if (i >= warmup)
			samples[i - warmup] = t1 - t0;
	}
	return 0;
}

/* A one-way burst failed: says why (what names it); returns 0, a burst's failure. */
static uint64_t burst_broken(const char *what)
{
	fprintf(stderr, "baseline_socket: %s: %s\n", what,
		errno ? strerror(errno) : "the peer closed the socket");
	return 0;
}

/*
 * Ends a one-way burst begun at t0: waits for the peer's MSG_ACK, which must
 * count `expected` (messages or bytes); returns the burst's ns or 0.
 */
static uint64_t burst_end(int fd, uint64_t t0, uint64_t expected, const char *what)
{
	struct msg msg;
	if (read_all(fd, &msg, sizeof msg) != 0)
		return burst_broken(what);
	uint64_t t1 = bench_now_ns();
	if (msg.kind != MSG_ACK || msg.seq != expected) {
		fprintf(stderr, "baseline_socket: %s: the peer lost or reordered what was sent\n",
			what);
		return 0;
	}
	return t1 > t0 ? t1 - t0 : 1;
}

/* Pushes count messages one way and waits until the peer has drained them; returns ns or 0. */
static uint64_t stream_burst(int fd, uint64_t count)
{
	struct msg msg;
	memset(&msg, 0, sizeof msg);
	uint64_t t0 = bench_now_ns();
	for (uint64_t i = 0; i < count; i++) {
		msg.kind = MSG_STREAM;
		msg.seq = i;
		if (write_all(fd, &msg, sizeof msg) != 0)
			return burst_broken("stream");
	}
	msg.kind = MSG_STREAM_END;
	if (write_all(fd, &msg, sizeof msg) != 0)
		return burst_broken("stream");
	return burst_end(fd, t0, count, "stream");
}

static int stream(int fd, const struct bench_options *options)
{
	uint64_t ns = stream_burst(fd, STREAM_CALIBRATION);
	if (ns == 0)
		return -1;
	uint64_t count = bench_scale_count(STREAM_CALIBRATION, ns, bench_burst_ns(options), STREAM_MAX);
	ns = stream_burst(fd, count);
	if (ns == 0)
		return -1;
	bench_result("msg_rate", BENCH_MSG_SIZE, (double)count / ((double)ns / 1e9), "msg/s");
	return 0;
}

/* Moves bytes to the child in BULK_BLOCK writes from block; returns ns or 0. */
static uint64_t bulk_transfer(int fd, const uint8_t *block, uint64_t bytes)
{
	struct msg msg = {.kind = MSG_BULK, .seq = bytes};
	uint64_t t0 = bench_now_ns();
	if (write_all(fd, &msg, sizeof msg) != 0)
		return burst_broken("bulk transfer");
	for (uint64_t sent = 0; sent < bytes;) {
		size_t n = bytes - sent < BULK_BLOCK ? (size_t)(bytes - sent) : BULK_BLOCK;
		if (write_all(fd, block, n) != 0)
			return burst_broken("bulk transfer");
		sent += n;
	}
	return burst_end(fd, t0, bytes, "bulk transfer");
}

static int bulk(int fd, const struct bench_options *options)
{
	const uint64_t bytes = options->quick ? BULK_BYTES_QUICK : BULK_BYTES;
	uint8_t *block = bench_alloc(BULK_BLOCK, "baseline_socket");
	double mib_s[BULK_ROUNDS];
	int status = 0;
	/* One untimed round first: socket buffers grow, pages get faulted in. */
	for (int round = -1; round < BULK_ROUNDS && status == 0; round++) {
		uint64_t ns = bulk_transfer(fd, block, bytes);
		if (ns == 0)
			status = -1;
		else if (round >= 0)
			mib_s[round] = bench_mib_per_s(bytes, (double)ns);
	}
	if (status == 0)
		bench_result("stream_bw", bytes, bench_median(mib_s, BULK_ROUNDS), "MiB/s");
	free(block);
	return status;
}

/* A connected pair with an echoing child process on the other end. */
struct session {
	int fd;
	pid_t child;
};

static int pin_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof set, &set);
}

/* Pins the child to child_cpu when it is >= 0. */
static int session_start(int tcp, int child_cpu, struct session *out)
{
	int fds[2];
	if (tcp ? tcp_pair(fds) != 0 : socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
		perror(tcp ? "baseline_socket: tcp connection on 127.0.0.1" : "baseline_socket: socketpair");
		return -1;
	}
	pid_t parent = getpid();
	pid_t child = fork();
	if (child < 0) {
		perror("baseline_socket: fork");
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent || (child_cpu >= 0 && pin_to(child_cpu) != 0))
			_exit(1);
		close(fds[0]);
		_exit(child_main(fds[1]));
	}
	close(fds[1]);
	out->fd = fds[0];
	out->child = child;
	return 0;
}

/* Stops the child (killing it when ok is 0); returns ok, or 0 when the child failed. */
static int session_end(struct session *session, int ok)
{
	struct msg quit = {.kind = MSG_QUIT};
	if (!ok || write_all(session->fd, &quit, sizeof quit) != 0)
		kill(session->child, SIGKILL);
	close(session->fd);
	int wait_status = 0;
	if (waitpid(session->child, &wait_status, 0) != session->child || !WIFEXITED(wait_status) ||
	    (ok && WEXITSTATUS(wait_status) != 0)) {
		fprintf(stderr, "baseline_socket: the peer process failed\n");
		return 0;
	}
	return ok;
}

/*
 * A blocking round trip costs about 3x more when the two processes sit on
 * different CPUs (waking an idle CPU) than when they share one, and the
 * kernel picks either. The main figure (rt) pools FREE_ROUNDS fresh process
 * pairs placed by the kernel, as ava's processes are; rt_same_cpu and
 * rt_cross_cpu pin both cases, so that a reader sees which one a channel hit.
 */
#define FREE_ROUNDS 3

static int measure(int tcp, const struct bench_options *options, uint64_t *samples)
{
	cpu_set_t allowed;
	int cpus[2] = {-1, -1};
	int ncpus = 0;
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
		perror("baseline_socket: sched_getaffinity");
		return -1;
	}
	for (int cpu = 0; cpu < CPU_SETSIZE && ncpus < 2; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			cpus[ncpus++] = cpu;

	struct session session;
	uint64_t per_round = options->iters / FREE_ROUNDS ? options->iters / FREE_ROUNDS : 1;
	for (int round = 0; round < FREE_ROUNDS; round++) {
		if (session_start(tcp, -1, &session) != 0)
			return -1;
		int ok = ping_pong(session.fd, options->warmup, per_round, samples + round * per_round) == 0;
		/* One stream is enough: a one-way flood keeps both CPUs busy whatever the placement. */
		if (ok && round == 0)
			ok = stream(session.fd, options) == 0;
		if (!session_end(&session, ok))
			return -1;
	}
	bench_report_latency("rt", samples, per_round * FREE_ROUNDS);

	static const struct {
		const char *prefix;
		int child_slot;
	} pinned[] = {{"rt_same_cpu", 0}, {"rt_cross_cpu", 1}};
	for (size_t p = 0; p < sizeof pinned / sizeof pinned[0]; p++) {
		int child_cpu = cpus[pinned[p].child_slot];
		if (child_cpu < 0)
			continue; /* one CPU only: nothing to cross */
		if (pin_to(cpus[0]) != 0 || session_start(tcp, child_cpu, &session) != 0) {
			perror("baseline_socket: pinning");
			sched_setaffinity(0, sizeof allowed, &allowed);
			return -1;
		}
		int ok = ping_pong(session.fd, options->warmup, options->iters, samples) == 0;
		ok = session_end(&session, ok);
		sched_setaffinity(0, sizeof allowed, &allowed);
		if (!ok)
			return -1;
		bench_report_latency(pinned[p].prefix, samples, options->iters);
	}
	return 0;
}

/* The bulk figure alone, between processes placed by the kernel. */
static int measure_bulk(int tcp, const struct bench_options *options)
{
	struct session session;
	if (session_start(tcp, -1, &session) != 0)
		return -1;
	int ok = bulk(session.fd, options) == 0;
	return session_end(&session, ok) ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct bench_options options;
	if (bench_parse_common(&argc, argv, &options) != 0)
		return 2;
	int bulk_only = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--bulk") == 0) {
			bulk_only = 1;
			memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof argv[0]);
			argc--;
			break;
		}
	}
	if (argc != 2 || (strcmp(argv[1], "unix") != 0 && strcmp(argv[1], "tcp") != 0)) {
		fprintf(stderr, "usage: baseline_socket unix|tcp [--bulk] [--quick] [--iters N]\n");
		return 2;
	}
	const int tcp = strcmp(argv[1], "tcp") == 0;
	/* A writer blocked on a dead reader must get EPIPE, not a silent SIGPIPE exit. */
	signal(SIGPIPE, SIG_IGN);
	errno = 0;
	if (bulk_only)
		return measure_bulk(tcp, &options) == 0 ? 0 : 1;
	uint64_t *samples = bench_alloc(options.iters * sizeof(uint64_t), "baseline_socket");
	errno = 0;
	int status = measure(tcp, &options, samples) == 0 ? 0 : 1;
	free(samples);
	return status;
}
