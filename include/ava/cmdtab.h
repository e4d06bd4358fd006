/* SPDX-License-Identifier: MIT */
/*
 * Command tables: what a spec says about each of its CALLs, in a form that
 * the kernel module (ava.ko) and the host (manager, worker) can police
 * traffic with before any generated code sees it. cava generates one table
 * per spec, <spec>_cmds.h, from the same annotations as the wire header:
 *
 *   #include "demo_cmds.h"
 *   struct ava_cmd_verdict v;
 *   if (ava_cmd_police(&ava_demo_cmd_table, hdr->func_id, hdr->flags, args,
 *                      hdr->args_len, frame_or_NULL, &v))
 *       refuse with v.status (v.why, v.buf, v.got and v.limit say why)
 *
 * ava_cmd_police() is the one checker: ava.ko runs it on kernel callers'
 * calls and on policed slots' messages (include/ava/ivshmem.h), the worker
 * on every CALL it receives.
 *
 * Shared by kernel and user space (C and C++): fixed-width types, no enums,
 * no implicit padding (asserted). The tables are static constant data; the
 * pointers in them point into the same generated header.
 */
#ifndef AVA_CMDTAB_H
#define AVA_CMDTAB_H

#include "ava/wire.h"

/* struct ava_cmd_desc.flags */
#define AVA_CMD_SUPPORTED 0x01u  /* the spec supports the call (else never sent) */
#define AVA_CMD_SYNC 0x02u       /* always sync: the sender waits for a REPLY */
#define AVA_CMD_ASYNC 0x04u      /* always async: no REPLY */
#define AVA_CMD_COND_ASYNC 0x08u /* async when a spec condition holds: either header flag */
#define AVA_CMD_FLUSH 0x10u      /* ava_flush: delivers batched async calls first */
#define AVA_CMD_CALLBACK 0x20u   /* registers a callback (CALLBACK messages may follow) */
#define AVA_CMD_ALLOCATES 0x40u  /* creates handles (return value or out elements) */
#define AVA_CMD_DEALLOCATES 0x80u /* releases a handle */
#define AVA_CMD_KERNEL 0x100u    /* also callable from kernel modules (<spec>_kern.h) */

/* struct ava_cmd_buf.flags */
#define AVA_CMD_BUF_IN 0x1u       /* may travel with the CALL */
#define AVA_CMD_BUF_OUT 0x2u      /* may travel back with the REPLY */
#define AVA_CMD_BUF_DIR_COND 0x4u /* direction chosen at run time by a spec condition */
#define AVA_CMD_BUF_HANDLES 0x8u  /* elements are 8-byte handle ids */
#define AVA_CMD_BUF_ZEROCOPY 0x10u /* ava_zerocopy_buffer: prefers the channel heap */
#define AVA_CMD_BUF_BOUNDED 0x20u /* max_len is a static bound given by the spec */

/* No offset: an IN-only buffer has no descriptor in the reply. */
#define AVA_CMD_NO_OFFSET 0xffffffffu

/* A buffer argument of a call. */
struct ava_cmd_buf {
	ava_u32 args_offset;  /* of its struct ava_buf_desc in the CALL argument block */
	ava_u32 reply_offset; /* in the REPLY's function part, or AVA_CMD_NO_OFFSET */
	ava_u32 flags;        /* AVA_CMD_BUF_* */
	ava_u32 elem_size;    /* bytes per element (1 for untyped memory) */
	ava_u64 max_len;      /* bytes, when AVA_CMD_BUF_BOUNDED; else 0 (bounded by the message) */
};
AVA_STATIC_ASSERT(sizeof(struct ava_cmd_buf) == 24, "ava_cmd_buf size");

/* struct ava_cmd_res.kind */
#define AVA_CMD_RES_ALLOCATES 1u   /* ava_allocates_resource */
#define AVA_CMD_RES_DEALLOCATES 2u /* ava_deallocates_resource */
#define AVA_CMD_RES_CONSUMES 3u    /* ava_consumes_resource */

/* struct ava_cmd_res.flags: where the amount comes from. */
#define AVA_CMD_RES_CONST 0x1u   /* amount is the constant below */
#define AVA_CMD_RES_ARG 0x2u     /* the scalar argument at arg_offset (times amount, 1) */
#define AVA_CMD_RES_DYNAMIC 0x4u /* a spec expression: only the worker can evaluate it */

