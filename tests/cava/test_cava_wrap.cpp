// SPDX-License-Identifier: MIT
// cava's wrapping of generated kernel C to 100 columns (backends/wrap.cpp):
// where a line may break, how the continuation aligns, what is never touched,
// and the #line directives it renumbers. Table-driven, on small inputs.
#include <criterion/criterion.h>

#include <string>

#include "cava/backends/wrap.hpp"

namespace {

struct WrapCase {
  const char *what;
  const char *in;
  const char *want;
  size_t limit;
};

} // namespace

const WrapCase kCases[] = {
    {"short lines stay", "\tf(a, b);\n", "\tf(a, b);\n", 20},
    {"a call breaks after a comma, aligned with its parenthesis",
     "\tif (fn(alpha, beta, gamma) != 0)\n", "\tif (fn(alpha, beta,\n\t       gamma) != 0)\n", 28},
    {"several breaks keep the alignment", "x = g(aaaa, bbbb, cccc, dddd);\n",
     "x = g(aaaa, bbbb,\n      cccc, dddd);\n", 18},
    {"never inside a string", "\tpr_err(\"a, b, c, d\", x);\n",
     "\tpr_err(\"a, b, c, d\",\n\t       x);\n", 24},
    {"preprocessor lines stay", "#define M(a, b, c, d) ((a) + (b) + (c) + (d))\n",
     "#define M(a, b, c, d) ((a) + (b) + (c) + (d))\n", 20},
    {"comments stay", "\t/* one, two, three, four, five */\n",
     "\t/* one, two, three, four, five */\n", 20},
    {"no comma, no break", "\tverylongidentifier_without_any_commas();\n",
     "\tverylongidentifier_without_any_commas();\n", 20},
    {"the rest of a list begun earlier keeps its indentation",
     "\t\tint aaaaaa, int bbbbbb, int cccccc)\n", "\t\tint aaaaaa, int bbbbbb,\n\t\tint cccccc)\n",
     40},
};

Test(cava_wrap, lines_break_as_kernel_code_does) {
  for (const WrapCase &c : kCases) {
    const std::string got = cava::wrap_generated_c(c.in, "out.c", c.limit);
    cr_expect_str_eq(got.c_str(), c.want, "%s:\n--- got\n%s--- want\n%s", c.what, got.c_str(),
                     c.want);
  }
}

Test(cava_wrap, spec_code_stays_and_line_directives_follow_the_new_lines) {
  const std::string in = "void f(int aaaa, int bbbb, int cccc);\n"
                         "#line 7 \"specs/x.spec.c\"\n"
                         "\tspec_call(aaaa, bbbb, cccc, dddd);\n"
                         "#line 4 \"out.c\"\n"
                         "void g(int aaaa, int bbbb, int cccc);\n";
  const std::string want = "void f(int aaaa, int bbbb,\n"
                           "       int cccc);\n"
                           "#line 7 \"specs/x.spec.c\"\n"
                           "\tspec_call(aaaa, bbbb, cccc, dddd);\n"
                           "#line 6 \"out.c\"\n"
                           "void g(int aaaa, int bbbb,\n"
                           "       int cccc);\n";
  const std::string got = cava::wrap_generated_c(in, "out.c", 30);
  cr_expect_str_eq(got.c_str(), want.c_str(), "--- got\n%s--- want\n%s", got.c_str(), want.c_str());
}
