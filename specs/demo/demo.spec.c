/*
 * ava spec of libdemo (specs/demo/lib/demo.h): the API that exercises every
 * part of the remoting machinery. See include/ava/spec.h for the language.
 */
#include <string.h>

#include <ava/spec.h>

#include "demo.h"

ava_name("demo");
ava_version("1.2.3");
ava_identifier(demo);
ava_number(1);
ava_soname("libdemo.so.1");
ava_libs("-ldemo");

/* Counts connections made by this guest library; shown by AVA_LOG=debug runs. */
ava_begin_utility;
static int demo_guest_connections;
static const char *demo_status_text(demo_status status)
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

#ifndef AVA_NO_HEAP
#define AVA_NO_HEAP (~(uint64_t)0) /* as shim/ava_shim.h, for kernel builds */
#endif

/* Worker code; declared for the guest's copy too, which never calls it. */
#ifndef __KERNEL__
struct ava_w_transfer;
struct ava_w_transfer *ava_w_transfer_begin(uint64_t token, uint64_t staging_bytes,
					    uint64_t heap_offset);
void *ava_w_transfer_staging(struct ava_w_transfer *t);
int ava_w_transfer_piece(struct ava_w_transfer *t, uint64_t dst_offset, uint64_t staging_offset,
			 uint64_t length);
void ava_w_transfer_start(struct ava_w_transfer *t, int (*poll)(void *ctx),
			  void (*release)(void *ctx), void *ctx);
void ava_w_transfer_finished(struct ava_w_transfer *t, int ok);
#endif

#if ava_is_worker
/*
 * Worker: one piece of a pipelined transfer (below), on the block of the
 * shared heap the guest lent under token. The block goes back to the guest
 * with the transfer's END once the library is done with it; for a read, the
 * END also tells the guest the bytes are there. Only lent blocks: a staging
 * of the worker's own would hold stale bytes for a write to copy.
 */
static demo_status demo_lent_piece(demo_obj obj, uint64_t offset, uint64_t size, uint64_t token,
				   uint64_t heap_offset, int write)
{
	struct ava_w_transfer *t;
	demo_status status;

	if (heap_offset == AVA_NO_HEAP)
		return DEMO_ERR_INVALID;
	t = ava_w_transfer_begin(token, size, heap_offset);
	if (t == NULL)
		return DEMO_ERR_NOMEM;
	status = write ? demo_obj_write(obj, offset, ava_w_transfer_staging(t), size)
		       : demo_obj_read(obj, offset, ava_w_transfer_staging(t), size);
	if (!write && status == DEMO_OK && size > 0)
		(void)ava_w_transfer_piece(t, 0, 0, size);
	ava_w_transfer_start(t, NULL, NULL, NULL);
	ava_w_transfer_finished(t, status == DEMO_OK);
	return status;
}
#endif

/*
 * Pipelined reads and writes. On a channel with a shared heap (shm, the
 * VM's ava.ko) a large read or write of an object from ordinary memory goes
 * as a run of pieces, each through a block of the heap lent for it (the
 * transfer engine of shim/ava_shim.h): the guest copies piece k into its
 * block while the worker's library copies piece k-1 out of its own, and a
 * read's pieces are copied out by the guest's reader while the worker reads
 * the next. The whole then costs about one copy instead of two in series.
 *
 * - The whole call's checks come first, as a call of no bytes at the end of
 *   the range (the object, the range, its overflow), so a piece fails only
 *   as the whole call would, before any byte moves; a call that fails them
 *   goes whole.
 * - Every piece but the last is sent without waiting (its block goes back
 *   to the heap with the worker's END); the last is the ordinary sync call,
 *   so the call returns once every piece is done and a read's bytes have
 *   all landed (the worker's ENDs come before its reply). A piece that fails
 *   anyway (the object released meanwhile by another thread) reports its
 *   error at that last call.
 * - At most DEMO_WINDOW pieces are in flight: before lending another block
 *   the guest waits for the END of the piece that many places back (reading
 *   the channel itself), so a transfer of any size reuses the same few
 *   blocks, in memory already touched. Unbounded, each new block cost a
 *   page fault per page on both sides until the whole heap had been used
 *   once (64 MiB writes ran at 7-9 GB/s with 15+ in between; bounded, at
 *   13-17). A piece that gets no block (the heap full of others' blocks)
 *   goes whole with the rest.
 */
#if ava_is_guest && !defined(__KERNEL__)
demo_status ava_demo_write_lent(demo_obj obj, uint64_t offset, uint64_t size, uint64_t token,
				uint64_t heap_offset);
demo_status ava_demo_read_lent(demo_obj obj, uint64_t offset, uint64_t size, uint64_t token,
			       uint64_t heap_offset);

static __thread int demo_in_pieces; /* the pieces' own calls go whole */

