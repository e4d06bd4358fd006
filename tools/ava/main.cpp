// SPDX-License-Identifier: MIT
// The `ava` executable: runs programs under ava (`ava run`) and serves guests
// (`ava worker`).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "tools/ava/commands.hpp"

namespace ava::tool {

void print_help() {
  std::fputs(
      "Usage:\n"
      "  ava run [--channel unix|tcp|shm] [--worker ADDR] [--spec NAME]... [--report FILE]\n"
      "          [--shared] -- PROGRAM [ARGS...]\n"
      "  ava worker [--spec NAME]... --listen ADDR [--plugin-dir DIR] [--ready-fd N]\n"
      "             [--exit-when-idle] [--io-uring] [--report FILE] [--shared]\n"
      "             [--host-config FILE]\n"
      "  ava worker [--spec NAME]... --serve-fd N --listen ADDR [--plugin-dir DIR]\n"
      "             [--io-uring] [--report FILE]\n"
      "  ava worker [--spec NAME]... --netlink [--plugin-dir DIR] [--ready-fd N]\n"
      "  ava vmhost --socket PATH [--slots N] [--ring-kib N] [--heap-mib N] [--shm-path P]\n"
      "             [--spec NAME]... [--plugin-dir DIR] [--ready-fd N] [--exit-with-vm]\n"
      "             [--report FILE] [--host-config FILE]\n"
      "  ava --help | ava version\n"
      "\n"
      "ava run      runs PROGRAM with ava's guest libraries in place of the real ones.\n"
      "             Without --worker, AVA_WORKER or a configured worker it starts a private\n"
      "             worker for the program and stops it when the program exits.\n"
      "  --channel  carrier of the private worker: unix, tcp or shm (default:\n"
      "             $AVA_CHANNEL, else shm)\n"
      "  --worker   use the worker listening at ADDR (unix:/path, tcp:host:port or\n"
      "             shm:/path)\n"
      "  --spec     spec to serve or to look up in the configuration (repeatable;\n"
      "             default: every worker plugin installed)\n"
      "  --shared   the private worker serves in one process (see ava worker)\n"
      "  --report   the private worker appends a line per guest session to FILE:\n"
      "             \"session spec=S pid=P worker=W calls=N sync=Y refused=R\" (W: the\n"
      "             worker's pid; Y: the calls of N the program waited for)\n"
      "  The exit status is PROGRAM's (128+N if signal N killed it), 127 if PROGRAM\n"
      "  is not found.\n"
      "\n"
      "ava worker   serves guests on ADDR with the real libraries until SIGINT/SIGTERM.\n"
      "             Each accepted guest gets a worker process of its own (the listening\n"
      "             process loads no driver), confined as the host configuration says.\n"
      "  --listen          unix:/path, tcp:host:port (port 0 picks a free one) or\n"
      "                    shm:/path (shared memory, handed over on that unix socket)\n"
      "  --spec            spec to serve (repeatable; default: every plugin found)\n"
      "  --plugin-dir      where libava_worker_<spec>.so live\n"
      "  --ready-fd        write the bound address and a newline to fd N once listening\n"
      "  --exit-when-idle  exit when the last guest has disconnected\n"
      "  --io-uring        receive and send on guest sockets with io_uring\n"
      "  --report          append a line per guest session to FILE (see ava run)\n"
      "  --shared          serve every guest in this one process (trusted guests only)\n"
      "  --host-config     the host's configuration (default /etc/ava/host.toml):\n"
      "                    [guest] isolation, user, group, cgroup, memory_max\n"
      "  --serve-fd        serve the one guest connected on fd N, accepted on ADDR (by\n"
      "                    the supervisor, or by systemd with Accept=yes), then exit\n"
      "  --netlink         serve kernel modules of this machine (ava.ko's kernel calls,\n"
      "                    generic netlink family ava_call) instead of listening\n"
      "\n"
      "ava vmhost   the host side of a VM's ava device: owns the VM's shared memory, is\n"
      "             the ivshmem server at PATH for QEMU's ivshmem-doorbell device, and\n"
      "             forks a worker for each slot a guest process claims through ava.ko.\n"
      "             QEMU: -chardev socket,id=ivs,path=PATH\n"
      "                   -device ivshmem-doorbell,chardev=ivs,vectors=<1 + slots>\n"
      "  --slots           slots, i.e. guest processes at once (default 4, at most 32)\n"
      "  --ring-kib        each slot's command and reply ring (power of two; default 1024)\n"
      "  --heap-mib        each slot's zero-copy heap at least (default 24)\n"
      "  --shm-path        create the shared memory as this file (default: a memfd)\n"
      "  --ready-fd        write \"ready SLOTS VECTORS\" and a newline to fd N once listening\n"
      "  --exit-with-vm    exit once the VM has disconnected\n"
      "  --report          each slot's worker appends a line per session to FILE\n"
      "  --host-config     the host's configuration (see ava worker): each slot's\n"
      "                    worker maps only its slot, with no_new_privs, and runs as its\n"
      "                    [guest] user/group in its own cgroup when one is configured\n"
      "\n"
      "Environment: AVA_GUEST_LIB_DIR, AVA_PLUGIN_DIR override the installed directories;\n"
      "AVA_WORKER, AVA_CHANNEL, AVA_CONFIG are read by the guest libraries;\n"
      "AVA_SHM_RING_MB, AVA_SHM_HEAP_MB, AVA_SHM_SPIN_NS size the shm channel.\n",
      stdout);
}

} // namespace ava::tool

namespace {

// A pipe or socket must never land on 0-2, where a child would take it for stdio.
void ensure_standard_fds() {
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) >= 0)
      continue;
    int opened = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) {
      dup2(opened, fd);
      close(opened);
    }
  }
}

int dispatch(const std::vector<std::string> &args) {
  using namespace ava::tool;
  if (args.empty()) {
    std::fputs("ava: missing command\nTry 'ava --help' for more information.\n", stderr);
    return kExitUsage;
  }
  const std::string &command = args[0];
  std::span<const std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    print_help();
    return 0;
  }
  if (command == "version" || command == "--version") {
    std::puts("ava " AVA_VERSION_STRING);
    return 0;
  }
  if (command == "run")
    return run_command(rest);
  if (command == "worker")
    return worker_command(rest);
  if (command == "vmhost")
    return vmhost_command(rest);
  std::fprintf(stderr, "ava: unknown command '%s'\nTry 'ava --help' for more information.\n",
               command.c_str());
  return kExitUsage;
}

} // namespace

int main(int argc, char **argv) {
  ensure_standard_fds();
  try {
    return dispatch(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::bad_alloc &) {
    std::fputs("ava: out of memory\n", stderr);
    return ava::tool::kExitFailure;
  }
}
