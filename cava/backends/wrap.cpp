// SPDX-License-Identifier: MIT
#include "cava/backends/wrap.hpp"

#include <sstream>
#include <vector>

namespace cava {
namespace {

constexpr size_t kTab = 8;

// Whitespace reaching column col: tabs, then spaces.
std::string indent_to(size_t col) {
  return std::string(col / kTab, '\t') + std::string(col % kTab, ' ');
}

// Breaks one line; the pieces go to out.
void wrap_line(const std::string &line, size_t limit, std::vector<std::string> *out) {
  size_t col = 0, i = 0;
  for (; i < line.size() && (line[i] == '\t' || line[i] == ' '); ++i)
    col = line[i] == '\t' ? (col / kTab + 1) * kTab : col + 1;
  const size_t indent_col = col;
  struct Break {
    size_t at;    // index of the space after the comma
    size_t col;   // output column just after that space
    size_t align; // where the continuation starts
  };
  std::vector<size_t> parens; // output column just after each open '('
  std::vector<Break> breaks;  // candidates on the current output line
  size_t start = 0;           // where the current output line starts in line
  std::string prefix;         // alignment of the current output line, when continued
  char quote = 0;
  for (; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == '\\')
        ++i, ++col;
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(') {
      parens.push_back(col + 1);
    } else if (c == ')') {
      if (!parens.empty())
        parens.pop_back();
    } else if (c == ',' && i + 1 < line.size() && line[i + 1] == ' ') {
      // Outside parentheses (the rest of a list begun on an earlier line):
      // the continuation keeps this line's indentation.
      size_t align = parens.empty() ? indent_col : parens.back();
      // Aligned far right, a continuation has little room: two tabs in instead.
      if (align * 4 > limit * 3)
        align = indent_col + 2 * kTab;
      breaks.push_back({i + 1, col + 2, align});
    }
    ++col;
    if (col > limit && !breaks.empty() && quote == 0) {
      // The last break that keeps this line within the limit, else the first.
      Break b = breaks.front();
      for (const Break &x : breaks)
        if (x.col - 1 <= limit)
          b = x;
      out->push_back(prefix + line.substr(start, b.at - start));
      while (!out->back().empty() && out->back().back() == ' ')
        out->back().pop_back();
      start = b.at + 1;
      prefix = indent_to(b.align);
      col = b.align + (col - b.col);
      // Later candidates move to the new line with it.
      std::vector<Break> later;
      for (const Break &x : breaks)
        if (x.at > b.at)
          later.push_back({x.at, b.align + (x.col - b.col), x.align});
      breaks = std::move(later);
    }
  }
  out->push_back(prefix + line.substr(start));
}

size_t width(const std::string &line) {
  size_t col = 0;
  for (char c : line)
    col = c == '\t' ? (col / kTab + 1) * kTab : col + 1;
  return col;
}

} // namespace

std::string wrap_generated_c(const std::string &text, const std::string &file_name, size_t limit) {
  const std::string own_line = "\"" + file_name + "\"";
  std::vector<std::string> lines;
  std::istringstream in(text);
  bool in_spec_code = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#line ", 0) == 0) {
      const bool own = line.size() >= own_line.size() &&
                       line.compare(line.size() - own_line.size(), own_line.size(), own_line) == 0;
      in_spec_code = !own;
      // A directive back into this file names the line after it.
      if (own)
        line = "#line " + std::to_string(lines.size() + 2) + " " + own_line;
      lines.push_back(line);
      continue;
    }
    const bool skip =
        in_spec_code || line.empty() || line[0] == '#' || line.find("/*") != std::string::npos ||
        line.find("//") != std::string::npos || line.find_first_not_of(" \t") == line.find('*');
    if (skip || width(line) <= limit)
      lines.push_back(line);
    else
      wrap_line(line, limit, &lines);
  }
  std::string out;
  for (const std::string &l : lines)
    out += l + "\n";
  return out;
}

} // namespace cava
