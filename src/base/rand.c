/* SPDX-License-Identifier: MIT */
/*
 * rand.c - see rand.h.
 */
#include <config.h>

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "src/base/rand.h"

uint64_t
objfs_random64(void)
{
	struct timespec ts;
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
		/* No generator (a very old kernel): the clock and the pid,
		 * which still tell two mounts apart. */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^
			(uint64_t)getpid() << 40;
	}
	return v ? v : 1;
}
