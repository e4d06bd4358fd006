// SPDX-License-Identifier: MIT
// The main() of every Criterion test executable (CMake target ava_criterion).
// Criterion counts a skipped test (cr_skip_test) as passed in its exit
// status, so ctest would show a test that never ran as a pass. This main
// runs the tests as Criterion's own main does, names each skipped test with
// its reason, and when some were skipped and none failed exits with ctest's
// skip code (SKIP_RETURN_CODE, set on every test by ava_add_test), so that
// ctest reports the test as skipped. C, so that C tests can link it too.
#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include <stdio.h>

#ifndef AVA_SKIP_RETURN_CODE
#error "AVA_SKIP_RETURN_CODE comes from cmake/AvaTesting.cmake"
#endif

// Written by the report hooks, which Criterion runs in this (the runner)
// process before criterion_run_all_tests returns; read by main afterwards.
static size_t skipped_tests;
static size_t failed_tests;
static size_t all_tests;

ReportHook(POST_TEST)(struct criterion_test_stats *stats) {
  if (stats->test_status != CR_STATUS_SKIPPED)
    return;
  skipped_tests++;
  printf("SKIPPED %s/%s: %s\n", stats->test->category, stats->test->name,
         stats->message != NULL && stats->message[0] != '\0' ? stats->message
                                                             : "(no reason given)");
  fflush(stdout);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  all_tests = stats->nb_tests;
  failed_tests = stats->tests_failed + stats->tests_crashed;
}

int main(int argc, char *argv[]) {
  struct criterion_test_set *tests = criterion_initialize();
  int rc = 0;
  if (criterion_handle_args(argc, argv, true))
    rc = criterion_run_all_tests(tests) ? 0 : 1;
  criterion_finalize(tests);
  if (rc == 0 && failed_tests == 0 && skipped_tests > 0) {
    printf("%zu of %zu tests skipped (reasons above): reporting the run as skipped\n",
           skipped_tests, all_tests);
    fflush(stdout);
    return AVA_SKIP_RETURN_CODE;
  }
  return rc;
}
