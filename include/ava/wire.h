/* SPDX-License-Identifier: MIT */
/*
 * ava wire format: the messages that travel between a guest library and a
 * worker over any channel (socket, shared-memory ring, /dev/ava slot).
 *
 * This header is shared by user space (C and C++) and the Linux kernel, so it
 * uses fixed-width types only, no pointers, no enums, no size_t and no
 * implicit padding. Everything is little-endian (ava runs on x86_64 and other
 * little-endian hosts; a big-endian port would byte-swap at the channel).
 *
 * One message:
 *
 *   0                  64                 64+args_len               total_len
 *   +------------------+------------------+--------------------------+
 *   | struct ava_msg_hdr | argument block | payload (buffers)        |
 *   +------------------+------------------+--------------------------+
 *
 * The argument block of a CALL is the cava-generated struct of the function
 * (see the generated <spec>_wire.h). The argument block of a REPLY is
 * struct ava_reply_common followed by the generated reply struct. Buffers are
 * referenced from the argument block by struct ava_buf_desc, whose offset is
 * relative to the start of the payload. Every buffer in a payload is followed
 * by at least one zero byte and padded to 8 bytes, so a receiver may treat an
 * in-buffer as a terminated string after checking that guard byte.
 *
 * Nothing in a message is trusted by its receiver: lengths, offsets, ids and
 * flags are all checked before use.
 */
#ifndef AVA_WIRE_H
#define AVA_WIRE_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/build_bug.h>
#define AVA_STATIC_ASSERT(c, m) static_assert(c, m)
typedef u8 ava_u8;
typedef u16 ava_u16;
typedef u32 ava_u32;
typedef u64 ava_u64;
typedef s32 ava_s32;
typedef s64 ava_s64;
#else
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
#define AVA_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define AVA_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
typedef uint8_t ava_u8;
typedef uint16_t ava_u16;
typedef uint32_t ava_u32;
typedef uint64_t ava_u64;
typedef int32_t ava_s32;
typedef int64_t ava_s64;
#endif

#define AVA_MSG_MAGIC 0x31415641u /* "AVA1" read as little-endian bytes */
#define AVA_ABI_VERSION 1u

/* struct ava_msg_hdr.kind */
#define AVA_MSG_HELLO 1u         /* guest -> worker: struct ava_hello */
#define AVA_MSG_HELLO_ACK 2u     /* worker -> guest: status only */
#define AVA_MSG_CALL 3u          /* guest -> worker: an API call */
#define AVA_MSG_REPLY 4u         /* worker -> guest: result of a sync CALL */
#define AVA_MSG_CALLBACK 5u      /* worker -> guest: run a guest callback */
#define AVA_MSG_CALLBACK_DONE 6u /* guest -> worker: that callback returned */
#define AVA_MSG_GOODBYE 7u       /* either way: orderly close */
#define AVA_MSG_DATA 8u          /* worker -> guest: bytes of a staged transfer (struct ava_data) */
#define AVA_MSG_KIND_MAX 8u

/* struct ava_msg_hdr.flags */
#define AVA_F_SYNC 0x1u  /* the sender waits for a REPLY */
#define AVA_F_ASYNC 0x2u /* no REPLY; errors surface at the next sync call */
#define AVA_F_FLUSH 0x4u /* deliver any batched async commands first */
#define AVA_F_ALL (AVA_F_SYNC | AVA_F_ASYNC | AVA_F_FLUSH)

/*
 * struct ava_msg_hdr.status (REPLY, HELLO_ACK): 0 or a negative AVA_E_*.
 * A non-zero status means the API function was NOT called (or, for
 * AVA_E_HANDLE, was refused before the call); the guest stub then returns
 * the function's error value.
 */
#define AVA_OK 0
#define AVA_E_PROTO (-1)        /* malformed message */
#define AVA_E_LENGTH (-2)       /* a length or offset is out of bounds */
#define AVA_E_FUNC (-3)         /* unknown function id */
#define AVA_E_HANDLE (-4)       /* unknown or wrongly typed handle */
#define AVA_E_NOMEM (-5)        /* the worker could not allocate */
#define AVA_E_UNSUPPORTED (-6)  /* the spec does not support the call; HELLO_ACK: no plugin for the spec */
#define AVA_E_CLOSED (-7)       /* the channel is closed or broken */
#define AVA_E_SPEC (-8)         /* spec name, id or layout hash mismatch */
#define AVA_E_TOO_BIG (-9)      /* message above the configured limit */
#define AVA_E_TIMEOUT (-10)     /* no answer within the configured time */
#define AVA_E_STATE (-11)       /* call out of order (e.g. before HELLO) */
#define AVA_E_POLICY (-12)      /* refused by the guest's sharing policy (a rate or quota) */
#define AVA_E_VERSION (-13)     /* HELLO_ACK: no protocol version both sides speak */
#define AVA_E_ACCESS (-14)      /* HELLO_ACK: the guest's credential is missing or not accepted */
#define AVA_E_MIN AVA_E_ACCESS  /* the lowest status defined */

