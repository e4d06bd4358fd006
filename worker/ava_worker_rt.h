/* SPDX-License-Identifier: MIT */
/*
 * The worker runtime as seen by cava-generated worker dispatch code (C).
 *
 * The runtime reads a CALL, checks its header against the spec (magic, ABI,
 * kind, spec id, function id, sync/async class, args_len <= total_len) and
 * runs the generated handler on the shadow thread of the calling guest
 * thread. A handler decodes in two phases:
 *
 *   1. ava_w_args, then every scalar, handle (ava_w_handle) and IN buffer
 *      (ava_w_buffer_in: a pointer into the message, bounds-checked);
 *   2. evaluates the spec's annotations with the decoded values and checks
 *      each buffer against them (ava_w_buffer_check), which also allocates
 *      OUT-only buffers; then calls the API and builds the reply.
 *
 * Functions returning int give 0 on success and a negative AVA_E_* on
 * failure; the handler then returns ava_w_fail(...) with that status.
 */
#ifndef AVA_WORKER_RT_H
#define AVA_WORKER_RT_H

#include <stdint.h>

#include "ava/cmdtab.h"
#include "ava/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ava_wcall; /* one CALL being served; owned by the runtime */

/* Generated per spec: handles one CALL of func_id. Returns 0 or AVA_E_*. */
typedef int (*ava_worker_dispatch_fn)(struct ava_wcall *w, uint32_t func_id);

/* What the runtime needs to know of a spec; exported by the worker plugin. */
struct ava_worker_spec {
	const char *name;
	uint32_t id;
	uint64_t hash;
	uint32_t nfuncs;
	const char *const *func_names;
	const uint32_t *func_flags; /* AVA_F_SYNC and/or AVA_F_ASYNC, 0 = unsupported */
	uint32_t ntypes;            /* handle types are 1..ntypes */
	const char *const *type_names; /* indexed by type id; [0] = NULL */
	ava_worker_dispatch_fn dispatch;
	/* Frees one owned object when its guest goes away; NULL if unknown. */
	void (*destroy)(uint32_t type, void *object);
	void (*init_epilogue)(void); /* ava_worker_init_epilogue, or NULL */
	/*
	 * The spec's command table (<spec>_cmds.h, include/ava/cmdtab.h): the
	 * runtime polices every CALL with it before dispatch. NULL: not checked.
	 */
	const struct ava_cmd_table *cmds;
};

/* The symbol a worker plugin exports. */
#define AVA_WORKER_SPEC_SYMBOL "ava_worker_spec_export"
typedef const struct ava_worker_spec *(*ava_worker_spec_export_fn)(void);

/* Points *args at the argument block; fails unless it is exactly size bytes. */
int ava_w_args(struct ava_wcall *w, uint32_t size, const void **args);

/*
 * Looks up handle id of the given type. id 0 yields NULL. An unknown or
 * wrongly typed id yields NULL in *object and returns AVA_E_HANDLE.
 */
int ava_w_handle(struct ava_wcall *w, uint64_t id, uint32_t type, void **object);

/*
 * Phase 1 of a buffer: for an IN buffer, points *ptr into the message after
 * checking flags, offset, length and the zero guard byte; for an absent or
 * OUT-only buffer sets *ptr = NULL.
 */
int ava_w_buffer_in(struct ava_wcall *w, const struct ava_buf_desc *d, void **ptr);

/*
 * Phase 1 of a buffer the worker keeps private (AVA_W_PRIVATE): as
 * ava_w_buffer_in, but an IN buffer in the shared heap is first copied into
 * worker memory, with a zero byte after it, so that the annotations (a
 * string's strlen) read neither past the bytes the guest sent nor what the
 * guest changes meanwhile.
 */
int ava_w_buffer_in_private(struct ava_wcall *w, const struct ava_buf_desc *d, void **ptr);

/*
 * Phase 2: checks d against count * elem_size bytes (overflow-checked) and
 * the direction dir computed from the annotations. An OUT-only buffer is
 * allocated here (zeroed, freed after the reply) and *ptr set to it.
 */
int ava_w_buffer_check(struct ava_wcall *w, const struct ava_buf_desc *d, uint64_t count,
		       uint64_t elem_size, uint32_t dir, void **ptr);

