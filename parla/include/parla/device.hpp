// SPDX-License-Identifier: MIT
// Devices: what tasks are placed on. Every backend (the host's CPUs, an
// OpenCL device, a CUDA device, local or reached through ava's guest
// libraries) answers the same questions: its architecture, its memory and
// compute capacity, and how to hold and move bytes.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace parla {

namespace detail {
class Core;
}

// A device's architecture comes from its type, never from where it is:
// PoCL's CPU device is an OpenCL `cl_cpu`, not one of the host `cpu`s whose
// threads run the runtime's workers, and a GPU behind ava is a `gpu`.
enum class Arch : uint8_t { cpu, gpu, cl_cpu, accelerator };
std::string_view to_string(Arch arch);

// A point in a device's queue (see Device::record): what a task on a
// device waits for, on its own device, when its dependency's body has
// returned but the work it queued has not finished.
class DeviceEvent {
public:
  virtual ~DeviceEvent() = default;
  // Blocks until the work before the event has finished; throws
  // parla::Error when it failed.
  virtual void wait() const = 0;
};

// What a device's record() uses to call `done` once an event completed,
// for devices whose events are waited for, not called back: a thread
// (started with the first event, blocked in a condition variable or in the
// wait, never polling) waits for the newest event of everything added
// meanwhile. The events of one in-order queue complete in order, so that
// one wait covers them all (through ava: one round trip for the batch).
// When it fails, each event is waited for to tell which failed.
class EventWatcher {
public:
  using Done = std::function<void(std::exception_ptr)>;
  EventWatcher() = default;
  // Waits until every done added was called.
  ~EventWatcher();
  EventWatcher(const EventWatcher &) = delete;
  EventWatcher &operator=(const EventWatcher &) = delete;
  // Events of one in-order queue, in the order they were queued.
  void add(std::shared_ptr<DeviceEvent> event, Done done);

private:
  void run();
  struct Entry {
    std::shared_ptr<DeviceEvent> event;
    Done done;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
  bool stop_ = false;
  std::thread thread_;
};

class Device {
public:
  virtual ~Device() = default;
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  virtual Arch arch() const = 0;
  // Bytes the runtime may reserve on the device: what the device reports
  // (under ava: the quota the host grants), or what the user configured.
  virtual uint64_t memory_capacity() const = 0;
  // Compute units tasks reserve with `vcus` (a GPU is 1; a host CPU device
  // of k worker threads is k).
  virtual double vcus() const = 0;
  // The largest single allocation.
  virtual uint64_t max_allocation() const { return memory_capacity(); }
  // Describes the device for messages and traces ("PoCL cpu-haswell ...").
  virtual std::string description() const = 0;

  // Device memory for arrays; nullptr when the device has no room.
  virtual void *allocate(size_t bytes) = 0;
  virtual void release(void *memory) = 0;
  // Copies between the host and memory of allocate(), at a byte offset;
  // they return once the copy is done (and after work queued before them).
  virtual void write(void *memory, size_t offset, const void *from, size_t bytes) = 0;
  virtual void read(const void *memory, size_t offset, void *to, size_t bytes) = 0;
  // Waits for the device work a task's body queued (the runtime calls it
  // after the body returns, so that a task is done when its work is).
  virtual void synchronize() {}
  // Without blocking: a point in the device's queue after the work queued
  // so far, whose `done` is called once that work has finished (with an
  // error if it failed), on whichever thread the device tells it on; done
  // must not block. nullptr where the device cannot tell that way (the
  // runtime then calls synchronize()).
  virtual std::shared_ptr<DeviceEvent> record(std::function<void(std::exception_ptr)> done) {
    (void)done;
    return nullptr;
  }
  // Makes the work queued on this device from now on wait, on the device,
  // for `event` (of this device or another one); false where it cannot
  // (another context, another kind of device): the runtime then waits for
  // the event on the host before the dependent's body runs.
  virtual bool queue_after(const DeviceEvent &event) {
    (void)event;
    return false;
  }
  // Whether record() gives events: tasks placed only on such devices may
  // start while their dependencies' device work still runs (runahead).
  virtual bool has_events() const { return false; }
  // Devices of one space share memory (and an array's replica): the host
  // CPU devices all have space 0, every other device one of its own.
  virtual uintptr_t memory_space() const { return reinterpret_cast<uintptr_t>(this); }

  // "cpu(0)", "gpu(1)": the architecture and the index among its kind.
  const std::string &name() const { return name_; }
  // Position in the runtime's device list.
  int id() const { return id_; }
  int index_in_arch() const { return index_in_arch_; }

protected:
  Device() = default;

private:
  friend class detail::Core;
  std::string name_;
  int id_ = -1;
  int index_in_arch_ = -1;
};

// The host's CPUs as one logical device whose `threads` workers run task
// bodies; several of them partition the host (Parla's CPU cores mode).
class HostCpuDevice : public Device {
public:
  HostCpuDevice(unsigned threads, uint64_t memory) : threads_(threads), memory_(memory) {}
  Arch arch() const override { return Arch::cpu; }
  uint64_t memory_capacity() const override { return memory_; }
  double vcus() const override { return threads_; }
  std::string description() const override;
  void *allocate(size_t bytes) override;
  void release(void *memory) override;
  void write(void *memory, size_t offset, const void *from, size_t bytes) override;
  void read(const void *memory, size_t offset, void *to, size_t bytes) override;
  uintptr_t memory_space() const override { return 0; }
  unsigned threads() const { return threads_; }

private:
  unsigned threads_;
  uint64_t memory_;
};

// `count` host CPU devices sharing the host's memory evenly; threads
// defaults to the host's CPUs divided among them (at least one each).
std::vector<std::unique_ptr<Device>> host_devices(unsigned count, unsigned threads_each = 0,
                                                  uint64_t memory_each = 0);

} // namespace parla
