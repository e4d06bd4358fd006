/* SPDX-License-Identifier: MIT */
/*
 * run_as UID COMMAND [ARGS...]: runs COMMAND as user and group UID with no
 * supplementary groups (busybox's setpriv cannot change ids), so that the VM
 * tests can check what ava.ko shows an unprivileged user.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char *end = NULL;
	unsigned long id;

	if (argc < 3) {
		fprintf(stderr, "usage: run_as UID COMMAND [ARGS...]\n");
		return 2;
	}
	errno = 0;
	id = strtoul(argv[1], &end, 10);
	if (errno || *end || id > 65534) {
		fprintf(stderr, "run_as: bad uid '%s'\n", argv[1]);
		return 2;
	}
	if (setgroups(0, NULL) || setgid((gid_t)id) || setuid((uid_t)id)) {
		fprintf(stderr, "run_as: cannot become %lu: %s\n", id, strerror(errno));
		return 126;
	}
	execv(argv[2], argv + 2);
	fprintf(stderr, "run_as: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
