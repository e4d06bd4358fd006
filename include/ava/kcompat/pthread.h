/* SPDX-License-Identifier: MIT */
/*
 * <pthread.h> for kernel builds (see README.md): mutexes only, so that spec
 * code guarding its tables with a statically initialized pthread_mutex_t
 * compiles unchanged into a kernel module.
 *
 * The kernel's struct mutex has no initializer that works without the
 * variable's name (its wait list points at itself), so this is a sleeping
 * lock of its own: one atomic word, waiters sleep on the kernel's hashed
 * variable wait queues (wait_var_event), uninterruptibly as
 * pthread_mutex_lock waits. Not recursive, no lockdep: hold it only around
 * short sections that make no calls to the host.
 */
#ifndef AVA_KCOMPAT_PTHREAD_H
#define AVA_KCOMPAT_PTHREAD_H

#ifndef __KERNEL__
#error "ava/kcompat is for kernel builds only"
#endif

#include <linux/atomic.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/wait_bit.h>

typedef struct {
	atomic_t locked;
} pthread_mutex_t;

typedef struct {
	int unused;
} pthread_mutexattr_t;

#define PTHREAD_MUTEX_INITIALIZER { ATOMIC_INIT(0) }

static inline int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
	(void)attr;
	atomic_set(&m->locked, 0);
	return 0;
}

static inline int pthread_mutex_destroy(pthread_mutex_t *m)
{
	(void)m;
	return 0;
}

static inline int pthread_mutex_trylock(pthread_mutex_t *m)
{
	return atomic_cmpxchg_acquire(&m->locked, 0, 1) == 0 ? 0 : EBUSY;
}

static inline int pthread_mutex_lock(pthread_mutex_t *m)
{
	might_sleep();
	wait_var_event(&m->locked, pthread_mutex_trylock(m) == 0);
	return 0;
}

static inline int pthread_mutex_unlock(pthread_mutex_t *m)
{
	atomic_set_release(&m->locked, 0);
	/* wake_up_var looks at the wait queue without a lock: order the store before it. */
	smp_mb();
	wake_up_var(&m->locked);
	return 0;
}

#endif /* AVA_KCOMPAT_PTHREAD_H */
