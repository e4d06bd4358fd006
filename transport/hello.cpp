// SPDX-License-Identifier: MIT
#include "transport/hello.hpp"

#include <cstring>
#include <set>

namespace ava {

std::string_view ava_build_text() {
  return "ava " AVA_VERSION_STRING;
}

std::vector<uint8_t> encode_hello_items(std::span<const HelloItem> items) {
  std::vector<uint8_t> out;
  for (const HelloItem &item : items) {
    ava_hello_item head{item.kind, static_cast<uint32_t>(item.bytes.size())};
    const size_t at = out.size();
    const size_t padded = (item.bytes.size() + 7) & ~size_t{7};
    out.resize(at + sizeof head + padded, 0);
    std::memcpy(out.data() + at, &head, sizeof head);
    if (!item.bytes.empty())
      std::memcpy(out.data() + at + sizeof head, item.bytes.data(), item.bytes.size());
  }
  return out;
}

Status decode_hello_items(std::span<const uint8_t> bytes,
                          const std::function<Status(const HelloItem &)> &fn) {
  auto bad = [](const std::string &why) {
    return Status::error(AVA_E_PROTO, "HELLO items: " + why);
  };
  if (bytes.size() > AVA_HELLO_ITEMS_MAX)
    return bad(std::to_string(bytes.size()) + " bytes, more than " +
               std::to_string(AVA_HELLO_ITEMS_MAX));
  std::set<uint32_t> seen;
  size_t at = 0;
  while (at < bytes.size()) {
    ava_hello_item head;
    if (bytes.size() - at < sizeof head)
      return bad("a truncated item header at byte " + std::to_string(at));
    std::memcpy(&head, bytes.data() + at, sizeof head);
    at += sizeof head;
    const uint64_t padded = (uint64_t{head.len} + 7) & ~uint64_t{7};
    if (padded > bytes.size() - at)
      return bad("item of kind " + std::to_string(head.kind) + " claims " +
                 std::to_string(head.len) + " bytes, " + std::to_string(bytes.size() - at) +
                 " are left");
    for (uint64_t i = head.len; i < padded; i++)
      if (bytes[at + i] != 0)
        return bad("non-zero padding after the item of kind " + std::to_string(head.kind));
    if (!seen.insert(head.kind).second)
      return bad("two items of kind " + std::to_string(head.kind));
    Status s = fn(HelloItem{
        head.kind, std::string_view(reinterpret_cast<const char *>(bytes.data() + at), head.len)});
    if (!s.is_ok())
      return s;
    at += padded;
  }
  return Status::ok();
}

uint16_t choose_protocol(uint16_t guest_min, uint16_t guest_max, uint16_t worker_min,
                         uint16_t worker_max) {
  const uint16_t low = guest_min > worker_min ? guest_min : worker_min;
  const uint16_t high = guest_max < worker_max ? guest_max : worker_max;
  return low <= high && high != 0 ? high : 0;
}

std::string protocol_range_text(uint16_t min, uint16_t max) {
  return min == max ? std::to_string(min) : std::to_string(min) + ".." + std::to_string(max);
}

std::string wire_text(const char *field, size_t size) {
  const void *nul = std::memchr(field, 0, size);
  if (nul == nullptr)
    return "";
  std::string text(field, static_cast<const char *>(nul));
  for (char &c : text)
    if (c < 0x20 || c > 0x7e)
      c = '?';
  return text;
}

} // namespace ava