/* A resource annotation of a call. */
struct ava_cmd_res {
	ava_u32 resource; /* index into struct ava_cmd_table.resource_names */
	ava_u32 kind;     /* AVA_CMD_RES_* kind */
	ava_u32 flags;    /* AVA_CMD_RES_CONST / _ARG / _DYNAMIC */
	ava_u32 arg_offset; /* AVA_CMD_RES_ARG: offset of the argument in the CALL block */
	ava_u64 amount;
};
AVA_STATIC_ASSERT(sizeof(struct ava_cmd_res) == 24, "ava_cmd_res size");

/* One function of a spec; the index in the table is the function id. */
struct ava_cmd_desc {
	const char *name;  /* NULL for id 0, which is never used */
	ava_u32 id;
	ava_u32 flags;     /* AVA_CMD_* */
	ava_u32 args_len;  /* exact length of the CALL argument block */
	ava_u32 reply_len; /* REPLY function part after struct ava_reply_common; 0 if never sync */
	ava_u32 ret_class; /* cava return class (async errors), 0 = none */
	ava_u16 buf_first; /* index into struct ava_cmd_table.bufs */
	ava_u16 buf_count;
	ava_u16 res_first; /* index into struct ava_cmd_table.res */
	ava_u16 res_count;
	ava_u32 reserved;
};
AVA_STATIC_ASSERT(sizeof(struct ava_cmd_desc) == 40, "ava_cmd_desc size");

/* The table of a spec. */
struct ava_cmd_table {
	const char *spec_name;
	ava_u64 spec_hash;
	ava_u32 spec_id;
	ava_u32 nfuncs; /* entries in funcs, including id 0 */
	const struct ava_cmd_desc *funcs;
	const struct ava_cmd_buf *bufs;
	const struct ava_cmd_res *res;
	const char *const *resource_names;
	ava_u32 nbufs;
	ava_u32 nres;
	ava_u32 nresource_names;
	ava_u32 reserved;
};

/* The entry of func_id, or NULL when the id is outside the table. */
static inline const struct ava_cmd_desc *ava_cmd_lookup(const struct ava_cmd_table *t,
							ava_u32 func_id)
{
	if (func_id == 0 || func_id >= t->nfuncs)
		return (const struct ava_cmd_desc *)0;
	return &t->funcs[func_id];
}

/* struct ava_cmd_verdict.why: what ava_cmd_police() found wrong */
#define AVA_CMD_WHY_NONE 0u
#define AVA_CMD_WHY_FUNC 1u      /* no such supported function */
#define AVA_CMD_WHY_ARGS_LEN 2u  /* got: the argument block's length, limit: the spec's */
#define AVA_CMD_WHY_CLASS 3u     /* sent sync/async where the spec does not allow it */
#define AVA_CMD_WHY_TABLE 4u     /* the table contradicts itself */
#define AVA_CMD_WHY_BUF_IN 5u    /* buffer sent as input, which the spec does not allow */
#define AVA_CMD_WHY_BUF_OUT 6u   /* buffer asked as output, which the spec does not allow */
#define AVA_CMD_WHY_BUF_BOUND 7u /* got: the buffer's length, limit: the spec's bound */
#define AVA_CMD_WHY_BUF_FLAGS 8u /* unknown descriptor flags or non-zero reserved */
#define AVA_CMD_WHY_BUF_RANGE 9u /* got: offset + length, limit: the payload (or heap) */

/* Why a call was refused; buf is the index of the buffer among the call's. */
struct ava_cmd_verdict {
	ava_s32 status; /* AVA_OK or the AVA_E_* the host answers */
	ava_u32 why;    /* AVA_CMD_WHY_* */
	ava_u32 buf;
	ava_u32 pad;
	ava_u64 got;
	ava_u64 limit;
};

/*
 * Where a call's buffers may point, for callers that check that too (ava.ko
 * for processes' slots); the worker's decoder checks it itself.
 */
struct ava_cmd_frame {
	ava_u64 payload_len; /* bytes after the argument block */
	ava_u64 heap_size;   /* 0: the channel has no heap, AVA_BUF_HEAP is refused */
};

static inline int ava_cmd_refuse(struct ava_cmd_verdict *v, int status, ava_u32 why, ava_u32 buf,
				 ava_u64 got, ava_u64 limit)
{
	v->status = status;
	v->why = why;
	v->buf = buf;
	v->got = got;
	v->limit = limit;
	return status;
}

/*
 * Checks a CALL against the spec's table: a supported function, its exact
 * argument block, a class it allows, and for each present buffer its
 * direction and static bound (and, given a frame, its flags and where it
 * lies). args is the caller's private copy of the argument block. The one
 * checker for ava.ko (kernel callers and processes' slots) and the worker.
 * Returns 0 or the AVA_E_* status; *v says why.
 */
