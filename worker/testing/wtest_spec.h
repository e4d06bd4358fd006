/* SPDX-License-Identifier: MIT */
/*
 * "wtest": a small spec written by hand the way cava would generate it, used
 * by the worker runtime's tests. It has a fake library (objects, in/out
 * buffers, handle arrays, async calls, callbacks, a call that blocks until
 * the test lets it go) and test hooks to observe it. The wire structs are
 * shared with the tests, which act as a raw guest.
 */
#ifndef AVA_WTEST_SPEC_H
#define AVA_WTEST_SPEC_H

#include <stdint.h>

#include "ava/wire.h"
#include "worker/ava_worker_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WT_SPEC_NAME "wtest"
#define WT_SPEC_ID 0x77u
#define WT_SPEC_HASH 0x1234abcd5678ef00ull

/* Handle types. */
#define WT_TYPE_OBJ 1u
#define WT_TYPE_OTHER 2u

/* Return classes (for deferred async errors). */
#define WT_CLASS_STATUS 1u

/* Library status codes. */
#define WT_OK 0
#define WT_ERR_INVALID (-1)
#define WT_ERR_RANGE (-2)
#define WT_ERR_NOMEM (-3)

/* Function ids. */
enum {
	WT_FN_ADD,
	WT_FN_OBJ_CREATE,
	WT_FN_OBJ_RELEASE,
	WT_FN_OBJ_WRITE,
	WT_FN_OBJ_READ,
	WT_FN_OBJ_XOR,
	WT_FN_OTHER_CREATE,
	WT_FN_OTHER_PING,
	WT_FN_SUM_SIZES,
	WT_FN_LIST,
	WT_FN_ASYNC_SET,
	WT_FN_GET_VALUE,
	WT_FN_BLOCK,
	WT_FN_SET_CALLBACK,
	WT_FN_FIRE,
	WT_FN_SET_LABEL,
	WT_FN_GET_LABEL,
	WT_FN_SET_TAG,
	WT_FN_GET_TAG,
	WT_FN_SET_GLOBAL_CALLBACK,
	WT_FN_UNSUPPORTED,
	WT_FN_COUNT
};

/* Callback declarations. */
#define WT_CB_EVENT 0u

/* --- wire structs --- */
struct wt_add_args {
	int32_t a;
	int32_t b;
};
struct wt_status_reply {
	int32_t ret;
	uint32_t pad;
};
struct wt_create_args {
	uint64_t size;
};
struct wt_create_reply {
	int32_t ret;
	uint32_t pad;
	uint64_t handle;
};
struct wt_handle_args { /* obj_release, other_ping, get_value */
	uint64_t handle;
};
struct wt_value_reply {
	int32_t ret;
	int32_t value;
};
struct wt_rw_args { /* obj_write (IN), obj_read (OUT), obj_xor (IN|OUT), get_label (OUT) */
	uint64_t obj;
	uint64_t size;
	struct ava_buf_desc data;
};
struct wt_buffer_reply {
	int32_t ret;
	uint32_t pad;
	struct ava_buf_desc data;
};
struct wt_sum_args {
	struct ava_buf_desc objs; /* IN array of WT_TYPE_OBJ handles */
	uint64_t count;
};
struct wt_sum_reply {
	int32_t ret;
	uint32_t pad;
	uint64_t total;
};
struct wt_list_args {
	struct ava_buf_desc objs; /* OUT array of handles */
	uint64_t capacity;
};
struct wt_list_reply {
	int32_t ret;
	uint32_t count;
	struct ava_buf_desc objs;
};
struct wt_async_set_args {
	uint64_t obj;
	int32_t value;
	uint32_t pad;
};
struct wt_set_callback_args {
	uint64_t obj;
	uint64_t callback_id;
};
struct wt_fire_args {
	uint64_t obj;
	int32_t event;
	uint32_t pad;
};
struct wt_label_args {
	uint64_t obj;
	struct ava_buf_desc label; /* IN string, kept with the object */
};
struct wt_tag_args {
	int32_t tag;
	uint32_t pad;
};
struct wt_global_callback_args {
	uint64_t callback_id;
};
/* CALLBACK argument block of WT_CB_EVENT. */
struct wt_event_cb_args {
	uint64_t obj;
	int32_t event;
	uint32_t pad;
	struct ava_buf_desc message;
};

/* The spec table, for linking it statically. */
extern const struct ava_worker_spec wt_worker_spec;

/* --- test hooks into the fake library (process-wide counters) --- */
uint64_t wt_lib_live_objects(void);
uint64_t wt_lib_destroyed(uint32_t type);
uint64_t wt_lib_bad_destroys(void); /* destroy of an object that was not live */
uint64_t wt_lib_init_count(void);
/* Number of WT_FN_ASYNC_SET calls executed, in total. */
uint64_t wt_lib_async_calls(void);
/* WT_FN_BLOCK: waits (bounded) until a call entered, then lets it return. */
int wt_lib_wait_blocked(int timeout_ms);
void wt_lib_unblock(void);
/* Fires the callback set with WT_FN_SET_GLOBAL_CALLBACK as a library thread
 * would; returns what the trampoline returned, or 1 if none is set. */
int32_t wt_lib_fire_global(int32_t event);

#ifdef __cplusplus
}
#endif

#endif /* AVA_WTEST_SPEC_H */
