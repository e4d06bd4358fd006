/* SPDX-License-Identifier: MIT */
/* The fake library behind the "wtest" spec (see wtest_spec.h). */
#ifndef AVA_WTEST_LIB_H
#define AVA_WTEST_LIB_H

#include <stdint.h>

typedef struct wt_obj wt_obj;
typedef struct wt_other wt_other;
typedef int32_t (*wt_event_fn)(wt_obj *obj, int32_t event, const char *message, void *user);

int32_t wt_add(int32_t a, int32_t b);
int32_t wt_obj_create(uint64_t size, wt_obj **out);
int32_t wt_obj_release(wt_obj *obj);
int32_t wt_obj_write(wt_obj *obj, const void *data, uint64_t size);
int32_t wt_obj_read(wt_obj *obj, void *data, uint64_t size);
int32_t wt_obj_xor(wt_obj *obj, uint8_t *data, uint64_t size);
int32_t wt_other_create(wt_other **out);
int32_t wt_other_ping(wt_other *other);
int32_t wt_sum_sizes(wt_obj *const *objs, uint64_t count, uint64_t *total);
int32_t wt_list(wt_obj **objs, uint64_t capacity, uint32_t *count);
int32_t wt_async_set(wt_obj *obj, int32_t value);
int32_t wt_get_value(wt_obj *obj, int32_t *value);
int32_t wt_block(void);
int32_t wt_set_callback(wt_obj *obj, wt_event_fn fn, void *user);
int32_t wt_fire(wt_obj *obj, int32_t event);
int32_t wt_set_label(wt_obj *obj, const char *label);
int32_t wt_get_label(wt_obj *obj, char *label, uint64_t capacity);
int32_t wt_set_tag(int32_t tag);
int32_t wt_get_tag(void);
int32_t wt_set_global_callback(wt_event_fn fn, void *user);
/* Frees an object the guest left behind; counts bad (double) destroys. */
void wt_destroy(uint32_t type, void *object);
void wt_init(void);

#endif /* AVA_WTEST_LIB_H */
