/* SPDX-License-Identifier: MIT */
/*
 * Test hooks into the wtest library (wtest_lib.c): process-wide counters and
 * controls that the worker tests observe the library with. Not part of the
 * API that cava remotes (wtest.h), so a header of its own.
 */
#ifndef AVA_WTEST_HOOKS_H
#define AVA_WTEST_HOOKS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds of library objects, for wt_lib_released. */
#define WT_KIND_OBJ 1u
#define WT_KIND_OTHER 2u

uint64_t wt_lib_live_objects(void);
/* Objects of kind freed by a successful release, by the guest or at its teardown. */
uint64_t wt_lib_released(uint32_t kind);
/* Releases of a non-NULL pointer that was no live object (a double free). */
uint64_t wt_lib_bad_releases(void);
/* Runs of the spec's ava_worker_init_epilogue. */
uint64_t wt_lib_init_count(void);
void wt_lib_worker_init(void);
/* wt_async_set calls executed, in total. */
uint64_t wt_lib_async_calls(void);
/* wt_block: waits (bounded) until a call entered it, then lets it return. */
int wt_lib_wait_blocked(int timeout_ms);
void wt_lib_unblock(void);
/* Fires the wt_set_global_callback callback as a library thread would: 0
 * once it returned, 1 if none is set. */
int wt_lib_fire_global(int32_t event);
/* The next wt_set_global_callback (or _once) registers nothing and returns status. */
void wt_lib_refuse_global(int32_t status);
/* The user data registered with that callback (the worker's context for it). */
void *wt_lib_global_user(void);
/* The value buffer the last wt_get_info wrote to (where the worker put it). */
const void *wt_lib_info_buffer(void);

#ifdef __cplusplus
}
#endif

#endif /* AVA_WTEST_HOOKS_H */
