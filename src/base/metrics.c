/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - latency histograms and the Prometheus text (metrics.h).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/metrics.h"

const uint64_t objfs_lat_bounds_us[OBJFS_LAT_NBOUNDS] = {
	10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000,
	100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
};

static const char *const class_names[OBJFS_OP_NCLASS] = {
	"read", "write", "fsync", "metadata",
};

int
objfs_op_class(uint32_t op)
{
	switch (op) {
	case 15:			/* READ */
		return OBJFS_OP_READ;
	case 16:			/* WRITE */
		return OBJFS_OP_WRITE;
	case 20:			/* FSYNC */
	case 30:			/* FSYNCDIR */
		return OBJFS_OP_FSYNC;
	case 2:				/* FORGET */
	case 26:			/* INIT */
	case 36:			/* INTERRUPT */
	case 38:			/* DESTROY */
	case 42:			/* BATCH_FORGET */
		return -1;
	default:
		return OBJFS_OP_META;
	}
}

void
objfs_latency_observe(struct objfs_latency *h, uint64_t ns)
{
	unsigned b = 0;

	while (b < OBJFS_LAT_NBOUNDS && ns > objfs_lat_bounds_us[b] * 1000)
		b++;
	atomic_fetch_add_explicit(&h->bucket[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

static void
put(char *buf, size_t size, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
put(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len >= size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len = *len + (size_t)n < size ? *len + (size_t)n : size - 1;
}

void
objfs_latency_format(struct objfs_latency *h, char *buf, size_t size,
		size_t *len)
{
	for (int c = 0; c < OBJFS_OP_NCLASS; c++) {
		uint64_t cum = 0;

		for (unsigned b = 0; b < OBJFS_LAT_NBOUNDS; b++) {
			cum += atomic_load_explicit(&h[c].bucket[b],
					memory_order_relaxed);
			put(buf, size, len, "latency_%s_le_%" PRIu64 "us: %"
				PRIu64 "\n", class_names[c],
				objfs_lat_bounds_us[b], cum);
		}
		put(buf, size, len, "latency_%s_sum_us: %" PRIu64 "\n"
			"latency_%s_count: %" PRIu64 "\n", class_names[c],
			atomic_load_explicit(&h[c].sum_ns,
				memory_order_relaxed) / 1000,
			class_names[c],
			atomic_load_explicit(&h[c].count, memory_order_relaxed));
	}
}

/* What each status figure is: its metric name, counter or gauge, help. */
static const struct figure {
	const char *key, *name, *type, *help;
} figures[] = {
	{ "arena_capacity_bytes", "objfs_arena_capacity_bytes", "gauge",
	  "Bytes the shared-memory arena can hold." },
	{ "arena_used_bytes", "objfs_arena_used_bytes", "gauge",
	  "Bytes of the arena in use." },
	{ "arena_high_watermark_bytes", "objfs_arena_high_watermark_bytes",
	  "gauge", "Arena use above which chunks are written out." },
	{ "arena_low_watermark_bytes", "objfs_arena_low_watermark_bytes",
	  "gauge", "Arena use the spiller brings it down to." },
	{ "chunk_size_bytes", "objfs_chunk_size_bytes", "gauge",
	  "Size of a chunk." },
	{ "resident_bytes", "objfs_resident_bytes", "gauge",
	  "Bytes of files held in the arena." },
	{ "dirty_bytes", "objfs_dirty_bytes", "gauge",
	  "Bytes in the arena not yet written to disk." },
	{ "disk_bytes", "objfs_disk_bytes", "gauge",
	  "Bytes of chunk copies recorded in the backing directory." },
	{ "disk_chunks", "objfs_disk_chunks", "gauge",
	  "Chunk copies recorded in the backing directory." },
	{ "disk_stored_bytes", "objfs_disk_stored_bytes", "gauge",
	  "Bytes of chunk copies on disk, a copy that files share counted once." },
	{ "backing_fs_bytes", "objfs_backing_fs_size_bytes", "gauge",
	  "Size of the backing filesystem." },
	{ "backing_fs_avail_bytes", "objfs_backing_fs_avail_bytes", "gauge",
	  "Bytes of the backing filesystem available to writers." },
	{ "written_out_chunks_total", "objfs_written_out_chunks_total",
	  "counter", "Chunks written out to the backing directory." },
	{ "written_out_bytes_total", "objfs_written_out_bytes_total",
	  "counter", "Bytes written out to the backing directory." },
	{ "restored_chunks", "objfs_restored_chunks_total", "counter",
	  "Chunks read back into the arena." },
	{ "restored_bytes", "objfs_restored_bytes_total", "counter",
	  "Bytes read back into the arena." },
	{ "direct_read_chunks", "objfs_direct_read_chunks_total", "counter",
	  "Spilled chunks served from disk without restoring them." },
	{ "part_reads", "objfs_part_reads_total", "counter",
	  "Parts of spilled chunks read from disk alone." },
	{ "subblock_writeouts", "objfs_subblock_writeouts_total", "counter",
	  "Chunks written out as a few changed sub-blocks." },
	{ "shared_chunks", "objfs_shared_chunks", "gauge",
	  "Chunk copies on disk that two or more file chunks use now." },
	{ "shared_chunks_total", "objfs_shared_chunks_total", "counter",
	  "Chunks that copies shared instead of copying their bytes." },
	{ "dedup_chunks_total", "objfs_dedup_chunks_total", "counter",
	  "Chunks written out as a copy with the same bytes already on disk." },
	{ "made_durable_bytes_total", "objfs_made_durable_bytes_total",
	  "counter", "Bytes write-out made durable: written, or found on disk "
	  "already (dedup)." },
	{ "evicted_bytes", "objfs_evicted_bytes_total", "counter",
	  "Clean bytes dropped from the arena without writing." },
	{ "writer_waits", "objfs_writer_waits_total", "counter",
	  "Times a writer waited for room in the arena." },
	{ "checksum_failures", "objfs_checksum_failures_total", "counter",
	  "Chunk copies that failed their checksum." },
	{ "cached_inodes", "objfs_cached_inodes", "gauge",
	  "Inodes held in memory." },
	/* The remote tier (-o remote=), when there is one. */
	{ "remote_reachable", "objfs_remote_reachable", "gauge",
	  "1 while the Ceph cluster answers, 0 once an operation did not." },
	{ "remote_unreachable_s", "objfs_remote_unreachable_seconds", "gauge",
	  "Seconds since the cluster stopped answering (0: it answers)." },
	{ "remote_pool_full", "objfs_remote_pool_full", "gauge",
	  "1 while the pool refuses writes for want of room (ENOSPC, EDQUOT)." },
	{ "remote_commits_waiting", "objfs_remote_commits_waiting", "gauge",
	  "Index commits not yet in the pool's log." },
	{ "remote_log_records", "objfs_remote_log_records_total", "counter",
	  "Log records put in the pool." },
	{ "remote_log_bytes", "objfs_remote_log_bytes_total", "counter",
	  "Bytes of log records put in the pool." },
	{ "remote_log_ms_avg", "objfs_remote_log_milliseconds_avg", "gauge",
	  "Mean time of a log record's put." },
	{ "remote_upload_batches", "objfs_remote_upload_batches_total",
	  "counter", "Write-out batches sent to the pool." },
	{ "remote_upload_bytes", "objfs_remote_upload_bytes_total", "counter",
	  "Chunk bytes sent to the pool." },
	{ "remote_upload_ms_avg", "objfs_remote_upload_milliseconds_avg",
	  "gauge", "Mean time of a write-out batch's puts." },
	{ "remote_dedup_chunks", "objfs_remote_dedup_chunks_total", "counter",
	  "Chunks the pool held already: nothing sent." },
	{ "remote_fetch_chunks", "objfs_remote_fetch_chunks_total", "counter",
	  "Chunks read from the pool." },
	{ "remote_fetch_bytes", "objfs_remote_fetch_bytes_total", "counter",
	  "Bytes read from the pool." },
	{ "remote_fetch_ms_avg", "objfs_remote_fetch_milliseconds_avg", "gauge",
	  "Mean time of a chunk's fetch." },
	{ "remote_gc_removed_chunks", "objfs_remote_gc_removed_chunks_total",
	  "counter", "Chunks the collector removed from the pool." },
	{ "remote_gc_removed_bytes", "objfs_remote_gc_removed_bytes_total",
	  "counter", "Bytes of chunks the collector removed from the pool." },
	/* An S3 bucket (-o remote=s3://); requests by method below. */
	{ "remote_s3_retries", "objfs_s3_retries_total", "counter",
	  "S3 requests sent again (no answer, 429, 5xx)." },
	{ "remote_s3_failures", "objfs_s3_failures_total", "counter",
	  "S3 requests that failed for good." },
	{ "remote_s3_bytes_up", "objfs_s3_sent_bytes_total", "counter",
	  "Bytes of request bodies sent to S3." },
	{ "remote_s3_bytes_down", "objfs_s3_received_bytes_total", "counter",
	  "Bytes of answer bodies received from S3." },
};

/* The S3 requests by method (status keys remote_s3_requests_<method>):
 * one counter with a label, so that requests per GiB can be read off. */
static void
prom_s3_requests(const char *status, FILE *out)
{
	static const char *const methods[] = {
		"get", "put", "head", "delete", "list", "post",
	};
	char key[64], v[64];
	int declared = 0;

	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		snprintf(key, sizeof(key), "remote_s3_requests_%s", methods[i]);
		if (!objfs_status_value(status, key, v, sizeof(v)))
			continue;
		if (!declared++)
			fprintf(out, "# HELP objfs_s3_requests_total S3 requests "
				"sent, by method (a list is a GET).\n"
				"# TYPE objfs_s3_requests_total counter\n");
		fprintf(out, "objfs_s3_requests_total{method=\"%s\"} %s\n",
			methods[i], v);
	}
}

const char *
objfs_status_value(const char *status, const char *key, char *out,
		size_t size)
{
	size_t k = strlen(key);

	for (const char *p = status; p && *p;
	     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, key, k) == 0 && p[k] == ':' && p[k + 1] == ' ') {
			size_t n = strcspn(p + k + 2, "\n");

			if (n >= size)
				n = size - 1;
			memcpy(out, p + k + 2, n);
			out[n] = '\0';
			return out;
		}
	return NULL;
}

int
objfs_prom_write(const char *status, FILE *out)
{
	char v[64], key[64];

	for (size_t i = 0; i < sizeof(figures) / sizeof(figures[0]); i++) {
		const struct figure *f = &figures[i];

		if (!objfs_status_value(status, f->key, v, sizeof(v)))
			continue;
		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", f->name,
			f->help, f->name, f->type, f->name, v);
	}
	prom_s3_requests(status, out);
	fprintf(out, "# HELP objfs_request_duration_seconds Time from a FUSE "
		"request's arrival to its reply.\n"
		"# TYPE objfs_request_duration_seconds histogram\n");
	for (int c = 0; c < OBJFS_OP_NCLASS; c++) {
		const char *op = class_names[c];

		for (unsigned b = 0; b < OBJFS_LAT_NBOUNDS; b++) {
			snprintf(key, sizeof(key), "latency_%s_le_%" PRIu64 "us",
				op, objfs_lat_bounds_us[b]);
			if (!objfs_status_value(status, key, v, sizeof(v)))
				break;
			fprintf(out, "objfs_request_duration_seconds_bucket"
				"{op=\"%s\",le=\"%g\"} %s\n", op,
				objfs_lat_bounds_us[b] / 1e6, v);
		}
		snprintf(key, sizeof(key), "latency_%s_count", op);
		if (!objfs_status_value(status, key, v, sizeof(v)))
			continue;
		fprintf(out, "objfs_request_duration_seconds_bucket"
			"{op=\"%s\",le=\"+Inf\"} %s\n"
			"objfs_request_duration_seconds_count{op=\"%s\"} %s\n",
			op, v, op, v);
		snprintf(key, sizeof(key), "latency_%s_sum_us", op);
		if (objfs_status_value(status, key, v, sizeof(v)))
			fprintf(out, "objfs_request_duration_seconds_sum"
				"{op=\"%s\"} %.6f\n", op,
				strtoull(v, NULL, 10) / 1e6);
	}
	return ferror(out) ? -EIO : 0;
}
