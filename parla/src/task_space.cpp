// SPDX-License-Identifier: MIT
#include "parla/task_space.hpp"

#include "parla/error.hpp"
#include "src/core.hpp"

namespace parla {

Index::Index(std::initializer_list<int64_t> values) {
  if (values.size() > kMaxIndexRank)
    throw Error("parla: a task index has at most " + std::to_string(kMaxIndexRank) +
                " components, not " + std::to_string(values.size()));
  for (int64_t v : values)
    values_[rank_++] = v;
}

Index Index::joined(const Index &other) const {
  if (rank_ + other.rank_ > kMaxIndexRank)
    throw Error("parla: a task index has at most " + std::to_string(kMaxIndexRank) +
                " components (" + to_string() + " then " + other.to_string() + ")");
  Index out = *this;
  for (int i = 0; i < other.rank_; ++i)
    out.values_[out.rank_++] = other.values_[static_cast<size_t>(i)];
  return out;
}

bool Index::operator==(const Index &other) const {
  if (rank_ != other.rank_)
    return false;
  for (int i = 0; i < rank_; ++i)
    if (values_[static_cast<size_t>(i)] != other.values_[static_cast<size_t>(i)])
      return false;
  return true;
}

size_t Index::hash() const {
  // FNV-1a over the components: indices are small dense integers, which
  // std::hash<int64_t> (the identity) would cluster for tuples.
  uint64_t h = 1469598103934665603ull ^ rank_;
  for (int i = 0; i < rank_; ++i) {
    h ^= static_cast<uint64_t>(values_[static_cast<size_t>(i)]);
    h *= 1099511628211ull;
  }
  return static_cast<size_t>(h);
}

std::string Index::to_string() const {
  std::string s;
  for (int i = 0; i < rank_; ++i)
    s += (i ? "," : "") + std::to_string(values_[static_cast<size_t>(i)]);
  return s;
}

std::string TaskRef::name() const {
  return space_->describe(index_);
}

TaskRefs::TaskRefs(std::initializer_list<TaskRefs> parts) {
  for (const TaskRefs &p : parts)
    add(p);
}

void detail::SpaceState::check(const Index &index) const {
  if (shape.empty())
    return;
  bool ok = index.rank() == static_cast<int>(shape.size());
  for (int i = 0; ok && i < index.rank(); ++i)
    ok = index[i] >= 0 && index[i] < shape[static_cast<size_t>(i)];
  if (!ok) {
    std::string dims;
    for (size_t i = 0; i < shape.size(); ++i)
      dims += (i ? "," : "") + std::to_string(shape[i]);
    throw Error("parla: " + describe(index) + " is outside the shape [" + dims + "] of " + name);
  }
}

TaskSpace::TaskSpace(std::string name) : state_(std::make_shared<detail::SpaceState>()) {
  state_->name = std::move(name);
}

TaskSpace::TaskSpace(std::string name, std::vector<int64_t> shape) : TaskSpace(std::move(name)) {
  if (shape.empty() || shape.size() > kMaxIndexRank)
    throw Error("parla: the shape of " + state_->name + " needs 1 to " +
                std::to_string(kMaxIndexRank) + " dimensions");
  for (int64_t d : shape)
    if (d < 0)
      throw Error("parla: the shape of " + state_->name + " has a negative dimension");
  state_->shape = std::move(shape);
}

TaskSpace TaskSpace::view(const Index &prefix) const {
  return TaskSpace(state_, prefix_.joined(prefix));
}

const std::string &TaskSpace::name() const {
  return state_->name;
}

size_t TaskSpace::spawned() const {
  return state_->spawned.load(std::memory_order_relaxed);
}

TaskRef TaskSpace::ref(const Index &index) const {
  Index full = prefix_.joined(index);
  state_->check(full);
  return TaskRef(state_, full);
}

TaskRefs TaskSpace::refs(std::initializer_list<Part> parts) const {
  // The cartesian product of the parts, last dimension fastest (row-major,
  // like Python's nested loops over T[a:b, c:d]).
  std::vector<std::vector<int64_t>> axes;
  const int base = prefix_.rank();
  for (const Part &p : parts) {
    const int dim = base + static_cast<int>(axes.size());
    Slice s = p.slice;
    if (s.step == 0)
      throw Error("parla: a slice of " + state_->name + " has step 0");
    if (s.stop == Slice::kEnd) {
      if (state_->shape.empty() || dim >= static_cast<int>(state_->shape.size()))
        throw Error("parla: a slice to the end needs a bounded space; " + state_->name +
                    " has no bound in dimension " + std::to_string(dim));
      s.stop = state_->shape[static_cast<size_t>(dim)];
    }
    std::vector<int64_t> axis;
    for (int64_t i = s.start; s.step > 0 ? i < s.stop : i > s.stop; i += s.step)
      axis.push_back(i);
    axes.push_back(std::move(axis));
  }
  std::vector<TaskRef> out;
  std::vector<size_t> at(axes.size(), 0);
  for (const auto &a : axes)
    if (a.empty())
      return TaskRefs(std::move(out));
  while (true) {
    Index index;
    for (size_t k = 0; k < axes.size(); ++k)
      index = index.joined(Index{axes[k][at[k]]});
    out.push_back(ref(index));
    size_t k = axes.size();
    while (k > 0 && ++at[k - 1] == axes[k - 1].size())
      at[--k] = 0;
    if (k == 0)
      break;
  }
  return TaskRefs(std::move(out));
}

} // namespace parla
