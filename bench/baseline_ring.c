/* SPDX-License-Identifier: MIT */
/*
 * Baseline: the floor under any shared-memory channel. Two processes share a
 * memfd mapping holding two single-producer single-consumer rings of 64-byte
 * slots and spin on them (no sleeping: with 2 cores each side owns one; only
 * a host busy with other work makes a waiter yield its CPU now and then).
 *
 *   rt_p50, rt_p99  round trip of one 64-byte message there and back (µs)
 *   msg_rate        64-byte messages per second pushed one way, drained by the peer
 *
 * usage: baseline_ring [--quick] [--iters N]
 */
#define _GNU_SOURCE

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define RING_SLOTS 1024u /* a power of two */
#define CACHE_LINE 64

/* Messages of the short burst that sizes the timed one. */
#define STREAM_CALIBRATION 100000u
#define STREAM_MAX (50u * 1000 * 1000)

/* What a message asks of the child (its first 8 bytes). */
enum { MSG_QUIT = 1, MSG_PING = 2, MSG_STREAM = 3, MSG_STREAM_END = 4, MSG_ACK = 5 };

struct ring {
	_Alignas(CACHE_LINE) uint64_t head; /* next slot the producer fills; producer-owned */
	_Alignas(CACHE_LINE) uint64_t tail; /* next slot the consumer reads; consumer-owned */
	_Alignas(CACHE_LINE) uint8_t slots[RING_SLOTS][BENCH_MSG_SIZE];
};

struct region {
	struct ring to_child;
	struct ring to_parent;
};

struct msg {
	uint64_t kind;
	uint64_t seq;
	uint8_t pad[BENCH_MSG_SIZE - 16];
};
_Static_assert(sizeof(struct msg) == BENCH_MSG_SIZE, "one message fills one slot");

/*
 * Each side keeps its own index and a private copy of the other side's, and
 * reads the shared one only when the copy says full (producer) or empty
 * (consumer): that keeps the shared cache lines from bouncing on every message.
 */
struct producer {
	struct ring *ring;
	uint64_t head;
	uint64_t tail_seen;
};

struct consumer {
	struct ring *ring;
	uint64_t tail;
	uint64_t head_seen;
};

/* Spins until *index != stale; returns -1 after BENCH_SPIN_TIMEOUT_NS without a change (a dead peer). */
static int wait_change(const uint64_t *index, uint64_t stale, uint64_t *seen)
{
	uint64_t start = 0;
	for (uint32_t spins = 1;; spins++) {
		/* Acquire pairs with the peer's release store of this index. */
		uint64_t now_index = __atomic_load_n(index, __ATOMIC_ACQUIRE);
		if (now_index != stale) {
			*seen = now_index;
			return 0;
		}
		bench_cpu_relax();
		if ((spins & 0xffffu) == 0) {
			/*
			 * Only a busy host makes a wait this long (milliseconds, where a round
			 * trip takes well under a microsecond): the peer may need this CPU.
			 */
			sched_yield();
			uint64_t now = bench_now_ns();
			if (start == 0)
				start = now;
			else if (now - start > BENCH_SPIN_TIMEOUT_NS)
				return -1;
		}
	}
}

static int ring_push(struct producer *p, const struct msg *msg)
{
	/* Full by the stale copy: the consumer's tail (acquired) says which slots are free again. */
	while (p->head - p->tail_seen >= RING_SLOTS)
		if (wait_change(&p->ring->tail, p->tail_seen, &p->tail_seen) != 0)
			return -1;
	memcpy(p->ring->slots[p->head & (RING_SLOTS - 1)], msg, sizeof *msg);
	p->head++;
	/* Release pairs with the consumer's acquire of head: the slot is written. */
	__atomic_store_n(&p->ring->head, p->head, __ATOMIC_RELEASE);
	return 0;
}

static int ring_pop(struct consumer *c, struct msg *msg)
{
	while (c->head_seen == c->tail)
		if (wait_change(&c->ring->head, c->head_seen, &c->head_seen) != 0)
			return -1;
	memcpy(msg, c->ring->slots[c->tail & (RING_SLOTS - 1)], sizeof *msg);
	c->tail++;
	/* Release pairs with the producer's acquire of tail: the slot may be reused. */
	__atomic_store_n(&c->ring->tail, c->tail, __ATOMIC_RELEASE);
	return 0;
}

/* One process's ends of the two rings. */
struct side {
	struct producer out;
	struct consumer in;
};

static struct side make_side(struct ring *out, struct ring *in)
{
	struct side side = {.out = {.ring = out}, .in = {.ring = in}};
	return side;
}

