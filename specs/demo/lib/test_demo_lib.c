/* SPDX-License-Identifier: MIT */
/*
 * Checks libdemo's own contract, so that a difference between a native and a
 * remoted run can be blamed on ava rather than on the library.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "demo.h"

/* Never a live object: the library must reject it without dereferencing it. */
#define FORGED ((demo_obj)(uintptr_t)0x12345678)

typedef demo_status (*HandleCall)(demo_obj obj);

static uint8_t scratch[16];
static char text[16];

static demo_status call_release(demo_obj o) { return demo_obj_release(o); }
static demo_status call_write(demo_obj o) { return demo_obj_write(o, 0, scratch, 1); }
static demo_status call_read(demo_obj o) { return demo_obj_read(o, 0, scratch, 1); }
static demo_status call_xor(demo_obj o) { return demo_obj_xor(o, scratch, 1); }
static demo_status call_transfer(demo_obj o) { return demo_obj_transfer(o, 0, scratch, 1); }
static demo_status call_get_name(demo_obj o)
{
	return demo_obj_get_name(o, text, sizeof text, NULL);
}
static demo_status call_info(demo_obj o) { return demo_obj_info(o, DEMO_INFO_SIZE, scratch, 8); }
static demo_status call_set_label(demo_obj o) { return demo_obj_set_label(o, "x"); }
static demo_status call_get_label(demo_obj o) { return demo_obj_get_label(o, text, sizeof text); }
static demo_status call_fill(demo_obj o) { return demo_obj_fill(o, 1); }
static demo_status call_clear(demo_obj o) { return demo_obj_clear(o); }
static demo_status call_set_callback(demo_obj o) { return demo_obj_set_callback(o, NULL, NULL); }
static demo_status call_fire(demo_obj o) { return demo_obj_fire(o, 1); }
static demo_status call_sum(demo_obj o)
{
	uint64_t total = 0;
	return demo_sum_sizes(&o, 1, &total);
}

static const HandleCall handle_calls[] = {
    call_release, call_write,	call_read,	call_xor,	   call_transfer,
    call_get_name, call_info,	call_set_label, call_get_label,	   call_fill,
    call_clear,	  call_set_callback, call_fire, call_sum,
};

Test(demo_lib, rejects_null_forged_and_released_handles)
{
	demo_obj released = demo_obj_new(4);
	cr_assert_not_null(released);
	cr_assert_eq(demo_obj_release(released), DEMO_OK);
	demo_obj bad[] = {NULL, FORGED, released};
	for (size_t i = 0; i < sizeof handle_calls / sizeof handle_calls[0]; i++)
		for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++)
			cr_expect_eq(handle_calls[i](bad[j]), DEMO_ERR_INVALID, "call %zu, handle %zu", i, j);
	cr_expect_eq(demo_live_objects(), 0);
}

struct RangeCase {
	uint64_t offset;
	uint64_t size;
	demo_status expected;
};

Test(demo_lib, write_and_read_ranges)
{
	static const struct RangeCase cases[] = {
	    {0, 0, DEMO_OK},	       {0, 16, DEMO_OK},	  {16, 0, DEMO_OK},
	    {15, 1, DEMO_OK},	       {15, 2, DEMO_ERR_RANGE},	  {17, 0, DEMO_ERR_RANGE},
	    {UINT64_MAX, 2, DEMO_ERR_RANGE}, {1, UINT64_MAX, DEMO_ERR_RANGE},
	};
	demo_obj obj = NULL;
	cr_assert_eq(demo_obj_create("r", 16, &obj), DEMO_OK);
	uint8_t buf[16] = {0};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint64_t size = cases[i].size;
		cr_expect_eq(demo_obj_write(obj, cases[i].offset, buf, size), cases[i].expected, "case %zu", i);
		cr_expect_eq(demo_obj_read(obj, cases[i].offset, buf, size), cases[i].expected, "case %zu", i);
	}
	cr_expect_eq(demo_obj_write(obj, 0, NULL, 1), DEMO_ERR_INVALID);
	cr_expect_eq(demo_obj_read(obj, 0, NULL, 1), DEMO_ERR_INVALID);
	cr_expect_eq(demo_obj_write(obj, 0, NULL, 0), DEMO_OK);
	cr_expect_eq(demo_obj_release(obj), DEMO_OK);
}

