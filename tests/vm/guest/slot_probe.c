/* SPDX-License-Identifier: MIT */
/*
 * slot_probe: runs in the test guest against /dev/ava (ava.ko). Claims a
 * slot, checks that mmap gives this slot (or a part) and nothing beyond it, and with
 * `hold SECONDS` keeps the slot open that long (for rmmod and concurrency
 * checks). Prints "slot N" first, then one line per mmap check; exit status
 * 0 when every check held.
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

int main(int argc, char **argv)
{
	const char *device = argc > 1 ? argv[1] : "/dev/ava";
	struct ava_slot_info info;
	int fd = open(device, O_RDWR | O_CLOEXEC);
	void *slot;

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
