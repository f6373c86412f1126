/* SPDX-License-Identifier: MIT */
/*
 * deadline.c - the deadline of the call a thread serves (deadline.h).
 */
#include <config.h>

#include "src/base/clock.h"
#include "src/base/deadline.h"

static _Thread_local uint64_t deadline_ns;	/* monotonic; 0: none */
static _Thread_local uint64_t call_ns;		/* the outermost call's */
static _Thread_local uint64_t overrun_ns;	/* objfs_deadline_overrun */
/* The deadline the cluster's latest answer in this call gave it
 * (objfs_deadline_progress): kept when a nested scope ends, which
 * otherwise puts back the deadline from before it (a lookup inside a
 * lookup answered for seconds, then failed at the older deadline and was
 * counted as past it: the simulator's seed 77, issue 47). */
static _Thread_local uint64_t moved_ns;

uint64_t
objfs_deadline_enter(uint64_t ns)
{
	uint64_t outer = deadline_ns, d;

	if (ns == 0)
		return outer;
	d = objfs_mono_ns() + ns;
	if (outer == 0) {
		call_ns = ns;
		deadline_ns = d;
		moved_ns = 0;
	} else if (d < outer) {
		deadline_ns = d;
	}
	return outer;
}

uint64_t
objfs_deadline_enter_until(uint64_t when, uint64_t ns)
{
	uint64_t outer = deadline_ns;

	if (when == 0)
		return objfs_deadline_enter(ns);
	if (outer == 0) {
		call_ns = ns;
		deadline_ns = when;
		moved_ns = 0;
	} else if (when < outer) {
		deadline_ns = when;
	}
	return outer;
}

void
objfs_deadline_leave(uint64_t outer)
{
	if (outer == 0 && deadline_ns != 0) {
		uint64_t now = objfs_mono_ns();

		if (now > deadline_ns && now - deadline_ns > overrun_ns)
			overrun_ns = now - deadline_ns;
		moved_ns = 0;
	}
	/* An answer inside the nested scope moved the call's deadline too. */
	deadline_ns = outer && moved_ns > outer ? moved_ns : outer;
}

void
objfs_deadline_progress(void)
{
	uint64_t d;

	if (deadline_ns == 0)
		return;
	d = objfs_mono_ns() + call_ns;
	if (d > deadline_ns)
		deadline_ns = d;
	if (d > moved_ns)
		moved_ns = d;
}

uint64_t
objfs_deadline_overrun(void)
{
	uint64_t l = overrun_ns;

	overrun_ns = 0;
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
