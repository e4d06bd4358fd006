// SPDX-License-Identifier: MIT
#include "cava/diag.hpp"

#include <cstdio>

namespace cava {

void Diagnostics::add(const Loc &loc, const char *severity, const std::string &message) {
  std::string line;
  if (!loc.file.empty()) {
    line = loc.file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": ";
  } else {
    line = "cava: ";
  }
  line += severity;
  line += ": ";
  line += message;
  // Printed as they come so a crash in a later stage still shows the cause.
  std::fprintf(stderr, "%s\n", line.c_str());
  lines_.push_back(std::move(line));
}

void Diagnostics::error(const Loc &loc, const std::string &message) {
  ++errors_;
  add(loc, "error", message);
}

void Diagnostics::warning(const Loc &loc, const std::string &message) {
  add(loc, "warning", message);
}

} // namespace cava
