// SPDX-License-Identifier: MIT
// ava's configuration files in TOML, parsed by toml++ and flattened: keys
// hold strings, integers or booleans, tables group them. Anything the flat
// view cannot hold (floats, dates, arrays, inline tables, keys that are not
// bare words) is an error at its line rather than a silent misreading.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "transport/channel.hpp"

namespace ava::toml {

using Value = std::variant<std::string, int64_t, bool>;

struct Entry {
  Value value;
  int line = 0; // 1-based, for messages
};

struct Document {
  // Flat: "table.sub.key" -> value; top-level keys have no prefix.
  std::map<std::string, Entry, std::less<>> values;
  // Every [header] seen, with its line, so that empty tables can be checked
  // too. Tables a header only implies ([a] for [a.b]) or that dotted keys
  // make (a.b = 1) are not listed.
  std::map<std::string, int, std::less<>> tables;
};

// Parses text; errors are AVA_E_PROTO with "SOURCE:LINE: error: message".
Status parse(std::string_view text, std::string_view source, Document *out);

// "string", "integer" or "boolean".
std::string_view type_name(const Value &value);

} // namespace ava::toml
