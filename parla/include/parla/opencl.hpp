// SPDX-License-Identifier: MIT
// OpenCL devices (libparla_opencl): every device of every platform the
// OpenCL library shows, natively or through ava's guest library, which
// is then just another OpenCL library. A device's architecture is its
// OpenCL type (CL_DEVICE_TYPE_CPU -> Arch::cl_cpu, GPU -> gpu, others ->
// accelerator); its memory is what it reports (CL_DEVICE_GLOBAL_MEM_SIZE:
// under ava, the quota the host grants).
#pragma once

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "parla/device.hpp"

namespace parla {

class OpenclDevice : public Device {
public:
  // Takes two in-order queues (compute, copy) of its own, in `context`
  // (retained; a context of the device's platform shared with its other
  // devices, so that their queues can wait for each other's events), or
  // in a context of its own when none is given.
  explicit OpenclDevice(cl_device_id device, cl_context context = nullptr);
  ~OpenclDevice() override;

  Arch arch() const override { return arch_; }
  uint64_t memory_capacity() const override { return memory_; }
  double vcus() const override { return 1; }
  std::string description() const override { return description_; }
  // A cl_mem (as void *) whose pages exist (the buffer is filled once), or
  // nullptr when the device refuses it.
  void *allocate(size_t bytes) override;
  void release(void *memory) override;
  void write(void *memory, size_t offset, const void *from, size_t bytes) override;
  void read(const void *memory, size_t offset, void *to, size_t bytes) override;
  void synchronize() override;
  // A marker on the compute queue; the device's watcher thread calls done
  // once it completed (one clWaitForEvents for every marker queued
  // meanwhile: the queue is in order, so the last one covers the others).
  std::shared_ptr<DeviceEvent> record(std::function<void(std::exception_ptr)> done) override;
  // The compute queue waits for an event of this context (nothing to do
  // for its own: the queue is in order).
  bool queue_after(const DeviceEvent &event) override;
  bool has_events() const override { return true; }

  cl_device_id id() const { return device_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }
  cl_command_queue copy_queue() const { return copy_queue_; }
  uint64_t max_allocation() const override { return max_alloc_; }

private:
  cl_device_id device_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_command_queue copy_queue_ = nullptr;
  Arch arch_ = Arch::accelerator;
  uint64_t memory_ = 0;
  uint64_t max_alloc_ = 0;
  std::string description_;
  // Tells record()'s done calls; stopped first in the destructor.
  std::unique_ptr<EventWatcher> watcher_ = std::make_unique<EventWatcher>();
};

// Every OpenCL device there is, the devices of one platform sharing one
// context (empty when there is no platform); throws
// parla::Error naming the call when the OpenCL library fails otherwise.
std::vector<std::unique_ptr<Device>> opencl_devices();

// "CL_OUT_OF_RESOURCES (-5)" for messages.
std::string cl_error_text(cl_int error);
// Throws parla::Error "what failed: CL_..." unless error is CL_SUCCESS.
void cl_check(cl_int error, const char *what);

// Sets a kernel's arguments 0, 1, ... to args (each passed by its size).
template <class... A> void set_kernel_args(cl_kernel kernel, const A &...args) {
  cl_uint index = 0;
  (cl_check(clSetKernelArg(kernel, index++, sizeof(A), &args), "clSetKernelArg"), ...);
}

// One kernel per device, built from source on a device's first use (the
// build log is in the error when it fails). A cl_kernel is not for two
// threads at once: tasks that share one need the whole device (vcus 1).
class KernelCache {
public:
  KernelCache(std::string source, std::string kernel, std::string options = {})
      : source_(std::move(source)), kernel_(std::move(kernel)), options_(std::move(options)) {}
  ~KernelCache();
  KernelCache(const KernelCache &) = delete;
  KernelCache &operator=(const KernelCache &) = delete;
  cl_kernel get(OpenclDevice &device);

private:
  std::string source_, kernel_, options_;
  std::mutex mu_;
  std::map<OpenclDevice *, std::pair<cl_program, cl_kernel>> built_;
};

} // namespace parla
