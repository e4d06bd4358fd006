// SPDX-License-Identifier: MIT
// Guest configuration: TOML through toml++, keys and tables, environment
// precedence and error messages with file and line.
#include <criterion/criterion.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>

#include "shim/config.hpp"
#include "shim/toml.hpp"

using ava::ChannelKind;
using ava::GuestConfig;
using ava::Status;

namespace {

using Env = std::map<std::string, std::string>;

struct Expect {
  std::string worker = "";
  ChannelKind channel = ChannelKind::Unix;
  bool channel_set = false;
  int connect_timeout_ms = 10000;
  int call_timeout_ms = -1;
  int callback_timeout_ms = 30000;
  uint64_t max_message = AVA_MSG_MAX_DEFAULT;
  std::string source = "";
};

struct ConfigCase {
  const char *name;
  std::string toml;
  Env env = {};
  std::string spec = "demo";
  int code = AVA_OK;
  std::string error = ""; // substring of the message when code != AVA_OK
  Expect expect = {};
};

constexpr ChannelKind kTcp = ChannelKind::Tcp;
constexpr ChannelKind kUnix = ChannelKind::Unix;

const ConfigCase kCases[] = {
    {.name = "nothing at all", .toml = "", .expect = {.source = "built-in defaults"}},
    {.name = "comments and blank lines only",
     .toml = "# ava guest\n\n   # indented comment\n\t\n",
     .expect = {.source = "test.toml"}},
    {.name = "all top-level keys",
     .toml = "channel = \"tcp\"\n"
             "worker = \"10.0.0.2:4000\"  # the GPU host\n"
             "connect_timeout_ms = 2_500\n"
             "call_timeout_ms = 60000\n"
             "callback_timeout_ms = -1\n"
             "max_message = 1_048_576\n",
     .expect = {.worker = "10.0.0.2:4000",
                .channel = kTcp,
                .channel_set = true,
                .connect_timeout_ms = 2500,
                .call_timeout_ms = 60000,
                .callback_timeout_ms = -1,
                .max_message = 1048576,
                .source = "test.toml"}},
    {.name = "spec table overrides top level",
     .toml = "worker = \"/run/ava/all.sock\"\n"
             "connect_timeout_ms = 100\n"
             "[spec.demo]\n"
             "worker = '/run/ava/demo.sock'\n"
             "call_timeout_ms = 5\n",
     .expect = {.worker = "/run/ava/demo.sock",
                .connect_timeout_ms = 100,
                .call_timeout_ms = 5,
                .source = "test.toml"}},
    {.name = "spec table before top-level keys in the map still wins",
     .toml = "[spec.demo]\nworker = \"/a.sock\"\n",
     .expect = {.worker = "/a.sock", .source = "test.toml"}},
    {.name = "other spec's table does not apply",
     .toml = "worker = \"/run/ava/all.sock\"\n[spec.opencl]\nworker = \"/run/ava/cl.sock\"\n",
     .expect = {.worker = "/run/ava/all.sock", .source = "test.toml"}},
    {.name = "AVA_WORKER beats the file, even its spec table",
     .toml = "[spec.demo]\nworker = \"/file.sock\"\n",
     .env = {{"AVA_WORKER", "/env.sock"}},
     .expect = {.worker = "/env.sock", .source = "test.toml + AVA_WORKER"}},
    {.name = "AVA_WORKER_<SPEC> beats AVA_WORKER",
     .toml = "",
     .env = {{"AVA_WORKER", "/env.sock"}, {"AVA_WORKER_DEMO", "/demo.sock"}},
     .expect = {.worker = "/demo.sock", .source = "AVA_WORKER + AVA_WORKER_DEMO"}},
    {.name = "AVA_WORKER_<SPEC> of another spec is ignored",
     .toml = "",
     .env = {{"AVA_WORKER_OPENCL", "/cl.sock"}},
     .expect = {.source = "built-in defaults"}},
    {.name = "spec names map to upper case and underscores",
     .toml = "[spec.my-spec]\ncall_timeout_ms = 7\n",
     .env = {{"AVA_WORKER_MY_SPEC", "@my"}},
     .spec = "my-spec",
     .expect = {.worker = "@my", .call_timeout_ms = 7, .source = "test.toml + AVA_WORKER_MY_SPEC"}},
    {.name = "empty variables count as unset",
     .toml = "worker = \"/file.sock\"\n",
     .env = {{"AVA_WORKER", ""}, {"AVA_CHANNEL", ""}},
     .expect = {.worker = "/file.sock", .source = "test.toml"}},
    {.name = "AVA_CHANNEL beats the file",
     .toml = "channel = \"unix\"\nworker = \"localhost:7000\"\n",
     .env = {{"AVA_CHANNEL", "tcp"}},
     .expect = {.worker = "localhost:7000",
                .channel = kTcp,
                .channel_set = true,
                .source = "test.toml + AVA_CHANNEL"}},
    {.name = "host:port alone means tcp",
     .toml = "",
     .env = {{"AVA_WORKER", "127.0.0.1:5000"}},
     .expect = {.worker = "127.0.0.1:5000", .channel = kTcp, .source = "AVA_WORKER"}},
    {.name = "explicit unix channel keeps host:port a socket path",
     .toml = "channel = \"unix\"\n",
     .env = {{"AVA_WORKER", "odd:5000"}},
     .expect = {.worker = "odd:5000",
                .channel = kUnix,
                .channel_set = true,
                .source = "test.toml + AVA_WORKER"}},
    {.name = "tcp: prefix sets the channel",
     .toml = "worker = \"tcp:[::1]:9\"\n",
     .expect = {.worker = "tcp:[::1]:9", .channel = kTcp, .source = "test.toml"}},
    {.name = "bare relative name is a socket path",
     .toml = "",
     .env = {{"AVA_WORKER", "worker.sock"}},
     .expect = {.worker = "worker.sock", .source = "AVA_WORKER"}},
    {.name = "strings: escapes and literal strings",
     .toml = "[spec.demo]\nworker = \"/tmp/a \\\"b\\\"\\\\c\"\n[spec.x]\nworker = 'C:\\x'\n",
     .expect = {.worker = "/tmp/a \"b\"\\c", .source = "test.toml"}},
    {.name = "CRLF line ends",
     .toml = "worker = \"/crlf.sock\"\r\nconnect_timeout_ms = 1\r\n",
     .expect = {.worker = "/crlf.sock", .connect_timeout_ms = 1, .source = "test.toml"}},
    {.name = "empty worker in a spec table unsets it",
     .toml = "worker = \"/all.sock\"\n[spec.demo]\nworker = \"\"\n",
     .expect = {.worker = "", .source = "test.toml"}},
    // Full TOML as toml++ reads it, where the value is still a string,
    // integer or boolean.
    {.name = "multi-line strings",
     .toml = "worker = \"\"\"\n/multi\\\n  line.sock\"\"\"\n[spec.demo]\nchannel = '''\nunix'''\n",
     .expect = {.worker = "/multiline.sock",
                .channel = kUnix,
                .channel_set = true,
                .source = "test.toml"}},
    {.name = "hexadecimal, octal and binary integers",
     .toml = "max_message = 0x1000\nconnect_timeout_ms = 0o17\ncall_timeout_ms = 0b101\n",
     .expect = {.connect_timeout_ms = 15,
                .call_timeout_ms = 5,
                .max_message = 4096,
                .source = "test.toml"}},
    {.name = "quoted keys that are bare words",
     .toml = "\"worker\" = \"/q.sock\"\n[\"spec\".'demo']\ncall_timeout_ms = 3\n",
     .expect = {.worker = "/q.sock", .call_timeout_ms = 3, .source = "test.toml"}},
    {.name = "dotted keys make the spec table",
     .toml = "spec.demo.worker = \"/dotted.sock\"\n",
     .expect = {.worker = "/dotted.sock", .source = "test.toml"}},

    // Configuration mistakes.
    {.name = "unknown top-level key",
     .toml = "worker = \"/a.sock\"\nconect_timeout_ms = 5\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:2: error: unknown key 'conect_timeout_ms'"},
    {.name = "unknown key in our spec table",
     .toml = "[spec.demo]\n\nwroker = \"/a.sock\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:3: error: unknown key 'spec.demo.wroker'"},
    {.name = "unknown key in another spec's table",
     .toml = "[spec.opencl]\ncall_timout_ms = 1\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:2: error: unknown key"},
    {.name = "bad value in another spec's table",
     .toml = "[spec.opencl]\nchannel = \"udp\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:2: error: unknown channel 'udp'"},
    {.name = "unknown table",
     .toml = "\n[specs.demo]\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:2: error: unknown table [specs.demo]"},
    {.name = "too deep spec table",
     .toml = "[spec.demo.extra]\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: unknown table [spec.demo.extra]"},
    {.name = "setting directly in [spec]",
     .toml = "[spec]\nworker = \"/a\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:2: error: 'spec.worker' is not a setting"},
    {.name = "string where an integer belongs",
     .toml = "connect_timeout_ms = \"5\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: 'connect_timeout_ms' must be an integer, not a string"},
    {.name = "integer where a string belongs",
     .toml = "worker = 5\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: 'worker' must be a string"},
    {.name = "boolean channel",
     .toml = "channel = true\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: 'channel' must be a string"},
    {.name = "unknown channel",
     .toml = "channel = \"udp\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: unknown channel 'udp'"},
    {.name = "timeout out of range",
     .toml = "call_timeout_ms = 3000000000\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: 'call_timeout_ms' must be -1"},
    {.name = "timeout below -1",
     .toml = "callback_timeout_ms = -2\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: 'callback_timeout_ms' must be -1"},
    {.name = "max_message too small",
     .toml = "max_message = 63\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: 'max_message' must be at least 64"},
    {.name = "bad worker address in the file",
     .toml = "\n\nworker = \"tcp:host\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:3: error: invalid address 'tcp:host'"},
    {.name = "bad worker address in the environment",
     .toml = "",
     .env = {{"AVA_WORKER_DEMO", "tcp:h:99999"}},
     .code = AVA_E_PROTO,
     .error = "AVA_WORKER_DEMO: error: invalid address 'tcp:h:99999'"},
    {.name = "worker prefix contradicts the channel",
     .toml = "channel = \"tcp\"\n",
     .env = {{"AVA_WORKER", "unix:/a.sock"}},
     .code = AVA_E_PROTO,
     .error = "AVA_WORKER: error: worker 'unix:/a.sock' is a unix address but the channel is tcp "
              "(test.toml:1)"},
    {.name = "bad AVA_CHANNEL",
     .toml = "",
     .env = {{"AVA_CHANNEL", "TCP"}},
     .code = AVA_E_PROTO,
     .error = "AVA_CHANNEL: error: unknown channel 'TCP'"},

    // TOML outside the subset, or broken.
    {.name = "unterminated string",
     .toml = "# c\n\nworker = \"/a.sock\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:3: error: unterminated string"},
    {.name = "unterminated literal string",
     .toml = "worker = '/a.sock\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: unterminated string"},
    {.name = "unsupported escape",
     .toml = "worker = \"a\\qb\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: unknown escape sequence '\\q' (in string)"},
    {.name = "bare string",
     .toml = "worker = /a.sock\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: invalid value '/a.sock' (strings must be quoted)"},
    {.name = "float",
     .toml = "\nconnect_timeout_ms = 1.5\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:2: error: floating-point values are not supported"},
    {.name = "array",
     .toml = "worker = [\"a\"]\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: arrays are not supported"},
    {.name = "inline table",
     .toml = "spec = { demo = 1 }\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: inline tables are not supported"},
    {.name = "array of tables",
     .toml = "[[spec]]\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: arrays of tables"},
    {.name = "leading zero",
     .toml = "max_message = 0100\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: leading zeroes are prohibited"},
    {.name = "misplaced underscore",
     .toml = "max_message = 1__000\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: underscores may only follow digits"},
    {.name = "trailing underscore",
     .toml = "max_message = 1000_\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: underscores must be followed by digits"},
    {.name = "integer overflow",
     .toml = "max_message = 9223372036854775808\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: '9223372036854775808' is not representable in 64 bits"},
    {.name = "array spanning lines, at its first line",
     .toml = "worker = \"/a\"\n[spec.demo]\nworker = [\n  \"/b\",\n]\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:3: error: arrays are not supported ('spec.demo.worker')"},
    {.name = "inline table in a spec table",
     .toml = "[spec.demo]\n\nx = { worker = \"/a\" }\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:3: error: inline tables are not supported ('spec.demo.x')"},
    {.name = "the first offending line is reported",
     .toml = "[spec.b]\nworker = 1.0\n[spec.a]\nworker = 1979-05-27\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:2: error: floating-point values are not supported ('spec.b.worker')"},
    {.name = "time of day",
     .toml = "x = 07:32:00\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: dates and times are not supported ('x')"},
    {.name = "unterminated multi-line string",
     .toml = "worker = \"\"\"\n/a\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:2: error: unterminated string"},
    {.name = "invalid UTF-8",
     .toml = "worker = \"\xff\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: "},
    {.name = "date",
     .toml = "x = 1979-05-27\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: dates and times are not supported"},
    {.name = "missing value",
     .toml = "worker =\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: expected value, saw '\\n'"},
    {.name = "missing equals",
     .toml = "worker \"/a\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: expected '=', saw '\"'"},
    {.name = "text after value",
     .toml = "worker = \"/a\" \"/b\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: expected a comment or whitespace, saw '\"'"},
    {.name = "duplicate key",
     .toml = "worker = \"/a\"\nworker = \"/b\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:2: error: cannot redefine existing string 'worker'"},
    {.name = "duplicate table",
     .toml = "[spec.demo]\n[spec.x]\n[spec.demo]\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:3: error: cannot redefine existing table 'spec.demo'"},
    {.name = "unclosed header",
     .toml = "[spec.demo\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: expected ']'"},
    {.name = "quoted key that is no bare word",
     .toml = "\n[spec]\n\"demo.worker\" = \"/a\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:3: error: key \"demo.worker\" must be a bare key"},
    {.name = "value then table of the same name",
     .toml = "spec = 1\n[spec.demo]\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:2: error: cannot redefine existing integer"},
    {.name = "control character in a string",
     .toml = std::string("worker = \"a\x01") + "b\"\n",
     .code = AVA_E_PROTO,
     .error = "test.toml:1: error: unescaped control characters"},
    {.name = "NUL byte",
     .toml = std::string("worker = 1\n# \0\n", 15),
     .code = AVA_E_PROTO,
     .error = "test.toml:2: error: NUL byte"},
};

const char *kind_name(ChannelKind kind) {
  return kind == kTcp ? "tcp" : "unix";
}

} // namespace

