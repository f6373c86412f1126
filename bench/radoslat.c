/* SPDX-License-Identifier: MIT */
/*
 * radoslat - the baseline of the remote benchmark's fsync latency: @n
 * write_full calls of 4 KiB to one object through librados, one at a time,
 * as a program that keeps its connection (the rados CLI would add its own
 * start-up to each).  Prints the median and the 99th percentile in
 * microseconds.
 *
 *	radoslat CONF POOL NAMESPACE N
 */
#include <rados/librados.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	rados_t c;
	rados_ioctx_t io;
	char buf[4096];
	uint64_t *us;
	int n;

	if (argc != 5 || (n = atoi(argv[4])) < 1) {
		fprintf(stderr, "usage: radoslat CONF POOL NAMESPACE N\n");
		return 2;
	}
	us = calloc((size_t)n, sizeof(*us));
	if (!us || rados_create2(&c, "ceph", "client.admin", 0) < 0 ||
	    rados_conf_read_file(c, argv[1]) < 0 || rados_connect(c) < 0 ||
	    rados_ioctx_create(c, argv[2], &io) < 0) {
		fprintf(stderr, "radoslat: cannot reach the pool\n");
		return 1;
	}
	rados_ioctx_set_namespace(io, argv[3]);
	memset(buf, 'x', sizeof(buf));
	for (int i = 0; i < n; i++) {
		struct timespec a, b;

		buf[0] = (char)i;
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (rados_write_full(io, "radoslat", buf, sizeof(buf)) < 0) {
			fprintf(stderr, "radoslat: write_full failed\n");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		us[i] = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000u +
			(uint64_t)(b.tv_nsec - a.tv_nsec) / 1000u;
	}
	(void)rados_remove(io, "radoslat");
	qsort(us, (size_t)n, sizeof(*us), cmp);
	printf("%llu %llu\n", (unsigned long long)us[n / 2],
		(unsigned long long)us[(size_t)n * 99 / 100]);
	rados_ioctx_destroy(io);
	rados_shutdown(c);
	free(us);
	return 0;
}
