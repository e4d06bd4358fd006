/* SPDX-License-Identifier: MIT */
/*
 * Worker side of the "wtest" spec, written as cava would generate it: each
 * handler decodes in two phases (scalars, handles, IN buffers; then buffer
 * checks against the annotations), calls the library and replies.
 */
#include "worker/testing/wtest_spec.h"

#include <stddef.h>
#include <string.h>

#include "shim/ava_shim.h"
#include "worker/testing/wtest_lib.h"

#define FAIL(w, rc) ava_w_fail((w), (rc), WT_CLASS_STATUS, WT_ERR_INVALID)

static int32_t wt_event_trampoline(wt_obj *obj, int32_t event, const char *message, void *user)
{
	struct ava_wcb cb;
	struct wt_event_cb_args a;
	memset(&a, 0, sizeof a);
	int rc = ava_wcb_begin(&cb, user, WT_CB_EVENT);
	if (rc != 0)
		return rc;
	a.obj = ava_wcb_handle(&cb, obj, WT_TYPE_OBJ);
	a.event = event;
	ava_wcb_put_buffer(&cb, &a.message, message, message != NULL ? strlen(message) + 1 : 0, 1);
	return ava_wcb_invoke(&cb, &a, sizeof a, 1);
}

static int status_reply(struct ava_wcall *w, int32_t ret)
{
	struct wt_status_reply r;
	memset(&r, 0, sizeof r);
	r.ret = ret;
	return ava_w_reply(w, &r, sizeof r);
}

static int h_add(struct ava_wcall *w)
{
	const struct wt_add_args *a;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc != 0)
		return FAIL(w, rc);
	return status_reply(w, wt_add(a->a, a->b));
}

static int h_obj_create(struct ava_wcall *w)
{
	const struct wt_create_args *a;
	struct wt_create_reply r;
	wt_obj *obj = NULL;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc != 0)
		return FAIL(w, rc);
	memset(&r, 0, sizeof r);
	r.ret = wt_obj_create(a->size, &obj);
	r.handle = ava_w_handle_out(w, obj, WT_TYPE_OBJ, 1);
	return ava_w_reply(w, &r, sizeof r);
}

static int h_obj_release(struct ava_wcall *w)
{
	const struct wt_handle_args *a;
	void *obj;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc == 0)
		rc = ava_w_handle(w, a->handle, WT_TYPE_OBJ, &obj);
	if (rc != 0)
		return FAIL(w, rc);
	int32_t ret = wt_obj_release(obj);
	if (ret == WT_OK)
		ava_w_handle_release(w, a->handle);
	return status_reply(w, ret);
}

/* obj_write (IN), obj_read (OUT), obj_xor (IN|OUT), get_label (OUT). */
static int h_rw(struct ava_wcall *w, uint32_t func_id)
{
	static const uint32_t dirs[WT_FN_COUNT] = {
		[WT_FN_OBJ_WRITE] = AVA_BUF_IN,
		[WT_FN_OBJ_READ] = AVA_BUF_OUT,
		[WT_FN_OBJ_XOR] = AVA_BUF_IN | AVA_BUF_OUT,
		[WT_FN_GET_LABEL] = AVA_BUF_OUT,
	};
	const struct wt_rw_args *a;
	struct wt_buffer_reply r;
	void *obj;
	void *data;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc == 0)
		rc = ava_w_handle(w, a->obj, WT_TYPE_OBJ, &obj);
	if (rc == 0)
		rc = ava_w_buffer_in(w, &a->data, &data);
	if (rc == 0)
		rc = ava_w_buffer_check(w, &a->data, a->size, 1, dirs[func_id], &data);
	if (rc != 0)
		return FAIL(w, rc);
	memset(&r, 0, sizeof r);
	switch (func_id) {
	case WT_FN_OBJ_WRITE:
		r.ret = wt_obj_write(obj, data, a->size);
		break;
	case WT_FN_OBJ_READ:
		r.ret = wt_obj_read(obj, data, a->size);
		break;
	case WT_FN_OBJ_XOR:
		r.ret = wt_obj_xor(obj, data, a->size);
		break;
	default:
		r.ret = wt_get_label(obj, data, a->size);
		break;
	}
	if ((dirs[func_id] & AVA_BUF_OUT) != 0) {
		rc = ava_w_buffer_out(w, &r.data, data, data != NULL ? a->size : 0);
		if (rc != 0)
			return FAIL(w, rc);
	}
	return ava_w_reply(w, &r, sizeof r);
}

static int h_other_create(struct ava_wcall *w)
{
	const struct wt_create_args *a;
	struct wt_create_reply r;
	wt_other *other = NULL;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc != 0)
		return FAIL(w, rc);
	memset(&r, 0, sizeof r);
	r.ret = wt_other_create(&other);
	r.handle = ava_w_handle_out(w, other, WT_TYPE_OTHER, 1);
	return ava_w_reply(w, &r, sizeof r);
}

