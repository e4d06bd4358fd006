// SPDX-License-Identifier: MIT
#include "worker/session_report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ava {
namespace {

std::string session_text(uint64_t id) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(id));
  return text;
}

} // namespace

std::string format_session_report(const SessionReport &report) {
  return "session spec=" + (report.spec.empty() ? std::string("-") : report.spec) +
         " pid=" + std::to_string(report.guest_pid) +
         " worker=" + std::to_string(report.worker_pid) + " calls=" + std::to_string(report.calls) +
         " sync=" + std::to_string(report.sync) + " refused=" + std::to_string(report.refused) +
         " staged=" + std::to_string(report.staged) +
         " in_place=" + std::to_string(report.in_place) + " id=" + session_text(report.session_id) +
         " peer=" + (report.peer.empty() ? std::string("-") : report.peer) + "\n";
}

Status append_session_report(const std::string &path, const SessionReport &report) {
  const std::string line = format_session_report(report);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error(AVA_E_STATE, "cannot open " + path + ": " + std::strerror(errno));
  ssize_t n;
  do {
    n = ::write(fd, line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  const int saved = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size()))
    return Status::error(AVA_E_STATE, "cannot append to " + path + ": " +
                                          (n < 0 ? std::strerror(saved) : "short write"));
  return Status::ok();
}

} // namespace ava
