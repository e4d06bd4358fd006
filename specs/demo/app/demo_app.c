/* SPDX-License-Identifier: MIT */
/*
 * demo_app: an ordinary program using libdemo, unaware of ava. It calls
 * every function of demo.h (except demo_crash and demo_reserved_call) and
 * prints only deterministic lines -- no pointers, no timings -- so that its
 * output under `ava run` can be compared byte for byte with a native run.
 * Buffers handed to calls start initialised, so that even a failed call
 * prints the same thing every time. Exit status 0 means every check passed.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

/* A handle the library never issued: it must be rejected, not dereferenced. */
#define FORGED_HANDLE ((demo_obj)(uintptr_t)0x12345678)

static int failures;

static void check(int ok, const char *what)
{
	if (!ok) {
		failures++;
		printf("CHECK FAILED: %s\n", what);
	}
}

/* Prints "what: status N (text)" and checks it against expected. */
static void report(const char *what, demo_status status, demo_status expected)
{
	printf("%s: status %d (%s)\n", what, (int)status, demo_status_string(status));
	check(status == expected, what);
}

static uint64_t fnv1a(const uint8_t *data, uint64_t size)
{
	uint64_t hash = 0xcbf29ce484222325ull;
	for (uint64_t i = 0; i < size; i++) {
		hash ^= data[i];
		hash *= 0x100000001b3ull;
	}
	return hash;
}

/* Deterministic, seed-dependent bytes, so that a shifted or stale buffer shows. */
static void pattern(uint8_t *data, uint64_t size, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1u;
	for (uint64_t i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		data[i] = (uint8_t)x;
	}
}

static uint8_t *xmalloc(uint64_t size)
{
	uint8_t *p = malloc(size ? (size_t)size : 1);
	if (p == NULL) {
		fprintf(stderr, "demo_app: out of memory (%" PRIu64 " bytes)\n", size);
		exit(1);
	}
	return p;
}

static uint32_t object_id(demo_obj obj)
{
	uint32_t id = 0;
	demo_status status = demo_obj_info(obj, DEMO_INFO_ID, &id, sizeof id);
	check(status == DEMO_OK, "info id of a listed object");
	return id;
}

static void scalars(void)
{
	int32_t version = demo_version();
	printf("version: %d\n", (int)version);
	check(version == 10203, "version");
	double scaled = demo_scale(1.5, 2.25f);
	printf("scale(1.5, 2.25): %.6f\n", scaled);
	check(scaled == 3.375, "scale");
	printf("scale(-3, 0.5): %.6f\n", demo_scale(-3.0, 0.5f));
	static const demo_status statuses[] = {DEMO_OK,		 DEMO_ERR_INVALID,
					       DEMO_ERR_RANGE,	 DEMO_ERR_NOMEM,
					       DEMO_ERR_UNSUPPORTED, DEMO_ERR_TRANSPORT,
					       42};
	for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
		printf("status string %d: %s\n", (int)statuses[i], demo_status_string(statuses[i]));
}

static void round_trip(uint64_t size, uint32_t seed)
{
	char what[96];
	demo_obj obj = NULL;
	snprintf(what, sizeof what, "round trip %" PRIu64 ": create", size);
	report(what, demo_obj_create("round-trip", size, &obj), DEMO_OK);
	if (obj == NULL)
		return;
	uint8_t *in = xmalloc(size);
	uint8_t *out = xmalloc(size);
	pattern(in, size, seed);
	memset(out, 0, (size_t)size);
	snprintf(what, sizeof what, "round trip %" PRIu64 ": write", size);
	report(what, demo_obj_write(obj, 0, in, size), DEMO_OK);
	snprintf(what, sizeof what, "round trip %" PRIu64 ": read", size);
	report(what, demo_obj_read(obj, 0, out, size), DEMO_OK);
	int same = memcmp(in, out, (size_t)size) == 0;
	printf("round trip %" PRIu64 ": fnv1a %016" PRIx64 ", match %s\n", size, fnv1a(out, size),
	       same ? "yes" : "no");
	snprintf(what, sizeof what, "round trip %" PRIu64 " matches", size);
	check(same, what);
	free(in);
	free(out);
	snprintf(what, sizeof what, "round trip %" PRIu64 ": release", size);
	report(what, demo_obj_release(obj), DEMO_OK);
}

static void partial_io(demo_obj obj)
{
	uint8_t in[16];
	uint8_t out[16] = {0};
	pattern(in, sizeof in, 7);
	report("write 16 at offset 40", demo_obj_write(obj, 40, in, sizeof in), DEMO_OK);
	report("read 16 at offset 40", demo_obj_read(obj, 40, out, sizeof out), DEMO_OK);
	check(memcmp(in, out, sizeof in) == 0, "offset round trip");
	printf("offset round trip: fnv1a %016" PRIx64 "\n", fnv1a(out, sizeof out));
}

