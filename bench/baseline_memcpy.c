/* SPDX-License-Identifier: MIT */
/*
 * Baseline: one plain memcpy between two buffers that are already faulted in,
 * the ceiling for any transfer of the same size through a channel.
 *
 *   bandwidth  MiB/s of memcpy for each transfer size, 4 KiB ... 256 MiB (median of samples)
 *
 * usage: baseline_memcpy [--quick] [--max-size BYTES]
 *
 * --max-size bounds the sizes as demo_bench's does (scripts/bench-vm.sh runs
 * both in a guest of 1 GiB, where two 256 MiB buffers would not fit beside
 * the image).
 */
#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define MAX_SIZES 16
/* Small copies are timed in groups, so that the clock's own cost stays negligible. */
#define GROUP_BYTES BENCH_MIB

int main(int argc, char **argv)
{
	struct bench_options options;
	if (bench_parse_common(&argc, argv, &options) != 0)
		return 2;
	uint64_t max_size = BENCH_SIZE_MAX;
	if (argc == 3 && strcmp(argv[1], "--max-size") == 0) {
		if (bench_parse_u64(argv[2], &max_size) != 0 || max_size < BENCH_SIZE_MIN) {
			fprintf(stderr, "baseline_memcpy: --max-size takes a byte count of at least "
					"4K (K, M, G allowed)\n");
			return 2;
		}
	} else if (argc != 1) {
		fprintf(stderr, "usage: baseline_memcpy [--quick] [--max-size BYTES]\n");
		return 2;
	}
	uint64_t sizes[MAX_SIZES];
	size_t count = bench_transfer_sizes(options.quick, max_size, sizes, MAX_SIZES);
	uint64_t largest = sizes[count - 1];
	uint8_t *src = bench_alloc(largest, "baseline_memcpy");
	uint8_t *dst = bench_alloc(largest, "baseline_memcpy");
	double *samples = bench_alloc(2000 * sizeof(double), "baseline_memcpy");

	for (size_t s = 0; s < count; s++) {
		uint64_t size = sizes[s];
		uint64_t group = size >= GROUP_BYTES ? 1 : GROUP_BYTES / size;
		uint64_t reps = bench_transfer_reps(options.quick, size);
		uint64_t n = reps / group < 3 ? 3 : reps / group;
		memcpy(dst, src, size);
		for (uint64_t i = 0; i < n; i++) {
			uint64_t t0 = bench_now_ns();
			for (uint64_t g = 0; g < group; g++) {
				memcpy(dst, src, size);
				bench_clobber();
			}
			samples[i] = (double)(bench_now_ns() - t0) / (double)group;
		}
		bench_result("bandwidth", size, bench_mib_per_s(size, bench_median(samples, n)),
			     "MiB/s");
	}
	free(samples);
	free(src);
	free(dst);
	return 0;
}
