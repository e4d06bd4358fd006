// SPDX-License-Identifier: MIT
// A table of spec mistakes and the diagnostic cava must give for each:
// "file:line:col: error: message" and a non-zero exit, never a crash.
#include <criterion/criterion.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "cava_run.hpp"

namespace {

// Every snippet is appended to this prelude (kPreludeLines lines).
const char kPrelude[] = "#include <stdint.h>\n"
                        "#include <ava/spec.h>\n"
                        "typedef struct obj_s *obj;\n"
                        "typedef void (*cb_t)(obj o, void *user_data);\n"
                        "ava_name(\"bad\");\n"
                        "ava_identifier(bad);\n"
                        "ava_number(7);\n"
                        "ava_soname(\"libbad.so.1\");\n"
                        "ava_type(obj) { ava_handle; }\n"
                        "ava_type(int) { ava_error(-1); }\n";
constexpr int kPreludeLines = 10;

struct BadSpec {
  const char *what;
  bool with_prelude;
  const char *snippet;
  int line; // line of the diagnostic within the snippet (1-based)
  const char *message;
};

const BadSpec kCases[] = {
    {"pointer without annotation", true, "int f(int *p) { }\n", 1,
     "argument 'p' of f is a pointer without ava_buffer, ava_handle or ava_opaque"},
    {"unknown argument name", true, "int f(int x) {\n  ava_argument(y) { ava_in; }\n}\n", 2,
     "use of undeclared identifier 'y'"},
    {"buffer without direction", true,
     "int f(int *p, int n) {\n  ava_argument(p) { ava_buffer(n); }\n}\n", 1,
     "buffer argument 'p' of f needs ava_in, ava_out or both"},
    {"annotation not implemented", true,
     "int f(int *p, int n) {\n  ava_argument(p) { ava_in; ava_buffer(n); ava_no_copy; }\n}\n", 2,
     "ava_no_copy is not implemented by cava's backends yet"},
    {"function annotation inside an argument", true,
     "int f(int x) {\n  ava_argument(x) { ava_async; }\n}\n", 2,
     "ava_async is a function-level annotation"},
    {"value annotation at function level", true, "int f(int x) {\n  ava_in;\n}\n", 2,
     "ava_in describes a value"},
    {"async with an out buffer", true,
     "int f(int *p) {\n  ava_async;\n  ava_success(0);\n  ava_argument(p) { ava_out; "
     "ava_buffer(1); }\n}\n",
     1, "ava_async f cannot have the out buffer 'p'"},
    {"async without success value", true, "int f(int x) {\n  ava_async;\n}\n", 1,
     "ava_async f needs ava_success(value)"},
    {"device wait on an async call", true,
     "int f(int x) {\n  ava_async;\n  ava_success(0);\n  ava_device_wait;\n}\n", 1,
     "f is ava_async: nothing waits for its reply (ava_device_wait)"},
    {"conditional device wait", true,
     "int f(int x) {\n  if (x > 1) {\n    ava_device_wait;\n  }\n}\n", 2,
     "annotation ava_device_wait cannot appear inside code"},
    {"no error value", true, "long g(void) { }\n", 1, "g returns long but has no error value"},
    {"conditional handle", true,
     "int f(void *p, int k) {\n  ava_argument(p) {\n    if (k) { ava_handle; }\n  }\n}\n", 3,
     "ava_handle cannot be conditional"},
    {"code without ava_execute", true, "int f(int x) {\n  x = x + 1;\n  return x;\n}\n", 2,
     "the code in f never calls ava_execute()"},
    {"disable_native_call without a body", true, "int f(int x) {\n  ava_disable_native_call;\n}\n",
     1, "ava_disable_native_call: the body of f must implement the call"},
    {"callback naming no declaration", true,
     "int f(cb_t cb, void *ud) {\n  ava_argument(cb) { ava_callback(nowhere); }\n}\n", 2,
     "use of undeclared identifier 'nowhere'"},
    {"callback without user data", true,
     "ava_callback_decl void on_obj(obj o, void *user_data) {\n  ava_argument(user_data) { "
     "ava_userdata; }\n}\n"
     "int f(cb_t cb, void *ud) {\n  ava_argument(cb) { ava_callback(on_obj); }\n  ava_argument(ud) "
     "{ ava_opaque; }\n}\n",
     4, "an ava_callback argument needs exactly one ava_userdata argument"},
    {"misspelt annotation", true, "int f(int x) {\n  ava_inn;\n}\n", 2,
     "use of undeclared identifier 'ava_inn'"},
    {"syntax error", true, "int f(int x) {\n  ava_argument(x) { ava_in }\n}\n", 2, "expected ';'"},
    {"utility region never closed", true, "ava_begin_utility;\nstatic int helper;\n", 1,
     "ava_begin_utility is never closed by ava_end_utility"},
    {"allocating non-handle elements", true,
     "int f(int *p) {\n  ava_argument(p) { ava_out; ava_buffer(1); ava_element { ava_allocates; } "
     "}\n}\n",
     1, "ava_element { ava_allocates; } needs handle elements"},
    {"pointer return without handle", true, "void *g(void) { }\n", 1,
     "the return value of g is a pointer: say ava_return_value { ava_handle; } or ava_opaque"},
    {"variadic function", true, "int f(int x, ...) { }\n", 1,
     "f is variadic and cannot be remoted"},
    {"coupled to a non-argument", true,
     "int f(const char *s, int k) {\n  ava_argument(s) { ava_in; ava_buffer(k); "
     "ava_lifetime_coupled(0); }\n}\n",
     2, "ava_lifetime_coupled takes the name of a handle argument of f"},
    {"once for a buffer", true,
     "int f(const char *s, int k) {\n  ava_argument(s) { ava_in; ava_buffer(k); "
     "ava_lifetime_once; }\n}\n",
     1, "ava_lifetime_once applies to callbacks; argument 's' of f is not one"},
    {"handles allocated but never freed", true,
     "obj mk(void) {\n  ava_return_value { ava_allocates; }\n}\n", -1,
     "handles of type obj are allocated but no function deallocates them"},
    {"missing spec name", false,
     "#include <ava/spec.h>\nava_identifier(x);\nava_number(3);\nava_soname(\"libx.so.1\");\n", -1,
     "the spec has no ava_name"},
    {"reserved identifier", true, "int __ava_mine(int x) { }\n", 1,
     "identifiers starting with __ava_ are reserved"},
    {"helper no API header declares, run natively", true, "int helper(int x) { }\n", 1,
     "helper is declared in no API header, so the worker has no such function"},
    {"function-level if holding more than ava_async", true,
     "int f(int x) {\n  ava_success(0);\n  if (x) { ava_sync; }\n}\n", 3,
     "annotation ava_sync cannot appear inside code"},
    {"conditional async without success value", true,
     "int f(int x) {\n  if (x) { ava_async; }\n}\n", 1,
     "conditionally async f needs ava_success(value)"},
    {"conditional async next to ava_async", true,
     "int f(int x) {\n  ava_async;\n  ava_success(0);\n  if (x) { ava_async; }\n}\n", 1,
     "f is conditionally async and also ava_sync or ava_async"},
    {"async shape of a function never async", true,
     "int f(int x) {\n  ava_success(0);\n  ava_async_shape(x);\n}\n", 1,
     "f has ava_async_shape but is never async: add ava_async"},
    {"two async shapes", true,
     "int f(int x) {\n  ava_async;\n  ava_success(0);\n  ava_async_shape(x);\n"
     "  ava_async_shape(x, x);\n}\n",
     5, "f has more than one ava_async_shape"},
    {"retains on a non-handle", true, "int f(int x) {\n  ava_argument(x) { ava_retains; }\n}\n", 1,
     "ava_retains applies to handle arguments; argument 'x' of f is not one"},
    {"symbol version naming no export", true, "int g(int x);\nava_export_version(\"V_1\", g);\n", 2,
     "ava_export_version(V_1): g is not a function the guest library exports"},
    {"symbol version without a node name", true, "int g(int x);\nava_export_version(V_1, g);\n", 2,
     "use of undeclared identifier 'V_1'"},
};

std::string write_spec(const BadSpec &c) {
  char tmpl[] = "/tmp/ava-badspec-XXXXXX";
  const char *dir = mkdtemp(tmpl);
  if (!dir)
    return "";
  const std::string path = std::string(dir) + "/bad.spec.c";
  std::ofstream out(path);
  if (c.with_prelude)
    out << kPrelude;
  out << c.snippet;
  return path;
}

} // namespace

