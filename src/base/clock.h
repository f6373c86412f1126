/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the wall clock, for file times: seconds and nanoseconds, or
 * nanoseconds since the epoch; and the monotonic clock, for durations.
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

/* Nanoseconds of the monotonic clock, for durations and deadlines. */
static inline uint64_t
objfs_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
