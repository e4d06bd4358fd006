// SPDX-License-Identifier: MIT
// io_uring stream channels: the same messages, framing and Status codes as
// the plain socket channel, with batched receive (many small messages per
// completion) and batched send (one SENDMSG per gather list, which may hold
// several whole messages back to back). Where io_uring is unavailable (old
// kernel, seccomp'd container, io_uring_disabled) every entry point says so
// with AVA_E_UNSUPPORTED and leaves a working plain channel to the caller.
#pragma once

#include <memory>
#include <string>

#include "transport/channel.hpp"

namespace ava {

// AVA_OK when this process can set up io_uring; otherwise AVA_E_UNSUPPORTED
// with the reason.
Status uring_available();

// Wraps a connected stream socket (unix, tcp, vsock) in an io_uring channel.
// Takes ownership of fd only on success: on failure the caller still owns it
// and can fall back to adopt_stream_socket(fd, ...). The socket is switched
// to blocking mode (io_uring does the waiting).
Status make_uring_channel(int fd, std::string description, std::unique_ptr<Channel> *out);

// Replaces a freshly connected or accepted plain socket channel by an
// io_uring channel on the same socket. On failure *channel is left as it was
// (still usable) and the status says why (AVA_E_UNSUPPORTED: io_uring is
// unavailable, the channel is not a plain socket channel, or it has already
// read ahead).
Status upgrade_channel_uring(std::unique_ptr<Channel> *channel);

// A listener whose accept() returns io_uring channels, for `ava worker
// --io-uring`. If io_uring is unavailable, *out is the plain listener itself
// and the status is AVA_E_UNSUPPORTED with the reason (log it and go on); a
// connection for which io_uring cannot be set up later stays plain.
// `wrap_listener_uring(std::move(l), &l)` is fine.
Status wrap_listener_uring(std::unique_ptr<Listener> plain, std::unique_ptr<Listener> *out);

} // namespace ava
