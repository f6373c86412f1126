/* SPDX-License-Identifier: MIT */
/*
 * shared.c - shared mode (-o shared): many mounts, on as many
 * machines, of one pool's namespace (doc/design.md, "Many nodes on one
 * namespace", invariants 1-8).  This file: a mount's open, attach, start,
 * quiesce, stop and close, and the follower thread.  It is the top of
 * shared mode: following the log and the node's lock are follow.c's,
 * the commit hook and the write leases lease.c's, the collector's
 * pins pins.c's, compaction compact.c's, a node's name and
 * liveness node.c's.
 *
 * The tree is the head's snapshot and one log, as for a single mount; in
 * shared mode every mount appends to that log (lease.c).  Other
 * mounts find new records within TIER_FOLLOW_MS (a thread looks that
 * often, and a notify on the head wakes it at once) and apply them
 * (objfs_store_apply_remote).  A node holds a RADOS lock,
 * "objfs.node.<number>", renewed every third of remote_lease with
 * MUST_RENEW: a renewal that finds it lapsed takes it again and applies
 * the log before anything else (a lease another node broke meanwhile is
 * fenced as its record is applied).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/clock.h"
#include "src/base/csum.h"
#include "src/base/log.h"
#include "meta/meta_keys.h"
#include "src/store_int.h"
#include "src/cluster/tier_int.h"

static void *
follow_main(void *arg)
{
	struct objfs_tier *t = arg;
	int quiet = 0;

	pthread_mutex_lock(&t->lock);
	while (!t->stop && !t->follow_stop) {
		int rc;

		if (!t->kicked)
			objfs_cond_wait_ms(&t->cv, &t->lock, TIER_FOLLOW_MS);
		t->kicked = 0;
		if (t->stop || t->follow_stop)
			break;
		pthread_mutex_unlock(&t->lock);
		/* A watch lost to an OSD restart is made again: collectors
		 * ask through it, and appends are seen at once. */
		if (t->watching && objfs_remote_watch_lost(t->r)) {
			objfs_remote_unwatch(t->r, t->watch);
			if (objfs_remote_watch(t->r, TIER_WATCH, t->lease_s,
					tier_share_watched, t, &t->watch) < 0)
				t->watching = 0;
		}
		rc = tier_share_catch_up(t);
		/* What changed, to the kernel's caches, with no lock held. */
		objfs_store_notify_send(t->s, 0);
		tier_share_answer_pins(t);
		/* Recalls answered, what waits shipped, idle directories
		 * given back. */
		tier_deleg_tick(t);
		/* Closes and destroys that failed, tried again. */
		objfs_share_todo(t->s);
		if (rc < 0 && rc != -ETIMEDOUT && !quiet) {
			objfs_log(OBJFS_LOG_ERR, "remote: %s: applying the pool's "
				"log: %s", t->spec, strerror(-rc));
			quiet = 1;
		} else if (rc == 0) {
			quiet = 0;
		}
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* ---- open, start, stop ------------------------------------------------ */

int
tier_share_open(struct objfs_tier *t, char *msg, size_t msgsize)
{
	char name[64], who[256] = "";
	int rc;

	uint64_t t0 = objfs_mono_ns();

	t->node = tier_random64();
	pthread_mutex_init(&t->catch_mu, NULL);
	pthread_mutex_init(&t->renew_mu, NULL);
	pthread_mutex_init(&t->lease_mu, NULL);
	pthread_mutex_init(&t->deleg_mu, NULL);
	rc = objfs_remote_hold_shared(t->r, TIER_HOLD, t->holder, t->hold_s,
			who, sizeof(who));
	if (rc == -EBUSY) {
		snprintf(msg, msgsize, "%s is mounted by an objfs that does not "
			"share it (%s): unmount it there and mount every node "
			"with -o shared, or wait until its hold expires "
			"(remote_hold, %u s after it stops renewing it)",
			t->spec, who[0] ? who : "holder unknown", t->hold_s);
		return rc;
	}
	if (rc < 0) {
		snprintf(msg, msgsize, "%s: cannot take the namespace's shared "
			"hold: %s", t->spec, rc == -ENOSPC || rc == -EDQUOT ?
			"the pool is full" : strerror(-rc));
		return rc;
	}
	tier_node_name(name, t->node);
	rc = objfs_remote_hold(t->r, name, t->holder, t->lease_s, NULL, 0);
	if (rc < 0) {
		(void)objfs_remote_release(t->r, TIER_HOLD, t->holder);
		snprintf(msg, msgsize, "%s: cannot take this node's lock: %s",
			t->spec, strerror(-rc));
		return rc;
	}
	/* From before the holds were asked for: they were granted after. */
	t->lease_ns = t0 + (uint64_t)t->deadline_s * 1000000000u;
	/* Until it knows where it is in the log, this node needs all of it
	 * (compact.c). */
	rc = tier_compact_register(t, 0);
	if (rc < 0) {
		(void)objfs_remote_release(t->r, name, t->holder);
		(void)objfs_remote_release(t->r, TIER_HOLD, t->holder);
		snprintf(msg, msgsize, "%s: cannot register this node: %s",
			t->spec, strerror(-rc));
		return rc;
	}
	/* A chunk this mount finds in the pool may be garbage to another
	 * mount's collector: finding it writes to it (remote.h). */
	objfs_remote_set_touch(t->r, 1);
	return 0;
}

