/* SPDX-License-Identifier: MIT */
/*
 * demo_bench: an ordinary libdemo program that times the calls ava remotes.
 * Run natively it shows what a call costs without ava; under
 * `ava run --channel X --` it measures channel X end to end.
 *
 *   null     rt_p50, rt_p99: a sync call with no arguments (demo_version), µs
 *   async    async_rate[_TAG]: demo_obj_fill calls per second on one 64-byte
 *            object, including the sync call that drains them; with
 *            --repeat N the median of N bursts, and async_rate_min[_TAG]
 *            the slowest of them
 *   bw       write_bw (in buffers, demo_obj_write), read_bw (out buffers,
 *            demo_obj_read): MiB/s for 4 KiB ... 256 MiB (median of repetitions)
 *
 * usage: demo_bench [--quick] [--iters N] [--only null,async,bw] [--tag TEXT]
 *                   [--max-size BYTES] [--repeat N]
 */
#define _POSIX_C_SOURCE 200809L

#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "demo.h"

#define DEMO_VERSION_NUMBER 10203
#define ASYNC_OBJECT_SIZE 64u
#define ASYNC_CALIBRATION_CALLS 10000u
#define ASYNC_MAX_CALLS (50u * 1000 * 1000)
#define ASYNC_MAX_REPEAT 99u
#define MAX_SIZES 16

enum { RUN_NULL = 1, RUN_ASYNC = 2, RUN_BW = 4 };

struct settings {
	struct bench_options common;
	unsigned runs;
	const char *tag;
	uint64_t max_size;
	int zerocopy; /* buffers from ava_zerocopy_alloc when the guest library has it */
	uint64_t repeat; /* async bursts timed (median and minimum reported) */
};

static int call_failed(const char *call, demo_status status)
{
	fprintf(stderr, "demo_bench: %s failed: status %d (%s)\n", call, (int)status,
		demo_status_string(status));
	return -1;
}

static int null_calls(const struct settings *settings)
{
	const struct bench_options *options = &settings->common;
	uint64_t *samples = bench_alloc(options->iters * sizeof(uint64_t), "demo_bench");
	for (uint64_t i = 0; i < options->warmup + options->iters; i++) {
		uint64_t t0 = bench_now_ns();
		int32_t version = demo_version();
		uint64_t t1 = bench_now_ns();
		if (version != DEMO_VERSION_NUMBER) {
			fprintf(stderr, "demo_bench: demo_version returned %d, not %d\n", (int)version,
				DEMO_VERSION_NUMBER);
			free(samples);
			return -1;
		}
		if (i >= options->warmup)
			samples[i - options->warmup] = t1 - t0;
	}
	bench_report_latency("rt", samples, options->iters);
	free(samples);
	return 0;
}

/* Sends calls async fills and waits for all of them with one sync call; returns ns or 0. */
static uint64_t fill_burst(demo_obj obj, uint64_t calls)
{
	uint64_t t0 = bench_now_ns();
	for (uint64_t i = 0; i < calls; i++) {
		demo_status status = demo_obj_fill(obj, (uint8_t)i);
		if (status != DEMO_OK) {
			call_failed("demo_obj_fill", status);
			return 0;
		}
	}
	/* Async errors surface here, and its reply proves every fill before it has run. */
	uint8_t last = 0;
	demo_status status = demo_obj_read(obj, 0, &last, 1);
	uint64_t t1 = bench_now_ns();
	if (status != DEMO_OK) {
		call_failed("demo_obj_read after the async fills", status);
		return 0;
	}
	if (last != (uint8_t)(calls - 1)) {
		fprintf(stderr, "demo_bench: the object holds %u after the fills, not %u\n",
			(unsigned)last, (unsigned)(uint8_t)(calls - 1));
		return 0;
	}
	return t1 - t0 > 0 ? t1 - t0 : 1;
}

