/* SPDX-License-Identifier: MIT */
/*
 * libdemo: the real implementation behind demo.h. It is deliberately plain
 * C11 with one mutex around a registry of live objects, so that every call
 * taking a handle can validate it by lookup instead of trusting the pointer:
 * ava's worker must be able to pass forged or stale handles through here
 * without crashing.
 */
#define _POSIX_C_SOURCE 200809L

#include "demo.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct demo_obj_s {
	uint32_t id;
	char *name;
	uint64_t size;
	uint8_t *data;
	/* Not copied: ava must keep the guest's label alive while the object lives. */
	const char *label;
	demo_event_fn fn;
	void *user_data;
};

/* Live objects in creation order, guarded by registry_lock. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static demo_obj *registry;
static size_t registry_count;
static size_t registry_capacity;
static uint32_t next_id = 1;

static _Thread_local int32_t thread_tag;

/* Caller holds registry_lock. Compares pointer values only, never dereferences obj. */
static int registry_contains(demo_obj obj)
{
	if (obj == NULL)
		return 0;
	for (size_t i = 0; i < registry_count; i++)
		if (registry[i] == obj)
			return 1;
	return 0;
}

/* Caller holds registry_lock. */
static int registry_add(demo_obj obj)
{
	if (registry_count == registry_capacity) {
		size_t capacity = registry_capacity ? registry_capacity * 2 : 16;
		demo_obj *grown = realloc(registry, capacity * sizeof *grown);
		if (grown == NULL)
			return 0;
		registry = grown;
		registry_capacity = capacity;
	}
	registry[registry_count++] = obj;
	return 1;
}

/* Caller holds registry_lock; obj is in the registry. */
static void registry_remove(demo_obj obj)
{
	for (size_t i = 0; i < registry_count; i++) {
		if (registry[i] == obj) {
			memmove(&registry[i], &registry[i + 1],
				(registry_count - i - 1) * sizeof *registry);
			registry_count--;
			return;
		}
	}
}

/* Locks the registry and returns DEMO_OK with the lock held iff obj is live. */
static demo_status lock_valid(demo_obj obj)
{
	pthread_mutex_lock(&registry_lock);
	if (!registry_contains(obj)) {
		pthread_mutex_unlock(&registry_lock);
		return DEMO_ERR_INVALID;
	}
	return DEMO_OK;
}

static void unlock(void)
{
	pthread_mutex_unlock(&registry_lock);
}

/* offset + size <= limit without overflowing. */
static int span_fits(uint64_t offset, uint64_t size, uint64_t limit)
{
	return offset <= limit && size <= limit - offset;
}

static void free_obj(demo_obj obj)
{
	free(obj->data);
	free(obj->name);
	free(obj);
}

int32_t demo_version(void)
{
	return 10203;
}

double demo_scale(double x, float factor)
{
	return x * factor;
}

const char *demo_status_string(demo_status status)
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

demo_status demo_obj_create(const char *name, uint64_t size, demo_obj *out)
{
	if (name == NULL || out == NULL)
		return DEMO_ERR_INVALID;
	if (size > DEMO_MAX_OBJECT_SIZE)
		return DEMO_ERR_RANGE;

	demo_obj obj = calloc(1, sizeof *obj);
	if (obj == NULL)
		return DEMO_ERR_NOMEM;
	obj->name = strdup(name);
	/* calloc(0) may legitimately return NULL; one byte keeps NULL meaning failure. */
	obj->data = calloc(size ? (size_t)size : 1, 1);
	obj->size = size;
	if (obj->name == NULL || obj->data == NULL) {
		free_obj(obj);
		return DEMO_ERR_NOMEM;
	}

	pthread_mutex_lock(&registry_lock);
	if (!registry_add(obj)) {
		unlock();
		free_obj(obj);
		return DEMO_ERR_NOMEM;
	}
	obj->id = next_id++;
	unlock();
	*out = obj;
	return DEMO_OK;
}

demo_obj demo_obj_new(uint64_t size)
{
	demo_obj obj = NULL;
	if (demo_obj_create("anonymous", size, &obj) != DEMO_OK)
		return NULL;
	return obj;
}

demo_status demo_obj_release(demo_obj obj)
{
	if (lock_valid(obj) != DEMO_OK)
		return DEMO_ERR_INVALID;
	registry_remove(obj);
	unlock();
	free_obj(obj);
	return DEMO_OK;
}

