/* SPDX-License-Identifier: MIT */
/* <stddef.h> for kernel builds (see README.md): size_t, ptrdiff_t, NULL, offsetof. */
#ifndef AVA_KCOMPAT_STDDEF_H
#define AVA_KCOMPAT_STDDEF_H

#ifndef __KERNEL__
#error "ava/kcompat is for kernel builds only"
#endif

#include <linux/types.h>
#include <linux/stddef.h>

#endif /* AVA_KCOMPAT_STDDEF_H */
