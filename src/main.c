/* SPDX-License-Identifier: MIT */
/*
 * main.c - objfs [options] [SOURCE] MOUNTPOINT
 *
 * Parses the command line, refuses wrong or impossible options before
 * anything is mounted (one line on stderr, exit status 2), opens the store,
 * mounts, serves, and on unmount or SIGTERM writes every object out before
 * it exits.  The only src/ file that includes fuse/ops.h.
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

#define MIN_ARENA	(16ull << 20)
#define MIN_CHUNK	(8u << 10)
#define MAX_CHUNK	(256u << 20)

struct opts {
	const char *mountpoint;
	const char *source;
	char *data_dir;
	uint64_t arena;
	uint32_t chunk;
	int foreground;
	int debug;
	int prefault;
	int keep_arena;			/* -o keep_arena */
	int no_dedup;			/* -o dedup=off */
	char *arena_dir;		/* -o arena_dir= */
	int direct_io;			/* enum objfs_direct_io */
	uint64_t readahead;
	unsigned spill_high;
	unsigned spill_low;
	unsigned max_threads;
	int uring;			/* -o io_uring: 0 off, 1 auto, 2 idle */
	int fuse_pt;			/* -o passthrough: 0 off, 1 auto */
	unsigned sealed_max;		/* -o sealed_max=PCT */
	int sealed_small;		/* -o sealed_pages=small */
	int kernel_perms;		/* -o default_permissions */
	int shared;			/* -o allow_other or allow_root */
	char *log;			/* -o log=: NULL auto, "syslog", a path */
	char *metrics_file;		/* -o metrics_file= */
	char *remote;			/* -o remote=rados:POOL[/NS] */
	char *remote_conf;		/* -o remote_conf= */
	char *remote_id;		/* -o remote_id= */
	unsigned remote_timeout;	/* -o remote_timeout=SECONDS */
	unsigned remote_hold;		/* -o remote_hold=SECONDS */
	int remote_shared;		/* -o shared */
	unsigned remote_lease;		/* -o remote_lease=SECONDS */
	long remote_compact;		/* -o remote_compact=RECORDS, -1: unset */
	long remote_batch;		/* -o remote_batch=MS, -1: unset */
	char *passthrough;	/* options for libfuse and the kernel */
	size_t passlen;
};

/* Write end of the pipe to the waiting parent, once detached (-1: none). */
static int parent_fd = -1;

/* Tell the parent, which still holds the terminal, how mounting went. */
static void
report_to_parent(int status)
{
	unsigned char b = (unsigned char)status;

	if (parent_fd < 0)
		return;
	if (write(parent_fd, &b, 1) != 1)
		objfs_log(OBJFS_LOG_WARNING, "cannot report to the parent: %m");
	close(parent_fd);
	parent_fd = -1;
}

