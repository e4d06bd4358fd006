/*
 * ava spec of OpenCL 3.0 (CL/cl.h) as PoCL implements it: the guest library
 * answers to libOpenCL.so.1 with the ICD loader's exports and symbol
 * versions. See include/ava/spec.h for the language.
 *
 * Where OpenCL hides handles or guest memory inside data, the spec does the
 * work in code: property lists and image descriptors carry handles (the
 * worker translates them), kernel arguments may be cl_mem or cl_sampler
 * handles (the worker recognises ids; ids carry a random tag so a by-value
 * argument is not mistaken for one), info queries return handles (the worker
 * turns them into ids), arrays of strings and binaries are flattened by the
 * guest, and mapping is done in the guest with reads and writes.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#define CL_USE_DEPRECATED_OPENCL_2_1_APIS
#define CL_USE_DEPRECATED_OPENCL_2_2_APIS
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ava/spec.h>

#include <CL/cl.h>
#include "icd_exports.h"

ava_name("opencl");
ava_version("3.0");
ava_identifier(opencl);
ava_number(2);
ava_soname("libOpenCL.so.1");
ava_libs("-lOpenCL");

ava_type(cl_platform_id) { ava_handle; }
ava_type(cl_device_id) { ava_handle; }
ava_type(cl_context) { ava_handle; }
ava_type(cl_command_queue) { ava_handle; }
ava_type(cl_mem) { ava_handle; }
ava_type(cl_program) { ava_handle; }
ava_type(cl_kernel) { ava_handle; }
ava_type(cl_event) { ava_handle; }
ava_type(cl_sampler) { ava_handle; }
/* A call that cannot reach the worker fails as if the host ran out of resources. */
ava_type(cl_int) {
	ava_success(CL_SUCCESS);
	ava_error(CL_OUT_OF_RESOURCES);
}


/* ------------------------------------------------------------------------
 * Utility code (guest and worker)
 * ------------------------------------------------------------------------ */
ava_begin_utility;
/* Helpers the guest's replacement code calls (remote, defined below). */
cl_program ava_cl_create_program_with_source(cl_context context, const char *source,
					     size_t length, cl_int *errcode_ret);
cl_program ava_cl_create_program_with_binary(cl_context context, cl_uint num_devices,
					     const cl_device_id *device_list, const size_t *lengths,
					     const unsigned char *binaries, size_t binaries_length,
					     cl_int *binary_status, cl_int *errcode_ret);
cl_int ava_cl_get_program_info(cl_program program, cl_program_info param_name,
			       size_t param_value_size, void *param_value,
			       size_t *param_value_size_ret);
cl_int ava_cl_get_program_binaries(cl_program program, size_t total, unsigned char *binaries);
cl_int ava_cl_set_content_size_buffer(cl_mem buffer, cl_mem content_size_buffer);
cl_int ava_cl_map_buffer(cl_command_queue command_queue, cl_mem buffer, cl_map_flags map_flags,
			 size_t offset, size_t size, void *data, cl_uint num_events_in_wait_list,
			 const cl_event *event_wait_list, cl_event *event);
cl_int ava_cl_unmap_buffer(cl_command_queue command_queue, cl_mem buffer, size_t offset,
			   size_t size, cl_int write, const void *data,
			   cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			   cl_event *event);
cl_int ava_cl_compile_program(cl_program program, cl_uint num_devices,
			      const cl_device_id *device_list, const char *options,
			      cl_uint num_input_headers, const cl_program *input_headers,
			      const char *include_names, size_t include_names_length,
			      void(CL_CALLBACK *pfn_notify)(cl_program program, void *user_data),
			      void *user_data);

/*
 * PoCL sets itself up on first use, which is not safe from several threads
 * at once (and under ASan it takes over that thread's signal stack): the
 * worker does it once, while loading the plugin.
 */
static void ava_cl_worker_init(void)
{
	cl_platform_id platforms[16];
	cl_uint n = 0, devices = 0;

	if (clGetPlatformIDs(16, platforms, &n) != CL_SUCCESS)
		return;
	for (cl_uint i = 0; i < n && i < 16; ++i)
		(void)clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 0, NULL, &devices);
}

/* Every OpenCL property list is 64-bit key/value pairs ending with a 0 key. */
#define AVA_CL_MAX_PROPERTIES 1024u
static uint64_t ava_cl_props_count(const void *properties)
{
	const uint64_t *p = (const uint64_t *)properties;
	uint64_t n = 0;

	if (p == NULL)
		return 0;
	while (n < AVA_CL_MAX_PROPERTIES && p[n] != 0)
		n += 2;
	return n + 1;
}

/* Partition properties: BY_COUNTS is followed by counts up to LIST_END. */
static uint64_t ava_cl_partition_count(const cl_device_partition_property *p)
{
	uint64_t n = 0;

	if (p == NULL)
		return 0;
	while (n < AVA_CL_MAX_PROPERTIES && p[n] != 0) {
		if (p[n] == CL_DEVICE_PARTITION_BY_COUNTS) {
			n++;
			while (n < AVA_CL_MAX_PROPERTIES && p[n] != CL_DEVICE_PARTITION_BY_COUNTS_LIST_END)
				n++;
			n++;
		} else {
			n += 2;
		}
	}
	return n + 1;
}

/* Bytes of host memory a rectangle of region at origin with these pitches spans. */
static uint64_t ava_cl_rect_span(const size_t *origin, const size_t *region, size_t elem,
				 size_t row_pitch, size_t slice_pitch)
{
	uint64_t row, slice;

	if (origin == NULL || region == NULL || region[0] == 0 || region[1] == 0 || region[2] == 0)
		return 0;
	row = row_pitch ? row_pitch : (uint64_t)region[0] * elem;
	slice = slice_pitch ? slice_pitch : row * region[1];
	return origin[2] * slice + origin[1] * row + origin[0] * elem + (region[2] - 1) * slice +
	       (region[1] - 1) * row + (uint64_t)region[0] * elem;
}

/* Bytes per pixel of an image, from the image itself (0 when it is no image). */
static size_t ava_cl_image_elem(cl_mem image)
{
	size_t elem = 0;

	if (image == NULL || clGetImageInfo(image, CL_IMAGE_ELEMENT_SIZE, sizeof(elem), &elem, NULL) != CL_SUCCESS)
		return 0;
	return elem;
}

static int ava_cl_guest_image_limits(cl_mem image, size_t limits[3]);
static void ava_cl_image_limits(cl_mem_object_type type, size_t width, size_t height, size_t depth,
				size_t array_size, size_t limits[3]);

/* Whether origin + region lies inside the image (else the API refuses the transfer). */
static int ava_cl_image_fits(cl_mem image, const size_t *origin, const size_t *region)
{
	size_t limits[3] = {0, 0, 0};

	if (image == NULL || origin == NULL || region == NULL)
		return 0;
	if (ava_is_guest) {
		if (!ava_cl_guest_image_limits(image, limits))
			return 0;
	} else {
		cl_mem_object_type type = 0;
		size_t w = 0, h = 0, d = 0, a = 0;

		if (clGetMemObjectInfo(image, CL_MEM_TYPE, sizeof(type), &type, NULL) != CL_SUCCESS ||
		    clGetImageInfo(image, CL_IMAGE_WIDTH, sizeof(w), &w, NULL) != CL_SUCCESS ||
		    clGetImageInfo(image, CL_IMAGE_HEIGHT, sizeof(h), &h, NULL) != CL_SUCCESS ||
		    clGetImageInfo(image, CL_IMAGE_DEPTH, sizeof(d), &d, NULL) != CL_SUCCESS ||
		    clGetImageInfo(image, CL_IMAGE_ARRAY_SIZE, sizeof(a), &a, NULL) != CL_SUCCESS)
			return 0;
		ava_cl_image_limits(type, w, h, d, a, limits);
	}
	for (int i = 0; i < 3; ++i)
		if (origin[i] > limits[i] || region[i] > limits[i] - origin[i])
			return 0;
	return 1;
}

/* Host bytes of an image transfer; 0 when it would not touch host memory natively. */
static uint64_t ava_cl_image_span(cl_mem image, const size_t *origin, const size_t *region,
				  size_t row_pitch, size_t slice_pitch)
{
	static const size_t zero[3] = {0, 0, 0};
	size_t elem;

	if (!ava_cl_image_fits(image, origin, region))
		return 0;
	elem = ava_cl_image_elem(image);
	return elem ? ava_cl_rect_span(zero, region, elem, row_pitch, slice_pitch) : 0;
}

/* Bytes per pixel of an image format. */
static size_t ava_cl_format_elem(const cl_image_format *f)
{
	size_t channels, size;

	if (f == NULL)
		return 0;
	switch (f->image_channel_order) {
	case CL_R: case CL_A: case CL_INTENSITY: case CL_LUMINANCE: case CL_DEPTH: case CL_Rx:
		channels = 1;
		break;
	case CL_RG: case CL_RA: case CL_RGx:
		channels = 2;
		break;
	case CL_RGB: case CL_RGBx:
		channels = 3;
		break;
	default:
		channels = 4;
		break;
	}
	switch (f->image_channel_data_type) {
	case CL_SNORM_INT8: case CL_UNORM_INT8: case CL_SIGNED_INT8: case CL_UNSIGNED_INT8:
		size = 1;
		break;
	case CL_SNORM_INT16: case CL_UNORM_INT16: case CL_SIGNED_INT16: case CL_UNSIGNED_INT16:
	case CL_HALF_FLOAT:
		size = 2;
		break;
	case CL_UNORM_SHORT_565: case CL_UNORM_SHORT_555:
		return 2;
	case CL_UNORM_INT_101010: case CL_UNORM_INT_101010_2:
		return 4;
	default:
		size = 4;
		break;
	}
	return channels * size;
}

/* Host bytes an image creation reads from host_ptr (0 when it reads none). */
static uint64_t ava_cl_image_host_size(cl_mem_flags flags, const cl_image_format *format,
				       const cl_image_desc *desc)
{
	uint64_t elem = ava_cl_format_elem(format), row, slice, depth = 1;

	if (desc == NULL || !(flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR)))
		return 0;
	if (desc->image_type == CL_MEM_OBJECT_IMAGE1D_BUFFER)
		return 0;
	row = desc->image_row_pitch ? desc->image_row_pitch : desc->image_width * elem;
	switch (desc->image_type) {
	case CL_MEM_OBJECT_IMAGE1D:
		return row;
	case CL_MEM_OBJECT_IMAGE2D:
		return row * desc->image_height;
	case CL_MEM_OBJECT_IMAGE1D_ARRAY:
		slice = desc->image_slice_pitch ? desc->image_slice_pitch : row;
		return slice * desc->image_array_size;
	case CL_MEM_OBJECT_IMAGE2D_ARRAY:
		depth = desc->image_array_size;
		break;
	case CL_MEM_OBJECT_IMAGE3D:
		depth = desc->image_depth;
		break;
	default:
		return 0;
	}
	slice = desc->image_slice_pitch ? desc->image_slice_pitch : row * desc->image_height;
	return slice * depth;
}

/* Host bytes clCreateBuffer reads; absurd sizes are left to the API to refuse. */
#define AVA_CL_MAX_HOST_COPY (1ull << 36)
static uint64_t ava_cl_host_copy(cl_mem_flags flags, size_t size)
{
	if (!(flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR)) || size > AVA_CL_MAX_HOST_COPY)
		return 0;
	return size;
}

/*
 * Sizes of buffers, known on both sides without a round trip: the guest
 * remembers what it created, the worker asks the API. A transfer outside a
 * buffer (or to no buffer) carries no data: the API refuses it before it
 * would touch host memory, as natively, and the guest never reads past what
 * the program handed it.
 */
static int ava_cl_guest_mem_size(cl_mem mem, size_t *size);
static uint64_t ava_cl_span(cl_mem buffer, size_t offset, size_t size)
{
	size_t total = 0;

	if (buffer == NULL)
		return 0;
	if (ava_is_guest) {
		if (!ava_cl_guest_mem_size(buffer, &total))
			return 0;
	} else {
		cl_mem_object_type type = 0;

		if (clGetMemObjectInfo(buffer, CL_MEM_TYPE, sizeof(type), &type, NULL) != CL_SUCCESS ||
		    type != CL_MEM_OBJECT_BUFFER ||
		    clGetMemObjectInfo(buffer, CL_MEM_SIZE, sizeof(total), &total, NULL) != CL_SUCCESS)
			return 0;
	}
	return offset <= total && size <= total - offset ? size : 0;
}

/*
 * Host bytes of a rectangle transfer, or 0 when the buffer side does not fit
 * the buffer (the API refuses that without touching host memory).
 */
static uint64_t ava_cl_rect_io(cl_mem buffer, const size_t *buffer_origin,
			       const size_t *host_origin, const size_t *region,
			       size_t buffer_row_pitch, size_t buffer_slice_pitch,
			       size_t host_row_pitch, size_t host_slice_pitch)
{
	uint64_t inside = ava_cl_rect_span(buffer_origin, region, 1, buffer_row_pitch,
					   buffer_slice_pitch);

	if (inside == 0 || ava_cl_span(buffer, 0, inside) != inside)
		return 0;
	return ava_cl_rect_span(host_origin, region, 1, host_row_pitch, host_slice_pitch);
}

/* What the guest knows of each memory object it created. */
struct ava_cl_mem_info {
	uint64_t id;
	size_t size; /* buffers; 0 for images */
	void *host_ptr; /* CL_MEM_USE_HOST_PTR */
	uint32_t refs; /* the program's references, as the worker counts them */
	uint32_t gone; /* released for good: a tombstone for the probe chain */
	size_t image_limits[3]; /* images: how far origin + region may reach */
};
static pthread_mutex_t ava_cl_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ava_cl_mem_info *ava_cl_mems; /* open addressing, never shrinks */
static size_t ava_cl_mem_cap, ava_cl_mem_count;

static struct ava_cl_mem_info *ava_cl_mem_slot(uint64_t id)
{
	size_t i = (size_t)(id * 0x9e3779b97f4a7c15ull) & (ava_cl_mem_cap - 1);

	while (ava_cl_mems[i].id != 0 && ava_cl_mems[i].id != id)
		i = (i + 1) & (ava_cl_mem_cap - 1);
	/* Ids are never reused, so a released id's slot stays its tombstone. */
	return &ava_cl_mems[i];
}

static void ava_cl_remember_mem(cl_mem mem, size_t size, void *host_ptr)
{
	uint64_t id = (uint64_t)(uintptr_t)mem;
	struct ava_cl_mem_info *slot;

	if (id == 0)
		return;
	pthread_mutex_lock(&ava_cl_mem_lock);
	if ((ava_cl_mem_count + 1) * 2 > ava_cl_mem_cap) {
		size_t old_cap = ava_cl_mem_cap, cap = old_cap ? old_cap * 2 : 64;
		struct ava_cl_mem_info *old = ava_cl_mems, *grown = calloc(cap, sizeof(*grown));

		if (grown == NULL) {
			pthread_mutex_unlock(&ava_cl_mem_lock);
			return; /* transfers to it will then carry no data and fail */
		}
		ava_cl_mems = grown;
		ava_cl_mem_cap = cap;
		for (size_t i = 0; i < old_cap; ++i)
			if (old[i].id != 0 && !old[i].gone)
				*ava_cl_mem_slot(old[i].id) = old[i];
		free(old);
	}
	slot = ava_cl_mem_slot(id);
	if (slot->id == 0)
		ava_cl_mem_count++;
	slot->id = id;
	slot->size = size;
	slot->host_ptr = host_ptr;
	slot->refs = 1;
	slot->gone = 0;
	pthread_mutex_unlock(&ava_cl_mem_lock);
}

