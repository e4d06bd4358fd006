// SPDX-License-Identifier: MIT
// The parts of the HELLO / HELLO_ACK handshake (include/ava/wire.h) that the
// guest library and the worker share: the items after a HELLO's block, the
// version choice, and text fields of fixed size that came off the wire.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ava/wire.h"
#include "transport/channel.hpp"

namespace ava {

// The version text each side sends (struct ava_hello.build / ava_hello_ack.build).
std::string_view ava_build_text();

struct HelloItem {
  uint32_t kind;
  std::string_view bytes;
};

// Encodes items in the wire's order and padding.
std::vector<uint8_t> encode_hello_items(std::span<const HelloItem> items);

// Calls fn for each item of bytes, in order; AVA_E_PROTO (with *why) when the
// run is longer than AVA_HELLO_ITEMS_MAX, an item overruns it, its padding is
// not zero, or a kind appears twice. Items of unknown kinds are passed on too
// (fn skips them); nothing is copied.
Status decode_hello_items(std::span<const uint8_t> bytes,
                          const std::function<Status(const HelloItem &)> &fn);

// The highest version in both ranges, or 0 when they do not meet (or a range
// is empty).
uint16_t choose_protocol(uint16_t guest_min, uint16_t guest_max, uint16_t worker_min,
                         uint16_t worker_max);

// "2" or "2..3": a range for messages.
std::string protocol_range_text(uint16_t min, uint16_t max);

// The text of a fixed-size, NUL-padded field from the other side: up to its
// first NUL, bytes outside printable ASCII as '?', "" when the field has no
// NUL at all (a lying peer).
std::string wire_text(const char *field, size_t size);

} // namespace ava
