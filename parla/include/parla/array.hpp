// SPDX-License-Identifier: MIT
// Arrays whose bytes may live on several devices at once. Each memory
// space (the host's memory, shared by the host CPU devices; each OpenCL
// device's own) holds at most one replica of an array, and every byte
// range is, per space, valid or not (MSI: modified = valid in one space
// only, shared = valid in several, invalid). A task declares what it reads
// and writes (SpawnOptions::in / out / inout, whole arrays or views of
// them); before its body runs, the runtime copies the ranges it reads to
// its device where they are stale there, and a write leaves the task's
// space the only valid one for the ranges written. Accesses do not order
// tasks: dependencies do (as in Parla).
//
//   std::vector<double> v(1024);
//   parla::Array a = parla::Array::wrap(v);          // the host replica is v
//   rt.spawn(T[0], {.placement = Arch::gpu, .inout = {a.elements<double>(0, 512)}}, [a] {
//     cl_mem m = static_cast<cl_mem>(a.local());      // on the task's device
//     ... kernels on bytes [a.offset(), a.offset() + a.bytes()) of m ...
//   });
//   rt.wait();
//   a.sync_host();                                     // v holds the results
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace parla {

class Device;

namespace detail {
struct ArrayState;
}

class Array {
public:
  // The program's memory as the host replica (neither copied nor owned:
  // it must outlive the array's use).
  static Array wrap(void *data, size_t bytes);
  template <class T> static Array wrap(std::vector<T> &v) {
    return wrap(v.data(), v.size() * sizeof(T));
  }
  // Host memory of the array's own, zeroed.
  static Array zeros(size_t bytes);

  // Bytes [offset, offset + bytes) of this view (parla::Error if outside).
  Array view(size_t offset, size_t bytes) const;
  template <class T> Array elements(size_t first, size_t count) const {
    return view(first * sizeof(T), count * sizeof(T));
  }
  size_t offset() const { return offset_; }
  size_t bytes() const { return bytes_; }

  // In a task: the replica on the task's (first) device: a host pointer to
  // the whole array for host devices, a cl_mem of the whole array for
  // OpenCL devices (this view starts at offset()).
  void *local() const;
  // In a task on a host CPU device: this view's first element.
  template <class T> T *host() const {
    return reinterpret_cast<T *>(static_cast<char *>(local()) + offset_);
  }
  // In a task: makes this view valid on the task's device (what an `in`
  // access does before the body).
  void clone_here() const;
  // In a task: copies this view's bytes into dst (a view of the same size,
  // of this or another array) in the task's device's space; dst is then
  // valid there only.
  void copy_into(const Array &dst) const;
  // Outside tasks: brings the host replica of this view up to date and
  // returns the view's first byte there.
  void *sync_host() const;
  // Bytes of this view valid in the memory space of device d.
  size_t valid_bytes_on(const Device &d) const;
  // "host:V gpu(0):I ..." per range, for tests and debugging.
  std::string coherence() const;

  const std::shared_ptr<detail::ArrayState> &state() const { return state_; }

private:
  Array(std::shared_ptr<detail::ArrayState> state, size_t offset, size_t bytes)
      : state_(std::move(state)), offset_(offset), bytes_(bytes) {}
  std::shared_ptr<detail::ArrayState> state_;
  size_t offset_ = 0;
  size_t bytes_ = 0;
};

enum class Access : uint8_t { in, out, inout };

namespace detail {
// Before a body runs on device d: makes the view valid there (in, inout)
// and the only valid copy (out, inout). parla::Error when the device has
// no room for the replica.
void prepare_access(const Array &a, Access mode, Device &d);
} // namespace detail

} // namespace parla
