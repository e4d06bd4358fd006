// SPDX-License-Identifier: MIT
// A fresh directory under /tmp for one test (sockets, files), removed with
// what the test left in it (plain entries only: tests make no subdirectories).
#pragma once

#include <criterion/criterion.h>

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace ava::testing {

struct TempDir {
  std::string path;
  // prefix: names the test in the directory's name, as /tmp/ava-PREFIX-XXXXXX.
  explicit TempDir(const char *prefix = "test") {
    std::string tmpl = std::string("/tmp/ava-") + prefix + "-XXXXXX";
    cr_assert_not_null(::mkdtemp(tmpl.data()));
    path = tmpl;
  }
  ~TempDir() {
    if (DIR *d = ::opendir(path.c_str())) {
      while (const dirent *e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..")
          ::unlink((path + "/" + name).c_str());
      }
      ::closedir(d);
    }
    ::rmdir(path.c_str());
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
};

} // namespace ava::testing