/*
 * Or'ed into dir for buffers the worker itself reads back or rewrites
 * (handle arrays, buffers the spec's code names; cava decides, see
 * include/ava/spec.h): a buffer in the guest-writable shared heap is never
 * used in place but in worker memory: a copy of an IN buffer, zeroes for an
 * OUT-only one. ava_w_buffer_out copies the finished OUT contents back to
 * the guest's heap range.
 */
#define AVA_W_PRIVATE 0x200u

/* Translates an array of n handle ids into objects in place. */
int ava_w_handles_in(struct ava_wcall *w, void *array, uint64_t n, uint32_t type);

/*
 * Returns the id for object (0 for NULL), registering it if new. With owned,
 * the worker frees it (spec destroy) if the guest goes away without doing so.
 */
uint64_t ava_w_handle_out(struct ava_wcall *w, void *object, uint32_t type, int owned);

/* Translates an array of n objects into handle ids in place. */
int ava_w_handles_out(struct ava_wcall *w, void *array, uint64_t n, uint32_t type, int owned);

/*
 * A handle a call releases (ava_deallocates), looked up as ava_w_handle but
 * taking one of the guest's references for the call: *object is NULL when
 * the guest holds none of an object it created, so that a hostile guest
 * cannot make the API drop a reference it does not own. Returns 1 when a
 * reference was taken (ava_w_handle_untake gives it back if the call fails).
 */
int ava_w_handle_take(struct ava_wcall *w, uint64_t id, uint32_t type, void **object);
void ava_w_handle_untake(struct ava_wcall *w, uint64_t id);

/*
 * The release call succeeded (its reference taken by ava_w_handle_take): the
 * id is forgotten, and what was kept for it freed, when that was the
 * guest's last one.
 */
void ava_w_handle_release(struct ava_wcall *w, uint64_t id);

/*
 * Async calls that create objects: the guest sent the ids it chose in the
 * out array (count 8-byte slots). ava_w_guest_ids checks and saves them
 * (before the array is used for the objects); after the call
 * ava_w_adopt_handles registers each non-NULL object of objects under its
 * id. An object whose id is refused is destroyed (the guest could never
 * name it) and the call reports AVA_E_HANDLE.
 */
int ava_w_guest_ids(struct ava_wcall *w, const void *array, uint64_t count, uint64_t **saved);
int ava_w_adopt_handles(struct ava_wcall *w, const uint64_t *ids, const void *objects,
			uint64_t count, uint32_t type);

/* The guest took one more reference to id (ava_retains). */
void ava_w_handle_retain(struct ava_wcall *w, uint64_t id);

/* Whether the CALL was sent async (for functions that are async only sometimes). */
int ava_w_is_async(const struct ava_wcall *w);

/*
 * For spec code (prologues, epilogues, ava_disable_native_call bodies), which
 * runs inside a handler on a shadow thread but does not see its ava_wcall:
 * the same lookups for the call being served on the calling thread. Outside
 * a call they find nothing (NULL / 0).
 */
void *ava_w_current_handle(uint64_t id, uint32_t type);
/* The id of object (registered, not owned, if new); 0 for NULL or outside a call. */
uint64_t ava_w_current_handle_id(void *object, uint32_t type);
/*
 * Whether the call being served had a handle argument of type whose id was
 * not zero but named no object of that type (it was passed to the API as NULL).
 */
int ava_w_current_bad_handle(uint32_t type);
/*
 * The references the calling guest holds to object (of type) now; 0 if it
 * holds none or the object is not in its table (or outside a call).
 */
uint32_t ava_w_current_handle_held(void *object, uint32_t type);

/*
 * Device memory of the calling guest, for spec code that runs inside a call
 * (as ava_w_current_*): a per-guest table of ranges [start, start + size)
 * that never overlap (worker/range_table.hpp). The spec adds a range when
 * the API hands memory to the guest (an allocation, a module global) and
 * removes it when the memory goes away, and checks every device pointer or
 * range the guest sends against the table before the API sees it: a guest
 * names only its own memory, never an address it made up, a range past the
 * end of its allocation or another guest's memory. kind is the spec's
 * classification of a range (removal must name it: freeing an allocation
 * never removes a module global); owner is the spec's name for what takes
 * ranges with it (a device, a context, a module). Outside a call the table
 * is empty and nothing changes.
 */
