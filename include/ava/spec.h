/* SPDX-License-Identifier: MIT */
/*
 * The ava spec language. A spec is an ordinary C file: it includes the real
 * API headers and this file, and "defines" each API function with a body of
 * annotations. cava parses it with libclang, so every annotation below
 * expands to plain C that type-checks against the API: argument names must
 * exist, sizes must be integer expressions, callbacks must name functions.
 * The marker functions are never defined or called; only their names matter.
 *
 *   demo_status demo_obj_read(demo_obj obj, uint64_t offset, void *data, uint64_t size)
 *   {
 *       ava_argument(obj) { ava_handle; }
 *       ava_argument(data) { ava_out; ava_buffer(size); }
 *   }
 *
 * Expressions inside annotations (sizes, conditions, success values) are
 * copied into the generated guest and worker code, where they see the
 * function's arguments under the same names.
 *
 * The spec's #include lines, and the #define lines above the include of
 * this file (API header configuration), are copied into the generated code.
 * A large spec may be split: #include "name.spec.inc" brings in a part that
 * cava reads as spec text (functions, annotations, regions), in place.
 */
#ifndef AVA_SPEC_H
#define AVA_SPEC_H

#define AVA_SPEC_CAT2(a, b) a##b
#define AVA_SPEC_CAT(a, b) AVA_SPEC_CAT2(a, b)
#define AVA_SPEC_UNIQUE(prefix) AVA_SPEC_CAT(prefix, __COUNTER__)

/* True in code that cava copies into the guest library / the worker. */
extern const int ava_is_guest;
extern const int ava_is_worker;
/* True inside ava_argument for the direction being marshalled. */
extern const int ava_is_in;
extern const int ava_is_out;

/* ---- API level (top of the spec) ---- */
#define ava_name(s) static const char *const __ava_name __attribute__((unused)) = s
#define ava_version(s) static const char *const __ava_version __attribute__((unused)) = s
#define ava_identifier(id) static const int __ava_identifier_##id __attribute__((unused)) = 0
#define ava_number(n) static const int __ava_number __attribute__((unused)) = (n)
#define ava_soname(s)                                                                              \
	static const char *const AVA_SPEC_UNIQUE(__ava_soname_) __attribute__((unused)) = s
#define ava_cflags(s) static const char *const __ava_cflags __attribute__((unused)) = s
#define ava_libs(s) static const char *const __ava_libs __attribute__((unused)) = s
#define ava_export_qualifier(s)                                                                    \
	static const char *const __ava_export_qualifier __attribute__((unused)) = #s
#define ava_guestlib_srcs(s) static const char *const __ava_guestlib_srcs __attribute__((unused)) = s
#define ava_worker_srcs(s) static const char *const __ava_worker_srcs __attribute__((unused)) = s
#define ava_register_metadata(T)                                                                   \
	static const int AVA_SPEC_UNIQUE(__ava_register_metadata_) __attribute__((unused)) =      \
		sizeof(T)
#define ava_throughput_resource(r)                                                                 \
	static const int __ava_throughput_resource_##r __attribute__((unused)) = 0
#define ava_storage_resource(r) static const int __ava_storage_resource_##r __attribute__((unused)) = 0
/*
 * Symbol versions of the guest library's exports, as the real library has
 * them (programs linked against it ask for e.g. clFinish@OPENCL_1.0):
 *   ava_export_version("OPENCL_1.0", clGetPlatformIDs, clFinish);
 * Nodes are emitted in spec order, each inheriting the one before. Once a
 * spec names a version, every exported function must be in exactly one.
 */
#define ava_export_version(node, ...)                                                              \
	static const void *const AVA_SPEC_UNIQUE(__ava_export_version_)[] __attribute__((unused)) = \
		{node, __VA_ARGS__}

/* Hooks: bodies are C statements run at the named moment. */
#define ava_guestlib_init_prologue(...)                                                            \
	static void __ava_guestlib_init_prologue(void) { __VA_ARGS__; }
#define ava_guestlib_init_epilogue(...)                                                            \
	static void __ava_guestlib_init_epilogue(void) { __VA_ARGS__; }
#define ava_guestlib_fini_prologue(...)                                                            \
	static void __ava_guestlib_fini_prologue(void) { __VA_ARGS__; }
#define ava_guestlib_fini_epilogue(...)                                                            \
	static void __ava_guestlib_fini_epilogue(void) { __VA_ARGS__; }
#define ava_worker_init_epilogue(...)                                                              \
	static void __ava_worker_init_epilogue(void) { __VA_ARGS__; }