/* Region limits per dimension of an image of this type and size. */
static void ava_cl_image_limits(cl_mem_object_type type, size_t width, size_t height, size_t depth,
				size_t array_size, size_t limits[3])
{
	limits[0] = width;
	limits[1] = 1;
	limits[2] = 1;
	switch (type) {
	case CL_MEM_OBJECT_IMAGE1D_ARRAY:
		limits[1] = array_size;
		break;
	case CL_MEM_OBJECT_IMAGE2D:
		limits[1] = height;
		break;
	case CL_MEM_OBJECT_IMAGE2D_ARRAY:
		limits[1] = height;
		limits[2] = array_size;
		break;
	case CL_MEM_OBJECT_IMAGE3D:
		limits[1] = height;
		limits[2] = depth;
		break;
	default:
		break;
	}
}

static void ava_cl_remember_image(cl_mem image, cl_mem_object_type type, size_t width,
				  size_t height, size_t depth, size_t array_size)
{
	struct ava_cl_mem_info *slot;

	ava_cl_remember_mem(image, 0, NULL);
	pthread_mutex_lock(&ava_cl_mem_lock);
	if (ava_cl_mem_cap != 0) {
		slot = ava_cl_mem_slot((uint64_t)(uintptr_t)image);
		if (slot->id != 0)
			ava_cl_image_limits(type, width, height, depth, array_size,
					    slot->image_limits);
	}
	pthread_mutex_unlock(&ava_cl_mem_lock);
}

/* clRetainMemObject (+1) / clReleaseMemObject (-1) succeeded. */
static void ava_cl_mem_ref(cl_mem mem, int delta)
{
	pthread_mutex_lock(&ava_cl_mem_lock);
	if (ava_cl_mem_cap != 0 && mem != NULL) {
		struct ava_cl_mem_info *slot = ava_cl_mem_slot((uint64_t)(uintptr_t)mem);

		if (slot->id != 0 && !slot->gone) {
			slot->refs += delta;
			if (slot->refs == 0)
				slot->gone = 1;
		}
	}
	pthread_mutex_unlock(&ava_cl_mem_lock);
}

static int ava_cl_guest_mem(cl_mem mem, struct ava_cl_mem_info *out)
{
	int found = 0;

	pthread_mutex_lock(&ava_cl_mem_lock);
	if (ava_cl_mem_cap != 0 && mem != NULL) {
		struct ava_cl_mem_info *slot = ava_cl_mem_slot((uint64_t)(uintptr_t)mem);

		if (slot->id != 0 && !slot->gone) {
			*out = *slot;
			found = 1;
		}
	}
	pthread_mutex_unlock(&ava_cl_mem_lock);
	return found;
}

static int ava_cl_guest_image_limits(cl_mem image, size_t limits[3])
{
	struct ava_cl_mem_info info;

	if (!ava_cl_guest_mem(image, &info) || info.image_limits[0] == 0)
		return 0;
	memcpy(limits, info.image_limits, sizeof(info.image_limits));
	return 1;
}

static int ava_cl_guest_mem_size(cl_mem mem, size_t *size)
{
	struct ava_cl_mem_info info;

	if (!ava_cl_guest_mem(mem, &info))
		return 0;
	*size = info.size;
	return 1;
}

/* The worker's answer to an info query names objects: give the guest ids. */
#define AVA_CL_IDS_OUT(T, value, size)                                                     \
	do {                                                                               \
		uint64_t *ava_ids_ = (uint64_t *)(value);                                  \
		for (size_t ava_i_ = 0; ava_i_ < (size) / sizeof(T); ++ava_i_)             \
			ava_ids_[ava_i_] = ava_handle_id(T, (T)(uintptr_t)ava_ids_[ava_i_]); \
	} while (0)
ava_end_utility;

ava_worker_init_epilogue(ava_cl_worker_init());

/* ------------------------------------------------------------------------
 * Guest-only code: what OpenCL does with guest memory or arrays of pointers
 * ------------------------------------------------------------------------ */
ava_begin_replacement;
/*
 * A mapping is guest memory: filled by a read at map time, written back at
 * unmap when it was mapped for writing. Buffers created with
 * CL_MEM_USE_HOST_PTR map onto the program's own memory, as natively.
 */
struct ava_cl_mapping {
	struct ava_cl_mapping *next;
	cl_mem mem;
	void *ptr;
	int owned;
	int image;
	cl_map_flags flags;
	size_t offset, size;
	size_t origin[3], region[3], row_pitch, slice_pitch;
};
static pthread_mutex_t ava_cl_map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ava_cl_mapping *ava_cl_maps;

static void ava_cl_add_mapping(struct ava_cl_mapping *m)
{
	pthread_mutex_lock(&ava_cl_map_lock);
	m->next = ava_cl_maps;
	ava_cl_maps = m;
	pthread_mutex_unlock(&ava_cl_map_lock);
}

static struct ava_cl_mapping *ava_cl_take_mapping(cl_mem mem, void *ptr)
{
	struct ava_cl_mapping **p, *m = NULL;

	pthread_mutex_lock(&ava_cl_map_lock);
	for (p = &ava_cl_maps; *p != NULL; p = &(*p)->next) {
		if ((*p)->mem == mem && (*p)->ptr == ptr) {
			m = *p;
			*p = m->next;
			break;
		}
	}
	pthread_mutex_unlock(&ava_cl_map_lock);
	return m;
}

static void *ava_cl_map_memory(cl_mem mem, size_t offset, size_t size, int *owned)
{
	struct ava_cl_mem_info info;

	if (ava_cl_guest_mem(mem, &info) && info.host_ptr != NULL) {
		*owned = 0;
		return (char *)info.host_ptr + offset;
	}
	*owned = 1;
	/* OpenCL data types go up to 128 bytes (long16, double16). */
	return aligned_alloc(128, (size + 127) / 128 * 128 + 128);
}

void *clEnqueueMapBuffer(cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_map,
			 cl_map_flags map_flags, size_t offset, size_t size,
			 cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			 cl_event *event, cl_int *errcode_ret)
{
	struct ava_cl_mapping *m = calloc(1, sizeof(*m));
	cl_int rc;

	(void)blocking_map; /* the read below completes before we return */
	if (m == NULL) {
		if (errcode_ret)
			*errcode_ret = CL_OUT_OF_HOST_MEMORY;
		return NULL;
	}
	m->ptr = ava_cl_map_memory(buffer, offset, size, &m->owned);
	if (m->ptr == NULL) {
		free(m);
		if (errcode_ret)
			*errcode_ret = CL_OUT_OF_HOST_MEMORY;
		return NULL;
	}
	rc = ava_cl_map_buffer(command_queue, buffer, map_flags, offset, size, m->ptr,
			       num_events_in_wait_list, event_wait_list, event);
	if (rc == CL_SUCCESS && map_flags == 0)
		map_flags = CL_MAP_READ | CL_MAP_WRITE;
	if (rc != CL_SUCCESS) {
		if (m->owned)
			free(m->ptr);
		free(m);
		if (errcode_ret)
			*errcode_ret = rc;
		return NULL;
	}
	m->mem = buffer;
	m->flags = map_flags;
	m->offset = offset;
	m->size = size;
	ava_cl_add_mapping(m);
	if (errcode_ret)
		*errcode_ret = CL_SUCCESS;
	return m->ptr;
}

void *clEnqueueMapImage(cl_command_queue command_queue, cl_mem image, cl_bool blocking_map,
			cl_map_flags map_flags, const size_t *origin, const size_t *region,
			size_t *image_row_pitch, size_t *image_slice_pitch,
			cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			cl_event *event, cl_int *errcode_ret)
{
	struct ava_cl_mapping *m;
	cl_mem_object_type type = 0;
	size_t elem = ava_cl_image_elem(image);
	cl_int rc;

	(void)blocking_map;
	if (elem == 0 || origin == NULL || region == NULL || image_row_pitch == NULL) {
		if (errcode_ret)
			*errcode_ret = elem == 0 ? CL_INVALID_MEM_OBJECT : CL_INVALID_VALUE;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		if (errcode_ret)
			*errcode_ret = CL_OUT_OF_HOST_MEMORY;
		return NULL;
	}
	clGetMemObjectInfo(image, CL_MEM_TYPE, sizeof(type), &type, NULL);
	m->image = 1;
	memcpy(m->origin, origin, sizeof(m->origin));
	memcpy(m->region, region, sizeof(m->region));
	m->row_pitch = region[0] * elem;
	m->slice_pitch = type == CL_MEM_OBJECT_IMAGE3D || type == CL_MEM_OBJECT_IMAGE2D_ARRAY
				 ? m->row_pitch * region[1]
			 : type == CL_MEM_OBJECT_IMAGE1D_ARRAY ? m->row_pitch
							       : 0;
	m->size = ava_cl_rect_span((const size_t[3]){0, 0, 0}, region, elem, m->row_pitch,
				   m->slice_pitch);
	m->owned = 1;
	m->ptr = aligned_alloc(128, (m->size + 127) / 128 * 128 + 128);
	if (m->ptr == NULL) {
		free(m);
		if (errcode_ret)
			*errcode_ret = CL_OUT_OF_HOST_MEMORY;
		return NULL;
	}
	rc = clEnqueueReadImage(command_queue, image, CL_TRUE, origin, region, m->row_pitch,
				m->slice_pitch, m->ptr, num_events_in_wait_list, event_wait_list,
				event);
	if (rc != CL_SUCCESS) {
		free(m->ptr);
		free(m);
		if (errcode_ret)
			*errcode_ret = rc;
		return NULL;
	}
	m->mem = image;
	m->flags = map_flags ? map_flags : CL_MAP_READ | CL_MAP_WRITE;
	*image_row_pitch = m->row_pitch;
	if (image_slice_pitch)
		*image_slice_pitch = m->slice_pitch;
	ava_cl_add_mapping(m);
	if (errcode_ret)
		*errcode_ret = CL_SUCCESS;
	return m->ptr;
}

cl_int clEnqueueUnmapMemObject(cl_command_queue command_queue, cl_mem memobj, void *mapped_ptr,
			       cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			       cl_event *event)
{
	struct ava_cl_mapping *m = ava_cl_take_mapping(memobj, mapped_ptr);
	cl_int rc;

	if (m == NULL)
		return memobj == NULL ? CL_INVALID_MEM_OBJECT : CL_INVALID_VALUE;
	if (m->flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)) {
		/* The data travels with the call, so the memory can go right after. */
		if (m->image)
			rc = clEnqueueWriteImage(command_queue, memobj, CL_FALSE, m->origin, m->region,
						 m->row_pitch, m->slice_pitch, m->ptr,
						 num_events_in_wait_list, event_wait_list, event);
		else
			rc = ava_cl_unmap_buffer(command_queue, memobj, m->offset, m->size, 1, m->ptr,
						 num_events_in_wait_list, event_wait_list, event);
	} else if (m->image) {
		rc = clEnqueueMarkerWithWaitList(command_queue, num_events_in_wait_list,
						 event_wait_list, event);
	} else {
		rc = ava_cl_unmap_buffer(command_queue, memobj, m->offset, m->size, 0, NULL,
					 num_events_in_wait_list, event_wait_list, event);
	}
	if (rc != CL_SUCCESS) {
		ava_cl_add_mapping(m); /* still mapped, as natively */
		return rc;
	}
	if (m->owned)
		free(m->ptr);
	free(m);
	return CL_SUCCESS;
}

cl_program clCreateProgramWithSource(cl_context context, cl_uint count, const char **strings,
				     const size_t *lengths, cl_int *errcode_ret)
{
	size_t total = 0, at = 0;
	char *joined;
	cl_program program;

	/* Malformed input goes through as no source: the API says what is wrong. */
	if (count == 0 || strings == NULL)
		return ava_cl_create_program_with_source(context, NULL, 0, errcode_ret);
	for (cl_uint i = 0; i < count; ++i) {
		if (strings[i] == NULL)
			return ava_cl_create_program_with_source(context, NULL, 0, errcode_ret);
		total += lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
	}
	joined = malloc(total + 1);
	if (joined == NULL) {
		if (errcode_ret)
			*errcode_ret = CL_OUT_OF_HOST_MEMORY;
		return NULL;
	}
	for (cl_uint i = 0; i < count; ++i) {
		size_t n = lengths && lengths[i] ? lengths[i] : strlen(strings[i]);

		memcpy(joined + at, strings[i], n);
		at += n;
	}
	joined[total] = '\0';
	program = ava_cl_create_program_with_source(context, joined, total, errcode_ret);
	free(joined);
	return program;
}

cl_program clCreateProgramWithBinary(cl_context context, cl_uint num_devices,
				     const cl_device_id *device_list, const size_t *lengths,
				     const unsigned char **binaries, cl_int *binary_status,
				     cl_int *errcode_ret)
{
	size_t total = 0, at = 0;
	unsigned char *flat = NULL;
	cl_program program;
	int complete = lengths != NULL && binaries != NULL && num_devices != 0;

	for (cl_uint i = 0; complete && i < num_devices; ++i) {
		if (binaries[i] == NULL || lengths[i] == 0)
			complete = 0;
		else
			total += lengths[i];
	}
	if (complete) {
		flat = malloc(total ? total : 1);
		if (flat == NULL) {
			if (errcode_ret)
				*errcode_ret = CL_OUT_OF_HOST_MEMORY;
			return NULL;
		}
		for (cl_uint i = 0; i < num_devices; ++i) {
			memcpy(flat + at, binaries[i], lengths[i]);
			at += lengths[i];
		}
	}
	/* Without complete binaries the worker passes none: the API reports it. */
	program = ava_cl_create_program_with_binary(context, num_devices, device_list,
						    complete ? lengths : NULL, flat, complete ? total : 0,
						    binary_status, errcode_ret);
	free(flat);
	return program;
}

cl_int clGetProgramInfo(cl_program program, cl_program_info param_name, size_t param_value_size,
			void *param_value, size_t *param_value_size_ret)
{
	cl_uint ndev = 0;
	size_t *sizes, total = 0, at = 0;
	unsigned char *flat, **out = param_value;
	cl_int rc;

	if (param_name != CL_PROGRAM_BINARIES || param_value == NULL)
		return ava_cl_get_program_info(program, param_name, param_value_size, param_value,
					       param_value_size_ret);
	rc = ava_cl_get_program_info(program, CL_PROGRAM_NUM_DEVICES, sizeof(ndev), &ndev, NULL);
	if (rc != CL_SUCCESS)
		return rc;
	if (param_value_size < ndev * sizeof(unsigned char *))
		return CL_INVALID_VALUE;
	sizes = calloc(ndev ? ndev : 1, sizeof(*sizes));
	if (sizes == NULL)
		return CL_OUT_OF_HOST_MEMORY;
	rc = ava_cl_get_program_info(program, CL_PROGRAM_BINARY_SIZES, ndev * sizeof(*sizes), sizes,
				     NULL);
	for (cl_uint i = 0; rc == CL_SUCCESS && i < ndev; ++i)
		total += sizes[i];
	flat = rc == CL_SUCCESS ? malloc(total ? total : 1) : NULL;
	if (rc == CL_SUCCESS && flat == NULL)
		rc = CL_OUT_OF_HOST_MEMORY;
	if (rc == CL_SUCCESS)
		rc = ava_cl_get_program_binaries(program, total, flat);
	for (cl_uint i = 0; rc == CL_SUCCESS && i < ndev; ++i) {
		if (out[i] != NULL)
			memcpy(out[i], flat + at, sizes[i]);
		at += sizes[i];
	}
	if (rc == CL_SUCCESS && param_value_size_ret)
		*param_value_size_ret = ndev * sizeof(unsigned char *);
	free(flat);
	free(sizes);
	return rc;
}

