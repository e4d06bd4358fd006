// SPDX-License-Identifier: MIT
#include "parla/cuda.hpp"

#include "parla/error.hpp"

namespace parla {

namespace {

void check(cudaError_t e, const char *call) {
  if (e != cudaSuccess)
    throw Error(std::string("parla: ") + call + " failed: " + cudaGetErrorName(e) + " (" +
                cudaGetErrorString(e) + ")");
}

class CudaEvent final : public DeviceEvent {
public:
  explicit CudaEvent(cudaEvent_t event) : event_(event) {}
  ~CudaEvent() override { cudaEventDestroy(event_); }
  CudaEvent(const CudaEvent &) = delete;
  CudaEvent &operator=(const CudaEvent &) = delete;
  void wait() const override {
    const cudaError_t e = cudaEventSynchronize(event_);
    if (e != cudaSuccess)
      throw Error(std::string("parla: the device work of the task failed: ") + cudaGetErrorName(e) +
                  " (" + cudaGetErrorString(e) + ")");
  }
  cudaEvent_t event() const { return event_; }

private:
  cudaEvent_t event_;
};

} // namespace

CudaDevice::CudaDevice(int ordinal) : ordinal_(ordinal) {
  make_current();
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  memory_ = total;
  description_ = std::string(prop.name) + " (" + std::to_string(total >> 20) + " MiB)";
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}

CudaDevice::~CudaDevice() {
  watcher_.reset(); // after it told every event recorded (normally none: the runtime waited)
  if (stream_ != nullptr) {
    cudaSetDevice(ordinal_);
    cudaStreamDestroy(stream_);
  }
}

void CudaDevice::make_current() const {
  check(cudaSetDevice(ordinal_), "cudaSetDevice");
}

void *CudaDevice::allocate(size_t bytes) {
  make_current();
  void *p = nullptr;
  if (cudaMalloc(&p, bytes == 0 ? 1 : bytes) != cudaSuccess) {
    cudaGetLastError(); // an allocation failure is an answer, not a sticky error
    return nullptr;
  }
  return p;
}

void CudaDevice::release(void *memory) {
  if (memory == nullptr)
    return;
  make_current();
  cudaFree(memory);
}

// Copies go on the compute stream: in order after the kernels of the task
// that wrote the memory.
void CudaDevice::write(void *memory, size_t offset, const void *from, size_t bytes) {
  make_current();
  check(cudaMemcpyAsync(static_cast<char *>(memory) + offset, from, bytes, cudaMemcpyHostToDevice,
                        stream_),
        "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void CudaDevice::read(const void *memory, size_t offset, void *to, size_t bytes) {
  make_current();
  check(cudaMemcpyAsync(to, static_cast<const char *>(memory) + offset, bytes,
                        cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void CudaDevice::synchronize() {
  make_current();
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

std::shared_ptr<DeviceEvent> CudaDevice::record(std::function<void(std::exception_ptr)> done) {
  make_current();
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  auto event = std::make_shared<CudaEvent>(e);
  check(cudaEventRecord(e, stream_), "cudaEventRecord");
  watcher_->add(event, std::move(done));
  return event;
}

bool CudaDevice::queue_after(const DeviceEvent &event) {
  const auto *e = dynamic_cast<const CudaEvent *>(&event);
  if (e == nullptr)
    return false;
  make_current();
  check(cudaStreamWaitEvent(stream_, e->event(), 0), "cudaStreamWaitEvent");
  return true;
}

std::vector<std::unique_ptr<Device>> cuda_devices(std::string *why) {
  std::vector<std::unique_ptr<Device>> out;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why != nullptr)
      *why = e != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" +
                                    cudaGetErrorString(e) + ")"
                              : "cudaGetDeviceCount: 0 devices";
    cudaGetLastError();
    return out;
  }
  for (int i = 0; i < count; ++i)
    out.push_back(std::make_unique<CudaDevice>(i));
  return out;
}

} // namespace parla
