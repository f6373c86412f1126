/* SPDX-License-Identifier: MIT */
/*
 * units.c - see units.h.  Pure; thread-safe.
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>

#include "src/base/units.h"

const char *
objfs_format_size(uint64_t v, char *buf, size_t n)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = (double)v;
	int i = 0;

	while (d >= 1024 && i < 4) {
		d /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, n, "%" PRIu64 " B", v);
	else
		snprintf(buf, n, "%.1f %s", d, u[i]);
	return buf;
}
