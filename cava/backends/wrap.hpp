// SPDX-License-Identifier: MIT
// Line wrapping for generated kernel C, whose style keeps lines within 100
// columns: a long generated line is broken after ", " and continued aligned
// with the parenthesis it is inside, as kernel code is written by hand.
#pragma once

#include <string>

namespace cava {

// Wraps the lines of text wider than limit columns (tabs count 8) that can
// be broken after ", ". Leaves alone preprocessor lines,
// comments and spec code (between a #line into another file and the #line
// back), and renumbers the #line directives that point into file_name.
std::string wrap_generated_c(const std::string &text, const std::string &file_name,
                             size_t limit = 100);

} // namespace cava
