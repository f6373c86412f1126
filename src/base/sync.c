/* SPDX-License-Identifier: MIT */
/*
 * sync.c - see sync.h.
 */
#include <config.h>

#include <errno.h>
#include <time.h>

#include "src/base/clock.h"
#include "src/base/deadline.h"
#include "src/base/sync.h"

int
objfs_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t at;
	int rc;

	rc = pthread_condattr_init(&at);
	if (rc)
		return rc;
	rc = pthread_condattr_setclock(&at, CLOCK_MONOTONIC);
	if (rc == 0)
		rc = pthread_cond_init(cv, &at);
	pthread_condattr_destroy(&at);
	return rc;
}

int
objfs_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return pthread_cond_timedwait(cv, mu, &ts);
}

/* The deadline of the call this thread serves on @clk's clock (what is
 * left of it from now, for the wall clock: the locks' timed waits run on
 * it, and ThreadSanitizer knows those, not pthread_mutex_clocklock); 0
 * when it has none. */
static int
deadline_ts(clockid_t clk, struct timespec *ts)
{
	uint64_t d = objfs_deadline(), now, at;

	if (d == 0)
		return 0;
	now = objfs_mono_ns();
	at = d;
	if (clk != CLOCK_MONOTONIC) {
		struct timespec r;

		clock_gettime(clk, &r);
		at = (uint64_t)r.tv_sec * 1000000000u + (uint64_t)r.tv_nsec +
			(d > now ? d - now : 0);
	}
	ts->tv_sec = (time_t)(at / 1000000000u);
	ts->tv_nsec = (long)(at % 1000000000u);
	return 1;
}

int
objfs_lock_until(pthread_mutex_t *m)
{
	struct timespec ts;

	if (!deadline_ts(CLOCK_REALTIME, &ts)) {
		pthread_mutex_lock(m);
		return 0;
	}
	return pthread_mutex_timedlock(m, &ts) == 0 ? 0 : -ETIMEDOUT;
}

int
objfs_rdlock_until(pthread_rwlock_t *rw)
{
	struct timespec ts;

	if (!deadline_ts(CLOCK_REALTIME, &ts)) {
		pthread_rwlock_rdlock(rw);
		return 0;
	}
	return pthread_rwlock_timedrdlock(rw, &ts) == 0 ? 0 : -ETIMEDOUT;
}

int
objfs_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu)
{
	struct timespec ts;

	if (!deadline_ts(CLOCK_MONOTONIC, &ts))
		return pthread_cond_wait(cv, mu);
	return pthread_cond_timedwait(cv, mu, &ts);
}
