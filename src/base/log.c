/* SPDX-License-Identifier: MIT */
/*
 * log.c - stderr or syslog output for objfs_log().
 *
 * The destination is chosen before the session's threads start and never
 * changes afterwards, so it needs no lock; stdio and syslog serialise the
 * lines themselves.
 */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

#include "log.h"

int objfs_log_max = OBJFS_LOG_INFO;
static int to_syslog;

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
	fprintf(stderr, "objfs: %s: %s\n", names[level & 7], line);
}
