// SPDX-License-Identifier: MIT
// TOML parsing is toml++'s; this file only maps its tree onto the flat
// Document that ava's configuration code reads, and refuses what that
// Document cannot hold.
#include "shim/toml.hpp"

#include <algorithm>
#include <new>
#include <vector>

// Header-only, so that the guest library (loaded into arbitrary programs)
// carries its own hidden copy instead of depending on libtomlplusplus.so.
// No exceptions: the parse result is checked instead, and nothing may throw
// across the guest library's C API.
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#define TOML_ENABLE_FORMATTERS 0
#define TOML_ENABLE_WINDOWS_COMPAT 0
#include <toml++/toml.h>

namespace ava::toml {
namespace {

bool is_bare_key(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// toml++ reports positions as line and column in code points; messages need
// the character found there.
class Text {
public:
  explicit Text(std::string_view text) : text_(text) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n')
        line_starts_.push_back(i + 1);
  }

  // Byte offset of (line, column), or npos where there is none (end of file).
  size_t offset(const ::toml::source_position &pos) const {
    if (pos.line == 0 || pos.column == 0 || pos.line > line_starts_.size())
      return std::string_view::npos;
    size_t i = line_starts_[pos.line - 1];
    for (::toml::source_index col = 1; i < text_.size(); ++i) {
      if ((static_cast<unsigned char>(text_[i]) & 0xc0) == 0x80)
        continue; // a UTF-8 continuation byte is no column of its own
      if (col++ == pos.column)
        return i;
    }
    return std::string_view::npos;
  }

  char at(const ::toml::source_position &pos) const {
    const size_t i = offset(pos);
    return i == std::string_view::npos ? '\0' : text_[i];
  }

  // The value-like token at pos, for "strings must be quoted".
  std::string_view token(const ::toml::source_position &pos) const {
    const size_t begin = offset(pos);
    if (begin == std::string_view::npos)
      return {};
    size_t end = text_.find_first_of(" \t\r\n#,]}", begin);
    if (end == std::string_view::npos)
      end = text_.size();
    return text_.substr(begin, end - begin);
  }

private:
  std::string_view text_;
  std::vector<size_t> line_starts_;
};

// toml++ quotes what it saw verbatim; a message must not carry raw control
// characters into a log or a terminal.
std::string printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// "Error while parsing string: encountered end-of-file" -> "unterminated
// string"; otherwise the detail first and toml++'s context after it.
std::string describe(const ::toml::parse_error &error, const Text &text) {
  std::string_view description = error.description();
  std::string_view context;
  constexpr std::string_view kPrefix = "Error while parsing ";
  if (description.starts_with(kPrefix)) {
    const size_t colon = description.find(": ", kPrefix.size());
    if (colon != std::string_view::npos) {
      context = description.substr(kPrefix.size(), colon - kPrefix.size());
      description.remove_prefix(colon + 2);
    }
  }
  if (context.ends_with("string")) {
    // A string that runs into the end of its line or of the file.
    const char c = text.at(error.source().begin);
    if (description.find("end-of-file") != std::string_view::npos ||
        (description.find("control characters") != std::string_view::npos &&
         (c == '\n' || c == '\r')))
      return "unterminated string";
  }
  if (description == "could not determine value type") {
    const std::string_view token = text.token(error.source().begin);
    if (!token.empty())
      return "invalid value '" + printable(token) + "' (strings must be quoted)";
  }
  std::string out = printable(description);
  if (!context.empty())
    out.append(" (in ").append(context).append(")");
  return out;
}

// Walks toml++'s tree into the flat Document, keeping the earliest refusal
// so that the message points at the first offending line of the file.
class Flattener {
public:
  Flattener(const Text &text, Document *doc) : text_(text), doc_(doc) {}

  void table(const ::toml::table &table, const std::string &prefix) {
    for (const auto &[key, node] : table) {
      const int line = static_cast<int>(key.source().begin.line);
      if (!is_bare_key(key.str())) {
        // A dot or space inside a quoted key would be ambiguous in the flat
        // "a.b.c" names the Document uses.
        refuse(line, "key \"" + printable(key.str()) +
                         "\" must be a bare key (letters, digits, '_' and '-')");
        continue;
      }
      std::string name =
          prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
      value(name, node, line);
    }
  }

