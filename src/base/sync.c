/* SPDX-License-Identifier: MIT */
/*
 * sync.c - see sync.h.
 */
#include <config.h>

#include <errno.h>
#include <time.h>

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

/* The deadline of the call this thread serves, as a monotonic time; 0
 * when it has none. */
static int
deadline_ts(struct timespec *ts)
{
	uint64_t d = objfs_deadline();

	if (d == 0)
		return 0;
	ts->tv_sec = (time_t)(d / 1000000000u);
	ts->tv_nsec = (long)(d % 1000000000u);
	return 1;
}

int
objfs_lock_until(pthread_mutex_t *m)
{
	struct timespec ts;

	if (!deadline_ts(&ts)) {
		pthread_mutex_lock(m);
		return 0;
	}
	return pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts) == 0 ? 0 :
		-ETIMEDOUT;
}

int
objfs_rdlock_until(pthread_rwlock_t *rw)
{
	struct timespec ts;

	if (!deadline_ts(&ts)) {
		pthread_rwlock_rdlock(rw);
		return 0;
	}
	return pthread_rwlock_clockrdlock(rw, CLOCK_MONOTONIC, &ts) == 0 ? 0 :
		-ETIMEDOUT;
}

int
objfs_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu)
{
	struct timespec ts;

	if (!deadline_ts(&ts))
		return pthread_cond_wait(cv, mu);
	return pthread_cond_timedwait(cv, mu, &ts);
}
