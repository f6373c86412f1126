/* SPDX-License-Identifier: MIT */
/*
 * log.h - the one logging entry point of objfs.
 *
 * Messages go to stderr while the daemon runs in the foreground and to
 * syslog(3) once it has detached.  OBJFS_DEBUG tests the level before its
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

void objfs_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define OBJFS_DEBUG(...)						\
	do {								\
		if (objfs_log_max >= OBJFS_LOG_DEBUG)			\
			objfs_log(OBJFS_LOG_DEBUG, __VA_ARGS__);	\
	} while (0)

#endif
