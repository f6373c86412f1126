/* SPDX-License-Identifier: MIT */
/*
 * metrics.h - request latency histograms, and the status file's figures
 * in the Prometheus text exposition format.
 *
 * The FUSE adapter times each request from its arrival to its reply and
 * adds it to the histogram of its class; the status file shows the
 * histograms as lines like any other figure, cumulative bucket counts by
 * upper bound in microseconds ("latency_read_le_100us: 42"), their sum in
 * microseconds and count.  objfs_prom_write() turns a whole status text
 * into Prometheus metrics (objfsctl metrics, and the daemon's -o
 * metrics_file= for node_exporter's textfile collector).
 */
#ifndef OBJFS_METRICS_H
#define OBJFS_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum objfs_op_class {
	OBJFS_OP_READ,
	OBJFS_OP_WRITE,
	OBJFS_OP_FSYNC,			/* fsync and fsyncdir */
	OBJFS_OP_META,			/* every other request with a reply */
	OBJFS_OP_NCLASS,
};

/* Upper bounds of the buckets in microseconds, 10 us to 10 s; one more
 * bucket (+Inf) follows them. */
#define OBJFS_LAT_NBOUNDS	19
extern const uint64_t objfs_lat_bounds_us[OBJFS_LAT_NBOUNDS];

struct objfs_latency {
	_Atomic uint64_t bucket[OBJFS_LAT_NBOUNDS + 1];	/* not cumulative */
	_Atomic uint64_t sum_ns;
	_Atomic uint64_t count;
};

/* The class of FUSE opcode @op; -1 for requests that get no reply
 * (FORGET, BATCH_FORGET, INTERRUPT) or are not the user's (INIT,
 * DESTROY). */
int objfs_op_class(uint32_t op);
/* Add one request of @ns nanoseconds.  Lock-free; any thread. */
void objfs_latency_observe(struct objfs_latency *h, uint64_t ns);
/* The status lines of the histograms @h[OBJFS_OP_NCLASS], appended at
 * @buf + *@len (at most @size in all). */
void objfs_latency_format(struct objfs_latency *h, char *buf, size_t size,
		size_t *len);

/* The value of line "@key: value" of status text @status, into @out;
 * NULL when there is no such line. */
const char *objfs_status_value(const char *status, const char *key,
		char *out, size_t size);

/* The Prometheus text of status text @status, onto @out: every figure,
 * counters as *_total, the histograms as
 * objfs_request_duration_seconds{op=...}.  0, or -errno of a write. */
int objfs_prom_write(const char *status, FILE *out);

#endif
