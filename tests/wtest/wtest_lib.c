/* SPDX-License-Identifier: MIT */
/*
 * The fake library behind "wtest". Like a real one it validates handles by
 * registry lookup and never dereferences an unknown pointer, so tests can
 * count exactly which objects were freed and how often.
 */
#include "worker/testing/wtest_lib.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "worker/testing/wtest_spec.h"

struct wt_obj {
	struct wt_obj *next;
	uint32_t type;
	uint64_t size;
	uint8_t *data;
	int32_t value;
	const char *label;
	wt_event_fn fn;
	void *user;
};

struct wt_other {
	struct wt_obj base; /* registry link; type WT_TYPE_OTHER */
};

static pthread_mutex_t lib_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lib_cond = PTHREAD_COND_INITIALIZER;
static struct wt_obj *live_head; /* newest first */
static uint64_t live_count;
static uint64_t destroyed[3];
static uint64_t bad_destroys;
static uint64_t init_count;
static uint64_t async_calls;
static int blocked_entered;
static int blocked_release;
static wt_event_fn global_fn;
static void *global_user;
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
static int is_live(const void *p, uint32_t type)
{
	for (struct wt_obj *o = live_head; o != NULL; o = o->next)
		if (o == p)
			return o->type == type;
	return 0;
}

/* Caller holds lib_mutex. */
static int unlink_obj(void *p, uint32_t type)
{
	for (struct wt_obj **link = &live_head; *link != NULL; link = &(*link)->next) {
		if (*link == p && (*link)->type == type) {
			*link = (*link)->next;
			live_count--;
			return 1;
		}
	}
	return 0;
}

static void free_obj(struct wt_obj *o)
{
	free(o->data);
	free(o);
}

static int32_t check_obj(wt_obj *obj)
{
	pthread_mutex_lock(&lib_mutex);
	int ok = is_live(obj, WT_TYPE_OBJ);
	pthread_mutex_unlock(&lib_mutex);
	return ok ? WT_OK : WT_ERR_INVALID;
}

int32_t wt_add(int32_t a, int32_t b)
{
	return (int32_t)((uint32_t)a + (uint32_t)b);
}

int32_t wt_obj_create(uint64_t size, wt_obj **out)
{
	if (out == NULL)
		return WT_ERR_INVALID;
	if (size > (1u << 30))
		return WT_ERR_RANGE;
	struct wt_obj *o = calloc(1, sizeof *o);
	if (o == NULL)
		return WT_ERR_NOMEM;
	o->data = calloc(1, size > 0 ? size : 1);
	if (o->data == NULL) {
		free(o);
		return WT_ERR_NOMEM;
	}
	o->type = WT_TYPE_OBJ;
	o->size = size;
	pthread_mutex_lock(&lib_mutex);
	o->next = live_head;
	live_head = o;
	live_count++;
	pthread_mutex_unlock(&lib_mutex);
	*out = o;
	return WT_OK;
}

int32_t wt_obj_release(wt_obj *obj)
{
	pthread_mutex_lock(&lib_mutex);
	int found = unlink_obj(obj, WT_TYPE_OBJ);
	pthread_mutex_unlock(&lib_mutex);
	if (!found)
		return WT_ERR_INVALID;
	free_obj(obj);
	return WT_OK;
}

int32_t wt_obj_write(wt_obj *obj, const void *data, uint64_t size)
{
	if (check_obj(obj) != WT_OK || (data == NULL && size > 0))
		return WT_ERR_INVALID;
	if (size > obj->size)
		return WT_ERR_RANGE;
	if (size > 0)
		memcpy(obj->data, data, size);
	return WT_OK;
}

int32_t wt_obj_read(wt_obj *obj, void *data, uint64_t size)
{
	if (check_obj(obj) != WT_OK || (data == NULL && size > 0))
		return WT_ERR_INVALID;
	if (size > obj->size)
		return WT_ERR_RANGE;
	if (size > 0)
		memcpy(data, obj->data, size);
	return WT_OK;
}

int32_t wt_obj_xor(wt_obj *obj, uint8_t *data, uint64_t size)
{
	if (check_obj(obj) != WT_OK || (data == NULL && size > 0))
		return WT_ERR_INVALID;
	if (size > obj->size)
		return WT_ERR_RANGE;
	for (uint64_t i = 0; i < size; i++)
		data[i] ^= obj->data[i];
	return WT_OK;
}

int32_t wt_other_create(wt_other **out)
{
	struct wt_other *o = calloc(1, sizeof *o);
	if (o == NULL)
		return WT_ERR_NOMEM;
	o->base.type = WT_TYPE_OTHER;
	pthread_mutex_lock(&lib_mutex);
	o->base.next = live_head;
	live_head = &o->base;
	live_count++;
	pthread_mutex_unlock(&lib_mutex);
	*out = o;
	return WT_OK;
}

int32_t wt_other_ping(wt_other *other)
{
	pthread_mutex_lock(&lib_mutex);
	int ok = is_live(other, WT_TYPE_OTHER);
	pthread_mutex_unlock(&lib_mutex);
	return ok ? WT_OK : WT_ERR_INVALID;
}

