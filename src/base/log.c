/* SPDX-License-Identifier: MIT */
/*
 * log.c - stderr, syslog or file output for objfs_log().
 *
 * The destination is chosen before the session's threads start and never
 * changes afterwards; stdio and syslog serialise the lines themselves, and
 * a file's lines and its rotation are serialised by file_lock.
 */
#include <config.h>

#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "src/base/log.h"

int objfs_log_max = OBJFS_LOG_INFO;
static int to_syslog;

static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static int file_fd = -1;		/* under file_lock */
static unsigned long file_size, file_max;
static char file_path[PATH_MAX];

int
objfs_log_syslog_here(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), ok;

	if (fd < 0)
		return 0;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", "/dev/log");
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

int
objfs_log_use_file(const char *path, unsigned long max)
{
	struct stat st;
	int fd;

	if (!path) {			/* back to stderr */
		pthread_mutex_lock(&file_lock);
		if (file_fd >= 0)
			close(file_fd);
		file_fd = -1;
		pthread_mutex_unlock(&file_lock);
		return 0;
	}
	if (strlen(path) + 3 > sizeof(file_path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = S_ISREG(st.st_mode) ? errno : EINVAL;

		close(fd);
		return -e;
	}
	pthread_mutex_lock(&file_lock);
	if (file_fd >= 0)
		close(file_fd);
	file_fd = fd;
	file_size = (unsigned long)st.st_size;
	file_max = max;
	snprintf(file_path, sizeof(file_path), "%s", path);
	pthread_mutex_unlock(&file_lock);
	to_syslog = 0;
	return 0;
}

const char *
objfs_log_where(void)
{
	return to_syslog ? "syslog" : file_fd >= 0 ? file_path : "stderr";
}

/* One line into the file, which becomes PATH.1 once it is full. */
static void
file_line(const char *level, const char *line)
{
	char buf[1200], old[PATH_MAX + 2];
	struct tm tm;
	time_t now = time(NULL);
	int n;

	gmtime_r(&now, &tm);
	n = snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ objfs[%ld] "
		"%s: %s\n", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		tm.tm_hour, tm.tm_min, tm.tm_sec, (long)getpid(), level, line);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	pthread_mutex_lock(&file_lock);
	if (file_size + (unsigned long)n > file_max) {
		int fd;

		snprintf(old, sizeof(old), "%s.1", file_path);
		fd = rename(file_path, old) == 0 ?
			open(file_path, O_WRONLY | O_APPEND | O_CREAT |
					O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
		if (fd >= 0) {
			close(file_fd);
			file_fd = fd;
			file_size = 0;
		}
	}
	if (write(file_fd, buf, (size_t)n) == n)
		file_size += (unsigned long)n;
	pthread_mutex_unlock(&file_lock);
}

void
objfs_log_use_syslog(int on)
{
	if (on && !to_syslog)
		openlog("objfs", LOG_PID, LOG_DAEMON);
	to_syslog = on;
}

void
objfs_log(int level, const char *fmt, ...)
{
	static const char *const names[8] = {
		"emerg", "alert", "crit", "error", "warning", "notice", "info",
		"debug"
	};
	char line[1024];
	va_list ap;

	if (level > objfs_log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (to_syslog) {
		syslog(level, "%s", line);
		return;
	}
	if (file_fd >= 0) {
		file_line(names[level & 7], line);
		return;
	}
	fprintf(stderr, "objfs: %s: %s\n", names[level & 7], line);
}

/* ---- a fatal signal's trace ------------------------------------------- */

/* A daemon that dies of a fault says where, in its log: the signal and
 * the faulting thread's stack as return addresses (objfs(+0x1a4ab):
 * `addr2line -e objfs 0x1a4ab` names the line on the same build).
 * Only async-signal-safe calls: write(2) and backtrace_symbols_fd
 * (backtrace primed at install, so that its library is loaded then, not
 * in the handler).  Then the
 * default action, so the exit status and a core are what they were. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CRASH_TRACES	0	/* the sanitizer's own report is better */
#else
#define CRASH_TRACES	1
static char crash_stack[64 << 10];

static void
crash_put(int fd, const char *p)
{
	size_t n = strlen(p);

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void
crash_handler(int sig)
{
	void *pcs[64];
	char num[16];
	int n = backtrace(pcs, 64), fd = file_fd >= 0 ? file_fd : 2, k = 0;
	unsigned v = (unsigned)sig;

	do
		num[sizeof(num) - 2 - k++] = (char)('0' + v % 10);
	while ((v /= 10) && k < 14);
	num[sizeof(num) - 1] = 0;
	crash_put(fd, "objfs: error: fatal signal ");
	crash_put(fd, num + sizeof(num) - 1 - k);
	crash_put(fd, sig == SIGSEGV ? " (SIGSEGV)" : sig == SIGBUS ?
		" (SIGBUS)" : sig == SIGILL ? " (SIGILL)" : sig == SIGFPE ?
		" (SIGFPE)" : sig == SIGABRT ? " (SIGABRT)" : "");
	crash_put(fd, "; the stack, innermost first:\n");
	backtrace_symbols_fd(pcs, n, fd);
	signal(sig, SIG_DFL);
	raise(sig);
}

#endif

void
objfs_log_crash_traces(void)
{
#if CRASH_TRACES
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	struct sigaction sa;
	stack_t st = { .ss_sp = crash_stack, .ss_size = sizeof(crash_stack) };
	void *prime[2];

	(void)backtrace(prime, 2);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = crash_handler;
	sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	(void)sigaltstack(&st, NULL);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		(void)sigaction(sigs[i], &sa, NULL);
#endif
}