Test(config, table) {
  for (const ConfigCase &c : kCases) {
    auto getenv_fn = [&c](const char *name) -> const char * {
      auto it = c.env.find(name);
      return it == c.env.end() ? nullptr : it->second.c_str();
    };
    GuestConfig cfg;
    Status st =
        ava::parse_guest_config(c.toml, c.toml.empty() ? "" : "test.toml", c.spec, getenv_fn, &cfg);
    cr_expect_eq(st.code, c.code, "%s: code %d (%s), expected %d", c.name, st.code,
                 st.message.c_str(), c.code);
    if (c.code != AVA_OK) {
      cr_expect(st.message.find(c.error) != std::string::npos,
                "%s: message\n  '%s'\ndoes not contain\n  '%s'", c.name, st.message.c_str(),
                c.error.c_str());
      continue;
    }
    if (st.code != AVA_OK)
      continue;
    const Expect &e = c.expect;
    cr_expect_eq(cfg.worker, e.worker, "%s: worker '%s', expected '%s'", c.name, cfg.worker.c_str(),
                 e.worker.c_str());
    cr_expect_eq(cfg.channel, e.channel, "%s: channel %s, expected %s", c.name,
                 kind_name(cfg.channel), kind_name(e.channel));
    cr_expect_eq(cfg.channel_set, e.channel_set, "%s: channel_set", c.name);
    cr_expect_eq(cfg.connect_timeout_ms, e.connect_timeout_ms, "%s: connect_timeout_ms %d", c.name,
                 cfg.connect_timeout_ms);
    cr_expect_eq(cfg.call_timeout_ms, e.call_timeout_ms, "%s: call_timeout_ms %d", c.name,
                 cfg.call_timeout_ms);
    cr_expect_eq(cfg.callback_timeout_ms, e.callback_timeout_ms, "%s: callback_timeout_ms %d",
                 c.name, cfg.callback_timeout_ms);
    cr_expect_eq(cfg.max_message, e.max_message, "%s: max_message %lu", c.name,
                 (unsigned long)cfg.max_message);
    cr_expect_eq(cfg.source, e.source, "%s: source '%s', expected '%s'", c.name, cfg.source.c_str(),
                 e.source.c_str());
  }
}

