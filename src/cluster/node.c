/* SPDX-License-Identifier: MIT */
/*
 * node.c - a shared node as the others see it (doc/design.md, "Many
 * nodes on one namespace"): the name of its lock in the pool, whether it
 * holds it (alive), the margin its local deadline keeps before the lock
 * could lapse, whether this node is past that deadline, whether the head
 * is still of its epoch (an exclusive mount may have taken the namespace
 * over), and whether a node name was one of this data directory's
 * daemons'.  The bottom of shared mode: it calls only the pool's client
 * and the tree's head (tree.c).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "src/base/clock.h"
#include "src/base/log.h"

#include "src/store_int.h"
#include "src/cluster/tier_int.h"

void
tier_node_name(char name[64], uint64_t node)
{
	snprintf(name, 64, TIER_NODE_FMT, node);
}

/* 1 while node @node holds its lock, 0 once it does not, or -errno. */
int
tier_node_alive(struct objfs_tier *t, uint64_t node)
{
	char name[64], client[128], cookie[256];
	int rc;

	tier_node_name(name, node);
	rc = objfs_remote_holder(t->r, name, client, sizeof(client), cookie,
			sizeof(cookie));
	objfs_tier_note(t, rc == -ENOENT ? 0 : rc, "reading a node's lock");
	return rc == 0 ? 1 : rc == -ENOENT ? 0 : rc;
}

/* The margin the local deadline keeps before the lock, or the share of
 * the hold, could lapse. */
uint64_t
tier_node_margin_ns(const struct objfs_tier *t)
{
	uint64_t m = (uint64_t)t->deadline_s * 1000000000u / 4;

	return m < 2000000000u ? m : 2000000000u;
}

/* The caller renews and tries again: a node that stopped may have been
 * given up by the others, and the log compacted past it. */
int
tier_past_deadline(struct objfs_tier *t)
{
	uint64_t t0 = objfs_mono_ns();
	int rc;

	pthread_mutex_lock(&t->lock);
	rc = t0 + tier_node_margin_ns(t) >= t->lease_ns ? -ETIME : 0;
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/* The head names an epoch other than this node's: lost (follow.c's
 * renewal, the compactor and the collector ask). */
int
tier_epoch_check(struct objfs_tier *t)
{
	struct head h;
	int rc = tier_head_read(t, &h, NULL);

	if (rc < 0)
		return rc;
	if (h.epoch == t->epoch)
		return 0;
	pthread_mutex_lock(&t->lock);
	if (!t->lost)
		objfs_log(OBJFS_LOG_ERR, "remote: %s: an exclusive mount took "
			"the namespace over (epoch %" PRIu64 ", this node's %"
			PRIu64 "): nothing more is written here (EIO); "
			"unmount, and mount again", t->spec, h.epoch, t->epoch);
	t->lost = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
	return -EIO;
}

/* One of this data directory's daemons' names (shared.c notes them). */
int
tier_owned(const struct objfs_tier *t, uint64_t node)
{
	for (size_t i = 0; node && i < t->nowned; i++)
		if (t->owned[i] == node)
			return 1;
	return 0;
}