cl_int clCompileProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
			const char *options, cl_uint num_input_headers,
			const cl_program *input_headers, const char **header_include_names,
			void(CL_CALLBACK *pfn_notify)(cl_program program, void *user_data),
			void *user_data)
{
	size_t total = 0, at = 0;
	char *names = NULL;
	cl_int rc;

	if (num_input_headers != 0 && header_include_names != NULL) {
		for (cl_uint i = 0; i < num_input_headers; ++i) {
			if (header_include_names[i] == NULL)
				return ava_cl_compile_program(program, num_devices, device_list, options,
							      num_input_headers, input_headers, NULL, 0,
							      pfn_notify, user_data);
			total += strlen(header_include_names[i]) + 1;
		}
		names = malloc(total);
		if (names == NULL)
			return CL_OUT_OF_HOST_MEMORY;
		for (cl_uint i = 0; i < num_input_headers; ++i) {
			size_t n = strlen(header_include_names[i]) + 1;

			memcpy(names + at, header_include_names[i], n);
			at += n;
		}
	}
	rc = ava_cl_compile_program(program, num_devices, device_list, options, num_input_headers,
				    input_headers, names, total, pfn_notify, user_data);
	free(names);
	return rc;
}

/*
 * Extension functions: the guest's own stand-ins for the ones ava remotes
 * (the worker's addresses would mean nothing here); NULL, as OpenCL answers
 * an unknown name, for the rest.
 */
static cl_int ava_cl_guest_set_content_size_buffer(cl_mem buffer, cl_mem content_size_buffer)
{
	return ava_cl_set_content_size_buffer(buffer, content_size_buffer);
}

void *clGetExtensionFunctionAddress(const char *func_name)
{
	if (func_name != NULL && strcmp(func_name, "clSetContentSizeBufferPoCL") == 0)
		return (void *)ava_cl_guest_set_content_size_buffer;
	return NULL;
}

void *clGetExtensionFunctionAddressForPlatform(cl_platform_id platform, const char *func_name)
{
	(void)platform;
	return clGetExtensionFunctionAddress(func_name);
}
ava_end_replacement;

/* ------------------------------------------------------------------------
 * Callbacks
 * ------------------------------------------------------------------------ */
ava_callback_decl void ava_cl_context_notify(const char *errinfo, const void *private_info,
					     size_t cb, void *user_data)
{
	ava_argument(errinfo) { ava_in; ava_buffer(strlen(errinfo) + 1); }
	ava_argument(private_info) { ava_in; ava_buffer(cb); }
	ava_argument(user_data) { ava_userdata; }
}

ava_callback_decl void ava_cl_program_notify(cl_program program, void *user_data)
{
	ava_argument(user_data) { ava_userdata; }
}

ava_callback_decl void ava_cl_event_notify(cl_event event, cl_int event_command_status,
					   void *user_data)
{
	ava_argument(user_data) { ava_userdata; }
}

ava_callback_decl void ava_cl_mem_notify(cl_mem memobj, void *user_data)
{
	ava_argument(user_data) { ava_userdata; }
}

ava_callback_decl void ava_cl_context_destructor(cl_context context, void *user_data)
{
	ava_argument(user_data) { ava_userdata; }
}

/* ------------------------------------------------------------------------
 * Platforms and devices
 * ------------------------------------------------------------------------ */
cl_int clGetPlatformIDs(cl_uint num_entries, cl_platform_id *platforms, cl_uint *num_platforms)
{
	ava_argument(platforms) { ava_out; ava_buffer(num_entries); }
	ava_argument(num_platforms) { ava_out; ava_buffer(1); }
}

/*
 * An unknown platform id reaches the worker as NULL, which OpenCL takes as
 * "the default platform": it must be refused as the bad handle it is.
 */
cl_int clGetPlatformInfo(cl_platform_id platform, cl_platform_info param_name,
			 size_t param_value_size, void *param_value, size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	if (ava_is_worker && ava_handle_invalid(cl_platform_id))
		return CL_INVALID_PLATFORM;
	return ava_execute();
}

cl_int clGetDeviceIDs(cl_platform_id platform, cl_device_type device_type, cl_uint num_entries,
		      cl_device_id *devices, cl_uint *num_devices)
{
	ava_argument(devices) { ava_out; ava_buffer(num_entries); }
	ava_argument(num_devices) { ava_out; ava_buffer(1); }
	if (ava_is_worker && ava_handle_invalid(cl_platform_id))
		return CL_INVALID_PLATFORM;
	return ava_execute();
}

cl_int clGetDeviceInfo(cl_device_id device, cl_device_info param_name, size_t param_value_size,
		       void *param_value, size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	cl_int ret = ava_execute();
	if (ava_is_worker && ret == CL_SUCCESS && param_value != NULL) {
		if (param_name == CL_DEVICE_PLATFORM)
			AVA_CL_IDS_OUT(cl_platform_id, param_value, param_value_size);
		else if (param_name == CL_DEVICE_PARENT_DEVICE)
			AVA_CL_IDS_OUT(cl_device_id, param_value, param_value_size);
	}
	return ret;
}

cl_int clCreateSubDevices(cl_device_id in_device, const cl_device_partition_property *properties,
			  cl_uint num_devices, cl_device_id *out_devices, cl_uint *num_devices_ret)
{
	ava_argument(properties) { ava_in; ava_buffer(ava_cl_partition_count(properties)); }
	ava_argument(out_devices) {
		ava_out;
		ava_buffer(num_devices);
		ava_element { ava_allocates; }
	}
	ava_argument(num_devices_ret) { ava_out; ava_buffer(1); }
}

cl_int clRetainDevice(cl_device_id device)
{
	ava_argument(device) { ava_retains; }
}

cl_int clReleaseDevice(cl_device_id device)
{
	ava_argument(device) { ava_deallocates; }
}

cl_int clGetDeviceAndHostTimer(cl_device_id device, cl_ulong *device_timestamp,
			       cl_ulong *host_timestamp)
{
	ava_argument(device_timestamp) { ava_out; ava_buffer(1); }
	ava_argument(host_timestamp) { ava_out; ava_buffer(1); }
}

cl_int clGetHostTimer(cl_device_id device, cl_ulong *host_timestamp)
{
	ava_argument(host_timestamp) { ava_out; ava_buffer(1); }
}

/* ------------------------------------------------------------------------
 * Contexts
 * ------------------------------------------------------------------------ */
/* CL_CONTEXT_PLATFORM values are handles: the worker passes the objects. */
ava_begin_utility;
/* *bad is set when a CL_CONTEXT_PLATFORM value names no platform of this guest. */
static const cl_context_properties *ava_cl_context_props_in(const cl_context_properties *props,
							    cl_context_properties *copy,
							    size_t capacity, int *bad)
{
	size_t n = 0;

	*bad = 0;
	if (!ava_is_worker || props == NULL)
		return props;
	while (props[n] != 0 && n + 2 < capacity) {
		copy[n] = props[n];
		copy[n + 1] = props[n + 1];
		if (props[n] == CL_CONTEXT_PLATFORM) {
			copy[n + 1] = (cl_context_properties)ava_handle_object(cl_platform_id,
									       props[n + 1]);
			if (copy[n + 1] == 0 && props[n + 1] != 0)
				*bad = 1;
		}
		n += 2;
	}
	copy[n] = 0;
	return copy;
}

static void ava_cl_context_props_out(cl_context_properties *props, size_t size)
{
	for (size_t n = 0; ava_is_worker && props != NULL && n + 1 < size / sizeof(*props) &&
			   props[n] != 0;
	     n += 2) {
		if (props[n] == CL_CONTEXT_PLATFORM)
			props[n + 1] = (cl_context_properties)ava_handle_id(
				cl_platform_id, (cl_platform_id)props[n + 1]);
	}
}
ava_end_utility;

cl_context clCreateContext(const cl_context_properties *properties, cl_uint num_devices,
			   const cl_device_id *devices,
			   void(CL_CALLBACK *pfn_notify)(const char *errinfo,
							 const void *private_info, size_t cb,
							 void *user_data),
			   void *user_data, cl_int *errcode_ret)
{
	ava_argument(properties) { ava_in; ava_buffer(ava_cl_props_count(properties)); }
	ava_argument(devices) { ava_in; ava_buffer(num_devices); }
	ava_argument(pfn_notify) {
		ava_callback(ava_cl_context_notify);
		ava_lifetime_static;
	}
	ava_argument(user_data) { ava_userdata; }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	cl_context_properties ava_props[AVA_CL_MAX_PROPERTIES + 1];
	int ava_bad_platform;
	properties = ava_cl_context_props_in(properties, ava_props, AVA_CL_MAX_PROPERTIES + 1,
					     &ava_bad_platform);
	if (ava_bad_platform) {
		if (errcode_ret)
			*errcode_ret = CL_INVALID_PLATFORM;
		return NULL;
	}
	return ava_execute();
}

cl_context clCreateContextFromType(const cl_context_properties *properties,
				   cl_device_type device_type,
				   void(CL_CALLBACK *pfn_notify)(const char *errinfo,
								 const void *private_info,
								 size_t cb, void *user_data),
				   void *user_data, cl_int *errcode_ret)
{
	ava_argument(properties) { ava_in; ava_buffer(ava_cl_props_count(properties)); }
	ava_argument(pfn_notify) {
		ava_callback(ava_cl_context_notify);
		ava_lifetime_static;
	}
	ava_argument(user_data) { ava_userdata; }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	cl_context_properties ava_props[AVA_CL_MAX_PROPERTIES + 1];
	int ava_bad_platform;
	properties = ava_cl_context_props_in(properties, ava_props, AVA_CL_MAX_PROPERTIES + 1,
					     &ava_bad_platform);
	if (ava_bad_platform) {
		if (errcode_ret)
			*errcode_ret = CL_INVALID_PLATFORM;
		return NULL;
	}
	return ava_execute();
}

cl_int clRetainContext(cl_context context)
{
	ava_argument(context) { ava_retains; }
}

cl_int clReleaseContext(cl_context context)
{
	ava_argument(context) { ava_deallocates; }
}

cl_int clGetContextInfo(cl_context context, cl_context_info param_name, size_t param_value_size,
			void *param_value, size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	cl_int ret = ava_execute();
	if (ava_is_worker && ret == CL_SUCCESS && param_value != NULL) {
		if (param_name == CL_CONTEXT_DEVICES)
			AVA_CL_IDS_OUT(cl_device_id, param_value, param_value_size);
		else if (param_name == CL_CONTEXT_PROPERTIES)
			ava_cl_context_props_out(param_value, param_value_size);
	}
	return ret;
}

cl_int clSetContextDestructorCallback(cl_context context,
				      void(CL_CALLBACK *pfn_notify)(cl_context context,
								    void *user_data),
				      void *user_data)
{
	ava_argument(pfn_notify) {
		ava_callback(ava_cl_context_destructor);
		ava_lifetime_static;
	}
	ava_argument(user_data) { ava_userdata; }
}

/* ------------------------------------------------------------------------
 * Command queues
 * ------------------------------------------------------------------------ */
/* PoCL exits on an on-device queue it cannot make: refuse it as OpenCL says. */
ava_begin_utility;
static int ava_cl_device_queue_unsupported(cl_device_id device, cl_command_queue_properties props)
{
	cl_command_queue_properties on_device = 0;

	if (!ava_is_worker || !(props & CL_QUEUE_ON_DEVICE) || device == NULL)
		return 0;
	if (clGetDeviceInfo(device, CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES, sizeof(on_device),
			    &on_device, NULL) != CL_SUCCESS)
		return 1;
	return on_device == 0;
}

static cl_command_queue_properties ava_cl_queue_props(const cl_queue_properties *p)
{
	for (size_t n = 0; p != NULL && n < AVA_CL_MAX_PROPERTIES && p[n] != 0; n += 2)
		if (p[n] == CL_QUEUE_PROPERTIES)
			return p[n + 1];
	return 0;
}
ava_end_utility;

cl_command_queue clCreateCommandQueue(cl_context context, cl_device_id device,
				      cl_command_queue_properties properties, cl_int *errcode_ret)
{
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	if (ava_cl_device_queue_unsupported(device, properties)) {
		if (errcode_ret)
			*errcode_ret = CL_INVALID_QUEUE_PROPERTIES;
		return NULL;
	}
	return ava_execute();
}


cl_command_queue clCreateCommandQueueWithProperties(cl_context context, cl_device_id device,
						    const cl_queue_properties *properties,
						    cl_int *errcode_ret)
{
	ava_argument(properties) { ava_in; ava_buffer(ava_cl_props_count(properties)); }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	if (ava_cl_device_queue_unsupported(device, ava_cl_queue_props(properties))) {
		if (errcode_ret)
			*errcode_ret = CL_INVALID_QUEUE_PROPERTIES;
		return NULL;
	}
	return ava_execute();
}

cl_int clSetDefaultDeviceCommandQueue(cl_context context, cl_device_id device,
				      cl_command_queue command_queue)
{
}

cl_int clRetainCommandQueue(cl_command_queue command_queue)
{
	ava_argument(command_queue) { ava_retains; }
}

cl_int clReleaseCommandQueue(cl_command_queue command_queue)
{
	ava_argument(command_queue) { ava_deallocates; }
}

cl_int clGetCommandQueueInfo(cl_command_queue command_queue, cl_command_queue_info param_name,
			     size_t param_value_size, void *param_value,
			     size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	cl_int ret = ava_execute();
	if (ava_is_worker && ret == CL_SUCCESS && param_value != NULL) {
		if (param_name == CL_QUEUE_CONTEXT)
			AVA_CL_IDS_OUT(cl_context, param_value, param_value_size);
		else if (param_name == CL_QUEUE_DEVICE)
			AVA_CL_IDS_OUT(cl_device_id, param_value, param_value_size);
		else if (param_name == CL_QUEUE_DEVICE_DEFAULT)
			AVA_CL_IDS_OUT(cl_command_queue, param_value, param_value_size);
	}
	return ret;
}

/* Removed in OpenCL 1.1; PoCL has no such entry (ocl-icd would jump to NULL). */
cl_int clSetCommandQueueProperty(cl_command_queue command_queue,
				 cl_command_queue_properties properties, cl_bool enable,
				 cl_command_queue_properties *old_properties)
{
	ava_unsupported;
	ava_error(CL_INVALID_OPERATION);
}

/* Sent without waiting: commands already queued start while the guest goes on. */
cl_int clFlush(cl_command_queue command_queue)
{
	ava_async;
	ava_flush;
}

cl_int clFinish(cl_command_queue command_queue)
{
}

/* ------------------------------------------------------------------------
 * Memory objects
 * ------------------------------------------------------------------------ */
/*
 * The worker's copy of host_ptr lives only as long as the call, so it can
 * never be the buffer's storage: CL_MEM_USE_HOST_PTR becomes a copy there,
 * and the guest maps such buffers onto the program's memory itself.
 */
ava_begin_utility;
static cl_mem_flags ava_cl_worker_flags(cl_mem_flags flags)
{
	if (ava_is_worker && (flags & CL_MEM_USE_HOST_PTR) &&
	    !(flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR)))
		return (flags & ~(cl_mem_flags)CL_MEM_USE_HOST_PTR) | CL_MEM_COPY_HOST_PTR;
	return flags;
}
ava_end_utility;

