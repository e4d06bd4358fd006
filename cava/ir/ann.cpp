// SPDX-License-Identifier: MIT
#include <utility>

#include "cava/ir/ir.hpp"

namespace cava {
namespace {

struct AnnEntry {
  Ann ann;
  const char *name;
  bool function_level;
};

constexpr AnnEntry kAnns[] = {
    {Ann::In, "ava_in", false},
    {Ann::Out, "ava_out", false},
    {Ann::Buffer, "ava_buffer", false},
    {Ann::Handle, "ava_handle", false},
    {Ann::Opaque, "ava_opaque", false},
    {Ann::ZerocopyBuffer, "ava_zerocopy_buffer", false},
    {Ann::Callback, "ava_callback", false},
    {Ann::Userdata, "ava_userdata", false},
    {Ann::LifetimeCall, "ava_lifetime_call", false},
    {Ann::LifetimeCoupled, "ava_lifetime_coupled", false},
    {Ann::LifetimeManual, "ava_lifetime_manual", false},
    {Ann::LifetimeStatic, "ava_lifetime_static", false},
    {Ann::LifetimeOnce, "ava_lifetime_once", false},
    {Ann::Allocates, "ava_allocates", false},
    {Ann::Deallocates, "ava_deallocates", false},
    {Ann::Retains, "ava_retains", false},
    {Ann::HandleValue, "ava_handle_value", false},
    {Ann::AllocatesResource, "ava_allocates_resource", false},
    {Ann::DeallocatesResource, "ava_deallocates_resource", false},
    {Ann::BufferAllocator, "ava_buffer_allocator", false},
    {Ann::DependsOn, "ava_depends_on", false},
    {Ann::NoCopy, "ava_no_copy", false},
    {Ann::ImplicitArgument, "ava_implicit_argument", false},
    {Ann::Error, "ava_error", false},
    {Ann::Sync, "ava_sync", true},
    {Ann::Async, "ava_async", true},
    {Ann::AsyncShape, "ava_async_shape", true},
    {Ann::Flush, "ava_flush", true},
    {Ann::DeviceWait, "ava_device_wait", true},
    {Ann::Success, "ava_success", true},
    {Ann::OrderedBy, "ava_ordered_by", true},
    {Ann::ConsumesResource, "ava_consumes_resource", true},
    {Ann::DisableNativeCall, "ava_disable_native_call", true},
    {Ann::Unsupported, "ava_unsupported", true},
    {Ann::TimeMe, "ava_time_me", true},
    {Ann::ObjectRecord, "ava_object_record", false},
    {Ann::ObjectDependsOn, "ava_object_depends_on", false},
    {Ann::ObjectExplicitStateFunctions, "ava_object_explicit_state_functions", false},
};

} // namespace

std::optional<Ann> ann_from_marker(const std::string &marker) {
  // Markers are the user spelling with two more leading underscores.
  if (marker.rfind("__", 0) != 0)
    return std::nullopt;
  const std::string user = marker.substr(2);
  for (const auto &e : kAnns) {
    if (user == e.name)
      return e.ann;
  }
  return std::nullopt;
}

const char *ann_name(Ann a) {
  for (const auto &e : kAnns) {
    if (e.ann == a)
      return e.name;
  }
  return "ava_?";
}

bool ann_is_function_level(Ann a) {
  for (const auto &e : kAnns) {
    if (e.ann == a)
      return e.function_level;
  }
  return false;
}

} // namespace cava