int32_t wt_sum_sizes(wt_obj *const *objs, uint64_t count, uint64_t *total)
{
	if ((objs == NULL && count > 0) || total == NULL)
		return WT_ERR_INVALID;
	uint64_t sum = 0;
	for (uint64_t i = 0; i < count; i++) {
		if (check_obj(objs[i]) != WT_OK)
			return WT_ERR_INVALID;
		sum += objs[i]->size;
	}
	*total = sum;
	return WT_OK;
}

int32_t wt_list(wt_obj **objs, uint64_t capacity, uint32_t *count)
{
	if ((objs == NULL && capacity > 0) || count == NULL)
		return WT_ERR_INVALID;
	pthread_mutex_lock(&lib_mutex);
	uint32_t n = 0;
	for (struct wt_obj *o = live_head; o != NULL; o = o->next) {
		if (o->type != WT_TYPE_OBJ)
			continue;
		if (n < capacity)
			objs[n] = o;
		n++;
	}
	pthread_mutex_unlock(&lib_mutex);
	*count = n;
	return WT_OK;
}

int32_t wt_async_set(wt_obj *obj, int32_t value)
{
	pthread_mutex_lock(&lib_mutex);
	async_calls++;
	int ok = is_live(obj, WT_TYPE_OBJ) && value >= 0;
	if (ok)
		obj->value = value;
	pthread_mutex_unlock(&lib_mutex);
	return ok ? WT_OK : WT_ERR_INVALID;
}

int32_t wt_get_value(wt_obj *obj, int32_t *value)
{
	pthread_mutex_lock(&lib_mutex);
	int ok = is_live(obj, WT_TYPE_OBJ);
	if (ok)
		*value = obj->value;
	pthread_mutex_unlock(&lib_mutex);
	return ok ? WT_OK : WT_ERR_INVALID;
}

int32_t wt_block(void)
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

int32_t wt_set_callback(wt_obj *obj, wt_event_fn fn, void *user)
{
	if (check_obj(obj) != WT_OK)
		return WT_ERR_INVALID;
	obj->fn = fn;
	obj->user = user;
	return WT_OK;
}

int32_t wt_fire(wt_obj *obj, int32_t event)
{
	char message[32];
	if (check_obj(obj) != WT_OK)
		return WT_ERR_INVALID;
	if (obj->fn == NULL)
		return WT_OK;
	snprintf(message, sizeof message, "event %d", (int)event);
	return obj->fn(obj, event, message, obj->user);
}

int32_t wt_set_label(wt_obj *obj, const char *label)
{
	if (check_obj(obj) != WT_OK)
		return WT_ERR_INVALID;
	obj->label = label;
	return WT_OK;
}

int32_t wt_get_label(wt_obj *obj, char *label, uint64_t capacity)
{
	if (check_obj(obj) != WT_OK || label == NULL || capacity == 0)
		return WT_ERR_INVALID;
	const char *text = obj->label != NULL ? obj->label : "";
	size_t n = strlen(text);
	if (n >= capacity)
		n = capacity - 1;
	memcpy(label, text, n);
	label[n] = '\0';
	return WT_OK;
}

int32_t wt_set_tag(int32_t tag)
{
	thread_tag = tag;
	return WT_OK;
}

int32_t wt_get_tag(void)
{
	return thread_tag;
}

int32_t wt_set_global_callback(wt_event_fn fn, void *user)
{
	pthread_mutex_lock(&lib_mutex);
	global_fn = fn;
	global_user = user;
	pthread_mutex_unlock(&lib_mutex);
	return WT_OK;
}

void wt_destroy(uint32_t type, void *object)
{
	pthread_mutex_lock(&lib_mutex);
	int found = type <= WT_TYPE_OTHER && unlink_obj(object, type);
	if (found)
		destroyed[type]++;
	else
		bad_destroys++;
	pthread_mutex_unlock(&lib_mutex);
	if (found)
		free_obj(object);
}

void wt_init(void)
{
	pthread_mutex_lock(&lib_mutex);
	init_count++;
	pthread_mutex_unlock(&lib_mutex);
}

uint64_t wt_lib_live_objects(void)
{
	pthread_mutex_lock(&lib_mutex);
	uint64_t n = live_count;
	pthread_mutex_unlock(&lib_mutex);
	return n;
}

uint64_t wt_lib_destroyed(uint32_t type)
{
	pthread_mutex_lock(&lib_mutex);
	uint64_t n = type <= WT_TYPE_OTHER ? destroyed[type] : 0;
	pthread_mutex_unlock(&lib_mutex);
	return n;
}

uint64_t wt_lib_bad_destroys(void)
{
	pthread_mutex_lock(&lib_mutex);
	uint64_t n = bad_destroys;
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

int32_t wt_lib_fire_global(int32_t event)
{
	pthread_mutex_lock(&lib_mutex);
	wt_event_fn fn = global_fn;
	void *user = global_user;
	pthread_mutex_unlock(&lib_mutex);
	if (fn == NULL)
		return 1;
	return fn(NULL, event, "global", user);
}
