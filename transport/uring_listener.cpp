// SPDX-License-Identifier: MIT
// Public io_uring entry points: construction from a socket, upgrading a
// plain channel, and the listener wrapper.
#include <new>

#include "transport/socket_channel.hpp"
#include "transport/uring.hpp"
#include "transport/uring_channel.hpp"

namespace ava {
namespace {

class UringListener final : public Listener {
public:
  explicit UringListener(std::unique_ptr<Listener> plain) : plain_(std::move(plain)) {}

  Status accept(std::unique_ptr<Channel> *out, int timeout_ms) override {
    if (out == nullptr)
      return Status::error(AVA_E_PROTO, "accept: no output channel");
    std::unique_ptr<Channel> channel;
    Status st = plain_->accept(&channel, timeout_ms);
    if (!st.is_ok())
      return st;
    // A connection that cannot have io_uring (e.g. out of locked memory on an
    // old kernel) is still served, over the plain channel.
    static_cast<void>(upgrade_channel_uring(&channel));
    *out = std::move(channel);
    return Status::ok();
  }
  // The process that adopts the connection upgrades it (upgrade_channel_uring).
  Status accept_connection(int *fd, int timeout_ms) override {
    return plain_->accept_connection(fd, timeout_ms);
  }
  void shutdown() override { plain_->shutdown(); }
  Address address() const override { return plain_->address(); }

private:
  std::unique_ptr<Listener> plain_;
};

} // namespace

Status uring_available() {
  try {
    detail::UringRing ring;
    const int rc = ring.init(1);
    if (rc < 0)
      return Status::error(AVA_E_UNSUPPORTED, "io_uring unavailable (io_uring_queue_init: " +
                                                  detail::errno_text(-rc) + ")");
    return Status::ok();
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "io_uring: out of memory");
  }
}

Status make_uring_channel(int fd, std::string description, std::unique_ptr<Channel> *out) {
  if (fd < 0 || out == nullptr)
    return Status::error(AVA_E_PROTO, "make_uring_channel: invalid arguments");
  try {
    std::unique_ptr<detail::UringChannel> channel;
    Status st = detail::UringChannel::create(std::move(description), &channel);
    if (!st.is_ok())
      return st;
    detail::UniqueFd owned(fd);
    st = channel->attach(&owned);
    // On failure the fd goes back to the caller unclosed.
    static_cast<void>(owned.release());
    if (!st.is_ok())
      return st;
    *out = std::move(channel);
    return Status::ok();
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "make_uring_channel: out of memory");
  }
}

Status upgrade_channel_uring(std::unique_ptr<Channel> *channel) {
  if (channel == nullptr || *channel == nullptr)
    return Status::error(AVA_E_PROTO, "upgrade_channel_uring: no channel");
  Channel &old = **channel;
  try {
    auto *plain = dynamic_cast<detail::SocketChannel *>(&old);
    if (plain == nullptr)
      return Status::error(AVA_E_UNSUPPORTED,
                           old.describe() + ": io_uring: not a plain socket channel");
    std::unique_ptr<detail::UringChannel> upgraded;
    Status st = detail::UringChannel::create(old.describe(), &upgraded);
    if (!st.is_ok())
      return st;
    upgraded->set_max_message(old.max_message());
    upgraded->set_stall_timeout_ms(old.stall_timeout_ms());
    detail::UniqueFd fd;
    if (!plain->release_socket(&fd))
      return Status::error(AVA_E_UNSUPPORTED,
                           old.describe() + ": io_uring: the channel has already read ahead");
    st = upgraded->attach(&fd);
    if (!st.is_ok()) {
      // The socket left the old channel already; a fresh plain one takes it back.
      auto again = std::make_unique<detail::SocketChannel>(std::move(fd), old.describe());
      again->set_max_message(old.max_message());
      again->set_stall_timeout_ms(old.stall_timeout_ms());
      *channel = std::move(again);
      return st;
    }
    *channel = std::move(upgraded);
    return Status::ok();
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "upgrade_channel_uring: out of memory");
  }
}

Status wrap_listener_uring(std::unique_ptr<Listener> plain, std::unique_ptr<Listener> *out) {
  if (plain == nullptr || out == nullptr)
    return Status::error(AVA_E_PROTO, "wrap_listener_uring: invalid arguments");
  Status st = uring_available();
  if (!st.is_ok()) {
    *out = std::move(plain);
    st.message += "; connections use plain sockets";
    return st;
  }
  try {
    *out = std::make_unique<UringListener>(std::move(plain));
    return Status::ok();
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "wrap_listener_uring: out of memory");
  }
}

} // namespace ava
