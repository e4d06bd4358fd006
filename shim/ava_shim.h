/* SPDX-License-Identifier: MIT */
/*
 * The guest-library runtime as seen by cava-generated guest stubs (C).
 *
 * A stub marshals one call like this:
 *
 *   struct ava_call c;
 *   if (ava_call_begin(&c, &spec, FN_ID, AVA_F_SYNC) != 0) goto fail;
 *   a.x = ...;                                    scalars, handles
 *   ava_call_put_buffer(&c, &a.buf, ptr, n, 4, AVA_BUF_IN);
 *   if (ava_call_invoke(&c, &a, sizeof a, &r, sizeof *r) != 0) goto fail;
 *   ava_call_get_buffer(&c, &r->buf, ptr, n * 4); out buffers
 *   ret = r->ret; ava_call_end(&c); return ret;
 *   fail: ava_call_end(&c); return ERROR_VALUE;
 *
 * Every function returns 0 on success and -1 on failure; after a failure the
 * call is marked failed (c.failed), later steps of the same call are no-ops
 * returning -1, and the reason has been printed to stderr once, prefixed by
 * "ava: ". Nothing here aborts the host program.
 */
#ifndef AVA_SHIM_H
#define AVA_SHIM_H

#include <stdint.h>

#include "ava/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Decodes one CALLBACK message on the guest's callback thread: generated per
 * spec. fn/userdata are what the guest registered; args/args_len the argument
 * block; payload/payload_len the payload. Returns 0, or a negative AVA_E_*
 * status when the callback was not called: AVA_E_PROTO (-1) for a malformed
 * message, AVA_E_LENGTH for a buffer that does not hold the bytes its size
 * argument says (a program would read past it).
 */
typedef int (*ava_guest_callback_fn)(uint32_t decl_id, void (*fn)(void), void *userdata,
				     const void *args, uint64_t args_len, const uint8_t *payload,
				     uint64_t payload_len);

/* What the runtime needs to know of a spec; one constant per guest library. */
struct ava_guest_spec {
	const char *name;
	uint32_t id;
	uint64_t hash;
	uint32_t nfuncs;
	const char *const *func_names;
	ava_guest_callback_fn callback_dispatch;
	void (*init_prologue)(void); /* NULL when the spec has none */
	void (*init_epilogue)(void);
	void (*fini_prologue)(void);
	void (*fini_epilogue)(void);
};

/* A call in progress; lives on the stub's stack. */
struct ava_call {
	void *impl;
	int failed;
	uint32_t func_id;
};

int ava_call_begin(struct ava_call *c, const struct ava_guest_spec *spec, uint32_t func_id,
		   uint32_t flags);

/*
 * Or'ed into ava_call_begin's flags by stubs of ava_device_wait functions
 * (never sent): the reply waits on device work, so the caller sleeps at once
 * instead of spinning for it, leaving the CPU to the driver's threads.
 */
#define AVA_CALL_DEVICE_WAIT 0x1000u

/*
 * Describes a buffer argument of count elements of elem_size bytes.
 * dir is AVA_BUF_IN, AVA_BUF_OUT or both. A NULL ptr is sent as absent.
 * IN bytes are referenced, not copied, until ava_call_invoke sends them.
 */
int ava_call_put_buffer(struct ava_call *c, struct ava_buf_desc *d, const void *ptr,
			uint64_t count, uint64_t elem_size, uint32_t dir);

/*
 * Or'ed into dir by stubs for ava_zerocopy_buffer arguments: on a channel
 * with a shared heap, the buffer goes through the heap whatever its size.
 */
#define AVA_CALL_ZEROCOPY 0x100u

/*
 * Registers a guest callback for this call and returns its id for the wire
 * (0 when fn is NULL). decl_id is the callback declaration fn is of: a
 * CALLBACK naming this registration with another declaration is refused, as
 * fn would be called through the wrong type. lifetime is an AVA_LIFETIME_*;
 * for AVA_LIFETIME_COUPLED the registration lives until coupled_handle is
 * deallocated (see ava_guest_handle_released).
 */
uint64_t ava_call_callback(struct ava_call *c, uint32_t decl_id, void (*fn)(void), void *userdata,
			   uint32_t lifetime, uint64_t coupled_handle);

/*
 * Sends the call. For a sync call, waits for the reply and points *reply at
 * its function part (at least reply_len bytes, validated). For an async call
 * reply may be NULL; the function returns once the call is queued.
 */
int ava_call_invoke(struct ava_call *c, const void *args, uint32_t args_len, const void **reply,
		    uint32_t reply_len);

/* Copies an OUT buffer of the reply into dst, which holds capacity bytes. */
int ava_call_get_buffer(struct ava_call *c, const struct ava_buf_desc *d, void *dst,
			uint64_t capacity);