static int async_calls(const struct settings *settings)
{
	demo_obj obj = demo_obj_new(ASYNC_OBJECT_SIZE);
	if (obj == NULL) {
		fprintf(stderr, "demo_bench: demo_obj_new(%u) failed\n", ASYNC_OBJECT_SIZE);
		return -1;
	}
	int result = -1;
	uint64_t ns = fill_burst(obj, ASYNC_CALIBRATION_CALLS);
	if (ns == 0)
		goto out;
	uint64_t count = bench_scale_count(ASYNC_CALIBRATION_CALLS, ns,
					   bench_burst_ns(&settings->common), ASYNC_MAX_CALLS);
	double rates[ASYNC_MAX_REPEAT];
	double slowest = 0;
	for (uint64_t r = 0; r < settings->repeat; r++) {
		ns = fill_burst(obj, count);
		if (ns == 0)
			goto out;
		rates[r] = (double)count / ((double)ns / 1e9);
		if (r == 0 || rates[r] < slowest)
			slowest = rates[r];
	}
	const char *sep = settings->tag != NULL ? "_" : "";
	const char *tag = settings->tag != NULL ? settings->tag : "";
	char metric[64];
	snprintf(metric, sizeof metric, "async_rate%s%s", sep, tag);
	bench_result(metric, 0, bench_median(rates, settings->repeat), "calls/s");
	if (settings->repeat > 1) {
		snprintf(metric, sizeof metric, "async_rate_min%s%s", sep, tag);
		bench_result(metric, 0, slowest, "calls/s");
	}
	result = 0;
out:
	demo_obj_release(obj);
	return result;
}

/* Times reps transfers of size bytes in one direction; returns the median MiB/s, or < 0. */
static double transfer(demo_obj obj, uint8_t *buffer, uint64_t size, int in, uint64_t reps,
		       double *samples)
{
	for (uint64_t i = 0; i < reps; i++) {
		uint64_t t0 = bench_now_ns();
		demo_status status =
		    in ? demo_obj_write(obj, 0, buffer, size) : demo_obj_read(obj, 0, buffer, size);
		uint64_t t1 = bench_now_ns();
		if (status != DEMO_OK) {
			call_failed(in ? "demo_obj_write" : "demo_obj_read", status);
			return -1.0;
		}
		samples[i] = (double)(t1 - t0);
	}
	return bench_mib_per_s(size, bench_median(samples, reps));
}

static int bandwidth_size(demo_obj obj, uint8_t *buffer, uint64_t size, int quick, double *samples,
			  const char *prefix)
{
	uint8_t mark = (uint8_t)(size >> 12) ^ 0xa5;
	uint64_t reps = bench_transfer_reps(quick, size);
	memset(buffer, mark, size);
	demo_status status = demo_obj_write(obj, 0, buffer, size);
	if (status != DEMO_OK)
		return call_failed("demo_obj_write", status);
	double write_bw = transfer(obj, buffer, size, 1, reps, samples);
	if (write_bw < 0)
		return -1;
	/* The untimed read both warms the out path and proves the data made the trip. */
	memset(buffer, 0, size);
	status = demo_obj_read(obj, 0, buffer, size);
	if (status != DEMO_OK)
		return call_failed("demo_obj_read", status);
	if (buffer[0] != mark || buffer[size / 2] != mark || buffer[size - 1] != mark) {
		fprintf(stderr, "demo_bench: %" PRIu64 " bytes read back differ from those written\n",
			size);
		return -1;
	}
	double read_bw = transfer(obj, buffer, size, 0, reps, samples);
	if (read_bw < 0)
		return -1;
	char write_metric[32], read_metric[32];
	snprintf(write_metric, sizeof write_metric, "%swrite_bw", prefix);
	snprintf(read_metric, sizeof read_metric, "%sread_bw", prefix);
	bench_result(write_metric, size, write_bw, "MiB/s");
	bench_result(read_metric, size, read_bw, "MiB/s");
	return 0;
}