static int h_other_ping(struct ava_wcall *w)
{
	const struct wt_handle_args *a;
	void *other;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc == 0)
		rc = ava_w_handle(w, a->handle, WT_TYPE_OTHER, &other);
	if (rc != 0)
		return FAIL(w, rc);
	return status_reply(w, wt_other_ping(other));
}

static int h_sum_sizes(struct ava_wcall *w)
{
	const struct wt_sum_args *a;
	struct wt_sum_reply r;
	void *objs;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc == 0)
		rc = ava_w_buffer_in(w, &a->objs, &objs);
	if (rc == 0)
		rc = ava_w_buffer_check(w, &a->objs, a->count, sizeof(uint64_t), AVA_BUF_IN, &objs);
	if (rc == 0 && objs != NULL)
		rc = ava_w_handles_in(w, objs, a->count, WT_TYPE_OBJ);
	if (rc != 0)
		return FAIL(w, rc);
	memset(&r, 0, sizeof r);
	r.ret = wt_sum_sizes(objs, objs != NULL ? a->count : 0, &r.total);
	return ava_w_reply(w, &r, sizeof r);
}

static int h_list(struct ava_wcall *w)
{
	const struct wt_list_args *a;
	struct wt_list_reply r;
	void *objs;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc == 0)
		rc = ava_w_buffer_in(w, &a->objs, &objs);
	if (rc == 0)
		rc = ava_w_buffer_check(w, &a->objs, a->capacity, sizeof(uint64_t), AVA_BUF_OUT, &objs);
	if (rc != 0)
		return FAIL(w, rc);
	memset(&r, 0, sizeof r);
	uint64_t capacity = objs != NULL ? a->capacity : 0;
	r.ret = wt_list(objs, capacity, &r.count);
	uint64_t filled = r.count < capacity ? r.count : capacity;
	rc = ava_w_handles_out(w, objs, filled, WT_TYPE_OBJ, 0);
	if (rc == 0)
		rc = ava_w_buffer_out(w, &r.objs, objs, objs != NULL ? filled * sizeof(uint64_t) : 0);
	if (rc != 0)
		return FAIL(w, rc);
	return ava_w_reply(w, &r, sizeof r);
}

static int h_async_set(struct ava_wcall *w)
{
	const struct wt_async_set_args *a;
	void *obj;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc == 0)
		rc = ava_w_handle(w, a->obj, WT_TYPE_OBJ, &obj);
	if (rc != 0)
		return FAIL(w, rc);
	int32_t ret = wt_async_set(obj, a->value);
	if (ret != WT_OK)
		ava_w_async_error(w, WT_CLASS_STATUS, ret);
	return ava_w_reply(w, NULL, 0);
}

static int h_get_value(struct ava_wcall *w)
{
	const struct wt_handle_args *a;
	struct wt_value_reply r;
	void *obj;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc == 0)
		rc = ava_w_handle(w, a->handle, WT_TYPE_OBJ, &obj);
	if (rc != 0)
		return FAIL(w, rc);
	memset(&r, 0, sizeof r);
	r.ret = wt_get_value(obj, &r.value);
	return ava_w_reply(w, &r, sizeof r);
}

static int h_block(struct ava_wcall *w)
{
	const struct wt_handle_args *a;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc != 0)
		return FAIL(w, rc);
	return status_reply(w, wt_block());
}

static int h_set_callback(struct ava_wcall *w)
{
	const struct wt_set_callback_args *a;
	void *obj;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc == 0)
		rc = ava_w_handle(w, a->obj, WT_TYPE_OBJ, &obj);
	if (rc != 0)
		return FAIL(w, rc);
	void *ctx = ava_w_callback_ctx(w, a->callback_id, AVA_LIFETIME_COUPLED, a->obj);
	return status_reply(w, wt_set_callback(obj, ctx != NULL ? wt_event_trampoline : NULL, ctx));
}

static int h_fire(struct ava_wcall *w)
{
	const struct wt_fire_args *a;
	void *obj;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc == 0)
		rc = ava_w_handle(w, a->obj, WT_TYPE_OBJ, &obj);
	if (rc != 0)
		return FAIL(w, rc);
	return status_reply(w, wt_fire(obj, a->event));
}

static int h_set_label(struct ava_wcall *w)
{
	const struct wt_label_args *a;
	void *obj;
	void *label;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc == 0)
		rc = ava_w_handle(w, a->obj, WT_TYPE_OBJ, &obj);
	if (rc == 0)
		rc = ava_w_buffer_in(w, &a->label, &label);
	if (rc == 0 && label != NULL)
		rc = ava_w_buffer_check(w, &a->label, strlen(label) + 1, 1, AVA_BUF_IN, &label);
	if (rc != 0)
		return FAIL(w, rc);
	if (label != NULL)
		label = ava_w_buffer_keep(w, label, strlen(label) + 1, AVA_LIFETIME_COUPLED, a->obj);
	return status_reply(w, wt_set_label(obj, label));
}

static int h_set_tag(struct ava_wcall *w)
{
	const struct wt_tag_args *a;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc != 0)
		return FAIL(w, rc);
	return status_reply(w, wt_set_tag(a->tag));
}

