// SPDX-License-Identifier: MIT
// The kmod channel: in a guest VM, ava.ko's /dev/ava gives this process one
// slot of the ivshmem region shared with the host (include/ava/ivshmem.h),
// laid out as a ring.h region; `ava vmhost` on the host serves it.
#pragma once

#include <memory>

#include "transport/channel.hpp"

namespace ava {

// Opens the device (address.path), claims a slot, maps it and checks the
// region ava.ko wrote there. Fails with AVA_E_CLOSED when the device is
// absent, busy (every slot taken) or the host is down, naming which.
Status connect_kmod(const Address &address, int connect_timeout_ms, std::unique_ptr<Channel> *out);

} // namespace ava
