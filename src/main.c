/* SPDX-License-Identifier: MIT */
/*
 * main.c - objfs [options] [SOURCE] MOUNTPOINT
 *
 * Has the command line parsed (cmdline.c: wrong or impossible options
 * refused before anything is mounted, one line on stderr, exit status 2),
 * opens the store, mounts, serves, and on unmount or SIGTERM writes every
 * object out before it exits.  With cmdline.c, the only src/ files that
 * include fuse/ops.h.
 *
 * Exit status: 0 after a clean unmount, 1 when the mount or the final
 * write-out failed, 2 when the command line was refused.
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fuse/ops.h"
#include "src/base/log.h"
#include "src/base/metrics.h"
#include "src/store.h"
#include "src/tier.h"
#include "src/base/units.h"
#include "src/cmdline.h"

#define METRICS_EVERY_S	15

/* -o metrics_file=: the Prometheus text of the status file, every
 * METRICS_EVERY_S seconds and once more at unmount, each time into a new
 * file renamed over the old one, so that a reader never sees half. */
static struct {
	const char *path;
	struct objfs_store *store;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int stop, running;
} metrics = { .lock = PTHREAD_MUTEX_INITIALIZER,
	      .cv = PTHREAD_COND_INITIALIZER };

static int
write_metrics(void)
{
	static char text[OBJFS_STATUS_MAX];
	char tmp[PATH_MAX + 16];
	size_t n;
	FILE *f;
	int rc, fd;

	rc = objfs_store_status_text(metrics.store, text, sizeof(text), &n);
	if (rc < 0)
		return rc;
	/* Made anew beside its target, never through a link planted there
	 * (the directory is often the exporter's to write: issue 48); the
	 * rename then replaces the target itself, a link there included. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", metrics.path);
	if (unlink(tmp) < 0 && errno != ENOENT)
		return -errno;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0644);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		rc = -errno;
		close(fd);
		unlink(tmp);
		return rc;
	}
	rc = objfs_prom_write(text, f);
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, metrics.path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

static void *
metrics_thread(void *arg)
{
	struct timespec ts;
	int warned = 0, rc;

	(void)arg;
	pthread_mutex_lock(&metrics.lock);
	while (!metrics.stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += METRICS_EVERY_S;
		pthread_cond_timedwait(&metrics.cv, &metrics.lock, &ts);
		pthread_mutex_unlock(&metrics.lock);
		rc = write_metrics();
		if (rc < 0 && !warned++)
			objfs_log(OBJFS_LOG_WARNING, "metrics_file %s: %s",
				metrics.path, strerror(-rc));
		pthread_mutex_lock(&metrics.lock);
	}
	pthread_mutex_unlock(&metrics.lock);
	return NULL;
}

/* Refused at mount when the first write fails: a typo in the path must
 * not go unnoticed. */
static int
start_metrics(const char *path, struct objfs_store *s)
{
	int rc;

	metrics.path = path;
	metrics.store = s;
	rc = write_metrics();
	if (rc == 0 && pthread_create(&metrics.thread, NULL, metrics_thread,
			NULL) != 0)
		rc = -EAGAIN;
	metrics.running = rc == 0;
	return rc;
}

static void
stop_metrics(void)
{
	if (!metrics.running)
		return;
	pthread_mutex_lock(&metrics.lock);
	metrics.stop = 1;
	pthread_cond_signal(&metrics.cv);
	pthread_mutex_unlock(&metrics.lock);
	pthread_join(metrics.thread, NULL);
	metrics.running = 0;
}

static void
check_mountpoint(const struct opts *o)
{
	struct stat st;

	if (stat(o->mountpoint, &st) < 0)
		objfs_refuse("mountpoint %s: %s", o->mountpoint, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		objfs_refuse("mountpoint %s: not a directory", o->mountpoint);
}

static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int
main(int argc, char **argv)
{
	struct objfs_store_config cfg;
	struct objfs_store *store;
	struct objfs_fuse *fuse;
	struct opts o = { .max_threads = 16, .direct_io = OBJFS_DIO_AUTO,
			  .uring = 1,
			  .fuse_pt = 1,
			  .remote_compact = -1,
			  .remote_batch = -1,
			  .readahead = 1 << 20 };
	struct objfs_fuse_opts fo;
	const char *msg;
	long holder = 0;
	char a[32];
	int rc, status = 0;

	objfs_log_crash_traces();
	objfs_parse_args(&o, argc, argv);
	if (o.debug)
		objfs_log_max = OBJFS_LOG_DEBUG;
	check_mountpoint(&o);
	objfs_choose_arena(&o);
	objfs_choose_data_dir(&o);
	fo.debug = o.debug;
	fo.direct_io = (enum objfs_direct_io)o.direct_io;
	fo.readahead_kb = (unsigned)(o.readahead >> 10);
	fo.uring = o.uring;
	fo.passthrough = o.fuse_pt;
	fo.threads = o.max_threads;
	/* Without allow_other a mount by root lets in only processes whose
	 * ids are all 0, which the kernel's checks would always pass: they
	 * would only cost a GETATTR round trip per directory change. */
	fo.kernel_perms = o.kernel_perms || o.shared || geteuid() != 0;
	if (objfs_fuse_new(o.passthrough ? o.passthrough : "", o.source,
			&fo, &fuse) < 0)
		exit(2);	/* libfuse has named the option it refused */
	if (!o.foreground)
		objfs_detach();

	memset(&cfg, 0, sizeof(cfg));
	cfg.data_dir = o.data_dir;
	cfg.arena_size = o.arena;
	cfg.chunk_size = o.chunk;
	cfg.prefault = o.prefault;
	cfg.keep_arena = o.keep_arena;
	cfg.no_dedup = o.no_dedup;
	cfg.arena_dir = o.arena_dir;
	if (o.remote) {
#ifdef HAVE_REMOTE
		cfg.tier_ops = &objfs_tier_rados;
		/* librados copies every put into a buffer of its own, and
		 * fetches land in ours: chunk-sized blocks allocated and
		 * freed hundreds of times a second.  Served from the heap
		 * and kept there, rather than mmap'd fresh and unmapped
		 * again each time, they are not zeroed page by page by the
		 * kernel (8% of the daemon's CPU in an upload, measured with
		 * perf; doc/benchmarks.md).  What stays is bounded by the
		 * requests in flight (about a hundred chunks at most). */
		mallopt(M_MMAP_THRESHOLD, 32 << 20);
		mallopt(M_TRIM_THRESHOLD, 128 << 20);
#else
		objfs_refuse("remote=%s: this objfs was built without librados "
			"and without libcurl (install librados-dev, or "
			"libcurl4-openssl-dev and libexpat1-dev, configure and "
			"build again)", o.remote);
#endif
		cfg.remote = o.remote;
		cfg.remote_conf = o.remote_conf;
		cfg.remote_id = o.remote_id;
		cfg.remote_endpoint = o.remote_endpoint;
		cfg.remote_addressing = o.remote_addressing;
		cfg.remote_insecure = o.remote_insecure;
		if (strncmp(o.remote, "s3://", 5) == 0 && (o.remote_conf ||
		    o.remote_id))
			objfs_refuse("remote_conf and remote_id are for a Ceph pool "
				"(remote=rados:...); an S3 bucket reads the AWS "
				"settings (AWS_* and ~/.aws)");
		if (strncmp(o.remote, "s3://", 5) == 0 && o.remote_shared)
			objfs_refuse("shared: not on S3 (remote=%s): many nodes on one "
				"namespace need the pool's watch, notify and omap, "
				"which S3 has not; one mount per bucket prefix",
				o.remote);
		if (strncmp(o.remote, "rados:", 6) == 0 &&
		    (o.remote_endpoint || o.remote_addressing ||
		     o.remote_insecure))
			objfs_refuse("remote_endpoint, remote_addressing and "
				"remote_insecure are for an S3 bucket "
				"(remote=s3://...)");
		cfg.remote_timeout = o.remote_timeout;
		cfg.remote_hold = o.remote_hold;
		cfg.remote_shared = o.remote_shared;
		cfg.remote_lease = o.remote_lease;
		cfg.remote_compact = o.remote_compact;
		cfg.remote_batch_ms = o.remote_batch < 0 ? 0 : o.remote_batch;
		if (!o.remote_shared && (o.remote_lease ||
		    o.remote_compact >= 0 || o.remote_batch >= 0))
			objfs_refuse("%s= is for shared mounts (-o shared)",
				o.remote_lease ? "remote_lease" :
				o.remote_batch >= 0 ? "remote_batch" :
				"remote_compact");
	} else if (o.remote_conf || o.remote_id || o.remote_timeout ||
		   o.remote_hold || o.remote_shared || o.remote_lease ||
		   o.remote_compact >= 0 || o.remote_batch >= 0 ||
		   o.remote_endpoint || o.remote_addressing ||
		   o.remote_insecure) {
		objfs_refuse("remote_conf, remote_id, remote_endpoint, "
			"remote_addressing, remote_insecure, remote_timeout, "
			"remote_hold, shared, "
			"remote_lease, remote_batch and remote_compact need "
			"remote=rados:POOL or remote=s3://BUCKET");
	}
	{
		unsigned hi = o.spill_high ? o.spill_high : 90;
		unsigned lo = o.spill_low ? o.spill_low : 70;

		if (lo >= hi)
			objfs_refuse("spill_low=%u must be below spill_high=%u", lo, hi);
		cfg.spill_high = hi;
		cfg.sealed_max = o.sealed_max;
		cfg.sealed_small = o.sealed_small;
		cfg.spill_low = lo;
	}
	rc = objfs_store_open(&cfg, &store, &msg, &holder);
	if (rc < 0) {
		objfs_fuse_destroy(fuse);
		if (rc == -EBUSY && holder > 0)
			objfs_refuse("%s: %s (pid %ld)", o.data_dir, msg, holder);
		if (rc == -EINVAL && msg)	/* the message says it all */
			objfs_refuse("%s: %s", o.data_dir, msg);
		objfs_refuse("%s: %s: %s", o.data_dir, msg ? msg : "cannot open",
			strerror(-rc));
	}
	raise_fd_limit();
	if (o.metrics_file && (rc = start_metrics(o.metrics_file, store)) < 0) {
		objfs_store_close(store);
		objfs_fuse_destroy(fuse);
		objfs_refuse("metrics_file=%s: cannot write it: %s", o.metrics_file,
			strerror(-rc));
	}
	rc = objfs_fuse_mount(fuse, store, o.mountpoint);
	if (rc < 0) {
		objfs_log(OBJFS_LOG_ERR, "cannot mount on %s", o.mountpoint);
		stop_metrics();
		objfs_store_close(store);
		objfs_fuse_destroy(fuse);
		objfs_report_to_parent(1);
		return 1;
	}
	objfs_detached(&o);
	/* (After detaching: the first line of a log file or syslog.) */
	objfs_format_size(o.arena, a, sizeof(a));
	objfs_log(OBJFS_LOG_INFO, "mounted %s: arena %s, chunk %u KiB, data %s",
		o.mountpoint, a, objfs_store_chunk_size(store) >> 10, o.data_dir);
	/* A signal (SIGTERM, SIGINT, SIGHUP) ends the loop with its number:
	 * that is a requested, clean stop.  Negative is a failure. */
	rc = objfs_fuse_loop(fuse, o.max_threads);
	if (rc < 0) {
		objfs_log(OBJFS_LOG_ERR, "the request loop failed (%d)", rc);
		objfs_store_note_failure(store);
		status = 1;
	}
	objfs_fuse_destroy(fuse);	/* unmount: no request can arrive now */
	stop_metrics();		/* its last write: the figures at unmount */
	if (objfs_store_close(store) < 0)
		status = 1;
	else
		objfs_log(OBJFS_LOG_INFO, "unmounted %s; all data written to %s",
			o.mountpoint, o.data_dir);
	free(o.data_dir);
	free(o.passthrough);
	free(o.log);
	free(o.metrics_file);
	free(o.remote);
	free(o.remote_conf);
	free(o.remote_id);
	free(o.remote_endpoint);
	free(o.remote_addressing);
	free(o.mountpoint_abs);
	free(o.arena_dir);
	return status;
}
