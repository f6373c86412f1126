/* SPDX-License-Identifier: MIT */
/*
 * note.c - what the remote tier's operations find, kept for the
 * status file: each kind of operation counted (its number, bytes and
 * time), and the cluster's state as the last answer showed it (reachable
 * or not within remote_timeout, the pool full or taking writes), each
 * change logged once.  Every other file of the tier calls in here; this
 * calls none of them.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "src/base/clock.h"
#include "src/base/deadline.h"
#include "src/base/log.h"
#include "src/store_int.h"
#include "src/cluster/tier_int.h"

void
objfs_tier_count(struct tier_counter *c, uint64_t bytes, uint64_t t0)
{
	atomic_fetch_add(&c->n, 1);
	atomic_fetch_add(&c->bytes, bytes);
	atomic_fetch_add(&c->ns, objfs_mono_ns() - t0);
}

static int
unreachable_err(int rc)
{
	return rc == -ETIMEDOUT || rc == -ENOTCONN || rc == -ECONNREFUSED ||
		rc == -EHOSTUNREACH || rc == -ESHUTDOWN;
}

void
objfs_tier_note(struct objfs_tier *t, int rc, const char *what)
{
	pthread_mutex_lock(&t->lock);
	/* A pool without room answers at once (rados_set_pool_full_try):
	 * writes fail with ENOSPC or EDQUOT, deletes go through. */
	if (rc == -ENOSPC || rc == -EDQUOT) {
		if (!t->full_err)
			objfs_log(OBJFS_LOG_ERR, "remote: %s: %s: the pool is "
				"full (%s): writes to it fail with %s until "
				"there is room (delete files and run objfsctl "
				"gc, or give the pool more space); nothing "
				"acknowledged is lost, and what waits is sent "
				"then", t->spec, what ? what : "a write",
				rc == -EDQUOT ? "its quota is reached" :
				"its OSDs are full", rc == -EDQUOT ? "EDQUOT" :
				"ENOSPC");
		t->full_err = rc;
	} else if (rc == 0 && t->full_err && what &&
		   strncmp(what, "writing", 7) == 0) {
		/* A chunk or a log record taken (a read, or the hold's
		 * renewal, which a full pool may let through, says nothing
		 * of room). */
		objfs_log(OBJFS_LOG_INFO, "remote: %s: %s: the pool takes "
			"writes again", t->spec, what);
		t->full_err = 0;
	}
	/* A call whose own time ran out says nothing of the cluster
	 * (deadline.h: its request may not even have been sent). */
	if (unreachable_err(rc) && objfs_deadline_passed()) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	if (!unreachable_err(rc)) {
		if (!t->reachable)
			objfs_log(OBJFS_LOG_INFO, "remote: %s answers again",
				t->spec);
		t->reachable = 1;
	} else if (t->reachable) {
		t->reachable = 0;
		t->since_ns = objfs_mono_ns();
		snprintf(t->why, sizeof(t->why), "%s: no answer within %u s",
			what ? what : "an operation", t->timeout_s);
		objfs_log(OBJFS_LOG_ERR, "remote: %s: %s did not answer within "
			"%u s (remote_timeout); operations that need it fail "
			"with ETIMEDOUT, resident reads and local writes go on, "
			"and queued work is sent when it answers", t->spec,
			what ? what : "the cluster", t->timeout_s);
	}
	pthread_mutex_unlock(&t->lock);
}
