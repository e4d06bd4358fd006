/* SPDX-License-Identifier: MIT */
/*
 * Kernel-mode calls: the runtime that cava's `kernel` backend generates
 * stubs against. ava.ko implements it (EXPORT_SYMBOL_GPL) on a slot of the
 * ivshmem region that the kernel itself owns, exactly as a guest process
 * owns one through /dev/ava: same ring layout (ring.h), same wire format
 * (wire.h), same host side (`ava vmhost` forks a worker for the slot). So
 * a kernel module calls an API through ava the way a program does.
 *
 * A generated module ava_<spec>.ko holds one connection for its spec,
 * opened at module init and closed at exit. A stub marshals one call like
 * the user-space stubs do (shim/ava_shim.h), with these names:
 *
 *   struct ava_kcall c;
 *   if (ava_kcall_begin(&c, conn, FN_ID, AVA_F_SYNC)) goto fail;
 *   a.x = ...;
 *   ava_kcall_put_buffer(&c, &a.buf, ptr, n, 4, AVA_BUF_IN);
 *   if (ava_kcall_invoke(&c, &a, sizeof(a), (const void **)&r, sizeof(*r))) goto fail;
 *   ava_kcall_get_buffer(&c, &r->buf, ptr, n * 4);
 *   ret = r->ret; ava_kcall_end(&c); return ret;
 *   fail: ava_kcall_end(&c); return ERROR_VALUE;
 *
 * Every function returns 0 or a negative errno; after a failure the call is
 * marked failed and later steps of it are no-ops returning the same error.
 * Kernel rules: callers may sleep (process context only; GFP_KERNEL inside),
 * waits are killable and bounded by the connection's timeout, buffers are
 * kernel memory (no __user pointers), nothing here uses floating point.
 *
 * Errors: -ENODEV (no ava device or it went away), -EBUSY (no free slot),
 * -EINVAL (a call the spec's command table does not allow: see ava_kspec),
 * -EHOSTDOWN (no host), -EPIPE (the slot broke: worker died, corrupt ring),
 * -ETIMEDOUT, -EINTR (fatal signal while waiting), -ENOMEM, -EINVAL (a
 * malformed call), -EPROTO (a malformed reply), -EREMOTEIO (the worker
 * refused the call: the reply's AVA_E_* status is in c->status).
 */
#ifndef AVA_KCALL_H
#define AVA_KCALL_H

#include "ava/cmdtab.h"
#include "ava/wire.h"

struct ava_kconn;

/* Callback lifetimes, the values of shim/ava_shim.h (ava_lifetime_*). */
#ifndef AVA_LIFETIME_CALL
#define AVA_LIFETIME_CALL 0u
#define AVA_LIFETIME_COUPLED 1u
#define AVA_LIFETIME_MANUAL 2u
#define AVA_LIFETIME_STATIC 3u
#define AVA_LIFETIME_ONCE 4u
#endif

/*
 * Decodes one CALLBACK message and runs the kernel callback; generated per
 * spec. Runs on the connection's callback kthread (process context, may
 * sleep and make calls). Returns 0 or -EPROTO for a malformed message.
 */
typedef int (*ava_kcallback_fn)(ava_u32 decl_id, void (*fn)(void), void *userdata,
				const void *args, ava_u64 args_len, const ava_u8 *payload,
				ava_u64 payload_len);

/* What the runtime needs to know of a spec; one constant per generated module. */
struct ava_kspec {
	const char *name;
	ava_u32 id;
	ava_u64 hash;
	ava_u32 nfuncs;
	const char *const *func_names;
	ava_kcallback_fn callback_dispatch; /* NULL when the spec has no callbacks */
	/*
	 * The spec's command table (<spec>_cmds.h): ava.ko checks every call
	 * against it before it is sent, and refuses one the spec does not allow
	 * with -EINVAL (c->status says why: AVA_E_FUNC, AVA_E_LENGTH or
	 * AVA_E_PROTO), counted as the slot's "refused". NULL: not checked.
	 */
	const struct ava_cmd_table *cmds;
};

/* A call in progress; lives on the stub's stack. */
struct ava_kcall {
	struct ava_kconn *conn;
	void *impl;
	int failed;     /* 0 or the first negative errno */
	ava_s32 status; /* the reply's AVA_E_* status after -EREMOTEIO */
	ava_u32 func_id;
};

/*
 * ava_kconn_open() - claim a kernel-owned slot and say HELLO for spec.
 * timeout_ms bounds every later wait for a reply (0: a default of 60 s).
 */
int ava_kconn_open(const struct ava_kspec *spec, unsigned int timeout_ms, struct ava_kconn **out);
/* ava_kconn_close() - GOODBYE, release the slot; the host frees what the connection created. */
void ava_kconn_close(struct ava_kconn *conn);

/*
 * ava_cmds_register() - let ava.ko police processes' slots for a spec.
 * ava.ko keeps its own copy of the table (so the spec module may unload
 * while slots still use it), found by spec id, hash and name when a policed
 * claim says HELLO (ivshmem.h, AVA_IOC_SUBMIT). Returns 0, -EEXIST (a table
 * for the same spec is registered), -EINVAL (an inconsistent table) or
 * -ENOMEM. ava_cmds_unregister() drops it again; claims that use it keep
 * their copy until they end.
 */
int ava_cmds_register(const struct ava_cmd_table *t);
void ava_cmds_unregister(const struct ava_cmd_table *t);

int ava_kcall_begin(struct ava_kcall *c, struct ava_kconn *conn, ava_u32 func_id, ava_u32 flags);
/*
 * Describes a buffer argument of count elements of elem_size bytes; dir is
 * AVA_BUF_IN, AVA_BUF_OUT or both; a NULL ptr is sent as absent. IN bytes
 * are referenced until ava_kcall_invoke copies them into the ring.
 */
int ava_kcall_put_buffer(struct ava_kcall *c, struct ava_buf_desc *d, const void *ptr,
			 ava_u64 count, ava_u64 elem_size, ava_u32 dir);
/* Registers a callback for this call; returns its wire id (0 when fn is NULL). */
ava_u64 ava_kcall_callback(struct ava_kcall *c, void (*fn)(void), void *userdata,
			   ava_u32 lifetime, ava_u64 coupled_handle);
/*
 * Sends the call; for a sync call, sleeps (killable, bounded) until the
 * reply and points *reply at its function part (reply_len bytes, checked).
 */
int ava_kcall_invoke(struct ava_kcall *c, const void *args, ava_u32 args_len,
		     const void **reply, ava_u32 reply_len);
/* Copies an OUT buffer of the reply into dst (capacity bytes), after checking its bounds. */
int ava_kcall_get_buffer(struct ava_kcall *c, const struct ava_buf_desc *d, void *dst,
			 ava_u64 capacity);
/* As ava_call_take_async_error() of shim/ava_shim.h. */
int ava_kcall_take_async_error(struct ava_kcall *c, ava_u32 ret_class, ava_s64 *value);
/* Releases the reply and per-call registrations. */
void ava_kcall_end(struct ava_kcall *c);
/* For generated callback decoders: an IN buffer of a CALLBACK payload, checked. */
int ava_kcallback_buffer(const struct ava_buf_desc *d, const ava_u8 *payload, ava_u64 payload_len,
			 const void **ptr);
/* The handle was deallocated: drop callbacks coupled to it. */
void ava_kconn_handle_released(struct ava_kconn *conn, ava_u64 handle);

#endif /* AVA_KCALL_H */
