// SPDX-License-Identifier: MIT
// cava: the ava spec compiler. Parses a spec with libclang, validates it and
// writes the wire header, the guest library source (+ version script), the
// worker plugin source, the kernel-mode module (header, source, Kbuild) and
// the command table.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cava/backends/backends.hpp"
#include "cava/diag.hpp"
#include "cava/frontend/parser.hpp"
#include "cava/ir/validate.hpp"

namespace {

void usage(FILE *to) {
  std::fprintf(to, "usage: cava [options] SPEC.c\n"
                   "  -o, --out-dir DIR   write ID_wire.h, ID_guest.c, ID_guest.map, ID_worker.c,\n"
                   "                      ID_kern.h, ID_kern.c, ID_cmds.h and Kbuild there\n"
                   "  -I DIR, -D NAME[=V] passed to libclang when parsing the spec\n"
                   "  --name-as PATH      path shown in diagnostics and generated banners\n"
                   "  --check             parse and validate only\n"
                   "  -h, --help          this text\n");
}

// Writes only when the content changed, so builds do not redo work.
bool write_if_changed(const std::string &path, const std::string &content) {
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::ostringstream ss;
      ss << in.rdbuf();
      if (ss.str() == content)
        return true;
    }
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) {
    std::fprintf(stderr, "cava: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

// The -I directories of the spec as the generated Kbuild names them: inside
// the ava tree relative to $(AVA_ROOT), so the output does not depend on
// where the tree is checked out.
std::vector<std::string> kbuild_include_dirs(const std::vector<std::string> &clang_args,
                                             const std::string &ava_root) {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  const std::string root =
      ava_root.empty() ? std::string() : fs::absolute(ava_root).lexically_normal().string();
  for (const std::string &a : clang_args) {
    if (a.rfind("-I", 0) != 0)
      continue;
    std::string dir = fs::absolute(a.substr(2)).lexically_normal().string();
    while (dir.size() > 1 && dir.back() == '/')
      dir.pop_back();
    std::string r = root;
    while (r.size() > 1 && r.back() == '/')
      r.pop_back();
    if (!r.empty() && dir == r)
      dir = "$(AVA_ROOT)";
    else if (!r.empty() && dir.rfind(r + "/", 0) == 0)
      dir = "$(AVA_ROOT)/" + dir.substr(r.size() + 1);
    if (dir == "$(AVA_ROOT)/include")
      continue; // the Kbuild always has it
    dirs.push_back(dir);
  }
  return dirs;
}

// Directories of system include trees that hold the spec's API headers
// (<CL/cl.h> -> /usr/include/CL). A kernel build cannot search
// /usr/include, which holds the C library, so the Kbuild links them alone.
std::vector<std::string> system_api_dirs(const std::vector<std::string> &includes,
                                         const std::vector<std::string> &clang_args) {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  for (const std::string &line : includes) {
    const size_t open = line.find('<'), close = line.find('>');
    if (line.rfind("#include", 0) != 0 || open == std::string::npos || close < open)
      continue;
    const std::string header = line.substr(open + 1, close - open - 1);
    const size_t slash = header.find('/');
    if (slash == std::string::npos)
      continue;
    const std::string top = header.substr(0, slash);
    if (top == "ava" || top == "linux" || top == "asm" || top == "sys" || top == "bits")
      continue;
    bool in_user_dir = false;
    for (const std::string &a : clang_args)
      in_user_dir =
          in_user_dir || (a.rfind("-I", 0) == 0 && fs::exists(a.substr(2) + "/" + header));
    if (in_user_dir)
      continue;
    for (const char *sys : {"/usr/local/include", "/usr/include"}) {
      const std::string dir = std::string(sys) + "/" + top;
      if (fs::exists(std::string(sys) + "/" + header)) {
        if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end())
          dirs.push_back(dir);
        break;
      }
    }
  }
  return dirs;
}

} // namespace

int main(int argc, char **argv) {
  cava::ParseOptions opts;
  std::string out_dir;
  bool check_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char *flag) -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "cava: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "-o" || a == "--out-dir") {
      out_dir = value("--out-dir");
    } else if (a == "--name-as") {
      opts.shown_name = value("--name-as");
    } else if (a == "--check") {
      check_only = true;
    } else if (a == "-I" || a == "-D") {
      opts.clang_args.push_back(a + value(a.c_str()));
    } else if (a.rfind("-I", 0) == 0 || a.rfind("-D", 0) == 0) {
      opts.clang_args.push_back(a);
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "cava: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    } else if (opts.spec_path.empty()) {
      opts.spec_path = a;
    } else {
      std::fprintf(stderr, "cava: only one spec at a time\n");
      return 2;
    }
  }
  if (opts.spec_path.empty() || (out_dir.empty() && !check_only)) {
    usage(stderr);
    return 2;
  }
  if (opts.shown_name.empty())
    opts.shown_name = opts.spec_path;
#ifdef AVA_INCLUDE_DIR
  const std::vector<std::string> kbuild_dirs =
      kbuild_include_dirs(opts.clang_args, AVA_INCLUDE_DIR "/..");
  opts.clang_args.push_back("-I" AVA_INCLUDE_DIR);
#else
  const std::vector<std::string> kbuild_dirs = kbuild_include_dirs(opts.clang_args, "");
#endif

  cava::Diagnostics diag;
  cava::Spec spec;
  if (!cava::parse_spec(opts, diag, &spec) || !cava::validate_spec(spec, diag)) {
    std::fprintf(stderr, "cava: %d error%s in %s\n", diag.error_count(),
                 diag.error_count() == 1 ? "" : "s", opts.shown_name.c_str());
    return 1;
  }
  if (check_only)
    return 0;

  const std::string id = spec.identifier;
  uint64_t hash = 0;
  const std::string wire = cava::generate_wire_header(spec, &hash);
  const std::string guest = cava::generate_guestlib(spec, id + "_guest.c");
  const std::string map = cava::generate_version_script(spec);
  const std::string worker = cava::generate_worker(spec, id + "_worker.c");
  const std::string kern_h = cava::generate_kernel_header(spec);
  const std::string kern_c = cava::generate_kernel_source(spec, id + "_kern.c");
  const std::string kbuild =
      cava::generate_kbuild(spec, kbuild_dirs, system_api_dirs(spec.includes, opts.clang_args));
  const std::string cmds = cava::generate_command_table(spec);
  const std::string base = out_dir + "/" + id;
  const bool ok =
      write_if_changed(base + "_wire.h", wire) && write_if_changed(base + "_guest.c", guest) &&
      write_if_changed(base + "_guest.map", map) && write_if_changed(base + "_worker.c", worker) &&
      write_if_changed(base + "_kern.h", kern_h) && write_if_changed(base + "_kern.c", kern_c) &&
      write_if_changed(base + "_cmds.h", cmds) && write_if_changed(out_dir + "/Kbuild", kbuild);
  return ok ? 0 : 1;
}
