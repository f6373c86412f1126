/* SPDX-License-Identifier: MIT */
/*
 * crashrec.c - records what a process asks of the files under one
 * directory, for the crash simulator (tests/crash/sim.py).
 *
 * Loaded with LD_PRELOAD into the process under test (objfs, or a
 * program using SQLite), with
 *	CRASHREC_DIR	the directory whose files are recorded
 *	CRASHREC_TRACE	where the trace goes
 * it wraps the libc calls that change files or make them durable, does
 * the real call, and appends a record of it, with the time
 * (CLOCK_MONOTONIC, taken after the call returned), to the trace.  One
 * mutex around call and record keeps the trace in the order of the calls.
 *
 * Record: u32 type, u32 path id, u64 time ns, u64 a, u64 b, u64 c, then
 * for WRITE c bytes of data.  PATH records (a = id, c = length, then the
 * name relative to CRASHREC_DIR) name paths before first use.
 *	OPEN	a = 1 when it created the file, b = 1 for O_SYNC/O_DSYNC
 *	WRITE	a = offset, c = length (then the bytes); for a write of
 *		zeros only ZERO is recorded: a = offset, b = length
 *	TRUNC	a = size
 *	PUNCH	a = offset, b = length
 *	EXTEND	a = new size (fallocate without KEEP_SIZE)
 *	SYNC	the path's data and size are durable (fsync, fdatasync);
 *		on a directory, its entries are
 *	UNLINK, MKDIR	the path
 *	RENAME	the path, a = id of the new path
 * A write on an O_SYNC/O_DSYNC descriptor is followed by a SYNC.
 * Test-only code: it aborts on anything it cannot record.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { R_PATH = 1, R_OPEN, R_WRITE, R_ZERO, R_TRUNC, R_PUNCH, R_EXTEND,
	R_SYNC, R_UNLINK, R_MKDIR, R_RENAME };

#define MAXFD	65536

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char root[PATH_MAX];
static size_t rootlen;
static int tracefd = -1;
static int ready;
static uint32_t npaths;
static char **paths;		/* id - 1 -> name */
static struct {
	uint32_t path;		/* 0: not recorded */
	int sync;
} fds[MAXFD];

static void __attribute__((noreturn))
die(const char *what)
{
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "crashrec: %s: %s\n", what,
			strerror(errno));

	syscall(SYS_write, 2, msg, (size_t)n);
	abort();
}