/*
 * Adds a range. 0; AVA_E_LENGTH if size is 0 or the range passes 2^64;
 * AVA_E_STATE if it overlaps a range (or outside a call); AVA_E_NOMEM.
 */
int ava_w_ranges_add(uint64_t start, uint64_t size, uint32_t kind, uint64_t owner);
/*
 * The same for memory the API has just handed out: whatever overlaps it is
 * stale (freed behind the table's back, e.g. by a context reset) and is
 * dropped first.
 */
int ava_w_ranges_replace(uint64_t start, uint64_t size, uint32_t kind, uint64_t owner);
/* 1 if [start, start + size) lies inside one range (size 0: the byte at start), else 0. */
int ava_w_ranges_check(uint64_t start, uint64_t size);
/*
 * Removes the range that begins exactly at start if it has kind, giving its
 * size and owner (either may be NULL): 1; else 0 and nothing changes.
 */
int ava_w_ranges_remove(uint64_t start, uint32_t kind, uint64_t *size, uint64_t *owner);
/* Removes every range of owner; returns how many. */
uint64_t ava_w_ranges_drop_owner(uint64_t owner);

/*
 * Ranges and the device-memory quota: a range added by a call that reserved
 * a resource (ava_allocates_resource, e.g. cudaMalloc's size) takes that
 * reservation, made exactly the range's size (AVA_E_POLICY if the growth is
 * over the quota; the range is then not added), and gives it back when it
 * goes away: dropped with its owner or by a replace, or removed, which hands
 * it to the call removing it (given back at the call's end unless the call
 * adds the range again, as a free that the API refused does).
 */

/*
 * What the host grants the calling guest, for spec code inside a call (as
 * ava_w_current_*); outside a call 0 / NULL. The quota of a resource of the
 * spec (ava_allocates_resource: "device_memory"), 0 = none, and how much of
 * it the guest holds now: a guest under a quota is shown it as its device's
 * memory, so that programs size themselves by it.
 */
uint64_t ava_w_resource_quota(const char *resource);
uint64_t ava_w_resource_used(const char *resource);
/*
 * The device as the guest may use it under its quota of resource, from the
 * driver's answer: *total (if not NULL) at most the quota, *free (if not
 * NULL) at most what the quota leaves the guest; both unchanged without a
 * quota or outside a call.
 */
void ava_w_resource_view(const char *resource, uint64_t *free, uint64_t *total);
/*
 * A setting of the host configuration for the spec's plugin, by its name
 * "<spec>.<key>" (e.g. "opencl.kernels_without_arg_info"; the keys and
 * their values are checked when the host configuration is read), or NULL
 * where the host set none.
 */
const char *ava_w_setting(const char *name);

/*
 * Departure hooks: fn(arg) runs once, when the calling guest is gone, after
 * its calls have stopped and before the objects it left are freed (so arg
 * may be one of them), unless ava_w_at_departure_cancel took it back first.
 * For what the API would otherwise keep waiting for on behalf of a guest
 * that is no more: an OpenCL user event it never set holds every command
 * behind it, their staging and, on shm, the guest's connection.
 * Inside a call only: 0, AVA_E_NOMEM (nothing is registered), or
 * AVA_E_PROTO outside a call.
 */
int ava_w_at_departure(void (*fn)(void *arg), void *arg);
/* 1 when (fn, arg) was registered and now will not run, else 0. */
int ava_w_at_departure_cancel(void (*fn)(void *arg), void *arg);

/*
 * Generated code: reserves amount of resource (an index of the spec's
 * command table) for the call, where only the worker could compute the
 * amount from the call's arguments (an image's bytes). 0, or AVA_E_POLICY
 * when it is over the guest's quota (logged and counted as refused).
 */
int ava_w_reserve(struct ava_wcall *w, uint32_t resource, uint64_t amount);

/*
 * Keeps an IN buffer alive beyond the call (ava_lifetime_static/manual/
 * coupled): returns a copy owned by the worker, freed at guest teardown or
 * when coupled_handle is released.
 */
