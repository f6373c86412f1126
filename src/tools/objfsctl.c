/* SPDX-License-Identifier: MIT */
/*
 * objfsctl - print what objfs exposes, for people.
 *
 *   objfsctl status MOUNTPOINT	the mount's .objfs-status, sizes made
 *				readable
 *   objfsctl stat FILE...	where each file's bytes are: the
 *				user.objfs.* extended attributes
 *   objfsctl sync MOUNTPOINT	write everything out and make it durable
 *				(fsync of .objfs-status), with progress
 *   objfsctl warm FILE...	read files whole ahead, with progress
 *   objfsctl seal|unseal FILE...	make files immutable (chattr +i) or not
 *   objfsctl pin|unpin|evict FILE...	keep files resident, or write
 *				them out and drop them from memory
 *   objfsctl gc MOUNTPOINT [GRACE]
 *				collect the pool's garbage (remote=)
 *   objfsctl catch-up MOUNTPOINT	apply what other nodes put in the
 *				pool's log (-o shared)
 *   objfsctl umount MOUNTPOINT	sync, unmount, wait for the daemon to
 *				exit, and say whether it wrote everything
 *   objfsctl check DATA	verify a data directory offline (check.c)
 *   objfsctl recover DATA [DEST]
 *				save what can be saved of a data
 *				directory, however damaged (check.c)
 *
 * status and stat read only what any program can read (a file and
 * getxattr); check and recover read the data directory while no daemon
 * serves it, and change nothing in it.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "src/tools/check.h"
#include "src/base/metrics.h"
#include "src/remote.h"
#include "src/status.h"
#include "src/store.h"
#include "src/tier.h"
#include "src/base/units.h"

static void
usage(FILE *f)
{
	fprintf(f,
"usage: objfsctl status MOUNTPOINT\n"
"       objfsctl stat FILE...\n"
"       objfsctl sum FILE...\n"
"       objfsctl sync MOUNTPOINT\n"
"       objfsctl warm FILE...\n"
"       objfsctl seal FILE...    objfsctl unseal FILE...\n"
"       objfsctl pin FILE...     objfsctl unpin FILE...\n"
"       objfsctl evict FILE...\n"
"       objfsctl gc MOUNTPOINT [GRACE_SECONDS]\n"
"       objfsctl catch-up MOUNTPOINT\n"
"       objfsctl umount MOUNTPOINT\n"
"       objfsctl log MOUNTPOINT\n"
"       objfsctl metrics MOUNTPOINT\n"
"       objfsctl check DATA [--remote rados:POOL[/NS]|s3://BUCKET[/PREFIX] [--remote-conf FILE]\n"
"                            [--remote-insecure]]\n"
"       objfsctl recover DATA [DEST]\n"
"\n"
"status  the mount's arena, spill and restore figures (MOUNTPOINT/.objfs-status)\n"
"stat    for each file in an objfs mount: bytes in the arena, not yet on\n"
"        disk, on disk, only on disk, and its chunks\n"
"sum     for each file in an objfs mount, its whole-object checksum\n"
"        (equal bytes, equal sums; objfs-sum computes it from the\n"
"        bytes anywhere), as sha256sum prints its sums\n"
"sync    write every byte of the mount out and make it durable; shows\n"
"        what is left, the rate and the time left\n"
"warm    read each file whole ahead of use (8 reads in flight): with\n"
"        remote=, its chunks are fetched from the pool into the arena;\n"
"        shows progress, then the size, time and rate\n"
"seal    make each file immutable (what chattr +i does): written out and\n"
"        durable first, its checksum recorded and printed; a sealed file\n"
"        refuses every change (EPERM), and opened for reading is read and\n"
"        mapped by the kernel without the daemon (passthrough, as root)\n"
"unseal  make it changeable again; EBUSY while another process has it\n"
"        open or mapped\n"
"pin     keep each file resident (its own shared-memory file when sealed\n"
"        and served by passthrough, else the arena), up to sealed_max of\n"
"        the arena; unpin lets it go\n"
"evict   write each file out and drop it from memory; EBUSY while a\n"
"        process maps or reads it through passthrough\n"
"gc      (remote=) remove the pool's chunks that no file names and that\n"
"        are older than GRACE_SECONDS (default 600); prints what it did\n"
"catch-up (-o shared) apply what the other nodes put in the pool so far,\n"
"        the directories they hold recalled first, before it returns\n"
"        (without it: within 100 ms, held directories at their recall)\n"
"umount  sync, unmount, wait for the daemon to exit; exit 0 only when it\n"
"        wrote everything\n"
"log     where the daemon logs, and its last 50 lines when that is a file\n"
"metrics the status figures and request latency histograms in the\n"
"        Prometheus text format\n"
"check   verify a data directory that no objfs serves: the index, every\n"
"        name, every chunk against its checksum; exit 1 on damage.  With\n"
"        --remote (a data directory mounted with remote=): the chunks read\n"
"        from the pool and verified, and the pool's head, snapshot and\n"
"        log checked\n"
"recover save every object whose bytes still verify, from a data directory\n"
"        however damaged, into DEST (default DATA/lost+found), named by\n"
"        inode number, with the names found in DEST/NAMES and DEST/tree\n");
}

/* @s as text for a terminal: its control characters (an escape sequence
 * in a path or a log line, issue 48) shown as '?', newlines and tabs
 * kept. */
