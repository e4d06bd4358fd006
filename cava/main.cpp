// SPDX-License-Identifier: MIT
// cava: the ava spec compiler. Parses a spec with libclang, validates it and
// writes the wire header, the guest library source (+ version script) and the
// worker plugin source.
#include <cstdio>
#include <cstring>
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
  std::fprintf(
      to, "usage: cava [options] SPEC.c\n"
          "  -o, --out-dir DIR   write ID_wire.h, ID_guest.c, ID_guest.map, ID_worker.c there\n"
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
  opts.clang_args.push_back("-I" AVA_INCLUDE_DIR);
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
  const std::string base = out_dir + "/" + id;
  const bool ok =
      write_if_changed(base + "_wire.h", wire) && write_if_changed(base + "_guest.c", guest) &&
      write_if_changed(base + "_guest.map", map) && write_if_changed(base + "_worker.c", worker);
  return ok ? 0 : 1;
}
