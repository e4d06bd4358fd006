/*
 * ava spec of libdemo (specs/demo/lib/demo.h): the API that exercises every
 * part of the remoting machinery. See include/ava/spec.h for the language.
 */
#include <string.h>

#include <ava/spec.h>

#include "demo.h"

ava_name("demo");
ava_version("1.2.3");
ava_identifier(demo);
ava_number(1);
ava_soname("libdemo.so.1");
ava_libs("-ldemo");

/* Counts connections made by this guest library; shown by AVA_LOG=debug runs. */
ava_begin_utility;
static int demo_guest_connections;
static const char *demo_status_text(demo_status status)
{
	switch (status) {
	case DEMO_OK:
		return "ok";
	case DEMO_ERR_INVALID:
		return "invalid argument";
	case DEMO_ERR_RANGE:
		return "out of range";
	case DEMO_ERR_NOMEM:
		return "out of memory";
	case DEMO_ERR_UNSUPPORTED:
		return "unsupported";
	case DEMO_ERR_TRANSPORT:
		return "transport failure";
	default:
		return "unknown status";
	}
}
ava_end_utility;

ava_guestlib_init_epilogue(demo_guest_connections++);

ava_type(demo_obj) { ava_handle; }
ava_type(demo_status) {
	ava_success(DEMO_OK);
	ava_error(DEMO_ERR_TRANSPORT);
}

/* Answered in the guest: a table lookup is not worth a round trip. */
ava_begin_replacement;
const char *demo_status_string(demo_status status)
{
	return demo_status_text(status);
}
ava_end_replacement;

ava_callback_decl void demo_event_callback(demo_obj obj, int32_t event, const char *message,
					   void *user_data)
{
	ava_argument(obj) { ava_handle; }
	ava_argument(message) { ava_in; ava_buffer(strlen(message) + 1); }
	ava_argument(user_data) { ava_userdata; }
}

int32_t demo_version(void)
{
	ava_error(-1);
}

double demo_scale(double x, float factor)
{
	ava_error(0.0);
}

demo_status demo_obj_create(const char *name, uint64_t size, demo_obj *out)
{
	ava_success(DEMO_OK);
	ava_argument(name) { ava_in; ava_buffer(strlen(name) + 1); }
	ava_argument(out) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
		/* Charged against the guest's device-memory quota while the object lives. */
		ava_allocates_resource(device_memory, size);
	}
}

demo_obj demo_obj_new(uint64_t size)
{
	ava_return_value { ava_allocates; }
}

demo_status demo_obj_release(demo_obj obj)
{
	ava_success(DEMO_OK);
	ava_argument(obj) { ava_deallocates; }
}

/* Bulk data: on a channel with a shared heap it goes through the heap. */
demo_status demo_obj_write(demo_obj obj, uint64_t offset, const void *data, uint64_t size)
{
	ava_argument(data) {
		ava_in;
		ava_buffer(size);
		ava_zerocopy_buffer;
	}
}

demo_status demo_obj_read(demo_obj obj, uint64_t offset, void *data, uint64_t size)
{
	ava_argument(data) {
		ava_out;
		ava_buffer(size);
		ava_zerocopy_buffer;
	}
}

demo_status demo_obj_xor(demo_obj obj, uint8_t *data, uint64_t size)
{
	ava_argument(data) { ava_in; ava_out; ava_buffer(size); }
}

/* The direction of data depends on flags: a conditional annotation. */
demo_status demo_obj_transfer(demo_obj obj, uint32_t flags, void *data, uint64_t size)
{
	ava_argument(data) {
		if (flags & DEMO_TO_OBJECT) {
			ava_in;
		} else {
			ava_out;
		}
		ava_buffer(size);
	}
}

demo_status demo_obj_get_name(demo_obj obj, char *name, uint64_t capacity, uint64_t *length_ret)
{
	ava_argument(name) { ava_out; ava_buffer(capacity); }
	ava_argument(length_ret) { ava_out; ava_buffer(1); }
}

demo_status demo_obj_info(demo_obj obj, int32_t key, void *value, uint64_t value_size)
{
	ava_argument(value) { ava_out; ava_buffer(value_size); }
}

/* libdemo keeps the label pointer: the worker's copy must live as long as obj. */
demo_status demo_obj_set_label(demo_obj obj, const char *label)
{
	ava_argument(label) {
		ava_in;
		ava_buffer(strlen(label) + 1);
		ava_lifetime_coupled(obj);
	}
}

demo_status demo_obj_get_label(demo_obj obj, char *label, uint64_t capacity)
{
	ava_argument(label) { ava_out; ava_buffer(capacity); }
}

/* Sent without waiting: a failure is reported by the next sync call of the thread. */
demo_status demo_obj_fill(demo_obj obj, uint8_t value)
{
	ava_async;
	ava_success(DEMO_OK);
}

/* libdemo's clear is fill(0); the worker runs this body instead of the real call. */
demo_status demo_obj_clear(demo_obj obj)
{
	ava_disable_native_call;
	return demo_obj_fill(obj, 0);
}

demo_status demo_sum_sizes(const demo_obj *objs, uint32_t count, uint64_t *total)
{
	ava_argument(objs) {
		ava_in;
		ava_buffer(count);
		ava_element { ava_handle; }
	}
	ava_argument(total) { ava_out; ava_buffer(1); }
}

demo_status demo_list_objects(demo_obj *objs, uint32_t capacity, uint32_t *count_ret)
{
	ava_argument(objs) {
		ava_out;
		ava_buffer(capacity);
		ava_element { ava_handle; }
	}
	ava_argument(count_ret) { ava_out; ava_buffer(1); }
}

demo_status demo_obj_set_callback(demo_obj obj, demo_event_fn fn, void *user_data)
{
	ava_argument(fn) {
		ava_callback(demo_event_callback);
		ava_lifetime_coupled(obj);
	}
	ava_argument(user_data) { ava_userdata; }
}

demo_status demo_obj_fire(demo_obj obj, int32_t event)
{
}

demo_status demo_thread_set_tag(int32_t tag)
{
}

int32_t demo_thread_get_tag(void)
{
	ava_error(-1);
}

/* A worker-side prologue: refuse absurd sleeps before they reach the library. */
demo_status demo_sleep_ms(uint32_t ms)
{
	if (ava_is_worker && ms > 600000u)
		return DEMO_ERR_RANGE;
	return ava_execute();
}

void demo_crash(void)
{
}

uint64_t demo_live_objects(void)
{
	ava_error(0);
}