Test(demo_lib, create_arguments)
{
	demo_obj obj = NULL;
	cr_expect_eq(demo_obj_create(NULL, 1, &obj), DEMO_ERR_INVALID);
	cr_expect_eq(demo_obj_create("a", 1, NULL), DEMO_ERR_INVALID);
	cr_expect_eq(demo_obj_create("a", DEMO_MAX_OBJECT_SIZE + 1, &obj), DEMO_ERR_RANGE);
	cr_expect_null(demo_obj_new(DEMO_MAX_OBJECT_SIZE + 1));
	cr_expect_eq(demo_live_objects(), 0);
}

Test(demo_lib, round_trip_xor_and_transfer)
{
	demo_obj obj = demo_obj_new(8);
	cr_assert_not_null(obj);
	uint8_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	uint8_t out[8] = {0};
	cr_expect_eq(demo_obj_transfer(obj, DEMO_TO_OBJECT, in, 8), DEMO_OK);
	cr_expect_eq(demo_obj_transfer(obj, 0, out, 8), DEMO_OK);
	cr_expect_arr_eq(in, out, 8);
	cr_expect_eq(demo_obj_xor(obj, out, 8), DEMO_OK);
	for (int i = 0; i < 8; i++)
		cr_expect_eq(out[i], 0);
	cr_expect_eq(demo_obj_xor(obj, out, 9), DEMO_ERR_RANGE);
	cr_expect_eq(demo_obj_fill(obj, 0xab), DEMO_OK);
	cr_expect_eq(demo_obj_read(obj, 7, out, 1), DEMO_OK);
	cr_expect_eq(out[0], 0xab);
	cr_expect_eq(demo_obj_clear(obj), DEMO_OK);
	cr_expect_eq(demo_obj_read(obj, 7, out, 1), DEMO_OK);
	cr_expect_eq(out[0], 0);
	demo_obj_release(obj);
}

Test(demo_lib, names_info_and_labels)
{
	demo_obj obj = NULL;
	cr_assert_eq(demo_obj_create("widget", 40, &obj), DEMO_OK);
	uint64_t length = 0;
	char name[4];
	cr_expect_eq(demo_obj_get_name(obj, NULL, 0, &length), DEMO_OK);
	cr_expect_eq(length, 6);
	cr_expect_eq(demo_obj_get_name(obj, name, sizeof name, NULL), DEMO_OK);
	cr_expect_str_eq(name, "wid");

	uint64_t size = 0;
	uint32_t id = 0;
	char info_name[7];
	cr_expect_eq(demo_obj_info(obj, DEMO_INFO_SIZE, &size, sizeof size), DEMO_OK);
	cr_expect_eq(size, 40);
	cr_expect_eq(demo_obj_info(obj, DEMO_INFO_SIZE, &size, 4), DEMO_ERR_RANGE);
	cr_expect_eq(demo_obj_info(obj, DEMO_INFO_ID, &id, sizeof id), DEMO_OK);
	cr_expect_gt(id, 0);
	cr_expect_eq(demo_obj_info(obj, DEMO_INFO_NAME, info_name, sizeof info_name), DEMO_OK);
	cr_expect_str_eq(info_name, "widget");
	cr_expect_eq(demo_obj_info(obj, DEMO_INFO_NAME, info_name, 6), DEMO_ERR_RANGE);
	cr_expect_eq(demo_obj_info(obj, 99, &size, sizeof size), DEMO_ERR_INVALID);
	cr_expect_eq(demo_obj_info(obj, DEMO_INFO_SIZE, NULL, 8), DEMO_ERR_INVALID);

	char label[] = "kept by caller";
	char got[8];
	cr_expect_eq(demo_obj_get_label(obj, got, sizeof got), DEMO_OK);
	cr_expect_str_eq(got, "");
	cr_expect_eq(demo_obj_set_label(obj, label), DEMO_OK);
	cr_expect_eq(demo_obj_get_label(obj, got, sizeof got), DEMO_OK);
	cr_expect_str_eq(got, "kept by");
	label[0] = 'K';
	cr_expect_eq(demo_obj_get_label(obj, got, sizeof got), DEMO_OK);
	cr_expect_str_eq(got, "Kept by", "the label is stored by pointer, not copied");
	demo_obj_release(obj);
}