/* Regions of code copied as is: utility into both sides, replacement into the guest only. */
#define ava_begin_utility extern int AVA_SPEC_UNIQUE(__ava_begin_utility_)
#define ava_end_utility extern int AVA_SPEC_UNIQUE(__ava_end_utility_)
#define ava_begin_replacement extern int AVA_SPEC_UNIQUE(__ava_begin_replacement_)
#define ava_end_replacement extern int AVA_SPEC_UNIQUE(__ava_end_replacement_)

/* A function type the guest registers as a callback; its body holds annotations. */
#define ava_callback_decl __attribute__((annotate("ava_callback_decl")))

/* Annotations for every argument / return value of type T. */
#define ava_type(T) static void AVA_SPEC_UNIQUE(__ava_type_)(T __ava_type_value __attribute__((unused)))
/* Annotations applied to every function that does not say otherwise. */
#define ava_defaults static void AVA_SPEC_UNIQUE(__ava_defaults_)(void)

/* ---- scopes inside a function body ---- */
int __ava_argument(const char *name, unsigned long size);
int __ava_return_value(void);
int __ava_element(void);
int __ava_field(const char *name);
#define ava_argument(a) if (__ava_argument(#a, sizeof(a)))
#define ava_return_value if (__ava_return_value())
#define ava_element if (__ava_element())
#define ava_field(f) if (__ava_field(#f))

/* ---- values ---- */
void __ava_in(void);
void __ava_out(void);
void __ava_buffer(unsigned long long count);
void __ava_handle(void);
void __ava_opaque(void);
void __ava_zerocopy_buffer(void);
void __ava_callback(const void *decl);
void __ava_userdata(void);
void __ava_lifetime_call(void);
void __ava_lifetime_coupled(const void *object);
void __ava_lifetime_manual(void);
void __ava_lifetime_static(void);
void __ava_lifetime_once(void);
void __ava_allocates(void);
void __ava_deallocates(void);
void __ava_retains(void);
void __ava_handle_value(const void *value);
void __ava_allocates_resource(const char *resource, unsigned long long amount);
void __ava_deallocates_resource(const char *resource, unsigned long long amount);
void __ava_buffer_allocator(const void *allocate, const void *deallocate);
void __ava_depends_on(const char *what, ...);
void __ava_no_copy(void);
void __ava_implicit_argument(unsigned long size);
void __ava_error(long double value);
#define ava_in __ava_in()
#define ava_out __ava_out()
#define ava_buffer(n) __ava_buffer((unsigned long long)(n))
#define ava_handle __ava_handle()
#define ava_opaque __ava_opaque()
#define ava_zerocopy_buffer __ava_zerocopy_buffer()
#define ava_callback(decl) __ava_callback((const void *)&(decl))
#define ava_userdata __ava_userdata()
#define ava_lifetime_call __ava_lifetime_call()
#define ava_lifetime_coupled(obj) __ava_lifetime_coupled((const void *)(obj))
#define ava_lifetime_manual __ava_lifetime_manual()
#define ava_lifetime_static __ava_lifetime_static()
/* A callback the API calls at most once (an event's completion, a build's
 * end): its registration ends when it has run, not with the guest. */
#define ava_lifetime_once __ava_lifetime_once()
#define ava_allocates __ava_allocates()
/* The call drops one guest reference to this handle (a release); the id goes with the last one. */
#define ava_deallocates __ava_deallocates()
/* The call adds one guest reference to this handle (a retain). */
#define ava_retains __ava_retains()
/*
 * In ava_type(T) of a handle type: a value of T the API itself defines
 * (CUDA's cudaStreamPerThread) that is no object: it travels and reaches the
 * API as that same value instead of being looked up as an id.
 */
#define ava_handle_value(v) __ava_handle_value((const void *)(v))
#define ava_allocates_resource(r, n) __ava_allocates_resource(#r, (unsigned long long)(n))
#define ava_deallocates_resource(r, n) __ava_deallocates_resource(#r, (unsigned long long)(n))
#define ava_buffer_allocator(a, f) __ava_buffer_allocator((const void *)&(a), (const void *)&(f))
#define ava_depends_on(...) __ava_depends_on(#__VA_ARGS__, __VA_ARGS__)
#define ava_no_copy __ava_no_copy()
#define ava_implicit_argument(e) __ava_implicit_argument(sizeof(e))
/* The value a stub returns when the call cannot be made (channel down, unsupported). */
#define ava_error(v) __ava_error((long double)(v))