static void
emit(const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t k = syscall(SYS_write, tracefd, c, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			die("writing the trace");
		c += k;
		n -= (size_t)k;
	}
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
rec(uint32_t type, uint32_t path, uint64_t a, uint64_t b, uint64_t c,
		const void *data)
{
	uint64_t h[5] = { (uint64_t)type | (uint64_t)path << 32, now_ns(),
		a, b, c };

	emit(h, sizeof(h));
	if (data && c)
		emit(data, c);
}

static void
init(void)
{
	const char *d = getenv("CRASHREC_DIR"), *t = getenv("CRASHREC_TRACE");

	if (ready)
		return;
	ready = -1;
	if (!d || !t || !realpath(d, root))
		return;
	rootlen = strlen(root);
	tracefd = (int)syscall(SYS_open, t, O_WRONLY | O_CREAT | O_APPEND |
			O_CLOEXEC, 0600);
	if (tracefd < 0)
		die("opening the trace");
	ready = 1;
}

/* The id of @abs (an absolute path) if it is under the root, else 0. */
static uint32_t
path_id(const char *abs)
{
	const char *rel;
	size_t len;

	if (ready != 1 || strncmp(abs, root, rootlen) != 0 ||
	    (abs[rootlen] != '/' && abs[rootlen] != '\0'))
		return 0;
	rel = abs[rootlen] ? abs + rootlen + 1 : ".";
	for (uint32_t i = 0; i < npaths; i++)
		if (strcmp(paths[i], rel) == 0)
			return i + 1;
	paths = realloc(paths, (npaths + 1) * sizeof(*paths));
	if (!paths || !(paths[npaths] = strdup(rel)))
		die("out of memory");
	npaths++;
	len = strlen(rel);
	rec(R_PATH, npaths, npaths, 0, len, rel);
	return npaths;
}

/* @name relative to @dirfd, made absolute without touching the disk. */
static uint32_t
at_id(int dirfd, const char *name)
{
	char base[PATH_MAX], abs[2 * PATH_MAX + 2], link[64];
	ssize_t n;

	if (ready != 1)
		return 0;
	if (name[0] == '/') {
		snprintf(abs, sizeof(abs), "%s", name);
	} else {
		if (dirfd == AT_FDCWD) {
			if (!getcwd(base, sizeof(base)))
				return 0;
		} else {
			snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
			n = readlink(link, base, sizeof(base) - 1);
			if (n < 0)
				return 0;
			base[n] = '\0';
		}
		snprintf(abs, sizeof(abs), "%s/%s", base, name);
	}
	/* Collapse "/./" and a trailing "/." (LMDB and objfs pass plain
	 * names; nothing here needs "..") */
	for (char *p; (p = strstr(abs, "/./")); )
		memmove(p, p + 2, strlen(p + 2) + 1);
	n = (ssize_t)strlen(abs);
	if (n >= 2 && strcmp(abs + n - 2, "/.") == 0)
		abs[n - 2] = '\0';
	return path_id(abs);
}

#define REAL(ret, name, ...)						\
	static ret (*real_##name)(__VA_ARGS__);				\
	if (!real_##name)						\
		real_##name = (ret (*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name)

static int
do_open(int dirfd, const char *name, int flags, mode_t mode, int at)
{
	REAL(int, openat, int, const char *, int, ...);
	struct stat st;
	uint32_t id;
	int fd, existed;

	pthread_mutex_lock(&mu);
	init();
	id = at_id(dirfd, name);
	existed = id ? fstatat(dirfd, name, &st, 0) == 0 : 1;
	fd = real_openat(at ? dirfd : AT_FDCWD, name, flags, mode);
	if (fd >= 0 && fd < MAXFD) {
		fds[fd].path = id;
		fds[fd].sync = !!(flags & (O_SYNC | O_DSYNC));
		if (id && !existed)
			rec(R_OPEN, id, 1, fds[fd].sync, 0, NULL);
		else if (id && (flags & O_TRUNC))
			rec(R_TRUNC, id, 0, 0, 0, NULL);
	}
	pthread_mutex_unlock(&mu);
	return fd;
}

static mode_t
mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int
open(const char *name, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = mode_arg(flags, ap);
	va_end(ap);
	return do_open(AT_FDCWD, name, flags, m, 0);
}

int open64(const char *name, int flags, ...) __attribute__((alias("open")));

int
openat(int dirfd, const char *name, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = mode_arg(flags, ap);
	va_end(ap);
	return do_open(dirfd, name, flags, m, 1);
}

int openat64(int dirfd, const char *name, int flags, ...)
	__attribute__((alias("openat")));

int
close(int fd)
{
	REAL(int, close, int);
	int rc;

	pthread_mutex_lock(&mu);
	rc = real_close(fd);
	if (fd >= 0 && fd < MAXFD)
		fds[fd].path = 0;
	pthread_mutex_unlock(&mu);
	return rc;
}

int
closedir(DIR *d)
{
	REAL(int, closedir, DIR *);
	int fd, rc;

	pthread_mutex_lock(&mu);
	fd = dirfd(d);
	rc = real_closedir(d);
	if (fd >= 0 && fd < MAXFD)
		fds[fd].path = 0;
	pthread_mutex_unlock(&mu);
	return rc;
}

static uint32_t
fd_path(int fd)
{
	return fd >= 0 && fd < MAXFD ? fds[fd].path : 0;
}

static int
all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i])
			return 0;
	return 1;
}

/* Record @n bytes written at @off from @iov (locked). */
static void
rec_write(int fd, const struct iovec *iov, int cnt, uint64_t off, size_t n)
{
	uint32_t id = fd_path(fd);
	size_t left = n;

	if (!id || !n)
		return;
	for (int i = 0; i < cnt && left; i++) {
		size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;

		if (all_zero(iov[i].iov_base, k))
			rec(R_ZERO, id, off, k, 0, NULL);
		else
			rec(R_WRITE, id, off, 0, k, iov[i].iov_base);
		off += k;
		left -= k;
	}
	if (fds[fd].sync)
		rec(R_SYNC, id, 0, 0, 0, NULL);
}