static void __attribute__((noreturn, format(printf, 1, 2)))
refuse(const char *fmt, ...)
{
	va_list ap;

	fputs("objfs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	report_to_parent(2);
	exit(2);
}

/*
 * Detach before anything is opened: LMDB must not be used across fork(),
 * and threads do not survive it.  The parent waits until the child has
 * mounted (or failed, having printed why) and exits with its status.
 */
static void
detach(void)
{
	unsigned char b;
	int pfd[2];
	pid_t pid;

	if (pipe(pfd) < 0)
		refuse("cannot detach: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		refuse("cannot detach: %s", strerror(errno));
	if (pid > 0) {
		close(pfd[1]);
		if (read(pfd[0], &b, 1) != 1)
			_exit(1);	/* the child died without a word */
		_exit(b);
	}
	close(pfd[0]);
	parent_fd = pfd[1];
	if (setsid() < 0)
		objfs_log(OBJFS_LOG_WARNING, "setsid: %m");
}

#define LOG_FILE_MAX	(4ul << 20)
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
	int rc;

	rc = objfs_store_status_text(metrics.store, text, sizeof(text), &n);
	if (rc < 0)
		return rc;
	snprintf(tmp, sizeof(tmp), "%s.tmp", metrics.path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
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

/* Where the daemon logs: -o log=, or syslog where a syslog daemon
 * listens, else a bounded file in the data directory.  Said on stderr
 * while that is still the terminal, when it is not syslog. */
static void
choose_log(const struct opts *o)
{
	char path[PATH_MAX];
	int rc;

	if (o->log && strcmp(o->log, "syslog") == 0) {
		objfs_log_use_syslog(1);
		return;
	}
	if (!o->log && objfs_log_syslog_here()) {
		objfs_log_use_syslog(1);
		return;
	}
	if (o->log)
		snprintf(path, sizeof(path), "%s", o->log);
	else
		snprintf(path, sizeof(path), "%s/objfs.log", o->data_dir);
	rc = objfs_log_use_file(path, LOG_FILE_MAX);
	if (rc < 0) {
		fprintf(stderr, "objfs: cannot log to %s: %s; logging to "
			"syslog\n", path, strerror(-rc));
		objfs_log_use_syslog(1);
		return;
	}
	fprintf(stderr, "objfs: logging to %s%s\n", path, o->log ? "" :
		" (no syslog daemon listens on /dev/log)");
}

/* Mounted: release the parent and let go of the terminal. */
static void
detached(const struct opts *o)
{
	int fd;

	if (parent_fd < 0) {
		if (o->log)		/* -f with -o log=: there too */
			choose_log(o);
		return;
	}
	choose_log(o);
	if (chdir("/") < 0)
		objfs_log(OBJFS_LOG_WARNING, "chdir /: %m");
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	report_to_parent(0);
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: objfs [options] [SOURCE] MOUNTPOINT\n"
"\n"
"Mount an object store: files live in a shared-memory arena, metadata in an\n"
"LMDB index, and everything is written to the data directory at unmount.\n"
"\n"
"general options:\n"
"    -h, --help             print this help and exit\n"
"    -V, --version          print the version and exit\n"
"    -f                     stay in the foreground (log to stderr)\n"
"    -d                     trace every request (implies -f)\n"
"    -o OPT[,OPT...]        mount options, below\n"
"\n"
"objfs options:\n"
"    -o arena=SIZE          arena capacity (K, M, G, T suffixes; default:\n"
"                           half the memory (MemTotal), at most the size\n"
"                           of /dev/shm and what is available)\n"
"    -o data=DIR            data directory: index and backing files\n"
"                           (default: $XDG_DATA_HOME/objfs, or\n"
"                           ~/.local/share/objfs)\n"
"    -o chunk=SIZE          chunk size, a power of two from 8K to 256M\n"
"                           (default 1M; fixed when DIR is created)\n"
"    -o spill_high=PCT      start writing chunks out above PCT%% of the\n"
"                           arena (default 90)\n"
"    -o spill_low=PCT       stop at PCT%% (default 70)\n"
"    -o prefault            fault the whole arena in at mount\n"
"    -o keep_arena          unmount at once, leaving what is not written\n"
"                           out in the arena for the next mount (lost if\n"
"                           the machine restarts first)\n"
"    -o dedup=on|off        store chunks with equal bytes once on disk\n"
"                           (default on)\n"
"    -o arena_dir=DIR       where the arena's private directory is made\n"
"                           (default /dev/shm; a tmpfs)\n"
"    -o direct_io=WHICH     opens that bypass the page cache: auto\n"
"                           (default: all where the kernel keeps shared\n"
"                           mmap working, Linux 6.6+, else writes),\n"
"                           writes (write-only opens), all, or none\n"
"    -o readahead=SIZE      the mount's read-ahead (default 1M; root only)\n"
"    -o threads=N           at most N request threads (default 16)\n"
"    -o passthrough=WHICH   sealed objects (chattr +i) opened for reading\n"
"                           are read and mapped by the kernel from a\n"
"                           per-object shared-memory file, never through\n"
"                           the daemon (auto, default: when run as root\n"
"                           on Linux 6.9+), or never (off)\n"
"    -o sealed_max=PCT      the most of the arena those files and pinned\n"
"                           objects take (default 50)\n"
"    -o sealed_pages=WHICH  the pages of those files: huge (default: 2 MiB\n"
"                           pages of a private tmpfs; faster reads, the\n"
"                           first open may take longer) or small (memfds)\n"
"    -o io_uring=WHICH      take requests through FUSE over io_uring, one\n"
"                           queue per CPU, when the kernel offers it\n"
"                           (auto, default; Linux 6.14+ with the fuse\n"
"                           module's enable_uring set), the same with\n"
"                           its threads waiting as SCHED_IDLE (idle:\n"
"                           faster small-file work, slower background\n"
"                           reads and write-back), or never (off)\n"
"    -o remote=rados:POOL[/NAMESPACE]\n"
"                           keep the tree and its chunks in a Ceph pool:\n"
"                           fsync returns once they are in the pool, and\n"
"                           an empty data directory on any machine mounts\n"
"                           the same tree (one mount per namespace)\n"
"    -o remote_conf=FILE    the cluster's ceph.conf (/etc/ceph/ceph.conf)\n"
"    -o remote_id=NAME      the cephx user, client.NAME (default admin)\n"
"    -o remote_timeout=S    an operation on the cluster fails with\n"
"                           ETIMEDOUT after S seconds (default 30)\n"
"    -o shared              share the namespace with other nodes' mounts\n"
"                           (-o shared): close-to-open, one file writer\n"
"    -o remote_lease=S      shared: a dead node's write leases lapse S s\n"
"                           after its last renewal (default remote_hold)\n"
"    -o remote_batch=MS     shared: changes in a directory this node holds\n"
"                           wait up to MS ms for the log (default 0)\n"
"    -o remote_compact=N    shared: compact the log once N records follow\n"
"                           its snapshot (default 1000; 0: never)\n"
"    -o remote_hold=S       the namespace's hold lapses S seconds after\n"
"                           its mount stops renewing it (default 30)\n"
"    -o metrics_file=FILE   the figures in Prometheus text format, every\n"
"                           15 s (node_exporter's textfile collector)\n"
"    -o log=WHERE           where a detached daemon logs: syslog, or a\n"
"                           file (4 MiB, then FILE.1); default: syslog\n"
"                           when a syslog daemon listens on /dev/log,\n"
"                           else DATA/objfs.log\n"
"\n"
"FUSE options (passed on): allow_other, ro, noatime, nosuid, nodev, ...\n"
"    -o allow_other         let other users in (the kernel checks modes)\n"
"    -o default_permissions the kernel checks modes even on a mount that\n"
"                           only root can enter (on otherwise)\n"
"\n"
"Unmount with 'objfsctl umount MOUNTPOINT', which writes everything out\n"
"first and waits for the daemon, or 'fusermount3 -u MOUNTPOINT'.\n");
}

/* Parse SIZE with an optional K/M/G/T suffix (powers of 1024). */
static int
parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	default:
		return -EINVAL;
	}
	if (*end) {
		end++;
		if (strcasecmp(end, "") != 0 && strcasecmp(end, "B") != 0 &&
		    strcasecmp(end, "iB") != 0)
			return -EINVAL;
	}
	if (v == 0 || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static void
pass_on(struct opts *o, const char *opt)
{
	size_t n = strlen(opt);
	char *p = realloc(o->passthrough, o->passlen + n + 2);

	if (!p)
		refuse("out of memory");
	if (o->passlen)
		p[o->passlen++] = ',';
	memcpy(p + o->passlen, opt, n + 1);
	o->passlen += n;
	o->passthrough = p;
}

/* The generic mount options that objfs hands to libfuse and the kernel
 * as they are; anything else that is not objfs's own is refused here, in
 * objfs's words, before anything is opened. */
static int
is_mount_option(const char *opt)
{
	static const char *const flags[] = {
		"ro", "rw", "suid", "nosuid", "dev", "nodev", "exec", "noexec",
		"sync", "async", "dirsync", "atime", "noatime", "diratime",
		"nodiratime", "relatime", "norelatime", "strictatime",
		"nostrictatime", "lazytime", "nolazytime", "auto_unmount",
	};
	static const char *const valued[] = {
		"max_read=", "context=", "fscontext=", "defcontext=",
		"rootcontext=",
	};

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (strcmp(opt, flags[i]) == 0)
			return 1;
	for (size_t i = 0; i < sizeof(valued) / sizeof(valued[0]); i++)
		if (strncmp(opt, valued[i], strlen(valued[i])) == 0)
			return 1;
	return 0;
}

static void
parse_one_option(struct opts *o, const char *opt)
{
	uint64_t v;

	if (strncmp(opt, "arena=", 6) == 0) {
		if (parse_size(opt + 6, &v) < 0)
			refuse("arena=%s: not a size (try arena=4G)", opt + 6);
		o->arena = v;
	} else if (strncmp(opt, "data=", 5) == 0) {
		if (!opt[5])
			refuse("data=: empty directory name");
		free(o->data_dir);
		o->data_dir = strdup(opt + 5);
	} else if (strncmp(opt, "chunk=", 6) == 0) {
		if (parse_size(opt + 6, &v) < 0 || (v & (v - 1)) != 0 ||
		    v < MIN_CHUNK || v > MAX_CHUNK)
			refuse("chunk=%s: must be a power of two from 8K to 256M",
				opt + 6);
		o->chunk = (uint32_t)v;
	} else if (strncmp(opt, "spill_high=", 11) == 0 ||
		   strncmp(opt, "spill_low=", 10) == 0) {
		const char *pct = strchr(opt, '=') + 1;
		char *end;
		long n = strtol(pct, &end, 10);

		if (end == pct || (*end && strcmp(end, "%") != 0) || n < 1 ||
		    n > 100)
			refuse("%s: must be a percentage from 1 to 100", opt);
		if (opt[6] == 'h')
			o->spill_high = (unsigned)n;
		else
			o->spill_low = (unsigned)n;
	} else if (strcmp(opt, "prefault") == 0) {
		o->prefault = 1;
	} else if (strcmp(opt, "keep_arena") == 0) {
		o->keep_arena = 1;
	} else if (strncmp(opt, "dedup=", 6) == 0) {
		if (strcmp(opt + 6, "on") == 0)
			o->no_dedup = 0;
		else if (strcmp(opt + 6, "off") == 0)
			o->no_dedup = 1;
		else
			refuse("%s: must be on or off", opt);
	} else if (strncmp(opt, "remote=", 7) == 0) {
		if (strncmp(opt + 7, "rados:", 6) != 0 || !opt[13])
			refuse("%s: must be rados:POOL or rados:POOL/NAMESPACE",
				opt);
		free(o->remote);
		o->remote = strdup(opt + 7);
	} else if (strncmp(opt, "remote_conf=", 12) == 0) {
		if (!opt[12])
			refuse("remote_conf=: empty file name");
		free(o->remote_conf);
		o->remote_conf = strdup(opt + 12);
	} else if (strncmp(opt, "remote_id=", 10) == 0) {
		if (!opt[10] || strchr(opt + 10, '.'))
			refuse("%s: the cephx user's name, without \"client.\"",
				opt);
		free(o->remote_id);
		o->remote_id = strdup(opt + 10);
	} else if (strcmp(opt, "shared") == 0) {
		o->remote_shared = 1;
	} else if (strncmp(opt, "remote_compact=", 15) == 0 ||
		   strncmp(opt, "remote_batch=", 13) == 0) {
		int b = opt[7] == 'b';
		const char *num = strchr(opt, '=') + 1;
		char *end;
		long n = strtol(num, &end, 10);

		if (end == num || *end || n < 0 || n > (b ? 60000 : 100000000))
			refuse(b ? "%s: must be milliseconds from 0 to 60000" :
				"%s: must be a number of log records from 0 "
				"(never) to 100000000", opt);
		*(b ? &o->remote_batch : &o->remote_compact) = n;
	} else if (strncmp(opt, "remote_timeout=", 15) == 0 ||
		   strncmp(opt, "remote_hold=", 12) == 0 ||
		   strncmp(opt, "remote_lease=", 13) == 0) {
		const char *num = strchr(opt, '=') + 1;
		char *end;
		long n = strtol(num, &end, 10);

		if (end == num || (*end && strcmp(end, "s") != 0) || n < 1 ||
		    n > 3600)
			refuse("%s: must be a number of seconds from 1 to 3600",
				opt);
		if (opt[7] == 't')
			o->remote_timeout = (unsigned)n;
		else if (opt[7] == 'l')
			o->remote_lease = (unsigned)n;
		else
			o->remote_hold = (unsigned)n;
	} else if (strncmp(opt, "arena_dir=", 10) == 0) {
		if (opt[10] != '/')
			refuse("%s: must be an absolute path", opt);
		free(o->arena_dir);
		o->arena_dir = strdup(opt + 10);
	} else if (strncmp(opt, "direct_io=", 10) == 0) {
		if (strcmp(opt + 10, "auto") == 0)
			o->direct_io = OBJFS_DIO_AUTO;
		else if (strcmp(opt + 10, "writes") == 0)
			o->direct_io = OBJFS_DIO_WRITES;
		else if (strcmp(opt + 10, "all") == 0)
			o->direct_io = OBJFS_DIO_ALL;
		else if (strcmp(opt + 10, "none") == 0)
			o->direct_io = OBJFS_DIO_NONE;
		else
			refuse("direct_io=%s: must be auto, writes, all or "
				"none", opt + 10);
	} else if (strcmp(opt, "direct_io") == 0) {
		refuse("direct_io needs a value: auto, writes, all or none");
	} else if (strncmp(opt, "readahead=", 10) == 0) {
		if (parse_size(opt + 10, &v) < 0 || v < 4096 || v > (1ull << 30) ||
		    (v & 4095))
			refuse("readahead=%s: must be a multiple of 4K from 4K to 1G",
				opt + 10);
		o->readahead = v;
	} else if (strncmp(opt, "passthrough=", 12) == 0) {
		if (strcmp(opt + 12, "auto") == 0)
			o->fuse_pt = 1;
		else if (strcmp(opt + 12, "off") == 0)
			o->fuse_pt = 0;
		else
			refuse("%s: must be auto or off", opt);
	} else if (strncmp(opt, "sealed_max=", 11) == 0) {
		char *end;
		long n = strtol(opt + 11, &end, 10);

		if (end == opt + 11 || (*end && strcmp(end, "%") != 0) ||
		    n < 1 || n > 90)
			refuse("%s: must be a percentage from 1 to 90", opt);
		o->sealed_max = (unsigned)n;
	} else if (strncmp(opt, "sealed_pages=", 13) == 0) {
		if (strcmp(opt + 13, "huge") == 0)
			o->sealed_small = 0;
		else if (strcmp(opt + 13, "small") == 0)
			o->sealed_small = 1;
		else
			refuse("%s: must be huge or small", opt);
	} else if (strncmp(opt, "io_uring=", 9) == 0) {
		if (strcmp(opt + 9, "auto") == 0)
			o->uring = 1;
		else if (strcmp(opt + 9, "idle") == 0)
			o->uring = 2;
		else if (strcmp(opt + 9, "off") == 0)
			o->uring = 0;
		else
			refuse("io_uring=%s: must be auto, idle or off", opt + 9);
	} else if (strncmp(opt, "threads=", 8) == 0) {
		char *end;
		long n = strtol(opt + 8, &end, 10);

		if (*end || n < 1 || n > 1024)
			refuse("threads=%s: must be a number from 1 to 1024",
				opt + 8);
		o->max_threads = (unsigned)n;
	} else if (strncmp(opt, "metrics_file=", 13) == 0) {
		if (!opt[13])
			refuse("metrics_file=: needs a file's path (for "
				"node_exporter: DIR/objfs.prom)");
		free(o->metrics_file);
		o->metrics_file = strdup(opt + 13);
		if (!o->metrics_file)
			refuse("out of memory");
	} else if (strncmp(opt, "log=", 4) == 0) {
		if (!opt[4])
			refuse("log=: must be syslog or a file's path");
		free(o->log);
		o->log = strdup(opt + 4);
		if (!o->log)
			refuse("out of memory");
	} else if (strcmp(opt, "debug") == 0) {
		o->debug = 1;
		o->foreground = 1;
	} else if (strcmp(opt, "default_permissions") == 0) {
		o->kernel_perms = 1;
	} else if (strcmp(opt, "allow_other") == 0 ||
		   strcmp(opt, "allow_root") == 0) {
		o->shared = 1;
		pass_on(o, opt);
	} else if (strncmp(opt, "fsname=", 7) == 0 ||
		   strncmp(opt, "subtype=", 8) == 0 ||
		   strcmp(opt, "_netdev") == 0 || strcmp(opt, "nofail") == 0 ||
		   strcmp(opt, "auto") == 0 || strcmp(opt, "noauto") == 0 ||
		   strcmp(opt, "user") == 0 || strcmp(opt, "users") == 0 ||
		   strcmp(opt, "defaults") == 0 ||
		   strncmp(opt, "x-", 2) == 0 ||
		   strncmp(opt, "comment=", 8) == 0) {
		/* Always on, set by objfs, or meant for mount(8) alone. */
	} else if (is_mount_option(opt)) {
		pass_on(o, opt);
	} else if (*opt) {
		refuse("unknown option -o %s (objfs's own are listed by "
			"objfs --help; generic mount options such as ro, "
			"noatime or nosuid are passed on)", opt);
	}
}

static void
parse_options(struct opts *o, const char *list)
{
	char *copy = strdup(list), *p, *save = NULL;

	if (!copy)
		refuse("out of memory");
	for (p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save))
		parse_one_option(o, p);
	free(copy);
}

static void
parse_args(struct opts *o, int argc, char **argv)
{
	const char *pos[3];
	int npos = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(0);
		} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			printf("objfs %s (libfuse %s)\n", PACKAGE_VERSION,
				objfs_fuse_version());
			exit(0);
		} else if (strcmp(a, "-f") == 0) {
			o->foreground = 1;
		} else if (strcmp(a, "-d") == 0) {
			o->debug = 1;
			o->foreground = 1;
		} else if (strcmp(a, "-s") == 0) {
			o->max_threads = 1;
		} else if (strcmp(a, "-o") == 0) {
			if (++i == argc)
				refuse("-o needs an argument");
			parse_options(o, argv[i]);
		} else if (strncmp(a, "-o", 2) == 0) {
			parse_options(o, a + 2);
		} else if (a[0] == '-' && a[1]) {
			refuse("unknown option %s (see objfs --help)", a);
		} else {
			if (npos == 2)
				refuse("too many arguments: %s (see objfs --help)", a);
			pos[npos++] = a;
		}
	}
	if (npos == 0)
		refuse("no mountpoint given (usage: objfs [options] MOUNTPOINT)");
	o->mountpoint = pos[npos - 1];
	o->source = npos == 2 ? pos[0] : "objfs";
}

