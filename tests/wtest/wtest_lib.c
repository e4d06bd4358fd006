/* SPDX-License-Identifier: MIT */
/*
 * The wtest library. Like a real one it validates handles by registry lookup
 * and never dereferences an unknown pointer; unlike most it tells a NULL
 * handle (WT_ERR_INVALID) from a pointer that is no live object
 * (WT_ERR_NOT_LIVE), so tests see whether the worker translated a bad id to
 * NULL or passed something on, and count exactly which objects were freed.
 */
#include "tests/wtest/wtest.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/wtest/wtest_hooks.h"

struct wt_obj_s {
	struct wt_obj_s *next;
	uint32_t kind;
	uint64_t size;
	uint8_t *data;
	int32_t value;
	const char *label;
	wt_event_fn fn;
	void *user;
};

struct wt_other_s {
	struct wt_obj_s base; /* registry link; kind WT_KIND_OTHER */
};

static pthread_mutex_t lib_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lib_cond = PTHREAD_COND_INITIALIZER;
static struct wt_obj_s *live_head; /* newest first */
static uint64_t live_count;
static uint64_t released[3];
static uint64_t bad_releases;
static uint64_t init_count;
static uint64_t async_calls;
static int blocked_entered;
static int blocked_release;
static wt_event_fn global_fn;
static void *global_user;
static const void *info_buffer;
static _Thread_local int32_t thread_tag;