cl_mem clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void *host_ptr,
		      cl_int *errcode_ret)
{
	ava_argument(host_ptr) { ava_in; ava_buffer(ava_cl_host_copy(flags, size)); }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	cl_mem_flags ava_given = flags;
	flags = ava_cl_worker_flags(flags);
	cl_mem ret = ava_execute();
	if (ava_is_guest && ret != NULL)
		ava_cl_remember_mem(ret, size, (ava_given & CL_MEM_USE_HOST_PTR) ? host_ptr : NULL);
	return ret;
}

cl_mem clCreateBufferWithProperties(cl_context context, const cl_mem_properties *properties,
				    cl_mem_flags flags, size_t size, void *host_ptr,
				    cl_int *errcode_ret)
{
	ava_argument(properties) { ava_in; ava_buffer(ava_cl_props_count(properties)); }
	ava_argument(host_ptr) { ava_in; ava_buffer(ava_cl_host_copy(flags, size)); }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	cl_mem_flags ava_given = flags;
	flags = ava_cl_worker_flags(flags);
	cl_mem ret = ava_execute();
	if (ava_is_guest && ret != NULL)
		ava_cl_remember_mem(ret, size, (ava_given & CL_MEM_USE_HOST_PTR) ? host_ptr : NULL);
	return ret;
}

cl_mem clCreateSubBuffer(cl_mem buffer, cl_mem_flags flags,
			 cl_buffer_create_type buffer_create_type, const void *buffer_create_info,
			 cl_int *errcode_ret)
{
	ava_argument(buffer_create_info) { ava_in; ava_buffer(sizeof(cl_buffer_region)); }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	cl_mem ret = ava_execute();
	if (ava_is_guest && ret != NULL) {
		const cl_buffer_region *r = buffer_create_info;
		struct ava_cl_mem_info parent;
		void *host = NULL;

		if (ava_cl_guest_mem(buffer, &parent) && parent.host_ptr != NULL)
			host = (char *)parent.host_ptr + r->origin;
		ava_cl_remember_mem(ret, r->size, host);
	}
	return ret;
}

cl_int clRetainMemObject(cl_mem memobj)
{
	ava_argument(memobj) { ava_retains; }
	cl_int ret = ava_execute();
	if (ava_is_guest && ret == CL_SUCCESS)
		ava_cl_mem_ref(memobj, 1);
	return ret;
}

cl_int clReleaseMemObject(cl_mem memobj)
{
	ava_argument(memobj) { ava_deallocates; }
	cl_int ret = ava_execute();
	if (ava_is_guest && ret == CL_SUCCESS)
		ava_cl_mem_ref(memobj, -1);
	return ret;
}

cl_int clGetMemObjectInfo(cl_mem memobj, cl_mem_info param_name, size_t param_value_size,
			  void *param_value, size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	cl_int ret = ava_execute();
	if (ret != CL_SUCCESS || param_value == NULL)
		return ret;
	if (ava_is_worker && param_name == CL_MEM_CONTEXT)
		AVA_CL_IDS_OUT(cl_context, param_value, param_value_size);
	else if (ava_is_worker && param_name == CL_MEM_ASSOCIATED_MEMOBJECT)
		AVA_CL_IDS_OUT(cl_mem, param_value, param_value_size);
	else if (param_name == CL_MEM_HOST_PTR && param_value_size >= sizeof(void *)) {
		/* The program's own pointer, never the worker's. */
		struct ava_cl_mem_info info;

		memset(param_value, 0, sizeof(void *));
		if (ava_is_guest && ava_cl_guest_mem(memobj, &info))
			memcpy(param_value, &info.host_ptr, sizeof(void *));
	} else if (param_name == CL_MEM_FLAGS && param_value_size >= sizeof(cl_mem_flags) &&
		   ava_is_guest) {
		struct ava_cl_mem_info info;
		cl_mem_flags f;

		memcpy(&f, param_value, sizeof(f));
		if (ava_cl_guest_mem(memobj, &info) && info.host_ptr != NULL &&
		    (f & CL_MEM_COPY_HOST_PTR)) {
			f = (f & ~(cl_mem_flags)CL_MEM_COPY_HOST_PTR) | CL_MEM_USE_HOST_PTR;
			memcpy(param_value, &f, sizeof(f));
		}
	}
	return ret;
}

cl_int clSetMemObjectDestructorCallback(cl_mem memobj,
					void(CL_CALLBACK *pfn_notify)(cl_mem memobj,
								      void *user_data),
					void *user_data)
{
	ava_argument(pfn_notify) {
		ava_callback(ava_cl_mem_notify);
		ava_lifetime_static;
	}
	ava_argument(user_data) { ava_userdata; }
}

cl_mem clCreatePipe(cl_context context, cl_mem_flags flags, cl_uint pipe_packet_size,
		    cl_uint pipe_max_packets, const cl_pipe_properties *properties,
		    cl_int *errcode_ret)
{
	ava_argument(properties) { ava_in; ava_buffer(ava_cl_props_count(properties)); }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
}

cl_int clGetPipeInfo(cl_mem pipe, cl_pipe_info param_name, size_t param_value_size,
		     void *param_value, size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
}

/* ------------------------------------------------------------------------
 * Images and samplers
 * ------------------------------------------------------------------------ */
/* cl_image_desc names a buffer for 1D-buffer and 2D-from-buffer images. */
ava_begin_utility;
static const cl_image_desc *ava_cl_image_desc_in(const cl_image_desc *desc, cl_image_desc *copy)
{
	if (!ava_is_worker || desc == NULL)
		return desc;
	*copy = *desc;
	copy->mem_object = ava_handle_object(cl_mem, (uintptr_t)desc->mem_object);
	return copy;
}
ava_end_utility;

cl_mem clCreateImage(cl_context context, cl_mem_flags flags, const cl_image_format *image_format,
		     const cl_image_desc *image_desc, void *host_ptr, cl_int *errcode_ret)
{
	ava_argument(image_format) { ava_in; ava_buffer(1); }
	ava_argument(image_desc) { ava_in; ava_buffer(1); }
	ava_argument(host_ptr) {
		ava_in;
		ava_buffer(ava_cl_image_host_size(flags, image_format, image_desc));
	}
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	cl_image_desc ava_desc;
	const cl_image_desc *ava_given = image_desc;
	image_desc = ava_cl_image_desc_in(image_desc, &ava_desc);
	flags = ava_cl_worker_flags(flags);
	cl_mem ret = ava_execute();
	if (ava_is_guest && ret != NULL)
		ava_cl_remember_image(ret, ava_given->image_type, ava_given->image_width,
				      ava_given->image_height, ava_given->image_depth,
				      ava_given->image_array_size);
	return ret;
}

cl_mem clCreateImageWithProperties(cl_context context, const cl_mem_properties *properties,
				   cl_mem_flags flags, const cl_image_format *image_format,
				   const cl_image_desc *image_desc, void *host_ptr,
				   cl_int *errcode_ret)
{
	ava_argument(properties) { ava_in; ava_buffer(ava_cl_props_count(properties)); }
	ava_argument(image_format) { ava_in; ava_buffer(1); }
	ava_argument(image_desc) { ava_in; ava_buffer(1); }
	ava_argument(host_ptr) {
		ava_in;
		ava_buffer(ava_cl_image_host_size(flags, image_format, image_desc));
	}
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	cl_image_desc ava_desc;
	const cl_image_desc *ava_given = image_desc;
	image_desc = ava_cl_image_desc_in(image_desc, &ava_desc);
	flags = ava_cl_worker_flags(flags);
	cl_mem ret = ava_execute();
	if (ava_is_guest && ret != NULL)
		ava_cl_remember_image(ret, ava_given->image_type, ava_given->image_width,
				      ava_given->image_height, ava_given->image_depth,
				      ava_given->image_array_size);
	return ret;
}

cl_mem clCreateImage2D(cl_context context, cl_mem_flags flags, const cl_image_format *image_format,
		       size_t image_width, size_t image_height, size_t image_row_pitch,
		       void *host_ptr, cl_int *errcode_ret)
{
	ava_argument(image_format) { ava_in; ava_buffer(1); }
	ava_argument(host_ptr) {
		ava_in;
		ava_buffer((flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR))
				   ? (image_row_pitch ? image_row_pitch
						      : image_width * ava_cl_format_elem(image_format)) *
					     image_height
				   : 0);
	}
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	flags = ava_cl_worker_flags(flags);
	cl_mem ret = ava_execute();
	if (ava_is_guest && ret != NULL)
		ava_cl_remember_image(ret, CL_MEM_OBJECT_IMAGE2D, image_width, image_height, 1, 1);
	return ret;
}

cl_mem clCreateImage3D(cl_context context, cl_mem_flags flags, const cl_image_format *image_format,
		       size_t image_width, size_t image_height, size_t image_depth,
		       size_t image_row_pitch, size_t image_slice_pitch, void *host_ptr,
		       cl_int *errcode_ret)
{
	ava_argument(image_format) { ava_in; ava_buffer(1); }
	ava_argument(host_ptr) {
		ava_in;
		ava_buffer((flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR))
				   ? (image_slice_pitch
					      ? image_slice_pitch
					      : (image_row_pitch
							 ? image_row_pitch
							 : image_width * ava_cl_format_elem(image_format)) *
							image_height) *
					     image_depth
				   : 0);
	}
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	flags = ava_cl_worker_flags(flags);
	cl_mem ret = ava_execute();
	if (ava_is_guest && ret != NULL)
		ava_cl_remember_image(ret, CL_MEM_OBJECT_IMAGE3D, image_width, image_height,
				      image_depth, 1);
	return ret;
}

cl_int clGetSupportedImageFormats(cl_context context, cl_mem_flags flags,
				  cl_mem_object_type image_type, cl_uint num_entries,
				  cl_image_format *image_formats, cl_uint *num_image_formats)
{
	ava_argument(image_formats) { ava_out; ava_buffer(num_entries); }
	ava_argument(num_image_formats) { ava_out; ava_buffer(1); }
}

cl_int clGetImageInfo(cl_mem image, cl_image_info param_name, size_t param_value_size,
		      void *param_value, size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	cl_int ret = ava_execute();
	if (ava_is_worker && ret == CL_SUCCESS && param_value != NULL && param_name == CL_IMAGE_BUFFER)
		AVA_CL_IDS_OUT(cl_mem, param_value, param_value_size);
	return ret;
}

cl_sampler clCreateSampler(cl_context context, cl_bool normalized_coords,
			   cl_addressing_mode addressing_mode, cl_filter_mode filter_mode,
			   cl_int *errcode_ret)
{
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
}

cl_sampler clCreateSamplerWithProperties(cl_context context,
					 const cl_sampler_properties *sampler_properties,
					 cl_int *errcode_ret)
{
	ava_argument(sampler_properties) {
		ava_in;
		ava_buffer(ava_cl_props_count(sampler_properties));
	}
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
}

cl_int clRetainSampler(cl_sampler sampler)
{
	ava_argument(sampler) { ava_retains; }
}

cl_int clReleaseSampler(cl_sampler sampler)
{
	ava_argument(sampler) { ava_deallocates; }
}

cl_int clGetSamplerInfo(cl_sampler sampler, cl_sampler_info param_name, size_t param_value_size,
			void *param_value, size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	cl_int ret = ava_execute();
	if (ava_is_worker && ret == CL_SUCCESS && param_value != NULL &&
	    param_name == CL_SAMPLER_CONTEXT)
		AVA_CL_IDS_OUT(cl_context, param_value, param_value_size);
	return ret;
}

/*
 * Mapping, worker side: a real map (so events are map and unmap commands)
 * whose contents travel to the guest, and a real map + unmap that carries
 * the guest's writes back. The worker keeps no mapping between the calls.
 */
