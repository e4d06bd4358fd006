// SPDX-License-Identifier: MIT
#pragma once

#include "cava/diag.hpp"
#include "cava/ir/ir.hpp"

namespace cava {

// Checks annotations, assigns ids and resolves roles; false on any error.
bool validate_spec(Spec &spec, Diagnostics &diag);

} // namespace cava
