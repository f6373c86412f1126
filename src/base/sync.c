/* SPDX-License-Identifier: MIT */
/*
 * sync.c - see sync.h.
 */
#include <config.h>

#include <time.h>

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
