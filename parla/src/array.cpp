// SPDX-License-Identifier: MIT
// Array coherence. An array is cut into segments at the bounds of the
// views tasks access; each segment lists the memory spaces where its bytes
// are valid. Bytes move through the host replica (which then is valid
// too): device -> host -> device, with the devices' own read and write.
#include "parla/array.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "parla/device.hpp"
#include "parla/error.hpp"
#include "parla/runtime.hpp"
#include "src/array_state.hpp"

namespace parla {

namespace detail {

namespace {

constexpr uintptr_t kHost = 0;

bool valid_in(const Segment &s, uintptr_t space) {
  return std::find(s.valid.begin(), s.valid.end(), space) != s.valid.end();
}

} // namespace

ArrayState::~ArrayState() {
  for (auto &[space, r] : replicas)
    r.device->release(r.memory);
  if (host_owned)
    std::free(host);
}

// Segments start at begin and at end from now on.
void ArrayState::split(size_t begin, size_t end) {
  for (size_t at : {begin, end}) {
    for (size_t i = 0; i < segments.size(); ++i) {
      Segment &s = segments[i];
      if (s.begin < at && at < s.end) {
        Segment tail = s;
        tail.begin = at;
        s.end = at;
        segments.insert(segments.begin() + static_cast<std::ptrdiff_t>(i) + 1, tail);
        break;
      }
    }
  }
}

void ArrayState::bring(Segment &s, uintptr_t space) {
  const size_t n = s.end - s.begin;
  if (!valid_in(s, kHost)) {
    // From the first space that has it, into the host replica.
    Replica &from = replicas.at(s.valid.front());
    from.device->read(from.memory, s.begin, host + s.begin, n);
    s.valid.push_back(kHost);
  }
  if (space != kHost && !valid_in(s, space)) {
    Replica &to = replicas.at(space);
    to.device->write(to.memory, s.begin, host + s.begin, n);
    s.valid.push_back(space);
  }
}

void *ArrayState::replica(Device &d) {
  const uintptr_t space = d.memory_space();
  if (space == kHost)
    return host;
  auto it = replicas.find(space);
  if (it != replicas.end())
    return it->second.memory;
  void *memory = d.allocate(bytes);
  if (memory == nullptr)
    throw Error("parla: " + d.name() + " has no room for a replica of an array of " +
                std::to_string(bytes) + " bytes");
  replicas.emplace(space, Replica{&d, memory});
  return memory;
}

void ArrayState::evict(Device &d) {
  std::lock_guard lock(mu);
  const uintptr_t space = d.memory_space();
  auto it = replicas.find(space);
  if (space == kHost || it == replicas.end() || it->second.device != &d)
    return;
  for (Segment &s : segments)
    if (valid_in(s, space)) {
      if (s.valid.size() == 1)
        bring(s, kHost); // the only copy: to the host before the memory goes
      s.valid.erase(std::find(s.valid.begin(), s.valid.end(), space));
    }
  d.release(it->second.memory);
  replicas.erase(it);
}

bool ArrayState::try_valid_bytes(uintptr_t space, size_t begin, size_t end, size_t *out) {
  std::unique_lock lock(mu, std::try_to_lock);
  if (!lock.owns_lock())
    return false;
  *out = valid_bytes(space, begin, end);
  return true;
}

size_t ArrayState::valid_bytes(uintptr_t space, size_t begin, size_t end) const {
  size_t n = 0;
  for (const Segment &s : segments)
    if (valid_in(s, space))
      n += std::max<ptrdiff_t>(0, static_cast<ptrdiff_t>(std::min(end, s.end)) -
                                      static_cast<ptrdiff_t>(std::max(begin, s.begin)));
  return n;
}

void prepare_access(const Array &a, Access mode, Device &d) {
  ArrayState &st = *a.state();
  std::lock_guard lock(st.mu);
  const uintptr_t space = d.memory_space();
  st.replica(d);
  const size_t begin = a.offset(), end = a.offset() + a.bytes();
  st.split(begin, end);
  for (Segment &s : st.segments) {
    if (s.end <= begin || s.begin >= end)
      continue;
    if (mode != Access::out)
      st.bring(s, space);
    if (mode != Access::in)
      s.valid.assign(1, space);
  }
}

} // namespace detail

Array Array::wrap(void *data, size_t bytes) {
  auto st = std::make_shared<detail::ArrayState>();
  st->bytes = bytes;
  st->host = static_cast<char *>(data);
  st->segments.push_back({0, bytes, {0}});
  return Array(std::move(st), 0, bytes);
}

Array Array::zeros(size_t bytes) {
  void *p = std::calloc(bytes == 0 ? 1 : bytes, 1);
  if (p == nullptr)
    throw Error("parla: no host memory for an array of " + std::to_string(bytes) + " bytes");
  Array a = wrap(p, bytes);
  a.state_->host_owned = true;
  return a;
}

Array Array::view(size_t offset, size_t bytes) const {
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw Error("parla: a view of bytes [" + std::to_string(offset) + ", " +
                std::to_string(offset + bytes) + ") of an array view of " + std::to_string(bytes_) +
                " bytes");
  return Array(state_, offset_ + offset, bytes);
}

void *Array::local() const {
  std::lock_guard lock(state_->mu);
  return state_->replica(current_device());
}

void Array::clone_here() const {
  detail::prepare_access(*this, Access::in, current_device());
}

void Array::copy_into(const Array &dst) const {
  if (dst.bytes_ != bytes_)
    throw Error("parla: copy_into a view of " + std::to_string(dst.bytes_) + " bytes from one of " +
                std::to_string(bytes_));
  Device &d = current_device();
  detail::prepare_access(*this, Access::in, d);
  std::vector<char> staged(bytes_);
  {
    std::lock_guard lock(state_->mu);
    d.read(state_->replica(d), offset_, staged.data(), bytes_);
  }
  detail::prepare_access(dst, Access::out, d);
  std::lock_guard lock(dst.state_->mu);
  d.write(dst.state_->replica(d), dst.offset_, staged.data(), bytes_);
}

void *Array::sync_host() const {
  detail::ArrayState &st = *state_;
  std::lock_guard lock(st.mu);
  st.split(offset_, offset_ + bytes_);
  for (detail::Segment &s : st.segments)
    if (s.end > offset_ && s.begin < offset_ + bytes_)
      st.bring(s, 0);
  return st.host + offset_;
}

size_t Array::valid_bytes_on(const Device &d) const {
  std::lock_guard lock(state_->mu);
  return state_->valid_bytes(d.memory_space(), offset_, offset_ + bytes_);
}

std::string Array::coherence() const {
  std::lock_guard lock(state_->mu);
  std::string out;
  for (const detail::Segment &s : state_->segments) {
    out += (out.empty() ? "" : " ") + std::to_string(s.begin) + "-" + std::to_string(s.end) + ":";
    for (size_t i = 0; i < s.valid.size(); ++i) {
      const uintptr_t space = s.valid[i];
      out += (i ? "," : "") +
             (space == 0 ? std::string("host") : state_->replicas.at(space).device->name());
    }
  }
  return out;
}

} // namespace parla
