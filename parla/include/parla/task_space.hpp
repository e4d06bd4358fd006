// SPDX-License-Identifier: MIT
// Task ids: a TaskSpace names tasks by integer indices (one to four of
// them, like T[i] or T(i, j)); slices name ranges of them (T[slice(0, 10)]).
// A reference may name a task that is not spawned yet: a dependency on it
// waits until it is spawned and done. Views share their space's tasks
// under a fixed prefix: T.view(2)[5] is T(2, 5).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace parla {

inline constexpr int kMaxIndexRank = 4;

class Index {
public:
  Index() = default;
  Index(std::initializer_list<int64_t> values);
  int rank() const { return rank_; }
  int64_t operator[](int i) const { return values_[static_cast<size_t>(i)]; }
  // This index followed by other's components (a view's prefix + an index).
  Index joined(const Index &other) const;
  bool operator==(const Index &other) const;
  size_t hash() const;
  std::string to_string() const; // "3" or "1,2"

private:
  std::array<int64_t, kMaxIndexRank> values_{};
  uint8_t rank_ = 0;
};

// Python's half-open range [start, stop) with a step (which may be negative).
// In a bounded space, stop = kEnd means the end of that dimension.
struct Slice {
  static constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  int64_t start = 0;
  int64_t stop = kEnd;
  int64_t step = 1;
};
inline Slice slice(int64_t start, int64_t stop, int64_t step = 1) {
  return {start, stop, step};
}
inline Slice all() {
  return {};
}

namespace detail {
struct SpaceState;
}

// One task of a space, spawned or not.
class TaskRef {
public:
  TaskRef(std::shared_ptr<detail::SpaceState> space, Index index)
      : space_(std::move(space)), index_(index) {}
  const Index &index() const { return index_; }
  std::string name() const; // "T[3]", "T[1,2]"
  const std::shared_ptr<detail::SpaceState> &space() const { return space_; }

private:
  std::shared_ptr<detail::SpaceState> space_;
  Index index_;
};

// Several tasks: a dependency list, a slice, or several of those joined.
class TaskRefs {
public:
  TaskRefs() = default;
  TaskRefs(TaskRef ref) { refs_.push_back(std::move(ref)); }
  TaskRefs(std::vector<TaskRef> refs) : refs_(std::move(refs)) {}
  TaskRefs(std::initializer_list<TaskRefs> parts);
  void add(const TaskRefs &more) {
    refs_.insert(refs_.end(), more.refs_.begin(), more.refs_.end());
  }
  size_t size() const { return refs_.size(); }
  bool empty() const { return refs_.empty(); }
  const TaskRef &operator[](size_t i) const { return refs_[i]; }
  auto begin() const { return refs_.begin(); }
  auto end() const { return refs_.end(); }

private:
  std::vector<TaskRef> refs_;
};

class TaskSpace {
public:
  explicit TaskSpace(std::string name);
  // A bounded space: index k of every task lies in [0, shape[k]), and a
  // slice's kEnd means the end of its dimension.
  TaskSpace(std::string name, std::vector<int64_t> shape);

  TaskRef operator[](int64_t i) const { return ref({i}); }
  TaskRef operator[](const Index &index) const { return ref(index); }
  TaskRefs operator[](Slice s) const { return refs({Part(s)}); }
  template <class... A>
  requires(sizeof...(A) >= 1 && sizeof...(A) <= kMaxIndexRank) auto operator()(A... parts) const {
    if constexpr ((std::is_integral_v<A> && ...))
      return ref({static_cast<int64_t>(parts)...});
    else
      return refs({Part(parts)...});
  }
  // The tasks whose index starts with prefix, indexed by the rest.
  TaskSpace view(const Index &prefix) const;
  TaskSpace view(int64_t i) const { return view(Index{i}); }

  const std::string &name() const;
  // Tasks spawned in this space (through any view) so far.
  size_t spawned() const;
  const std::shared_ptr<detail::SpaceState> &state() const { return state_; }

private:
  struct Part {
    Part(Slice s) : slice(s), is_slice(true) {}
    template <class I>
    requires std::is_integral_v<I> Part(I i)
        : slice{static_cast<int64_t>(i), static_cast<int64_t>(i) + 1, 1}, is_slice(false) {}
    Slice slice;
    bool is_slice;
  };
  TaskSpace(std::shared_ptr<detail::SpaceState> state, Index prefix)
      : state_(std::move(state)), prefix_(prefix) {}
  TaskRef ref(const Index &index) const;
  TaskRefs refs(std::initializer_list<Part> parts) const;

  std::shared_ptr<detail::SpaceState> state_;
  Index prefix_;
};

} // namespace parla
