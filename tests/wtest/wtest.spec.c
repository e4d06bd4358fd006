/*
 * ava spec of the wtest API (wtest.h): cava generates from it the guest
 * library and the worker plugin that the unit tests of the guest and worker
 * runtimes exercise (tests/unit/test_guest_*.cpp, test_worker_*.cpp). See
 * include/ava/spec.h for the language.
 */
#include <string.h>

#include <ava/spec.h>

#include "wtest.h"

ava_name("wtest");
ava_version("1.0");
ava_identifier(wtest);
ava_number(77);
ava_soname("libwtest.so.1");

/* A hook of the library's own (wtest_hooks.h), not API: declared here, not included. */
ava_begin_utility;
void wt_lib_worker_init(void);
ava_end_utility;

ava_worker_init_epilogue(wt_lib_worker_init());

ava_type(wt_obj) { ava_handle; }
ava_type(wt_other) { ava_handle; }
ava_type(wt_status) {
	ava_success(WT_OK);
	ava_error(WT_ERR_TRANSPORT);
}
ava_type(wt_other_status) {
	ava_success(WT_OK);
	ava_error(WT_ERR_TRANSPORT);
}

ava_callback_decl void wt_event_callback(wt_obj obj, int32_t event, const char *message, void *user)
{
	ava_argument(message) { ava_in; ava_buffer(strlen(message) + 1); }
	ava_argument(user) { ava_userdata; }
}

/* A buffer sized by another argument: the guest checks it holds size bytes. */
ava_callback_decl void wt_data_callback(wt_obj obj, const void *data, uint64_t size, void *user)
{
	ava_argument(data) { ava_in; ava_buffer(size); }
	ava_argument(user) { ava_userdata; }
}

int32_t wt_add(int32_t a, int32_t b)
{
	ava_error(WT_ERR_TRANSPORT);
}

