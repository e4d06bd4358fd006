// SPDX-License-Identifier: MIT
// One function per backend; each takes a validated spec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cava/ir/ir.hpp"

namespace cava {

// The C wire header (kernel and user space); *hash receives the layout hash.
std::string generate_wire_header(const Spec &spec, uint64_t *hash);
// The guest library source (C) and its linker version script.
std::string generate_guestlib(const Spec &spec, const std::string &file_name);
std::string generate_version_script(const Spec &spec);
// The worker dispatch plugin source (C).
std::string generate_worker(const Spec &spec, const std::string &file_name);

// Kernel mode (kernel.cpp): the header of prefixed prototypes for other
// modules, the module source, and its Kbuild; include_dirs are the API
// header directories as the Kbuild writes them ("$(AVA_ROOT)/specs/demo/lib");
// system_api_dirs are directories of a system include tree ("/usr/include/CL")
// that the Kbuild links into the build alone, without the C library beside them.
std::string generate_kernel_header(const Spec &spec);
std::string generate_kernel_source(const Spec &spec, const std::string &file_name);
std::string generate_kbuild(const Spec &spec, const std::vector<std::string> &include_dirs,
                            const std::vector<std::string> &system_api_dirs);
// Why fn has no kernel stub ("" when it has one).
std::string kernel_exclusion_reason(const Spec &spec, const Function &fn);
// The command table (cmdtab.cpp, include/ava/cmdtab.h).
std::string generate_command_table(const Spec &spec);

// First line of every generated file.
std::string banner(const Spec &spec, const char *open = "/*", const char *close = " */");

} // namespace cava