static char *
safe(char *s)
{
	for (unsigned char *p = (unsigned char *)s; *p; p++)
		if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
			*p = '?';
	return s;
}

static int
cmd_status(const char *mnt)
{
	char path[4096], line[256], key[128], h[32];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "%s/.objfs-status", mnt);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "objfsctl: %s: %s (is %s an objfs mount?)\n",
			path, strerror(errno), mnt);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		char text[200];

		if (sscanf(line, "%127[^:]: %llu", key, &v) != 2) {
			/* A word, not a figure (the remote tier's state). */
			if (sscanf(line, "%127[^:]: %199[^\n]", key, text) == 2)
				printf("%-28s %s\n", safe(key), safe(text));
			continue;
		}
		if (strstr(key, "_bytes"))
			printf("%-28s %s\n", safe(key),
				objfs_format_size(v, h, sizeof(h)));
		else
			printf("%-28s %llu\n", safe(key), v);
	}
	fclose(f);
	return 0;
}

/* The status file of @mnt into @buf: 0, or -errno (said on stderr). */
static int
read_status(const char *mnt, char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/.objfs-status", mnt);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, size - 1);
	if (n < 0) {
		int e = errno;

		fprintf(stderr, "objfsctl: %s: %s (is %s an objfs mount?)\n",
			path, strerror(e), mnt);
		if (fd >= 0)
			close(fd);
		return -e;
	}
	close(fd);
	buf[n] = '\0';
	return 0;
}

static uint64_t
status_u64(const char *text, const char *key)
{
	char v[32];

	return objfs_status_value(text, key, v, sizeof(v)) ?
		strtoull(v, NULL, 10) : 0;
}

/* The bytes write-out has made durable so far: written, or found on
 * disk already (dedup), so that a sync of deduplicated data moves its
 * progress as fast as it goes (an objfs without the figure: written). */