/*
 * Pieces of at most 512 KiB: the worker's copy of a piece then reads it
 * while it is still in the cache the guest's copy left it in. Measured on
 * shm at 64 MiB (2 vCPUs, medians, before the window below): 512 KiB pieces
 * wrote at 7.3-7.9 GB/s and read at 12.5-14.1, 8 MiB pieces (the OpenCL
 * default) at 1.4-7.4 and 8.0-11.6, whole transfers at 5.3-6.0 and 5.3-6.4.
 */
#define DEMO_PIECE_MAX (512u * 1024u)
#define DEMO_WINDOW 8 /* pieces in flight: 4 MiB (4 to 16 measured alike) */

/* 1 when the transfer went in pieces (*status its result), 0 when it goes whole. */
static int demo_pieces(demo_obj obj, uint64_t offset, uint8_t *data, uint64_t size, int write,
		       demo_status *status)
{
	uint64_t flying[DEMO_WINDOW] = {0}; /* the tokens of the pieces in flight */
	uint32_t window = 0;
	uint64_t chunk, k = 0;

	if (demo_in_pieces || data == NULL || offset > UINT64_MAX - size)
		return 0;
	chunk = ava_guest_pipeline_chunk(&ava_demo_guest_spec, data, size, &window);
	if (chunk == 0)
		return 0;
	if (chunk > DEMO_PIECE_MAX)
		chunk = DEMO_PIECE_MAX;
	demo_in_pieces = 1;
	*status = write ? demo_obj_write(obj, offset + size, NULL, 0)
			: demo_obj_read(obj, offset + size, NULL, 0);
	if (*status != DEMO_OK) {
		/*
		 * Refused, or an earlier async call's failure reported here (at the
		 * thread's next sync call, by the demo's rule): the call goes whole,
		 * as natively, and reports that failure if it succeeds itself.
		 */
		demo_status first = *status;

		*status = write ? demo_obj_write(obj, offset, data, size)
				: demo_obj_read(obj, offset, data, size);
		if (*status == DEMO_OK)
			*status = first;
		demo_in_pieces = 0;
		return 1;
	}
	for (; *status == DEMO_OK && size - k > chunk; k += chunk) {
		uint64_t *slot = &flying[(k / chunk) % DEMO_WINDOW];
		uint64_t heap = AVA_NO_HEAP;
		uint64_t token;

		if (*slot != 0)
			(void)ava_guest_transfer_wait(&ava_demo_guest_spec, *slot);
		*slot = 0;
		token =
			write ? ava_guest_transfer_lend(&ava_demo_guest_spec, data + k, chunk, &heap)
			      : ava_guest_transfer_expect_lent(&ava_demo_guest_spec, data + k,
							       chunk, &heap);

		if (token != 0 && heap == AVA_NO_HEAP) {
			ava_guest_transfer_cancel(&ava_demo_guest_spec, token);
			token = 0;
		}
		if (token == 0)
			break; /* no block: the rest goes whole */
		*status = write ? ava_demo_write_lent(obj, offset + k, chunk, token, heap)
				: ava_demo_read_lent(obj, offset + k, chunk, token, heap);
		if (*status != DEMO_OK)
			ava_guest_transfer_cancel(&ava_demo_guest_spec, token);
		else
			*slot = token;
	}
	if (*status == DEMO_OK)
		*status = write ? demo_obj_write(obj, offset + k, data + k, size - k)
				: demo_obj_read(obj, offset + k, data + k, size - k);
	demo_in_pieces = 0;
	return 1;
}
#else
#define demo_pieces(obj, offset, data, size, write, status)                                        \
	((void)(obj), (void)(offset), (void)(data), (void)(size), (void)(status), 0)
#endif
ava_end_utility;

ava_guestlib_init_epilogue(demo_guest_connections++);

ava_type(demo_obj) { ava_handle; }
ava_type(demo_status) {
	ava_success(DEMO_OK);
	ava_error(DEMO_ERR_TRANSPORT);
}

/* Answered in the guest: a table lookup is not worth a round trip. */
ava_begin_replacement;
const char *demo_status_string(demo_status status)
{
	return demo_status_text(status);
}
ava_end_replacement;

ava_callback_decl void demo_event_callback(demo_obj obj, int32_t event, const char *message,
					   void *user_data)
{
	ava_argument(obj) { ava_handle; }
	ava_argument(message) { ava_in; ava_buffer(strlen(message) + 1); }
	ava_argument(user_data) { ava_userdata; }
}

int32_t demo_version(void)
{
	ava_error(-1);
}

double demo_scale(double x, float factor)
{
	ava_error(0.0);
}

demo_status demo_obj_create(const char *name, uint64_t size, demo_obj *out)
{
	ava_success(DEMO_OK);
	ava_argument(name) { ava_in; ava_buffer(strlen(name) + 1); }
	ava_argument(out) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
		/* Charged against the guest's device-memory quota while the object lives. */
		ava_allocates_resource(device_memory, size);
	}
}

demo_obj demo_obj_new(uint64_t size)
{
	ava_return_value { ava_allocates; }
}

demo_status demo_obj_release(demo_obj obj)
{
	ava_success(DEMO_OK);
	ava_argument(obj) { ava_deallocates; }
}

