/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the benchmark programs in bench/: a monotonic clock,
 * percentiles, the result line format that scripts/bench.sh collects, and the
 * few option and size conventions every program follows.
 *
 * Every program prints its measurements to stdout as lines of the form
 *
 *   result,METRIC,SIZE,VALUE,UNIT
 *
 * (SIZE in bytes, 0 where it does not apply) and anything else to stderr.
 * The programs print raw figures only; bench/report.py divides each one by a
 * baseline of the same run, because a figure on its own says little about a
 * shared 2-core host.
 */
#ifndef AVA_BENCH_UTIL_H
#define AVA_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BENCH_KIB (1ull << 10)
#define BENCH_MIB (1ull << 20)

/* Message size of every latency and message-rate measurement. */
#define BENCH_MSG_SIZE 64u

/* Transfer sizes: 4 KiB, 16 KiB, ... 256 MiB (quick: 4 KiB, 64 KiB, ... 64 MiB). */
#define BENCH_SIZE_MIN (4 * BENCH_KIB)
#define BENCH_SIZE_MAX (256 * BENCH_MIB)
#define BENCH_SIZE_MAX_QUICK (64 * BENCH_MIB)

/* A spinning wait that sees no progress for this long gives up instead of hanging. */
#define BENCH_SPIN_TIMEOUT_NS (10ull * 1000 * 1000 * 1000)

/* Settings common to all programs: --quick or AVA_BENCH_QUICK=1, --iters N. */
struct bench_options {
	int quick;
	uint64_t iters;  /* timed round trips (latency) */
	uint64_t warmup; /* untimed round trips before them */
};

uint64_t bench_now_ns(void);

/* A hint to the CPU inside spin loops, so the sibling hyperthread gets the core. */
static inline void bench_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Keeps the compiler from dropping stores to memory it believes nobody reads. */
static inline void bench_clobber(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/*
 * Parses the common options from argv, removing them; the remaining
 * arguments are compacted into argv[1..*argc-1]. Prints a message and
 * returns -1 on a malformed value.
 */
int bench_parse_common(int *argc, char **argv, struct bench_options *out);

/* Parses a decimal count with an optional K/M/G (binary) suffix. */
int bench_parse_u64(const char *text, uint64_t *out);

/* Sorts ascending; bench_percentile then reads the nearest-rank percentile. */
void bench_sort_u64(uint64_t *values, size_t count);
uint64_t bench_percentile(const uint64_t *sorted, size_t count, double percent);
double bench_median(double *values, size_t count);

/* Prints p50 and p99 of round-trip samples (ns) as PREFIX_p50 and PREFIX_p99 in µs. */
void bench_report_latency(const char *prefix, uint64_t *samples_ns, size_t count);

void bench_result(const char *metric, uint64_t size, double value, const char *unit);

/*
 * Transfer sizes, ascending, into sizes[capacity]; returns how many. Sizes
 * above max_size are left out.
 */
size_t bench_transfer_sizes(int quick, uint64_t max_size, uint64_t *sizes, size_t capacity);

/*
 * How many timed repetitions a transfer of size bytes gets: enough to move
 * about a quarter (quick: a sixteenth) of a GiB, at least 3, at most 2000.
 */
uint64_t bench_transfer_reps(int quick, uint64_t size);

/*
 * Timed bursts (message streams, async calls) are sized from a short
 * calibration burst so that they last about this long on any host and
 * channel: a fixed count would take seconds on a slow channel and be too
 * short to measure on a fast one.
 */
uint64_t bench_burst_ns(const struct bench_options *options);

/* The count that makes a burst last target_ns, given that count_done took ns_done; >= count_done. */
uint64_t bench_scale_count(uint64_t count_done, uint64_t ns_done, uint64_t target_ns, uint64_t max);

/* MiB/s of moving size bytes in ns nanoseconds. */
double bench_mib_per_s(uint64_t size, double ns);

/* malloc that prints and exits on failure, with every page touched. */
void *bench_alloc(size_t size, const char *program);

#ifdef __cplusplus
}
#endif

#endif /* AVA_BENCH_UTIL_H */
