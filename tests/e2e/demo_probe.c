/* SPDX-License-Identifier: MIT */
/*
 * demo_probe: an ordinary libdemo program whose subcommands each exercise one
 * part of the remoting machinery, for the end-to-end tests. It knows nothing
 * of ava.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demo.h"

#define BAD_HANDLE ((demo_obj)(uintptr_t)0x12345678u)

static int async_error(void)
{
	demo_obj a = NULL, b = NULL;

	printf("create a: %d\n", demo_obj_create("a", 16, &a));
	printf("create b: %d\n", demo_obj_create("b", 16, &b));
	printf("release a: %d\n", demo_obj_release(a));
	/* a is gone: the async fill fails, and ava reports it at the next sync call. */
	printf("fill released: %d\n", demo_obj_fill(a, 7));
	printf("write b: %d\n", demo_obj_write(b, 0, "x", 1));
	printf("write b again: %d\n", demo_obj_write(b, 0, "y", 1));
	printf("release b: %d\n", demo_obj_release(b));
	return 0;
}

static int bad_handles(void)
{
	demo_obj good = NULL;
	demo_obj list[3];
	uint64_t total = 0;
	char buf[8];

	printf("create: %d\n", demo_obj_create("good", 8, &good));
	printf("release bad: %d\n", demo_obj_release(BAD_HANDLE));
	printf("read bad: %d\n", demo_obj_read(BAD_HANDLE, 0, buf, sizeof(buf)));
	printf("write null handle: %d\n", demo_obj_write(NULL, 0, "x", 1));
	list[0] = good;
	list[1] = BAD_HANDLE;
	list[2] = good;
	printf("sum with a bad handle: %d\n", demo_sum_sizes(list, 3, &total));
	printf("sum good: %d\n", demo_sum_sizes(list, 1, &total));
	printf("total: %llu\n", (unsigned long long)total);
	printf("write null data: %d\n", demo_obj_write(good, 0, NULL, 4));
	printf("read null data: %d\n", demo_obj_read(good, 0, NULL, 4));
	printf("read out of range: %d\n", demo_obj_read(good, 4, buf, 8));
	printf("create null name: %d\n", demo_obj_create(NULL, 8, &good) == DEMO_OK ? 0 : 1);
	printf("info too small: %d\n", demo_obj_info(good, DEMO_INFO_SIZE, buf, 2));
	printf("release: %d\n", demo_obj_release(good));
	printf("release twice: %d\n", demo_obj_release(good));
	return 0;
}

static int sleeper(const char *ms)
{
	demo_obj o[3];

	for (int i = 0; i < 3; ++i)
		demo_obj_create("held", 1024, &o[i]);
	printf("live: %llu\n", (unsigned long long)demo_live_objects());
	printf("ready\n");
	fflush(stdout);
	printf("sleep: %d\n", demo_sleep_ms((uint32_t)strtoul(ms, NULL, 10)));
	printf("after sleep: %d\n", demo_version());
	return 0;
}

static void *idle_thread(void *arg)
{
	demo_obj o = NULL;
	int rc = demo_obj_create("idle", 8, &o);

	if (rc == 0)
		rc = demo_obj_release(o);
	*(int *)arg = rc;
	return NULL;
}

/* THREADS threads each make calls (one worker shadow thread each), then the
 * program sits idle for MS milliseconds with its connection open. */
static int idle(const char *threads, const char *ms)
{
	enum { MAX_THREADS = 64 };
	pthread_t t[MAX_THREADS];
	int rc[MAX_THREADS];
	int n = atoi(threads);
	long wait_ms = strtol(ms, NULL, 10);
	struct timespec left = { wait_ms / 1000, (wait_ms % 1000) * 1000000L };
	int failed = 0;

	if (n < 1 || n > MAX_THREADS)
		return 2;
	for (int i = 0; i < n; ++i)
		if (pthread_create(&t[i], NULL, idle_thread, &rc[i]) != 0)
			return 1;
	for (int i = 0; i < n; ++i) {
		pthread_join(t[i], NULL);
		failed |= rc[i] != 0;
	}
	printf("idle: %d threads, %s\n", n, failed ? "failed" : "ok");
	printf("ready\n");
	fflush(stdout);
	while (nanosleep(&left, &left) != 0)
		;
	printf("version: %d\n", demo_version());
	return failed;
}

