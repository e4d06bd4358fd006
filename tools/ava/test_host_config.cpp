// SPDX-License-Identifier: MIT
// The host configuration file (tools/ava/host_config.hpp): what each key
// sets, and every mistake reported with the file and line.
#include <criterion/criterion.h>

#include <string>

#include "tools/ava/host_config.hpp"

using ava::Status;
using ava::tool::HostConfig;
using ava::tool::parse_host_config;

namespace {

struct BadCase {
  const char *text;
  const char *message; // a part of the error
};

const BadCase kBad[] = {
    {"[worker]\n", "host.toml:1: error: unknown table [worker]"},
    {"[guest]\nisolation = \"vm\"\n", "host.toml:2: error: guest.isolation is \"process\" or"},
    {"[guest]\nisolation = 1\n", "host.toml:2: error: guest.isolation must be a string"},
    {"[guest]\nuser = \"no-such-user-here\"\n", "host.toml:2: error: guest.user: no user"},
    {"[guest]\ngroup = \"no-such-group-here\"\n", "host.toml:2: error: guest.group: no group"},
    {"[guest]\nuser = true\n", "host.toml:2: error: guest.user must be a user name or uid"},
    {"[guest]\ncgroup = \"relative/dir\"\n", "host.toml:2: error: guest.cgroup: 'relative/dir'"},
    {"[guest]\ncgroup = \"/no/such/dir\"\n", "host.toml:2: error: guest.cgroup: '/no/such/dir'"},
    {"[guest]\nmemory_max = 0\n", "host.toml:2: error: guest.memory_max must be a positive"},
    {"[guest]\nmemory_max = \"1G\"\n", "host.toml:2: error: guest.memory_max must be a positive"},
    {"[guest]\nmemory_max = 1048576\n", "host.toml: error: guest.memory_max needs guest.cgroup"},
    {"[guest]\nisolation = \"shared\"\nuser = 65534\n", "not with isolation = \"shared\""},
    {"[guest]\nthread = 4\n", "host.toml:2: error: unknown key 'guest.thread'"},
    {"[guest]\nthreads = 0\n", "host.toml:2: error: guest.threads must be a positive number"},
    {"[guest]\nsend_timeout_ms = -1\n",
     "host.toml:2: error: guest.send_timeout_ms must be a positive number"},
    {"[guest]\nconnections_per_peer = \"all\"\n",
     "host.toml:2: error: guest.connections_per_peer must be a positive number"},
    {"isolation = \"process\"\n", "host.toml:1: error: unknown key 'isolation'"},
    {"[guest\n", "host.toml:1:"},
    {"[guest]\ncmds_per_sec = -1\n", "host.toml:2: error: guest.cmds_per_sec must be a number"},
    {"[guest]\ndevice_memory = \"4G\"\n", "host.toml:2: error: guest.device_memory must be"},
    {"[opencl]\nkernels_without_arg_info = \"yes\"\n",
     "host.toml:2: error: opencl.kernels_without_arg_info is \"refuse\" or \"allow\", not \"yes\""},
    {"[opencl]\nkernels_without_arg_info = true\n",
     "host.toml:2: error: opencl.kernels_without_arg_info must be a string"},
    {"[opencl]\nkernel_arg_info = \"allow\"\n",
     "host.toml:2: error: unknown key 'opencl.kernel_arg_info'"},
    {"[cuda]\n", "host.toml:1: error: unknown table [cuda]"},
};

} // namespace

Test(host_config, empty_file_is_the_defaults) {
  HostConfig c;
  cr_assert(parse_host_config("# nothing\n", "host.toml", &c).is_ok());
  cr_expect(!c.shared);
  cr_expect(!c.sandbox.uid && !c.sandbox.gid && c.sandbox.cgroup.empty());
  cr_expect_eq(c.sandbox.memory_max, 0u);
}

