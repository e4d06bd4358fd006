// SPDX-License-Identifier: GPL-2.0
/*
 * ava_demo_test.ko: kernel code calling the demo API through ava_demo.ko
 * (cava's kernel backend) and ava.ko's kernel connection to the worker on
 * the host. At init it runs the checks below and reports each failure and a
 * summary line to the kernel log:
 *
 *   ava_demo_test: PASS <n>/<n>          or
 *   ava_demo_test: FAIL <check>: ...     ...  ava_demo_test: FAIL <passed>/<n>
 *
 * Init succeeds either way, so the module can be unloaded; one object stays
 * alive until exit, which releases it (the host test then checks that the
 * slot and its worker are gone).
 *
 * With fault_sleep_ms=N it runs no checks: it announces "fault: calling",
 * makes one demo_sleep_ms(N) call, during which the host test breaks the
 * connection (kills the worker, scribbles on the reply ring), and reports
 * what the call returned ("fault: sleep_ms = <status>").
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "ava/kcall.h"
#include "demo_cmds.h"
#include "demo_kern.h"
#include "demo_wire.h"

#define T_NAME "ava_demo_test"
#define T_THREADS 4
#define T_THREAD_ROUNDS 8
#define T_BIG (2u << 20) /* above half of vmhost's 1 MiB rings: MSG_PART pieces */
#define T_WAIT_MS 30000

static unsigned int fault_sleep_ms;
module_param(fault_sleep_ms, uint, 0444);
MODULE_PARM_DESC(fault_sleep_ms, "only make one demo_sleep_ms call of this length (fault tests)");

static unsigned int t_run, t_passed;
static demo_obj t_kept; /* released at module exit */