static inline int ava_cmd_police(const struct ava_cmd_table *t, ava_u32 func_id, ava_u32 flags,
				 const ava_u8 *args, ava_u32 args_len,
				 const struct ava_cmd_frame *frame, struct ava_cmd_verdict *v)
{
	const struct ava_cmd_desc *d = ava_cmd_lookup(t, func_id);
	int sync = (flags & AVA_F_SYNC) != 0;
	ava_u32 allowed = sync ? AVA_CMD_SYNC | AVA_CMD_COND_ASYNC
			       : AVA_CMD_ASYNC | AVA_CMD_COND_ASYNC;
	ava_u32 i;

	ava_cmd_refuse(v, 0, AVA_CMD_WHY_NONE, 0, 0, 0);
	if (!d || !(d->flags & AVA_CMD_SUPPORTED))
		return ava_cmd_refuse(v, AVA_E_FUNC, AVA_CMD_WHY_FUNC, 0, func_id, t->nfuncs);
	if (args_len != d->args_len)
		return ava_cmd_refuse(v, AVA_E_LENGTH, AVA_CMD_WHY_ARGS_LEN, 0, args_len,
				      d->args_len);
	if (!(d->flags & allowed))
		return ava_cmd_refuse(v, AVA_E_PROTO, AVA_CMD_WHY_CLASS, 0, flags, d->flags);
	if ((ava_u64)d->buf_first + d->buf_count > t->nbufs)
		return ava_cmd_refuse(v, AVA_E_PROTO, AVA_CMD_WHY_TABLE, 0, 0, 0);
	for (i = 0; i < d->buf_count; i++) {
		const struct ava_cmd_buf *b = &t->bufs[d->buf_first + i];
		int either = (b->flags & AVA_CMD_BUF_DIR_COND) != 0;
		/* an async creation sends its guest-chosen ids in its output handle buffer */
		int guest_ids = !sync && (b->flags & AVA_CMD_BUF_HANDLES) &&
				(b->flags & AVA_CMD_BUF_OUT);
		struct ava_buf_desc desc;

		if ((ava_u64)b->args_offset + sizeof(desc) > args_len)
			return ava_cmd_refuse(v, AVA_E_PROTO, AVA_CMD_WHY_TABLE, i, 0, 0);
		__builtin_memcpy(&desc, args + b->args_offset, sizeof(desc));
		if (!(desc.flags & AVA_BUF_PRESENT))
			continue;
		if ((desc.flags & AVA_BUF_IN) && !either && !guest_ids &&
		    !(b->flags & AVA_CMD_BUF_IN))
			return ava_cmd_refuse(v, AVA_E_PROTO, AVA_CMD_WHY_BUF_IN, i, 0, 0);
		if ((desc.flags & AVA_BUF_OUT) && !either && !(b->flags & AVA_CMD_BUF_OUT))
			return ava_cmd_refuse(v, AVA_E_PROTO, AVA_CMD_WHY_BUF_OUT, i, 0, 0);
		if ((b->flags & AVA_CMD_BUF_BOUNDED) && desc.length > b->max_len)
			return ava_cmd_refuse(v, AVA_E_LENGTH, AVA_CMD_WHY_BUF_BOUND, i, desc.length,
					      b->max_len);
		if (!frame)
			continue;
		if ((desc.flags & ~(ava_u32)(AVA_BUF_ALL | AVA_BUF_HEAP)) || desc.reserved ||
		    ((desc.flags & AVA_BUF_HEAP) && !frame->heap_size))
			return ava_cmd_refuse(v, AVA_E_PROTO, AVA_CMD_WHY_BUF_FLAGS, i, desc.flags, 0);
		if (desc.flags & AVA_BUF_HEAP) {
			if (desc.offset > frame->heap_size ||
			    desc.length > frame->heap_size - desc.offset)
				return ava_cmd_refuse(v, AVA_E_LENGTH, AVA_CMD_WHY_BUF_RANGE, i,
						      desc.offset + desc.length, frame->heap_size);
		} else if (desc.flags & AVA_BUF_IN) {
			/* payload items are 8-aligned and followed by a zero guard byte (wire.h) */
			if (desc.offset > frame->payload_len ||
			    desc.length >= frame->payload_len - desc.offset)
				return ava_cmd_refuse(v, AVA_E_LENGTH, AVA_CMD_WHY_BUF_RANGE, i,
						      desc.offset + desc.length, frame->payload_len);
			if (desc.offset % 8)
				return ava_cmd_refuse(v, AVA_E_PROTO, AVA_CMD_WHY_BUF_FLAGS, i,
						      desc.offset, 0);
		}
	}
	return 0;
}

#endif /* AVA_CMDTAB_H */
