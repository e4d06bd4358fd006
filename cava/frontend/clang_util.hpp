// SPDX-License-Identifier: MIT
// Small helpers over the libclang C API.
#pragma once

#include <clang-c/Index.h>

#include <functional>
#include <string>
#include <vector>

#include "cava/ir/ir.hpp"

namespace cava {

struct Pos {
  CXFile file = nullptr;
  unsigned line = 0;
  unsigned col = 0;
  unsigned offset = 0;
};

std::string to_string(CXString s);
Pos expansion_pos(CXSourceLocation loc);
std::vector<CXCursor> children_of(CXCursor c);
// The call expression a statement or condition consists of, looking through
// casts and parentheses; a null cursor if it is something else.
CXCursor find_call(CXCursor c);
// Calls f with the callee name of every call expression under c.
void for_each_call(CXCursor c, const std::function<void(const std::string &)> &f);
// Calls f with every use of a function parameter under c, also where a
// macro expansion names it, except in the branches of if (ava_is_guest &&
// ...) that only the guest runs.
void for_each_worker_param_use(CXCursor c, const std::function<void(const CodeUse &)> &f);
TypeInfo type_info(CXType t);
// "const demo_obj" -> "demo_obj"
std::string unqualified(std::string spelling);

} // namespace cava
