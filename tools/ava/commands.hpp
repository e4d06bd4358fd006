// SPDX-License-Identifier: MIT
// The subcommands of the `ava` executable. Each returns the process exit code.
#pragma once

#include <span>
#include <string>

namespace ava::tool {

// Exit codes shared by the subcommands.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;

// `ava run [OPTIONS] -- PROGRAM [ARGS...]`; args excludes "ava run".
int run_command(std::span<const std::string> args);
// `ava worker [OPTIONS] --listen ADDRESS`; args excludes "ava worker".
int worker_command(std::span<const std::string> args);

// `ava vmhost --socket PATH [OPTIONS]`: the host side of a VM's ava device
// (ivshmem server, slot table, a worker per slot); args excludes "ava vmhost".
int vmhost_command(std::span<const std::string> args);

// Help texts, also printed by `ava SUBCOMMAND --help`.
void print_help();

} // namespace ava::tool
