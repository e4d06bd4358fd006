/* SPDX-License-Identifier: MIT */
/*
 * demo_pieces: an ordinary libdemo program that moves data of sizes around
 * multiples of a given size (under ava, the piece size of pipelined
 * transfers: AVA_PIPELINE_CHUNK), at odd offsets, from several threads, and
 * asks for transfers the object refuses. It prints each status and whether
 * the bytes came back, so its output is the same natively and remoted.
 *
 *   demo_pieces check CHUNK THREADS   the table below, then THREADS threads
 *   demo_pieces deferred CHUNK        a large write after a failed async call
 *   demo_pieces crash CHUNK           transfers while another thread calls
 *                                     demo_crash (remoted only: natively
 *                                     demo_crash kills the process)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

static void fill(uint8_t *p, uint64_t n, uint64_t seed)
{
	for (uint64_t i = 0; i < n; ++i)
		p[i] = (uint8_t)((i + seed) * 2654435761u >> 11);
}

/* Writes size bytes at offset and reads them back: "write W read R same|DIFFERENT". */
static int round_trip(demo_obj o, uint64_t offset, uint64_t size, uint64_t seed, uint8_t *src,
		      uint8_t *dst)
{
	demo_status w, r;
	int same;

	fill(src, size, seed);
	memset(dst, 0, size);
	w = demo_obj_write(o, offset, src, size);
	r = demo_obj_read(o, offset, dst, size);
	same = memcmp(src, dst, size) == 0;
	printf("%llu bytes at %llu: write %d read %d %s\n", (unsigned long long)size,
	       (unsigned long long)offset, w, r, same ? "same" : "DIFFERENT");
	return w == DEMO_OK && r == DEMO_OK && same;
}

struct worker_arg {
	uint64_t chunk;
	int index;
	int ok;
};

/* One thread's own object, written and read back ten times in pieces. */
static void *thread_main(void *p)
{
	struct worker_arg *a = p;
	const uint64_t size = 5 * a->chunk + 3;
	uint8_t *src = malloc(size), *dst = malloc(size);
	demo_obj o = NULL;

	a->ok = src != NULL && dst != NULL && demo_obj_create("t", size + 1, &o) == DEMO_OK;
	for (int i = 0; a->ok && i < 10; ++i) {
		fill(src, size, (uint64_t)a->index * 100 + (uint64_t)i);
		a->ok = demo_obj_write(o, 1, src, size) == DEMO_OK &&
			demo_obj_read(o, 1, dst, size) == DEMO_OK && memcmp(src, dst, size) == 0;
	}
	if (o != NULL)
		demo_obj_release(o);
	free(src);
	free(dst);
	return NULL;
}

static int check(uint64_t chunk, int threads)
{
	const uint64_t sizes[] = {1,	     chunk - 1,	    chunk,	   chunk + 1,
				  2 * chunk - 1, 2 * chunk,	    2 * chunk + 1, 3 * chunk + 17,
				  7 * chunk + 5, 8 * chunk};
	const uint64_t object = 8 * chunk + 64;
	uint8_t *src = malloc(object), *dst = malloc(object), *before = malloc(object);
	pthread_t tid[16];
	struct worker_arg args[16];
	demo_obj o = NULL, gone = NULL;
	int ok = 1;

	if (!src || !dst || !before || threads < 0 || threads > 16)
		return 2;
	printf("create: %d\n", demo_obj_create("pieces", object, &o));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i)
		for (uint64_t offset = 0; offset <= 3; offset += 3)
			if (offset + sizes[i] <= object)
				ok &= round_trip(o, offset, sizes[i], i * 7 + offset, src, dst);

	/* Refused as a whole: nothing of the object changes, nothing lands in dst. */
	demo_obj_read(o, 0, before, object);
	fill(src, object, 99);
	printf("write past the end: %d\n", demo_obj_write(o, object - 3 * chunk + 1, src, 3 * chunk));
	printf("write overflowing: %d\n", demo_obj_write(o, UINT64_MAX - chunk, src, 3 * chunk));
	memset(dst, 0x5a, object);
	printf("read past the end: %d\n", demo_obj_read(o, 64, dst, object));
	memset(src, 0x5a, object);
	printf("read past the end left the buffer: %s\n",
	       memcmp(src, dst, object) == 0 ? "as it was" : "CHANGED");
	demo_obj_read(o, 0, dst, object);
	printf("object after refused writes: %s\n",
	       memcmp(before, dst, object) == 0 ? "unchanged" : "CHANGED");
	printf("write null data: %d\n", demo_obj_write(o, 0, NULL, 3 * chunk));

	/* A released object: the whole call fails, as natively. */
	printf("create gone: %d\n", demo_obj_create("gone", object, &gone));
	printf("release gone: %d\n", demo_obj_release(gone));
	printf("write released: %d\n", demo_obj_write(gone, 0, src, 3 * chunk));
	printf("read released: %d\n", demo_obj_read(gone, 0, dst, 3 * chunk));
	printf("release: %d\n", demo_obj_release(o));

	for (int t = 0; t < threads; ++t) {
		args[t] = (struct worker_arg){chunk, t, 0};
		pthread_create(&tid[t], NULL, thread_main, &args[t]);
	}
	for (int t = 0; t < threads; ++t) {
		pthread_join(tid[t], NULL);
		printf("thread %d: %s\n", t, args[t].ok ? "all same" : "DIFFERENT");
		ok &= args[t].ok;
	}
	free(src);
	free(dst);
	free(before);
	return ok ? 0 : 1;
}

