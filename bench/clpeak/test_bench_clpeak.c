/* SPDX-License-Identifier: MIT */
/* scripts/bench-clpeak.sh end to end with fake_clpeak: the native run and the
 * runs under `ava run --channel unix|tcp|shm` (a guest library directory whose
 * libOpenCL.so.1 is the real ICD loader, which the fake never calls), the
 * table, clpeak.csv/json, and what a failing run leaves. The fake's figures
 * are fixed, so the ratios are exact; nothing is timed. */
#define _GNU_SOURCE /* asprintf */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kMaxNeedles = 8 };

struct Case {
  const char *name;
  const char *env; /* extra NAME=value words for env(1) */
  int has_guest_lib;
  int exit_status;
  const char *stdout_has[kMaxNeedles];
  const char *csv_has[kMaxNeedles];
  const char *csv_lacks[kMaxNeedles];
};

static const struct Case kCases[] = {
    {"every run gives every figure",
     "",
     1,
     0,
     {"native   ok", "unix     ok", "tcp      ok", "shm      ok", "unix/native",
      "tcp-stream ok (", "bare loopback tcp stream in this run: "},
     {"native,kernel_launch_latency,20,us,20,1\n", "unix,enqueuewritebuffer,5,GB/s,10,0.5\n",
      "tcp,kernel_launch_latency,50,us,20,2.5\n", "shm,memcpy_to_mapped_ptr,8,GB/s,10,0.8\n"},
     {NULL}},
    {"a remoted test fails: its figures so far are kept",
     "FAKE_CLPEAK_FAIL=tcp",
     1,
     1,
     {"tcp      FAILED: no figure for enqueuereadbuffer", "clpeak said 'clEnqueueReadBuffer (-5)'",
      "Tests skipped", "shm      ok"},
     {"tcp,enqueuewritebuffer,4,GB/s,10,0.4\n", "tcp,kernel_launch_latency,50,us,20,2.5\n",
      "shm,enqueuereadbuffer,8,GB/s,10,0.8\n"},
     {"tcp,enqueuereadbuffer,"}},
    {"a remoted run crashes",
     "FAKE_CLPEAK_CRASH=shm",
     1,
     1,
     {"shm      FAILED: exit status 134", "unix     ok"},
     {"shm,enqueuewritebuffer,8,GB/s,10,0.8\n"},
     {"shm,enqueuereadbuffer,", "shm,kernel_launch_latency,"}},
    {"the native run fails: no ratios",
     "FAKE_CLPEAK_FAIL=native",
     1,
     1,
     {"native   FAILED: no figure for enqueuereadbuffer"},
     {"unix,enqueuereadbuffer,5,GB/s,,\n", "native,enqueuewritebuffer,10,GB/s,10,1\n"},
     {"native,enqueuereadbuffer,"}},
    {"no OpenCL guest library: the native column still comes",
     "",
     0,
     1,
     {"native   ok", "unix     FAILED: no OpenCL guest library", "FAILED run shm"},
     {"native,enqueuewritebuffer,10,GB/s,10,1\n"},
     {"unix,", "tcp,", "shm,"}},
};
enum { kCaseCount = sizeof kCases / sizeof kCases[0] };

/* A freshly allocated formatted string; the test fails when memory is short. */
__attribute__((format(printf, 1, 2))) static char *format(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  char *text = NULL;
  int length = vasprintf(&text, fmt, args);
  va_end(args);
  cr_assert_geq(length, 0, "out of memory");
  return text;
}

