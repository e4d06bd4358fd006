/* SPDX-License-Identifier: MIT */
/* <string.h> for kernel builds (see README.md): memcpy, memset, strlen, ... */
#ifndef AVA_KCOMPAT_STRING_H
#define AVA_KCOMPAT_STRING_H

#ifndef __KERNEL__
#error "ava/kcompat is for kernel builds only"
#endif

#include <linux/string.h>

#endif /* AVA_KCOMPAT_STRING_H */