/*
 * Bulk data: on a channel with a shared heap it goes through the heap, a
 * large transfer in pieces (demo_pieces, above).
 */
demo_status demo_obj_write(demo_obj obj, uint64_t offset, const void *data, uint64_t size)
{
	ava_argument(data) {
		ava_in;
		ava_buffer(size);
		ava_zerocopy_buffer;
	}
	if (ava_is_guest) {
		demo_status ava_status;

		if (demo_pieces(obj, offset, (uint8_t *)data, size, 1, &ava_status))
			return ava_status;
	}
	return ava_execute();
}

demo_status demo_obj_read(demo_obj obj, uint64_t offset, void *data, uint64_t size)
{
	ava_argument(data) {
		ava_out;
		ava_buffer(size);
		ava_zerocopy_buffer;
	}
	if (ava_is_guest) {
		demo_status ava_status;

		if (demo_pieces(obj, offset, (uint8_t *)data, size, 0, &ava_status))
			return ava_status;
	}
	return ava_execute();
}

demo_status demo_obj_xor(demo_obj obj, uint8_t *data, uint64_t size)
{
	ava_argument(data) { ava_in; ava_out; ava_buffer(size); }
}

/* The direction of data depends on flags: a conditional annotation. */
demo_status demo_obj_transfer(demo_obj obj, uint32_t flags, void *data, uint64_t size)
{
	ava_argument(data) {
		if (flags & DEMO_TO_OBJECT) {
			ava_in;
		} else {
			ava_out;
		}
		ava_buffer(size);
	}
}

demo_status demo_obj_get_name(demo_obj obj, char *name, uint64_t capacity, uint64_t *length_ret)
{
	ava_argument(name) { ava_out; ava_buffer(capacity); }
	ava_argument(length_ret) { ava_out; ava_buffer(1); }
}

demo_status demo_obj_info(demo_obj obj, int32_t key, void *value, uint64_t value_size)
{
	ava_argument(value) { ava_out; ava_buffer(value_size); }
}

/* libdemo keeps the label pointer: the worker's copy must live as long as obj. */
demo_status demo_obj_set_label(demo_obj obj, const char *label)
{
	ava_argument(label) {
		ava_in;
		ava_buffer(strlen(label) + 1);
		ava_lifetime_coupled(obj);
	}
}

demo_status demo_obj_get_label(demo_obj obj, char *label, uint64_t capacity)
{
	ava_argument(label) { ava_out; ava_buffer(capacity); }
}

/* Sent without waiting: a failure is reported by the next sync call of the thread. */
demo_status demo_obj_fill(demo_obj obj, uint8_t value)
{
	ava_async;
	ava_success(DEMO_OK);
}

/* libdemo's clear is fill(0); the worker runs this body instead of the real call. */
demo_status demo_obj_clear(demo_obj obj)
{
	ava_disable_native_call;
	return demo_obj_fill(obj, 0);
}

demo_status demo_sum_sizes(const demo_obj *objs, uint32_t count, uint64_t *total)
{
	ava_argument(objs) {
		ava_in;
		ava_buffer(count);
		ava_element { ava_handle; }
	}
	ava_argument(total) { ava_out; ava_buffer(1); }
}

demo_status demo_list_objects(demo_obj *objs, uint32_t capacity, uint32_t *count_ret)
{
	ava_argument(objs) {
		ava_out;
		ava_buffer(capacity);
		ava_element { ava_handle; }
	}
	ava_argument(count_ret) { ava_out; ava_buffer(1); }
}

demo_status demo_obj_set_callback(demo_obj obj, demo_event_fn fn, void *user_data)
{
	ava_argument(fn) {
		ava_callback(demo_event_callback);
		ava_lifetime_coupled(obj);
	}
	ava_argument(user_data) { ava_userdata; }
}

demo_status demo_obj_fire(demo_obj obj, int32_t event)
{
}

demo_status demo_thread_set_tag(int32_t tag)
{
}

int32_t demo_thread_get_tag(void)
{
	ava_error(-1);
}

/* A worker-side prologue: refuse absurd sleeps before they reach the library. */
demo_status demo_sleep_ms(uint32_t ms)
{
	if (ava_is_worker && ms > 600000u)
		return DEMO_ERR_RANGE;
	return ava_execute();
}

void demo_crash(void)
{
}

uint64_t demo_live_objects(void)
{
	ava_error(0);
}

/* The pieces of a pipelined write and read (demo_pieces, demo_lent_piece). */
demo_status ava_demo_write_lent(demo_obj obj, uint64_t offset, uint64_t size, uint64_t token,
				uint64_t heap_offset)
{
	ava_async;
	ava_flush;
	ava_disable_native_call;
	return demo_lent_piece(obj, offset, size, token, heap_offset, 1);
}

demo_status ava_demo_read_lent(demo_obj obj, uint64_t offset, uint64_t size, uint64_t token,
			       uint64_t heap_offset)
{
	ava_async;
	ava_flush;
	ava_disable_native_call;
	return demo_lent_piece(obj, offset, size, token, heap_offset, 0);
}