Test(cava_diagnostics, bad_specs_give_located_errors) {
  for (const BadSpec &c : kCases) {
    const std::string path = write_spec(c);
    cr_assert(!path.empty());
    const CavaResult r = run_cava("--check --name-as bad.spec.c " + path);
    cr_expect_eq(r.status, 1, "[%s] exit status %d, output:\n%s", c.what, r.status,
                 r.output.c_str());
    std::string want = std::string("error: ") + c.message;
    if (c.line > 0) {
      const int line = c.line + (c.with_prelude ? kPreludeLines : 0);
      want = "bad.spec.c:" + std::to_string(line) + ":";
      const size_t at = r.output.find(want);
      cr_expect(at != std::string::npos && r.output.find(c.message, at) != std::string::npos,
                "[%s] expected '%s...%s' in:\n%s", c.what, want.c_str(), c.message,
                r.output.c_str());
    } else {
      cr_expect(r.output.find(want) != std::string::npos, "[%s] expected '%s' in:\n%s", c.what,
                want.c_str(), r.output.c_str());
    }
    const std::string dir = path.substr(0, path.rfind('/'));
    const std::string rm = "rm -rf " + dir;
    [[maybe_unused]] int rc = std::system(rm.c_str());
  }
}

Test(cava_diagnostics, missing_file_is_an_error) {
  const CavaResult r = run_cava("--check /nonexistent/spec.c");
  cr_expect_eq(r.status, 1);
  cr_expect(r.output.find("cannot read spec file") != std::string::npos, "%s", r.output.c_str());
}

Test(cava_diagnostics, good_spec_passes_check) {
  const std::string src = AVA_SOURCE_DIR;
  const CavaResult r =
      run_cava("--check -I" + src + "/specs/demo/lib " + src + "/specs/demo/demo.spec.c");
  cr_expect_eq(r.status, 0, "%s", r.output.c_str());
}