cl_int ava_cl_map_buffer(cl_command_queue command_queue, cl_mem buffer, cl_map_flags map_flags,
			 size_t offset, size_t size, void *data, cl_uint num_events_in_wait_list,
			 const cl_event *event_wait_list, cl_event *event)
{
	ava_argument(data) { ava_out; ava_buffer(ava_cl_span(buffer, offset, size)); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	ava_disable_native_call;
	cl_int ret = CL_SUCCESS;
	cl_event ava_unmapped = NULL;
	void *ava_p = clEnqueueMapBuffer(command_queue, buffer, CL_TRUE, map_flags, offset, size,
					 num_events_in_wait_list, event_wait_list, event, &ret);
	if (ava_p == NULL)
		return ret;
	if (data != NULL && !(map_flags & CL_MAP_WRITE_INVALIDATE_REGION))
		memcpy(data, ava_p, size);
	if (clEnqueueUnmapMemObject(command_queue, buffer, ava_p, 0, NULL, &ava_unmapped) ==
	    CL_SUCCESS) {
		clWaitForEvents(1, &ava_unmapped);
		clReleaseEvent(ava_unmapped);
	}
	return CL_SUCCESS;
}

cl_int ava_cl_unmap_buffer(cl_command_queue command_queue, cl_mem buffer, size_t offset,
			   size_t size, cl_int write, const void *data,
			   cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			   cl_event *event)
{
	ava_async;
	ava_argument(data) { ava_in; ava_buffer(ava_cl_span(buffer, offset, size)); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	ava_disable_native_call;
	cl_int ret = CL_SUCCESS;
	void *ava_p = clEnqueueMapBuffer(command_queue, buffer, CL_TRUE,
					 write ? CL_MAP_WRITE_INVALIDATE_REGION : CL_MAP_READ, offset,
					 size, num_events_in_wait_list, event_wait_list, NULL, &ret);
	if (ava_p == NULL)
		return ret;
	if (write && data != NULL)
		memcpy(ava_p, data, size);
	return clEnqueueUnmapMemObject(command_queue, buffer, ava_p, 0, NULL, event);
}

/* ------------------------------------------------------------------------
 * Programs
 * ------------------------------------------------------------------------ */
cl_program ava_cl_create_program_with_source(cl_context context, const char *source,
					     size_t length, cl_int *errcode_ret)
{
	ava_argument(source) { ava_in; ava_buffer(length + 1); }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	ava_disable_native_call;
	return clCreateProgramWithSource(context, source ? 1 : 0, source ? &source : NULL,
					 source ? &length : NULL, errcode_ret);
}

cl_program ava_cl_create_program_with_binary(cl_context context, cl_uint num_devices,
					     const cl_device_id *device_list, const size_t *lengths,
					     const unsigned char *binaries, size_t binaries_length,
					     cl_int *binary_status, cl_int *errcode_ret)
{
	ava_argument(device_list) { ava_in; ava_buffer(num_devices); }
	ava_argument(lengths) { ava_in; ava_buffer(num_devices); }
	ava_argument(binaries) { ava_in; ava_buffer(binaries_length); }
	ava_argument(binary_status) { ava_out; ava_buffer(num_devices); }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
	ava_disable_native_call;
	const unsigned char *ava_parts[64];
	size_t ava_at = 0;
	/* The lengths must add up to what arrived; otherwise pass no binaries. */
	for (cl_uint i = 0; lengths != NULL && binaries != NULL && i < num_devices && i < 64; ++i) {
		if (lengths[i] > binaries_length - ava_at) {
			lengths = NULL;
			break;
		}
		ava_parts[i] = binaries + ava_at;
		ava_at += lengths[i];
	}
	if (num_devices > 64 || ava_at != binaries_length)
		lengths = NULL;
	return clCreateProgramWithBinary(context, num_devices, device_list, lengths,
					 lengths && binaries ? ava_parts : NULL, binary_status,
					 errcode_ret);
}

cl_program clCreateProgramWithIL(cl_context context, const void *il, size_t length,
				 cl_int *errcode_ret)
{
	ava_argument(il) { ava_in; ava_buffer(length); }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
}

cl_program clCreateProgramWithBuiltInKernels(cl_context context, cl_uint num_devices,
					     const cl_device_id *device_list,
					     const char *kernel_names, cl_int *errcode_ret)
{
	ava_argument(device_list) { ava_in; ava_buffer(num_devices); }
	ava_argument(kernel_names) { ava_in; ava_buffer(strlen(kernel_names) + 1); }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
}

cl_int clRetainProgram(cl_program program)
{
	ava_argument(program) { ava_retains; }
}

cl_int clReleaseProgram(cl_program program)
{
	ava_argument(program) { ava_deallocates; }
}

/*
 * The worker builds every program with kernel argument information, which
 * tells it whether an argument is a memory object, image or sampler: an id
 * that names no such object is then refused instead of reaching the device
 * as a pointer. The worker remembers which programs got the option from it
 * and hides it again from their build options and argument queries.
 */
ava_begin_utility;
#define AVA_CL_ARG_INFO_OPTION "-cl-kernel-arg-info"
#define AVA_CL_MAX_ARG_INFO_PROGRAMS 4096
static pthread_mutex_t ava_cl_arg_info_lock = PTHREAD_MUTEX_INITIALIZER;
static cl_program ava_cl_arg_info_programs[AVA_CL_MAX_ARG_INFO_PROGRAMS];

/* Records whether program's latest build got the option from ava. */
static void ava_cl_mark_arg_info(cl_program program, int added)
{
	int free_slot = -1;

	pthread_mutex_lock(&ava_cl_arg_info_lock);
	for (int i = 0; i < AVA_CL_MAX_ARG_INFO_PROGRAMS; ++i) {
		if (ava_cl_arg_info_programs[i] == program) {
			if (!added)
				ava_cl_arg_info_programs[i] = NULL;
			added = 0;
			break;
		}
		if (ava_cl_arg_info_programs[i] == NULL && free_slot < 0)
			free_slot = i;
	}
	if (added && free_slot >= 0)
		ava_cl_arg_info_programs[free_slot] = program;
	pthread_mutex_unlock(&ava_cl_arg_info_lock);
}

static int ava_cl_has_added_arg_info(cl_program program)
{
	int found = 0;

	pthread_mutex_lock(&ava_cl_arg_info_lock);
	for (int i = 0; i < AVA_CL_MAX_ARG_INFO_PROGRAMS && !found; ++i)
		found = program != NULL && ava_cl_arg_info_programs[i] == program;
	pthread_mutex_unlock(&ava_cl_arg_info_lock);
	return found;
}

static const char *ava_cl_with_arg_info(cl_program program, const char *options, char **owned)
{
	size_t n = options ? strlen(options) : 0;

	*owned = NULL;
	if (!ava_is_worker)
		return options;
	if (options && strstr(options, AVA_CL_ARG_INFO_OPTION)) {
		ava_cl_mark_arg_info(program, 0);
		return options;
	}
	*owned = malloc(n + sizeof(AVA_CL_ARG_INFO_OPTION) + 1);
	if (*owned == NULL) {
		ava_cl_mark_arg_info(program, 0);
		return options;
	}
	memcpy(*owned, options ? options : "", n);
	(*owned)[n] = ' ';
	memcpy(*owned + n + 1, AVA_CL_ARG_INFO_OPTION, sizeof(AVA_CL_ARG_INFO_OPTION));
	ava_cl_mark_arg_info(program, 1);
	return *owned;
}

/* Strips the option ava added from the end of a build options string. */
static void ava_cl_strip_arg_info(char *options)
{
	size_t n = strlen(options), k = sizeof(AVA_CL_ARG_INFO_OPTION) - 1;

	if (n < k || strcmp(options + n - k, AVA_CL_ARG_INFO_OPTION) != 0)
		return;
	n -= k;
	while (n > 0 && options[n - 1] == ' ')
		--n;
	options[n] = '\0';
}

/* Whether kernel's program has argument information only because ava asked. */
static int ava_cl_arg_info_hidden(cl_kernel kernel)
{
	cl_program program = NULL;

	if (clGetKernelInfo(kernel, CL_KERNEL_PROGRAM, sizeof(program), &program, NULL) != CL_SUCCESS)
		return 0;
	return ava_cl_has_added_arg_info(program);
}

/* The error for an argument value that names no object of the argument's kind, or 0. */
static cl_int ava_cl_bad_object_arg(cl_kernel kernel, cl_uint index)
{
	cl_kernel_arg_address_qualifier address = 0;
	cl_kernel_arg_type_qualifier type_qualifier = 0;
	char type[64] = "";

	if (clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof(address),
			       &address, NULL) != CL_SUCCESS)
		return 0; /* no information (a program from a binary): pass the bytes on */
	if (address == CL_KERNEL_ARG_ADDRESS_GLOBAL || address == CL_KERNEL_ARG_ADDRESS_CONSTANT)
		return CL_INVALID_MEM_OBJECT;
	if (clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof(type_qualifier),
			       &type_qualifier, NULL) == CL_SUCCESS &&
	    (type_qualifier & CL_KERNEL_ARG_TYPE_PIPE))
		return CL_INVALID_MEM_OBJECT;
	if (clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_TYPE_NAME, sizeof(type) - 1, type,
			       NULL) != CL_SUCCESS)
		return 0;
	if (strncmp(type, "image", 5) == 0)
		return CL_INVALID_MEM_OBJECT;
	if (strcmp(type, "sampler_t") == 0)
		return CL_INVALID_SAMPLER;
	if (strcmp(type, "queue_t") == 0)
		return CL_INVALID_DEVICE_QUEUE;
	return 0;
}
ava_end_utility;

cl_int clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
		      const char *options,
		      void(CL_CALLBACK *pfn_notify)(cl_program program, void *user_data),
		      void *user_data)
{
	ava_argument(device_list) { ava_in; ava_buffer(num_devices); }
	ava_argument(options) { ava_in; ava_buffer(strlen(options) + 1); }
	ava_argument(pfn_notify) {
		ava_callback(ava_cl_program_notify);
		ava_lifetime_static;
	}
	ava_argument(user_data) { ava_userdata; }
	char *ava_owned;
	options = ava_cl_with_arg_info(program, options, &ava_owned);
	cl_int ret = ava_execute();
	free(ava_owned);
	return ret;
}

cl_int ava_cl_compile_program(cl_program program, cl_uint num_devices,
			      const cl_device_id *device_list, const char *options,
			      cl_uint num_input_headers, const cl_program *input_headers,
			      const char *include_names, size_t include_names_length,
			      void(CL_CALLBACK *pfn_notify)(cl_program program, void *user_data),
			      void *user_data)
{
	ava_argument(device_list) { ava_in; ava_buffer(num_devices); }
	ava_argument(options) { ava_in; ava_buffer(strlen(options) + 1); }
	ava_argument(input_headers) { ava_in; ava_buffer(num_input_headers); }
	ava_argument(include_names) { ava_in; ava_buffer(include_names_length); }
	ava_argument(pfn_notify) {
		ava_callback(ava_cl_program_notify);
		ava_lifetime_static;
	}
	ava_argument(user_data) { ava_userdata; }
	ava_disable_native_call;
	const char *ava_names[256];
	size_t ava_at = 0;
	cl_uint n = 0;
	/* NUL-separated names; exactly num_input_headers of them, or none. */
	while (include_names != NULL && ava_at < include_names_length && n < 256) {
		size_t len = strnlen(include_names + ava_at, include_names_length - ava_at);
		if (len == include_names_length - ava_at)
			break;
		ava_names[n++] = include_names + ava_at;
		ava_at += len + 1;
	}
	char *ava_owned;
	cl_int ret;
	options = ava_cl_with_arg_info(program, options, &ava_owned);
	if (include_names == NULL || n != num_input_headers || ava_at != include_names_length)
		ret = clCompileProgram(program, num_devices, device_list, options, num_input_headers,
				       input_headers, NULL, pfn_notify, user_data);
	else
		ret = clCompileProgram(program, num_devices, device_list, options,
				       num_input_headers, input_headers, ava_names, pfn_notify,
				       user_data);
	free(ava_owned);
	return ret;
}

cl_program clLinkProgram(cl_context context, cl_uint num_devices, const cl_device_id *device_list,
			 const char *options, cl_uint num_input_programs,
			 const cl_program *input_programs,
			 void(CL_CALLBACK *pfn_notify)(cl_program program, void *user_data),
			 void *user_data, cl_int *errcode_ret)
{
	ava_argument(device_list) { ava_in; ava_buffer(num_devices); }
	ava_argument(options) { ava_in; ava_buffer(strlen(options) + 1); }
	ava_argument(input_programs) { ava_in; ava_buffer(num_input_programs); }
	ava_argument(pfn_notify) {
		ava_callback(ava_cl_program_notify);
		ava_lifetime_static;
	}
	ava_argument(user_data) { ava_userdata; }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
}

cl_int clSetProgramSpecializationConstant(cl_program program, cl_uint spec_id, size_t spec_size,
					  const void *spec_value)
{
	ava_argument(spec_value) { ava_in; ava_buffer(spec_size); }
}

cl_int clUnloadPlatformCompiler(cl_platform_id platform)
{
	if (ava_is_worker && ava_handle_invalid(cl_platform_id))
		return CL_INVALID_PLATFORM;
	return ava_execute();
}

cl_int clUnloadCompiler(void)
{
}

cl_int ava_cl_get_program_info(cl_program program, cl_program_info param_name,
			       size_t param_value_size, void *param_value,
			       size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	ava_disable_native_call;
	/* Binaries are pointers into guest memory: clGetProgramInfo sends those apart. */
	if (param_name == CL_PROGRAM_BINARIES && param_value != NULL)
		return CL_INVALID_VALUE;
	cl_int ret = clGetProgramInfo(program, param_name, param_value_size, param_value,
				      param_value_size_ret);
	if (ret == CL_SUCCESS && param_value != NULL) {
		if (param_name == CL_PROGRAM_CONTEXT)
			AVA_CL_IDS_OUT(cl_context, param_value, param_value_size);
		else if (param_name == CL_PROGRAM_DEVICES)
			AVA_CL_IDS_OUT(cl_device_id, param_value, param_value_size);
	}
	return ret;
}

cl_int ava_cl_get_program_binaries(cl_program program, size_t total, unsigned char *binaries)
{
	ava_argument(binaries) { ava_out; ava_buffer(total); }
	ava_disable_native_call;
	cl_uint ava_ndev = 0;
	size_t ava_sizes[64], ava_sum = 0;
	unsigned char *ava_parts[64];
	cl_int ret = clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof(ava_ndev), &ava_ndev,
				      NULL);
	if (ret != CL_SUCCESS)
		return ret;
	if (ava_ndev > 64 || binaries == NULL)
		return CL_INVALID_VALUE;
	ret = clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, ava_ndev * sizeof(size_t),
			       ava_sizes, NULL);
	if (ret != CL_SUCCESS)
		return ret;
	for (cl_uint i = 0; i < ava_ndev; ++i) {
		ava_parts[i] = binaries + ava_sum;
		ava_sum += ava_sizes[i];
	}
	if (ava_sum != total)
		return CL_INVALID_VALUE;
	return clGetProgramInfo(program, CL_PROGRAM_BINARIES, ava_ndev * sizeof(unsigned char *),
				ava_parts, NULL);
}

cl_int clGetProgramBuildInfo(cl_program program, cl_device_id device,
			     cl_program_build_info param_name, size_t param_value_size,
			     void *param_value, size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	if (!ava_is_worker || param_name != CL_PROGRAM_BUILD_OPTIONS)
		return ava_execute();
	/* The options as the program gave them, without ava's. */
	size_t ava_need = 0, ava_len;
	char *ava_options;
	cl_int ret = clGetProgramBuildInfo(program, device, param_name, 0, NULL, &ava_need);
	if (ret != CL_SUCCESS)
		return ret;
	ava_options = calloc(1, ava_need + 1);
	if (ava_options == NULL)
		return CL_OUT_OF_HOST_MEMORY;
	ret = clGetProgramBuildInfo(program, device, param_name, ava_need, ava_options, NULL);
	if (ret == CL_SUCCESS) {
		if (ava_cl_has_added_arg_info(program))
			ava_cl_strip_arg_info(ava_options);
		ava_len = strlen(ava_options) + 1;
		if (param_value != NULL && param_value_size < ava_len)
			ret = CL_INVALID_VALUE;
		else if (param_value != NULL)
			memcpy(param_value, ava_options, ava_len);
		if (ret == CL_SUCCESS && param_value_size_ret != NULL)
			*param_value_size_ret = ava_len;
	}
	free(ava_options);
	return ret;
}

/* ------------------------------------------------------------------------
 * Kernels
 * ------------------------------------------------------------------------ */
cl_kernel clCreateKernel(cl_program program, const char *kernel_name, cl_int *errcode_ret)
{
	ava_argument(kernel_name) { ava_in; ava_buffer(strlen(kernel_name) + 1); }
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
}

cl_int clCreateKernelsInProgram(cl_program program, cl_uint num_kernels, cl_kernel *kernels,
				cl_uint *num_kernels_ret)
{
	ava_argument(kernels) {
		ava_out;
		ava_buffer(num_kernels);
		ava_element { ava_allocates; }
	}
	ava_argument(num_kernels_ret) { ava_out; ava_buffer(1); }
}

cl_kernel clCloneKernel(cl_kernel source_kernel, cl_int *errcode_ret)
{
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
}

cl_int clRetainKernel(cl_kernel kernel)
{
	ava_argument(kernel) { ava_retains; }
}

cl_int clReleaseKernel(cl_kernel kernel)
{
	ava_argument(kernel) { ava_deallocates; }
}

/*
 * Sent without waiting; an error comes back with a later call. A value the
 * size of a handle that is one of this guest's memory objects, samplers or
 * queues is passed as that object; anything else as the bytes it is.
 */
cl_int clSetKernelArg(cl_kernel kernel, cl_uint arg_index, size_t arg_size, const void *arg_value)
{
	ava_async;
	ava_argument(arg_value) { ava_in; ava_buffer(arg_size); }
	ava_disable_native_call;
	if (arg_value != NULL && arg_size == sizeof(cl_mem)) {
		uint64_t ava_id;
		memcpy(&ava_id, arg_value, sizeof(ava_id));
		cl_mem ava_mem = ava_handle_object(cl_mem, ava_id);
		if (ava_mem != NULL)
			return clSetKernelArg(kernel, arg_index, arg_size, &ava_mem);
		cl_sampler ava_sampler = ava_handle_object(cl_sampler, ava_id);
		if (ava_sampler != NULL)
			return clSetKernelArg(kernel, arg_index, arg_size, &ava_sampler);
		cl_command_queue ava_queue = ava_handle_object(cl_command_queue, ava_id);
		if (ava_queue != NULL)
			return clSetKernelArg(kernel, arg_index, arg_size, &ava_queue);
		/* Bytes that are no object where the kernel wants one would be a wild pointer. */
		cl_int ava_bad = ava_id != 0 && kernel != NULL ? ava_cl_bad_object_arg(kernel, arg_index)
							       : 0;
		if (ava_bad != 0)
			return ava_bad;
	}
	return clSetKernelArg(kernel, arg_index, arg_size, arg_value);
}

