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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
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

int main(int argc, char **argv)
{
	const char *device = argc > 1 ? argv[1] : "/dev/ava";
	struct ava_slot_info info;
	int fd;
	void *slot;

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
