// SPDX-License-Identifier: MIT
// AF_UNIX plumbing shared by the carriers that listen on a unix socket: the
// `unix` stream channel and the `shm` channel's hand-over socket.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <string>

#include "transport/channel.hpp"
#include "transport/fd_util.hpp"

namespace ava::detail {

// path is a filesystem path or '@' + an abstract name; scheme ("unix",
// "shm") only names the address in messages.
Status make_unix_sockaddr(const std::string &path, const char *scheme, sockaddr_un *sa,
                          socklen_t *len);

// A socket of `type` bound and listening at address.path. A socket file left
// behind by a dead listener is replaced; one a live process listens on is
// an error. owns_file/dev/ino identify the file this listener created.
struct UnixListenSocket {
  UniqueFd fd;
  UniqueFd wake;
  bool owns_file = false;
  dev_t dev = 0;
  ino_t ino = 0;
};
Status listen_unix_socket(const Address &address, const char *scheme, int type,
                          UnixListenSocket *out);

// Removes the socket file only while it is still the one (dev, ino) this
// listener created: a newer listener may have replaced it meanwhile.
void remove_own_socket_file(const std::string &path, dev_t dev, ino_t ino);

} // namespace ava::detail
