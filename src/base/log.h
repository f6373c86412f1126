/* SPDX-License-Identifier: MIT */
/*
 * log.h - the one logging entry point of objfs.
 *
 * Messages go to stderr while the daemon runs in the foreground and, once
 * it has detached, to syslog(3) or, where no syslog daemon listens (a
 * container, a chroot), to a file of bounded size.  OBJFS_DEBUG tests the level before its
 * arguments are evaluated, so a trace line on the request path costs one
 * branch when tracing is off.  Thread-safe: each call writes one line.
 */
#ifndef OBJFS_LOG_H
#define OBJFS_LOG_H

enum objfs_log_level {
	OBJFS_LOG_ERR = 3,
	OBJFS_LOG_WARNING = 4,
	OBJFS_LOG_INFO = 6,
	OBJFS_LOG_DEBUG = 7,
};

/* Messages above this level are dropped.  Set once at start-up. */
extern int objfs_log_max;

/* Switch between stderr (0) and syslog (1).  Called before threads start. */
void objfs_log_use_syslog(int on);
/* Does a syslog daemon take messages here (a datagram socket at
 * /dev/log that accepts a connection)? */
int objfs_log_syslog_here(void);
/* Log to file @path instead, appended to, at most @max bytes: past that it
 * becomes @path.1 (replacing the one before) and a new file starts.
 * 0 or -errno (nothing changed then).  NULL: back to stderr. */
int objfs_log_use_file(const char *path, unsigned long max);
/* Where messages go: "stderr", "syslog" or the file's path. */
const char *objfs_log_where(void);

/* On SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT: the signal and the
 * stack into the log (stderr or the file), then the default action. */
void objfs_log_crash_traces(void);

void objfs_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define OBJFS_DEBUG(...)						\
	do {								\
		if (objfs_log_max >= OBJFS_LOG_DEBUG)			\
			objfs_log(OBJFS_LOG_DEBUG, __VA_ARGS__);	\
	} while (0)

#endif
