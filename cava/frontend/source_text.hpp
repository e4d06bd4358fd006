// SPDX-License-Identifier: MIT
// Raw text of a spec file. libclang gives structure and types; the exact
// text of annotation arguments and code is read here from the file itself,
// because the AST only holds their macro-expanded form.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cava/ir/ir.hpp"

namespace cava {

class SourceText {
public:
  bool load(const std::string &path, const std::string &shown_name);
  const std::string &text() const { return text_; }
  Loc loc_at(size_t offset) const;
  // offset is at an identifier (a macro invocation). Reads it and, if a '('
  // follows, the arguments split at top-level commas (trimmed). end is set
  // past the ')' or the identifier.
  bool invocation(size_t offset, std::string *name, std::vector<std::string> *args,
                  bool *has_parens, size_t *end) const;
  // offset is at a keyword followed by '(' ... ')' (if, while): returns the
  // text inside the parentheses.
  bool parenthesized_after_word(size_t offset, std::string *inside, size_t *end) const;
  // Skips blanks and comments.
  size_t skip_space(size_t offset) const;
  // offset is at '{': returns the offset just past the matching '}'.
  bool matching_brace(size_t offset, size_t *end) const;
  std::string slice(size_t begin, size_t end) const;

private:
  // Past a string/char literal or comment starting at offset; offset itself if none.
  size_t skip_literal_or_comment(size_t offset) const;
  bool balanced(size_t open_offset, char open, char close, size_t *close_offset) const;
  std::string text_;
  std::string shown_name_;
  std::vector<size_t> line_starts_;
};

std::string trim(const std::string &s);

} // namespace cava