Test(host_config, every_key_is_read) {
  HostConfig c;
  Status st = parse_host_config("[guest]\nisolation = \"process\"\nuser = \"nobody\"\n"
                                "cgroup = \"/tmp\"\nmemory_max = 1073741824\n",
                                "host.toml", &c);
  cr_assert(st.is_ok(), "%s", st.message.c_str());
  cr_expect(!c.shared);
  cr_expect(c.sandbox.uid && *c.sandbox.uid == 65534);
  // Without a group: the user's primary group.
  cr_expect(c.sandbox.gid && *c.sandbox.gid == 65534);
  cr_expect_eq(c.sandbox.cgroup, "/tmp");
  cr_expect_eq(c.sandbox.memory_max, 1073741824u);
  cr_assert(parse_host_config("[guest]\nisolation = \"shared\"\n", "host.toml", &c).is_ok());
  cr_expect(c.shared);
  cr_assert(parse_host_config("[guest]\nuser = 1234\ngroup = 99\n", "host.toml", &c).is_ok());
  cr_expect(*c.sandbox.uid == 1234 && *c.sandbox.gid == 99);
  cr_assert(parse_host_config("[guest]\ncmds_per_sec = 10\nbytes_per_sec = 20\n"
                              "device_memory = 30\n",
                              "host.toml", &c)
                .is_ok());
  cr_expect(c.limits.cmds_per_sec == 10 && c.limits.bytes_per_sec == 20 &&
            c.limits.device_memory == 30);
  // Budgets have defaults, and the file may change them.
  HostConfig d;
  cr_assert(parse_host_config("", "host.toml", &d).is_ok());
  cr_expect(d.limits.threads == 1024 && d.limits.send_timeout_ms == 30000 &&
            d.limits.connections == 1024 && d.limits.connections_per_peer == 64 &&
            d.limits.objects == 262144 && d.limits.callbacks == 65536 &&
            d.limits.kept_bytes == uint64_t{256} << 20);
  cr_assert(parse_host_config("[guest]\nthreads = 8\nsend_timeout_ms = 500\nconnections = 16\n"
                              "connections_per_peer = 2\nobjects = 100\ncallbacks = 7\n"
                              "kept_bytes = 8589934592\n",
                              "host.toml", &d)
                .is_ok());
  cr_expect(d.limits.threads == 8 && d.limits.send_timeout_ms == 500 &&
            d.limits.connections == 16 && d.limits.connections_per_peer == 2 &&
            d.limits.objects == 100 && d.limits.callbacks == 7 &&
            d.limits.kept_bytes == uint64_t{8} << 30);
  cr_expect(!parse_host_config("[guest]\nobjects = 0\n", "host.toml", &d).is_ok(),
            "a budget of no objects at all");
  cr_expect(!parse_host_config("[guest]\ncallbacks = -1\n", "host.toml", &d).is_ok(),
            "a negative budget of callbacks");
  cr_expect(!parse_host_config("[guest]\nkept_bytes = 0\n", "host.toml", &d).is_ok(),
            "a budget of no kept bytes at all");
}

// Plugin settings reach the worker as "<spec>.<key>"; none is set by default
// (the plugin then refuses kernels without argument information).
Test(host_config, plugin_settings_are_read) {
  HostConfig c;
  cr_assert(parse_host_config("", "host.toml", &c).is_ok());
  cr_expect(c.plugin_settings.empty());
  for (const char *value : {"refuse", "allow"}) {
    const std::string text =
        std::string("[opencl]\nkernels_without_arg_info = \"") + value + "\"\n";
    Status st = parse_host_config(text, "host.toml", &c);
    cr_assert(st.is_ok(), "%s", st.message.c_str());
    cr_expect_eq(c.plugin_settings.size(), 1u);
    cr_expect_eq(c.plugin_settings["opencl.kernels_without_arg_info"], value);
  }
}

Test(host_config, the_tighter_limit_wins) {
  using ava::tool::tighter_limit;
  cr_expect_eq(tighter_limit(0, 0), 0u);
  cr_expect_eq(tighter_limit(0, 5), 5u); // only the guest's own
  cr_expect_eq(tighter_limit(5, 0), 5u); // a guest's "unlimited" lifts nothing
  cr_expect_eq(tighter_limit(5, 9), 5u); // nor does a looser one
  cr_expect_eq(tighter_limit(9, 5), 5u); // a tighter one applies
}

Test(host_config, mistakes_name_the_file_and_line) {
  for (const BadCase &b : kBad) {
    HostConfig c;
    Status st = parse_host_config(b.text, "host.toml", &c);
    cr_expect_eq(st.code, AVA_E_PROTO, "accepted: %s", b.text);
    cr_expect(st.message.find(b.message) != std::string::npos, "%s -> %s (wanted %s)", b.text,
              st.message.c_str(), b.message);
  }
}

Test(host_config, an_explicit_file_must_exist) {
  HostConfig c;
  c.shared = true;
  // --host-config names a file that must exist; only the default may be absent.
  Status st = ava::tool::load_host_config("/nonexistent/host.toml", &c);
  cr_expect_eq(st.code, AVA_E_PROTO);
  cr_expect(st.message.find("/nonexistent/host.toml: error:") != std::string::npos, "%s",
            st.message.c_str());
}
