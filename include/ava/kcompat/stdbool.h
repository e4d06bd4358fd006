/* SPDX-License-Identifier: MIT */
/* <stdbool.h> for kernel builds (see README.md): the kernel defines bool, true, false. */
#ifndef AVA_KCOMPAT_STDBOOL_H
#define AVA_KCOMPAT_STDBOOL_H

#ifndef __KERNEL__
#error "ava/kcompat is for kernel builds only"
#endif

#include <linux/types.h>
#include <linux/stddef.h>

#endif /* AVA_KCOMPAT_STDBOOL_H */