static void xor_and_transfer(void)
{
	enum { N = 4096 };
	uint8_t *object_bytes = xmalloc(N);
	/* One spare byte: the out-of-range xor below must still pass a buffer of its stated size. */
	uint8_t *buffer = xmalloc(N + 1);
	uint8_t *expected = xmalloc(N);
	demo_obj obj = NULL;
	report("create xor", demo_obj_create("xor", N, &obj), DEMO_OK);
	pattern(object_bytes, N, 11);
	pattern(buffer, N, 12);
	for (int i = 0; i < N; i++)
		expected[i] = object_bytes[i] ^ buffer[i];
	report("transfer to object", demo_obj_transfer(obj, DEMO_TO_OBJECT, object_bytes, N), DEMO_OK);
	report("xor 4096", demo_obj_xor(obj, buffer, N), DEMO_OK);
	check(memcmp(buffer, expected, N) == 0, "xor result");
	printf("xor result: fnv1a %016" PRIx64 "\n", fnv1a(buffer, N));
	buffer[N] = 0;
	report("xor beyond object", demo_obj_xor(obj, buffer, N + 1), DEMO_ERR_RANGE);

	memset(buffer, 0, N);
	report("transfer from object", demo_obj_transfer(obj, 0, buffer, N), DEMO_OK);
	check(memcmp(buffer, object_bytes, N) == 0, "transfer from object");
	printf("transfer from object: fnv1a %016" PRIx64 "\n", fnv1a(buffer, N));
	report("release xor", demo_obj_release(obj), DEMO_OK);
	free(object_bytes);
	free(buffer);
	free(expected);
}

static void names_and_info(demo_obj obj)
{
	uint64_t length = 0;
	report("get_name length only", demo_obj_get_name(obj, NULL, 0, &length), DEMO_OK);
	printf("name length: %" PRIu64 "\n", length);
	check(length == 5, "name length");

	char small[4] = "???";
	length = 0;
	report("get_name capacity 4", demo_obj_get_name(obj, small, sizeof small, &length), DEMO_OK);
	printf("truncated name: '%s' (length %" PRIu64 ")\n", small, length);
	check(strcmp(small, "alp") == 0, "truncated name");

	char name[32] = "";
	report("get_name capacity 32", demo_obj_get_name(obj, name, sizeof name, NULL), DEMO_OK);
	printf("name: '%s'\n", name);
	check(strcmp(name, "alpha") == 0, "full name");

	uint64_t size = 0;
	report("info size", demo_obj_info(obj, DEMO_INFO_SIZE, &size, sizeof size), DEMO_OK);
	printf("info size: %" PRIu64 "\n", size);
	check(size == 64, "info size value");
	uint32_t id = 0;
	report("info id", demo_obj_info(obj, DEMO_INFO_ID, &id, sizeof id), DEMO_OK);
	printf("info id: %" PRIu32 "\n", id);
	char info_name[16] = "";
	report("info name", demo_obj_info(obj, DEMO_INFO_NAME, info_name, sizeof info_name), DEMO_OK);
	printf("info name: '%s'\n", info_name);
	check(strcmp(info_name, "alpha") == 0, "info name value");
	uint32_t half = 0;
	report("info size into 4 bytes", demo_obj_info(obj, DEMO_INFO_SIZE, &half, sizeof half),
	       DEMO_ERR_RANGE);
	char short_name[5] = "";
	report("info name into 5 bytes",
	       demo_obj_info(obj, DEMO_INFO_NAME, short_name, sizeof short_name), DEMO_ERR_RANGE);
	report("info unknown key", demo_obj_info(obj, 99, &size, sizeof size), DEMO_ERR_INVALID);
	report("info NULL value", demo_obj_info(obj, DEMO_INFO_SIZE, NULL, 8), DEMO_ERR_INVALID);
}

/* The library keeps a pointer to the label, so it lives as long as the object. */
static char label_storage[32] = "blue label";

static void labels(demo_obj obj)
{
	char got[32] = "";
	report("get_label before set", demo_obj_get_label(obj, got, sizeof got), DEMO_OK);
	printf("label before set: '%s'\n", got);
	report("set_label", demo_obj_set_label(obj, label_storage), DEMO_OK);
	for (int i = 1; i <= 2; i++) {
		memset(got, 0, sizeof got);
		report("get_label", demo_obj_get_label(obj, got, sizeof got), DEMO_OK);
		printf("label read %d: '%s'\n", i, got);
		check(strcmp(got, "blue label") == 0, "label value");
	}
	char small[5] = "";
	report("get_label capacity 5", demo_obj_get_label(obj, small, sizeof small), DEMO_OK);
	printf("truncated label: '%s'\n", small);
	check(strcmp(small, "blue") == 0, "truncated label");
}

