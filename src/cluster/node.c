/* SPDX-License-Identifier: MIT */
/*
 * node.c - a shared node as the others see it (doc/design.md, "Many
 * nodes on one namespace"): the name of its lock in the pool, whether it
 * holds it (alive), the margin its local deadline keeps before the lock
 * could lapse, and whether this node is past that deadline.  The bottom of shared mode: it calls only the pool's
 * client.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "src/base/clock.h"

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
