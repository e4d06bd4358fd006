// SPDX-License-Identifier: MIT
// One function per backend; each takes a validated spec.
#pragma once

#include <cstdint>
#include <string>

#include "cava/ir/ir.hpp"

namespace cava {

// The C wire header (kernel and user space); *hash receives the layout hash.
std::string generate_wire_header(const Spec &spec, uint64_t *hash);
// The guest library source (C) and its linker version script.
std::string generate_guestlib(const Spec &spec, const std::string &file_name);
std::string generate_version_script(const Spec &spec);
// The worker dispatch plugin source (C).
std::string generate_worker(const Spec &spec, const std::string &file_name);

// First line of every generated file.
std::string banner(const Spec &spec, const char *open = "/*", const char *close = " */");

} // namespace cava
