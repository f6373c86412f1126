/* SPDX-License-Identifier: MIT */
/*
 * deadline.c - the deadline of the call a thread serves (deadline.h).
 */
#include <config.h>

#include "src/base/clock.h"
#include "src/base/deadline.h"

static _Thread_local uint64_t deadline_ns;	/* monotonic; 0: none */
static _Thread_local uint64_t began_ns;		/* the outermost call's */
static _Thread_local uint64_t longest_ns;	/* objfs_deadline_longest */

uint64_t
objfs_deadline_enter(uint64_t ns)
{
	uint64_t outer = deadline_ns, now, d;

	if (ns == 0)
		return outer;
	now = objfs_mono_ns();
	d = now + ns;
	if (outer == 0) {
		began_ns = now;
		deadline_ns = d;
	} else if (d < outer) {
		deadline_ns = d;
	}
	return outer;
}

void
objfs_deadline_leave(uint64_t outer)
{
	if (outer == 0 && deadline_ns != 0) {
		uint64_t took = objfs_mono_ns() - began_ns;

		if (took > longest_ns)
			longest_ns = took;
	}
	deadline_ns = outer;
}

uint64_t
objfs_deadline_longest(void)
{
	uint64_t l = longest_ns;

	longest_ns = 0;
	return l;
}

uint64_t
objfs_deadline(void)
{
	return deadline_ns;
}

int
objfs_deadline_passed(void)
{
	return deadline_ns != 0 && objfs_mono_ns() >= deadline_ns;
}

uint64_t
objfs_deadline_cap_ns(uint64_t ns, uint64_t min_ns)
{
	uint64_t now, left;

	if (deadline_ns == 0)
		return ns;
	now = objfs_mono_ns();
	left = deadline_ns > now ? deadline_ns - now : 0;
	if (left < min_ns)
		left = min_ns;
	return left < ns ? left : ns;
}
