// SPDX-License-Identifier: MIT
// CUDA devices (libparla_cuda, built where the CUDA toolkit is): every
// device the CUDA runtime shows, natively or through ava's guest
// libcudart. A CUDA device is a `gpu`; its memory is what cudaMemGetInfo
// reports as total (under ava: the quota the host grants). Each device has
// a compute stream and a copy stream of its own; calls set the device
// first, since CUDA's current device belongs to the calling thread and
// task bodies run on any worker.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "parla/device.hpp"

namespace parla {

class CudaDevice : public Device {
public:
  explicit CudaDevice(int ordinal);
  ~CudaDevice() override;

  Arch arch() const override { return Arch::gpu; }
  uint64_t memory_capacity() const override { return memory_; }
  double vcus() const override { return 1; }
  std::string description() const override { return description_; }
  void *allocate(size_t bytes) override;
  void release(void *memory) override;
  void write(void *memory, size_t offset, const void *from, size_t bytes) override;
  void read(const void *memory, size_t offset, void *to, size_t bytes) override;
  void synchronize() override;
  // An event recorded on the stream; a watcher thread calls done once it
  // completed (one cudaEventSynchronize for every event recorded meanwhile).
  std::shared_ptr<DeviceEvent> record(std::function<void(std::exception_ptr)> done) override;
  // The stream waits for a CUDA event of any device (cudaStreamWaitEvent).
  bool queue_after(const DeviceEvent &event) override;
  bool has_events() const override { return true; }

  int ordinal() const { return ordinal_; }
  // Makes this device the calling thread's current one (before kernels).
  void make_current() const;
  cudaStream_t stream() const { return stream_; }

private:
  int ordinal_;
  cudaStream_t stream_ = nullptr;
  uint64_t memory_ = 0;
  std::string description_;
  // Tells record()'s done calls; stopped first in the destructor.
  std::unique_ptr<EventWatcher> watcher_ = std::make_unique<EventWatcher>();
};

// Every CUDA device; empty when the runtime finds none (no driver, no
// GPU: *why says what cudaGetDeviceCount answered). Throws parla::Error on
// other failures.
std::vector<std::unique_ptr<Device>> cuda_devices(std::string *why = nullptr);

} // namespace parla
