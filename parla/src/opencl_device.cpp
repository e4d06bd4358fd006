// SPDX-License-Identifier: MIT
#include "parla/opencl.hpp"

#include "parla/error.hpp"

namespace parla {

namespace {

void check(cl_int e, const char *call) {
  cl_check(e, call);
}

template <class T> T info(cl_device_id d, cl_device_info what) {
  T v{};
  check(clGetDeviceInfo(d, what, sizeof v, &v, nullptr), "clGetDeviceInfo");
  return v;
}

std::string info_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  check(clGetDeviceInfo(d, what, 0, nullptr, &n), "clGetDeviceInfo");
  std::string s(n, '\0');
  check(clGetDeviceInfo(d, what, n, s.data(), nullptr), "clGetDeviceInfo");
  while (!s.empty() && s.back() == '\0')
    s.pop_back();
  return s;
}

} // namespace

std::string cl_error_text(cl_int e) {
  const char *name = nullptr;
  switch (e) {
  case CL_DEVICE_NOT_FOUND:
    name = "CL_DEVICE_NOT_FOUND";
    break;
  case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    name = "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    break;
  case CL_OUT_OF_RESOURCES:
    name = "CL_OUT_OF_RESOURCES";
    break;
  case CL_OUT_OF_HOST_MEMORY:
    name = "CL_OUT_OF_HOST_MEMORY";
    break;
  case CL_INVALID_VALUE:
    name = "CL_INVALID_VALUE";
    break;
  case CL_INVALID_BUFFER_SIZE:
    name = "CL_INVALID_BUFFER_SIZE";
    break;
  case -1001: // CL_PLATFORM_NOT_FOUND_KHR (the ICD loader)
    name = "CL_PLATFORM_NOT_FOUND_KHR";
    break;
  default:
    name = "OpenCL error";
  }
  return std::string(name) + " (" + std::to_string(e) + ")";
}

void cl_check(cl_int e, const char *what) {
  if (e != CL_SUCCESS)
    throw Error(std::string("parla: ") + what + " failed: " + cl_error_text(e));
}

KernelCache::~KernelCache() {
  for (auto &[device, pk] : built_) {
    clReleaseKernel(pk.second);
    clReleaseProgram(pk.first);
  }
}

cl_kernel KernelCache::get(OpenclDevice &d) {
  std::lock_guard lock(mu_);
  if (auto it = built_.find(&d); it != built_.end())
    return it->second.second;
  cl_int e = CL_SUCCESS;
  const char *text = source_.c_str();
  cl_program p = clCreateProgramWithSource(d.context(), 1, &text, nullptr, &e);
  check(e, "clCreateProgramWithSource");
  cl_device_id id = d.id();
  e = clBuildProgram(p, 1, &id, options_.c_str(), nullptr, nullptr);
  if (e != CL_SUCCESS) {
    size_t n = 0;
    std::string log;
    if (clGetProgramBuildInfo(p, id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) == CL_SUCCESS && n > 0) {
      log.resize(n);
      clGetProgramBuildInfo(p, id, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    }
    clReleaseProgram(p);
    throw Error("parla: clBuildProgram failed on " + d.name() + ": " + cl_error_text(e) + "\n" +
                log);
  }
  cl_kernel k = clCreateKernel(p, kernel_.c_str(), &e);
  if (e != CL_SUCCESS) {
    clReleaseProgram(p);
    throw Error("parla: clCreateKernel(" + kernel_ + ") failed: " + cl_error_text(e));
  }
  built_[&d] = {p, k};
  return k;
}

OpenclDevice::OpenclDevice(cl_device_id device, cl_context context) : device_(device) {
  const cl_device_type type = info<cl_device_type>(device, CL_DEVICE_TYPE);
  arch_ = type & CL_DEVICE_TYPE_GPU   ? Arch::gpu
          : type & CL_DEVICE_TYPE_CPU ? Arch::cl_cpu
                                      : Arch::accelerator;
  memory_ = info<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE);
  max_alloc_ = info<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  description_ =
      info_string(device, CL_DEVICE_NAME) + " (" + std::to_string(memory_ >> 20) + " MiB)";
  cl_int e = CL_SUCCESS;
  if (context != nullptr) {
    check(clRetainContext(context), "clRetainContext");
    context_ = context;
  } else {
    context_ = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &e);
    check(e, "clCreateContext");
  }
  queue_ = clCreateCommandQueueWithProperties(context_, device_, nullptr, &e);
  check(e, "clCreateCommandQueueWithProperties");
  copy_queue_ = clCreateCommandQueueWithProperties(context_, device_, nullptr, &e);
  check(e, "clCreateCommandQueueWithProperties");
}

OpenclDevice::~OpenclDevice() {
  watcher_.reset(); // after it told every marker queued (normally none: the runtime waited)
  if (copy_queue_)
    clReleaseCommandQueue(copy_queue_);
  if (queue_)
    clReleaseCommandQueue(queue_);
  if (context_)
    clReleaseContext(context_);
}