Test(config, toml_values_and_lines) {
  const std::string text = "top = 'lit\\eral'\n"
                           "[a]\n"
                           "n = -9_223_372_036_854_775_808\n"
                           "flag = false # comment\n"
                           "[a.b]\n"
                           "s = \"tab\\tnl\\n\"\n"
                           "d.e = +0\n";
  ava::toml::Document doc;
  Status st = ava::toml::parse(text, "t.toml", &doc);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_expect_eq(std::get<std::string>(doc.values.at("top").value), "lit\\eral");
  cr_expect_eq(std::get<int64_t>(doc.values.at("a.n").value), INT64_MIN);
  cr_expect_eq(doc.values.at("a.n").line, 3);
  cr_expect_eq(std::get<bool>(doc.values.at("a.flag").value), false);
  cr_expect_eq(std::get<std::string>(doc.values.at("a.b.s").value), "tab\tnl\n");
  cr_expect_eq(std::get<int64_t>(doc.values.at("a.b.d.e").value), 0);
  cr_expect_eq(doc.tables.at("a"), 2);
  cr_expect_eq(doc.tables.at("a.b"), 5);
  cr_expect_eq(ava::toml::type_name(doc.values.at("a.flag").value), "boolean");
}

Test(config, toml_tables) {
  // Headers are listed, with the line that defines them; the tables a header
  // only implies, and those dotted keys make, are not.
  ava::toml::Document doc;
  Status st = ava::toml::parse("[a.b.c]\nk = 1\n\n[a]\nd.e = 2\n[x]\n", "t", &doc);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_expect_eq(doc.tables.size(), 3u);
  cr_expect_eq(doc.tables.at("a.b.c"), 1);
  cr_expect_eq(doc.tables.at("a"), 4);
  cr_expect_eq(doc.tables.at("x"), 6);
  cr_expect_eq(doc.tables.count("a.b"), 0u);
  cr_expect_eq(doc.tables.count("a.d"), 0u);
  cr_expect_eq(doc.values.at("a.b.c.k").line, 2);
  cr_expect_eq(doc.values.at("a.d.e").line, 5);
  // A table defined both by a header and by dotted keys is an error in TOML.
  st = ava::toml::parse("[a]\nb.c = 1\n[a.b]\n", "t", &doc);
  cr_expect_eq(st.code, AVA_E_PROTO);
  cr_expect(st.message.starts_with("t:3: error: "), "%s", st.message.c_str());
}