void *ava_w_buffer_keep(struct ava_wcall *w, const void *ptr, uint64_t len, uint32_t lifetime,
			uint64_t coupled_handle);

/*
 * Appends an OUT buffer to the reply and fills the reply's descriptor; one
 * in the shared heap (or an AVA_W_PRIVATE copy of a heap range, copied back
 * here) is named where it lies instead.
 */
int ava_w_buffer_out(struct ava_wcall *w, struct ava_buf_desc *rd, const void *ptr,
		     uint64_t len);

/*
 * Context to pass to the API as the user data of a callback registered by
 * the guest (id from the wire). Freed after the call for lifetime CALL, with
 * coupled_handle for COUPLED, at teardown otherwise.
 */
void *ava_w_callback_ctx(struct ava_wcall *w, uint64_t callback_id, uint32_t lifetime,
			 uint64_t coupled_handle);

/*
 * The API refused the call: the callbacks it was given will never run, so
 * the contexts this call registered to outlive it go now, and stop counting
 * against the guest's callbacks budget.
 */
void ava_w_callbacks_unused(struct ava_wcall *w);

/* An async call failed: report it with the next sync reply of this thread. */
void ava_w_async_error(struct ava_wcall *w, uint32_t ret_class, int64_t value);

/* Sends the reply of a sync call (no-op for async ones). Returns 0 or AVA_E_*. */
int ava_w_reply(struct ava_wcall *w, const void *reply, uint32_t len);

/*
 * Ends a call that could not be made: sync calls get a reply with status;
 * async calls record ret_class/error_value as an async error. Returns status.
 */
int ava_w_fail(struct ava_wcall *w, int status, uint32_t ret_class, int64_t error_value);

/* Writes one line "ava worker: ..." about this call to the worker log. */
void ava_w_log(struct ava_wcall *w, const char *message);
/* The same about the call this thread serves now (spec code has no wcall). */
void ava_w_current_log(const char *message);

/*
 * Staged transfers: commands that the API runs after their call returned
 * (non-blocking reads and writes), on worker-owned staging memory instead
 * of the call's message, which goes away with the call.
 *
 *   t = ava_w_transfer_begin(token, bytes);   // in a call; NULL: refused
 *   rc = enqueue(..., ava_w_transfer_staging(t), ..., &event);
 *   if (rc != OK) { ava_w_transfer_abort(t); return rc; }
 *   ava_w_transfer_piece(t, dst_offset, staging_offset, length); ...
 *   ava_w_transfer_start(t, poll, release, event_ctx);
 *   register a completion callback that calls ava_w_transfer_finished(t, ok)
 *
 * token names the guest's registered destination (ava_guest_transfer_expect):
 * its pieces go to the guest in DATA messages once the command is done,
 * found by the completion callback or by poll(ctx) (1 done, 0 not yet, < 0
 * failed), which the runtime asks before every other message to this guest,
 * so no reply or callback can show the command complete before its data.
 * token 0: staging only (a write), nothing goes back. The staging stays
 * until both the runtime and the API are done with it (finished: the API
 * no longer touches it); release(ctx) runs then. A guest's staging is
 * bounded (ava_w_transfer_begin returns NULL beyond it).
 */
struct ava_w_transfer;
/*
 * heap_offset: where the guest lent a block of the channel's shared heap
 * as the staging (AVA_NO_HEAP, shim/ava_shim.h: none); its pieces must then
 * lie at the same offsets in staging and destination, and the bytes stay
 * there (DATA flagged AVA_DATA_HEAP).
 */
struct ava_w_transfer *ava_w_transfer_begin(uint64_t token, uint64_t staging_bytes,
					    uint64_t heap_offset);
/*
 * A transfer (token 0: nothing goes to the guest) whose staging holds the
 * call's IN bytes [ptr, ptr + bytes). Where they lie in the call's own
 * message buffer (a socket channel's, 1 MiB and more) that buffer is kept
 * as the staging until the transfer and the call are both done, then goes
 * back to the guest's kept buffers, charged to the staging limit meanwhile;
 * elsewhere the bytes are copied into staging from the pool (ptr NULL: no
 * copy). AVA_STAGE_IN_PLACE=0 in the worker's environment always copies.
 */
