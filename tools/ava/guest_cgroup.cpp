// SPDX-License-Identifier: MIT
#include "tools/ava/guest_cgroup.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ava::tool {
namespace {

std::string errno_text(const std::string &what, int err) {
  return what + ": " + std::strerror(err);
}

bool write_text(int fd, const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

} // namespace

GuestCgroup::~GuestCgroup() {
  procs_.reset();
  if (!path_.empty() && ::rmdir(path_.c_str()) != 0 && errno != ENOENT)
    std::fprintf(stderr, "ava: %s\n", errno_text("cannot remove " + path_, errno).c_str());
}

Status GuestCgroup::create(const GuestSandbox &sandbox, uint64_t serial,
                           std::unique_ptr<GuestCgroup> *out) {
  auto cg = std::unique_ptr<GuestCgroup>(new GuestCgroup);
  const std::string path =
      sandbox.cgroup + "/ava-guest-" + std::to_string(::getpid()) + "-" + std::to_string(serial);
  if (::mkdir(path.c_str(), 0755) != 0)
    return Status::error(AVA_E_STATE, errno_text("cannot make the cgroup " + path, errno));
  cg->path_ = path;
  if (sandbox.memory_max != 0) {
    // cgroup v2 calls it memory.max, the v1 memory controller memory.limit_in_bytes.
    Status st = cg->write_first({"memory.max", "memory.limit_in_bytes"},
                                std::to_string(sandbox.memory_max));
    if (!st.is_ok())
      return st;
  }
  cg->procs_.reset(::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  if (cg->procs_.get() < 0)
    return Status::error(AVA_E_STATE, errno_text(path + "/cgroup.procs", errno));
  *out = std::move(cg);
  return Status::ok();
}

Status GuestCgroup::write_first(std::initializer_list<const char *> names,
                                const std::string &value) {
  for (const char *name : names) {
    const std::string file = path_ + "/" + name;
    Fd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
    if (fd.get() < 0)
      continue;
    if (!write_text(fd.get(), value + "\n"))
      return Status::error(AVA_E_STATE, errno_text("cannot write " + value + " to " + file, errno));
    return Status::ok();
  }
  std::string tried;
  for (const char *name : names)
    tried += std::string(tried.empty() ? "" : " nor ") + name;
  return Status::error(AVA_E_STATE, path_ + ": no memory controller (neither " + tried + ")");
}

} // namespace ava::tool