static uint64_t
meminfo_kb(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	unsigned long long v = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			sscanf(line + klen + 1, "%llu", &v);
			break;
		}
	}
	fclose(f);
	return v;
}

static void
choose_arena(struct opts *o)
{
	uint64_t avail = meminfo_kb("MemAvailable") * 1024;
	uint64_t chunk = o->chunk ? o->chunk : OBJFS_DEFAULT_CHUNK;
	struct statvfs sv;
	char a[32], b[32];

	if (o->arena) {
		if (avail && o->arena > avail) {
			objfs_format_size(o->arena, a, sizeof(a));
			objfs_format_size(avail, b, sizeof(b));
			refuse("arena=%s is larger than the available memory (%s)",
				a, b);
		}
		if (o->arena < MIN_ARENA || o->arena < 2 * chunk) {
			objfs_format_size(o->arena, a, sizeof(a));
			refuse("arena=%s is too small: at least 16M and two chunks",
				a);
		}
		return;
	}
	/* Half the machine's memory, at most /dev/shm's size: the same at
	 * every mount (MemAvailable moved it by a GiB between two mounts).
	 * Only when even that much is not available is it less, and the
	 * log says so. */
	o->arena = meminfo_kb("MemTotal") * 1024 / 2;
	if (statvfs("/dev/shm", &sv) == 0 && sv.f_blocks &&
	    (uint64_t)sv.f_blocks * sv.f_frsize < o->arena)
		o->arena = (uint64_t)sv.f_blocks * sv.f_frsize;
	if (avail && o->arena > avail) {
		objfs_format_size(o->arena, a, sizeof(a));
		objfs_format_size(avail, b, sizeof(b));
		objfs_log(OBJFS_LOG_WARNING, "the default arena (%s) is more "
			"than the memory available now (%s): using %s", a, b, b);
		o->arena = avail;
	}
	o->arena -= o->arena % chunk;
	if (o->arena < MIN_ARENA || o->arena < 2 * chunk)
		refuse("not enough free memory for an arena (%" PRIu64
			" MiB available); set one with -o arena=SIZE",
			avail >> 20);
}

