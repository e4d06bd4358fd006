// SPDX-License-Identifier: MIT
// libFuzzer harness: bytes as a TOML file, through ava::toml::parse and the
// guest configuration loader (the one TOML reader inside guest programs),
// with and without the environment overriding it. Neither may crash, leak or
// throw; every refusal must be AVA_E_PROTO or AVA_E_NOMEM and name the
// source. Seeds: tests/fuzz/corpus/toml/ (configuration files, the TOML
// forms ava accepts and refuses, and the two inputs toml++ 3.3.0 trips
// over, see shim/toml.cpp). Needs ava_config and ava_transport; by hand:
//   clang++-14 -std=c++20 -fsanitize=fuzzer,address,undefined -I. -Iinclude
//     tests/fuzz/fuzz_toml.cpp shim/toml.cpp shim/config.cpp
//     build/lib/static/libava_transport.a -luring -lpthread
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "shim/config.hpp"
#include "shim/toml.hpp"

namespace {

void check(const ava::Status &st, std::string_view source) {
  if (st.is_ok())
    return;
  if (st.code != AVA_E_PROTO && st.code != AVA_E_NOMEM)
    std::abort();
  // Errors about the file say where in it ("SOURCE:LINE: error: ...").
  if (st.code == AVA_E_PROTO && st.message.find(source) == std::string::npos &&
      st.message.find("AVA_") == std::string::npos)
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  constexpr std::string_view kSource = "fuzz.toml";

  ava::toml::Document doc;
  const ava::Status st = ava::toml::parse(text, kSource, &doc);
  check(st, kSource);
  if (st.is_ok()) {
    // Every value carries a line within the file.
    for (const auto &[name, entry] : doc.values)
      if (entry.line < 1 || name.empty())
        std::abort();
    for (const auto &[name, line] : doc.tables)
      if (line < 1 || name.empty())
        std::abort();
  }

  auto no_env = [](const char *) -> const char * { return nullptr; };
  auto env = [](const char *name) -> const char * {
    return std::strcmp(name, "AVA_WORKER") == 0 ? "/run/ava/fuzz.sock" : nullptr;
  };
  for (const char *spec : {"demo", "opencl"}) {
    ava::GuestConfig cfg;
    check(ava::parse_guest_config(text, kSource, spec, no_env, &cfg), kSource);
    ava::GuestConfig with_env;
    check(ava::parse_guest_config(text, kSource, spec, env, &with_env), kSource);
  }
  return 0;
}