static int bandwidth(const struct settings *settings)
{
	uint64_t sizes[MAX_SIZES];
	size_t count =
	    bench_transfer_sizes(settings->common.quick, settings->max_size, sizes, MAX_SIZES);
	if (count == 0) {
		fprintf(stderr, "demo_bench: --max-size is below the smallest transfer size\n");
		return -1;
	}
	/* A worker short of memory may refuse the largest object: measure what fits, and say so. */
	demo_obj obj = NULL;
	while (count > 0 && (obj = demo_obj_new(sizes[count - 1])) == NULL) {
		fprintf(stderr, "demo_bench: cannot create a %" PRIu64 "-byte object; skipping that size\n",
			sizes[count - 1]);
		count--;
	}
	if (obj == NULL)
		return -1;
	/*
	 * Zero copy: memory in the channel's shared heap, found at run time so the
	 * program stays an ordinary libdemo program (natively the symbol is absent).
	 */
	void *(*zc_alloc)(uint64_t) = NULL;
	void (*zc_free)(void *) = NULL;
	if (settings->zerocopy) {
		zc_alloc = (void *(*)(uint64_t))dlsym(RTLD_DEFAULT, "ava_zerocopy_alloc");
		zc_free = (void (*)(void *))dlsym(RTLD_DEFAULT, "ava_zerocopy_free");
		if (zc_alloc == NULL || zc_free == NULL) {
			fprintf(stderr, "demo_bench: --zerocopy needs ava's guest library\n");
			demo_obj_release(obj);
			return -1;
		}
	}
	uint8_t *buffer = zc_alloc ? zc_alloc(sizes[count - 1])
				   : bench_alloc(sizes[count - 1], "demo_bench");
	if (buffer == NULL) {
		demo_obj_release(obj);
		return -1;
	}
	double *samples = bench_alloc(2000 * sizeof(double), "demo_bench");
	int result = 0;
	for (size_t s = 0; s < count && result == 0; s++)
		result = bandwidth_size(obj, buffer, sizes[s], settings->common.quick, samples,
					zc_alloc ? "zc_" : "");
	free(samples);
	if (zc_free)
		zc_free(buffer);
	else
		free(buffer);
	demo_obj_release(obj);
	return result;
}

static int parse_only(const char *list, unsigned *out)
{
	unsigned runs = 0;
	char copy[64];
	if (strlen(list) >= sizeof copy)
		return -1;
	strcpy(copy, list);
	char *save = NULL;
	for (char *word = strtok_r(copy, ",", &save); word != NULL; word = strtok_r(NULL, ",", &save)) {
		if (strcmp(word, "null") == 0)
			runs |= RUN_NULL;
		else if (strcmp(word, "async") == 0)
			runs |= RUN_ASYNC;
		else if (strcmp(word, "bw") == 0)
			runs |= RUN_BW;
		else
			return -1;
	}
	if (runs == 0)
		return -1;
	*out = runs;
	return 0;
}

static int valid_tag(const char *tag)
{
	if (*tag == '\0' || strlen(tag) > 32)
		return 0;
	for (const char *c = tag; *c != '\0'; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
			return 0;
	return 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: demo_bench [--quick] [--iters N] [--only null,async,bw] [--tag TEXT]\n"
			"                  [--max-size BYTES] [--repeat N]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct settings settings = {
		.runs = RUN_NULL | RUN_ASYNC | RUN_BW, .max_size = BENCH_SIZE_MAX, .repeat = 1};
	if (bench_parse_common(&argc, argv, &settings.common) != 0)
		return 2;
	for (int i = 1; i < argc; i++) {
		const char *value = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(argv[i], "--only") == 0 && value != NULL) {
			if (parse_only(value, &settings.runs) != 0) {
				fprintf(stderr, "demo_bench: --only takes null, async and bw, comma-separated\n");
				return 2;
			}
		} else if (strcmp(argv[i], "--tag") == 0 && value != NULL) {
			if (!valid_tag(value)) {
				fprintf(stderr, "demo_bench: --tag takes up to 32 of a-z, 0-9 and _\n");
				return 2;
			}
			settings.tag = value;
		} else if (strcmp(argv[i], "--zerocopy") == 0) {
			settings.zerocopy = 1;
			continue;
		} else if (strcmp(argv[i], "--repeat") == 0 && value != NULL) {
			if (bench_parse_u64(value, &settings.repeat) != 0 || settings.repeat == 0 ||
			    settings.repeat > ASYNC_MAX_REPEAT) {
				fprintf(stderr, "demo_bench: --repeat takes 1 to %u\n", ASYNC_MAX_REPEAT);
				return 2;
			}
		} else if (strcmp(argv[i], "--max-size") == 0 && value != NULL) {
			if (bench_parse_u64(value, &settings.max_size) != 0) {
				fprintf(stderr, "demo_bench: --max-size takes a byte count (K, M, G allowed)\n");
				return 2;
			}
		} else {
			return usage();
		}
		i++;
	}
	if ((settings.runs & RUN_NULL) && null_calls(&settings) != 0)
		return 1;
	if ((settings.runs & RUN_ASYNC) && async_calls(&settings) != 0)
		return 1;
	if ((settings.runs & RUN_BW) && bandwidth(&settings) != 0)
		return 1;
	return 0;
}