/* The contents of DIR/NAME. */
static char *read_file(const char *dir, const char *name) {
  char *path = format("%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "cannot open %s", path);
  char *text = NULL;
  size_t size = 0;
  FILE *mem = open_memstream(&text, &size);
  cr_assert_not_null(mem);
  char chunk[4096];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
    fwrite(chunk, 1, got, mem);
  fclose(f);
  fclose(mem);
  free(path);
  return text;
}

/* Runs the script (bounded by timeout(1)) in a fresh directory; returns its
 * exit status and leaves dir/out/{stdout,stderr}.txt and the results. */
static int run_script(const char *dir, const char *env, int has_guest_lib) {
  char *guest = format("%s/guest", dir);
  cr_assert_eq(mkdir(guest, 0700), 0);
  if (has_guest_lib) {
    char *lib = format("%s/libOpenCL.so.1", guest);
    cr_assert_eq(symlink(OPENCL_LIBRARY, lib), 0, "symlink %s", lib);
    free(lib);
  }
  char *command = format("mkdir -p '%s/out' && timeout -k 5 120 env AVA_GUEST_LIB_DIR='%s' "
                         "CLPEAK='%s' %s '%s' '%s' '%s/out' >'%s/out/stdout.txt' "
                         "2>'%s/out/stderr.txt'",
                         dir, guest, FAKE_CLPEAK, env, BENCH_CLPEAK_SH, BUILD_DIR, dir, dir, dir);
  int status = system(command);
  free(command);
  free(guest);
  cr_assert(WIFEXITED(status), "the script did not exit normally");
  return WEXITSTATUS(status);
}

static void remove_tree(const char *dir) {
  char *command = format("rm -rf -- '%s'", dir);
  cr_expect_eq(system(command), 0);
  free(command);
}

/* Parameters are plain indices: Criterion hands them to another process. */
ParameterizedTestParameters(bench_clpeak, runs) {
  static size_t indices[kCaseCount];
  for (size_t i = 0; i < kCaseCount; i++)
    indices[i] = i;
  return cr_make_param_array(size_t, indices, kCaseCount);
}

ParameterizedTest(size_t *index, bench_clpeak, runs, .timeout = 300) {
  cr_assert_lt(*index, kCaseCount);
  const struct Case *tc = &kCases[*index];
  char dir[] = "/tmp/ava-test-bench-clpeak.XXXXXX";
  cr_assert_not_null(mkdtemp(dir));

  int status = run_script(dir, tc->env, tc->has_guest_lib);
  char *out = read_file(dir, "out/stdout.txt");
  char *err = read_file(dir, "out/stderr.txt");
  cr_expect_eq(status, tc->exit_status, "%s: exit status %d\nstdout:\n%s\nstderr:\n%s", tc->name,
               status, out, err);
  for (int i = 0; i < kMaxNeedles && tc->stdout_has[i] != NULL; i++)
    cr_expect_not_null(strstr(out, tc->stdout_has[i]), "%s: no '%s' in\n%s", tc->name,
                       tc->stdout_has[i], out);

  char *csv = read_file(dir, "out/clpeak.csv");
  for (int i = 0; i < kMaxNeedles && tc->csv_has[i] != NULL; i++)
    cr_expect_not_null(strstr(csv, tc->csv_has[i]), "%s: no '%s' in\n%s", tc->name, tc->csv_has[i],
                       csv);
  for (int i = 0; i < kMaxNeedles && tc->csv_lacks[i] != NULL; i++)
    cr_expect_null(strstr(csv, tc->csv_lacks[i]), "%s: '%s' in\n%s", tc->name, tc->csv_lacks[i],
                   csv);

  char *json = read_file(dir, "out/clpeak.json");
  cr_expect_not_null(
      strstr(json, tc->exit_status == 0 ? "\"status\": \"ok\"" : "\"status\": \"failed\""));
  char *raw_log = read_file(dir, "out/clpeak/native.log");
  cr_expect_not_null(strstr(raw_log, "Transfer bandwidth (GBPS)"));
  free(raw_log);
  free(out);
  free(err);
  free(csv);
  free(json);
  remove_tree(dir);
}

Test(bench_clpeak, usage_error) {
  char *command = format("'%s' >/dev/null 2>&1", BENCH_CLPEAK_SH);
  int status = system(command);
  free(command);
  cr_assert(WIFEXITED(status));
  cr_expect_eq(WEXITSTATUS(status), 2);
}
