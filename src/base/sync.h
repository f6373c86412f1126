/* SPDX-License-Identifier: MIT */
/*
 * sync.h - condition variables for the store's threads, and mutexes that
 * know their holder.  Timed waits run on CLOCK_MONOTONIC, so that a step
 * of the wall clock (NTP, an operator, a VM resumed) neither stretches a
 * one-second tick into hours nor turns it into a busy loop.
 */
#ifndef OBJFS_SYNC_H
#define OBJFS_SYNC_H

#include <assert.h>
#include <pthread.h>

/* Initialise @cv for objfs_cond_wait_ms.  0 or an errno value. */
int objfs_cond_init(pthread_cond_t *cv);

/* Wait on @cv, holding @mu, for at most @ms milliseconds.  0 when woken
 * (or spuriously), ETIMEDOUT when the time ran out. */
int objfs_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, unsigned ms);

/* Waits that end no later than the deadline of the system call the
 * thread serves (deadline.h), and are plain waits on a thread with
 * none.  Lock @m (or @rw for reading): 0, or -ETIMEDOUT when the
 * deadline came first. */
int objfs_lock_until(pthread_mutex_t *m);
int objfs_rdlock_until(pthread_rwlock_t *rw);
/* Wait on @cv (from objfs_cond_init), holding @mu: 0 when woken (or
 * spuriously), ETIMEDOUT when the deadline came. */
int objfs_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu);

/* A mutex that records its holder, so that a function that needs it held
 * can assert so (objfs_mutex_assert_held). */
struct objfs_mutex {
	pthread_mutex_t m;
	pthread_t holder;		/* protected by m */
	int held;			/* protected by m */
};

static inline int
objfs_mutex_init(struct objfs_mutex *x)
{
	x->held = 0;
	return pthread_mutex_init(&x->m, NULL);
}

static inline void
objfs_mutex_destroy(struct objfs_mutex *x)
{
	pthread_mutex_destroy(&x->m);
}

static inline void
objfs_mutex_lock(struct objfs_mutex *x)
{
	pthread_mutex_lock(&x->m);
	x->holder = pthread_self();
	x->held = 1;
}

static inline void
objfs_mutex_unlock(struct objfs_mutex *x)
{
	x->held = 0;
	pthread_mutex_unlock(&x->m);
}

/* Wait on @cv, which goes with @x (held). */
static inline void
objfs_mutex_wait(struct objfs_mutex *x, pthread_cond_t *cv)
{
	x->held = 0;
	pthread_cond_wait(cv, &x->m);
	x->holder = pthread_self();
	x->held = 1;
}

/* Only the holder's answer is meaningful: it wrote both fields. */
#define objfs_mutex_assert_held(x) \
	assert((x)->held && pthread_equal((x)->holder, pthread_self()))

#endif
