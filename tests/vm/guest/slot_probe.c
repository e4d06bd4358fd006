/* SPDX-License-Identifier: MIT */
/*
 * slot_probe: runs in the test guest against /dev/ava (ava.ko). Claims a
 * slot, checks that mmap gives this slot (or a part) and nothing beyond it, and with
 * `hold SECONDS` keeps the slot open that long (for rmmod and concurrency
 * checks). Prints "slot N" first, then one line per mmap check; exit status
 * 0 when every check held.
 *
 *   slot_probe DEVICE fill BYTE   fills its slot's heap with BYTE and exits
 *   slot_probe DEVICE zeroes N    claims N slots at once and checks that
 *                                 each reads zero past its region header
 *                                 (ava.ko zeroes a slot at claim): one line
 *                                 per slot, exit status 1 if one did not
 *   slot_probe DEVICE wait        prints "waiting", sleeps in AVA_IOC_WAIT
 *                                 (again after each wake-up) until it
 *                                 fails, prints "wait: ERRNO after MS ms",
 *                                 then how SLOT_INFO and mmap fail; exit
 *                                 status 0 when all three said ENODEV
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ava/ivshmem.h"

static int failures;

/* A mapping that must be refused: prints the outcome, counts a success. */
static void expect_refused(int fd, const char *what, size_t length, off_t offset)
{
	void *p = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);

	if (p == MAP_FAILED) {
		printf("%s: refused\n", what);
		return;
	}
	printf("%s: MAPPED\n", what);
	munmap(p, length);
	failures++;
}

static void *map_slot(int fd, struct ava_slot_info *info)
{
	void *p;

	if (ioctl(fd, AVA_IOC_SLOT_INFO, info) != 0) {
		fprintf(stderr, "slot_probe: AVA_IOC_SLOT_INFO: %s\n", strerror(errno));
		return NULL;
	}
	p = mmap(NULL, info->slot_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "slot_probe: mmap of slot %u: %s\n", info->index, strerror(errno));
		return NULL;
	}
	return p;
}

static int fill_heap(const char *device, int byte)
{
	struct ava_slot_info info;
	int fd = open(device, O_RDWR | O_CLOEXEC);
	unsigned char *p;

	if (fd < 0) {
		fprintf(stderr, "slot_probe: open %s: %s\n", device, strerror(errno));
		return 2;
	}
	p = map_slot(fd, &info);
	if (!p)
		return 2;
	memset(p + info.slot_size - info.heap_size, byte, info.heap_size);
	printf("slot %u: heap of %llu bytes filled with %#x\n", info.index,
	       (unsigned long long)info.heap_size, byte);
	munmap(p, info.slot_size);
	close(fd);
	return 0;
}

/* Everything a claimant maps past the region header must read zero. */
static int check_zeroes(const char *device, int n)
{
	int fds[AVA_DEV_MAX_SLOTS];
	int i, bad = 0;

	if (n < 1 || n > (int)AVA_DEV_MAX_SLOTS)
		return 2;
	for (i = 0; i < n; i++) {
		fds[i] = open(device, O_RDWR | O_CLOEXEC);
		if (fds[i] < 0) {
			fprintf(stderr, "slot_probe: open %d of %s: %s\n", i + 1, device,
				strerror(errno));
			return 2;
		}
	}
	for (i = 0; i < n; i++) {
		struct ava_slot_info info;
		const unsigned char *p = map_slot(fds[i], &info);
		size_t off;

		if (!p)
			return 2;
		for (off = AVA_REGION_HDR_SIZE; off < info.slot_size && !p[off]; off++)
			;
		if (off < info.slot_size) {
			printf("slot %u: byte %#x at offset %zu\n", info.index, p[off], off);
			bad++;
		} else {
			printf("slot %u: zero\n", info.index);
		}
		munmap((void *)p, info.slot_size);
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	return bad ? 1 : 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A claim blocked in AVA_IOC_WAIT while the device goes away (unbind). */
static int wait_until_gone(const char *device)
{
	struct ava_wait w = { .offset = 0, .expected = AVA_REGION_MAGIC, .timeout_ms = 60000 };
	struct ava_slot_info info;
	int fd = open(device, O_RDWR | O_CLOEXEC);
	int wait_err, info_err, map_err;
	long long start;
	void *p;

	if (fd < 0) {
		fprintf(stderr, "slot_probe: open %s: %s\n", device, strerror(errno));
		return 2;
	}
	printf("waiting\n");
	fflush(stdout);
	start = now_ms();
	/* 0 is any wake-up of the slot: the magic stays, so wait again */
	while (ioctl(fd, AVA_IOC_WAIT, &w) == 0)
		;
	wait_err = errno;
	printf("wait: %s after %lld ms\n", strerrorname_np(wait_err), now_ms() - start);
	info_err = ioctl(fd, AVA_IOC_SLOT_INFO, &info) ? errno : 0;
	printf("slot info: %s\n", info_err ? strerrorname_np(info_err) : "ok");
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	map_err = p == MAP_FAILED ? errno : 0;
	printf("mmap: %s\n", map_err ? strerrorname_np(map_err) : "mapped");
	close(fd);
	return wait_err == ENODEV && info_err == ENODEV && map_err == ENODEV ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *device = argc > 1 ? argv[1] : "/dev/ava";
	struct ava_slot_info info;
	int fd;
	void *slot;

	if (argc > 2 && !strcmp(argv[2], "wait"))
		return wait_until_gone(device);
	if (argc > 3 && !strcmp(argv[2], "fill"))
		return fill_heap(device, atoi(argv[3]) & 0xff);
	if (argc > 3 && !strcmp(argv[2], "zeroes"))
		return check_zeroes(device, atoi(argv[3]));
	fd = open(device, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "slot_probe: open %s: %s\n", device, strerror(errno));
		return 2;
	}
	if (ioctl(fd, AVA_IOC_SLOT_INFO, &info) != 0) {
		fprintf(stderr, "slot_probe: AVA_IOC_SLOT_INFO: %s\n", strerror(errno));
		return 2;
	}
	printf("slot %u\n", info.index);
	slot = mmap(NULL, info.slot_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (slot == MAP_FAILED) {
		printf("the whole slot: REFUSED (%s)\n", strerror(errno));
		failures++;
	} else {
		printf("the whole slot: mapped\n");
		munmap(slot, info.slot_size);
	}
	expect_refused(fd, "one page beyond the slot", info.slot_size + 4096, 0);
	expect_refused(fd, "the page after the slot", 4096, (off_t)info.slot_size);
	/* a part of the slot is fine (a policed claim maps it in parts), past its end is not */
	slot = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)info.slot_size - 4096);
	printf("the slot's last page: %s\n", slot == MAP_FAILED ? "REFUSED" : "mapped");
	if (slot == MAP_FAILED)
		failures++;
	else
		munmap(slot, 4096);
	expect_refused(fd, "two pages from the slot's last page", 8192,
		       (off_t)info.slot_size - 4096);
	fflush(stdout);
	if (argc > 3 && !strcmp(argv[2], "hold")) {
		printf("holding\n");
		fflush(stdout);
		sleep((unsigned)atoi(argv[3]));
	}
	close(fd);
	return failures ? 1 : 0;
}