wt_status wt_obj_create(uint64_t size, wt_obj *out)
{
	ava_argument(out) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

wt_status wt_obj_release(wt_obj obj)
{
	ava_argument(obj) { ava_deallocates; }
}

wt_status wt_obj_write(wt_obj obj, const void *data, uint64_t size)
{
	ava_argument(data) {
		ava_in;
		ava_buffer(size);
		ava_zerocopy_buffer;
	}
}

wt_status wt_obj_read(wt_obj obj, void *data, uint64_t size)
{
	ava_argument(data) {
		ava_out;
		ava_buffer(size);
		ava_zerocopy_buffer;
	}
}

wt_status wt_obj_xor(wt_obj obj, uint8_t *data, uint64_t size)
{
	ava_argument(data) { ava_in; ava_out; ava_buffer(size); }
}

wt_status wt_echo(wt_obj obj, const void *in, uint64_t in_size, void *out, uint64_t out_size)
{
	ava_argument(in) { ava_in; ava_buffer(in_size); }
	ava_argument(out) { ava_out; ava_buffer(out_size); }
}

wt_other_status wt_other_create(wt_other *out)
{
	ava_argument(out) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

wt_other_status wt_other_ping(wt_other other)
{
}

wt_other_status wt_other_release(wt_other other)
{
	ava_argument(other) { ava_deallocates; }
}

wt_status wt_sum_sizes(const wt_obj *objs, uint64_t count, uint64_t *total)
{
	ava_argument(objs) {
		ava_in;
		ava_buffer(count);
		ava_element { ava_handle; }
	}
	ava_argument(total) { ava_out; ava_buffer(1); }
}

wt_status wt_list(wt_obj *objs, uint64_t capacity, uint32_t *count)
{
	ava_argument(objs) {
		ava_out;
		ava_buffer(capacity);
		ava_element { ava_handle; }
	}
	ava_argument(count) { ava_out; ava_buffer(1); }
}

/* Sent without waiting: a failure is reported by the next sync call of the thread. */
wt_status wt_async_set(wt_obj obj, int32_t value)
{
	ava_async;
}

/* Its error depends on the object and on the sign of value. */
wt_status wt_shaped_set(wt_obj obj, int32_t value)
{
	ava_async;
	ava_async_shape(obj, value < 0);
}

wt_status wt_async_write(wt_obj obj, const void *data, uint64_t size)
{
	ava_async;
	ava_argument(data) { ava_in; ava_buffer(size); }
}

/* Async calls waiting in the guest's batch leave with this one, ahead of it. */
wt_status wt_flush(void)
{
	ava_async;
	ava_flush;
}

wt_status wt_get_value(wt_obj obj, int32_t *value)
{
	ava_argument(value) { ava_out; ava_buffer(1); }
}

wt_status wt_block(void)
{
}

wt_status wt_finish(void)
{
}

wt_status wt_set_callback(wt_obj obj, wt_event_fn fn, void *user)
{
	ava_argument(fn) {
		ava_callback(wt_event_callback);
		ava_lifetime_coupled(obj);
	}
	ava_argument(user) { ava_userdata; }
}

wt_status wt_fire(wt_obj obj, int32_t event)
{
}

/* The registration lives for this call only (ava_lifetime_call, the default). */
wt_status wt_notify(wt_obj obj, int32_t event, wt_event_fn fn, void *user)
{
	ava_argument(fn) { ava_callback(wt_event_callback); }
	ava_argument(user) { ava_userdata; }
}

wt_status wt_set_global_callback(wt_event_fn fn, void *user)
{
	ava_argument(fn) {
		ava_callback(wt_event_callback);
		ava_lifetime_static;
	}
	ava_argument(user) { ava_userdata; }
}

/* The same library-wide callback, which the library promises to call once. */
wt_status wt_set_once_callback(wt_event_fn fn, void *user)
{
	ava_argument(fn) {
		ava_callback(wt_event_callback);
		ava_lifetime_once;
	}
	ava_argument(user) { ava_userdata; }
}

/* wtest keeps the label pointer: the worker's copy must live as long as obj. */
wt_status wt_set_label(wt_obj obj, const char *label)
{
	ava_argument(label) {
		ava_in;
		ava_buffer(strlen(label) + 1);
		ava_lifetime_coupled(obj);
	}
}

wt_status wt_get_label(wt_obj obj, char *label, uint64_t capacity)
{
	ava_argument(label) { ava_out; ava_buffer(capacity); }
}

wt_status wt_set_tag(int32_t tag)
{
}

int32_t wt_get_tag(void)
{
	ava_error(WT_ERR_TRANSPORT);
}

/* Not remoted: the worker refuses it, the guest library reports it. */
wt_status wt_unsupported(int32_t x)
{
	ava_unsupported;
}

wt_status wt_notify_data(wt_obj obj, const void *data, uint64_t size, wt_data_fn fn, void *user)
{
	ava_argument(data) { ava_in; ava_buffer(size); }
	ava_argument(fn) { ava_callback(wt_data_callback); }
	ava_argument(user) { ava_userdata; }
}

/*
 * As OpenCL's info queries: the worker's epilogue turns the object the
 * library wrote into its id, for the bytes the library reports. Spec code
 * names value, so cava makes it worker-private (AVA_W_PRIVATE).
 */
wt_status wt_get_info(wt_obj obj, uint64_t size, void *value, uint64_t *size_ret)
{
	ava_argument(value) { ava_out; ava_buffer(size); }
	ava_argument(size_ret) { ava_out; ava_buffer(1); }
	uint64_t ava_written = 0;

	if (ava_is_worker && size_ret == NULL)
		size_ret = &ava_written;
	wt_status ret = ava_execute();
	if (ava_is_worker && ret == WT_OK && value != NULL) {
		uint64_t *ids = (uint64_t *)value;

		for (uint64_t i = 0; i < (*size_ret < size ? *size_ret : size) / sizeof(*ids); ++i)
			ids[i] = ava_handle_id(wt_obj, (wt_obj)(uintptr_t)ids[i]);
	}
	return ret;
}

/* A handle, NULL when refused, and a registration that lives with the library. */
wt_obj wt_obj_open_watched(uint64_t size, wt_event_fn fn, void *user)
{
	ava_argument(fn) {
		ava_callback(wt_event_callback);
		ava_lifetime_static;
	}
	ava_argument(user) { ava_userdata; }
	ava_return_value { ava_allocates; }
}