demo_status demo_obj_write(demo_obj obj, uint64_t offset, const void *data, uint64_t size)
{
	if (lock_valid(obj) != DEMO_OK)
		return DEMO_ERR_INVALID;
	demo_status status = DEMO_OK;
	if (data == NULL && size > 0)
		status = DEMO_ERR_INVALID;
	else if (!span_fits(offset, size, obj->size))
		status = DEMO_ERR_RANGE;
	else if (size > 0)
		memcpy(obj->data + offset, data, (size_t)size);
	unlock();
	return status;
}

demo_status demo_obj_read(demo_obj obj, uint64_t offset, void *data, uint64_t size)
{
	if (lock_valid(obj) != DEMO_OK)
		return DEMO_ERR_INVALID;
	demo_status status = DEMO_OK;
	if (data == NULL && size > 0)
		status = DEMO_ERR_INVALID;
	else if (!span_fits(offset, size, obj->size))
		status = DEMO_ERR_RANGE;
	else if (size > 0)
		memcpy(data, obj->data + offset, (size_t)size);
	unlock();
	return status;
}

demo_status demo_obj_xor(demo_obj obj, uint8_t *data, uint64_t size)
{
	if (lock_valid(obj) != DEMO_OK)
		return DEMO_ERR_INVALID;
	demo_status status = DEMO_OK;
	if (data == NULL && size > 0)
		status = DEMO_ERR_INVALID;
	else if (size > obj->size)
		status = DEMO_ERR_RANGE;
	else
		for (uint64_t i = 0; i < size; i++)
			data[i] ^= obj->data[i];
	unlock();
	return status;
}

demo_status demo_obj_transfer(demo_obj obj, uint32_t flags, void *data, uint64_t size)
{
	if (flags & DEMO_TO_OBJECT)
		return demo_obj_write(obj, 0, data, size);
	return demo_obj_read(obj, 0, data, size);
}

demo_status demo_obj_get_name(demo_obj obj, char *name, uint64_t capacity, uint64_t *length_ret)
{
	if (lock_valid(obj) != DEMO_OK)
		return DEMO_ERR_INVALID;
	size_t length = strlen(obj->name);
	if (length_ret != NULL)
		*length_ret = length;
	if (name != NULL && capacity > 0) {
		size_t n = length < capacity - 1 ? length : (size_t)(capacity - 1);
		memcpy(name, obj->name, n);
		name[n] = '\0';
	}
	unlock();
	return DEMO_OK;
}

demo_status demo_obj_info(demo_obj obj, int32_t key, void *value, uint64_t value_size)
{
	if (lock_valid(obj) != DEMO_OK)
		return DEMO_ERR_INVALID;
	demo_status status = DEMO_OK;
	if (value == NULL) {
		status = DEMO_ERR_INVALID;
	} else if (key == DEMO_INFO_SIZE) {
		if (value_size < sizeof(uint64_t))
			status = DEMO_ERR_RANGE;
		else
			memcpy(value, &obj->size, sizeof(uint64_t));
	} else if (key == DEMO_INFO_ID) {
		if (value_size < sizeof(uint32_t))
			status = DEMO_ERR_RANGE;
		else
			memcpy(value, &obj->id, sizeof(uint32_t));
	} else if (key == DEMO_INFO_NAME) {
		size_t length = strlen(obj->name);
		if (value_size < (uint64_t)length + 1)
			status = DEMO_ERR_RANGE;
		else
			memcpy(value, obj->name, length + 1);
	} else {
		status = DEMO_ERR_INVALID;
	}
	unlock();
	return status;
}

demo_status demo_obj_set_label(demo_obj obj, const char *label)
{
	if (lock_valid(obj) != DEMO_OK)
		return DEMO_ERR_INVALID;
	obj->label = label;
	unlock();
	return DEMO_OK;
}

demo_status demo_obj_get_label(demo_obj obj, char *label, uint64_t capacity)
{
	if (lock_valid(obj) != DEMO_OK)
		return DEMO_ERR_INVALID;
	demo_status status = DEMO_OK;
	if (label == NULL && capacity > 0) {
		status = DEMO_ERR_INVALID;
	} else if (capacity > 0) {
		const char *source = obj->label ? obj->label : "";
		size_t length = strlen(source);
		size_t n = length < capacity - 1 ? length : (size_t)(capacity - 1);
		memcpy(label, source, n);
		label[n] = '\0';
	}
	unlock();
	return status;
}

