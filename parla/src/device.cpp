// SPDX-License-Identifier: MIT
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "parla/device.hpp"
#include "parla/placement.hpp"

namespace parla {

const std::vector<Placement::Option> &Placement::on_arch(Arch arch) {
  static const std::array<std::vector<Option>, 4> table{
      std::vector<Option>{Option{{Arch::cpu}, {}}}, std::vector<Option>{Option{{Arch::gpu}, {}}},
      std::vector<Option>{Option{{Arch::cl_cpu}, {}}},
      std::vector<Option>{Option{{Arch::accelerator}, {}}}};
  static_assert(static_cast<size_t>(Arch::accelerator) + 1 == std::tuple_size_v<decltype(table)>,
                "one entry per architecture");
  return table[static_cast<size_t>(arch)];
}

std::string_view to_string(Arch arch) {
  switch (arch) {
  case Arch::cpu:
    return "cpu";
  case Arch::gpu:
    return "gpu";
  case Arch::cl_cpu:
    return "cl_cpu";
  case Arch::accelerator:
    return "accelerator";
  }
  return "?";
}

EventWatcher::~EventWatcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable())
    thread_.join();
}

void EventWatcher::add(std::shared_ptr<DeviceEvent> event, Done done) {
  {
    std::lock_guard lock(mu_);
    if (!thread_.joinable())
      thread_ = std::thread([this] { run(); });
    entries_.push_back({std::move(event), std::move(done)});
  }
  cv_.notify_one();
}

void EventWatcher::run() {
  std::vector<Entry> batch;
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !entries_.empty(); });
    if (entries_.empty())
      return; // stopped, and every done was called
    batch.swap(entries_);
    lock.unlock();
    bool all_ok = true;
    try {
      batch.back().event->wait();
    } catch (...) {
      all_ok = false;
    }
    for (Entry &e : batch) {
      std::exception_ptr error;
      if (!all_ok) // which ones: those before the failure completed
        try {
          e.event->wait();
        } catch (...) {
          error = std::current_exception();
        }
      try {
        e.done(std::move(error));
      } catch (...) {
        // done must not throw (the runtime's takes a lock and updates its
        // graph); nothing may end this thread.
      }
    }
    batch.clear(); // the events go outside the lock (through ava, a call each)
    lock.lock();
  }
}

std::string HostCpuDevice::description() const {
  return "host CPUs (" + std::to_string(threads_) + " threads, " + std::to_string(memory_ >> 20) +
         " MiB)";
}

void *HostCpuDevice::allocate(size_t bytes) {
  return std::malloc(bytes == 0 ? 1 : bytes);
}

void HostCpuDevice::release(void *memory) {
  std::free(memory);
}

void HostCpuDevice::write(void *memory, size_t offset, const void *from, size_t bytes) {
  std::memcpy(static_cast<char *>(memory) + offset, from, bytes);
}

void HostCpuDevice::read(const void *memory, size_t offset, void *to, size_t bytes) {
  std::memcpy(to, static_cast<const char *>(memory) + offset, bytes);
}

std::vector<std::unique_ptr<Device>> host_devices(unsigned count, unsigned threads_each,
                                                  uint64_t memory_each) {
  if (count == 0)
    count = 1;
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  if (threads_each == 0)
    threads_each = std::max(1u, cpus / count);
  if (memory_each == 0) {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    const uint64_t total = pages > 0 && page > 0
                               ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                               : 1ull << 32;
    memory_each = total / count;
  }
  std::vector<std::unique_ptr<Device>> out;
  for (unsigned i = 0; i < count; ++i)
    out.push_back(std::make_unique<HostCpuDevice>(threads_each, memory_each));
  return out;
}

} // namespace parla
