// SPDX-License-Identifier: MIT
#include "cava/frontend/source_text.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace cava {

std::string trim(const std::string &s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return s.substr(b, e - b);
}

bool SourceText::load(const std::string &path, const std::string &shown_name) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  text_ = ss.str();
  shown_name_ = shown_name;
  line_starts_.assign(1, 0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n')
      line_starts_.push_back(i + 1);
  }
  return true;
}

Loc SourceText::loc_at(size_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const size_t line = static_cast<size_t>(it - line_starts_.begin());
  const size_t start = line_starts_[line - 1];
  return Loc{shown_name_, static_cast<unsigned>(line), static_cast<unsigned>(offset - start + 1)};
}

size_t SourceText::skip_literal_or_comment(size_t i) const {
  const size_t n = text_.size();
  if (i >= n)
    return i;
  const char c = text_[i];
  if (c == '"' || c == '\'') {
    size_t j = i + 1;
    while (j < n && text_[j] != c) {
      if (text_[j] == '\\')
        ++j;
      ++j;
    }
    return std::min(j + 1, n);
  }
  if (c == '/' && i + 1 < n && text_[i + 1] == '/') {
    size_t j = text_.find('\n', i);
    return j == std::string::npos ? n : j;
  }
  if (c == '/' && i + 1 < n && text_[i + 1] == '*') {
    size_t j = text_.find("*/", i + 2);
    return j == std::string::npos ? n : j + 2;
  }
  return i;
}

size_t SourceText::skip_space(size_t i) const {
  const size_t n = text_.size();
  while (i < n) {
    if (std::isspace(static_cast<unsigned char>(text_[i]))) {
      ++i;
      continue;
    }
    if (text_[i] == '/' && i + 1 < n && (text_[i + 1] == '/' || text_[i + 1] == '*')) {
      i = skip_literal_or_comment(i);
      continue;
    }
    break;
  }
  return i;
}

bool SourceText::balanced(size_t open_offset, char open, char close, size_t *close_offset) const {
  const size_t n = text_.size();
  if (open_offset >= n || text_[open_offset] != open)
    return false;
  int depth = 0;
  size_t i = open_offset;
  while (i < n) {
    const size_t skipped = skip_literal_or_comment(i);
    if (skipped != i) {
      i = skipped;
      continue;
    }
    const char c = text_[i];
    if (c == '(' || c == '[' || c == '{')
      ++depth;
    else if (c == ')' || c == ']' || c == '}') {
      --depth;
      if (depth == 0) {
        if (c != close)
          return false;
        *close_offset = i;
        return true;
      }
    }
    ++i;
  }
  return false;
}

bool SourceText::invocation(size_t offset, std::string *name, std::vector<std::string> *args,
                            bool *has_parens, size_t *end) const {
  const size_t n = text_.size();
  size_t i = offset;
  while (i < n && (std::isalnum(static_cast<unsigned char>(text_[i])) || text_[i] == '_'))
    ++i;
  if (i == offset)
    return false;
  *name = text_.substr(offset, i - offset);
  args->clear();
  *has_parens = false;
  *end = i;
  const size_t p = skip_space(i);
  if (p >= n || text_[p] != '(')
    return true;
  size_t close = 0;
  if (!balanced(p, '(', ')', &close))
    return false;
  *has_parens = true;
  *end = close + 1;
  // Split at top-level commas.
  size_t start = p + 1;
  int depth = 0;
  size_t j = p + 1;
  while (j < close) {
    const size_t skipped = skip_literal_or_comment(j);
    if (skipped != j) {
      j = skipped;
      continue;
    }
    const char c = text_[j];
    if (c == '(' || c == '[' || c == '{')
      ++depth;
    else if (c == ')' || c == ']' || c == '}')
      --depth;
    else if (c == ',' && depth == 0) {
      args->push_back(trim(text_.substr(start, j - start)));
      start = j + 1;
    }
    ++j;
  }
  const std::string last = trim(text_.substr(start, close - start));
  if (!last.empty() || !args->empty())
    args->push_back(last);
  return true;
}

bool SourceText::parenthesized_after_word(size_t offset, std::string *inside, size_t *end) const {
  const size_t n = text_.size();
  size_t i = offset;
  while (i < n && (std::isalnum(static_cast<unsigned char>(text_[i])) || text_[i] == '_'))
    ++i;
  const size_t p = skip_space(i);
  size_t close = 0;
  if (!balanced(p, '(', ')', &close))
    return false;
  *inside = trim(text_.substr(p + 1, close - p - 1));
  *end = close + 1;
  return true;
}

bool SourceText::matching_brace(size_t offset, size_t *end) const {
  size_t close = 0;
  if (!balanced(offset, '{', '}', &close))
    return false;
  *end = close + 1;
  return true;
}

std::string SourceText::slice(size_t begin, size_t end) const {
  if (begin >= text_.size() || end <= begin)
    return {};
  return text_.substr(begin, std::min(end, text_.size()) - begin);
}

} // namespace cava
