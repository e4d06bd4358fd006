/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L

#include "bench_util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_ITERS 20000u
#define DEFAULT_ITERS_QUICK 5000u
#define MAX_ITERS (100u * 1000 * 1000)

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int bench_parse_u64(const char *text, uint64_t *out)
{
	if (text == NULL || *text < '0' || *text > '9')
		return -1;
	errno = 0;
	char *end = NULL;
	unsigned long long value = strtoull(text, &end, 10);
	if (errno != 0 || end == text)
		return -1;
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift != 0)
		end++;
	if (*end != '\0' || value > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)value << shift;
	return 0;
}

static int env_quick(void)
{
	const char *quick = getenv("AVA_BENCH_QUICK");
	return quick != NULL && *quick != '\0' && strcmp(quick, "0") != 0;
}

int bench_parse_common(int *argc, char **argv, struct bench_options *out)
{
	struct bench_options options = {.quick = env_quick()};
	uint64_t iters = 0;
	int kept = 1;
	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			options.quick = 1;
		} else if (strcmp(argv[i], "--iters") == 0) {
			if (i + 1 >= *argc || bench_parse_u64(argv[i + 1], &iters) != 0 || iters == 0 ||
			    iters > MAX_ITERS) {
				fprintf(stderr, "%s: --iters needs a count between 1 and %u\n", argv[0],
					MAX_ITERS);
				return -1;
			}
			i++;
		} else {
			argv[kept++] = argv[i];
		}
	}
	argv[kept] = NULL;
	*argc = kept;
	if (iters == 0)
		iters = options.quick ? DEFAULT_ITERS_QUICK : DEFAULT_ITERS;
	options.iters = iters;
	/* Enough untimed calls to fault in pages, fill caches and wake the peer's core. */
	options.warmup = iters / 10 < 500 ? 500 : iters / 10;
	*out = options;
	return 0;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a;
	uint64_t y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;
	return (x > y) - (x < y);
}

void bench_sort_u64(uint64_t *values, size_t count)
{
	qsort(values, count, sizeof values[0], compare_u64);
}

uint64_t bench_percentile(const uint64_t *sorted, size_t count, double percent)
{
	if (count == 0)
		return 0;
	/* Nearest rank: the smallest sample with at least percent% of samples at or below it. */
	double rank = percent / 100.0 * (double)count;
	size_t index = (size_t)rank;
	if ((double)index < rank)
		index++;
	if (index == 0)
		index = 1;
	if (index > count)
		index = count;
	return sorted[index - 1];
}

double bench_median(double *values, size_t count)
{
	if (count == 0)
		return 0.0;
	qsort(values, count, sizeof values[0], compare_double);
	if (count % 2 == 1)
		return values[count / 2];
	return (values[count / 2 - 1] + values[count / 2]) / 2.0;
}

void bench_report_latency(const char *prefix, uint64_t *samples_ns, size_t count)
{
	char metric[64];
	bench_sort_u64(samples_ns, count);
	snprintf(metric, sizeof metric, "%s_p50", prefix);
	bench_result(metric, BENCH_MSG_SIZE, (double)bench_percentile(samples_ns, count, 50) / 1e3,
		     "us");
	snprintf(metric, sizeof metric, "%s_p99", prefix);
	bench_result(metric, BENCH_MSG_SIZE, (double)bench_percentile(samples_ns, count, 99) / 1e3,
		     "us");
}

void bench_result(const char *metric, uint64_t size, double value, const char *unit)
{
	printf("result,%s,%" PRIu64 ",%.6g,%s\n", metric, size, value, unit);
	/* The collector may kill a hung program later: what is measured must be out already. */
	fflush(stdout);
}

size_t bench_transfer_sizes(int quick, uint64_t max_size, uint64_t *sizes, size_t capacity)
{
	uint64_t limit = quick ? BENCH_SIZE_MAX_QUICK : BENCH_SIZE_MAX;
	if (max_size < limit)
		limit = max_size;
	/* Quick runs step by 16 instead of 4 but always include 64 MiB, the target's size. */
	uint64_t step = quick ? 16 : 4;
	size_t count = 0;
	for (uint64_t size = BENCH_SIZE_MIN; size <= limit && count < capacity; size *= step)
		sizes[count++] = size;
	if (quick && limit >= 64 * BENCH_MIB && count < capacity && sizes[count - 1] != 64 * BENCH_MIB)
		sizes[count++] = 64 * BENCH_MIB;
	return count;
}

uint64_t bench_transfer_reps(int quick, uint64_t size)
{
	uint64_t volume = quick ? 64 * BENCH_MIB : 256 * BENCH_MIB;
	uint64_t reps = size == 0 ? 1 : volume / size;
	if (reps < 3)
		reps = 3;
	if (reps > 2000)
		reps = 2000;
	return reps;
}

uint64_t bench_burst_ns(const struct bench_options *options)
{
	return options->quick ? 150000000u : 500000000u;
}

uint64_t bench_scale_count(uint64_t count_done, uint64_t ns_done, uint64_t target_ns, uint64_t max)
{
	double wanted = (double)target_ns / (double)(ns_done ? ns_done : 1) * (double)count_done;
	if (wanted < (double)count_done)
		return count_done;
	if (wanted > (double)max)
		return max;
	return (uint64_t)wanted;
}

double bench_mib_per_s(uint64_t size, double ns)
{
	if (ns <= 0.0)
		return 0.0;
	return (double)size / (double)BENCH_MIB / (ns / 1e9);
}

void *bench_alloc(size_t size, const char *program)
{
	uint8_t *p = malloc(size ? size : 1);
	if (p == NULL) {
		fprintf(stderr, "%s: out of memory (%zu bytes)\n", program, size);
		exit(1);
	}
	/* Page faults belong to allocation, not to the copies being timed. */
	memset(p, 0x5a, size);
	return p;
}
