/* SPDX-License-Identifier: MIT */
/*
 * spiller_ops.c - how the spiller's threads (spiller.c) reach the objects:
 * the five calls of struct objfs_spiller_ops.  Each finds the inode among
 * those in memory (an inode that is not, or still loading, has no block
 * the clock could have chosen and no read-ahead waiting), takes its lock,
 * does the work in the file layer (writeout.c, read.c) or the chunk
 * store (copy.h), and lets it go.  The spiller holds none of its own
 * locks across these calls (store_int.h, the lock hierarchy).
 */
#include <config.h>

#include <errno.h>

#include "src/bytes/data_int.h"

static uint64_t
spill_evict(void *store, const struct objfs_arena_victim *v, int n, int *err)
{
	struct objfs_store *s = store;
	struct objfs_inode *ip;
	uint64_t freed = 0;
	int rc;

	if (objfs_store_iget_cached(s, v[0].ino, &ip) < 0)
		return 0;
	objfs_inode_lock(ip);
	/* A pinned object stays (objfsctl pin). */
	rc = ip->pinned ? 0 : objfs_data_evict(s, ip, v, n, &freed);
	if (rc == -ENOLCK) {
		/* A file whose lease this node lost: its unpublished chunks
		 * go, and with them the need to write them anywhere. */
		objfs_share_fence(s, ip);
		rc = 0;
	}
	objfs_inode_unlock(ip);
	objfs_store_iput(s, ip);
	if (rc < 0 && *err == 0)
		*err = rc;
	return freed;
}

static void
spill_restore(void *store, uint64_t ino, uint64_t idx, uint64_t n)
{
	struct objfs_store *s = store;
	struct objfs_inode *ip;

	if (objfs_store_iget_cached(s, ino, &ip) < 0)
		return;
	objfs_inode_lock(ip);
	objfs_data_restore_range(s, ip, idx, n);
	objfs_inode_unlock(ip);
	objfs_store_iput(s, ip);
}

static void
spill_read_ahead(void *store, uint64_t ino, uint64_t idx, int slot,
		uint64_t gen)
{
	struct objfs_store *s = store;
	struct objfs_inode *ip;

	(void)idx;	/* the slot says which chunk, and gen whether still */
	if (objfs_store_iget_cached(s, ino, &ip) < 0)
		return;
	objfs_inode_lock(ip);
	objfs_data_read_ahead(s, ip, slot, gen);
	objfs_inode_unlock(ip);
	objfs_store_iput(s, ip);
}

/* A full disk: what waits for a durable commit is given back now. */
static int
spill_reclaim(void *store)
{
	struct objfs_store *s = store;

	return s->copy->reclaim(s);
}

static uint64_t
spill_shed(void *store, uint64_t want)
{
	return objfs_sealed_shed(store, want);
}

const struct objfs_spiller_ops objfs_store_spiller_ops = {
	.shed = spill_shed,
	.evict = spill_evict,
	.reclaim = spill_reclaim,
	.restore = spill_restore,
	.read_ahead = spill_read_ahead,
};