static int h_get_tag(struct ava_wcall *w)
{
	const struct wt_handle_args *a;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc != 0)
		return FAIL(w, rc);
	return status_reply(w, wt_get_tag());
}

static int h_set_global_callback(struct ava_wcall *w)
{
	const struct wt_global_callback_args *a;
	int rc = ava_w_args(w, sizeof *a, (const void **)&a);
	if (rc != 0)
		return FAIL(w, rc);
	void *ctx = ava_w_callback_ctx(w, a->callback_id, AVA_LIFETIME_STATIC, 0);
	return status_reply(w, wt_set_global_callback(ctx != NULL ? wt_event_trampoline : NULL, ctx));
}

static int wt_dispatch(struct ava_wcall *w, uint32_t func_id)
{
	switch (func_id) {
	case WT_FN_ADD:
		return h_add(w);
	case WT_FN_OBJ_CREATE:
		return h_obj_create(w);
	case WT_FN_OBJ_RELEASE:
		return h_obj_release(w);
	case WT_FN_OBJ_WRITE:
	case WT_FN_OBJ_READ:
	case WT_FN_OBJ_XOR:
	case WT_FN_GET_LABEL:
		return h_rw(w, func_id);
	case WT_FN_OTHER_CREATE:
		return h_other_create(w);
	case WT_FN_OTHER_PING:
		return h_other_ping(w);
	case WT_FN_SUM_SIZES:
		return h_sum_sizes(w);
	case WT_FN_LIST:
		return h_list(w);
	case WT_FN_ASYNC_SET:
		return h_async_set(w);
	case WT_FN_GET_VALUE:
		return h_get_value(w);
	case WT_FN_BLOCK:
		return h_block(w);
	case WT_FN_SET_CALLBACK:
		return h_set_callback(w);
	case WT_FN_FIRE:
		return h_fire(w);
	case WT_FN_SET_LABEL:
		return h_set_label(w);
	case WT_FN_SET_TAG:
		return h_set_tag(w);
	case WT_FN_GET_TAG:
		return h_get_tag(w);
	case WT_FN_SET_GLOBAL_CALLBACK:
		return h_set_global_callback(w);
	default:
		return FAIL(w, AVA_E_FUNC);
	}
}

static const char *const wt_func_names[WT_FN_COUNT] = {
	"wt_add", "wt_obj_create", "wt_obj_release", "wt_obj_write", "wt_obj_read",
	"wt_obj_xor", "wt_other_create", "wt_other_ping", "wt_sum_sizes", "wt_list",
	"wt_async_set", "wt_get_value", "wt_block", "wt_set_callback", "wt_fire",
	"wt_set_label", "wt_get_label", "wt_set_tag", "wt_get_tag", "wt_set_global_callback",
	"wt_unsupported",
};

static const uint32_t wt_func_flags[WT_FN_COUNT] = {
	[WT_FN_ADD] = AVA_F_SYNC,
	[WT_FN_OBJ_CREATE] = AVA_F_SYNC,
	[WT_FN_OBJ_RELEASE] = AVA_F_SYNC,
	[WT_FN_OBJ_WRITE] = AVA_F_SYNC,
	[WT_FN_OBJ_READ] = AVA_F_SYNC,
	[WT_FN_OBJ_XOR] = AVA_F_SYNC,
	[WT_FN_OTHER_CREATE] = AVA_F_SYNC,
	[WT_FN_OTHER_PING] = AVA_F_SYNC,
	[WT_FN_SUM_SIZES] = AVA_F_SYNC,
	[WT_FN_LIST] = AVA_F_SYNC,
	[WT_FN_ASYNC_SET] = AVA_F_ASYNC,
	[WT_FN_GET_VALUE] = AVA_F_SYNC,
	[WT_FN_BLOCK] = AVA_F_SYNC,
	[WT_FN_SET_CALLBACK] = AVA_F_SYNC,
	[WT_FN_FIRE] = AVA_F_SYNC,
	[WT_FN_SET_LABEL] = AVA_F_SYNC,
	[WT_FN_GET_LABEL] = AVA_F_SYNC,
	[WT_FN_SET_TAG] = AVA_F_SYNC,
	[WT_FN_GET_TAG] = AVA_F_SYNC,
	[WT_FN_SET_GLOBAL_CALLBACK] = AVA_F_SYNC,
	[WT_FN_UNSUPPORTED] = 0,
};

static const char *const wt_type_names[] = {NULL, "wt_obj", "wt_other"};

const struct ava_worker_spec wt_worker_spec = {
	.name = WT_SPEC_NAME,
	.id = WT_SPEC_ID,
	.hash = WT_SPEC_HASH,
	.nfuncs = WT_FN_COUNT,
	.func_names = wt_func_names,
	.func_flags = wt_func_flags,
	.ntypes = 2,
	.type_names = wt_type_names,
	.dispatch = wt_dispatch,
	.destroy = wt_destroy,
	.init_epilogue = wt_init,
};

__attribute__((visibility("default"))) const struct ava_worker_spec *ava_worker_spec_export(void)
{
	return &wt_worker_spec;
}