struct ava_w_transfer *ava_w_transfer_begin_in(const void *ptr, uint64_t bytes);
void *ava_w_transfer_staging(struct ava_w_transfer *t);
/*
 * The pieces come from src (bytes long) instead of the staging: memory the
 * API hands out (a mapping), which release(ctx) gives back.
 */
void ava_w_transfer_source(struct ava_w_transfer *t, void *src, uint64_t bytes);
int ava_w_transfer_piece(struct ava_w_transfer *t, uint64_t dst_offset, uint64_t staging_offset,
			 uint64_t length);
void ava_w_transfer_start(struct ava_w_transfer *t, int (*poll)(void *ctx),
			  void (*release)(void *ctx), void *ctx);
/* From any thread, once: the API is done with the staging (ok: successfully). */
void ava_w_transfer_finished(struct ava_w_transfer *t, int ok);
/*
 * A read in segments through a ring of staging slots, so that a large read
 * needs little staging (memory used before: no page faults) and its bytes go
 * out as its commands finish:
 *
 *   t = ava_w_transfer_begin(token, slots * segment_bytes, AVA_NO_HEAP);
 *   ava_w_transfer_ring(t, bytes, segment_bytes, slots, poll, advance, release, ctx);
 *   segment k (destination bytes [k * segment_bytes, ...)) is read by its own
 *   command into ava_w_transfer_slot(t, k); the command of segment k >= slots
 *   may run only after advance(ctx, k - slots) (its slot is free again);
 *   ava_w_transfer_start(t, NULL, NULL, NULL) once every command is enqueued
 *   (the ring keeps its own poll, release and ctx);
 *   each segment's completion calls ava_w_transfer_segment_done(t, k, ok).
 *
 * Segments go to the guest in order, each once it and those before it are
 * done (poll(ctx, k): 1 done, -1 failed, 0 not yet, asked off every lock); a
 * failed one ends the transfer FAILED. advance(ctx, k) runs once for every
 * segment, also for those never sent (failure, abort, a guest gone), so no
 * command waits for good; release(ctx) runs when the transfer is gone.
 * ava_w_transfer_abort ends one whose commands could not all be enqueued
 * (none may then run).
 */
int ava_w_transfer_ring(struct ava_w_transfer *t, uint64_t bytes, uint64_t segment_bytes,
			uint32_t slots, int (*poll)(void *ctx, uint32_t k),
			void (*advance)(void *ctx, uint32_t k), void (*release)(void *ctx),
			void *ctx);
void *ava_w_transfer_slot(struct ava_w_transfer *t, uint32_t k);
/* Once per segment, from any thread; the last one lets go of the API's reference. */
void ava_w_transfer_segment_done(struct ava_w_transfer *t, uint32_t k, int ok);
/* The command was not started: the staging goes, nothing is sent. */
void ava_w_transfer_abort(struct ava_w_transfer *t);

/*
 * Whether [p, p + bytes) lies in the shared heap of the guest whose call this
 * thread serves (API objects a guest keeps there, such as OpenCL buffers it
 * created over heap memory, are found by the pointer the API reports).
 */
int ava_w_heap_holds(const void *p, uint64_t bytes);

/* --- worker-to-guest callbacks, used by generated trampolines --- */

struct ava_wcb {
	void *impl;
};

/* Starts a callback message for the context ava_w_callback_ctx returned. */
int ava_wcb_begin(struct ava_wcb *cb, void *ctx, uint32_t decl_id);
uint64_t ava_wcb_handle(struct ava_wcb *cb, void *object, uint32_t type);
int ava_wcb_put_buffer(struct ava_wcb *cb, struct ava_buf_desc *d, const void *ptr,
		       uint64_t count, uint64_t elem_size);
/*
 * Sends it; with wait, blocks (bounded by the callback timeout) until the
 * guest's callback returned. Always releases cb.
 */
int ava_wcb_invoke(struct ava_wcb *cb, const void *args, uint32_t args_len, int wait);

#ifdef __cplusplus
}
#endif

#endif /* AVA_WORKER_RT_H */
