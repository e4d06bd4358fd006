/* SPDX-License-Identifier: MIT */
/*
 * demo_crash_app: calls demo_crash(). Natively the process dies by SIGSEGV.
 * Under `ava run` only the worker dies: the call fails in the guest library,
 * this program keeps running, and a later call reports the lost worker
 * instead of hanging. Exits 3 when demo_crash returned.
 */
#include <stdint.h>
#include <stdio.h>

#include "demo.h"

int main(void)
{
	demo_obj obj = NULL;
	demo_status status = demo_obj_create("doomed", 16, &obj);
	printf("create doomed: status %d (%s)\n", (int)status, demo_status_string(status));
	printf("calling demo_crash\n");
	/* Natively nothing after this runs, and stdio buffers die with the process. */
	fflush(stdout);
	demo_crash();
	printf("after crash: demo_crash returned\n");
	printf("version after crash: %d\n", (int)demo_version());
	return 3;
}