/* mkdir -p with 0700 for the default data directory's parents. */
static void
make_parents(const char *path)
{
	char *p = strdup(path);

	if (!p)
		return;
	for (char *s = p + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			(void)mkdir(p, 0700);
			*s = '/';
		}
	}
	free(p);
}

static void
choose_data_dir(struct opts *o)
{
	const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	char buf[4096];

	if (o->data_dir)
		return;
	if (xdg && *xdg == '/')
		snprintf(buf, sizeof(buf), "%s/objfs", xdg);
	else if (home && *home == '/')
		snprintf(buf, sizeof(buf), "%s/.local/share/objfs", home);
	else
		refuse("no data directory: set -o data=DIR (HOME is not set)");
	o->data_dir = strdup(buf);
	make_parents(o->data_dir);
}

static void
check_mountpoint(const struct opts *o)
{
	struct stat st;

	if (stat(o->mountpoint, &st) < 0)
		refuse("mountpoint %s: %s", o->mountpoint, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		refuse("mountpoint %s: not a directory", o->mountpoint);
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

	parse_args(&o, argc, argv);
	if (o.debug)
		objfs_log_max = OBJFS_LOG_DEBUG;
	check_mountpoint(&o);
	choose_arena(&o);
	choose_data_dir(&o);
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
		detach();

	memset(&cfg, 0, sizeof(cfg));
	cfg.data_dir = o.data_dir;
	cfg.arena_size = o.arena;
	cfg.chunk_size = o.chunk;
	cfg.prefault = o.prefault;
	cfg.keep_arena = o.keep_arena;
	cfg.no_dedup = o.no_dedup;
	cfg.arena_dir = o.arena_dir;
	if (o.remote) {
#ifdef HAVE_RADOS
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
		refuse("remote=%s: this objfs was built without librados "
			"(install librados-dev, configure and build again)",
			o.remote);
#endif
		cfg.remote = o.remote;
		cfg.remote_conf = o.remote_conf;
		cfg.remote_id = o.remote_id;
		cfg.remote_timeout = o.remote_timeout;
		cfg.remote_hold = o.remote_hold;
		cfg.remote_shared = o.remote_shared;
		cfg.remote_lease = o.remote_lease;
		cfg.remote_compact = o.remote_compact;
		cfg.remote_batch_ms = o.remote_batch < 0 ? 0 : o.remote_batch;
		if (!o.remote_shared && (o.remote_lease ||
		    o.remote_compact >= 0 || o.remote_batch >= 0))
			refuse("%s= is for shared mounts (-o shared)",
				o.remote_lease ? "remote_lease" :
				o.remote_batch >= 0 ? "remote_batch" :
				"remote_compact");
	} else if (o.remote_conf || o.remote_id || o.remote_timeout ||
		   o.remote_hold || o.remote_shared || o.remote_lease ||
		   o.remote_compact >= 0 || o.remote_batch >= 0) {
		refuse("remote_conf, remote_id, remote_timeout, remote_hold, "
			"shared, remote_lease, remote_batch and remote_compact need "
			"remote=rados:POOL");
	}
	{
		unsigned hi = o.spill_high ? o.spill_high : 90;
		unsigned lo = o.spill_low ? o.spill_low : 70;

		if (lo >= hi)
			refuse("spill_low=%u must be below spill_high=%u", lo, hi);
		cfg.spill_high = hi;
		cfg.sealed_max = o.sealed_max;
		cfg.sealed_small = o.sealed_small;
		cfg.spill_low = lo;
	}
	rc = objfs_store_open(&cfg, &store, &msg, &holder);
	if (rc < 0) {
		objfs_fuse_destroy(fuse);
		if (rc == -EBUSY && holder > 0)
			refuse("%s: %s (pid %ld)", o.data_dir, msg, holder);
		if (rc == -EINVAL && msg)	/* the message says it all */
			refuse("%s: %s", o.data_dir, msg);
		refuse("%s: %s: %s", o.data_dir, msg ? msg : "cannot open",
			strerror(-rc));
	}
	raise_fd_limit();
	if (o.metrics_file && (rc = start_metrics(o.metrics_file, store)) < 0) {
		objfs_store_close(store);
		objfs_fuse_destroy(fuse);
		refuse("metrics_file=%s: cannot write it: %s", o.metrics_file,
			strerror(-rc));
	}
	rc = objfs_fuse_mount(fuse, store, o.mountpoint);
	if (rc < 0) {
		objfs_log(OBJFS_LOG_ERR, "cannot mount on %s", o.mountpoint);
		stop_metrics();
		objfs_store_close(store);
		objfs_fuse_destroy(fuse);
		report_to_parent(1);
		return 1;
	}
	detached(&o);
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
	return status;
}
