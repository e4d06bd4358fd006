// SPDX-License-Identifier: MIT
// Diagnostics in the compiler format "file:line:col: error: message".
#pragma once

#include <string>
#include <vector>

#include "cava/ir/ir.hpp"

namespace cava {

class Diagnostics {
public:
  void error(const Loc &loc, const std::string &message);
  void warning(const Loc &loc, const std::string &message);
  bool has_errors() const { return errors_ > 0; }
  int error_count() const { return errors_; }
  // Everything reported so far, one diagnostic per line, in order.
  const std::vector<std::string> &lines() const { return lines_; }

private:
  void add(const Loc &loc, const char *severity, const std::string &message);
  std::vector<std::string> lines_;
  int errors_ = 0;
};

} // namespace cava
