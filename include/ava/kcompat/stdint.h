/* SPDX-License-Identifier: MIT */
/* <stdint.h> for kernel builds (see README.md): the kernel has most of it. */
#ifndef AVA_KCOMPAT_STDINT_H
#define AVA_KCOMPAT_STDINT_H

#ifndef __KERNEL__
#error "ava/kcompat is for kernel builds only"
#endif

#include <linux/types.h>
#include <linux/limits.h>

/* linux/types.h has uintptr_t but not these. */
typedef long intptr_t;
typedef long long intmax_t;
typedef unsigned long long uintmax_t;

#define INT8_MIN S8_MIN
#define INT8_MAX S8_MAX
#define UINT8_MAX U8_MAX
#define INT16_MIN S16_MIN
#define INT16_MAX S16_MAX
#define UINT16_MAX U16_MAX
#define INT32_MIN S32_MIN
#define INT32_MAX S32_MAX
#define UINT32_MAX U32_MAX
#define INT64_MIN S64_MIN
#define INT64_MAX S64_MAX
#define UINT64_MAX U64_MAX
#define INTPTR_MIN LONG_MIN
#define INTPTR_MAX LONG_MAX
#define UINTPTR_MAX ULONG_MAX
#define INTMAX_MIN S64_MIN
#define INTMAX_MAX S64_MAX
#define UINTMAX_MAX U64_MAX

#define INT8_C(v) v
#define INT16_C(v) v
#define INT32_C(v) v
#define INT64_C(v) v##LL
#define UINT8_C(v) v
#define UINT16_C(v) v
#define UINT32_C(v) v##U
#define UINT64_C(v) v##ULL
#define INTMAX_C(v) v##LL
#define UINTMAX_C(v) v##ULL

#endif /* AVA_KCOMPAT_STDINT_H */