/*
 * Handle ids. The worker picks the ids of objects that sync calls return;
 * an async call that creates objects (an enqueue returning an event) cannot
 * wait for them, so the guest picks those ids, from its own space (bit 62
 * set), and sends them with the call; the worker registers the objects under
 * them, refusing any that is taken or outside that space.
 */
#define AVA_GUEST_ID_BIT (1ull << 62)
#define AVA_GUEST_ID_MASK (3ull << 62) /* bits 63..62 of a guest-chosen id: exactly 01 */

/* Default upper bound of one message; channels may configure it lower. */
#define AVA_MSG_MAX_DEFAULT (1ull << 32)

/*
 * The fixed header of every message; exactly one cache line.
 *
 *   0        4      6      8        12       16
 *   +--------+------+------+--------+--------+
 *   | magic  | abi  | kind | spec_id| func_id|
 *   +--------+------+------+--------+--------+----------------+
 *   16 total_len (u64)     24 thread_id (u64)
 *   32 seq (u64)           40 call_id (u64)
 *   48 args_len (u32)  52 flags (u32)  56 status (s32)  60 reserved (u32)
 */
struct ava_msg_hdr {
	ava_u32 magic;
	ava_u16 abi_version;
	ava_u16 kind;
	ava_u32 spec_id;
	ava_u32 func_id; /* CALL/REPLY: function id; CALLBACK: callback decl id */
	ava_u64 total_len; /* header + argument block + payload */
	ava_u64 thread_id; /* guest thread that made the call */
	ava_u64 seq;       /* per-thread ordering sequence of CALLs */
	ava_u64 call_id;   /* REPLY echoes the CALL's; CALLBACK: registration id */
	ava_u32 args_len;
	ava_u32 flags;
	ava_s32 status;
	ava_u32 reserved; /* must be zero */
};
AVA_STATIC_ASSERT(sizeof(struct ava_msg_hdr) == 64, "ava_msg_hdr is one cache line");
AVA_STATIC_ASSERT(offsetof(struct ava_msg_hdr, total_len) == 16, "ava_msg_hdr.total_len");
AVA_STATIC_ASSERT(offsetof(struct ava_msg_hdr, call_id) == 40, "ava_msg_hdr.call_id");
AVA_STATIC_ASSERT(offsetof(struct ava_msg_hdr, status) == 56, "ava_msg_hdr.status");

/* struct ava_buf_desc.flags */
#define AVA_BUF_PRESENT 0x1u /* the pointer was non-NULL */
#define AVA_BUF_IN 0x2u      /* contents travel with the CALL */
#define AVA_BUF_OUT 0x4u     /* contents travel back with the REPLY */
#define AVA_BUF_HEAP 0x8u    /* offset is into the channel's shared heap (see ring.h) */
/* Flags every channel understands; AVA_BUF_HEAP only where the channel has a heap. */
#define AVA_BUF_ALL (AVA_BUF_PRESENT | AVA_BUF_IN | AVA_BUF_OUT)

/*
 * A buffer argument. In a CALL, offset/length locate an IN buffer in the
 * payload; for an OUT-only buffer length is the capacity the guest offers and
 * offset is zero. In a REPLY, offset/length locate the returned bytes.
 */
struct ava_buf_desc {
	ava_u64 offset;
	ava_u64 length;
	ava_u32 flags;
	ava_u32 reserved; /* must be zero */
};
AVA_STATIC_ASSERT(sizeof(struct ava_buf_desc) == 24, "ava_buf_desc size");

/* First part of every REPLY argument block. */
struct ava_reply_common {
	/*
	 * An async call of this guest thread failed since the last sync reply:
	 * async_error_class is the cava return class of that function (0 =
	 * none) and async_error_value its return value.
	 */
	ava_s64 async_error_value;
	ava_u32 async_error_class;
	ava_u32 async_error_func;
};
AVA_STATIC_ASSERT(sizeof(struct ava_reply_common) == 16, "ava_reply_common size");