static void fill_and_clear(demo_obj obj)
{
	uint8_t data[64] = {0};
	/*
	 * Under ava fill is asynchronous and its status only says it was queued;
	 * the following read is what shows whether it worked.
	 */
	demo_obj_fill(obj, 0x5a);
	report("read after fill", demo_obj_read(obj, 0, data, sizeof data), DEMO_OK);
	int all = 1;
	for (size_t i = 0; i < sizeof data; i++)
		all &= data[i] == 0x5a;
	printf("after fill: all 0x5a %s\n", all ? "yes" : "no");
	check(all, "fill");
	report("clear", demo_obj_clear(obj), DEMO_OK);
	report("read after clear", demo_obj_read(obj, 0, data, sizeof data), DEMO_OK);
	all = 1;
	for (size_t i = 0; i < sizeof data; i++)
		all &= data[i] == 0;
	printf("after clear: all zero %s\n", all ? "yes" : "no");
	check(all, "clear");
}

static void sums_and_lists(demo_obj objs[3])
{
	uint64_t total = 0;
	report("sum_sizes of 3", demo_sum_sizes(objs, 3, &total), DEMO_OK);
	printf("sum of sizes: %" PRIu64 "\n", total);
	check(total == 64 + 32 + 1000, "sum of sizes");

	uint32_t count = 0;
	report("list_objects capacity 0", demo_list_objects(NULL, 0, &count), DEMO_OK);
	printf("live objects listed: %" PRIu32 "\n", count);
	check(count == 3, "list count");

	demo_obj few[2] = {NULL, NULL};
	report("list_objects capacity 2", demo_list_objects(few, 2, &count), DEMO_OK);
	printf("capacity 2: count %" PRIu32 ", ids %" PRIu32 " %" PRIu32 "\n", count,
	       object_id(few[0]), object_id(few[1]));
	check(few[0] == objs[0] && few[1] == objs[1], "listed handles, capacity 2");

	demo_obj many[8] = {NULL};
	report("list_objects capacity 8", demo_list_objects(many, 8, &count), DEMO_OK);
	printf("capacity 8: count %" PRIu32 ", ids", count);
	for (uint32_t i = 0; i < count && i < 8; i++)
		printf(" %" PRIu32, object_id(many[i]));
	printf("\n");
	check(count == 3 && many[2] == objs[2] && many[3] == NULL, "listed handles, capacity 8");
}

struct Listener {
	const char *owner;
	demo_obj expected;
	int calls;
};

static void on_event(demo_obj obj, int32_t event, const char *message, void *user_data)
{
	struct Listener *listener = user_data;
	listener->calls++;
	printf("callback: event %d, message '%s', owner %s, same object %s\n", (int)event, message,
	       listener->owner, obj == listener->expected ? "yes" : "no");
}

static void callbacks(demo_obj obj)
{
	struct Listener listener = {"demo_app listener", obj, 0};
	report("fire without callback", demo_obj_fire(obj, 0), DEMO_OK);
	report("set_callback", demo_obj_set_callback(obj, on_event, &listener), DEMO_OK);
	report("fire 1", demo_obj_fire(obj, 1), DEMO_OK);
	report("fire 2", demo_obj_fire(obj, 2), DEMO_OK);
	printf("callback calls: %d\n", listener.calls);
	check(listener.calls == 2, "callback calls");
	report("clear callback", demo_obj_set_callback(obj, NULL, NULL), DEMO_OK);
	report("fire after clear", demo_obj_fire(obj, 3), DEMO_OK);
	check(listener.calls == 2, "no callback after clear");
}

struct TagThread {
	pthread_t thread;
	int32_t tag;
	demo_status set_status;
	demo_status sleep_status;
	int32_t read_back;
};

static void *tag_thread(void *arg)
{
	struct TagThread *t = arg;
	t->set_status = demo_thread_set_tag(t->tag);
	t->sleep_status = demo_sleep_ms(20);
	t->read_back = demo_thread_get_tag();
	return NULL;
}

