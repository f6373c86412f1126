/* SPDX-License-Identifier: MIT */
/*
 * radosflow - the remote benchmark's second baseline: what a C program
 * gets from librados's C API, the only one objfs (C) can use, beside
 * rados bench (C++, bufferlists handed over without a copy).  COUNT
 * objects of 1 MiB, "flow.<i>", written (write_full) or read (into the
 * program's own buffers) with INFLIGHT requests in flight, the oldest
 * waited for first; each request's bytes are the program's own, as
 * objfs's are.  Prints the rate in MB/s (10^6 bytes a second).
 *
 *	radosflow CONF POOL NAMESPACE write|read|clean COUNT INFLIGHT
 */
#include <rados/librados.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OBJ	(1u << 20)

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	rados_completion_t *c;
	rados_ioctx_t io;
	rados_t cl;
	char **buf, name[64];
	int count, w, mode;
	double t0, t;

	if (argc != 7 || (count = atoi(argv[5])) < 1 ||
	    (w = atoi(argv[6])) < 1) {
		fprintf(stderr, "usage: radosflow CONF POOL NAMESPACE "
			"write|read|clean COUNT INFLIGHT\n");
		return 2;
	}
	mode = strcmp(argv[4], "write") == 0 ? 'w' :
		strcmp(argv[4], "read") == 0 ? 'r' :
		strcmp(argv[4], "clean") == 0 ? 'c' : 0;
	if (!mode) {
		fprintf(stderr, "radosflow: %s: write, read or clean\n",
			argv[4]);
		return 2;
	}
	if (rados_create2(&cl, "ceph", "client.admin", 0) < 0 ||
	    rados_conf_read_file(cl, argv[1]) < 0 || rados_connect(cl) < 0 ||
	    rados_ioctx_create(cl, argv[2], &io) < 0) {
		fprintf(stderr, "radosflow: cannot reach the pool\n");
		return 1;
	}
	rados_ioctx_set_namespace(io, argv[3]);
	if (mode == 'c') {
		for (int i = 0; i < count; i++) {
			snprintf(name, sizeof(name), "flow.%d", i);
			(void)rados_remove(io, name);
		}
		rados_ioctx_destroy(io);
		rados_shutdown(cl);
		return 0;
	}
	c = calloc((size_t)w, sizeof(*c));
	buf = calloc((size_t)w, sizeof(*buf));
	if (!c || !buf)
		return 1;
	srand(1);
	for (int s = 0; s < w; s++) {
		buf[s] = malloc(OBJ);
		if (!buf[s])
			return 1;
		for (unsigned k = 0; k < OBJ; k++)
			buf[s][k] = (char)rand();
	}
	t0 = now();
	for (int i = 0; i < count + w; i++) {
		int s = i % w, rc;

		if (i >= w) {
			rados_aio_wait_for_complete(c[s]);
			rc = rados_aio_get_return_value(c[s]);
			rados_aio_release(c[s]);
			if (rc < 0 || (mode == 'r' && rc != (int)OBJ)) {
				fprintf(stderr, "radosflow: flow.%d: %d\n",
					i - w, rc);
				return 1;
			}
		}
		if (i >= count)
			continue;
		snprintf(name, sizeof(name), "flow.%d", i);
		if (rados_aio_create_completion2(NULL, NULL, &c[s]) < 0)
			return 1;
		if (mode == 'w') {
			buf[s][0] = (char)i;	/* each object its own bytes */
			rc = rados_aio_write_full(io, name, c[s], buf[s], OBJ);
		} else {
			rc = rados_aio_read(io, name, c[s], buf[s], OBJ, 0);
		}
		if (rc < 0) {
			fprintf(stderr, "radosflow: %s: %d\n", name, rc);
			return 1;
		}
	}
	t = now() - t0;
	printf("%.0f\n", (double)count * OBJ / t / 1e6);
	rados_ioctx_destroy(io);
	rados_shutdown(cl);
	return 0;
}