#define AVA_SPEC_NAME_MAX 32
#define AVA_BUILD_NAME_MAX 32

/*
 * The handshake. A connection's first message is HELLO; the worker answers
 * HELLO_ACK, and nothing else crosses before that answer.
 *
 * Two numbers are versioned apart. ava_msg_hdr.abi_version (AVA_ABI_VERSION)
 * is the framing of every message and stays 1: magic, abi_version and kind
 * keep their offsets for good, so any two peers can at least exchange
 * HELLO and HELLO_ACK. What HELLO and everything after it mean is the
 * protocol version, which HELLO negotiates: the guest offers a range, the
 * worker picks the highest version in both ranges, and when there is none
 * the ACK says so (AVA_E_VERSION) and names the worker's range and build, so
 * the guest's error can name both sides.
 *
 *   protocol 1  HELLO's block is the first 56 bytes below alone; HELLO_ACK
 *               is a bare status (ava 0.1, before negotiation)
 *   protocol 2  this layout
 *
 * HELLO (protocol 2):
 *
 *   0            64                      184                      total_len
 *   +------------+-----------------------+------------------------+
 *   | ava_msg_hdr| struct ava_hello (120)| items (payload)        |
 *   +------------+-----------------------+------------------------+
 *
 *   items: a run of  ava_hello_item{kind,len} | len bytes | 0-7 zero bytes
 *   (each item padded to 8), at most AVA_HELLO_ITEMS_MAX bytes in all; a
 *   receiver skips kinds it does not know, so later versions can add some
 *   without a new protocol number.
 *
 * HELLO_ACK (protocol 2): ava_msg_hdr (status) | struct ava_hello_ack (88),
 * for refusals too, except to a protocol-1 HELLO (a bare status, which is
 * all such a guest reads).
 *
 * A session is the worker's state for one guest connection; its id names it
 * in logs and reports, and the resume token (known only to the two sides) is
 * what a later HELLO with AVA_HELLO_RESUME must show to take it over, e.g.
 * after a migration. A worker that cannot resume says so by leaving
 * AVA_ACK_RESUMABLE out of its ACK and refuses such a HELLO with
 * AVA_E_UNSUPPORTED.
 */
#define AVA_PROTO_MIN 2u /* the protocol versions this build speaks */
#define AVA_PROTO_MAX 2u
#define AVA_HELLO_V1_SIZE 56u /* sizeof the protocol-1 block, to recognise one */

/* struct ava_hello.flags */
#define AVA_HELLO_RESUME 0x1u /* take over session_id, proving it with resume_token */
#define AVA_HELLO_KERNEL 0x2u /* a kernel-owned connection (ava.ko's own calls) */
#define AVA_HELLO_FLAGS_ALL (AVA_HELLO_RESUME | AVA_HELLO_KERNEL)

/* Argument block of HELLO. */
struct ava_hello {
	ava_u64 spec_hash; /* cava's hash of the spec's wire layout */
	ava_u64 pid;       /* guest process id, for logs */
	ava_u32 spec_id;
	ava_u32 flags;                     /* AVA_HELLO_*; zero in protocol 1 */
	char spec_name[AVA_SPEC_NAME_MAX]; /* NUL-padded */
	/* protocol 2 on */
	ava_u16 proto_min; /* the versions the guest speaks */
	ava_u16 proto_max;
	ava_u32 reserved;               /* must be zero */
	ava_u64 session_id;             /* AVA_HELLO_RESUME: the session to resume, else 0 */
	ava_u8 resume_token[16];        /* AVA_HELLO_RESUME: its token, else zero */
	char build[AVA_BUILD_NAME_MAX]; /* the guest library's version text, NUL-padded */
};
AVA_STATIC_ASSERT(sizeof(struct ava_hello) == 120, "ava_hello size");
AVA_STATIC_ASSERT(offsetof(struct ava_hello, proto_min) == AVA_HELLO_V1_SIZE, "ava_hello v1 part");

/* struct ava_hello_item.kind; an item of another kind is skipped */
#define AVA_HELLO_ITEM_CREDENTIAL 1u /* a token the host's configuration may require */
#define AVA_HELLO_ITEM_CONFIG 2u     /* the guest's effective configuration, "key = value" lines */
#define AVA_HELLO_ITEMS_MAX 65536u   /* all items of one HELLO */
#define AVA_CREDENTIAL_MAX 4096u     /* one credential item */