/* ---- function level ---- */
void __ava_sync(void);
void __ava_async(void);
void __ava_async_shape(int first, ...);
void __ava_flush(void);
void __ava_device_wait(void);
void __ava_success(long double value);
void __ava_ordered_by(unsigned long size);
void __ava_consumes_resource(const char *resource, unsigned long long amount);
void __ava_disable_native_call(void);
void __ava_unsupported(void);
void __ava_time_me(void);
void __ava_object_record(void);
void __ava_object_depends_on(const void *object);
void __ava_object_explicit_state_functions(const void *extract, const void *replace);
long long __ava_execute(void);
#define ava_sync __ava_sync()
#define ava_async __ava_async()
/*
 * With ava_async (or `if (cond) { ava_async; }`): the call goes without
 * waiting only once a call of the same shape (this function and the values
 * of the listed C expressions, e.g. its handle arguments and the scalars its
 * documented errors depend on) succeeded on this connection; until then it
 * is sync, so the program gets the API's exact error at the call. An error
 * an async call reports later makes every shape sync again.
 */
#define ava_async_shape(...) __ava_async_shape(0, __VA_ARGS__)
#define ava_flush __ava_flush()
/*
 * The reply waits on device work (clFinish, clWaitForEvents, a stream
 * synchronize): the guest sleeps for it at once instead of spinning first.
 * Natively such a call blocks in the driver; a waiter spinning meanwhile
 * would take a CPU that the driver's own threads need on a machine with few.
 */
#define ava_device_wait __ava_device_wait()
#define ava_success(v) __ava_success((long double)(v))
#define ava_ordered_by(a) __ava_ordered_by(sizeof(a))
#define ava_consumes_resource(r, n) __ava_consumes_resource(#r, (unsigned long long)(n))
#define ava_disable_native_call __ava_disable_native_call()
#define ava_unsupported __ava_unsupported()
#define ava_time_me __ava_time_me()
#define ava_object_record __ava_object_record()
#define ava_object_depends_on(x) __ava_object_depends_on((const void *)(x))
#define ava_object_explicit_state_functions(e, r)                                                  \
	__ava_object_explicit_state_functions((const void *)&(e), (const void *)&(r))
/*
 * The real call: in the guest it is the remote call, in the worker the native one.
 *
 * Buffers the code touches are worker-private. The worker never lets code
 * work in place on guest-writable memory (the channel's shared heap, which
 * the guest may read and change at any moment) for a buffer argument that
 * the function's code (prologue, epilogue or ava_disable_native_call body;
 * not the branches of if (ava_is_guest && ...)) reads or rewrites itself:
 * it then works on its own copy (zeroes for an OUT-only buffer) and copies
 * the finished contents back to the guest's range with the reply. So an
 * epilogue that turns worker objects into handle ids, or reads back what
 * the API wrote, never sees guest-chosen values, no worker pointer reaches
 * guest-visible memory, and a prologue's checks hold for what the API gets.
 * cava decides from libclang's view of the code, macro expansions included:
 * any use of the buffer counts, except handing it as it is (casts aside) to
 * functions of the API headers, writing into it with memcpy/memmove/memset,
 * one copy out of it in an ava_disable_native_call body that gives it to
 * nothing else, and comparing it with NULL. Arrays of handles are always
 * private, and so are buffers of char the API reads (strings: the API reads
 * to the NUL, which the private copy always has after the bytes sent). The
 * generated worker shows the decision as AVA_W_PRIVATE.
 */
#define ava_execute() __ava_execute()

/*
 * For code in the worker (ava_is_worker): the object behind the guest handle
 * id of handle type T in the call being served (NULL if the guest has no such
 * handle), and the guest's id for an object of type T (registered if new).
 * Needed where handles hide inside other data: property lists, kernel
 * arguments, info queries returning handles. In the guest an id and a
 * handle are the same value.
 */
void *__ava_handle_object(unsigned long long id, const char *type);
unsigned long long __ava_handle_id(const void *object, const char *type);
int __ava_handle_invalid(const char *type);
#define ava_handle_object(T, id) ((T)__ava_handle_object((unsigned long long)(id), #T))
#define ava_handle_id(T, object) __ava_handle_id((const void *)(object), #T)
/*
 * Worker: whether a handle argument of type T named no object of that type
 * (an unknown id reaches the API as NULL, which some APIs take as "the
 * default"; the spec can answer with the API's invalid-handle error instead).
 */
#define ava_handle_invalid(T) __ava_handle_invalid(#T)
/*
 * Worker: how many references the calling guest holds to object (of handle
 * type T) now; 0 for an object it holds none of or never saw. Inside a
 * release (ava_deallocates) the call's own reference is already taken, so
 * 0 there means the guest is dropping its last one: what the worker keeps
 * for the object on the guest's behalf can go.
 */
unsigned int __ava_handle_held(const void *object, const char *type);
#define ava_handle_held(T, object) __ava_handle_held((const void *)(object), #T)

#endif /* AVA_SPEC_H */
