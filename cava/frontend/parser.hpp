// SPDX-License-Identifier: MIT
// The frontend: parses a spec with libclang and fills the IR. It checks the
// shape of the spec (where annotations may appear); the validator checks
// their meaning.
#pragma once

#include <string>
#include <vector>

#include "cava/diag.hpp"
#include "cava/ir/ir.hpp"

namespace cava {

struct ParseOptions {
  std::string spec_path;               // file to parse
  std::string shown_name;              // name used in diagnostics and banners
  std::vector<std::string> clang_args; // -I, -D ... (ava's include dir is added by the caller)
};

// Returns false (with diagnostics) when the spec cannot be used.
bool parse_spec(const ParseOptions &options, Diagnostics &diag, Spec *spec);

} // namespace cava
