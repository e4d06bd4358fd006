// SPDX-License-Identifier: MIT
// A function with one implementation per device set, chosen in a task by
// the architectures of the devices the task was placed on:
//
//   parla::Variants<void(int)> f;
//   f.on({Arch::cpu}, cpu_impl).on({Arch::gpu, Arch::gpu}, two_gpu_impl);
//   ... in a task placed on two GPUs: f(3) calls two_gpu_impl.
//
// A device set is a multiset: {cpu, gpu} and {gpu, cpu} are one signature.
#pragma once

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parla/device.hpp"
#include "parla/error.hpp"
#include "parla/runtime.hpp"

namespace parla {

template <class Sig> class Variants;

template <class R, class... A> class Variants<R(A...)> {
public:
  using Fn = std::function<R(A...)>;

  Variants &on(std::initializer_list<Arch> devices, Fn fn) {
    std::vector<Arch> key = sorted(devices);
    for (const auto &v : variants_)
      if (v.first == key)
        throw Error("parla: a variant for " + describe(key) + " is already defined");
    variants_.emplace_back(std::move(key), std::move(fn));
    return *this;
  }
  // Used where no variant matches the task's devices.
  Variants &otherwise(Fn fn) {
    fallback_ = std::move(fn);
    return *this;
  }

  R operator()(A... args) const {
    std::vector<Arch> key;
    for (const Device *d : current_devices())
      key.push_back(d->arch());
    std::sort(key.begin(), key.end());
    for (const auto &v : variants_)
      if (v.first == key)
        return v.second(std::forward<A>(args)...);
    if (fallback_)
      return (*fallback_)(std::forward<A>(args)...);
    throw Error("parla: no variant for a task on " + describe(key));
  }

private:
  static std::vector<Arch> sorted(std::initializer_list<Arch> devices) {
    std::vector<Arch> key(devices);
    std::sort(key.begin(), key.end());
    return key;
  }
  static std::string describe(const std::vector<Arch> &key) {
    std::string s = "{";
    for (size_t i = 0; i < key.size(); ++i)
      s += (i ? ", " : "") + std::string(to_string(key[i]));
    return s + "}";
  }
  std::vector<std::pair<std::vector<Arch>, Fn>> variants_;
  std::optional<Fn> fallback_;
};

} // namespace parla