/* Echoes pings, counts streamed messages, acknowledges the end of a stream. */
static int child_main(struct side *self)
{
	uint64_t expected = 0;
	struct msg msg;
	while (ring_pop(&self->in, &msg) == 0) {
		switch (msg.kind) {
		case MSG_QUIT:
			return 0;
		case MSG_PING:
			if (ring_push(&self->out, &msg) != 0)
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
			if (ring_push(&self->out, &msg) != 0)
				return 1;
			break;
		default:
			return 1;
		}
	}
	return 1;
}

static int fail(const char *what)
{
	fprintf(stderr, "baseline_ring: %s: the peer process made no progress for %llu s\n", what,
		(unsigned long long)(BENCH_SPIN_TIMEOUT_NS / 1000000000ull));
	return -1;
}

static int ping_pong(struct side *self, const struct bench_options *options)
{
	uint64_t *samples = bench_alloc(options->iters * sizeof(uint64_t), "baseline_ring");
	struct msg msg;
	memset(&msg, 0, sizeof msg);
	for (uint64_t i = 0; i < options->warmup + options->iters; i++) {
		msg.kind = MSG_PING;
		msg.seq = i;
		uint64_t t0 = bench_now_ns();
		if (ring_push(&self->out, &msg) != 0 || ring_pop(&self->in, &msg) != 0) {
			free(samples);
			return fail("ping-pong");
		}
		uint64_t t1 = bench_now_ns();
		if (msg.kind != MSG_PING || msg.seq != i) {
			fprintf(stderr, "baseline_ring: the echo does not match the ping\n");
			free(samples);
			return -1;
		}
		if (i >= options->warmup)
			samples[i - options->warmup] = t1 - t0;
	}
	bench_report_latency("rt", samples, options->iters);
	free(samples);
	return 0;
}

/* Pushes count messages one way and waits until the peer has drained them; returns ns or 0. */
static uint64_t stream_burst(struct side *self, uint64_t count)
{
	struct msg msg;
	memset(&msg, 0, sizeof msg);
	uint64_t t0 = bench_now_ns();
	for (uint64_t i = 0; i < count; i++) {
		msg.kind = MSG_STREAM;
		msg.seq = i;
		if (ring_push(&self->out, &msg) != 0) {
			fail("stream");
			return 0;
		}
	}
	msg.kind = MSG_STREAM_END;
	if (ring_push(&self->out, &msg) != 0 || ring_pop(&self->in, &msg) != 0) {
		fail("stream end");
		return 0;
	}
	uint64_t t1 = bench_now_ns();
	if (msg.kind != MSG_ACK || msg.seq != count) {
		fprintf(stderr, "baseline_ring: the peer lost or reordered streamed messages\n");
		return 0;
	}
	return t1 > t0 ? t1 - t0 : 1;
}

static int stream(struct side *self, const struct bench_options *options)
{
	uint64_t ns = stream_burst(self, STREAM_CALIBRATION);
	if (ns == 0)
		return -1;
	uint64_t count = bench_scale_count(STREAM_CALIBRATION, ns, bench_burst_ns(options), STREAM_MAX);
	ns = stream_burst(self, count);
	if (ns == 0)
		return -1;
	bench_result("msg_rate", BENCH_MSG_SIZE, (double)count / ((double)ns / 1e9), "msg/s");
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_options options;
	if (bench_parse_common(&argc, argv, &options) != 0)
		return 2;
	if (argc != 1) {
		fprintf(stderr, "usage: baseline_ring [--quick] [--iters N]\n");
		return 2;
	}
	int fd = memfd_create("ava-bench-ring", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, sizeof(struct region)) != 0) {
		perror("baseline_ring: memfd");
		return 1;
	}
	struct region *region =
	    mmap(NULL, sizeof(struct region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (region == MAP_FAILED) {
		perror("baseline_ring: mmap");
		return 1;
	}
	pid_t parent = getpid();
	pid_t child = fork();
	if (child < 0) {
		perror("baseline_ring: fork");
		return 1;
	}
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		struct side child_side = make_side(&region->to_parent, &region->to_child);
		_exit(child_main(&child_side));
	}

	struct side self = make_side(&region->to_child, &region->to_parent);
	int status = ping_pong(&self, &options) == 0 && stream(&self, &options) == 0 ? 0 : 1;
	struct msg quit = {.kind = MSG_QUIT};
	if (status != 0 || ring_push(&self.out, &quit) != 0)
		kill(child, SIGKILL);
	int wait_status = 0;
	if (waitpid(child, &wait_status, 0) != child || !WIFEXITED(wait_status) ||
	    (status == 0 && WEXITSTATUS(wait_status) != 0)) {
		fprintf(stderr, "baseline_ring: the peer process failed\n");
		status = 1;
	}
	munmap(region, sizeof(struct region));
	return status;
}