static void deadline_in(struct timespec *ts, int timeout_ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += timeout_ms / 1000;
	ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec += 1;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Caller holds lib_mutex. */
static int32_t lookup_locked(const void *p, uint32_t kind)
{
	if (p == NULL)
		return WT_ERR_INVALID;
	for (struct wt_obj_s *o = live_head; o != NULL; o = o->next)
		if (o == p)
			return o->kind == kind ? WT_OK : WT_ERR_NOT_LIVE;
	return WT_ERR_NOT_LIVE;
}

static int32_t lookup(const void *p, uint32_t kind)
{
	pthread_mutex_lock(&lib_mutex);
	int32_t status = lookup_locked(p, kind);
	pthread_mutex_unlock(&lib_mutex);
	return status;
}

static void link_obj(struct wt_obj_s *o, uint32_t kind)
{
	o->kind = kind;
	pthread_mutex_lock(&lib_mutex);
	o->next = live_head;
	live_head = o;
	live_count++;
	pthread_mutex_unlock(&lib_mutex);
}

static int32_t release(void *p, uint32_t kind)
{
	pthread_mutex_lock(&lib_mutex);
	int32_t status = lookup_locked(p, kind);
	if (status == WT_OK) {
		for (struct wt_obj_s **link = &live_head; *link != NULL; link = &(*link)->next) {
			if (*link == p) {
				*link = (*link)->next;
				break;
			}
		}
		live_count--;
		released[kind]++;
	} else if (status == WT_ERR_NOT_LIVE) {
		bad_releases++;
	}
	pthread_mutex_unlock(&lib_mutex);
	if (status == WT_OK) {
		struct wt_obj_s *o = p;
		free(o->data);
		free(o);
	}
	return status;
}

int32_t wt_add(int32_t a, int32_t b)
{
	return (int32_t)((uint32_t)a + (uint32_t)b);
}

wt_status wt_obj_create(uint64_t size, wt_obj *out)
{
	if (out == NULL)
		return WT_ERR_INVALID;
	if (size > (1u << 30))
		return WT_ERR_RANGE;
	struct wt_obj_s *o = calloc(1, sizeof *o);
	if (o == NULL)
		return WT_ERR_NOMEM;
	o->data = calloc(1, size > 0 ? size : 1);
	if (o->data == NULL) {
		free(o);
		return WT_ERR_NOMEM;
	}
	o->size = size;
	link_obj(o, WT_KIND_OBJ);
	*out = o;
	return WT_OK;
}

wt_status wt_obj_release(wt_obj obj)
{
	return release(obj, WT_KIND_OBJ);
}

wt_status wt_obj_write(wt_obj obj, const void *data, uint64_t size)
{
	int32_t status = lookup(obj, WT_KIND_OBJ);
	if (status != WT_OK)
		return status;
	if (data == NULL && size > 0)
		return WT_ERR_INVALID;
	if (size > obj->size)
		return WT_ERR_RANGE;
	if (size > 0)
		memcpy(obj->data, data, size);
	return WT_OK;
}

wt_status wt_obj_read(wt_obj obj, void *data, uint64_t size)
{
	int32_t status = lookup(obj, WT_KIND_OBJ);
	if (status != WT_OK)
		return status;
	if (data == NULL && size > 0)
		return WT_ERR_INVALID;
	if (size > obj->size)
		return WT_ERR_RANGE;
	if (size > 0)
		memcpy(data, obj->data, size);
	return WT_OK;
}

wt_status wt_obj_xor(wt_obj obj, uint8_t *data, uint64_t size)
{
	int32_t status = lookup(obj, WT_KIND_OBJ);
	if (status != WT_OK)
		return status;
	if (data == NULL && size > 0)
		return WT_ERR_INVALID;
	if (size > obj->size)
		return WT_ERR_RANGE;
	for (uint64_t i = 0; i < size; i++)
		data[i] ^= obj->data[i];
	return WT_OK;
}

wt_status wt_echo(wt_obj obj, const void *in, uint64_t in_size, void *out, uint64_t out_size)
{
	int32_t status = lookup(obj, WT_KIND_OBJ);
	if (status != WT_OK)
		return status;
	if ((in == NULL && in_size > 0) || (out == NULL && out_size > 0))
		return WT_ERR_INVALID;
	uint64_t n = in_size < out_size ? in_size : out_size;
	if (n > 0)
		memcpy(out, in, n);
	return WT_OK;
}

wt_other_status wt_other_create(wt_other *out)
{
	if (out == NULL)
		return WT_ERR_INVALID;
	struct wt_other_s *o = calloc(1, sizeof *o);
	if (o == NULL)
		return WT_ERR_NOMEM;
	link_obj(&o->base, WT_KIND_OTHER);
	*out = o;
	return WT_OK;
}

wt_other_status wt_other_ping(wt_other other)
{
	return lookup(other, WT_KIND_OTHER);
}

wt_other_status wt_other_release(wt_other other)
{
	return release(other, WT_KIND_OTHER);
}

wt_status wt_sum_sizes(const wt_obj *objs, uint64_t count, uint64_t *total)
{
	if ((objs == NULL && count > 0) || total == NULL)
		return WT_ERR_INVALID;
	uint64_t sum = 0;
	for (uint64_t i = 0; i < count; i++) {
		int32_t status = lookup(objs[i], WT_KIND_OBJ);
		if (status != WT_OK)
			return status;
		sum += objs[i]->size;
	}
	*total = sum;
	return WT_OK;
}

wt_status wt_list(wt_obj *objs, uint64_t capacity, uint32_t *count)
{
	if ((objs == NULL && capacity > 0) || count == NULL)
		return WT_ERR_INVALID;
	pthread_mutex_lock(&lib_mutex);
	uint32_t n = 0;
	for (struct wt_obj_s *o = live_head; o != NULL; o = o->next) {
		if (o->kind != WT_KIND_OBJ)
			continue;
		if (n < capacity)
			objs[n] = o;
		n++;
	}
	pthread_mutex_unlock(&lib_mutex);
	*count = n;
	return WT_OK;
}

wt_status wt_async_set(wt_obj obj, int32_t value)
{
	pthread_mutex_lock(&lib_mutex);
	async_calls++;
	int32_t status = lookup_locked(obj, WT_KIND_OBJ);
	if (status == WT_OK && value < 0)
		status = WT_ERR_INVALID;
	if (status == WT_OK)
		obj->value = value;
	pthread_mutex_unlock(&lib_mutex);
	return status;
}

wt_status wt_shaped_set(wt_obj obj, int32_t value)
{
	return wt_async_set(obj, value);
}

wt_status wt_async_write(wt_obj obj, const void *data, uint64_t size)
{
	return wt_obj_write(obj, data, size);
}

wt_status wt_flush(void)
{
	return WT_OK;
}

wt_status wt_get_value(wt_obj obj, int32_t *value)
{
	if (value == NULL)
		return WT_ERR_INVALID;
	pthread_mutex_lock(&lib_mutex);
	int32_t status = lookup_locked(obj, WT_KIND_OBJ);
	if (status == WT_OK)
		*value = obj->value;
	pthread_mutex_unlock(&lib_mutex);
	return status;
}

wt_status wt_block(void)
{
	struct timespec deadline;
	deadline_in(&deadline, 30000); /* a failing test must not hang forever */
	pthread_mutex_lock(&lib_mutex);
	blocked_entered = 1;
	pthread_cond_broadcast(&lib_cond);
	int rc = 0;
	while (!blocked_release && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&lib_cond, &lib_mutex, &deadline);
	blocked_entered = 0;
	blocked_release = 0;
	pthread_mutex_unlock(&lib_mutex);
	return rc == ETIMEDOUT ? WT_ERR_RANGE : WT_OK;
}

wt_status wt_finish(void)
{
	return WT_OK; /* every call runs to its end before it returns */
}

wt_status wt_set_callback(wt_obj obj, wt_event_fn fn, void *user)
{
	int32_t status = lookup(obj, WT_KIND_OBJ);
	if (status != WT_OK)
		return status;
	obj->fn = fn;
	obj->user = user;
	return WT_OK;
}

static void fire(wt_obj obj, int32_t event, wt_event_fn fn, void *user)
{
	char message[32];
	snprintf(message, sizeof message, "event %d", (int)event);
	fn(obj, event, message, user);
}

wt_status wt_fire(wt_obj obj, int32_t event)
{
	int32_t status = lookup(obj, WT_KIND_OBJ);
	if (status != WT_OK)
		return status;
	if (obj->fn != NULL)
		fire(obj, event, obj->fn, obj->user);
	return WT_OK;
}

wt_status wt_notify(wt_obj obj, int32_t event, wt_event_fn fn, void *user)
{
	int32_t status = lookup(obj, WT_KIND_OBJ);
	if (status != WT_OK)
		return status;
	if (fn == NULL)
		return WT_ERR_INVALID;
	fire(obj, event, fn, user);
	return WT_OK;
}

/* wt_lib_refuse_global: the status the next registration gets instead. */
static wt_status refuse_global = WT_OK;

void wt_lib_refuse_global(int32_t status)
{
	pthread_mutex_lock(&lib_mutex);
	refuse_global = status;
	pthread_mutex_unlock(&lib_mutex);
}

wt_status wt_set_global_callback(wt_event_fn fn, void *user)
{
	pthread_mutex_lock(&lib_mutex);
	if (refuse_global != WT_OK) {
		wt_status refused = refuse_global;

		refuse_global = WT_OK;
		pthread_mutex_unlock(&lib_mutex);
		return refused;
	}
	global_fn = fn;
	global_user = user;
	pthread_mutex_unlock(&lib_mutex);
	return WT_OK;
}

wt_obj wt_obj_open_watched(uint64_t size, wt_event_fn fn, void *user)
{
	wt_obj obj = NULL;

	if (wt_set_global_callback(fn, user) != WT_OK || wt_obj_create(size, &obj) != WT_OK)
		return NULL;
	return obj;
}

/* wt_lib_fire_global calls it: a test may make the library break its promise. */
wt_status wt_set_once_callback(wt_event_fn fn, void *user)
{
	return wt_set_global_callback(fn, user);
}

wt_status wt_set_label(wt_obj obj, const char *label)
{
	int32_t status = lookup(obj, WT_KIND_OBJ);
	if (status != WT_OK)
		return status;
	obj->label = label;
	return WT_OK;
}

wt_status wt_get_label(wt_obj obj, char *label, uint64_t capacity)
{
	int32_t status = lookup(obj, WT_KIND_OBJ);
	if (status != WT_OK)
		return status;
	if (label == NULL || capacity == 0)
		return WT_ERR_INVALID;
	const char *text = obj->label != NULL ? obj->label : "";
	size_t n = strlen(text);
	if (n >= capacity)
		n = capacity - 1;
	memcpy(label, text, n);
	label[n] = '\0';
	return WT_OK;
}

wt_status wt_set_tag(int32_t tag)
{
	thread_tag = tag;
	return WT_OK;
}

int32_t wt_get_tag(void)
{
	return thread_tag;
}

wt_status wt_unsupported(int32_t x)
{
	return x == 0 ? WT_OK : WT_ERR_INVALID;
}

wt_status wt_notify_data(wt_obj obj, const void *data, uint64_t size, wt_data_fn fn, void *user)
{
	int32_t status = lookup(obj, WT_KIND_OBJ);
	if (status != WT_OK)
		return status;
	if (fn == NULL)
		return WT_ERR_INVALID;
	fn(obj, data, size, user);
	return WT_OK;
}

wt_status wt_get_info(wt_obj obj, uint64_t size, void *value, uint64_t *size_ret)
{
	int32_t status = lookup(obj, WT_KIND_OBJ);
	if (status != WT_OK)
		return status;
	if (value != NULL && size < sizeof(obj))
		return WT_ERR_INVALID;
	pthread_mutex_lock(&lib_mutex);
	info_buffer = value;
	pthread_mutex_unlock(&lib_mutex);
	if (value != NULL)
		memcpy(value, &obj, sizeof(obj));
	if (size_ret != NULL)
		*size_ret = sizeof(obj);
	return WT_OK;
}

uint64_t wt_lib_live_objects(void)
{
	pthread_mutex_lock(&lib_mutex);
	uint64_t n = live_count;
	pthread_mutex_unlock(&lib_mutex);
	return n;
}

uint64_t wt_lib_released(uint32_t kind)
{
	pthread_mutex_lock(&lib_mutex);
	uint64_t n = kind <= WT_KIND_OTHER ? released[kind] : 0;
	pthread_mutex_unlock(&lib_mutex);
	return n;
}

uint64_t wt_lib_bad_releases(void)
{
	pthread_mutex_lock(&lib_mutex);
	uint64_t n = bad_releases;
	pthread_mutex_unlock(&lib_mutex);
	return n;
}

uint64_t wt_lib_init_count(void)
{
	pthread_mutex_lock(&lib_mutex);
	uint64_t n = init_count;
	pthread_mutex_unlock(&lib_mutex);
	return n;
}

void wt_lib_worker_init(void)
{
	pthread_mutex_lock(&lib_mutex);
	init_count++;
	pthread_mutex_unlock(&lib_mutex);
}

uint64_t wt_lib_async_calls(void)
{
	pthread_mutex_lock(&lib_mutex);
	uint64_t n = async_calls;
	pthread_mutex_unlock(&lib_mutex);
	return n;
}

int wt_lib_wait_blocked(int timeout_ms)
{
	struct timespec deadline;
	deadline_in(&deadline, timeout_ms);
	pthread_mutex_lock(&lib_mutex);
	int rc = 0;
	while (!blocked_entered && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&lib_cond, &lib_mutex, &deadline);
	int entered = blocked_entered;
	pthread_mutex_unlock(&lib_mutex);
	return entered;
}

void wt_lib_unblock(void)
{
	pthread_mutex_lock(&lib_mutex);
	blocked_release = 1;
	pthread_cond_broadcast(&lib_cond);
	pthread_mutex_unlock(&lib_mutex);
}

int wt_lib_fire_global(int32_t event)
{
	pthread_mutex_lock(&lib_mutex);
	wt_event_fn fn = global_fn;
	void *user = global_user;
	pthread_mutex_unlock(&lib_mutex);
	if (fn == NULL)
		return 1;
	fn(NULL, event, "global", user);
	return 0;
}

void *wt_lib_global_user(void)
{
	pthread_mutex_lock(&lib_mutex);
	void *user = global_user;
	pthread_mutex_unlock(&lib_mutex);
	return user;
}

const void *wt_lib_info_buffer(void)
{
	pthread_mutex_lock(&lib_mutex);
	const void *value = info_buffer;
	pthread_mutex_unlock(&lib_mutex);
	return value;
}