/* The round trip of MIB MiB; then, with hold_ms, the connection stays idle that long. */
static int big(const char *mib, const char *hold_ms)
{
	const uint64_t size = strtoull(mib, NULL, 10) << 20;
	uint8_t *in = malloc(size), *out = malloc(size);
	demo_obj o = NULL;
	uint64_t i;
	int same;

	if (!in || !out)
		return 2;
	for (i = 0; i < size; ++i)
		in[i] = (uint8_t)(i * 2654435761u >> 13);
	printf("create: %d\n", demo_obj_create("big", size, &o));
	printf("write: %d\n", demo_obj_write(o, 0, in, size));
	memset(out, 0, size);
	printf("read: %d\n", demo_obj_read(o, 0, out, size));
	same = memcmp(in, out, size) == 0;
	printf("round trip of %s MiB: %s\n", mib, same ? "identical" : "DIFFERENT");
	printf("release: %d\n", demo_obj_release(o));
	free(in);
	free(out);
	if (hold_ms) {
		const long ms = strtol(hold_ms, NULL, 10);
		struct timespec left = {ms / 1000, (ms % 1000) * 1000000L};

		printf("holding\n");
		fflush(stdout);
		while (nanosleep(&left, &left) != 0)
			;
		printf("version: %d\n", demo_version());
	}
	return same ? 0 : 1;
}

/*
 * Buffers from ava_zerocopy_alloc when the guest library offers it (found at
 * run time, so the program still runs natively), else from malloc.
 */
static int zerocopy(const char *mib)
{
	void *(*zc_alloc)(uint64_t) = (void *(*)(uint64_t))dlsym(RTLD_DEFAULT, "ava_zerocopy_alloc");
	void (*zc_free)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "ava_zerocopy_free");
	const uint64_t size = strtoull(mib, NULL, 10) << 20;
	uint8_t *in = zc_alloc ? zc_alloc(size) : malloc(size);
	uint8_t *out = zc_alloc ? zc_alloc(size) : malloc(size);
	demo_obj o = NULL;
	int same;

	if (!in || !out)
		return 2;
	for (uint64_t i = 0; i < size; ++i)
		in[i] = (uint8_t)(i * 40503u >> 7);
	printf("create: %d\n", demo_obj_create("zc", size, &o));
	printf("write: %d\n", demo_obj_write(o, 0, in, size));
	memset(out, 0, size);
	printf("read: %d\n", demo_obj_read(o, 0, out, size));
	/* A buffer smaller than the heap threshold, in the heap all the same. */
	printf("read small: %d\n", demo_obj_read(o, 0, out, 100));
	same = memcmp(in, out, size) == 0;
	printf("zero-copy round trip of %s MiB: %s\n", mib, same ? "identical" : "DIFFERENT");
	printf("release: %d\n", demo_obj_release(o));
	if (zc_free) {
		zc_free(in);
		zc_free(out);
	} else {
		free(in);
		free(out);
	}
	return same ? 0 : 1;
}

/*
 * Sets COUNT labels of BYTES each on one object (libdemo keeps each label's
 * pointer while the object lives), then releases it and sets one label on a
 * new object: prints how many labels took and the first failure.
 */
static int labels(const char *count_text, const char *bytes_text)
{
	const long count = strtol(count_text, NULL, 10);
	const size_t bytes = strtoull(bytes_text, NULL, 10);
	char *label = malloc(bytes + 1);
	demo_obj o = NULL, again = NULL;
	demo_status rc = DEMO_OK;
	long set = 0;

	if (!label || count <= 0 || bytes == 0)
		return 2;
	memset(label, 'l', bytes);
	label[bytes] = 0;
	printf("create: %d\n", demo_obj_create("labels", 8, &o));
	while (set < count && (rc = demo_obj_set_label(o, label)) == DEMO_OK)
		++set;
	printf("labels: %ld of %ld set, then %d\n", set, count, set < count ? rc : DEMO_OK);
	printf("release: %d\n", demo_obj_release(o));
	printf("create again: %d\n", demo_obj_create("again", 8, &again));
	printf("label again: %d\n", demo_obj_set_label(again, label));
	printf("release again: %d\n", demo_obj_release(again));
	free(label);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: demo_probe async-error|bad-handles|unsupported|live|sleep MS|idle THREADS MS|big MIB [HOLD_MS]|zerocopy MIB|labels COUNT BYTES\n");
		return 2;
	}
	if (!strcmp(argv[1], "async-error"))
		return async_error();
	if (!strcmp(argv[1], "bad-handles"))
		return bad_handles();
	if (!strcmp(argv[1], "unsupported")) {
		printf("reserved: %d\n", demo_reserved_call(21));
		printf("version: %d\n", demo_version());
		return 0;
	}
	if (!strcmp(argv[1], "live")) {
		printf("live: %llu\n", (unsigned long long)demo_live_objects());
		return 0;
	}
	if (!strcmp(argv[1], "sleep") && argc > 2)
		return sleeper(argv[2]);
	if (!strcmp(argv[1], "idle") && argc > 3)
		return idle(argv[2], argv[3]);
	if (!strcmp(argv[1], "big") && argc > 2)
		return big(argv[2], argc > 3 ? argv[3] : NULL);
	if (!strcmp(argv[1], "zerocopy") && argc > 2)
		return zerocopy(argv[2]);
	if (!strcmp(argv[1], "labels") && argc > 3)
		return labels(argv[2], argv[3]);
	fprintf(stderr, "demo_probe: unknown command %s\n", argv[1]);
	return 2;
}
