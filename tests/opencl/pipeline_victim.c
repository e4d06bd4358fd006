/* SPDX-License-Identifier: MIT */
/* Large transfers that go in pieces through the shm heap (issue 15), round
 * after round, each checked byte for byte: a 24 MiB blocking write of a
 * pattern that changes every round, then a blocking read of it into another
 * buffer. After the first round it prints "ready". Runs only under ava, by
 * tests/e2e/test_e2e_opencl_pipelined.cpp:
 *   victim     rounds until a call fails (the test kills its worker in the
 *              middle): prints the error and exits 0 when it is an OpenCL
 *              error and every round before it compared equal
 *   ROUNDS     that many rounds, every one must pass (a guest of the same
 *              worker beside the victim: its heap and data stay whole) */
#include "common.h"

#include <stdint.h>

#define N (24u << 20)

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s victim|ROUNDS\n", argv[0]);
    return 2;
  }
  const int victim = strcmp(argv[1], "victim") == 0;
  const unsigned long rounds = victim ? ~0ul : strtoul(argv[1], NULL, 10);
  OclEnv env = ocl_env_open();
  cl_command_queue q = ocl_queue(&env, 0);
  uint32_t *src = malloc(N), *dst = malloc(N);
  if (src == NULL || dst == NULL)
    return 2;
  cl_mem buf = ocl_buffer(&env, CL_MEM_READ_WRITE, N, NULL);
  unsigned long done = 0;
  cl_int err = CL_SUCCESS;
  while (done < rounds) {
    for (uint32_t i = 0; i < N / 4; ++i)
      src[i] = i * 2654435761u + (uint32_t)done;
    memset(dst, 0, N);
    err = clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, N, src, 0, NULL, NULL);
    if (err == CL_SUCCESS)
      err = clEnqueueReadBuffer(q, buf, CL_TRUE, 0, N, dst, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      break;
    EXPECT(memcmp(src, dst, N) == 0, "round %lu read back other bytes", done);
    if (memcmp(src, dst, N) != 0)
      break;
    if (done++ == 0) {
      printf("ready\n");
      fflush(stdout);
    }
  }
  if (victim) {
    printf("after %lu rounds: %s\n", done, cl_err_name(err));
    EXPECT(err != CL_SUCCESS, "the loop ended without a failed call");
    /* The worker is gone: nothing more to release there. */
    return ocl_finish();
  }
  CHECK_ERR(err, "a transfer");
  printf("rounds: %lu\n", done);
  CHECK(clReleaseMemObject(buf));
  CHECK(clReleaseCommandQueue(q));
  ocl_env_close(&env);
  free(src);
  free(dst);
  return ocl_finish();
}
