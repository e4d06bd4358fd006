// SPDX-License-Identifier: MIT
#include "shim/toml.hpp"

#include <new>

namespace ava::toml {
namespace {

bool is_bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && c != '\t') || u == 0x7f;
}

// Parses one file line by line (the subset has no construct spanning lines).
class Parser {
public:
  Parser(std::string_view source, Document *doc) : source_(source), doc_(doc) {}

  Status run(std::string_view text) {
    size_t start = 0;
    while (start <= text.size()) {
      ++line_no_;
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos)
        end = text.size();
      std::string_view line = text.substr(start, end - start);
      if (!line.empty() && line.back() == '\r')
        line.remove_suffix(1);
      if (!parse_line(line))
        return Status::error(AVA_E_PROTO, std::string(source_) + ":" + std::to_string(line_no_) +
                                              ": error: " + error_);
      start = end + 1;
    }
    return Status::ok();
  }

private:
  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  bool at_end() const { return pos_ >= line_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < line_.size() ? line_[pos_ + ahead] : '\0';
  }
  void skip_ws() {
    while (!at_end() && (line_[pos_] == ' ' || line_[pos_] == '\t'))
      ++pos_;
  }
  // After the meaningful part of a line only blanks and a comment may follow.
  bool expect_line_end(std::string_view after) {
    skip_ws();
    if (at_end() || peek() == '#')
      return true;
    return fail("unexpected text after " + std::string(after) + ": '" +
                std::string(line_.substr(pos_)) + "'");
  }

  bool parse_line(std::string_view line) {
    line_ = line;
    pos_ = 0;
    for (char c : line)
      if (c == '\0')
        return fail("NUL byte in file");
    skip_ws();
    if (at_end() || peek() == '#')
      return true;
    if (peek() == '[')
      return parse_header();
    return parse_key_value();
  }

  bool parse_key(std::string *key) {
    key->clear();
    for (;;) {
      skip_ws();
      const size_t begin = pos_;
      while (!at_end() && is_bare_key_char(peek()))
        ++pos_;
      if (pos_ == begin) {
        if (peek() == '"' || peek() == '\'')
          return fail("quoted keys are not supported");
        if (at_end())
          return fail("expected a key");
        return fail(std::string("unexpected character '") + peek() + "' in a key");
      }
      key->append(line_.substr(begin, pos_ - begin));
      skip_ws();
      if (peek() != '.')
        return true;
      ++pos_;
      key->push_back('.');
    }
  }

  // A name may not be both a value and a table.
  bool check_conflicts(const std::string &name) {
    for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
      auto it = doc_->values.find(std::string_view(name).substr(0, dot));
      if (it != doc_->values.end())
        return fail("'" + it->first + "' is already a value (line " +
                    std::to_string(it->second.line) + ")");
    }
    const std::string prefix = name + ".";
    auto it = doc_->values.lower_bound(prefix);
    if (it != doc_->values.end() && it->first.starts_with(prefix))
      return fail("'" + name + "' is already a table (line " + std::to_string(it->second.line) +
                  ")");
    return true;
  }

  bool parse_header() {
    ++pos_;
    if (peek() == '[')
      return fail("arrays of tables ([[...]]) are not supported");
    std::string name;
    if (!parse_key(&name))
      return false;
    if (peek() != ']')
      return fail("expected ']' to close the table header");
    ++pos_;
    if (!expect_line_end("table header"))
      return false;
    auto seen = doc_->tables.find(name);
    if (seen != doc_->tables.end())
      return fail("table [" + name + "] is defined twice (first on line " +
                  std::to_string(seen->second) + ")");
    auto value = doc_->values.find(name);
    if (value != doc_->values.end())
      return fail("'" + name + "' is already a value (line " + std::to_string(value->second.line) +
                  ")");
    if (!check_conflicts(name))
      return false;
    doc_->tables.emplace(name, line_no_);
    table_ = std::move(name);
    return true;
  }

  bool parse_key_value() {
    std::string key;
    if (!parse_key(&key))
      return false;
    if (peek() != '=')
      return fail("expected '=' after key '" + key + "'");
    ++pos_;
    skip_ws();
    Value value;
    if (!parse_value(&value))
      return false;
    if (!expect_line_end("value"))
      return false;
    std::string full = table_.empty() ? key : table_ + "." + key;
    auto seen = doc_->values.find(full);
    if (seen != doc_->values.end())
      return fail("key '" + full + "' is defined twice (first on line " +
                  std::to_string(seen->second.line) + ")");
    if (doc_->tables.count(full) != 0)
      return fail("'" + full + "' is already a table");
    if (!check_conflicts(full))
      return false;
    doc_->values.emplace(std::move(full), Entry{std::move(value), line_no_});
    return true;
  }

  bool parse_value(Value *out) {
    if (at_end() || peek() == '#')
      return fail("missing value");
    switch (peek()) {
    case '"':
      return parse_basic_string(out);
    case '\'':
      return parse_literal_string(out);
    case '[':
      return fail("arrays are not supported");
    case '{':
      return fail("inline tables are not supported");
    default:
      return parse_bare(out);
    }
  }

  bool parse_basic_string(Value *out) {
    if (line_.substr(pos_).starts_with("\"\"\""))
      return fail("multi-line strings are not supported");
    ++pos_;
    std::string text;
    for (;;) {
      if (at_end())
        return fail("unterminated string");
      const char c = line_[pos_++];
      if (c == '"')
        break;
      if (is_control(c))
        return fail("control character in a string (use an escape)");
      if (c != '\\') {
        text.push_back(c);
        continue;
      }
      if (at_end())
        return fail("unterminated string");
      const char e = line_[pos_++];
      switch (e) {
      case '"':
      case '\\':
        text.push_back(e);
        break;
      case 'n':
        text.push_back('\n');
        break;
      case 't':
        text.push_back('\t');
        break;
      default:
        return fail(std::string("unsupported escape sequence '\\") + e + "'");
      }
    }
    *out = std::move(text);
    return true;
  }

  bool parse_literal_string(Value *out) {
    if (line_.substr(pos_).starts_with("'''"))
      return fail("multi-line strings are not supported");
    ++pos_;
    const size_t begin = pos_;
    while (!at_end() && peek() != '\'') {
      if (is_control(peek()))
        return fail("control character in a string");
      ++pos_;
    }
    if (at_end())
      return fail("unterminated string");
    *out = std::string(line_.substr(begin, pos_ - begin));
    ++pos_;
    return true;
  }

  bool parse_bare(Value *out) {
    const size_t begin = pos_;
    while (!at_end() && peek() != ' ' && peek() != '\t' && peek() != '#')
      ++pos_;
    const std::string_view token = line_.substr(begin, pos_ - begin);
    if (token == "true" || token == "false") {
      *out = token == "true";
      return true;
    }
    return parse_integer(token, out);
  }

  bool parse_integer(std::string_view token, Value *out) {
    const std::string shown(token);
    std::string_view digits = token;
    bool negative = false;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (digits.empty() || !is_digit(digits[0]))
      return fail(describe_bad_token(shown));
    if (digits.size() > 1 && digits[0] == '0') {
      if (digits[1] == 'x' || digits[1] == 'o' || digits[1] == 'b')
        return fail("only decimal integers are supported: '" + shown + "'");
      if (is_digit(digits[1]) || digits[1] == '_')
        return fail("leading zeros are not allowed: '" + shown + "'");
    }
    // Magnitude limit: INT64_MAX, or one more for a negative number.
    const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
    uint64_t value = 0;
    for (size_t i = 0; i < digits.size(); ++i) {
      const char c = digits[i];
      if (c == '_') {
        if (i + 1 >= digits.size() || !is_digit(digits[i + 1]) || !is_digit(digits[i - 1]))
          return fail("'_' must sit between digits: '" + shown + "'");
        continue;
      }
      if (!is_digit(c))
        return fail(describe_bad_token(shown));
      const auto d = static_cast<uint64_t>(c - '0');
      if (value > (limit - d) / 10)
        return fail("integer out of range: '" + shown + "'");
      value = value * 10 + d;
    }
    if (negative)
      *out = value == (uint64_t{1} << 63) ? INT64_MIN : -static_cast<int64_t>(value);
    else
      *out = static_cast<int64_t>(value);
    return true;
  }

  static std::string describe_bad_token(const std::string &token) {
    const bool digit_led =
        !token.empty() && (is_digit(token[0]) || token[0] == '+' || token[0] == '-');
    if (token == "inf" || token == "nan" || token == "+inf" || token == "-inf" || token == "+nan" ||
        token == "-nan" || (digit_led && token.find_first_of(".eE") != std::string::npos))
      return "floating-point values are not supported: '" + token + "'";
    if (digit_led && token.find_first_of(":T") != std::string::npos)
      return "dates and times are not supported: '" + token + "'";
    if (digit_led && token.size() > 4 && token[4] == '-')
      return "dates and times are not supported: '" + token + "'";
    return "invalid value '" + token + "' (strings must be quoted)";
  }

  std::string_view source_;
  Document *doc_;
  std::string table_;
  std::string_view line_;
  size_t pos_ = 0;
  int line_no_ = 0;
  std::string error_;
};

} // namespace

Status parse(std::string_view text, std::string_view source, Document *out) {
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, "toml::parse: no output");
  try {
    Document doc;
    Parser parser(source, &doc);
    Status st = parser.run(text);
    if (!st.is_ok())
      return st;
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