#define CHECK(cond, fmt, ...)                                                             \
	do {                                                                              \
		t_run++;                                                                  \
		if (cond)                                                                 \
			t_passed++;                                                       \
		else                                                                      \
			pr_err(T_NAME ": FAIL %s:%d: " fmt "\n", __func__, __LINE__,       \
			       ##__VA_ARGS__);                                            \
	} while (0)

static void t_version(void)
{
	int32_t v = ava_demo_version();

	CHECK(v == 10203, "demo_version() = %d, want 10203", v);
}

static void t_objects(void)
{
	static const char pattern[] = "kernel-mode calls through ava";
	char back[sizeof(pattern)];
	uint8_t xor[sizeof(pattern)];
	uint64_t before = ava_demo_live_objects();
	demo_obj obj = NULL;
	demo_status st;
	size_t i;

	st = ava_demo_obj_create("ktest", 64, &obj);
	CHECK(st == DEMO_OK && obj, "obj_create = %d, handle %p", st, obj);
	if (st != DEMO_OK)
		return;
	CHECK(ava_demo_live_objects() == before + 1, "live objects did not grow by one");
	st = ava_demo_obj_write(obj, 8, pattern, sizeof(pattern));
	CHECK(st == DEMO_OK, "obj_write = %d", st);
	memset(back, 0, sizeof(back));
	st = ava_demo_obj_read(obj, 8, back, sizeof(back));
	CHECK(st == DEMO_OK && !memcmp(back, pattern, sizeof(pattern)),
	      "obj_read = %d, read back '%.*s'", st, (int)sizeof(back) - 1, back);
	memset(xor, 0xff, sizeof(xor));
	st = ava_demo_obj_xor(obj, xor, sizeof(xor));
	/* bytes 0..7 are zero, so the first 8 stay 0xff; the rest are ~object */
	for (i = 0; i < sizeof(xor) && st == DEMO_OK; i++) {
		uint8_t want = i < 8 ? 0xff : (uint8_t)~pattern[i - 8];

		if (xor[i] != want)
			st = DEMO_ERR_RANGE;
	}
	CHECK(st == DEMO_OK, "obj_xor in/out buffer wrong (%d)", st);
	st = ava_demo_obj_read(obj, 60, back, 8);
	CHECK(st == DEMO_ERR_RANGE, "reading past the end = %d, want DEMO_ERR_RANGE", st);
	st = ava_demo_obj_release(obj);
	CHECK(st == DEMO_OK, "obj_release = %d", st);
	CHECK(ava_demo_live_objects() == before, "live objects did not shrink back");
}

static void t_bad_handle(void)
{
	demo_obj bogus = (demo_obj)(uintptr_t)0x7777;
	char b[4];
	demo_status st;

	st = ava_demo_obj_read(bogus, 0, b, sizeof(b));
	CHECK(st == DEMO_ERR_INVALID, "read on a bad handle = %d, want DEMO_ERR_INVALID", st);
	st = ava_demo_obj_release(bogus);
	CHECK(st == DEMO_ERR_INVALID, "release of a bad handle = %d, want DEMO_ERR_INVALID", st);
}

/* An async call, then a sync one that sees its effect; an async failure surfaces at the next sync call. */
static void t_async(void)
{
	demo_obj obj = NULL, bogus = (demo_obj)(uintptr_t)0x7778;
	uint8_t b[16];
	demo_status st;
	size_t i;

	if (ava_demo_obj_create("kasync", sizeof(b), &obj) != DEMO_OK) {
		CHECK(0, "obj_create for the async checks failed");
		return;
	}
	st = ava_demo_obj_fill(obj, 0x5a);
	CHECK(st == DEMO_OK, "async obj_fill = %d", st);
	memset(b, 0, sizeof(b));
	st = ava_demo_obj_read(obj, 0, b, sizeof(b));
	for (i = 0; i < sizeof(b) && st == DEMO_OK; i++)
		if (b[i] != 0x5a)
			st = DEMO_ERR_RANGE;
	CHECK(st == DEMO_OK, "read after async fill: %d (byte 0 = %#x)", st, b[0]);

	st = ava_demo_obj_fill(bogus, 1);
	CHECK(st == DEMO_OK, "async obj_fill on a bad handle returns at once with %d", st);
	st = ava_demo_obj_clear(obj);
	CHECK(st == DEMO_ERR_INVALID,
	      "the next sync call = %d, want the async error DEMO_ERR_INVALID", st);
	st = ava_demo_obj_clear(obj);
	CHECK(st == DEMO_OK, "the sync call after that = %d (the error is reported once)", st);
	CHECK(ava_demo_obj_release(obj) == DEMO_OK, "obj_release failed");
}

/* Messages larger than half the ring travel as MSG_PART/MSG_END pieces, both ways. */
static void t_big(void)
{
	u8 *out = kvmalloc(T_BIG, GFP_KERNEL), *in = kvmalloc(T_BIG, GFP_KERNEL);
	demo_obj obj = NULL;
	demo_status st;
	u32 i;

	if (!out || !in) {
		CHECK(0, "no memory for %u-byte buffers", T_BIG);
		goto out;
	}
	for (i = 0; i < T_BIG; i++)
		out[i] = (u8)(i * 7 + (i >> 12));
	memset(in, 0, T_BIG);
	st = ava_demo_obj_create("kbig", T_BIG, &obj);
	CHECK(st == DEMO_OK, "obj_create of %u bytes = %d", T_BIG, st);
	if (st != DEMO_OK)
		goto out;
	st = ava_demo_obj_write(obj, 0, out, T_BIG);
	CHECK(st == DEMO_OK, "big obj_write = %d", st);
	st = ava_demo_obj_read(obj, 0, in, T_BIG);
	CHECK(st == DEMO_OK && !memcmp(in, out, T_BIG), "big obj_read = %d or wrong bytes", st);
	CHECK(ava_demo_obj_release(obj) == DEMO_OK, "obj_release failed");
out:
	kvfree(out);
	kvfree(in);
}

/* ---- several kernel threads at once: each has its own worker shadow thread ---- */

struct t_thread {
	struct completion done;
	int index;
	int failures;
};

static int t_thread_main(void *arg)
{
	struct t_thread *t = arg;
	char name[16], data[32], back[32];
	int32_t tag = 1000 + t->index;
	demo_obj obj = NULL;
	int round;

	snprintf(name, sizeof(name), "kthr%d", t->index);
	if (ava_demo_thread_set_tag(tag) != DEMO_OK)
		t->failures++;
	if (ava_demo_obj_create(name, sizeof(data), &obj) != DEMO_OK) {
		t->failures++;
		goto out;
	}
	for (round = 0; round < T_THREAD_ROUNDS; round++) {
		memset(data, 'a' + t->index + round, sizeof(data));
		memset(back, 0, sizeof(back));
		if (ava_demo_obj_write(obj, 0, data, sizeof(data)) != DEMO_OK ||
		    ava_demo_obj_read(obj, 0, back, sizeof(back)) != DEMO_OK ||
		    memcmp(data, back, sizeof(data)))
			t->failures++;
		/* thread-local API state follows the calling thread */
		if (ava_demo_thread_get_tag() != tag)
			t->failures++;
	}
	if (ava_demo_obj_release(obj) != DEMO_OK)
		t->failures++;
out:
	complete(&t->done);
	return 0;
}

static void t_threads(void)
{
	struct t_thread *threads = kcalloc(T_THREADS, sizeof(*threads), GFP_KERNEL);
	struct task_struct *task;
	int i, started = 0, failures = 0;

	if (!threads) {
		CHECK(0, "no memory for the thread table");
		return;
	}
	for (i = 0; i < T_THREADS; i++) {
		threads[i].index = i;
		init_completion(&threads[i].done);
		task = kthread_run(t_thread_main, &threads[i], "ava_dtest/%d", i);
		if (IS_ERR(task)) {
			CHECK(0, "kthread_run: %ld", PTR_ERR(task));
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++) {
		/* the threads end by themselves; a hang here would be reported, not waited out */
		if (!wait_for_completion_timeout(&threads[i].done, msecs_to_jiffies(T_WAIT_MS * 4))) {
			CHECK(0, "thread %d did not finish", i);
			/* it still references threads[]: leak the table rather than free it under it */
			return;
		}
		failures += threads[i].failures;
	}
	CHECK(started == T_THREADS && !failures, "%d threads started, %d failed steps", started,
	      failures);
	kfree(threads);
}

/* ---- a callback, run on ava.ko's callback kthread ---- */

struct t_event {
	struct completion fired;
	demo_obj obj;
	int32_t event;
	char message[48];
	int32_t version_in_callback;
};

static void t_on_event(demo_obj obj, int32_t event, const char *message, void *user_data)
{
	struct t_event *e = user_data;

	e->obj = obj;
	e->event = event;
	strscpy(e->message, message ? message : "(null)", sizeof(e->message));
	/* a callback may make calls itself */
	e->version_in_callback = ava_demo_version();
	complete(&e->fired);
}

static void t_callback(void)
{
	struct t_event *e = kzalloc(sizeof(*e), GFP_KERNEL);
	demo_obj obj = NULL;
	demo_status st;

	if (!e) {
		CHECK(0, "no memory");
		return;
	}
	init_completion(&e->fired);
	if (ava_demo_obj_create("kcb", 8, &obj) != DEMO_OK) {
		CHECK(0, "obj_create for the callback failed");
		kfree(e);
		return;
	}
	st = ava_demo_obj_set_callback(obj, t_on_event, e);
	CHECK(st == DEMO_OK, "obj_set_callback = %d", st);
	st = ava_demo_obj_fire(obj, 7);
	CHECK(st == DEMO_OK, "obj_fire = %d", st);
	if (!wait_for_completion_timeout(&e->fired, msecs_to_jiffies(T_WAIT_MS))) {
		CHECK(0, "the callback never ran");
		/* it may still run: e and obj stay (leaked) rather than freed under it */
		return;
	}
	CHECK(e->obj == obj && e->event == 7 && !strcmp(e->message, "event 7 on kcb"),
	      "callback got obj %p (want %p), event %d, message '%s'", e->obj, obj, e->event,
	      e->message);
	CHECK(e->version_in_callback == 10203, "demo_version() in the callback = %d",
	      e->version_in_callback);
	CHECK(ava_demo_obj_release(obj) == DEMO_OK, "obj_release failed");
	kfree(e);
}

/*
 * Calls the spec does not allow, made with the kcall API directly (as a
 * buggy or hostile module could) on a connection of our own: ava.ko's check
 * against the command table refuses each before it reaches the host, with
 * the status the host would have answered; a good call still works.
 */
static const struct ava_kspec t_raw_spec = {
	.name = AVA_DEMO_SPEC_NAME,
	.id = AVA_DEMO_SPEC_ID,
	.hash = AVA_DEMO_SPEC_HASH,
	.nfuncs = AVA_DEMO_NFUNCS,
	.cmds = &ava_demo_cmd_table,
};

static int t_raw_call(struct ava_kconn *conn, u32 func, u32 flags, u32 args_len, s32 *status,
		      s64 *ret)
{
	struct ava_demo_demo_version_call args[2];
	const struct ava_demo_demo_version_reply *r = NULL;
	struct ava_kcall c;
	int err;

	memset(args, 0, sizeof(args));
	err = ava_kcall_begin(&c, conn, func, flags);
	if (!err)
		err = ava_kcall_invoke(&c, args, args_len, (flags & AVA_F_SYNC) ? (const void **)&r : NULL,
				       (flags & AVA_F_SYNC) ? sizeof(*r) : 0);
	*status = c.status;
	if (!err && r && ret)
		*ret = r->ret;
	ava_kcall_end(&c);
	return err;
}

static void t_policing(void)
{
	struct ava_kconn *conn;
	s32 status = 0;
	s64 ret = 0;
	int err;

	err = ava_kconn_open(&t_raw_spec, T_WAIT_MS, &conn);
	CHECK(!err, "a second kernel connection for the demo spec: %d", err);
	if (err)
		return;
	err = t_raw_call(conn, AVA_DEMO_NFUNCS + 3, AVA_F_SYNC, 8, &status, NULL);
	CHECK(err == -EINVAL && status == AVA_E_FUNC, "unknown function: %d, status %d", err,
	      status);
	err = t_raw_call(conn, AVA_DEMO_FN_DEMO_VERSION, AVA_F_SYNC, 16, &status, NULL);
	CHECK(err == -EINVAL && status == AVA_E_LENGTH, "lying argument size: %d, status %d", err,
	      status);
	err = t_raw_call(conn, AVA_DEMO_FN_DEMO_VERSION, AVA_F_ASYNC, 8, &status, NULL);
	CHECK(err == -EINVAL && status == AVA_E_PROTO, "async call of a sync function: %d, status %d",
	      err, status);
	err = t_raw_call(conn, AVA_DEMO_FN_DEMO_VERSION, AVA_F_SYNC, 8, &status, &ret);
	CHECK(!err && ret == 10203, "a good call after the refusals: %d, version %lld", err,
	      (long long)ret);
	ava_kconn_close(conn);
}

static int __init ava_demo_test_init(void)
{
	if (fault_sleep_ms) {
		demo_status st;

		pr_info(T_NAME ": fault: calling demo_sleep_ms(%u)\n", fault_sleep_ms);
		st = ava_demo_sleep_ms(fault_sleep_ms);
		/* a later call on the broken connection fails at once */
		pr_info(T_NAME ": fault: sleep_ms = %d, then live_objects = %llu\n", st,
			(unsigned long long)ava_demo_live_objects());
		return 0;
	}
	t_version();
	t_objects();
	t_bad_handle();
	t_async();
	t_big();
	t_threads();
	t_callback();
	t_policing();
	if (ava_demo_obj_create("kept-until-exit", 4096, &t_kept) != DEMO_OK) {
		t_kept = NULL;
		CHECK(0, "obj_create of the object kept until exit failed");
	}
	if (t_passed == t_run)
		pr_info(T_NAME ": PASS %u/%u\n", t_passed, t_run);
	else
		pr_err(T_NAME ": FAIL %u/%u\n", t_passed, t_run);
	return 0;
}

static void __exit ava_demo_test_exit(void)
{
	demo_status st;

	if (!t_kept)
		return;
	st = ava_demo_obj_release(t_kept);
	pr_info(T_NAME ": exit: released the kept object (%d)\n", st);
}

module_init(ava_demo_test_init);
module_exit(ava_demo_test_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ava: calls the demo API from kernel space through ava_demo.ko");
MODULE_SOFTDEP("pre: ava_demo");