static uint64_t
durable_of(const char *text)
{
	char v[32];

	return objfs_status_value(text, "made_durable_bytes_total", v,
			sizeof(v)) ? strtoull(v, NULL, 10) :
		status_u64(text, "spilled_bytes");	/* its older name */
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct syncer {
	int fd;
	int err;
	atomic_int done;
};

static void *
sync_thread(void *arg)
{
	struct syncer *y = arg;

	y->err = fsync(y->fd) < 0 ? errno : 0;
	atomic_store(&y->done, 1);
	return NULL;
}

/* One line of progress: what is left, the rate since the start, and the
 * time left at that rate; on a terminal one line redrawn with a bar. */
static void
progress(int tty, uint64_t left, uint64_t done, double secs)
{
	char l[32], d[32], r[32];
	double rate = secs > 0 ? done / secs : 0;
	uint64_t total = left + done;
	int bar = total ? (int)(30.0 * done / total) : 30;

	objfs_format_size(left, l, sizeof(l));
	objfs_format_size(done, d, sizeof(d));
	objfs_format_size((uint64_t)rate, r, sizeof(r));
	if (tty) {
		printf("\r[%.*s%*s] %s left, %s done, %s/s", bar,
			"##############################", 30 - bar, "", l, d, r);
		if (rate > 0)
			printf(", %.0f s left  ", left / rate);
		else
			printf("           ");
	} else {
		printf("sync: %s left, %s done, %s/s", l, d, r);
		if (rate > 0)
			printf(", about %.0f s left", left / rate);
		printf("\n");
	}
	fflush(stdout);
}

/* Write everything out (an fsync of the status file, in a thread) and
 * show the progress meanwhile.  0, or 1 with the reason on stderr. */
static int
cmd_sync(const char *mnt)
{
	char text[OBJFS_STATUS_MAX], path[PATH_MAX], h[32];
	struct syncer y = { -1, 0, 0 };
	uint64_t w0, left = 0, done = 0;
	double t0 = now_s(), shown = 0;
	int tty = isatty(STDOUT_FILENO), drew = 0;
	pthread_t th;

	if (read_status(mnt, text, sizeof(text)) < 0)
		return 1;
	w0 = durable_of(text);
	snprintf(path, sizeof(path), "%s/.objfs-status", mnt);
	y.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (y.fd < 0 || pthread_create(&th, NULL, sync_thread, &y) != 0) {
		fprintf(stderr, "objfsctl: sync %s: %s\n", mnt, strerror(errno));
		if (y.fd >= 0)
			close(y.fd);
		return 1;
	}
	while (!atomic_load(&y.done)) {
		usleep(100000);
		if (atomic_load(&y.done) ||
		    now_s() - shown < (tty ? 0.2 : 2.0) ||
		    read_status(mnt, text, sizeof(text)) < 0)
			continue;
		left = status_u64(text, "dirty_bytes");
		done = durable_of(text) - w0;
		/* Nothing to say until a first batch is written, or a
		 * second has gone by. */
		if (done == 0 && now_s() - t0 < 1.0)
			continue;
		shown = now_s();
		progress(tty, left, done, shown - t0);
		drew = 1;
	}
	pthread_join(th, NULL);
	close(y.fd);
	if (drew && tty)
		printf("\n");
	if (y.err) {
		fprintf(stderr, "objfsctl: sync %s: %s; what was not written "
			"stays in the arena\n", mnt, strerror(y.err));
		return 1;
	}
	if (read_status(mnt, text, sizeof(text)) == 0)
		done = durable_of(text) - w0;
	printf("synced %s: %s made durable in %.1f s; everything is on disk "
		"and durable\n", mnt, objfs_format_size(done, h, sizeof(h)),
		now_s() - t0);
	return 0;
}

/* objfsctl log: where the daemon of @mnt logs, and the last @n lines
 * when that is a file. */
static int
cmd_log(const char *mnt, int n)
{
	char text[OBJFS_STATUS_MAX], where[PATH_MAX], line[2048];
	char **ring;
	long total = 0;
	FILE *f;

	if (read_status(mnt, text, sizeof(text)) < 0)
		return 1;
	if (!objfs_status_value(text, "log", where, sizeof(where))) {
		fprintf(stderr, "objfsctl: %s: the status file does not say where "
			"objfs logs\n", mnt);
		return 1;
	}
	if (strcmp(where, "syslog") == 0) {
		printf("objfs logs to syslog (journalctl -t objfs, or "
			"/var/log/syslog)\n");
		return 0;
	}
	if (strcmp(where, "stderr") == 0) {
		printf("objfs runs in the foreground: it logs to its standard "
			"error\n");
		return 0;
	}
	f = fopen(where, "r");
	if (!f) {
		fprintf(stderr, "objfsctl: %s: %s\n", safe(where),
			strerror(errno));
		return 1;
	}
	ring = calloc((size_t)n, sizeof(*ring));
	if (!ring) {
		fclose(f);
		return 1;
	}
	printf("==> %s <==\n", safe(where));
	while (fgets(line, sizeof(line), f)) {
		free(ring[total % n]);
		ring[total % n] = strdup(line);
		total++;
	}
	fclose(f);
	for (long i = total > n ? total - n : 0; i < total; i++)
		fputs(ring[i % n] ? safe(ring[i % n]) : "", stdout);
	for (int i = 0; i < n; i++)
		free(ring[i]);
	free(ring);
	return 0;
}

/* Unmount with fusermount3 -u: its exit status, or -1. */
static int
run_fusermount(const char *mnt)
{
	char *argv[] = { "fusermount3", "-u", (char *)mnt, NULL };
	extern char **environ;
	int st;
	pid_t pid;

	if (posix_spawnp(&pid, "fusermount3", NULL, NULL, argv, environ) != 0)
		return -1;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Whether daemon @pid has died: gone, or a zombie its parent has not
 * reaped yet.  A sync fails as soon as the dying daemon's /dev/fuse is
 * closed, which is before it becomes a zombie, so this waits up to 2 s
 * for one of the two. */
static int
daemon_died(long pid)
{
	char path[64], st[256], *p;
	double t0 = now_s();

	for (;;) {
		int fd;
		ssize_t n;

		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			return 1;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return errno == ENOENT;
		n = read(fd, st, sizeof(st) - 1);
		close(fd);
		if (n > 0) {
			st[n] = '\0';
			/* "pid (comm) S ...": the state follows the last ')' */
			p = strrchr(st, ')');
			if (p && (p[2] == 'Z' || p[2] == 'X'))
				return 1;
		}
		if (now_s() - t0 > 2.0)
			return 0;
		usleep(20000);
	}
}

/* objfsctl umount: sync with progress, unmount, wait for the daemon and
 * report what its lock file says it did at the end. */
static int
cmd_umount(const char *mnt)
{
	char text[OBJFS_STATUS_MAX], data[PATH_MAX], path[PATH_MAX + 8], buf[512];
	long pid;
	double t0;
	int fd, said = 0, code;
	ssize_t n;
	char *state;

	if (read_status(mnt, text, sizeof(text)) < 0)
		return 1;
	pid = (long)status_u64(text, "pid");
	if (pid <= 0 || !objfs_status_value(text, "data", data, sizeof(data))) {
		fprintf(stderr, "objfsctl: %s: the status file names no daemon "
			"(an objfs older than this objfsctl?)\n", mnt);
		return 1;
	}
	if (cmd_sync(mnt) != 0) {
		if (daemon_died(pid))
			fprintf(stderr, "objfsctl: objfs (pid %ld) died during "
				"the sync: its log says why; the next mount of "
				"%s adopts what it had not written out (unmount "
				"the dead mount first: fusermount3 -u %s)\n",
				pid, data, mnt);
		else
			fprintf(stderr, "objfsctl: %s is still mounted\n", mnt);
		return 1;
	}
	if (run_fusermount(mnt) != 0) {
		fprintf(stderr, "objfsctl: fusermount3 -u %s failed (is it busy? "
			"see fuser -m %s); it is still mounted, and synced\n",
			mnt, mnt);
		return 1;
	}
	t0 = now_s();
	while (kill((pid_t)pid, 0) == 0 || errno == EPERM) {
		if (!said && now_s() - t0 > 2) {
			printf("waiting for objfs (pid %ld) to finish and exit\n",
				pid);
			fflush(stdout);
			said = 1;
		}
		usleep(50000);
	}
	snprintf(path, sizeof(path), "%s/lock", data);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	state = strchr(buf, '\n');
	state = state ? state + 1 : buf + strlen(buf);
	state[strcspn(state, "\n")] = '\0';
	/* "unmounted: exit N: what", N the daemon's exit status. */
	if (strtol(buf, NULL, 10) == pid &&
	    sscanf(state, "unmounted: exit %d:", &code) == 1) {
		const char *what = strchr(state + 16, ':');

		what = what ? what + 2 : "";
		if (code == 0 && strcmp(what, "all data written") == 0) {
			printf("unmounted %s: all data written to %s\n", mnt,
				data);
			return 0;
		}
		fprintf(stderr, "objfsctl: %s: objfs (pid %ld) exited with "
			"status %d: %s\n", mnt, pid, code, what);
		return code ? code : 1;
	}
	else
		fprintf(stderr, "objfsctl: %s: objfs (pid %ld) exited without "
			"saying it wrote everything (killed?); the next mount "
			"keeps what was durable\n", mnt, pid);
	return 1;
}

static int
get_u64(const char *file, const char *name, uint64_t *v)
{
	char buf[32];
	ssize_t n = getxattr(file, name, buf, sizeof(buf) - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	*v = strtoull(buf, NULL, 10);
	return 0;
}

static int
cmd_stat(int n, char **files)
{
	static const char *const names[] = {
		"resident", "dirty", "disk", "spilled", "chunk_size",
		"chunks_resident", "chunks_spilled", "chunks_hole", "shared",
	};
	uint64_t v[9];
	char attr[64], h[32];
	struct stat st;
	int status = 0;

	for (int i = 0; i < n; i++) {
		int rc = 0;

		if (stat(files[i], &st) < 0) {
			fprintf(stderr, "objfsctl: %s: %s\n", files[i],
				strerror(errno));
			status = 1;
			continue;
		}
		for (int k = 0; rc == 0 && k < 9; k++) {
			snprintf(attr, sizeof(attr), "user.objfs.%s", names[k]);
			rc = get_u64(files[i], attr, &v[k]);
		}
		if (rc != 0) {
			/* One message: what it means, else the error. */
			if (rc == -ENODATA || rc == -ENOTSUP)
				fprintf(stderr, "objfsctl: %s: not a regular file in an objfs mount\n",
					files[i]);
			else
				fprintf(stderr, "objfsctl: %s: %s\n", files[i],
					rc < 0 ? strerror(-rc) : strerror(errno));
			status = 1;
			continue;
		}
		printf("%s\n", files[i]);
		printf("  size      %s\n", objfs_format_size((uint64_t)st.st_size, h, sizeof(h)));
		printf("  resident  %s (in the arena)\n", objfs_format_size(v[0], h, sizeof(h)));
		printf("  dirty     %s (in the arena, not yet on disk)\n", objfs_format_size(v[1], h, sizeof(h)));
		printf("  disk      %s (current copy on disk)\n", objfs_format_size(v[2], h, sizeof(h)));
		printf("  spilled   %s (only on disk)\n", objfs_format_size(v[3], h, sizeof(h)));
		printf("  shared    %s (on disk once, for copies too)\n", objfs_format_size(v[8], h, sizeof(h)));
		printf("  chunks    %" PRIu64 " resident, %" PRIu64 " spilled, %" PRIu64
			" holes, of %s each\n", v[5], v[6], v[7], objfs_format_size(v[4], h, sizeof(h)));
		{
			char sum[64] = "", how[256] = "";
			ssize_t k = getxattr(files[i], "user.objfs.sealed",
					sum, sizeof(sum) - 1);

			sum[k > 0 ? k : 0] = '\0';
			k = getxattr(files[i], "user.objfs.served", how,
					sizeof(how) - 1);
			how[k > 0 ? k : 0] = '\0';
			printf("  sealed    %s\n", *sum ? sum : "no");
			if (*how)
				printf("  served    %s\n", how);
		}
	}
	return status;
}

/* seal / unseal: the immutable flag, as chattr sets it. */
static int
cmd_seal(int n, char **files, int on)
{
	int status = 0;

	for (int i = 0; i < n; i++) {
		int fd = open(files[i], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		int flags = 0, rc = -1;
		char hex[64];
		ssize_t len;

		if (fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
			flags = on ? flags | FS_IMMUTABLE_FL :
				flags & ~FS_IMMUTABLE_FL;
			rc = ioctl(fd, FS_IOC_SETFLAGS, &flags);
		}
		if (rc < 0) {
			int e = errno;

			fprintf(stderr, "objfsctl: %s: %s%s\n", files[i],
				strerror(e), e == EBUSY && !on ? " (another "
				"process has it open or mapped)" : e == EBUSY ?
				" (open for writing)" : e == EPERM ?
				" (CAP_LINUX_IMMUTABLE, or the owner, needed)" :
				"");
			status = 1;
		} else if (on) {
			len = getxattr(files[i], "user.objfs.sealed", hex,
					sizeof(hex) - 1);
			hex[len > 0 ? len : 0] = '\0';
			printf("%s  %s\n", len == 32 ? hex : "sealed", files[i]);
		}
		if (fd >= 0)
			close(fd);
	}
	return status;
}

/* pin, unpin, evict: a request to the daemon through user.objfs.request. */
static int
cmd_request(int n, char **files, const char *what)
{
	int status = 0;

	for (int i = 0; i < n; i++) {
		if (setxattr(files[i], "user.objfs.request", what,
				strlen(what), 0) == 0)
			continue;
		fprintf(stderr, "objfsctl: %s: %s: %s%s\n", what, files[i],
			strerror(errno), errno == EBUSY ? " (mapped or open "
			"through passthrough)" : errno == ENOSPC ? " (pinned "
			"objects would take more than sealed_max of the arena)"
			: errno == ENOTSUP ? " (not in an objfs mount)" : "");
		status = 1;
	}
	return status;
}

static int
cmd_sum(int n, char **files)
{
	char hex[64];
	int status = 0;

	for (int i = 0; i < n; i++) {
		ssize_t len = getxattr(files[i], "user.objfs.checksum", hex,
				sizeof(hex) - 1);

		if (len != 32) {
			int e = len < 0 ? errno : EIO;

			fprintf(stderr, "objfsctl: %s: %s\n", files[i],
				e == ENODATA || e == ENOTSUP ?
				"not a regular file in an objfs mount" :
				strerror(e));
			status = 1;
			continue;
		}
		hex[32] = '\0';
		printf("%s  %s\n", hex, files[i]);
	}
	return status;
}

/* The pool's garbage, collected now (the remote tier): a setxattr on the
 * status file that returns when the collection is done. */
static int
cmd_gc(const char *mnt, const char *grace)
{
	char path[PATH_MAX], text[OBJFS_STATUS_MAX], *p, *end;
	long g = strtol(grace, &end, 10);

	if (end == grace || *end || g < 0) {
		fprintf(stderr, "objfsctl gc: %s: the grace period is a number "
			"of seconds\n", grace);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/.objfs-status", mnt);
	if (setxattr(path, OBJFS_XATTR_GC, grace, strlen(grace), 0) < 0) {
		int e = errno;

		if (e == EBUSY && read_status(mnt, text, sizeof(text)) == 0 &&
		    (p = strstr(text, "remote_gc_last: ")) != NULL) {
			/* Deferred (shared mode): the status says why. */
			p += strlen("remote_gc_last: ");
			fprintf(stderr, "objfsctl gc: %s: not now: %.*s\n", mnt,
				(int)strcspn(p, "\n"), p);
			return 1;
		}
		fprintf(stderr, "objfsctl gc: %s: %s\n", mnt, e == ENOTSUP ?
			"not mounted with remote= (nothing to collect)" :
			strerror(e));
		return 1;
	}
	if (read_status(mnt, text, sizeof(text)) == 0 &&
	    (p = strstr(text, "remote_gc_last: ")) != NULL) {
		p += strlen("remote_gc_last: ");
		printf("%.*s\n", (int)strcspn(p, "\n"), p);
	}
	return 0;
}

/* Apply what other nodes of a shared mount put in the pool so far. */
static int
cmd_catch_up(const char *mnt)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/.objfs-status", mnt);
	if (setxattr(path, OBJFS_XATTR_CATCH_UP, "1", 1, 0) < 0) {
		int e = errno;

		fprintf(stderr, "objfsctl catch-up: %s: %s\n", mnt, e == ENOTSUP ?
			"not a shared mount (-o shared)" : strerror(e));
		return 1;
	}
	return 0;
}

/* check DATA --remote rados:POOL[/NS] or s3://BUCKET[/PREFIX] [--remote-conf F] [--remote-id ID]:
 * the chunks of a pool's cache read and verified from the pool. */
static int
cmd_check_remote(int n, char **a)
{
	struct objfs_remote_config cfg = { 0 };
	struct objfs_check_pool pool = { 0 };
	char err[256];
	int rc;

	for (int i = 1; i < n; i += 2) {
		if (strcmp(a[i], "--remote-insecure") == 0) {
			cfg.insecure = 1;	/* S3 over http:// */
			i--;
			continue;
		}
		if (i + 1 >= n)
			goto usage;
		if (strcmp(a[i], "--remote") == 0)
			cfg.spec = a[i + 1];
		else if (strcmp(a[i], "--remote-conf") == 0)
			cfg.conf = a[i + 1];
		else if (strcmp(a[i], "--remote-id") == 0)
			cfg.id = a[i + 1];
		else
			goto usage;
	}
	if (!cfg.spec)
		goto usage;
#ifdef HAVE_REMOTE
	rc = objfs_tier_check_open(&cfg, &pool, err, sizeof(err));
#else
	rc = -ENOTSUP;
	snprintf(err, sizeof(err), "this objfsctl was built without librados "
		"and without libcurl");
#endif
	if (rc < 0) {
		fprintf(stderr, "objfsctl check: %s\n", err);
		return 2;
	}
	rc = objfs_check_remote(a[0], stdout, &pool);
#ifdef HAVE_REMOTE
	objfs_tier_check_close(&pool);
#endif
	return rc < 0 ? 2 : rc > 0;
usage:
	fprintf(stderr, "usage: objfsctl check DATA [--remote rados:POOL[/NS]|s3://BUCKET[/PREFIX]] "
		"[--remote-conf FILE] [--remote-id NAME] [--remote-insecure]\n");
	return 2;
}

/* ---- warm: whole files fetched ahead, with progress ------------------ */

struct warm {
	pthread_mutex_t mu;
	int fd;
	uint64_t size, next, done;
	int err;
};

#define WARM_PIECE	(8u << 20)
#define WARM_THREADS	8

static void *
warm_main(void *arg)
{
	struct warm *w = arg;
	char *buf = malloc(1u << 20);

	if (!buf) {
		pthread_mutex_lock(&w->mu);
		w->err = ENOMEM;
		pthread_mutex_unlock(&w->mu);
		return NULL;
	}
	for (;;) {
		uint64_t off, end;

		pthread_mutex_lock(&w->mu);
		off = w->next;
		w->next += WARM_PIECE;
		pthread_mutex_unlock(&w->mu);
		if (off >= w->size || w->err)
			break;
		end = off + WARM_PIECE < w->size ? off + WARM_PIECE : w->size;
		while (off < end) {
			ssize_t n = pread(w->fd, buf, end - off < (1u << 20) ?
				end - off : 1u << 20, (off_t)off);

			if (n <= 0) {
				pthread_mutex_lock(&w->mu);
				w->err = n < 0 ? errno : EIO;
				pthread_mutex_unlock(&w->mu);
				break;
			}
			off += (uint64_t)n;
			pthread_mutex_lock(&w->mu);
			w->done += (uint64_t)n;
			pthread_mutex_unlock(&w->mu);
		}
	}
	free(buf);
	return NULL;
}

static int
cmd_warm(int n, char **files)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		struct warm w = { PTHREAD_MUTEX_INITIALIZER, -1, 0, 0, 0, 0 };
		pthread_t th[WARM_THREADS];
		struct timespec t0, t1;
		struct stat st;
		char h[32], r[32];
		int k, started = 0;
		double s;

		w.fd = open(files[i], O_RDONLY | O_CLOEXEC);
		if (w.fd < 0 || fstat(w.fd, &st) < 0) {
			fprintf(stderr, "objfsctl warm: %s: %s\n", files[i],
				strerror(errno));
			if (w.fd >= 0)
				close(w.fd);
			bad = 1;
			continue;
		}
		w.size = (uint64_t)st.st_size;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (k = 0; k < WARM_THREADS; k++)
			if (pthread_create(&th[k], NULL, warm_main, &w) == 0)
				started++;
		for (;;) {
			uint64_t done;
			int err;

			pthread_mutex_lock(&w.mu);
			done = w.done;
			err = w.err;
			pthread_mutex_unlock(&w.mu);
			if (done >= w.size || err || !started)
				break;
			if (isatty(2)) {
				fprintf(stderr, "\r%s: %s of %s", files[i],
					objfs_format_size(done, h, sizeof(h)),
					objfs_format_size(w.size, r, sizeof(r)));
			}
			usleep(200000);
		}
		for (k = 0; k < started; k++)
			pthread_join(th[k], NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		close(w.fd);
		if (isatty(2))
			fprintf(stderr, "\r");
		s = (double)(t1.tv_sec - t0.tv_sec) +
			(double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (w.err || !started) {
			fprintf(stderr, "objfsctl warm: %s: %s\n", files[i],
				strerror(started ? w.err : EAGAIN));
			bad = 1;
			continue;
		}
		printf("%s: %s in %.1f s (%s/s)\n", files[i],
			objfs_format_size(w.size, h, sizeof(h)), s,
			objfs_format_size(s > 0 ? (uint64_t)((double)w.size / s) :
				w.size, r, sizeof(r)));
	}
	return bad;
}

int
main(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 ||
			  strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2 && (strcmp(argv[1], "-V") == 0 ||
			  strcmp(argv[1], "--version") == 0)) {
		printf("objfsctl %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "status") == 0)
		return cmd_status(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "sum") == 0)
		return cmd_sum(argc - 2, argv + 2);
	if (argc >= 3 && strcmp(argv[1], "stat") == 0)
		return cmd_stat(argc - 2, argv + 2);
	if (argc == 3 && strcmp(argv[1], "sync") == 0)
		return cmd_sync(argv[2]);
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "gc") == 0)
		return cmd_gc(argv[2], argc == 4 ? argv[3] : "600");
	if (argc == 3 && strcmp(argv[1], "catch-up") == 0)
		return cmd_catch_up(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "warm") == 0)
		return cmd_warm(argc - 2, argv + 2);
	if (argc >= 3 && (strcmp(argv[1], "seal") == 0 ||
			  strcmp(argv[1], "unseal") == 0))
		return cmd_seal(argc - 2, argv + 2, argv[1][0] == 's');
	if (argc >= 3 && (strcmp(argv[1], "pin") == 0 ||
			  strcmp(argv[1], "unpin") == 0 ||
			  strcmp(argv[1], "evict") == 0))
		return cmd_request(argc - 2, argv + 2, argv[1]);
	if (argc == 3 && strcmp(argv[1], "umount") == 0)
		return cmd_umount(argv[2]);
	if (argc == 3 && strcmp(argv[1], "log") == 0)
		return cmd_log(argv[2], 50);
	if (argc == 3 && strcmp(argv[1], "metrics") == 0) {
		char text[OBJFS_STATUS_MAX];

		if (read_status(argv[2], text, sizeof(text)) < 0)
			return 1;
		return objfs_prom_write(text, stdout) < 0;
	}
	if (argc == 3 && strcmp(argv[1], "check") == 0) {
		int rc = objfs_check(argv[2], stdout);

		return rc < 0 ? 2 : rc > 0;
	}
	if (argc > 3 && strcmp(argv[1], "check") == 0)
		return cmd_check_remote(argc - 2, argv + 2);
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "recover") == 0) {
		int rc = objfs_recover(argv[2], argc == 4 ? argv[3] : NULL,
				stdout);

		return rc < 0 ? 2 : rc > 0;
	}
	usage(stderr);
	return 2;
}
