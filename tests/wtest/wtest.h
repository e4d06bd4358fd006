/* SPDX-License-Identifier: MIT */
/*
 * wtest: a small API that the unit tests of ava's guest and worker runtimes
 * remote through cava (wtest.spec.c). Objects behind handles of two types,
 * in, out and in/out buffers, handle arrays, async calls, callbacks with
 * three lifetimes, a call that blocks until the test lets it go, and one
 * function the spec does not remote. The real library is wtest_lib.c; its
 * test hooks are in wtest_hooks.h, apart from the API cava reads here.
 */
#ifndef AVA_WTEST_H
#define AVA_WTEST_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wt_obj_s *wt_obj;
typedef struct wt_other_s *wt_other;
/* Two status types: async errors of one never surface at calls of the other. */
typedef int32_t wt_status;
typedef int32_t wt_other_status;

#define WT_OK 0
#define WT_ERR_INVALID (-1)   /* bad argument; a NULL handle */
#define WT_ERR_RANGE (-2)     /* size beyond the object */
#define WT_ERR_NOMEM (-3)
#define WT_ERR_NOT_LIVE (-4)  /* a non-NULL handle that is no live object of its type */
#define WT_ERR_TRANSPORT (-5) /* the call could not reach the library */

typedef void (*wt_event_fn)(wt_obj obj, int32_t event, const char *message, void *user);
/* data holds size bytes (a buffer sized by another argument, as OpenCL's pfn_notify). */
typedef void (*wt_data_fn)(wt_obj obj, const void *data, uint64_t size, void *user);

int32_t wt_add(int32_t a, int32_t b);
wt_status wt_obj_create(uint64_t size, wt_obj *out);
wt_status wt_obj_release(wt_obj obj);
wt_status wt_obj_write(wt_obj obj, const void *data, uint64_t size);
wt_status wt_obj_read(wt_obj obj, void *data, uint64_t size);
wt_status wt_obj_xor(wt_obj obj, uint8_t *data, uint64_t size);
/* Copies in to out, as much as fits. */
wt_status wt_echo(wt_obj obj, const void *in, uint64_t in_size, void *out, uint64_t out_size);
wt_other_status wt_other_create(wt_other *out);
wt_other_status wt_other_ping(wt_other other);
wt_other_status wt_other_release(wt_other other);
wt_status wt_sum_sizes(const wt_obj *objs, uint64_t count, uint64_t *total);
/* Lists live objects, newest first; *count is how many there are. */
wt_status wt_list(wt_obj *objs, uint64_t capacity, uint32_t *count);
wt_status wt_async_set(wt_obj obj, int32_t value);
wt_status wt_async_write(wt_obj obj, const void *data, uint64_t size);
/* As wt_async_set, sent without waiting only once its shape (obj, value < 0) succeeded. */
wt_status wt_shaped_set(wt_obj obj, int32_t value);
/* Sends the async calls still waiting on the guest's side; nothing to do here. */
wt_status wt_flush(void);
wt_status wt_get_value(wt_obj obj, int32_t *value);
/* Blocks until the test lets it go (wtest_hooks.h), at most 30 s. */
wt_status wt_block(void);
wt_status wt_finish(void);
wt_status wt_set_callback(wt_obj obj, wt_event_fn fn, void *user);
wt_status wt_fire(wt_obj obj, int32_t event);
/* Calls fn once, before returning. */
wt_status wt_notify(wt_obj obj, int32_t event, wt_event_fn fn, void *user);
wt_status wt_set_global_callback(wt_event_fn fn, void *user);
/* As wt_set_global_callback, for a callback the library calls once. */
wt_status wt_set_once_callback(wt_event_fn fn, void *user);
/* The library keeps the label pointer. */
wt_status wt_set_label(wt_obj obj, const char *label);
wt_status wt_get_label(wt_obj obj, char *label, uint64_t capacity);
wt_status wt_set_tag(int32_t tag);
int32_t wt_get_tag(void);
wt_status wt_unsupported(int32_t x);
/* Calls fn once with data and size, before returning. */
wt_status wt_notify_data(wt_obj obj, const void *data, uint64_t size, wt_data_fn fn, void *user);
/*
 * An info query in OpenCL's style: writes obj itself (8 bytes) to value if
 * size allows and the bytes written to *size_ret.
 */
wt_status wt_get_info(wt_obj obj, uint64_t size, void *value, uint64_t *size_ret);
/*
 * As clCreateContext: a new object of size bytes, and fn becomes the
 * library-wide callback; NULL when refused (wt_lib_refuse_global) or bad.
 */
wt_obj wt_obj_open_watched(uint64_t size, wt_event_fn fn, void *user);

#ifdef __cplusplus
}
#endif

#endif /* AVA_WTEST_H */