// Inputs on which toml++ 3.3.0 asserts or reaches __builtin_unreachable
// (found by tests/fuzz/fuzz_toml.cpp; shim/toml.cpp defuses both): clean
// errors at their line.
Test(config, toml_inputs_toml_plus_plus_trips_over) {
  ava::toml::Document doc;
  Status st = ava::toml::parse("\nz = 1979-05-27T-07:32:00Z\n", "t", &doc);
  cr_expect_eq(st.code, AVA_E_PROTO);
  cr_expect(st.message.starts_with("t:2: error: "), "%s", st.message.c_str());
  st = ava::toml::parse("z = 1979-05-27T07:32:0\xc6\xa5\n", "t", &doc);
  cr_expect_eq(st.code, AVA_E_PROTO);
  cr_expect(st.message.starts_with("t:1: error: "), "%s", st.message.c_str());
  // Non-ASCII text in strings and comments is fine.
  st = ava::toml::parse("# \xc2\xa7 Gr\xc3\xbc\xc3\x9f\ns = \"\"\"\\\n\xc2\xa7\"\"\"\n", "t", &doc);
  cr_expect_eq(st.code, AVA_OK, "%s", st.message.c_str());
}

Test(config, toml_table_and_value_clash) {
  ava::toml::Document doc;
  // "a.b" is a value, so [a.b] cannot be a table and a.b.c cannot be a key.
  Status st = ava::toml::parse("a.b = 1\n[a.b]\n", "t", &doc);
  cr_expect_eq(st.code, AVA_E_PROTO);
  cr_expect(st.message.find("t:2: error:") != std::string::npos, "%s", st.message.c_str());
  st = ava::toml::parse("a.b = 1\na.b.c = 2\n", "t", &doc);
  cr_expect_eq(st.code, AVA_E_PROTO);
  st = ava::toml::parse("a.b.c = 1\na.b = 2\n", "t", &doc);
  cr_expect_eq(st.code, AVA_E_PROTO);
  cr_expect(st.message.find("cannot redefine existing table 'a.b'") != std::string::npos, "%s",
            st.message.c_str());
}