/* This node's lock lapsed (a pause, a partition, an unreachable cluster
 * longer than remote_lease): another node may have broken any of its
 * leases meanwhile.  The lock is taken again, and the log applied: a
 * break in it fences the lease it broke (lease_moved), and the rest are
 * still this node's (a break after this is a record after this, and a
 * publish of a broken lease fails its check in the log's order). */
static void
drop_unleased(struct objfs_tier *t)
{
	struct objfs_inode **all;
	size_t k;

	if (objfs_inode_snapshot(t->s, &all, &k) < 0)
		return;
	for (size_t i = 0; i < k; i++) {
		struct objfs_inode *ip = all[i];
		struct objfs_meta_txn *tx;
		uint64_t node = 0;

		objfs_inode_lock(ip);
		if (S_ISREG(ip->attr.mode) && (ip->chunks.ndirty ||
		    ip->attr_dirty) && objfs_meta_begin(t->m, 0, &tx) == 0) {
			(void)tier_lease_node(tx, ip->ino, &node);
			if (node != t->node) {
				struct objfs_attr a;
				int rc = objfs_meta_inode_get(tx, ip->ino, &a);

				objfs_log(OBJFS_LOG_WARNING, "remote: %s: inode %"
					PRIu64 ": what the last daemon wrote "
					"to it and never published is dropped: "
					"another node took the file since",
					t->spec, ip->ino);
				objfs_data_unload(t->s, ip);
				ip->attr_dirty = 0;
				ip->detached = 0;
				if (rc == 0) {
					ip->attr = a;
					(void)objfs_data_load(t->s, ip);
				} else {
					ip->gone = 1;
					ip->attr.nlink = 0;
				}
			}
			objfs_meta_abort(tx);
		}
		objfs_inode_unlock(ip);
	}
	objfs_inode_put_all(t->s, all, k);
}

static int
owned_one(void *arg, const char *key, uint64_t v)
{
	struct objfs_tier *t = arg;
	uint64_t node;

	(void)v;
	if (strlen(key) != 20 || sscanf(key, "own.%16" SCNx64, &node) != 1)
		return 0;
	if (!tier_owned(t, node) && t->nowned < TIER_OWNED_MAX)
		t->owned[t->nowned++] = node;
	return 0;
}

/*
 * The node names of this data directory's earlier daemons, and this
 * mount's noted among them, in a local record (never shipped) committed
 * before this mount changes anything of the tree: whatever a daemon of
 * it held in the tree (leases, directories) is then found by the next
 * mount of it, even when the commit that took them over answered an
 * error and landed, or the mount died in the middle.  Until the
 * simulator's seed 19 only the last owner was known (SUPER_OWNER, set at
 * the end of a mount's start): a mount that failed after taking the
 * leases over left them to a name the next mount did not know, which
 * dropped in memory what the killed daemon had written and kept it in
 * its index, different from the tree.
 */
static int
owned_note(struct objfs_tier *t, uint64_t prev)
{
	struct objfs_meta_txn *tx;
	char k[32];
	int rc = objfs_meta_begin(t->m, 0, &tx);

	if (rc < 0)
		return rc;
	t->nowned = 0;
	if (prev)
		t->owned[t->nowned++] = prev;
	rc = objfs_meta_super_list(tx, "own.", owned_one, t);
	objfs_meta_abort(tx);
	if (rc < 0)
		return rc;
	rc = objfs_meta_begin(t->m, OBJFS_META_ESSENTIAL, &tx);
	if (rc < 0)
		return rc;
	snprintf(k, sizeof(k), TIER_OWNED_FMT, t->node);
	return objfs_commit_or_abort(tx, objfs_meta_super_put(tx, k, 1), NULL);
}

/* Everything of the earlier daemons is this mount's now: their names
 * forgotten. */