/*
 * If the reply reported a failed async call whose function has return class
 * ret_class, stores its return value in *value, consumes it and returns 1.
 */
int ava_call_take_async_error(struct ava_call *c, uint32_t ret_class, int64_t *value);

/* Releases the reply and any per-call registrations of lifetime CALL. */
void ava_call_end(struct ava_call *c);

/*
 * The API refused the call (its return value is not the spec's success):
 * the callbacks it registered will never run, so ava_call_end ends their
 * registrations whatever their lifetime, as the worker drops its contexts.
 */
void ava_call_callbacks_unused(struct ava_call *c);

/*
 * Used by generated callback decoders: points *ptr at an IN buffer of a
 * CALLBACK payload after checking its descriptor (flags, bounds, zero guard
 * byte); an absent buffer gives NULL. Returns 0 or -1.
 */
int ava_callback_buffer(const struct ava_buf_desc *d, const uint8_t *payload, uint64_t payload_len,
			const void **ptr);

/*
 * Fills count 8-byte slots at array with fresh guest-chosen handle ids
 * (AVA_GUEST_ID_BIT), for objects an async call will create.
 */
void ava_guest_new_handle_ids(void *array, uint64_t count);

/*
 * ava_async_shape: whether a call of func_id with these shape values
 * succeeded on the spec's connection (then it may go without waiting), and
 * the record of such a success.
 */
int ava_guest_shape_known(const struct ava_guest_spec *spec, uint32_t func_id,
			  const uint64_t *values, uint32_t count);
void ava_guest_shape_learn(const struct ava_guest_spec *spec, uint32_t func_id,
			   const uint64_t *values, uint32_t count);

/*
 * Staged transfers (AVA_MSG_DATA): a destination of capacity bytes at dst
 * that the worker fills after the call that names its token has returned
 * (a non-blocking read). Returns the token, or 0 when it cannot be had (no
 * connection, no memory): the caller then must not go non-blocking. A call
 * that failed cancels its token.
 */
uint64_t ava_guest_transfer_expect(const struct ava_guest_spec *spec, void *dst,
				   uint64_t capacity);
/*
 * The same, lending the worker a block of the channel's shared heap to read
 * into where the channel has one and the transfer is large enough (*heap_offset
 * is its offset, AVA_NO_HEAP without one): the bytes then never travel in a
 * message. dst itself is lent when it lies in the heap (ava_zerocopy_alloc).
 */
#define AVA_NO_HEAP UINT64_MAX
uint64_t ava_guest_transfer_expect_lent(const struct ava_guest_spec *spec, void *dst,
					uint64_t capacity, uint64_t *heap_offset);
void ava_guest_transfer_cancel(const struct ava_guest_spec *spec, uint64_t token);
/*
 * The destination of token, whose call succeeded, is gone before the
 * transfer ended (unmapped before its map was done): its bytes go nowhere.
 */
void ava_guest_transfer_forget(const struct ava_guest_spec *spec, uint64_t token);
/*
 * For a non-blocking write: copies bytes at src into a block of the
 * channel's shared heap (*heap_offset) that the worker hands to the API as
 * the command's source, and returns the token under which the worker says
 * the command is done (its DATA END), when the block goes back. 0 (and
 * AVA_NO_HEAP) where the channel has no heap, the write is small or the heap
 * is full: the caller then sends the bytes as before.
 */
uint64_t ava_guest_transfer_lend(const struct ava_guest_spec *spec, const void *src,
				 uint64_t bytes, uint64_t *heap_offset);

/*
 * For an OpenCL buffer of bytes that lives in the channel's shared heap: the
 * worker creates it over *storage (its offset *heap_offset, 128-byte
 * aligned), so reads, writes and maps of it move each byte once, on the
 * guest's side. Returns the token under which the worker says the buffer is
 * gone (its END), when the block goes back; 0 (and AVA_NO_HEAP) where the
 * channel has no heap, the buffer is small, AVA_BUFFERS_IN_HEAP=0, or it
 * would leave less than a quarter of the heap to transfers. A call that
 * fails gives the token to ava_guest_transfer_cancel.
 */
uint64_t ava_guest_heap_buffer(const struct ava_guest_spec *spec, uint64_t bytes,
			       uint64_t *heap_offset, void **storage);

/*
 * For a mapping of bytes: a block of the channel's shared heap, which the
 * worker fills in place and reads the program's writes from at the unmap
 * (lent with ava_guest_transfer_lend, then adopted); NULL where the channel
 * has no heap, the mapping is small or would crowd out transfers (the caller
 * then uses ava_guest_host_alloc). Freed with ava_guest_zerocopy_free.
 */
