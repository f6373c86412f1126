/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the wall clock, for file times: seconds and nanoseconds, or
 * nanoseconds since the epoch.
 */
#ifndef OBJFS_BASE_CLOCK_H
#define OBJFS_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline void
objfs_time_now(int64_t *sec, uint32_t *nsec)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	*sec = ts.tv_sec;
	*nsec = (uint32_t)ts.tv_nsec;
}

static inline int64_t
objfs_time_ns(void)
{
	int64_t sec;
	uint32_t nsec;

	objfs_time_now(&sec, &nsec);
	return sec * 1000000000ll + nsec;
}

#endif
