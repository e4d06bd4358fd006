// SPDX-License-Identifier: MIT
#include "tools/ava/paths.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <system_error>

namespace ava::tool {
namespace {

namespace fs = std::filesystem;

std::string install_relative(const char *env_name, const char *relative) {
  const char *env = std::getenv(env_name);
  if (env != nullptr && *env != '\0')
    return env;
  std::string self = self_executable();
  if (self.empty())
    return {};
  return (fs::path(self).parent_path() / relative).lexically_normal().string();
}

Lookup probe(const std::string &candidate) {
  struct stat st {};
  if (stat(candidate.c_str(), &st) != 0 || S_ISDIR(st.st_mode))
    return Lookup::NotFound;
  return access(candidate.c_str(), X_OK) == 0 ? Lookup::Found : Lookup::NotExecutable;
}

} // namespace

std::string self_executable() {
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? std::string() : self.string();
}

std::string guest_lib_dir() {
  return install_relative("AVA_GUEST_LIB_DIR", "../lib/ava/guest");
}

std::string plugin_dir() {
  return install_relative("AVA_PLUGIN_DIR", "../lib/ava/worker");
}

std::vector<std::string> plugin_specs(const std::string &dir) {
  constexpr std::string_view prefix = "libava_worker_";
  constexpr std::string_view suffix = ".so";
  std::vector<std::string> specs;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    std::string name = it->path().filename().string();
    if (name.size() > prefix.size() + suffix.size() && name.starts_with(prefix) &&
        name.ends_with(suffix))
      specs.push_back(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
  }
  std::sort(specs.begin(), specs.end());
  return specs;
}

Lookup find_program(const std::string &name, std::string *path) {
  if (name.empty())
    return Lookup::NotFound;
  if (name.find('/') != std::string::npos) {
    *path = name;
    return probe(name);
  }
  const char *env = std::getenv("PATH");
  std::string_view search = env != nullptr ? env : "/usr/local/bin:/usr/bin:/bin";
  Lookup result = Lookup::NotFound;
  while (true) {
    size_t colon = search.find(':');
    std::string dir(search.substr(0, colon));
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    Lookup found = probe(candidate);
    if (found == Lookup::Found) {
      *path = candidate;
      return found;
    }
    // Like a shell: a non-executable match is reported only if nothing better turns up.
    if (found == Lookup::NotExecutable && result == Lookup::NotFound) {
      *path = candidate;
      result = found;
    }
    if (colon == std::string_view::npos)
      break;
    search.remove_prefix(colon + 1);
  }
  return result;
}

} // namespace ava::tool