cl_int clGetKernelInfo(cl_kernel kernel, cl_kernel_info param_name, size_t param_value_size,
		       void *param_value, size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	cl_int ret = ava_execute();
	if (ava_is_worker && ret == CL_SUCCESS && param_value != NULL) {
		if (param_name == CL_KERNEL_CONTEXT)
			AVA_CL_IDS_OUT(cl_context, param_value, param_value_size);
		else if (param_name == CL_KERNEL_PROGRAM)
			AVA_CL_IDS_OUT(cl_program, param_value, param_value_size);
	}
	return ret;
}

cl_int clGetKernelArgInfo(cl_kernel kernel, cl_uint arg_index, cl_kernel_arg_info param_name,
			  size_t param_value_size, void *param_value, size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	cl_int ret = ava_execute();
	if (ava_is_worker && ret == CL_SUCCESS && ava_cl_arg_info_hidden(kernel))
		return CL_KERNEL_ARG_INFO_NOT_AVAILABLE;
	return ret;
}

cl_int clGetKernelWorkGroupInfo(cl_kernel kernel, cl_device_id device,
				cl_kernel_work_group_info param_name, size_t param_value_size,
				void *param_value, size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
}

cl_int clGetKernelSubGroupInfo(cl_kernel kernel, cl_device_id device,
			       cl_kernel_sub_group_info param_name, size_t input_value_size,
			       const void *input_value, size_t param_value_size, void *param_value,
			       size_t *param_value_size_ret)
{
	ava_argument(input_value) { ava_in; ava_buffer(input_value_size); }
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
}

/* ------------------------------------------------------------------------
 * Events
 * ------------------------------------------------------------------------ */
cl_int clWaitForEvents(cl_uint num_events, const cl_event *event_list)
{
	ava_argument(event_list) { ava_in; ava_buffer(num_events); }
}

cl_int clGetEventInfo(cl_event event, cl_event_info param_name, size_t param_value_size,
		      void *param_value, size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	cl_int ret = ava_execute();
	if (ava_is_worker && ret == CL_SUCCESS && param_value != NULL) {
		if (param_name == CL_EVENT_COMMAND_QUEUE)
			AVA_CL_IDS_OUT(cl_command_queue, param_value, param_value_size);
		else if (param_name == CL_EVENT_CONTEXT)
			AVA_CL_IDS_OUT(cl_context, param_value, param_value_size);
	}
	return ret;
}

cl_event clCreateUserEvent(cl_context context, cl_int *errcode_ret)
{
	ava_argument(errcode_ret) { ava_out; ava_buffer(1); }
	ava_return_value { ava_allocates; }
}

cl_int clRetainEvent(cl_event event)
{
	ava_argument(event) { ava_retains; }
}

cl_int clReleaseEvent(cl_event event)
{
	ava_argument(event) { ava_deallocates; }
}

cl_int clSetUserEventStatus(cl_event event, cl_int execution_status)
{
}

cl_int clSetEventCallback(cl_event event, cl_int command_exec_callback_type,
			  void(CL_CALLBACK *pfn_notify)(cl_event event, cl_int event_command_status,
							void *user_data),
			  void *user_data)
{
	ava_argument(pfn_notify) {
		ava_callback(ava_cl_event_notify);
		ava_lifetime_static;
	}
	ava_argument(user_data) { ava_userdata; }
}

cl_int clGetEventProfilingInfo(cl_event event, cl_profiling_info param_name,
			       size_t param_value_size, void *param_value,
			       size_t *param_value_size_ret)
{
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
}

/* ------------------------------------------------------------------------
 * Enqueued commands. Those that read nothing back are sent without waiting
 * (their data travels with them; an event they return gets an id the guest
 * picks); the worker runs them in the order the guest's threads issued them.
 * ------------------------------------------------------------------------ */
/* Reads always complete before returning, which a non-blocking read may do too. */
cl_int clEnqueueReadBuffer(cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_read,
			   size_t offset, size_t size, void *ptr, cl_uint num_events_in_wait_list,
			   const cl_event *event_wait_list, cl_event *event)
{
	ava_argument(ptr) {
		ava_out;
		ava_buffer(ava_cl_span(buffer, offset, size));
		ava_zerocopy_buffer;
	}
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	if (ava_is_worker)
		blocking_read = CL_TRUE;
	return ava_execute();
}

cl_int clEnqueueWriteBuffer(cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_write,
			    size_t offset, size_t size, const void *ptr,
			    cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			    cl_event *event)
{
	if (blocking_write == CL_FALSE) {
		ava_async;
	}
	ava_argument(ptr) {
		ava_in;
		ava_buffer(ava_cl_span(buffer, offset, size));
		ava_zerocopy_buffer;
	}
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	/* The data is in the message, which goes away with the call. */
	if (ava_is_worker)
		blocking_write = CL_TRUE;
	return ava_execute();
}

cl_int clEnqueueReadBufferRect(cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_read,
			       const size_t *buffer_origin, const size_t *host_origin,
			       const size_t *region, size_t buffer_row_pitch,
			       size_t buffer_slice_pitch, size_t host_row_pitch,
			       size_t host_slice_pitch, void *ptr, cl_uint num_events_in_wait_list,
			       const cl_event *event_wait_list, cl_event *event)
{
	ava_argument(buffer_origin) { ava_in; ava_buffer(3); }
	ava_argument(host_origin) { ava_in; ava_buffer(3); }
	ava_argument(region) { ava_in; ava_buffer(3); }
	ava_argument(ptr) {
		ava_in;
		ava_out;
		ava_buffer(ava_cl_rect_io(buffer, buffer_origin, host_origin, region, buffer_row_pitch,
					  buffer_slice_pitch, host_row_pitch, host_slice_pitch));
	}
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	if (ava_is_worker)
		blocking_read = CL_TRUE;
	return ava_execute();
}

cl_int clEnqueueWriteBufferRect(cl_command_queue command_queue, cl_mem buffer,
				cl_bool blocking_write, const size_t *buffer_origin,
				const size_t *host_origin, const size_t *region,
				size_t buffer_row_pitch, size_t buffer_slice_pitch,
				size_t host_row_pitch, size_t host_slice_pitch, const void *ptr,
				cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
				cl_event *event)
{
	if (blocking_write == CL_FALSE) {
		ava_async;
	}
	ava_argument(buffer_origin) { ava_in; ava_buffer(3); }
	ava_argument(host_origin) { ava_in; ava_buffer(3); }
	ava_argument(region) { ava_in; ava_buffer(3); }
	ava_argument(ptr) {
		ava_in;
		ava_buffer(ava_cl_rect_io(buffer, buffer_origin, host_origin, region, buffer_row_pitch,
					  buffer_slice_pitch, host_row_pitch, host_slice_pitch));
	}
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	if (ava_is_worker)
		blocking_write = CL_TRUE;
	return ava_execute();
}

