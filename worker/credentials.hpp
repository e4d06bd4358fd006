// SPDX-License-Identifier: MIT
// Guest credentials the host accepts: a file named by the host configuration
// (`[guest] credentials = PATH`), one guest per line,
//
//   # name   token
//   alice    3q8Vd0...            (token: 16 to 4096 printable characters)
//
// A guest's HELLO carries its token (AVA_HELLO_ITEM_CREDENTIAL); with a table
// configured, a HELLO without a listed token is refused (AVA_E_ACCESS), and
// one with a listed token is known by its name from then on (the session
// report's peer=, the ACK's peer). The file holds secrets, so one that other
// users may read is refused, as ssh refuses such keys.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "transport/channel.hpp"

namespace ava {

class CredentialTable {
public:
  static constexpr size_t kMinToken = 16;
  static constexpr size_t kMaxName = 15; // fits struct ava_hello_ack.peer with its NUL

  // Parses the file's text; errors name source and line.
  static Status parse(std::string_view text, std::string_view source, CredentialTable *out);
  // Reads path (refusing a file others may read) and parses it.
  static Status load(const std::string &path, CredentialTable *out);

  // The name of the entry whose token equals token, or nullptr. Compares with
  // every entry in time that does not depend on where the bytes differ.
  const std::string *match(std::string_view token) const;
  size_t size() const { return entries_.size(); }

private:
  struct Entry {
    std::string name;
    std::string token;
  };
  std::vector<Entry> entries_;
};

} // namespace ava
