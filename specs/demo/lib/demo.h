/* SPDX-License-Identifier: MIT */
/*
 * libdemo: a small, real API used to test ava's remoting machinery. Objects
 * live behind opaque handles; calls take in, out and in/out buffers of any
 * size, arrays of handles, callbacks, and report errors by status codes.
 * Programs link it as libdemo.so.1; under `ava run` they get ava's guest
 * library of the same name instead.
 */
#ifndef DEMO_H
#define DEMO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct demo_obj_s *demo_obj;
typedef int32_t demo_status;

#define DEMO_OK 0
#define DEMO_ERR_INVALID (-1)     /* bad argument or handle */
#define DEMO_ERR_RANGE (-2)       /* offset/size outside the object */
#define DEMO_ERR_NOMEM (-3)
#define DEMO_ERR_UNSUPPORTED (-4) /* the call is not available */
#define DEMO_ERR_TRANSPORT (-5)   /* the call could not reach the library */

/* demo_obj_transfer flags */
#define DEMO_TO_OBJECT 0x1u /* copy data into the object; otherwise out of it */

/* demo_obj_info keys */
#define DEMO_INFO_SIZE 1   /* uint64_t */
#define DEMO_INFO_ID 2     /* uint32_t */
#define DEMO_INFO_NAME 3   /* char[], NUL-terminated */

/* Largest object the library will create. */
#define DEMO_MAX_OBJECT_SIZE (1ull << 32)

typedef void (*demo_event_fn)(demo_obj obj, int32_t event, const char *message, void *user_data);

int32_t demo_version(void);
double demo_scale(double x, float factor);
const char *demo_status_string(demo_status status);

demo_status demo_obj_create(const char *name, uint64_t size, demo_obj *out);
demo_obj demo_obj_new(uint64_t size);
demo_status demo_obj_release(demo_obj obj);
demo_status demo_obj_write(demo_obj obj, uint64_t offset, const void *data, uint64_t size);
demo_status demo_obj_read(demo_obj obj, uint64_t offset, void *data, uint64_t size);
demo_status demo_obj_xor(demo_obj obj, uint8_t *data, uint64_t size);
demo_status demo_obj_transfer(demo_obj obj, uint32_t flags, void *data, uint64_t size);
demo_status demo_obj_get_name(demo_obj obj, char *name, uint64_t capacity, uint64_t *length_ret);
demo_status demo_obj_info(demo_obj obj, int32_t key, void *value, uint64_t value_size);
demo_status demo_obj_set_label(demo_obj obj, const char *label);
demo_status demo_obj_get_label(demo_obj obj, char *label, uint64_t capacity);
demo_status demo_obj_fill(demo_obj obj, uint8_t value);
demo_status demo_obj_clear(demo_obj obj);
demo_status demo_sum_sizes(const demo_obj *objs, uint32_t count, uint64_t *total);
demo_status demo_list_objects(demo_obj *objs, uint32_t capacity, uint32_t *count_ret);
demo_status demo_obj_set_callback(demo_obj obj, demo_event_fn fn, void *user_data);
demo_status demo_obj_fire(demo_obj obj, int32_t event);
demo_status demo_thread_set_tag(int32_t tag);
int32_t demo_thread_get_tag(void);
demo_status demo_sleep_ms(uint32_t ms);
void demo_crash(void);
uint64_t demo_live_objects(void);
demo_status demo_reserved_call(int32_t x);

#ifdef __cplusplus
}
#endif

#endif /* DEMO_H */
