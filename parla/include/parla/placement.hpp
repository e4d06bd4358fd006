// SPDX-License-Identifier: MIT
// Where a task may run and what it holds there.
//
//   on(Arch::cpu)                      any one host CPU device
//   on(dev)                            exactly that device
//   on(Arch::gpu, Arch::gpu)           one task on two distinct GPUs
//   on(Arch::cpu, Arch::gpu)           one task on a CPU and a GPU
//   any_of({on(Arch::gpu).with({.memory = 1 << 30}), on(Arch::cpu)})
//                                      options, each with its own needs
//
// An empty placement means any single device of any architecture.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "parla/device.hpp"

namespace parla {

// What a task reserves on each of its devices while it runs. `memory`
// (bytes) is held from before the body starts until the task completes;
// without it, a task is charged what its declared accesses occupy (0 for
// none). `vcus` are compute units; the default of 1 gives a GPU to one task
// at a time, 0.5 lets two share it, and a task needing more than a device
// has cannot be placed there.
struct Resources {
  std::optional<uint64_t> memory{};
  double vcus = 1.0;
};

class Placement {
public:
  using Part = std::variant<Arch, Device *>;
  struct Option {
    std::vector<Part> parts; // one per device of the task
    std::optional<Resources> resources;
    Option with(Resources r) const {
      Option o = *this;
      o.resources = r;
      return o;
    }
  };

  Placement() = default;
  // One architecture, the commonest placement, allocates nothing: its
  // options are constants shared by every task (a spawn costs ~1 µs, and
  // two allocations were a fifth of it).
  Placement(Arch arch) {
    if (arch <= Arch::accelerator)
      arch_ = arch;
    else // not one of the enumerators: no device has it, as check_placeable says
      options_ = {Option{{arch}, {}}};
  }
  Placement(Device &device) : options_{Option{{&device}, {}}} {}
  Placement(Option option) : options_{std::move(option)} {}
  Placement(std::vector<Option> options) : options_(std::move(options)) {}
  const std::vector<Option> &options() const { return arch_ ? on_arch(*arch_) : options_; }
  bool anywhere() const { return !arch_ && options_.empty(); }

private:
  static const std::vector<Option> &on_arch(Arch arch);
  std::vector<Option> options_;
  std::optional<Arch> arch_; // set: options are on_arch(*arch_)
};

namespace detail {
inline Placement::Part to_part(Arch arch) {
  return arch;
}
inline Placement::Part to_part(Device &device) {
  return &device;
}
inline Placement::Part to_part(Device *device) {
  return device;
}
} // namespace detail

template <class... P> Placement::Option on(P &&...parts) {
  Placement::Option option;
  (option.parts.push_back(detail::to_part(parts)), ...);
  return option;
}
inline Placement any_of(std::vector<Placement::Option> options) {
  return Placement(std::move(options));
}

} // namespace parla