Test(demo_lib, sum_and_list_in_creation_order)
{
	demo_obj objs[3];
	for (int i = 0; i < 3; i++) {
		objs[i] = demo_obj_new((uint64_t)(i + 1) * 10);
		cr_assert_not_null(objs[i]);
	}
	uint64_t total = 0;
	cr_expect_eq(demo_sum_sizes(objs, 3, &total), DEMO_OK);
	cr_expect_eq(total, 60);
	cr_expect_eq(demo_sum_sizes(NULL, 1, &total), DEMO_ERR_INVALID);
	cr_expect_eq(demo_sum_sizes(NULL, 0, &total), DEMO_OK);

	demo_obj listed[2] = {NULL, NULL};
	uint32_t count = 0;
	cr_expect_eq(demo_list_objects(NULL, 0, &count), DEMO_OK);
	cr_expect_eq(count, 3);
	cr_expect_eq(demo_list_objects(listed, 2, &count), DEMO_OK);
	cr_expect_eq(count, 3);
	cr_expect_eq(listed[0], objs[0]);
	cr_expect_eq(listed[1], objs[1]);
	cr_expect_eq(demo_obj_release(objs[1]), DEMO_OK);
	cr_expect_eq(demo_list_objects(listed, 2, &count), DEMO_OK);
	cr_expect_eq(count, 2);
	cr_expect_eq(listed[1], objs[2]);
	demo_obj_release(objs[0]);
	demo_obj_release(objs[2]);
	cr_expect_eq(demo_live_objects(), 0);
}

struct Fired {
	demo_obj obj;
	int32_t event;
	char message[64];
	int calls;
};

static void on_event(demo_obj obj, int32_t event, const char *message, void *user_data)
{
	struct Fired *fired = user_data;
	fired->obj = obj;
	fired->event = event;
	strncpy(fired->message, message, sizeof fired->message - 1);
	fired->calls++;
}

Test(demo_lib, fire_calls_back_synchronously)
{
	demo_obj obj = NULL;
	cr_assert_eq(demo_obj_create("bell", 1, &obj), DEMO_OK);
	struct Fired fired = {0};
	cr_expect_eq(demo_obj_fire(obj, 1), DEMO_OK);
	cr_expect_eq(demo_obj_set_callback(obj, on_event, &fired), DEMO_OK);
	cr_expect_eq(demo_obj_fire(obj, 7), DEMO_OK);
	cr_expect_eq(fired.calls, 1);
	cr_expect_eq(fired.obj, obj);
	cr_expect_eq(fired.event, 7);
	cr_expect_str_eq(fired.message, "event 7 on bell");
	demo_obj_release(obj);
}

static void *tag_thread(void *arg)
{
	int32_t *tag = arg;
	demo_thread_set_tag(*tag);
	demo_sleep_ms(1);
	*tag = demo_thread_get_tag() == *tag ? 1 : 0;
	return NULL;
}

Test(demo_lib, thread_tags_scalars_and_statuses)
{
	int32_t tags[2] = {11, 22};
	pthread_t threads[2];
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&threads[i], NULL, tag_thread, &tags[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(threads[i], NULL);
	cr_expect_eq(tags[0], 1);
	cr_expect_eq(tags[1], 1);
	cr_expect_eq(demo_thread_get_tag(), 0);

	cr_expect_eq(demo_version(), 10203);
	cr_expect_float_eq(demo_scale(2.5, 4.0f), 10.0, 1e-12);
	cr_expect_eq(demo_sleep_ms(60001), DEMO_ERR_RANGE);
	cr_expect_eq(demo_reserved_call(21), 42);
	cr_expect_str_eq(demo_status_string(DEMO_ERR_TRANSPORT), "transport failure");
	cr_expect_str_eq(demo_status_string(42), "unknown status");
}