struct ava_hello_item {
	ava_u32 kind;
	ava_u32 len; /* bytes that follow, before the padding */
};
AVA_STATIC_ASSERT(sizeof(struct ava_hello_item) == 8, "ava_hello_item size");

/* struct ava_hello_ack.flags: what this worker can do */
#define AVA_ACK_RESUMABLE 0x1u /* the session can be taken over by a later HELLO */

/* Argument block of HELLO_ACK (protocol 2). */
struct ava_hello_ack {
	ava_u16 proto;      /* the version chosen; 0 when refused */
	ava_u16 proto_min;  /* the versions the worker speaks */
	ava_u16 proto_max;
	ava_u16 reserved0;  /* zero */
	ava_u32 flags;      /* AVA_ACK_* */
	ava_u32 reserved1;  /* zero */
	ava_u64 session_id; /* 0 when refused */
	ava_u8 resume_token[16];
	char build[AVA_BUILD_NAME_MAX]; /* the worker's version text, NUL-padded */
	char peer[16];                  /* the name the credential was accepted as, or "" */
};
AVA_STATIC_ASSERT(sizeof(struct ava_hello_ack) == 88, "ava_hello_ack size");

/*
 * Fills a protocol-2 HELLO block (the caller zeroed it): the one place that
 * knows which fields a HELLO must carry. Text longer than its field (less
 * its NUL) is cut.
 */
static inline void ava_hello_fill(struct ava_hello *h, ava_u32 spec_id, ava_u64 spec_hash,
				  const char *name, ava_u64 pid, const char *build)
{
	ava_u32 i;

	h->spec_hash = spec_hash;
	h->pid = pid;
	h->spec_id = spec_id;
	for (i = 0; i + 1 < AVA_SPEC_NAME_MAX && name[i]; i++)
		h->spec_name[i] = name[i];
	h->proto_min = AVA_PROTO_MIN;
	h->proto_max = AVA_PROTO_MAX;
	for (i = 0; i + 1 < AVA_BUILD_NAME_MAX && build[i]; i++)
		h->build[i] = build[i];
}

/*
 * A staged transfer: the data a non-blocking read (or map) produces on the
 * worker after its call has returned. The guest registers the destination
 * before the call and names it by a token it sends with the call; the worker
 * reads into its own staging memory and, once the command is done, sends
 * DATA messages for that token: pieces of bytes at offsets within the
 * destination. The worker sends them before any REPLY or CALLBACK that could
 * let the program see the command complete, so the data is in place by then.
 *
 * One DATA message (hdr.call_id = token, hdr.func_id = 0):
 *
 *   ava_msg_hdr | struct ava_data | npieces x struct ava_data_piece | bytes
 *
 * The bytes are the pieces' contents, one after another, exactly
 * sum(length) of them (none with AVA_DATA_HEAP). A transfer ends with a message flagged AVA_DATA_END
 * (possibly with no pieces); AVA_DATA_FAILED (with END, no pieces) says the
 * command failed and the destination stays untouched, as natively.
 */
#define AVA_DATA_END 0x1u
#define AVA_DATA_FAILED 0x2u
/*
 * The bytes are not in the message: they lie in the shared heap block the
 * guest lent for the transfer with its call (channels with a heap), at the
 * pieces' offsets into it, which are those into the destination.
 */
#define AVA_DATA_HEAP 0x4u
#define AVA_DATA_ALL (AVA_DATA_END | AVA_DATA_FAILED | AVA_DATA_HEAP)
#define AVA_DATA_MAX_PIECES 65536u /* per message */

struct ava_data {
	ava_u32 npieces;
	ava_u32 flags;
};
AVA_STATIC_ASSERT(sizeof(struct ava_data) == 8, "ava_data size");

struct ava_data_piece {
	ava_u64 offset; /* within the registered destination */
	ava_u64 length;
};
AVA_STATIC_ASSERT(sizeof(struct ava_data_piece) == 16, "ava_data_piece size");

/* Round a payload item up so that it keeps a zero guard byte and 8-byte alignment. */
#define AVA_PAYLOAD_SPAN(len) ((((ava_u64)(len)) + 8u) & ~(ava_u64)7u)

#endif /* AVA_WIRE_H */