static int
owned_forget(struct objfs_tier *t)
{
	struct objfs_meta_txn *tx;
	int rc = objfs_meta_begin(t->m, OBJFS_META_ESSENTIAL, &tx);

	for (size_t i = 0; rc == 0 && i < t->nowned; i++) {
		char k[32];

		snprintf(k, sizeof(k), TIER_OWNED_FMT, t->owned[i]);
		rc = objfs_meta_super_del(tx, k);
		if (rc == -ENOENT)
			rc = 0;
	}
	return rc < 0 ? (objfs_meta_abort(tx), rc) :
		objfs_commit_or_abort(tx, 0, NULL);
}

int
tier_share_attach(struct objfs_tier *t, struct objfs_store *s, char *msg,
		size_t msgsize)
{
	struct objfs_meta_txn *tx;
	uint64_t pos = 0, prev = 0;
	size_t n = 0;
	int rc;

	t->s = s;
	t->m = s->meta;
	if (!t->have_head)
		return 0;	/* the first: start makes the tree */
	t->epoch = t->head_epoch;
	rc = tier_index_pos(t, &pos);
	if (rc < 0) {
		snprintf(msg, msgsize, "%s: the index has no position in the "
			"pool's log: %s", t->spec, strerror(-rc));
		return rc;
	}
	atomic_store(&t->pos, pos);
	if (objfs_meta_begin(t->m, 0, &tx) == 0) {
		(void)objfs_meta_super_get(tx, SUPER_OWNER, &prev);
		objfs_meta_abort(tx);
	}
	rc = owned_note(t, prev == t->node ? 0 : prev);
	if (rc < 0) {
		snprintf(msg, msgsize, "%s: cannot write to the index: %s",
			t->spec, strerror(-rc));
		return rc;
	}
	/* The tree's delegations, before the log is applied: a record
	 * that takes away one the last daemon held while commits of it
	 * wait here is seen as it is applied. */
	rc = tier_deleg_attach(t, prev);
	if (rc < 0) {
		snprintf(msg, msgsize, "%s: cannot read the index: %s",
			t->spec, strerror(-rc));
		return rc;
	}
	objfs_meta_set_hook(t->m, tier_share_hook, t);
	rc = tier_share_catch_up(t);
	if (rc == -ESTALE && !t->built) {
		/* The head's epoch was fenced by an exclusive mount that
		 * stopped before its own head: this mount begins a new
		 * epoch, whose snapshot must be the tree, not this index
		 * (what this data directory's last daemon wrote under its
		 * leases and never published is in it).  Opened again, it
		 * is built from the pool first (mount.c), then begins it.
		 * Until the simulator's seed 8 the new epoch's snapshot was
		 * this index: a file the last daemon had written and never
		 * published reached every node with its size and no bytes. */
		objfs_meta_set_hook(t->m, NULL, NULL);
		tier_mark_rebuild(t);
		snprintf(msg, msgsize, "%s: the head's epoch is fenced, and a "
			"new one begins from the pool's tree: this data "
			"directory's index is built anew first", t->spec);
		return -ESTALE;
	}
	if (rc == -ESTALE) {
		/* The head's epoch was fenced by an exclusive mount that
		 * stopped before its own head: this mount begins a new
		 * epoch from the tree as the log has it up to the fence
		 * (the index was built from it in this mount). */
		objfs_meta_set_hook(t->m, NULL, NULL);
		pthread_mutex_lock(&t->lock);
		t->lost = 0;
		pthread_mutex_unlock(&t->lock);
		objfs_log(OBJFS_LOG_INFO, "remote: %s: the head's epoch is "
			"fenced; this mount begins a new one", t->spec);
		return 0;
	}
	/* Applying the log may have met the taking of a directory this data
	 * directory's last daemon held while changes waited (diverged):
	 * the take-over below says so (-ESTALE). */
	if (rc < 0 && tier_deleg_take_over(t, 0) != -ESTALE) {
		snprintf(msg, msgsize, "%s: cannot apply the pool's log: %s",
			t->spec, strerror(-rc));
		return rc;
	}
	/* This data directory's last daemon was killed: the leases it still
	 * holds are this mount's before anything of its files is touched
	 * (orphans removed, the arena adopted). */
	rc = tier_deleg_take_over(t, prev);
	if (rc < 0) {
		snprintf(msg, msgsize, rc == -ESTALE ? "%s: another node took "
			"a directory this data directory's last daemon held, "
			"while changes of it had not reached the pool: they "
			"are refused, and the index is built anew from the "
			"pool%s" : "%s: cannot take over the "
			"directories of the last daemon of this data "
			"directory: %s", t->spec, rc == -ESTALE ? "" :
			strerror(-rc));
		return rc;
	}
	for (size_t i = 0; i < t->nowned; i++) {
		size_t k = 0;

		rc = tier_share_rewrite_leases(t, t->owned[i], 0, 0, &k);
		if (rc < 0) {
			snprintf(msg, msgsize, "%s: cannot take over the leases "
				"of the last daemon of this data directory: %s",
				t->spec, strerror(-rc));
			return rc;
		}
		n += k;
		t->took_over = 1;
	}
	rc = owned_forget(t);
	if (rc < 0) {
		snprintf(msg, msgsize, "%s: cannot write to the index: %s",
			t->spec, strerror(-rc));
		return rc;
	}
	t->attached = 1;
	return 0;
}

