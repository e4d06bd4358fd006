// SPDX-License-Identifier: MIT
#include "transport/text_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ava {

Status read_text_file(const char *path, std::string *text, bool *missing, bool secret) {
  if (missing != nullptr)
    *missing = false;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT && missing != nullptr) {
      *missing = true;
      return Status::ok();
    }
    return Status::error(AVA_E_PROTO, std::string(path) + ": error: " + std::strerror(errno));
  }
  struct stat st {};
  Status result = Status::ok();
  if (::fstat(fd, &st) != 0) {
    result = Status::error(AVA_E_PROTO, std::string(path) + ": error: " + std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    result = Status::error(AVA_E_PROTO, std::string(path) + ": error: not a regular file");
  } else if (secret && (st.st_mode & S_IRWXO) != 0) {
    result = Status::error(AVA_E_PROTO, std::string(path) +
                                            ": error: holds a secret but others may read or "
                                            "write it (chmod o= " +
                                            path + ")");
  } else if (st.st_size > kMaxTextFileBytes) {
    result = Status::error(AVA_E_PROTO, std::string(path) + ": error: file larger than " +
                                            std::to_string(kMaxTextFileBytes) + " bytes");
  } else {
    text->resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < text->size()) {
      const ssize_t n = ::read(fd, text->data() + done, text->size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        result = Status::error(AVA_E_PROTO, std::string(path) + ": error: " + std::strerror(errno));
        break;
      }
      if (n == 0)
        break; // Shrunk while reading: use what is there.
      done += static_cast<size_t>(n);
    }
    text->resize(done);
  }
  ::close(fd);
  return result;
}

} // namespace ava
