/*
 * Functions the OpenCL ICD loader (ocl-icd) exports besides the core API of
 * CL/cl.h: GL/EGL sharing and a few extensions. A guest libOpenCL.so.1 must
 * export them too (programs may link against them); the spec marks them
 * unsupported. Declared again here because cava remotes what the headers a
 * spec includes declare, and CL/cl_ext.h declares far more than ocl-icd exports.
 */
#ifndef AVA_OPENCL_ICD_EXPORTS_H
#define AVA_OPENCL_ICD_EXPORTS_H

#include <CL/cl.h>
#include <CL/cl_egl.h>
#include <CL/cl_ext.h>
#include <CL/cl_gl.h>

extern cl_int clGetGLContextInfoKHR(const cl_context_properties *properties,
				    cl_gl_context_info param_name, size_t param_value_size,
				    void *param_value, size_t *param_value_size_ret);
extern cl_mem clCreateFromGLBuffer(cl_context context, cl_mem_flags flags, cl_GLuint bufobj,
				   cl_int *errcode_ret);
extern cl_mem clCreateFromGLTexture(cl_context context, cl_mem_flags flags, cl_GLenum target,
				    cl_GLint miplevel, cl_GLuint texture, cl_int *errcode_ret);
extern cl_mem clCreateFromGLRenderbuffer(cl_context context, cl_mem_flags flags,
					 cl_GLuint renderbuffer, cl_int *errcode_ret);
extern cl_int clGetGLObjectInfo(cl_mem memobj, cl_gl_object_type *gl_object_type,
				cl_GLuint *gl_object_name);
extern cl_int clGetGLTextureInfo(cl_mem memobj, cl_gl_texture_info param_name,
				 size_t param_value_size, void *param_value,
				 size_t *param_value_size_ret);
extern cl_int clEnqueueAcquireGLObjects(cl_command_queue command_queue, cl_uint num_objects,
					const cl_mem *mem_objects, cl_uint num_events_in_wait_list,
					const cl_event *event_wait_list, cl_event *event);
extern cl_int clEnqueueReleaseGLObjects(cl_command_queue command_queue, cl_uint num_objects,
					const cl_mem *mem_objects, cl_uint num_events_in_wait_list,
					const cl_event *event_wait_list, cl_event *event);
extern cl_mem clCreateFromGLTexture2D(cl_context context, cl_mem_flags flags, cl_GLenum target,
				      cl_GLint miplevel, cl_GLuint texture, cl_int *errcode_ret);
extern cl_mem clCreateFromGLTexture3D(cl_context context, cl_mem_flags flags, cl_GLenum target,
				      cl_GLint miplevel, cl_GLuint texture, cl_int *errcode_ret);
extern cl_event clCreateEventFromGLsyncKHR(cl_context context, cl_GLsync sync,
					   cl_int *errcode_ret);
extern cl_mem clCreateFromEGLImageKHR(cl_context context, CLeglDisplayKHR egldisplay,
				      CLeglImageKHR eglimage, cl_mem_flags flags,
				      const cl_egl_image_properties_khr *properties,
				      cl_int *errcode_ret);
extern cl_int clEnqueueAcquireEGLObjectsKHR(cl_command_queue command_queue, cl_uint num_objects,
					    const cl_mem *mem_objects,
					    cl_uint num_events_in_wait_list,
					    const cl_event *event_wait_list, cl_event *event);
extern cl_int clEnqueueReleaseEGLObjectsKHR(cl_command_queue command_queue, cl_uint num_objects,
					    const cl_mem *mem_objects,
					    cl_uint num_events_in_wait_list,
					    const cl_event *event_wait_list, cl_event *event);
extern cl_event clCreateEventFromEGLSyncKHR(cl_context context, CLeglSyncKHR sync,
					    CLeglDisplayKHR display, cl_int *errcode_ret);
extern cl_int clCreateSubDevicesEXT(cl_device_id in_device,
				    const cl_device_partition_property_ext *properties,
				    cl_uint num_entries, cl_device_id *out_devices,
				    cl_uint *num_devices);
extern cl_int clRetainDeviceEXT(cl_device_id device);
extern cl_int clReleaseDeviceEXT(cl_device_id device);
extern cl_int clGetKernelSubGroupInfoKHR(cl_kernel in_kernel, cl_device_id in_device,
					 cl_kernel_sub_group_info param_name,
					 size_t input_value_size, const void *input_value,
					 size_t param_value_size, void *param_value,
					 size_t *param_value_size_ret);

#endif /* AVA_OPENCL_ICD_EXPORTS_H */
