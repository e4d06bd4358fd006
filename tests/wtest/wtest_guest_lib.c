/* SPDX-License-Identifier: MIT */
/*
 * The guest library cava generates from wtest.spec.c, compiled as it is, and
 * the one thing of it the guest tests need that a guest library keeps to
 * itself: its ava_guest_spec, for ava_guest_shutdown() and for the tests that
 * drive the runtime's ava_call_* functions themselves.
 */
#include "wtest_guest.c"

const struct ava_guest_spec *wtest_guest_spec(void);

const struct ava_guest_spec *wtest_guest_spec(void)
{
	return &ava_wtest_guest_spec;
}
