/* SPDX-License-Identifier: MIT */
/*
 * deadline.h - one call, one timeout.  A system call on a mount with a
 * remote tier fails within remote_timeout of the cluster's last answer
 * (and a little local work), whatever it waits for: the store sets a
 * deadline on the thread that serves the call (OBJFS_DEADLINE_SCOPE, at
 * each of its entry points), every request to the pool or bucket is
 * refused once it has passed and is given only what is left of it, and
 * every wait and retry inside the call stops there.  An answer moves it
 * on (objfs_deadline_progress): a call that is getting answers (an fsync
 * of gigabytes) goes on.  Nested scopes keep the earliest deadline: a
 * call the store makes to itself does not extend its caller's.  Threads
 * of the store's own (the follower, the shipper, the renewer) have
 * none.
 */
#ifndef OBJFS_BASE_DEADLINE_H
#define OBJFS_BASE_DEADLINE_H

#include <stdint.h>

/* From now, @ns nanoseconds (0: no deadline of its own); an earlier
 * deadline already set stays.  Returns what to give objfs_deadline_leave
 * (the deadline before). */
uint64_t objfs_deadline_enter(uint64_t ns);
/* The same, with the deadline @when (monotonic ns) of a call this one
 * continues (0: now + @ns, as objfs_deadline_enter); @ns what an answer
 * moves it to. */
uint64_t objfs_deadline_enter_until(uint64_t when, uint64_t ns);
void objfs_deadline_leave(uint64_t outer);
static inline void
objfs_deadline_leave_at(uint64_t *outer)
{
	objfs_deadline_leave(*outer);
}

/* The scope of one call: left, however the function returns. */
#define OBJFS_DEADLINE_SCOPE(ns)					\
	uint64_t objfs_deadline_outer_					\
		__attribute__((cleanup(objfs_deadline_leave_at), unused)) = \
		objfs_deadline_enter(ns)

/* The scope of a request that continues a call (@when, 0: none). */
#define OBJFS_DEADLINE_SCOPE_UNTIL(when, ns)				\
	uint64_t objfs_deadline_outer_					\
		__attribute__((cleanup(objfs_deadline_leave_at), unused)) = \
		objfs_deadline_enter_until(when, ns)

/* This thread's deadline (monotonic ns), 0 when it has none. */
uint64_t objfs_deadline(void);

/* It has passed: what waits or would be sent fails with ETIMEDOUT. */
int objfs_deadline_passed(void);

/* @ns, or what is left before the deadline when that is less (never
 * below @min_ns, so that a request sent just before it can still be
 * answered, nor above @ns). */
uint64_t objfs_deadline_cap_ns(uint64_t ns, uint64_t min_ns);

/* The cluster answered this thread's call: its deadline is its timeout
 * from now (never earlier than it was). */
void objfs_deadline_progress(void);

/* The most a call this thread served ended past its deadline, since the
 * last ask (then 0 again): how a test checks the bound. */
uint64_t objfs_deadline_overrun(void);

#endif