int
tier_share_start(struct objfs_tier *t, char *msg, size_t msgsize)
{
	size_t n = 0;
	int rc;

	if (!t->attached) {
		/* The first mount of the namespace: the tree was just made
		 * from this index; its log starts here. */
		t->have_head = 1;
		rc = tier_share_attach(t, t->s, msg, msgsize);
		if (rc < 0)
			return rc;
	}
	/* What the killed daemon was writing under leases still its own
	 * (every write that returned, adopted with the arena) is
	 * published; what it had written to files another node has taken
	 * since is dropped. */
	if (t->took_over) {
		drop_unleased(t);
		rc = objfs_store_sync_all(t->s);
		if (rc < 0)
			objfs_log(OBJFS_LOG_WARNING, "remote: %s: writing out what "
				"the last daemon left: %s", t->spec,
				strerror(-rc));
		if (rc == 0)
			rc = tier_share_rewrite_leases(t, t->node, 0, 1, &n);
		if (rc < 0) {
			snprintf(msg, msgsize, "%s: cannot publish the files the "
				"last daemon of this data directory was "
				"writing: %s", t->spec, strerror(-rc));
			return rc;
		}
		if (n)
			objfs_log(OBJFS_LOG_INFO, "remote: %s: %zu file(s) the "
				"last daemon of this data directory was writing "
				"published as it left them", t->spec, n);
	}
	rc = tier_set_supers(t->m, t->tree, t->epoch, t->node);
	if (rc < 0) {
		snprintf(msg, msgsize, "cannot write to the index: %s",
			strerror(-rc));
		return rc;
	}
	if (objfs_remote_watch(t->r, TIER_WATCH, t->lease_s, tier_share_watched, t,
			&t->watch) == 0)
		t->watching = 1;
	else
		objfs_log(OBJFS_LOG_WARNING, "remote: %s: cannot watch %s: "
			"changes are seen by polling every %u ms", t->spec,
			TIER_WATCH, TIER_FOLLOW_MS);
	rc = tier_compact_register(t, atomic_load(&t->pos));
	if (rc < 0) {
		snprintf(msg, msgsize, "%s: cannot register this node: %s",
			t->spec, strerror(-rc));
		return rc;
	}
	rc = pthread_create(&t->follow_th, NULL, follow_main, t);
	if (rc) {
		snprintf(msg, msgsize, "cannot start the log's follower");
		return -rc;
	}
	t->follow_started = 1;
	rc = tier_compact_start(t);
	if (rc < 0) {
		snprintf(msg, msgsize, "cannot start the log's compactor");
		return rc;
	}
	objfs_log(OBJFS_LOG_INFO, "remote: %s: shared, node %016" PRIx64
		", the log applied up to record %" PRIu64, t->spec, t->node,
		(uint64_t)atomic_load(&t->pos));
	return 0;
}

static void
store_gone(struct objfs_tier *t)
{
	pthread_mutex_lock(&t->catch_mu);
	t->store_gone = 1;
	pthread_mutex_unlock(&t->catch_mu);
}

/* The store is about to let its inodes go (unmount): the follower stops
 * (it brings inodes in line), and the files this mount was writing are
 * published and their leases given back while the inodes are there for
 * a catch-up that races another mount's commit. */