struct crash_state {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done; /* transfers the mover finished */
};

static void *crasher(void *p)
{
	struct crash_state *s = p;

	pthread_mutex_lock(&s->mu);
	while (s->done < 3)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	demo_crash();
	return NULL;
}

/* Moves data in pieces until a transfer fails, while another thread kills the worker. */
static int crash(uint64_t chunk)
{
	const uint64_t size = 64 * chunk;
	uint8_t *buf = malloc(size);
	struct crash_state s = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	demo_status st = DEMO_OK;
	demo_obj o = NULL;
	pthread_t tid;
	int i;

	if (buf == NULL || demo_obj_create("moved", size, &o) != DEMO_OK)
		return 2;
	fill(buf, size, 1);
	pthread_create(&tid, NULL, crasher, &s);
	for (i = 0; i < 100000 && st == DEMO_OK; ++i) {
		st = (i & 1) ? demo_obj_read(o, 0, buf, size) : demo_obj_write(o, 0, buf, size);
		pthread_mutex_lock(&s.mu);
		s.done++;
		pthread_cond_signal(&s.cv);
		pthread_mutex_unlock(&s.mu);
	}
	pthread_join(tid, NULL);
	printf("a transfer failed with %d\n", st);
	printf("after: %d\n", demo_obj_write(o, 0, buf, size));
	free(buf);
	return 0;
}

/*
 * An async call's failure reported at the next sync call (under ava, the
 * demo's rule; natively demo_obj_fill fails at once): a large write that
 * reports it must still have written, as a whole write would.
 */
static int deferred(uint64_t chunk)
{
	const uint64_t size = 5 * chunk + 1;
	uint8_t *src = malloc(size), *dst = malloc(size);
	demo_obj o = NULL, gone = NULL;

	if (src == NULL || dst == NULL)
		return 2;
	fill(src, size, 5);
	printf("create: %d\n", demo_obj_create("o", size, &o));
	printf("create gone: %d\n", demo_obj_create("gone", 8, &gone));
	printf("release gone: %d\n", demo_obj_release(gone));
	printf("fill released: %d\n", demo_obj_fill(gone, 1));
	printf("write: %d\n", demo_obj_write(o, 0, src, size));
	printf("read: %d\n", demo_obj_read(o, 0, dst, size));
	printf("the write wrote: %s\n", memcmp(src, dst, size) == 0 ? "yes" : "NO");
	printf("release: %d\n", demo_obj_release(o));
	free(src);
	free(dst);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "check"))
		return check(strtoull(argv[2], NULL, 10), atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "deferred"))
		return deferred(strtoull(argv[2], NULL, 10));
	if (argc == 3 && !strcmp(argv[1], "crash"))
		return crash(strtoull(argv[2], NULL, 10));
	fprintf(stderr, "usage: demo_pieces check CHUNK THREADS | deferred CHUNK | crash CHUNK\n");
	return 2;
}