Test(config, worker_env_name) {
  cr_expect_eq(ava::worker_env_name("demo"), "AVA_WORKER_DEMO");
  cr_expect_eq(ava::worker_env_name("cudart"), "AVA_WORKER_CUDART");
  cr_expect_eq(ava::worker_env_name("my-spec.v2"), "AVA_WORKER_MY_SPEC_V2");
}

Test(config, load_from_ava_config) {
  char path[] = "/tmp/ava-config-XXXXXX";
  const int fd = ::mkstemp(path);
  cr_assert(fd >= 0);
  const std::string text = "worker = \"/from/file.sock\"\n[spec.demo]\ncall_timeout_ms = 9\n";
  cr_assert_eq(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  ::setenv("AVA_CONFIG", path, 1);
  ::unsetenv("AVA_WORKER");
  ::unsetenv("AVA_WORKER_DEMO");
  ::unsetenv("AVA_CHANNEL");
  GuestConfig cfg;
  Status st = ava::load_guest_config("demo", &cfg);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_expect_eq(cfg.worker, "/from/file.sock");
  cr_expect_eq(cfg.call_timeout_ms, 9);
  cr_expect_eq(cfg.source, std::string(path));
  ::setenv("AVA_WORKER_DEMO", "/from/env.sock", 1);
  st = ava::load_guest_config("demo", &cfg);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_expect_eq(cfg.worker, "/from/env.sock");
  cr_expect_eq(cfg.source, std::string(path) + " + AVA_WORKER_DEMO");
  ::unlink(path);
  // A named file that does not exist is an error, not silently the defaults.
  st = ava::load_guest_config("demo", &cfg);
  cr_expect_eq(st.code, AVA_E_PROTO);
  cr_expect(st.message.find(path) != std::string::npos, "%s", st.message.c_str());
  cr_expect(st.message.find("AVA_CONFIG") != std::string::npos, "%s", st.message.c_str());
}

Test(config, load_rejects_a_directory) {
  ::setenv("AVA_CONFIG", "/tmp", 1);
  GuestConfig cfg;
  Status st = ava::load_guest_config("demo", &cfg);
  cr_expect_eq(st.code, AVA_E_PROTO);
  cr_expect(st.message.find("not a regular file") != std::string::npos, "%s", st.message.c_str());
}

Test(config, load_without_any_file) {
  if (::access("/etc/ava/guest.toml", F_OK) == 0)
    cr_skip_test("/etc/ava/guest.toml exists on this host");
  ::unsetenv("AVA_CONFIG");
  ::unsetenv("AVA_CHANNEL");
  ::unsetenv("AVA_WORKER_DEMO");
  ::setenv("AVA_WORKER", "/x.sock", 1);
  GuestConfig cfg;
  Status st = ava::load_guest_config("demo", &cfg);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_expect_eq(cfg.worker, "/x.sock");
  cr_expect_eq(cfg.source, "AVA_WORKER");
}