void *ava_guest_map_alloc(const struct ava_guest_spec *spec, uint64_t bytes);
/*
 * block, a block of the heap from ava_guest_map_alloc whose bytes the token's
 * lend names, goes back to the heap with the worker's END for token (at
 * once when that came already). Called after the call carrying token was
 * accepted: until then the block stays its mapping's.
 */
void ava_guest_transfer_adopt(const struct ava_guest_spec *spec, uint64_t token, void *block);

/*
 * For a blocking transfer of bytes at ptr: the piece size when it should go
 * as a run of non-blocking pieces, each through its own block of the shared
 * heap, so that copying one piece overlaps the worker's API call on the one
 * before; 0 when it should go whole (no heap, small, ptr in the heap, or
 * AVA_PIPELINE_CHUNK=0). *window: pieces in flight at once.
 */
uint64_t ava_guest_pipeline_chunk(const struct ava_guest_spec *spec, const void *ptr,
				  uint64_t bytes, uint32_t *window);

/*
 * Waits (up to 100 ms) for the worker's END of a transfer token, reading the
 * channel itself when no other thread does: 1 once it came, 0 otherwise. A
 * run of pieces that waits for the piece `window` places back before lending
 * the next keeps its blocks few, and so in memory already touched (a block
 * never used before costs a page fault per page on both sides).
 */
int ava_guest_transfer_wait(const struct ava_guest_spec *spec, uint64_t token);

/*
 * For a blocking read of bytes: 1 when it should go as a staged transfer,
 * registered with ava_guest_transfer_expect_blocking and waited for with
 * ava_guest_transfer_finish: on channels without a shared heap (sockets), for
 * reads of at least 1 MiB, whose bytes then land straight in the program's
 * memory instead of a reply's buffer. 0 otherwise (AVA_STAGE_BLOCKING=0).
 */
int ava_guest_stage_blocking(const struct ava_guest_spec *spec, uint64_t bytes);
/* ava_guest_transfer_expect for a blocking call, which learns how it ended. */
uint64_t ava_guest_transfer_expect_blocking(const struct ava_guest_spec *spec, void *dst,
					    uint64_t capacity);
/*
 * ava_guest_transfer_expect_lent for a blocking call, which learns how it
 * ended: a blocking read whose wait list may fail, whose destination must
 * then stay as it was (a reply's buffer would bring the bytes the driver
 * never wrote).
 */
uint64_t ava_guest_transfer_expect_lent_blocking(const struct ava_guest_spec *spec, void *dst,
						 uint64_t capacity, uint64_t *heap_offset);
/*
 * Waits up to a second for the END of token (a blocking call's staged
 * transfer, whose call succeeded): 1 when its command completed, 0 when it
 * failed (the destination is as it was), 2 when it has not ended yet, -1
 * when the connection broke. A worker sends the END of a failed command
 * only before its next message (a driver may not call completion callbacks
 * for failed commands): after a 2 the caller makes a call about the
 * command (its event's status), whose reply brings it.
 */
int ava_guest_transfer_finish(const struct ava_guest_spec *spec, uint64_t token);

/* The guest deallocated a handle: drop callbacks coupled to it. */
void ava_guest_handle_released(const struct ava_guest_spec *spec, uint64_t handle);

/* Reports, once per function, that the spec does not support it. */
void ava_guest_unsupported(const struct ava_guest_spec *spec, const char *func_name);

/*
 * For programs: memory in the channel's shared heap, so buffers allocated here
 * reach the worker without any copy. Falls back to malloc when the channel has
 * no heap. Every guest library exports them as ava_zerocopy_alloc/free.
 */
void *ava_guest_zerocopy_alloc(const struct ava_guest_spec *spec, uint64_t size);
void ava_guest_zerocopy_free(const struct ava_guest_spec *spec, void *ptr);

/*
 * Host memory for spec code that stands in for the driver's (mapped regions):
 * 128-byte aligned, from 2 MiB up in huge pages, so that a large map does not
 * pay a page fault per 4 KiB (transport/big_block.hpp). Freed with the size
 * it was allocated with; NULL when out of memory.
 */
void *ava_guest_host_alloc(uint64_t bytes);
void ava_guest_host_free(void *ptr, uint64_t bytes);

/* Closes the channel in an orderly way (library destructor). */
void ava_guest_shutdown(const struct ava_guest_spec *spec);

/* Lifetimes of callbacks and buffers (ava_lifetime_*). */
#define AVA_LIFETIME_CALL 0u
#define AVA_LIFETIME_COUPLED 1u
#define AVA_LIFETIME_MANUAL 2u
#define AVA_LIFETIME_STATIC 3u
/* Until the callback has run once (or the guest goes). */
#define AVA_LIFETIME_ONCE 4u

#ifdef __cplusplus
}
#endif

#endif /* AVA_SHIM_H */
