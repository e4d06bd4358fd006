// SPDX-License-Identifier: MIT
#include "worker/credentials.hpp"

#include "transport/text_file.hpp"

namespace ava {
namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

bool token_char(char c) {
  return c > 0x20 && c < 0x7f;
}

// Equal contents, in time that depends only on the lengths.
bool same_bytes(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty())
    return a.size() == b.size();
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < b.size(); i++)
    diff |= static_cast<unsigned char>(a[i % a.size()]) ^ static_cast<unsigned char>(b[i]);
  return diff == 0;
}

} // namespace

Status CredentialTable::parse(std::string_view text, std::string_view source,
                              CredentialTable *out) {
  CredentialTable table;
  int line_no = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    line_no++;
    auto bad = [&](const std::string &why) {
      return Status::error(AVA_E_PROTO,
                           std::string(source) + ":" + std::to_string(line_no) + ": " + why);
    };
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
      line.remove_prefix(1);
    if (line.empty() || line.front() == '#')
      continue;
    const size_t gap = line.find_first_of(" \t");
    if (gap == std::string_view::npos)
      return bad("expected 'name token'");
    std::string_view name = line.substr(0, gap);
    std::string_view token = line.substr(line.find_first_not_of(" \t", gap));
    if (name.size() > kMaxName)
      return bad("the name '" + std::string(name) + "' is longer than " + std::to_string(kMaxName) +
                 " characters");
    for (char c : name)
      if (!name_char(c))
        return bad("a name takes letters, digits, '_', '-' and '.' only");
    if (token.size() < kMinToken || token.size() > AVA_CREDENTIAL_MAX)
      return bad("a token has " + std::to_string(kMinToken) + " to " +
                 std::to_string(AVA_CREDENTIAL_MAX) + " characters (this one " +
                 std::to_string(token.size()) + ")");
    for (char c : token)
      if (!token_char(c))
        return bad("a token is printable ASCII without spaces");
    for (const Entry &e : table.entries_) {
      if (e.name == name)
        return bad("the name '" + std::string(name) + "' is listed twice");
      if (e.token == token)
        return bad("the token of '" + std::string(name) + "' is also that of '" + e.name + "'");
    }
    table.entries_.push_back(Entry{std::string(name), std::string(token)});
  }
  if (table.entries_.empty())
    return Status::error(AVA_E_PROTO, std::string(source) + ": lists no credential");
  *out = std::move(table);
  return Status::ok();
}

Status CredentialTable::load(const std::string &path, CredentialTable *out) {
  std::string text;
  Status read = read_text_file(path.c_str(), &text, nullptr, true);
  if (!read.is_ok())
    return read;
  return parse(text, path, out);
}

const std::string *CredentialTable::match(std::string_view token) const {
  const std::string *found = nullptr;
  for (const Entry &e : entries_)
    if (same_bytes(e.token, token) && found == nullptr)
      found = &e.name;
  return found;
}

} // namespace ava