  // The first refusal by line, or empty.
  const std::string &error() const { return error_; }
  int error_line() const { return error_line_; }

private:
  void refuse(int line, std::string message) {
    if (error_.empty() || line < error_line_) {
      error_ = std::move(message);
      error_line_ = line;
    }
  }

  void value(const std::string &name, const ::toml::node &node, int line) {
    const int node_line = static_cast<int>(node.source().begin.line);
    switch (node.type()) {
    case ::toml::node_type::string:
      doc_->values.emplace(name, Entry{std::string(*node.value<std::string_view>()), line});
      return;
    case ::toml::node_type::integer:
      doc_->values.emplace(name, Entry{*node.value<int64_t>(), line});
      return;
    case ::toml::node_type::boolean:
      doc_->values.emplace(name, Entry{*node.value<bool>(), line});
      return;
    case ::toml::node_type::table: {
      const auto &sub = *node.as_table();
      if (sub.is_inline()) {
        refuse(node_line, "inline tables are not supported ('" + name + "')");
        return;
      }
      if (is_header(sub))
        doc_->tables.emplace(name, node_line);
      table(sub, name);
      return;
    }
    case ::toml::node_type::array: {
      const auto &array = *node.as_array();
      const bool of_tables =
          !array.empty() && array.is_array_of_tables() && !array.front().as_table()->is_inline();
      refuse(node_line, of_tables ? "arrays of tables ([[" + name + "]]) are not supported"
                                  : "arrays are not supported ('" + name + "')");
      return;
    }
    case ::toml::node_type::floating_point:
      refuse(node_line, "floating-point values are not supported ('" + name + "')");
      return;
    case ::toml::node_type::date:
    case ::toml::node_type::time:
    case ::toml::node_type::date_time:
      refuse(node_line, "dates and times are not supported ('" + name + "')");
      return;
    case ::toml::node_type::none:
      break;
    }
    refuse(node_line, "unsupported value for '" + name + "'");
  }

  // Whether a [header] names this table. toml++ does not say, but its
  // positions do: a table a header defines begins at that header's '[';
  // one made by dotted keys (a.b = 1) begins at its key; one a header only
  // implies ([a.b] implies [a]) begins where a table below it does.
  bool is_header(const ::toml::table &table) const {
    const ::toml::source_position begin = table.source().begin;
    if (text_.at(begin) != '[')
      return false;
    for (const auto &[key, node] : table) {
      const ::toml::table *sub = node.as_table();
      if (sub != nullptr && sub->source().begin == begin)
        return false;
    }
    return true;
  }

  const Text &text_;
  Document *doc_;
  std::string error_;
  int error_line_ = 0;
};

std::string at_line(std::string_view source, int line) {
  return std::string(source) + ":" + std::to_string(line) + ": error: ";
}

} // namespace

Status parse(std::string_view text, std::string_view source, Document *out) {
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, "toml::parse: no output");
  try {
    // toml++ calls a NUL a control character in a comment or string; say
    // what it is, wherever it sits.
    if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
      const auto line =
          1 + std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(nul), '\n');
      return Status::error(AVA_E_PROTO,
                           at_line(source, static_cast<int>(line)) + "NUL byte in file");
    }
    const Text lines(text);
    ::toml::parse_result result = ::toml::parse(text, source);
    if (!result) {
      const ::toml::parse_error &error = result.error();
      return Status::error(AVA_E_PROTO,
                           at_line(source, static_cast<int>(error.source().begin.line)) +
                               describe(error, lines));
    }
    Document doc;
    Flattener flat(lines, &doc);
    flat.table(result.table(), "");
    if (!flat.error().empty())
      return Status::error(AVA_E_PROTO, at_line(source, flat.error_line()) + flat.error());
    *out = std::move(doc);
    return Status::ok();
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, std::string(source) + ": out of memory");
  }
}

std::string_view type_name(const Value &value) {
  if (std::holds_alternative<std::string>(value))
    return "string";
  if (std::holds_alternative<int64_t>(value))
    return "integer";
  return "boolean";
}

} // namespace ava::toml