ssize_t
pwrite(int fd, const void *buf, size_t n, off_t off)
{
	REAL(ssize_t, pwrite, int, const void *, size_t, off_t);
	struct iovec iov = { (void *)buf, n };
	ssize_t rc;

	pthread_mutex_lock(&mu);
	rc = real_pwrite(fd, buf, n, off);
	if (rc > 0)
		rec_write(fd, &iov, 1, (uint64_t)off, (size_t)rc);
	pthread_mutex_unlock(&mu);
	return rc;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
	__attribute__((alias("pwrite")));

ssize_t
pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	REAL(ssize_t, pwritev, int, const struct iovec *, int, off_t);
	ssize_t rc;

	pthread_mutex_lock(&mu);
	rc = real_pwritev(fd, iov, cnt, off);
	if (rc > 0)
		rec_write(fd, iov, cnt, (uint64_t)off, (size_t)rc);
	pthread_mutex_unlock(&mu);
	return rc;
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
	__attribute__((alias("pwritev")));

ssize_t
write(int fd, const void *buf, size_t n)
{
	REAL(ssize_t, write, int, const void *, size_t);
	struct iovec iov = { (void *)buf, n };
	off_t off = 0;
	ssize_t rc;

	pthread_mutex_lock(&mu);
	if (fd_path(fd))
		off = lseek(fd, 0, SEEK_CUR);
	rc = real_write(fd, buf, n);
	if (rc > 0 && off >= 0)
		rec_write(fd, &iov, 1, (uint64_t)off, (size_t)rc);
	pthread_mutex_unlock(&mu);
	return rc;
}

ssize_t
writev(int fd, const struct iovec *iov, int cnt)
{
	REAL(ssize_t, writev, int, const struct iovec *, int);
	off_t off = 0;
	ssize_t rc;

	pthread_mutex_lock(&mu);
	if (fd_path(fd))
		off = lseek(fd, 0, SEEK_CUR);
	rc = real_writev(fd, iov, cnt);
	if (rc > 0 && off >= 0)
		rec_write(fd, iov, cnt, (uint64_t)off, (size_t)rc);
	pthread_mutex_unlock(&mu);
	return rc;
}

int
ftruncate(int fd, off_t size)
{
	REAL(int, ftruncate, int, off_t);
	int rc;

	pthread_mutex_lock(&mu);
	rc = real_ftruncate(fd, size);
	if (rc == 0 && fd_path(fd))
		rec(R_TRUNC, fd_path(fd), (uint64_t)size, 0, 0, NULL);
	pthread_mutex_unlock(&mu);
	return rc;
}

int ftruncate64(int fd, off_t size) __attribute__((alias("ftruncate")));

int
fallocate(int fd, int mode, off_t off, off_t len)
{
	REAL(int, fallocate, int, int, off_t, off_t);
	struct stat st;
	int rc;

	pthread_mutex_lock(&mu);
	if (fd_path(fd) && fstat(fd, &st) < 0)
		st.st_size = 0;
	rc = real_fallocate(fd, mode, off, len);
	if (rc == 0 && fd_path(fd)) {
		if (mode & FALLOC_FL_PUNCH_HOLE)
			rec(R_PUNCH, fd_path(fd), (uint64_t)off, (uint64_t)len,
					0, NULL);
		else if (!(mode & FALLOC_FL_KEEP_SIZE) && off + len > st.st_size)
			rec(R_EXTEND, fd_path(fd), (uint64_t)(off + len), 0, 0,
					NULL);
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

int fallocate64(int fd, int mode, off_t off, off_t len)
	__attribute__((alias("fallocate")));

static int
do_sync(int fd, int data)
{
	REAL(int, fsync, int);
	REAL(int, fdatasync, int);
	int rc;

	pthread_mutex_lock(&mu);
	rc = data ? real_fdatasync(fd) : real_fsync(fd);
	if (rc == 0 && fd_path(fd))
		rec(R_SYNC, fd_path(fd), 0, 0, 0, NULL);
	pthread_mutex_unlock(&mu);
	return rc;
}

int
fsync(int fd)
{
	return do_sync(fd, 0);
}

int
fdatasync(int fd)
{
	return do_sync(fd, 1);
}

int
unlinkat(int dirfd, const char *name, int flags)
{
	REAL(int, unlinkat, int, const char *, int);
	uint32_t id;
	int rc;

	pthread_mutex_lock(&mu);
	init();
	id = at_id(dirfd, name);
	rc = real_unlinkat(dirfd, name, flags);
	if (rc == 0 && id)
		rec(R_UNLINK, id, 0, 0, 0, NULL);
	pthread_mutex_unlock(&mu);
	return rc;
}

int
unlink(const char *name)
{
	return unlinkat(AT_FDCWD, name, 0);
}

int
renameat2(int od, const char *on, int nd, const char *nn, unsigned flags)
{
	REAL(int, renameat2, int, const char *, int, const char *, unsigned);
	uint32_t a, b;
	int rc;

	pthread_mutex_lock(&mu);
	init();
	a = at_id(od, on);
	b = at_id(nd, nn);
	rc = real_renameat2(od, on, nd, nn, flags);
	if (rc == 0 && a && b)
		rec(R_RENAME, a, b, 0, 0, NULL);
	pthread_mutex_unlock(&mu);
	return rc;
}

int
renameat(int od, const char *on, int nd, const char *nn)
{
	return renameat2(od, on, nd, nn, 0);
}

int
rename(const char *on, const char *nn)
{
	return renameat2(AT_FDCWD, on, AT_FDCWD, nn, 0);
}

int
mkdirat(int dirfd, const char *name, mode_t mode)
{
	REAL(int, mkdirat, int, const char *, mode_t);
	uint32_t id;
	int rc;

	pthread_mutex_lock(&mu);
	init();
	id = at_id(dirfd, name);
	rc = real_mkdirat(dirfd, name, mode);
	if (rc == 0 && id)
		rec(R_MKDIR, id, 0, 0, 0, NULL);
	pthread_mutex_unlock(&mu);
	return rc;
}

int
mkdir(const char *name, mode_t mode)
{
	return mkdirat(AT_FDCWD, name, mode);
}
