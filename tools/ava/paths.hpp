// SPDX-License-Identifier: MIT
// Where `ava` finds its guest libraries, worker plugins and the program to run.
#pragma once

#include <string>
#include <vector>

namespace ava::tool {

// The running ava executable (via /proc/self/exe); empty if unreadable.
std::string self_executable();
// $AVA_GUEST_LIB_DIR, else <dir of ava>/../lib/ava/guest.
std::string guest_lib_dir();
// $AVA_PLUGIN_DIR, else <dir of ava>/../lib/ava/worker.
std::string plugin_dir();
// Spec names of the libava_worker_<name>.so plugins in dir (sorted; none if unreadable).
std::vector<std::string> plugin_specs(const std::string &dir);

enum class Lookup { Found, NotFound, NotExecutable };
// Resolves name as a shell would: a name with '/' is used as is, else each
// $PATH entry is tried (an empty entry means the current directory).
Lookup find_program(const std::string &name, std::string *path);

} // namespace ava::tool
