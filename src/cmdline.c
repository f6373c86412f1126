/* SPDX-License-Identifier: MIT */
/*
 * cmdline.c - the daemon's command line (cmdline.h): options parsed and
 * refused before anything is opened, the arena's size and the data
 * directory chosen, and the detach: the parent waits on a pipe for the
 * child's word, mounted or refused, and exits with it.
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fuse/ops.h"
#include "src/base/log.h"
#include "src/base/units.h"
#include "src/cmdline.h"
#include "src/store.h"

#define LOG_FILE_MAX	(4ul << 20)

/* Write end of the pipe to the waiting parent, once detached (-1: none). */
static int parent_fd = -1;

/* Tell the parent, which still holds the terminal, how mounting went. */
void
objfs_report_to_parent(int status)
{
	unsigned char b = (unsigned char)status;

	if (parent_fd < 0)
		return;
	if (write(parent_fd, &b, 1) != 1)
		objfs_log(OBJFS_LOG_WARNING, "cannot report to the parent: %m");
	close(parent_fd);
	parent_fd = -1;
}

void
objfs_refuse(const char *fmt, ...)
{
	va_list ap;

	fputs("objfs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	objfs_report_to_parent(2);
	exit(2);
}

/*
 * Detach before anything is opened: LMDB must not be used across fork(),
 * and threads do not survive it.  The parent waits until the child has
 * mounted (or failed, having printed why) and exits with its status.
 */
void
objfs_detach(void)
{
	unsigned char b;
	int pfd[2];
	pid_t pid;

	if (pipe(pfd) < 0)
		objfs_refuse("cannot detach: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		objfs_refuse("cannot detach: %s", strerror(errno));
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
void
objfs_detached(const struct opts *o)
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
	objfs_report_to_parent(0);
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
"    -o remote=s3://BUCKET[/PREFIX]\n"
"                           the same in an S3 bucket, with the AWS\n"
"                           settings (AWS_ACCESS_KEY_ID, AWS_REGION,\n"
"                           AWS_ENDPOINT_URL, AWS_PROFILE, ~/.aws)\n"
"    -o remote_endpoint=URL S3: the service (default: AWS_ENDPOINT_URL, or\n"
"                           AWS's for the region)\n"
"    -o remote_addressing=path|virtual|auto\n"
"                           S3: bucket in the path or in the host name\n"
"                           (auto: virtual on AWS, path elsewhere)\n"
"    -o remote_insecure     S3: accept an http:// endpoint (requests and\n"
"                           answers in clear; refused without it)\n"
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
		objfs_refuse("out of memory");
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
			objfs_refuse("arena=%s: not a size (try arena=4G)", opt + 6);
		o->arena = v;
	} else if (strncmp(opt, "data=", 5) == 0) {
		if (!opt[5])
			objfs_refuse("data=: empty directory name");
		free(o->data_dir);
		o->data_dir = strdup(opt + 5);
	} else if (strncmp(opt, "chunk=", 6) == 0) {
		if (parse_size(opt + 6, &v) < 0 || (v & (v - 1)) != 0 ||
		    v < MIN_CHUNK || v > MAX_CHUNK)
			objfs_refuse("chunk=%s: must be a power of two from 8K to 256M",
				opt + 6);
		o->chunk = (uint32_t)v;
	} else if (strncmp(opt, "spill_high=", 11) == 0 ||
		   strncmp(opt, "spill_low=", 10) == 0) {
		const char *pct = strchr(opt, '=') + 1;
		char *end;
		long n = strtol(pct, &end, 10);

		if (end == pct || (*end && strcmp(end, "%") != 0) || n < 1 ||
		    n > 100)
			objfs_refuse("%s: must be a percentage from 1 to 100", opt);
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
			objfs_refuse("%s: must be on or off", opt);
	} else if (strncmp(opt, "remote=", 7) == 0) {
		if ((strncmp(opt + 7, "rados:", 6) != 0 || !opt[13]) &&
		    (strncmp(opt + 7, "s3://", 5) != 0 || !opt[12]))
			objfs_refuse("%s: must be rados:POOL[/NAMESPACE] or "
				"s3://BUCKET[/PREFIX]", opt);
		free(o->remote);
		o->remote = strdup(opt + 7);
	} else if (strncmp(opt, "remote_endpoint=", 16) == 0) {
		if (strncmp(opt + 16, "http://", 7) != 0 &&
		    strncmp(opt + 16, "https://", 8) != 0)
			objfs_refuse("%s: must be http://HOST[:PORT] or "
				"https://HOST[:PORT]", opt);
		free(o->remote_endpoint);
		o->remote_endpoint = strdup(opt + 16);
	} else if (strcmp(opt, "remote_insecure") == 0) {
		o->remote_insecure = 1;
	} else if (strncmp(opt, "remote_addressing=", 18) == 0) {
		if (strcmp(opt + 18, "path") != 0 &&
		    strcmp(opt + 18, "virtual") != 0 &&
		    strcmp(opt + 18, "auto") != 0)
			objfs_refuse("%s: must be path, virtual or auto", opt);
		free(o->remote_addressing);
		o->remote_addressing = strdup(opt + 18);
	} else if (strncmp(opt, "remote_conf=", 12) == 0) {
		if (!opt[12])
			objfs_refuse("remote_conf=: empty file name");
		free(o->remote_conf);
		o->remote_conf = strdup(opt + 12);
	} else if (strncmp(opt, "remote_id=", 10) == 0) {
		if (!opt[10] || strchr(opt + 10, '.'))
			objfs_refuse("%s: the cephx user's name, without \"client.\"",
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
			objfs_refuse(b ? "%s: must be milliseconds from 0 to 60000" :
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
			objfs_refuse("%s: must be a number of seconds from 1 to 3600",
				opt);
		if (opt[7] == 't')
			o->remote_timeout = (unsigned)n;
		else if (opt[7] == 'l')
			o->remote_lease = (unsigned)n;
		else
			o->remote_hold = (unsigned)n;
	} else if (strncmp(opt, "arena_dir=", 10) == 0) {
		if (opt[10] != '/')
			objfs_refuse("%s: must be an absolute path", opt);
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
			objfs_refuse("direct_io=%s: must be auto, writes, all or "
				"none", opt + 10);
	} else if (strcmp(opt, "direct_io") == 0) {
		objfs_refuse("direct_io needs a value: auto, writes, all or none");
	} else if (strncmp(opt, "readahead=", 10) == 0) {
		if (parse_size(opt + 10, &v) < 0 || v < 4096 || v > (1ull << 30) ||
		    (v & 4095))
			objfs_refuse("readahead=%s: must be a multiple of 4K from 4K to 1G",
				opt + 10);
		o->readahead = v;
	} else if (strncmp(opt, "passthrough=", 12) == 0) {
		if (strcmp(opt + 12, "auto") == 0)
			o->fuse_pt = 1;
		else if (strcmp(opt + 12, "off") == 0)
			o->fuse_pt = 0;
		else
			objfs_refuse("%s: must be auto or off", opt);
	} else if (strncmp(opt, "sealed_max=", 11) == 0) {
		char *end;
		long n = strtol(opt + 11, &end, 10);

		if (end == opt + 11 || (*end && strcmp(end, "%") != 0) ||
		    n < 1 || n > 90)
			objfs_refuse("%s: must be a percentage from 1 to 90", opt);
		o->sealed_max = (unsigned)n;
	} else if (strncmp(opt, "sealed_pages=", 13) == 0) {
		if (strcmp(opt + 13, "huge") == 0)
			o->sealed_small = 0;
		else if (strcmp(opt + 13, "small") == 0)
			o->sealed_small = 1;
		else
			objfs_refuse("%s: must be huge or small", opt);
	} else if (strncmp(opt, "io_uring=", 9) == 0) {
		if (strcmp(opt + 9, "auto") == 0)
			o->uring = 1;
		else if (strcmp(opt + 9, "idle") == 0)
			o->uring = 2;
		else if (strcmp(opt + 9, "off") == 0)
			o->uring = 0;
		else
			objfs_refuse("io_uring=%s: must be auto, idle or off", opt + 9);
	} else if (strncmp(opt, "threads=", 8) == 0) {
		char *end;
		long n = strtol(opt + 8, &end, 10);

		if (*end || n < 1 || n > 1024)
			objfs_refuse("threads=%s: must be a number from 1 to 1024",
				opt + 8);
		o->max_threads = (unsigned)n;
	} else if (strncmp(opt, "metrics_file=", 13) == 0) {
		if (!opt[13])
			objfs_refuse("metrics_file=: needs a file's path (for "
				"node_exporter: DIR/objfs.prom)");
		free(o->metrics_file);
		o->metrics_file = strdup(opt + 13);
		if (!o->metrics_file)
			objfs_refuse("out of memory");
	} else if (strncmp(opt, "log=", 4) == 0) {
		if (!opt[4])
			objfs_refuse("log=: must be syslog or a file's path");
		free(o->log);
		o->log = strdup(opt + 4);
		if (!o->log)
			objfs_refuse("out of memory");
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
		objfs_refuse("unknown option -o %s (objfs's own are listed by "
			"objfs --help; generic mount options such as ro, "
			"noatime or nosuid are passed on)", opt);
	}
}

static void
parse_options(struct opts *o, const char *list)
{
	char *copy = strdup(list), *p, *save = NULL;

	if (!copy)
		objfs_refuse("out of memory");
	for (p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save))
		parse_one_option(o, p);
	free(copy);
}

/* *@p, if relative, made absolute from the working directory (not
 * resolved: it may not exist yet, and its links are the user's). */
static void
absolute(char **p)
{
	char cwd[PATH_MAX], *q;
	size_t n;

	if (!*p || (*p)[0] == '/')
		return;
	if (!getcwd(cwd, sizeof(cwd)))
		objfs_refuse("%s: a relative path, and the working directory "
			"cannot be read: %s", *p, strerror(errno));
	n = strlen(cwd) + strlen(*p) + 2;
	q = malloc(n);
	if (!q)
		objfs_refuse("out of memory");
	snprintf(q, n, "%s/%s", cwd, *p);
	free(*p);
	*p = q;
}

void
objfs_parse_args(struct opts *o, int argc, char **argv)
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
				objfs_refuse("-o needs an argument");
			parse_options(o, argv[i]);
		} else if (strncmp(a, "-o", 2) == 0) {
			parse_options(o, a + 2);
		} else if (a[0] == '-' && a[1]) {
			objfs_refuse("unknown option %s (see objfs --help)", a);
		} else {
			if (npos == 2)
				objfs_refuse("too many arguments: %s (see objfs --help)", a);
			pos[npos++] = a;
		}
	}
	if (npos == 0)
		objfs_refuse("no mountpoint given (usage: objfs [options] MOUNTPOINT)");
	o->mountpoint = pos[npos - 1];
	o->source = npos == 2 ? pos[0] : "objfs";
	/* Paths from here on are absolute: the daemon goes to / when it
	 * detaches, and a relative data= or log= then named a place under /
	 * (issue 48: a root daemon's cleanup unlinking there). */
	absolute(&o->data_dir);
	if (o->log && strcmp(o->log, "syslog") != 0)
		absolute(&o->log);
	absolute(&o->arena_dir);
	absolute(&o->metrics_file);
	absolute(&o->remote_conf);
	o->mountpoint_abs = strdup(o->mountpoint);
	if (!o->mountpoint_abs)
		objfs_refuse("out of memory");
	absolute(&o->mountpoint_abs);
	o->mountpoint = o->mountpoint_abs;
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

void
objfs_choose_arena(struct opts *o)
{
	uint64_t avail = meminfo_kb("MemAvailable") * 1024;
	uint64_t chunk = o->chunk ? o->chunk : OBJFS_DEFAULT_CHUNK;
	struct statvfs sv;
	char a[32], b[32];

	if (o->arena) {
		if (avail && o->arena > avail) {
			objfs_format_size(o->arena, a, sizeof(a));
			objfs_format_size(avail, b, sizeof(b));
			objfs_refuse("arena=%s is larger than the available memory (%s)",
				a, b);
		}
		if (o->arena < MIN_ARENA || o->arena < 2 * chunk) {
			objfs_format_size(o->arena, a, sizeof(a));
			objfs_refuse("arena=%s is too small: at least 16M and two chunks",
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
		objfs_refuse("not enough free memory for an arena (%" PRIu64
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

void
objfs_choose_data_dir(struct opts *o)
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
		objfs_refuse("no data directory: set -o data=DIR (HOME is not set)");
	o->data_dir = strdup(buf);
	make_parents(o->data_dir);
}
