// SPDX-License-Identifier: MIT
// Errors the runtime reports. Every one names the task (and the need) it is
// about, so that a message alone tells a user what to fix.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace parla {

// A misuse found when it happens: a duplicate task id, an index outside a
// bounded space, a placement no device can satisfy, a variant missing.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The runtime's graph cannot finish: a task waits for one that was never
// spawned, or dependencies form a cycle. Reported by wait and finish.
class GraphError : public Error {
public:
  using Error::Error;
};

// A task that did not run because another task failed first (fail-fast),
// or because one of its dependencies failed. cause() is the first error.
class Cancelled : public Error {
public:
  Cancelled(const std::string &what, std::exception_ptr cause) : Error(what), cause_(cause) {}
  std::exception_ptr cause() const { return cause_; }

private:
  std::exception_ptr cause_;
};

} // namespace parla
