// SPDX-License-Identifier: MIT
// cava's rule for worker-private buffers (include/ava/spec.h, at
// ava_execute): a spec whose functions use their buffers in every way the
// rule tells apart, and which buffers the generated worker decodes with
// AVA_W_PRIVATE (copied out of the guest-writable heap) and which in place.
#include <criterion/criterion.h>

#include <stdlib.h>

#include <fstream>
#include <string>

#include "cava_run.hpp"

namespace {

// The API: every function the spec remotes, and one it only calls.
const char kHeader[] = R"(#include <stddef.h>
#include <stdint.h>
typedef struct obj_s *obj;
int rewritten(obj o, void *buf, size_t n);
int by_macro(obj o, void *buf, size_t n);
int handed_on(obj o, void *dst, const void *src, size_t n);
int filled(obj o, void *buf, size_t n);
int copied_once(obj o, const void *src, size_t n);
int checked_then_passed(obj o, const void *src, size_t n);
int copied_before_call(obj o, const void *src, size_t n);
int guest_only(obj o, void *buf, size_t n);
int helped(obj o, const void *src, size_t n);
int aliased(obj o, void *buf, size_t n);
int listed(obj *objs, size_t n);
int api_copy(void *dst, const void *src, size_t n);
)";

const char kSpec[] = R"(#include <string.h>
#include <ava/spec.h>
#include "rule.h"
ava_name("rule");
ava_identifier(rule);
ava_number(91);
ava_soname("librule.so.1");
ava_type(obj) { ava_handle; }
ava_type(int) { ava_error(-1); }

ava_begin_utility;
#define AVA_RULE_CLEAR(b) (((char *)(b))[0] = 0)
static int rule_helper(const void *p) { return p != NULL; }
ava_end_utility;

/* An epilogue rewrites what the API wrote: private. */
int rewritten(obj o, void *buf, size_t n)
{
	ava_argument(buf) { ava_out; ava_buffer(n); }
	int ret = ava_execute();
	if (ava_is_worker && ret == 0)
		((uint64_t *)buf)[0] = 1;
	return ret;
}

/* The same through a macro: private. */
int by_macro(obj o, void *buf, size_t n)
{
	ava_argument(buf) { ava_out; ava_buffer(n); }
	int ret = ava_execute();
	if (ava_is_worker && ret == 0)
		AVA_RULE_CLEAR(buf);
	return ret;
}

/* Handed as they are to the API: in place. */
int handed_on(obj o, void *dst, const void *src, size_t n)
{
	ava_argument(dst) { ava_out; ava_buffer(n); }
	ava_argument(src) { ava_in; ava_buffer(n); }
	ava_disable_native_call;
	if (dst == NULL || !src)
		return -1;
	return api_copy((char *)dst, src, n);
}

/* Only written into: in place. */
int filled(obj o, void *buf, size_t n)
{
	ava_argument(buf) { ava_out; ava_buffer(n); }
	ava_disable_native_call;
	if (buf != NULL)
		memset(buf, 7, n);
	return 0;
}

/* One copy out, nothing else reads it: in place. */
int copied_once(obj o, const void *src, size_t n)
{
	ava_argument(src) { ava_in; ava_buffer(n); }
	ava_disable_native_call;
	char local[16];
	memcpy(local, src, n < sizeof(local) ? n : sizeof(local));
	return local[0];
}

/* Checked by a copy, then the API reads it again: private. */
int checked_then_passed(obj o, const void *src, size_t n)
{
	ava_argument(src) { ava_in; ava_buffer(n); }
	ava_disable_native_call;
	char first;
	memcpy(&first, src, 1);
	return first == 0 ? -1 : api_copy(NULL, src, n);
}

/* A copy out before the real call, which reads it again: private. */
int copied_before_call(obj o, const void *src, size_t n)
{
	ava_argument(src) { ava_in; ava_buffer(n); }
	char first = 0;
	if (ava_is_worker)
		memcpy(&first, src, 1);
	return first == 0 ? -1 : ava_execute();
}

/* Only the guest looks: in place. */
int guest_only(obj o, void *buf, size_t n)
{
	ava_argument(buf) { ava_out; ava_buffer(n); }
	int ret = ava_execute();
	if (ava_is_guest && ret == 0)
		((char *)buf)[0] = 0;
	return ret;
}

/* A helper of the spec reads it: private. */
int helped(obj o, const void *src, size_t n)
{
	ava_argument(src) { ava_in; ava_buffer(n); }
	ava_disable_native_call;
	return rule_helper(src);
}

/* Another name for it: private. */
int aliased(obj o, void *buf, size_t n)
{
	ava_argument(buf) { ava_out; ava_buffer(n); }
	ava_disable_native_call;
	void *p = buf;
	return api_copy(p, NULL, n);
}

/* Handles, translated in place: always private. */
int listed(obj *objs, size_t n)
{
	ava_argument(objs) { ava_out; ava_buffer(n); }
}
)";

struct Expect {
  const char *function;
  const char *buffer;
  bool private_copy;
};

const Expect kExpected[] = {
    {"rewritten", "buf", true},
    {"by_macro", "buf", true},
    {"handed_on", "dst", false},
    {"handed_on", "src", false},
    {"filled", "buf", false},
    {"copied_once", "src", false},
    {"checked_then_passed", "src", true},
    {"copied_before_call", "src", true},
    {"guest_only", "buf", false},
    {"helped", "src", true},
    {"aliased", "buf", true},
    {"listed", "objs", true},
};

// The decoding line of buffer in the handler of function: "" if none.
std::string buffer_check_line(const std::string &worker, const std::string &function,
                              const std::string &buffer) {
  const size_t start = worker.find("static int ava_rule_serve_" + function + "(");
  if (start == std::string::npos)
    return "";
  const size_t end = worker.find("\n}\n", start);
  const size_t at = worker.find("ava_w_buffer_check(ava_w, &ava_a->" + buffer + ",", start);
  if (at == std::string::npos || at > end)
    return "";
  return worker.substr(at, worker.find('\n', at) - at);
}

} // namespace

Test(cava_private, buffers_the_code_touches_are_decoded_worker_private) {
  char tmpl[] = "/tmp/cava-private-XXXXXX";
  const char *dir = mkdtemp(tmpl);
  cr_assert_not_null(dir);
  const std::string d = dir;
  std::ofstream(d + "/rule.h") << kHeader;
  std::ofstream(d + "/rule.spec.c") << kSpec;
  const CavaResult r =
      run_cava("-I" + d + " --name-as rule.spec.c -o " + d + " " + d + "/rule.spec.c");
  cr_assert_eq(r.status, 0, "cava failed:\n%s", r.output.c_str());
  const std::string worker = read_file(d + "/rule_worker.c");
  for (const Expect &e : kExpected) {
    const std::string line = buffer_check_line(worker, e.function, e.buffer);
    cr_expect(!line.empty(), "[%s] no decoding of %s", e.function, e.buffer);
    const bool is_private = line.find("| AVA_W_PRIVATE") != std::string::npos;
    cr_expect_eq(is_private, e.private_copy, "[%s] %s is %s: %s", e.function, e.buffer,
                 is_private ? "worker-private" : "used in place", line.c_str());
  }
  const std::string rm = "rm -rf " + d;
  [[maybe_unused]] int rc = std::system(rm.c_str());
}