static void threads(void)
{
	enum { NTHREADS = 4 };
	struct TagThread t[NTHREADS];
	int started[NTHREADS] = {0};
	for (int i = 0; i < NTHREADS; i++) {
		t[i] = (struct TagThread){.tag = 100 + i};
		started[i] = pthread_create(&t[i].thread, NULL, tag_thread, &t[i]) == 0;
		check(started[i], "pthread_create");
	}
	for (int i = 0; i < NTHREADS; i++) {
		if (!started[i])
			continue;
		pthread_join(t[i].thread, NULL);
		printf("thread %d: set_tag %d, sleep %d, tag %d\n", i, (int)t[i].set_status,
		       (int)t[i].sleep_status, (int)t[i].read_back);
		check(t[i].set_status == DEMO_OK && t[i].sleep_status == DEMO_OK &&
			  t[i].read_back == t[i].tag,
		      "thread tag");
	}
	printf("main thread tag: %d\n", (int)demo_thread_get_tag());
	check(demo_thread_get_tag() == 0, "main thread tag untouched");
}

static void errors(demo_obj obj)
{
	uint8_t data[8] = {0};
	uint64_t value = 0;
	demo_obj out = NULL;
	report("read forged handle", demo_obj_read(FORGED_HANDLE, 0, data, sizeof data),
	       DEMO_ERR_INVALID);
	report("info forged handle", demo_obj_info(FORGED_HANDLE, DEMO_INFO_SIZE, &value, 8),
	       DEMO_ERR_INVALID);
	report("release forged handle", demo_obj_release(FORGED_HANDLE), DEMO_ERR_INVALID);
	report("get_label NULL handle", demo_obj_get_label(NULL, (char *)data, sizeof data),
	       DEMO_ERR_INVALID);
	demo_obj mixed[2] = {obj, FORGED_HANDLE};
	report("sum_sizes with forged handle", demo_sum_sizes(mixed, 2, &value), DEMO_ERR_INVALID);
	report("create NULL out", demo_obj_create("nowhere", 8, NULL), DEMO_ERR_INVALID);
	report("create NULL name", demo_obj_create(NULL, 8, &out), DEMO_ERR_INVALID);
	report("create too large", demo_obj_create("huge", DEMO_MAX_OBJECT_SIZE + 1, &out),
	       DEMO_ERR_RANGE);
	demo_obj none = demo_obj_new(DEMO_MAX_OBJECT_SIZE + 1);
	printf("new too large: %s\n", none == NULL ? "NULL" : "an object");
	check(none == NULL, "new too large");
	report("read out of range", demo_obj_read(obj, 60, data, sizeof data), DEMO_ERR_RANGE);
	report("write offset overflow", demo_obj_write(obj, UINT64_MAX, data, 2), DEMO_ERR_RANGE);
	report("sleep_ms 70000", demo_sleep_ms(70000), DEMO_ERR_RANGE);
}

int main(void)
{
	/* Callbacks may print from another thread; keep lines whole and ordered. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	scalars();

	demo_obj a = NULL;
	report("create a", demo_obj_create("alpha", 64, &a), DEMO_OK);
	demo_obj b = demo_obj_new(32);
	printf("new b: %s\n", b != NULL ? "ok" : "NULL");
	check(b != NULL, "new b");
	demo_obj c = NULL;
	report("create c", demo_obj_create("gamma", 1000, &c), DEMO_OK);
	if (a == NULL || b == NULL || c == NULL) {
		printf("demo_app: cannot continue without objects\n");
		return 1;
	}
	char b_name[16] = "";
	report("get_name b", demo_obj_get_name(b, b_name, sizeof b_name, NULL), DEMO_OK);
	printf("name of b: '%s'\n", b_name);
	printf("live objects: %" PRIu64 "\n", demo_live_objects());

	static const uint64_t sizes[] = {0, 1, 4095, 4096, 1ull << 20, 64ull << 20};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		round_trip(sizes[i], (uint32_t)i + 1);
	partial_io(a);
	xor_and_transfer();
	names_and_info(a);
	labels(a);
	fill_and_clear(a);
	demo_obj trio[3] = {a, b, c};
	sums_and_lists(trio);
	callbacks(c);
	threads();
	errors(a);

	report("release a", demo_obj_release(a), DEMO_OK);
	report("release b", demo_obj_release(b), DEMO_OK);
	report("release c", demo_obj_release(c), DEMO_OK);
	report("release a again", demo_obj_release(a), DEMO_ERR_INVALID);
	uint64_t live = demo_live_objects();
	printf("live objects at exit: %" PRIu64 "\n", live);
	check(live == 0, "no live objects at exit");

	if (failures != 0) {
		printf("demo_app: %d checks failed\n", failures);
		return 1;
	}
	printf("demo_app: all checks passed\n");
	return 0;
}