demo_status demo_obj_fill(demo_obj obj, uint8_t value)
{
	if (lock_valid(obj) != DEMO_OK)
		return DEMO_ERR_INVALID;
	memset(obj->data, value, (size_t)obj->size);
	unlock();
	return DEMO_OK;
}

demo_status demo_obj_clear(demo_obj obj)
{
	return demo_obj_fill(obj, 0);
}

demo_status demo_sum_sizes(const demo_obj *objs, uint32_t count, uint64_t *total)
{
	if (total == NULL || (objs == NULL && count > 0))
		return DEMO_ERR_INVALID;
	uint64_t sum = 0;
	pthread_mutex_lock(&registry_lock);
	for (uint32_t i = 0; i < count; i++) {
		if (!registry_contains(objs[i])) {
			unlock();
			return DEMO_ERR_INVALID;
		}
		sum += objs[i]->size;
	}
	unlock();
	*total = sum;
	return DEMO_OK;
}

demo_status demo_list_objects(demo_obj *objs, uint32_t capacity, uint32_t *count_ret)
{
	if (count_ret == NULL || (objs == NULL && capacity > 0))
		return DEMO_ERR_INVALID;
	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < registry_count && i < capacity; i++)
		objs[i] = registry[i];
	*count_ret = registry_count > UINT32_MAX ? UINT32_MAX : (uint32_t)registry_count;
	unlock();
	return DEMO_OK;
}

demo_status demo_obj_set_callback(demo_obj obj, demo_event_fn fn, void *user_data)
{
	if (lock_valid(obj) != DEMO_OK)
		return DEMO_ERR_INVALID;
	obj->fn = fn;
	obj->user_data = user_data;
	unlock();
	return DEMO_OK;
}

demo_status demo_obj_fire(demo_obj obj, int32_t event)
{
	if (lock_valid(obj) != DEMO_OK)
		return DEMO_ERR_INVALID;
	demo_event_fn fn = obj->fn;
	void *user_data = obj->user_data;
	char *message = NULL;
	if (fn != NULL) {
		int n = snprintf(NULL, 0, "event %d on %s", (int)event, obj->name);
		message = n >= 0 ? malloc((size_t)n + 1) : NULL;
		if (message != NULL)
			snprintf(message, (size_t)n + 1, "event %d on %s", (int)event, obj->name);
	}
	/* The callback may call back into the library (under ava, from another thread). */
	unlock();
	if (fn == NULL)
		return DEMO_OK;
	if (message == NULL)
		return DEMO_ERR_NOMEM;
	fn(obj, event, message, user_data);
	free(message);
	return DEMO_OK;
}

demo_status demo_thread_set_tag(int32_t tag)
{
	thread_tag = tag;
	return DEMO_OK;
}

int32_t demo_thread_get_tag(void)
{
	return thread_tag;
}

/*
 * Tests learn that a sleep has begun in whichever process runs the library
 * (under ava, the worker) from a line appended to $DEMO_SLEEP_LOG, if set.
 */
static void note_sleep(uint32_t ms)
{
	const char *path = getenv("DEMO_SLEEP_LOG");
	if (path == NULL || path[0] == '\0')
		return;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	dprintf(fd, "sleep %u pid %d\n", ms, (int)getpid());
	close(fd);
}

demo_status demo_sleep_ms(uint32_t ms)
{
	if (ms > 60000)
		return DEMO_ERR_RANGE;
	note_sleep(ms);
	struct timespec left = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
	return DEMO_OK;
}

void demo_crash(void)
{
	raise(SIGSEGV);
	/* A handler or ignore disposition swallowed it; the call must still not return. */
	signal(SIGSEGV, SIG_DFL);
	raise(SIGSEGV);
	_Exit(128 + SIGSEGV);
}

uint64_t demo_live_objects(void)
{
	pthread_mutex_lock(&registry_lock);
	uint64_t count = registry_count;
	unlock();
	return count;
}

demo_status demo_reserved_call(int32_t x)
{
	/* Unsigned arithmetic wraps instead of overflowing a signed int. */
	return (demo_status)((uint32_t)x * 2u);
}