void
tier_share_quiesce(struct objfs_tier *t)
{
	size_t n = 0;
	int rc;

	/* The follower first: it makes the watch again when one is lost,
	 * so the watch is this thread's only once the follower is gone. */
	if (t->follow_started) {
		pthread_mutex_lock(&t->lock);
		t->follow_stop = 1;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->lock);
		pthread_join(t->follow_th, NULL);
		t->follow_started = 0;
	}
	if (t->watching) {
		objfs_remote_unwatch(t->r, t->watch);
		t->watching = 0;
	}
	tier_compact_stop(t);
	if (!t->attached || t->quiesced) {
		store_gone(t);
		return;
	}
	t->quiesced = 1;
	/* A collector's ask for pins that came while the follower stopped:
	 * answered now (the inodes are still here), not left to time out. */
	tier_share_answer_pins(t);
	objfs_share_todo(t->s);		/* what failed before: once more */
	rc = tier_deleg_release_all(t);
	if (rc < 0)
		objfs_log(OBJFS_LOG_ERR, "remote: %s: cannot ship what waits "
			"here, or give this node's directories back: %s; other "
			"nodes take them once this node's lock lapses "
			"(remote_lease)", t->spec, strerror(-rc));
	rc = tier_share_rewrite_leases(t, t->node, 0, 1, &n);
	if (rc < 0)
		objfs_log(OBJFS_LOG_ERR, "remote: %s: cannot publish the files "
			"this mount was writing: %s; other nodes may take them "
			"once this node's lock lapses (remote_lease)", t->spec,
			strerror(-rc));
	store_gone(t);
}

void
tier_share_stop(struct objfs_tier *t)
{
	tier_share_quiesce(t);
	objfs_meta_set_hook(t->m, NULL, NULL);
}

void
tier_share_close(struct objfs_tier *t)
{
	char name[64];

	tier_node_name(name, t->node);
	tier_compact_unregister(t);
	(void)objfs_remote_release(t->r, name, t->holder);
	/* Gone cleanly: its lock's object and its pins go too. */
	(void)objfs_remote_remove(t->r, name);
	snprintf(name, sizeof(name), TIER_PINS_FMT, t->node);
	(void)objfs_remote_remove(t->r, name);
	(void)objfs_remote_release(t->r, TIER_HOLD, t->holder);
	pthread_mutex_destroy(&t->catch_mu);
	pthread_mutex_destroy(&t->renew_mu);
	pthread_mutex_destroy(&t->lease_mu);
	pthread_mutex_destroy(&t->deleg_mu);
	free(t->held);
	free(t->dl);
	free(t->dl_slot);
	tier_doubt_free(t);
}

struct lease_count {
	uint64_t node, mine, others;
};

static int
lease_counted(void *arg, const char *key, uint64_t node)
{
	struct lease_count *c = arg;

	if (tier_lease_ino((const unsigned char *)key, strlen(key)))
		(*(node == c->node ? &c->mine : &c->others))++;
	return 0;
}

size_t
tier_share_status(struct objfs_tier *t, char *buf, size_t size)
{
	struct lease_count lc = { t->node, 0, 0 };
	struct objfs_meta_txn *tx;
	int n;

	if (t->m && objfs_meta_begin(t->m, 0, &tx) == 0) {
		(void)objfs_meta_super_list(tx, "w", lease_counted, &lc);
		objfs_meta_abort(tx);
	}
	n = snprintf(buf, size,
		"remote_shared: 1\n"
		"remote_node: %016" PRIx64 "\n"
		"remote_log_position: %" PRIu64 "\n"
		"remote_log_appended: %" PRIu64 "\n"
		"remote_log_applied: %" PRIu64 "\n"
		"remote_log_own_skipped: %" PRIu64 "\n"
		"remote_log_conflicts: %" PRIu64 "\n"
		"remote_lease_refusals: %" PRIu64 "\n"
		"remote_leases_broken: %" PRIu64 "\n"
		"remote_leases_here: %" PRIu64 "\n"
		"remote_leases_elsewhere: %" PRIu64 "\n"
		"remote_leases_fenced: %" PRIu64 "\n"
		"remote_lock_lapses: %" PRIu64 "\n"
		"remote_log_late: %" PRIu64 "\n"
		"remote_compactions: %" PRIu64 "\n"
		"remote_log_records_removed: %" PRIu64 "\n",
		t->node, (uint64_t)atomic_load(&t->pos),
		(uint64_t)atomic_load(&t->sh_appended),
		(uint64_t)atomic_load(&t->sh_applied),
		(uint64_t)atomic_load(&t->sh_own_skipped),
		(uint64_t)atomic_load(&t->sh_conflicts),
		(uint64_t)atomic_load(&t->sh_refused),
		(uint64_t)atomic_load(&t->sh_broken), lc.mine, lc.others,
		(uint64_t)atomic_load(&t->sh_fenced),
		(uint64_t)atomic_load(&t->sh_lapses),
		(uint64_t)atomic_load(&t->sh_late),
		(uint64_t)atomic_load(&t->compactions),
		(uint64_t)atomic_load(&t->compact_removed));
	if (n < 0)
		return 0;
	if ((size_t)n >= size)
		return size - 1;
	return (size_t)n + tier_deleg_status(t, buf + n, size - (size_t)n);
}