void *OpenclDevice::allocate(size_t bytes) {
  cl_int e = CL_SUCCESS;
  cl_mem m = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes == 0 ? 1 : bytes, nullptr, &e);
  if (e != CL_SUCCESS)
    return nullptr;
  // Drivers allocate lazily: a fill makes the memory real now, so that a
  // device over its limit says so here, not in a later kernel.
  const cl_uchar zero = 0;
  e = clEnqueueFillBuffer(copy_queue_, m, &zero, 1, 0, bytes == 0 ? 1 : bytes, 0, nullptr, nullptr);
  if (e == CL_SUCCESS)
    e = clFinish(copy_queue_);
  if (e != CL_SUCCESS) {
    clReleaseMemObject(m);
    return nullptr;
  }
  return m;
}

void OpenclDevice::release(void *memory) {
  if (memory != nullptr)
    clReleaseMemObject(static_cast<cl_mem>(memory));
}

// Copies go on the compute queue: in order after the kernels of the task
// that wrote the memory.
void OpenclDevice::write(void *memory, size_t offset, const void *from, size_t bytes) {
  check(clEnqueueWriteBuffer(queue_, static_cast<cl_mem>(memory), CL_TRUE, offset, bytes, from, 0,
                             nullptr, nullptr),
        "clEnqueueWriteBuffer");
}

void OpenclDevice::read(const void *memory, size_t offset, void *to, size_t bytes) {
  check(clEnqueueReadBuffer(queue_, static_cast<cl_mem>(const_cast<void *>(memory)), CL_TRUE,
                            offset, bytes, to, 0, nullptr, nullptr),
        "clEnqueueReadBuffer");
}

void OpenclDevice::synchronize() {
  check(clFinish(queue_), "clFinish");
}

namespace {

using DoneFn = std::function<void(std::exception_ptr)>;

std::exception_ptr failure_of(cl_int status) {
  // A negative status: a command before the marker failed.
  return std::make_exception_ptr(
      Error("parla: the device work of the task failed: " + cl_error_text(status)));
}

class OpenclEvent final : public DeviceEvent {
public:
  OpenclEvent(cl_event event, cl_context context, cl_command_queue queue)
      : event_(event), context_(context), queue_(queue) {}
  ~OpenclEvent() override { clReleaseEvent(event_); }
  OpenclEvent(const OpenclEvent &) = delete;
  OpenclEvent &operator=(const OpenclEvent &) = delete;
  void wait() const override {
    const cl_int e = clWaitForEvents(1, &event_);
    if (e == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) {
      cl_int status = CL_SUCCESS;
      check(clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                           nullptr),
            "clGetEventInfo");
      std::rethrow_exception(failure_of(status));
    }
    check(e, "clWaitForEvents");
  }
  cl_event event() const { return event_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }

private:
  cl_event event_;
  cl_context context_;
  cl_command_queue queue_;
};

} // namespace

std::shared_ptr<DeviceEvent> OpenclDevice::record(DoneFn done) {
  cl_event marker = nullptr;
  check(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &marker), "clEnqueueMarkerWithWaitList");
  auto event = std::make_shared<OpenclEvent>(marker, context_, queue_);
  // Without a flush a driver may hold the work back until someone waits
  // (through ava, an asynchronous call).
  check(clFlush(queue_), "clFlush");
  watcher_->add(event, std::move(done));
  return event;
}

bool OpenclDevice::queue_after(const DeviceEvent &event) {
  const auto *e = dynamic_cast<const OpenclEvent *>(&event);
  if (e == nullptr || e->context() != context_)
    return false;
  if (e->queue() == queue_)
    return true; // in order behind it already
  cl_event ev = e->event();
  check(clEnqueueBarrierWithWaitList(queue_, 1, &ev, nullptr), "clEnqueueBarrierWithWaitList");
  return true;
}

std::vector<std::unique_ptr<Device>> opencl_devices() {
  std::vector<std::unique_ptr<Device>> out;
  cl_uint n = 0;
  cl_int e = clGetPlatformIDs(0, nullptr, &n);
  if (e == -1001 || n == 0)
    return out;
  check(e, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(n);
  check(clGetPlatformIDs(n, platforms.data(), nullptr), "clGetPlatformIDs");
  for (cl_platform_id p : platforms) {
    cl_uint count = 0;
    e = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &count);
    if (e == CL_DEVICE_NOT_FOUND || count == 0)
      continue;
    check(e, "clGetDeviceIDs");
    std::vector<cl_device_id> ids(count);
    check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr), "clGetDeviceIDs");
    // One context for the platform's devices: a task on one device can
    // then wait for a dependency's work on another on the device.
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                           reinterpret_cast<cl_context_properties>(p), 0};
    cl_context context = clCreateContext(props, count, ids.data(), nullptr, nullptr, &e);
    if (context == nullptr) {
      // A platform that will not put its devices in one context: each gets
      // its own (dependencies across them are then waited for on the host).
      for (cl_device_id d : ids)
        out.push_back(std::make_unique<OpenclDevice>(d));
      continue;
    }
    try {
      for (cl_device_id d : ids)
        out.push_back(std::make_unique<OpenclDevice>(d, context));
    } catch (...) {
      clReleaseContext(context);
      throw;
    }
    clReleaseContext(context); // the devices hold it
  }
  return out;
}

} // namespace parla