cl_int clEnqueueCopyBuffer(cl_command_queue command_queue, cl_mem src_buffer, cl_mem dst_buffer,
			   size_t src_offset, size_t dst_offset, size_t size,
			   cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			   cl_event *event)
{
	ava_async;
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

cl_int clEnqueueCopyBufferRect(cl_command_queue command_queue, cl_mem src_buffer,
			       cl_mem dst_buffer, const size_t *src_origin, const size_t *dst_origin,
			       const size_t *region, size_t src_row_pitch, size_t src_slice_pitch,
			       size_t dst_row_pitch, size_t dst_slice_pitch,
			       cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			       cl_event *event)
{
	ava_async;
	ava_argument(src_origin) { ava_in; ava_buffer(3); }
	ava_argument(dst_origin) { ava_in; ava_buffer(3); }
	ava_argument(region) { ava_in; ava_buffer(3); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

cl_int clEnqueueFillBuffer(cl_command_queue command_queue, cl_mem buffer, const void *pattern,
			   size_t pattern_size, size_t offset, size_t size,
			   cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			   cl_event *event)
{
	ava_async;
	ava_argument(pattern) { ava_in; ava_buffer(pattern_size <= 128 ? pattern_size : 0); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

cl_int clEnqueueReadImage(cl_command_queue command_queue, cl_mem image, cl_bool blocking_read,
			  const size_t *origin, const size_t *region, size_t row_pitch,
			  size_t slice_pitch, void *ptr, cl_uint num_events_in_wait_list,
			  const cl_event *event_wait_list, cl_event *event)
{
	ava_argument(origin) { ava_in; ava_buffer(3); }
	ava_argument(region) { ava_in; ava_buffer(3); }
	/* With pitches the rows leave gaps, which must keep the program's bytes. */
	ava_argument(ptr) {
		if (row_pitch != 0 || slice_pitch != 0) {
			ava_in;
		}
		ava_out;
		ava_buffer(ava_cl_image_span(image, origin, region, row_pitch, slice_pitch));
	}
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	if (ava_is_worker)
		blocking_read = CL_TRUE;
	return ava_execute();
}

cl_int clEnqueueWriteImage(cl_command_queue command_queue, cl_mem image, cl_bool blocking_write,
			   const size_t *origin, const size_t *region, size_t input_row_pitch,
			   size_t input_slice_pitch, const void *ptr,
			   cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			   cl_event *event)
{
	if (blocking_write == CL_FALSE) {
		ava_async;
	}
	ava_argument(origin) { ava_in; ava_buffer(3); }
	ava_argument(region) { ava_in; ava_buffer(3); }
	ava_argument(ptr) {
		ava_in;
		ava_buffer(ava_cl_image_span(image, origin, region, input_row_pitch, input_slice_pitch));
		ava_zerocopy_buffer;
	}
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	if (ava_is_worker)
		blocking_write = CL_TRUE;
	return ava_execute();
}

cl_int clEnqueueFillImage(cl_command_queue command_queue, cl_mem image, const void *fill_color,
			  const size_t *origin, const size_t *region,
			  cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			  cl_event *event)
{
	ava_async;
	/* Four 32-bit channels: float4, int4 or uint4. */
	ava_argument(fill_color) { ava_in; ava_buffer(16); }
	ava_argument(origin) { ava_in; ava_buffer(3); }
	ava_argument(region) { ava_in; ava_buffer(3); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

cl_int clEnqueueCopyImage(cl_command_queue command_queue, cl_mem src_image, cl_mem dst_image,
			  const size_t *src_origin, const size_t *dst_origin, const size_t *region,
			  cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			  cl_event *event)
{
	ava_async;
	ava_argument(src_origin) { ava_in; ava_buffer(3); }
	ava_argument(dst_origin) { ava_in; ava_buffer(3); }
	ava_argument(region) { ava_in; ava_buffer(3); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

cl_int clEnqueueCopyImageToBuffer(cl_command_queue command_queue, cl_mem src_image,
				  cl_mem dst_buffer, const size_t *src_origin, const size_t *region,
				  size_t dst_offset, cl_uint num_events_in_wait_list,
				  const cl_event *event_wait_list, cl_event *event)
{
	ava_async;
	ava_argument(src_origin) { ava_in; ava_buffer(3); }
	ava_argument(region) { ava_in; ava_buffer(3); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

cl_int clEnqueueCopyBufferToImage(cl_command_queue command_queue, cl_mem src_buffer,
				  cl_mem dst_image, size_t src_offset, const size_t *dst_origin,
				  const size_t *region, cl_uint num_events_in_wait_list,
				  const cl_event *event_wait_list, cl_event *event)
{
	ava_async;
	ava_argument(dst_origin) { ava_in; ava_buffer(3); }
	ava_argument(region) { ava_in; ava_buffer(3); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

cl_int clEnqueueMigrateMemObjects(cl_command_queue command_queue, cl_uint num_mem_objects,
				  const cl_mem *mem_objects, cl_mem_migration_flags flags,
				  cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
				  cl_event *event)
{
	ava_async;
	ava_argument(mem_objects) { ava_in; ava_buffer(num_mem_objects); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

cl_int clEnqueueNDRangeKernel(cl_command_queue command_queue, cl_kernel kernel, cl_uint work_dim,
			      const size_t *global_work_offset, const size_t *global_work_size,
			      const size_t *local_work_size, cl_uint num_events_in_wait_list,
			      const cl_event *event_wait_list, cl_event *event)
{
	ava_async;
	/* More than 3 dimensions is an error the API reports without reading them. */
	ava_argument(global_work_offset) { ava_in; ava_buffer(work_dim <= 3 ? work_dim : 0); }
	ava_argument(global_work_size) { ava_in; ava_buffer(work_dim <= 3 ? work_dim : 0); }
	ava_argument(local_work_size) { ava_in; ava_buffer(work_dim <= 3 ? work_dim : 0); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	/* PoCL dereferences a NULL kernel here; the worker must not. */
	if (ava_is_worker && kernel == NULL)
		return CL_INVALID_KERNEL;
	return ava_execute();
}

cl_int clEnqueueTask(cl_command_queue command_queue, cl_kernel kernel,
		     cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
		     cl_event *event)
{
	ava_async;
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	if (ava_is_worker && kernel == NULL)
		return CL_INVALID_KERNEL;
	return ava_execute();
}

cl_int clEnqueueMarkerWithWaitList(cl_command_queue command_queue, cl_uint num_events_in_wait_list,
				   const cl_event *event_wait_list, cl_event *event)
{
	ava_async;
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

cl_int clEnqueueBarrierWithWaitList(cl_command_queue command_queue,
				    cl_uint num_events_in_wait_list,
				    const cl_event *event_wait_list, cl_event *event)
{
	ava_async;
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

cl_int clEnqueueMarker(cl_command_queue command_queue, cl_event *event)
{
	ava_async;
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
}

cl_int clEnqueueBarrier(cl_command_queue command_queue)
{
	ava_async;
}

/* PoCL aborts on this OpenCL 1.1 call; it is a barrier with a wait list. */
cl_int clEnqueueWaitForEvents(cl_command_queue command_queue, cl_uint num_events,
			      const cl_event *event_list)
{
	ava_async;
	ava_argument(event_list) { ava_in; ava_buffer(num_events); }
	ava_disable_native_call;
	if (num_events == 0 || event_list == NULL)
		return CL_INVALID_VALUE;
	return clEnqueueBarrierWithWaitList(command_queue, num_events, event_list, NULL);
}

/* ------------------------------------------------------------------------
 * Shared virtual memory (coarse-grained). The program gets guest memory of
 * the allocation's size; the device works on the worker's allocation, which
 * the worker keeps behind a handle (so a guest can only name allocations it
 * made, within their bounds). Maps fill the guest memory and unmaps write it
 * back, as coarse-grained SVM allows; pointers handed to kernels are
 * translated. Fine-grained allocations would need one address space and are
 * refused (clSVMAlloc returns NULL); pointers stored inside SVM memory are
 * not translated.
 * ------------------------------------------------------------------------ */
ava_begin_utility;
typedef struct ava_cl_svm_s *ava_cl_svm;
/* What the worker keeps per allocation. */
struct ava_cl_svm_s {
	void *base;
	size_t size;
	cl_context context;
};

ava_cl_svm ava_cl_svm_alloc(cl_context context, cl_svm_mem_flags flags, size_t size,
			    cl_uint alignment);
cl_int ava_cl_svm_release(ava_cl_svm svm);
cl_int ava_cl_svm_map(cl_command_queue command_queue, ava_cl_svm svm, size_t offset, size_t size,
		      cl_map_flags map_flags, void *data, cl_uint num_events_in_wait_list,
		      const cl_event *event_wait_list, cl_event *event);
cl_int ava_cl_svm_unmap(cl_command_queue command_queue, ava_cl_svm svm, size_t offset,
			size_t size, const void *data, cl_uint num_events_in_wait_list,
			const cl_event *event_wait_list, cl_event *event);
cl_int ava_cl_svm_memcpy(cl_command_queue command_queue, ava_cl_svm dst_svm, size_t dst_offset,
			 ava_cl_svm src_svm, size_t src_offset, size_t size, const void *src_host,
			 void *dst_host, cl_uint num_events_in_wait_list,
			 const cl_event *event_wait_list, cl_event *event);
cl_int ava_cl_svm_fill(cl_command_queue command_queue, ava_cl_svm svm, size_t offset,
		       const void *pattern, size_t pattern_size, size_t size,
		       cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
		       cl_event *event);
cl_int ava_cl_set_kernel_arg_svm(cl_kernel kernel, cl_uint arg_index, ava_cl_svm svm,
				 size_t offset);
cl_int ava_cl_set_kernel_svm_ptrs(cl_kernel kernel, cl_uint count, const ava_cl_svm *svms,
				  const size_t *offsets);
cl_int ava_cl_svm_migrate(cl_command_queue command_queue, cl_uint count, const ava_cl_svm *svms,
			  const size_t *offsets, const size_t *sizes, cl_mem_migration_flags flags,
			  cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			  cl_event *event);
cl_int ava_cl_set_kernel_exec_info(cl_kernel kernel, cl_kernel_exec_info param_name,
				   size_t param_value_size, const void *param_value);

/* Worker: base + offset of an allocation if [offset, offset + size) lies in it. */
static void *ava_cl_svm_at(ava_cl_svm svm, size_t offset, size_t size)
{
	if (svm == NULL || offset > svm->size || size > svm->size - offset)
		return NULL;
	return (char *)svm->base + offset;
}
ava_end_utility;

ava_type(ava_cl_svm) { ava_handle; }

ava_cl_svm ava_cl_svm_alloc(cl_context context, cl_svm_mem_flags flags, size_t size,
			    cl_uint alignment)
{
	ava_return_value { ava_allocates; }
	ava_disable_native_call;
	struct ava_cl_svm_s *svm;
	void *base;
	if (flags & (CL_MEM_SVM_FINE_GRAIN_BUFFER | CL_MEM_SVM_ATOMICS))
		return NULL;
	base = clSVMAlloc(context, flags, size, alignment);
	if (base == NULL)
		return NULL;
	svm = malloc(sizeof(*svm));
	if (svm == NULL || clRetainContext(context) != CL_SUCCESS) {
		free(svm);
		clSVMFree(context, base);
		return NULL;
	}
	svm->base = base;
	svm->size = size;
	svm->context = context;
	return svm;
}

cl_int ava_cl_svm_release(ava_cl_svm svm)
{
	ava_argument(svm) { ava_deallocates; }
	ava_disable_native_call;
	if (svm == NULL)
		return CL_INVALID_VALUE;
	clSVMFree(svm->context, svm->base);
	clReleaseContext(svm->context);
	free(svm);
	return CL_SUCCESS;
}

cl_int ava_cl_svm_map(cl_command_queue command_queue, ava_cl_svm svm, size_t offset, size_t size,
		      cl_map_flags map_flags, void *data, cl_uint num_events_in_wait_list,
		      const cl_event *event_wait_list, cl_event *event)
{
	ava_argument(data) { ava_out; ava_buffer(size); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	ava_disable_native_call;
	void *ava_p = ava_cl_svm_at(svm, offset, size);
	cl_int ret;
	if (ava_p == NULL)
		return CL_INVALID_VALUE;
	ret = clEnqueueSVMMap(command_queue, CL_TRUE, map_flags, ava_p, size,
			      num_events_in_wait_list, event_wait_list, event);
	if (ret != CL_SUCCESS)
		return ret;
	if (data != NULL && !(map_flags & CL_MAP_WRITE_INVALIDATE_REGION))
		memcpy(data, ava_p, size);
	return clEnqueueSVMUnmap(command_queue, ava_p, 0, NULL, NULL);
}

cl_int ava_cl_svm_unmap(cl_command_queue command_queue, ava_cl_svm svm, size_t offset,
			size_t size, const void *data, cl_uint num_events_in_wait_list,
			const cl_event *event_wait_list, cl_event *event)
{
	ava_async;
	ava_argument(data) { ava_in; ava_buffer(size); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	ava_disable_native_call;
	void *ava_p = ava_cl_svm_at(svm, offset, size);
	cl_int ret;
	if (ava_p == NULL)
		return CL_INVALID_VALUE;
	ret = clEnqueueSVMMap(command_queue, CL_TRUE,
			      data ? CL_MAP_WRITE_INVALIDATE_REGION : CL_MAP_READ, ava_p, size,
			      num_events_in_wait_list, event_wait_list, NULL);
	if (ret != CL_SUCCESS)
		return ret;
	if (data != NULL)
		memcpy(ava_p, data, size);
	return clEnqueueSVMUnmap(command_queue, ava_p, 0, NULL, event);
}

cl_int ava_cl_svm_memcpy(cl_command_queue command_queue, ava_cl_svm dst_svm, size_t dst_offset,
			 ava_cl_svm src_svm, size_t src_offset, size_t size, const void *src_host,
			 void *dst_host, cl_uint num_events_in_wait_list,
			 const cl_event *event_wait_list, cl_event *event)
{
	/* Only a copy into host memory needs the answer before returning. */
	if (dst_host == NULL) {
		ava_async;
	}
	ava_argument(src_host) { ava_in; ava_buffer(size); }
	ava_argument(dst_host) { ava_out; ava_buffer(size); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	ava_disable_native_call;
	void *ava_dst = dst_svm ? ava_cl_svm_at(dst_svm, dst_offset, size) : dst_host;
	const void *ava_src = src_svm ? ava_cl_svm_at(src_svm, src_offset, size) : src_host;
	if (ava_dst == NULL || ava_src == NULL)
		return CL_INVALID_VALUE;
	return clEnqueueSVMMemcpy(command_queue, CL_TRUE, ava_dst, ava_src, size,
				  num_events_in_wait_list, event_wait_list, event);
}

cl_int ava_cl_svm_fill(cl_command_queue command_queue, ava_cl_svm svm, size_t offset,
		       const void *pattern, size_t pattern_size, size_t size,
		       cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
		       cl_event *event)
{
	ava_async;
	ava_argument(pattern) { ava_in; ava_buffer(pattern_size <= 128 ? pattern_size : 0); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	ava_disable_native_call;
	void *ava_p = ava_cl_svm_at(svm, offset, size);
	if (ava_p == NULL)
		return CL_INVALID_VALUE;
	return clEnqueueSVMMemFill(command_queue, ava_p, pattern, pattern_size, size,
				   num_events_in_wait_list, event_wait_list, event);
}

cl_int ava_cl_set_kernel_arg_svm(cl_kernel kernel, cl_uint arg_index, ava_cl_svm svm,
				 size_t offset)
{
	ava_async;
	ava_disable_native_call;
	void *ava_p = svm ? ava_cl_svm_at(svm, offset, 0) : NULL;
	if ((svm != NULL && ava_p == NULL) || ava_handle_invalid(ava_cl_svm))
		return CL_INVALID_ARG_VALUE;
	return clSetKernelArgSVMPointer(kernel, arg_index, ava_p);
}

cl_int ava_cl_set_kernel_svm_ptrs(cl_kernel kernel, cl_uint count, const ava_cl_svm *svms,
				  const size_t *offsets)
{
	ava_argument(svms) { ava_in; ava_buffer(count); }
	ava_argument(offsets) { ava_in; ava_buffer(count); }
	ava_disable_native_call;
	void **ava_ptrs;
	cl_int ret;
	if (count == 0 || svms == NULL || offsets == NULL)
		return clSetKernelExecInfo(kernel, CL_KERNEL_EXEC_INFO_SVM_PTRS, 0, NULL);
	ava_ptrs = calloc(count, sizeof(*ava_ptrs));
	if (ava_ptrs == NULL)
		return CL_OUT_OF_HOST_MEMORY;
	for (cl_uint i = 0; i < count; ++i) {
		ava_ptrs[i] = ava_cl_svm_at(svms[i], offsets[i], 0);
		if (ava_ptrs[i] == NULL) {
			free(ava_ptrs);
			return CL_INVALID_VALUE;
		}
	}
	ret = clSetKernelExecInfo(kernel, CL_KERNEL_EXEC_INFO_SVM_PTRS, count * sizeof(void *),
				  ava_ptrs);
	free(ava_ptrs);
	return ret;
}

cl_int ava_cl_svm_migrate(cl_command_queue command_queue, cl_uint count, const ava_cl_svm *svms,
			  const size_t *offsets, const size_t *sizes, cl_mem_migration_flags flags,
			  cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			  cl_event *event)
{
	ava_argument(svms) { ava_in; ava_buffer(count); }
	ava_argument(offsets) { ava_in; ava_buffer(count); }
	ava_argument(sizes) { ava_in; ava_buffer(count); }
	ava_argument(event_wait_list) { ava_in; ava_buffer(num_events_in_wait_list); }
	ava_argument(event) {
		ava_out;
		ava_buffer(1);
		ava_element { ava_allocates; }
	}
	ava_disable_native_call;
	const void **ava_ptrs;
	cl_int ret;
	if (count == 0 || svms == NULL || offsets == NULL)
		return clEnqueueSVMMigrateMem(command_queue, count, NULL, sizes, flags,
					      num_events_in_wait_list, event_wait_list, event);
	ava_ptrs = calloc(count, sizeof(*ava_ptrs));
	if (ava_ptrs == NULL)
		return CL_OUT_OF_HOST_MEMORY;
	for (cl_uint i = 0; i < count; ++i) {
		ava_ptrs[i] = ava_cl_svm_at(svms[i], offsets[i], sizes ? sizes[i] : 0);
		if (ava_ptrs[i] == NULL) {
			free(ava_ptrs);
			return CL_INVALID_VALUE;
		}
	}
	ret = clEnqueueSVMMigrateMem(command_queue, count, ava_ptrs, sizes, flags,
				     num_events_in_wait_list, event_wait_list, event);
	free(ava_ptrs);
	return ret;
}

cl_int ava_cl_set_kernel_exec_info(cl_kernel kernel, cl_kernel_exec_info param_name,
				   size_t param_value_size, const void *param_value)
{
	ava_argument(param_value) { ava_in; ava_buffer(param_value_size); }
	ava_disable_native_call;
	/* Pointers go through ava_cl_set_kernel_svm_ptrs, translated. */
	if (param_name == CL_KERNEL_EXEC_INFO_SVM_PTRS)
		return CL_INVALID_VALUE;
	return clSetKernelExecInfo(kernel, param_name, param_value_size, param_value);
}

ava_begin_replacement;
struct ava_cl_svm_block {
	char *ptr;
	size_t size;
	ava_cl_svm svm;
};
struct ava_cl_svm_mapping {
	struct ava_cl_svm_mapping *next;
	void *ptr;
	size_t size;
	cl_map_flags flags;
};
static pthread_mutex_t ava_cl_svm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ava_cl_svm_block *ava_cl_svm_blocks;
static size_t ava_cl_svm_count, ava_cl_svm_cap;
static struct ava_cl_svm_mapping *ava_cl_svm_maps;

/* The allocation p points into (its end included), with p's offset in it. */
static int ava_cl_svm_find(const void *p, struct ava_cl_svm_block *out, size_t *offset)
{
	int found = 0;

	pthread_mutex_lock(&ava_cl_svm_lock);
	for (size_t i = 0; i < ava_cl_svm_count && !found; ++i) {
		const struct ava_cl_svm_block *b = &ava_cl_svm_blocks[i];

		if ((const char *)p >= b->ptr && (const char *)p <= b->ptr + b->size) {
			*out = *b;
			*offset = (size_t)((const char *)p - b->ptr);
			found = 1;
		}
	}
	pthread_mutex_unlock(&ava_cl_svm_lock);
	return found;
}

void *clSVMAlloc(cl_context context, cl_svm_mem_flags flags, size_t size, cl_uint alignment)
{
	size_t align = alignment > 128 ? alignment : 128;
	struct ava_cl_svm_block b;
	ava_cl_svm svm;

	if (size == 0 || (alignment & (alignment - 1)) != 0)
		return NULL;
	svm = ava_cl_svm_alloc(context, flags, size, alignment);
	if (svm == NULL)
		return NULL;
	b.ptr = aligned_alloc(align, (size + align - 1) / align * align);
	b.size = size;
	b.svm = svm;
	pthread_mutex_lock(&ava_cl_svm_lock);
	if (b.ptr != NULL && ava_cl_svm_count == ava_cl_svm_cap) {
		size_t cap = ava_cl_svm_cap ? ava_cl_svm_cap * 2 : 16;
		struct ava_cl_svm_block *grown =
			realloc(ava_cl_svm_blocks, cap * sizeof(*grown));

		if (grown != NULL) {
			ava_cl_svm_blocks = grown;
			ava_cl_svm_cap = cap;
		}
	}
	if (b.ptr == NULL || ava_cl_svm_count == ava_cl_svm_cap) {
		pthread_mutex_unlock(&ava_cl_svm_lock);
		free(b.ptr);
		ava_cl_svm_release(svm);
		return NULL;
	}
	ava_cl_svm_blocks[ava_cl_svm_count++] = b;
	pthread_mutex_unlock(&ava_cl_svm_lock);
	return b.ptr;
}

void clSVMFree(cl_context context, void *svm_pointer)
{
	struct ava_cl_svm_block b = {NULL, 0, NULL};

	(void)context;
	pthread_mutex_lock(&ava_cl_svm_lock);
	for (size_t i = 0; i < ava_cl_svm_count; ++i) {
		if (ava_cl_svm_blocks[i].ptr == svm_pointer) {
			b = ava_cl_svm_blocks[i];
			ava_cl_svm_blocks[i] = ava_cl_svm_blocks[--ava_cl_svm_count];
			break;
		}
	}
	pthread_mutex_unlock(&ava_cl_svm_lock);
	if (b.ptr == NULL)
		return;
	ava_cl_svm_release(b.svm);
	free(b.ptr);
}

cl_int clEnqueueSVMFree(cl_command_queue command_queue, cl_uint num_svm_pointers,
			void *svm_pointers[],
			void(CL_CALLBACK *pfn_free_func)(cl_command_queue queue,
							 cl_uint num_svm_pointers,
							 void *svm_pointers[], void *user_data),
			void *user_data, cl_uint num_events_in_wait_list,
			const cl_event *event_wait_list, cl_event *event)
{
	cl_int rc;

	if (num_svm_pointers == 0 || svm_pointers == NULL)
		return CL_INVALID_VALUE;
	/* The memory goes once everything before it in the queue is done. */
	rc = clEnqueueBarrierWithWaitList(command_queue, num_events_in_wait_list, event_wait_list,
					  event);
	if (rc == CL_SUCCESS)
		rc = clFinish(command_queue);
	if (rc != CL_SUCCESS)
		return rc;
	if (pfn_free_func != NULL) {
		pfn_free_func(command_queue, num_svm_pointers, svm_pointers, user_data);
		return CL_SUCCESS;
	}
	for (cl_uint i = 0; i < num_svm_pointers; ++i)
		clSVMFree(NULL, svm_pointers[i]);
	return CL_SUCCESS;
}

cl_int clEnqueueSVMMemcpy(cl_command_queue command_queue, cl_bool blocking_copy, void *dst_ptr,
			  const void *src_ptr, size_t size, cl_uint num_events_in_wait_list,
			  const cl_event *event_wait_list, cl_event *event)
{
	struct ava_cl_svm_block d = {NULL, 0, NULL}, s = {NULL, 0, NULL};
	size_t doff = 0, soff = 0;
	int dsvm, ssvm;

	(void)blocking_copy; /* done when this returns */
	if (dst_ptr == NULL || src_ptr == NULL)
		return CL_INVALID_VALUE;
	dsvm = ava_cl_svm_find(dst_ptr, &d, &doff);
	ssvm = ava_cl_svm_find(src_ptr, &s, &soff);
	if ((dsvm && size > d.size - doff) || (ssvm && size > s.size - soff))
		return CL_INVALID_VALUE;
	return ava_cl_svm_memcpy(command_queue, dsvm ? d.svm : NULL, doff, ssvm ? s.svm : NULL, soff,
				 size, ssvm ? NULL : src_ptr, dsvm ? NULL : dst_ptr,
				 num_events_in_wait_list, event_wait_list, event);
}

cl_int clEnqueueSVMMemFill(cl_command_queue command_queue, void *svm_ptr, const void *pattern,
			   size_t pattern_size, size_t size, cl_uint num_events_in_wait_list,
			   const cl_event *event_wait_list, cl_event *event)
{
	struct ava_cl_svm_block b;
	size_t off;

	if (svm_ptr == NULL || !ava_cl_svm_find(svm_ptr, &b, &off))
		return CL_INVALID_VALUE;
	return ava_cl_svm_fill(command_queue, b.svm, off, pattern, pattern_size, size,
			       num_events_in_wait_list, event_wait_list, event);
}

cl_int clEnqueueSVMMap(cl_command_queue command_queue, cl_bool blocking_map, cl_map_flags flags,
		       void *svm_ptr, size_t size, cl_uint num_events_in_wait_list,
		       const cl_event *event_wait_list, cl_event *event)
{
	struct ava_cl_svm_block b;
	struct ava_cl_svm_mapping *m;
	size_t off;
	cl_int rc;

	(void)blocking_map; /* the data is in place when this returns */
	if (svm_ptr == NULL || !ava_cl_svm_find(svm_ptr, &b, &off) || size > b.size - off)
		return CL_INVALID_VALUE;
	m = malloc(sizeof(*m));
	if (m == NULL)
		return CL_OUT_OF_HOST_MEMORY;
	rc = ava_cl_svm_map(command_queue, b.svm, off, size, flags, svm_ptr,
			    num_events_in_wait_list, event_wait_list, event);
	if (rc != CL_SUCCESS) {
		free(m);
		return rc;
	}
	m->ptr = svm_ptr;
	m->size = size;
	m->flags = flags ? flags : CL_MAP_READ | CL_MAP_WRITE;
	pthread_mutex_lock(&ava_cl_svm_lock);
	m->next = ava_cl_svm_maps;
	ava_cl_svm_maps = m;
	pthread_mutex_unlock(&ava_cl_svm_lock);
	return CL_SUCCESS;
}

cl_int clEnqueueSVMUnmap(cl_command_queue command_queue, void *svm_ptr,
			 cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			 cl_event *event)
{
	struct ava_cl_svm_mapping **pp, *m = NULL;
	struct ava_cl_svm_block b;
	size_t off, size;
	cl_int rc;

	if (svm_ptr == NULL || !ava_cl_svm_find(svm_ptr, &b, &off))
		return CL_INVALID_VALUE;
	pthread_mutex_lock(&ava_cl_svm_lock);
	for (pp = &ava_cl_svm_maps; *pp != NULL; pp = &(*pp)->next) {
		if ((*pp)->ptr == svm_ptr) {
			m = *pp;
			*pp = m->next;
			break;
		}
	}
	pthread_mutex_unlock(&ava_cl_svm_lock);
	size = m ? m->size : b.size - off;
	rc = ava_cl_svm_unmap(command_queue, b.svm, off, size,
			      m && (m->flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION))
				      ? svm_ptr
				      : NULL,
			      num_events_in_wait_list, event_wait_list, event);
	free(m);
	return rc;
}

cl_int clEnqueueSVMMigrateMem(cl_command_queue command_queue, cl_uint num_svm_pointers,
			      const void **svm_pointers, const size_t *sizes,
			      cl_mem_migration_flags flags, cl_uint num_events_in_wait_list,
			      const cl_event *event_wait_list, cl_event *event)
{
	ava_cl_svm *svms;
	size_t *offsets;
	cl_int rc = CL_SUCCESS;

	if (num_svm_pointers == 0 || svm_pointers == NULL)
		return ava_cl_svm_migrate(command_queue, num_svm_pointers, NULL, NULL, sizes, flags,
					  num_events_in_wait_list, event_wait_list, event);
	svms = calloc(num_svm_pointers, sizeof(*svms));
	offsets = calloc(num_svm_pointers, sizeof(*offsets));
	if (svms == NULL || offsets == NULL)
		rc = CL_OUT_OF_HOST_MEMORY;
	for (cl_uint i = 0; rc == CL_SUCCESS && i < num_svm_pointers; ++i) {
		struct ava_cl_svm_block b;

		if (!ava_cl_svm_find(svm_pointers[i], &b, &offsets[i]))
			rc = CL_INVALID_VALUE;
		else
			svms[i] = b.svm;
	}
	if (rc == CL_SUCCESS)
		rc = ava_cl_svm_migrate(command_queue, num_svm_pointers, svms, offsets, sizes, flags,
					num_events_in_wait_list, event_wait_list, event);
	free(svms);
	free(offsets);
	return rc;
}

cl_int clSetKernelArgSVMPointer(cl_kernel kernel, cl_uint arg_index, const void *arg_value)
{
	struct ava_cl_svm_block b;
	size_t off = 0;

	if (arg_value == NULL)
		return ava_cl_set_kernel_arg_svm(kernel, arg_index, NULL, 0);
	if (!ava_cl_svm_find(arg_value, &b, &off))
		return CL_INVALID_ARG_VALUE;
	return ava_cl_set_kernel_arg_svm(kernel, arg_index, b.svm, off);
}

cl_int clSetKernelExecInfo(cl_kernel kernel, cl_kernel_exec_info param_name,
			   size_t param_value_size, const void *param_value)
{
	const void *const *ptrs = param_value;
	cl_uint n = (cl_uint)(param_value_size / sizeof(void *));
	ava_cl_svm *svms;
	size_t *offsets;
	cl_int rc = CL_SUCCESS;

	if (param_name != CL_KERNEL_EXEC_INFO_SVM_PTRS)
		return ava_cl_set_kernel_exec_info(kernel, param_name, param_value_size,
						   param_value);
	if (param_value == NULL || n == 0 || param_value_size % sizeof(void *) != 0)
		return CL_INVALID_VALUE;
	svms = calloc(n, sizeof(*svms));
	offsets = calloc(n, sizeof(*offsets));
	if (svms == NULL || offsets == NULL)
		rc = CL_OUT_OF_HOST_MEMORY;
	for (cl_uint i = 0; rc == CL_SUCCESS && i < n; ++i) {
		struct ava_cl_svm_block b;

		if (!ava_cl_svm_find(ptrs[i], &b, &offsets[i]))
			rc = CL_INVALID_VALUE;
		else
			svms[i] = b.svm;
	}
	if (rc == CL_SUCCESS)
		rc = ava_cl_set_kernel_svm_ptrs(kernel, n, svms, offsets);
	free(svms);
	free(offsets);
	return rc;
}
ava_end_replacement;

/* ------------------------------------------------------------------------
 * Extension entry points the ICD loader exports
 * ------------------------------------------------------------------------ */
cl_int clRetainDeviceEXT(cl_device_id device)
{
	ava_argument(device) { ava_retains; }
}

cl_int clReleaseDeviceEXT(cl_device_id device)
{
	ava_argument(device) { ava_deallocates; }
}

/* The KHR form of the core query; PoCL's ICD table has no entry for it. */
cl_int clGetKernelSubGroupInfoKHR(cl_kernel in_kernel, cl_device_id in_device,
				  cl_kernel_sub_group_info param_name, size_t input_value_size,
				  const void *input_value, size_t param_value_size, void *param_value,
				  size_t *param_value_size_ret)
{
	ava_argument(input_value) { ava_in; ava_buffer(input_value_size); }
	ava_argument(param_value) { ava_out; ava_buffer(param_value_size); }
	ava_argument(param_value_size_ret) { ava_out; ava_buffer(1); }
	ava_disable_native_call;
	return clGetKernelSubGroupInfo(in_kernel, in_device, param_name, input_value_size,
				       input_value, param_value_size, param_value,
				       param_value_size_ret);
}

/* PoCL's ICD table has no entry for it (ocl-icd would jump to NULL). */
cl_int clCreateSubDevicesEXT(cl_device_id in_device,
			     const cl_device_partition_property_ext *properties,
			     cl_uint num_entries, cl_device_id *out_devices, cl_uint *num_devices)
{
	ava_unsupported;
	ava_error(CL_INVALID_OPERATION);
}

/* cl_pocl_content_size: the worker finds PoCL's function the way a program would. */
cl_int ava_cl_set_content_size_buffer(cl_mem buffer, cl_mem content_size_buffer)
{
	ava_disable_native_call;
	typedef cl_int (*ava_fn)(cl_mem, cl_mem);
	cl_platform_id ava_platform = NULL;
	ava_fn ava_set = NULL;
	if (clGetPlatformIDs(1, &ava_platform, NULL) == CL_SUCCESS)
		ava_set = (ava_fn)clGetExtensionFunctionAddressForPlatform(
			ava_platform, "clSetContentSizeBufferPoCL");
	if (ava_set == NULL)
		return CL_INVALID_OPERATION;
	if (buffer == NULL || content_size_buffer == NULL)
		return CL_INVALID_MEM_OBJECT;
	return ava_set(buffer, content_size_buffer);
}

/* ------------------------------------------------------------------------
 * Not remotable: host function pointers run by the device, GL/EGL sharing.
 * They fail the way an implementation without the feature does.
 * ------------------------------------------------------------------------ */
cl_int clEnqueueNativeKernel(cl_command_queue command_queue, void(CL_CALLBACK *user_func)(void *),
			     void *args, size_t cb_args, cl_uint num_mem_objects,
			     const cl_mem *mem_list, const void **args_mem_loc,
			     cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
			     cl_event *event)
{
	ava_unsupported;
	ava_error(CL_INVALID_OPERATION);
}











cl_int clSetProgramReleaseCallback(cl_program program,
				   void(CL_CALLBACK *pfn_notify)(cl_program program,
								 void *user_data),
				   void *user_data)
{
	ava_unsupported;
	ava_error(CL_INVALID_OPERATION);
}

/* The symbol versions of ocl-icd's libOpenCL.so.1. */
ava_export_version("OPENCL_1.0", clBuildProgram, clCreateBuffer, clCreateCommandQueue,
		   clCreateContext, clCreateContextFromType, clCreateEventFromEGLSyncKHR,
		   clCreateFromEGLImageKHR, clCreateFromGLBuffer, clCreateFromGLRenderbuffer,
		   clCreateFromGLTexture2D, clCreateFromGLTexture3D, clCreateImage2D,
		   clCreateImage3D, clCreateKernel, clCreateKernelsInProgram,
		   clCreateProgramWithBinary, clCreateProgramWithSource, clCreateSampler,
		   clEnqueueAcquireEGLObjectsKHR, clEnqueueAcquireGLObjects, clEnqueueBarrier,
		   clEnqueueCopyBuffer, clEnqueueCopyBufferToImage, clEnqueueCopyImage,
		   clEnqueueCopyImageToBuffer, clEnqueueMapBuffer, clEnqueueMapImage,
		   clEnqueueMarker, clEnqueueNDRangeKernel, clEnqueueNativeKernel,
		   clEnqueueReadBuffer, clEnqueueReadImage, clEnqueueReleaseEGLObjectsKHR,
		   clEnqueueReleaseGLObjects, clEnqueueTask, clEnqueueUnmapMemObject,
		   clEnqueueWaitForEvents, clEnqueueWriteBuffer, clEnqueueWriteImage, clFinish,
		   clFlush, clGetCommandQueueInfo, clGetContextInfo, clGetDeviceIDs,
		   clGetDeviceInfo, clGetEventInfo, clGetEventProfilingInfo,
		   clGetExtensionFunctionAddress, clGetGLContextInfoKHR, clGetGLObjectInfo,
		   clGetGLTextureInfo, clGetImageInfo, clGetKernelInfo, clGetKernelWorkGroupInfo,
		   clGetMemObjectInfo, clGetPlatformIDs, clGetPlatformInfo, clGetProgramBuildInfo,
		   clGetProgramInfo, clGetSamplerInfo, clGetSupportedImageFormats,
		   clReleaseCommandQueue, clReleaseContext, clReleaseEvent, clReleaseKernel,
		   clReleaseMemObject, clReleaseProgram, clReleaseSampler, clRetainCommandQueue,
		   clRetainContext, clRetainEvent, clRetainKernel, clRetainMemObject,
		   clRetainProgram, clRetainSampler, clSetCommandQueueProperty, clSetKernelArg,
		   clUnloadCompiler, clWaitForEvents);
ava_export_version("OPENCL_1.1", clCreateEventFromGLsyncKHR, clCreateSubBuffer,
		   clCreateSubDevicesEXT, clCreateUserEvent, clEnqueueCopyBufferRect,
		   clEnqueueReadBufferRect, clEnqueueWriteBufferRect, clReleaseDeviceEXT,
		   clRetainDeviceEXT, clSetEventCallback, clSetMemObjectDestructorCallback,
		   clSetUserEventStatus);
ava_export_version("OPENCL_1.2", clCompileProgram, clCreateFromGLTexture, clCreateImage,
		   clCreateProgramWithBuiltInKernels, clCreateSubDevices,
		   clEnqueueBarrierWithWaitList, clEnqueueFillBuffer, clEnqueueFillImage,
		   clEnqueueMarkerWithWaitList, clEnqueueMigrateMemObjects,
		   clGetExtensionFunctionAddressForPlatform, clGetKernelArgInfo, clLinkProgram,
		   clReleaseDevice, clRetainDevice, clUnloadPlatformCompiler);
ava_export_version("OPENCL_2.0", clCreateCommandQueueWithProperties, clCreatePipe,
		   clCreateSamplerWithProperties, clEnqueueSVMFree, clEnqueueSVMMap,
		   clEnqueueSVMMemFill, clEnqueueSVMMemcpy, clEnqueueSVMUnmap,
		   clGetKernelSubGroupInfoKHR, clGetPipeInfo, clSVMAlloc, clSVMFree,
		   clSetKernelArgSVMPointer, clSetKernelExecInfo);
ava_export_version("OPENCL_2.1", clCloneKernel, clCreateProgramWithIL, clEnqueueSVMMigrateMem,
		   clGetDeviceAndHostTimer, clGetHostTimer, clGetKernelSubGroupInfo,
		   clSetDefaultDeviceCommandQueue);
ava_export_version("OPENCL_2.2", clSetProgramReleaseCallback, clSetProgramSpecializationConstant);
ava_export_version("OPENCL_3.0", clCreateBufferWithProperties, clCreateImageWithProperties,
		   clSetContextDestructorCallback);
