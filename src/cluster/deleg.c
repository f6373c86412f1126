/* SPDX-License-Identifier: MIT */
/*
 * deleg.c - shared mode's directory delegations and deferred commits
 * (doc/design.md, "Delegations: namespace changes at local speed").
 *
 * A node that changes a directory nobody holds takes it: one record puts
 * the tree's super records "D<dir>" (the node) and "T<dir>" (the token:
 * the log position that granted it).  While it holds the directory, a
 * commit whose every entry is of it (its names, its attributes) or of an
 * inode this node made since it last gave a directory back or put a name
 * in one it does not hold (no other node can reach it: own_lo/own_hi,
 * src/fs/ids.c) does not wait for the cluster: the
 * hook keeps it in the outbox (objfs_meta_hook_defer, journaled with the
 * commit), and the next commit that goes to the log carries every commit
 * waiting, in order, before its own, in one record (the shipper's every
 * 50 ms, an fsync's, a recall's, or any commit that cannot wait).
 *
 * Another node's commit that touches a held directory is refused by its
 * own hook (-EBUSY, the directory noted); tier_deleg_unblock recalls it
 * (a notify, "objfs-recall"), and the holder's follower ships what waits
 * and gives the directory back in one record before it answers; a holder
 * whose lock lapsed is not asked: its delegation is broken by a record.
 * A lookup or readdir of a directory another node holds recalls it first
 * (close-to-open: the names it made are in the log when the lookup
 * reads).  A record of another node that takes away a delegation this
 * node holds, while commits of it wait here, leaves this index ahead of
 * the tree for good: the node writes nothing more (diverged, EIO), and
 * its next mount builds its index anew.
 *
 * deleg_mu guards the table (dl[]): a leaf, taken under the index's lock
 * by the hook.  Below lease.c and pins.c (the hook and the watch call
 * in), above follow.c and node.c.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/base/clock.h"
#include "src/base/deadline.h"
#include "src/base/log.h"
#include "meta/meta_keys.h"
#include "src/store_int.h"
#include "src/cluster/tier_int.h"

/* What waits is shipped after remote_batch ms, or once this many commits
 * wait; a directory not changed for this long is given back. */
#define DELEG_SHIP_MAX		2048u
#define DELEG_IDLE_MS		2000u
/* A directory recalled from this node is not taken again for this long
 * (two nodes working in one directory take turns no faster). */
#define DELEG_BACKOFF_MS	1000u

/* This thread's commit ships what waits even with nothing of its own. */
static _Thread_local int tl_flush;
/* The directory, and its holder, that refused this thread's last try. */
static _Thread_local uint64_t tl_dir, tl_dir_node;

static void
deleg_key(char k[24], uint64_t dir)
{
	snprintf(k, 24, TIER_DELEG_FMT, dir);
}

static void
dtok_key(char k[24], uint64_t dir)
{
	snprintf(k, 24, TIER_DTOK_FMT, dir);
}

/* The directory a delegation super key names (*@tok: a token's key), or 0. */
uint64_t
tier_deleg_key(const unsigned char *k, size_t klen, int *tok)
{
	char c = 0;
	uint64_t dir = tier_key_ino(k, klen, "DT", &c);

	*tok = c == 'T';
	return dir;
}

/* ---- the table (deleg_mu) --------------------------------------------- */

static int
recently_recalled(struct objfs_tier *t, uint64_t dir, uint64_t now)
{
	for (size_t i = 0; i < TIER_RECALLED; i++)
		if (t->recalled[i].dir == dir &&
		    now - t->recalled[i].ns < DELEG_BACKOFF_MS * 1000000ull)
			return 1;
	return 0;
}

static void
note_recalled(struct objfs_tier *t, uint64_t dir)
{
	t->recalled[t->recalled_i].dir = dir;
	t->recalled[t->recalled_i].ns = objfs_mono_ns();
	t->recalled_i = (t->recalled_i + 1) % TIER_RECALLED;
}

/* ---- the hook's side (lease.c) ----------------------------------------- */

struct dscan {
	struct objfs_tier *t;
	uint64_t own_lo, own_hi;
	int defer;
	int escape;		/* a name put in a directory not held here */
};

static int
owned(const struct dscan *d, uint64_t ino)
{
	return ino >= d->own_lo && ino < d->own_hi;
}

/* @dir's holder as the log has it (deleg_mu held): 0 none; *@ok: this
 * node holds it and has not lost it. */
static uint64_t
holder(struct objfs_tier *t, uint64_t dir, int *ok)
{
	struct tier_deleg *e = tier_dl_find(t, dir);

	*ok = e && e->node == t->node && !e->lost;
	return e ? e->node : 0;
}

static int
dscan_one(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct dscan *d = arg;
	struct objfs_tier *t = d->t;
	uint64_t ino, node;
	int ok = 0;

	(void)v;
	(void)vlen;
	switch (db) {
	case OBJFS_MDB_SUPER:
		/* A lease of an inode made since the last shipping goes with
		 * it; any other record of the tree's (a counter, a lease of a
		 * file others know, a delegation) goes to the log now. */
		{
			char c;

			ino = tier_key_ino(k, klen, "wg", &c);
		}
		if (!ino || !owned(d, ino))
			d->defer = 0;
		return 0;
	case OBJFS_MDB_DIRENT:
	case OBJFS_MDB_DIRCOOKIE:
		if (klen < 8)
			return -EIO;
		ino = get_be64(k);
		break;
	case OBJFS_MDB_INODE:
	case OBJFS_MDB_SYMLINK:
	case OBJFS_MDB_CHUNK:
	case OBJFS_MDB_XATTR:
		if (klen < 8)
			return -EIO;
		ino = get_be64(k);
		if (owned(d, ino))
			return 0;
		break;
	default:
		d->defer = 0;
		return 0;
	}
	pthread_mutex_lock(&t->deleg_mu);
	node = holder(t, ino, &ok);
	pthread_mutex_unlock(&t->deleg_mu);
	if (node && node != t->node) {
		/* Another node holds the directory: it is recalled first. */
		tl_dir = ino;
		tl_dir_node = node;
		return -EBUSY;
	}
	if (!ok) {
		d->defer = 0;
		if (db == OBJFS_MDB_DIRENT && op == OBJFS_JOURNAL_PUT)
			d->escape = 1;
	}
	return 0;
}

int
tier_deleg_classify(struct objfs_tier *t, const void *p, size_t n,
		int *defer)
{
	struct dscan d = { t, 0, 0, 1, 0 };
	int rc;

	d.own_lo = atomic_load(&t->s->own_lo);
	d.own_hi = atomic_load(&t->s->own_hi);
	pthread_mutex_lock(&t->deleg_mu);
	d.defer = t->dl_held > 0 && !tl_flush;
	pthread_mutex_unlock(&t->deleg_mu);
	rc = objfs_meta_payload_walk(p, n, dscan_one, &d);
	*defer = rc == 0 && d.defer && n > 0;
	/* A name elsewhere may be of an inode only this node knew: other
	 * nodes can reach it from now on. */
	if (rc == 0 && !*defer && d.escape)
		tier_deleg_disown(t);

	return rc;
}

int
tier_deleg_flushing(void)
{
	return tl_flush;
}

int
tier_deleg_lost_any(struct objfs_tier *t)
{
	int lost = 0;

	pthread_mutex_lock(&t->deleg_mu);
	for (size_t i = 0; i < t->dl_n; i++)
		if (t->dl[i].node == t->node && t->dl[i].lost)
			lost = 1;
	pthread_mutex_unlock(&t->deleg_mu);
	return lost;
}

void
tier_deleg_deferred(struct objfs_tier *t)
{
	if (atomic_fetch_add(&t->dl_waiting, 1) == 0)
		atomic_store(&t->dl_waiting_ns, objfs_mono_ns());
	atomic_fetch_add(&t->dl_deferred, 1);
	if (atomic_load(&t->dl_waiting) >= DELEG_SHIP_MAX)
		tier_share_kick(t);
}

void
tier_deleg_disown(struct objfs_tier *t)
{
	atomic_store(&t->s->own_lo, atomic_load(&t->s->own_hi));
}

void
tier_deleg_shipped(struct objfs_tier *t, size_t count)
{
	atomic_store(&t->dl_waiting, 0);
	if (count)
		atomic_fetch_add(&t->dl_batches, 1);
}

/* The data directory says so, for its next mount (tree.c builds its
 * index anew). */
void
tier_mark_rebuild(struct objfs_tier *t)
{
	char mark[PATH_MAX + 32];
	int fd;

	snprintf(mark, sizeof(mark), "%s/%s", t->dir, TIER_DELEG_REFUSED);
	fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
}

static void
diverge(struct objfs_tier *t, uint64_t dir)
{
	tier_mark_rebuild(t);
	pthread_mutex_lock(&t->lock);
	if (!t->diverged)
		objfs_log(OBJFS_LOG_ERR, "remote: %s: another node took "
			"directory %" PRIu64 " from this node (its lock had "
			"lapsed) while %" PRIu64 " change(s) of this node were "
			"not yet in the pool's log: they are refused, and this "
			"mount writes nothing more (EIO); mount it again: its "
			"index is built anew from the pool", t->spec, dir,
			(uint64_t)atomic_load(&t->dl_waiting));
	t->diverged = 1;
	pthread_mutex_unlock(&t->lock);
}

/*
 * A delegation key that a record puts or deletes (lease.c's lease_moved):
 * this node's own appended commit makes the table follow it; another
 * node's record too, and one that takes away a delegation this node
 * holds loses it (diverged, when commits of it wait here).
 */
void
tier_deleg_moved(struct objfs_tier *t, int own, int op,
		const unsigned char *k, size_t klen, const unsigned char *v,
		size_t vlen)
{
	struct tier_deleg *e;
	uint64_t val = 0;
	int tok, lost = 0, forgot = 0;
	uint64_t dir = tier_deleg_key(k, klen, &tok);

	if (!dir)
		return;
	if (op == OBJFS_JOURNAL_PUT && vlen >= 8)
		memcpy(&val, v, 8);
	pthread_mutex_lock(&t->deleg_mu);
	e = tier_dl_find(t, dir);
	if (!own && e && e->node == t->node && !e->lost &&
	    (op != OBJFS_JOURNAL_PUT || (tok ? val != e->tok :
	     val != t->node))) {
		/* Taken away (broken after this node's lock lapsed).  With
		 * commits waiting here, none of them may ship: lost, and the
		 * node writes nothing more; else simply forgotten. */
		if (atomic_load(&t->dl_waiting)) {
			e->lost = 1;
			lost = 1;
		} else {
			t->dl_held--;
			tier_dl_del(t, dir);
			e = NULL;
			forgot = 1;
		}
	}
	if (lost) {
		/* kept as it is: nothing of it ships */
	} else if (op != OBJFS_JOURNAL_PUT) {
		if (!tok && e && !e->lost) {
			if (e->node == t->node)
				t->dl_held--;
			tier_dl_del(t, dir);
		}
	} else if ((e = tier_dl_add(t, dir)) != NULL && !e->lost) {
		if (tok) {
			e->tok = val;
		} else {
			if (e->node != t->node && val == t->node)
				t->dl_held++;
			else if (e->node == t->node && val != t->node)
				t->dl_held--;
			e->node = val;
			e->used_ns = objfs_mono_ns();
		}
	}
	pthread_mutex_unlock(&t->deleg_mu);
	/* A directory this node gave back or lost: what it made there is
	 * within other nodes' reach. */
	if (!tok && (own || lost || forgot) && op != OBJFS_JOURNAL_PUT)
		tier_deleg_disown(t);
	if (lost)
		diverge(t, dir);
}

/* ---- taking, giving back, recalling ------------------------------------ */

/* One commit of this node's (@fn in a write transaction), tried again
 * after the log moved or a renewal: with the store's apply lock, as any
 * operation that commits. */
static int
commit_retry(struct objfs_tier *t, int (*fn)(struct objfs_tier *,
		struct objfs_meta_txn *, uint64_t), uint64_t arg)
{
	for (int tries = 0; tries < 64; tries++) {
		struct objfs_meta_txn *tx;
		int rc;

		rc = objfs_share_begin(t->s);
		if (rc < 0)
			return rc;
		rc = objfs_meta_begin(t->m, OBJFS_META_ESSENTIAL, &tx);
		if (rc == 0) {
			rc = fn(t, tx, arg);
			if (rc == 1) {
				objfs_meta_abort(tx);
				rc = 0;
			} else {
				rc = objfs_commit_or_abort(tx, rc, NULL);
			}
		}
		objfs_share_end(t->s);
		if ((rc == -ETIME || rc == -ERESTART) &&
		    objfs_deadline_passed())
			return -ETIMEDOUT;
		if (rc == -ETIME)
			rc = tier_share_fresh(t);
		else if (rc == -ERESTART)
			rc = tier_share_catch_up(t);
		else
			return rc;
		if (rc < 0)
			return rc;
	}
	return -EAGAIN;
}

/* Take @dir: 1 (nothing to do) when somebody holds it. */
static int
grant(struct objfs_tier *t, struct objfs_meta_txn *tx, uint64_t dir)
{
	char k[24], tk[24];
	uint64_t node, pos;
	int rc;

	deleg_key(k, dir);
	dtok_key(tk, dir);
	rc = tier_super_or_0(tx, k, &node);
	if (rc < 0 || node)
		return rc < 0 ? rc : 1;
	rc = objfs_meta_super_get(tx, OBJFS_SUPER_REMOTE_POS, &pos);
	if (rc == 0)
		rc = objfs_meta_super_put(tx, k, t->node);
	if (rc == 0)
		rc = objfs_meta_super_put(tx, tk, pos + 1);
	return rc == -ENOENT ? -EIO : rc;
}

/* Give @dir back (what waits ships with it): 1 when this node does not
 * hold it in the tree. */
static int
give_back(struct objfs_tier *t, struct objfs_meta_txn *tx, uint64_t dir)
{
	char k[24], tk[24];
	uint64_t node;
	int rc;

	deleg_key(k, dir);
	dtok_key(tk, dir);
	rc = tier_super_or_0(tx, k, &node);
	if (rc < 0 || node != t->node)
		return rc < 0 ? rc : 1;
	tl_flush = 1;
	rc = objfs_meta_super_del(tx, k);
	if (rc == 0)
		rc = objfs_meta_super_del(tx, tk);
	return rc == -ENOENT ? 0 : rc;
}

/* Break @dir's delegation to a node whose lock lapsed (@node). */
static _Thread_local uint64_t tl_break_node;

static int
break_one(struct objfs_tier *t, struct objfs_meta_txn *tx, uint64_t dir)
{
	char k[24], tk[24];
	uint64_t node;
	int rc;

	(void)t;
	deleg_key(k, dir);
	dtok_key(tk, dir);
	rc = tier_super_or_0(tx, k, &node);
	if (rc < 0 || node != tl_break_node)
		return rc < 0 ? rc : 1;
	rc = objfs_meta_super_del(tx, k);
	if (rc == 0)
		rc = objfs_meta_super_del(tx, tk);
	return rc == -ENOENT ? 0 : rc;
}

/* Ship what waits: a commit that changes this data directory's own
 * count of shipments only, which the hook sends with the outbox. */
static int
ship(struct objfs_tier *t, struct objfs_meta_txn *tx, uint64_t unused)
{
	uint64_t n = 0;

	(void)unused;
	(void)tier_super_or_0(tx, OBJFS_SUPER_SHIPPED, &n);
	tl_flush = 1;
	return objfs_meta_super_put(tx, OBJFS_SUPER_SHIPPED, n + 1);
}

static int
run(struct objfs_tier *t, int (*fn)(struct objfs_tier *,
		struct objfs_meta_txn *, uint64_t), uint64_t arg)
{
	int rc = commit_retry(t, fn, arg);

	tl_flush = 0;
	return rc;
}

int
tier_deleg_use(struct objfs_tier *t, uint64_t dir)
{
	struct tier_deleg *e;
	uint64_t now = objfs_mono_ns();
	int rc, ok;

	pthread_mutex_lock(&t->lock);
	rc = t->diverged ? -EIO : 0;
	pthread_mutex_unlock(&t->lock);
	if (rc < 0 || !t->batch_ms)
		return rc;
	pthread_mutex_lock(&t->deleg_mu);
	e = tier_dl_find(t, dir);
	(void)holder(t, dir, &ok);
	if (ok)
		e->used_ns = now;
	rc = ok || e || recently_recalled(t, dir, now);
	pthread_mutex_unlock(&t->deleg_mu);
	if (rc)
		return 0;	/* held; another node's (recalled by the
				 * commit); given back a moment ago */
	/* In the caller's operation (apply lock held, maybe ns_lock): its
	 * own retry takes -ERESTART. */
	{
		struct objfs_meta_txn *tx;

		rc = objfs_meta_begin(t->m, OBJFS_META_ESSENTIAL, &tx);
		if (rc < 0)
			return rc;
		rc = grant(t, tx, dir);
		if (rc == 1) {
			objfs_meta_abort(tx);
			return 0;
		}
		rc = objfs_commit_or_abort(tx, rc, NULL);
	}
	if (rc == 0)
		atomic_fetch_add(&t->dl_granted, 1);
	return rc;
}

int
tier_deleg_flush(struct objfs_tier *t)
{
	if (!atomic_load(&t->dl_waiting))
		return 0;
	return run(t, ship, 0);
}

/* Give @dir back now (a recall, idle, unmount). */
static int
release(struct objfs_tier *t, uint64_t dir)
{
	int rc = run(t, give_back, dir);

	if (rc == 0) {
		pthread_mutex_lock(&t->deleg_mu);
		note_recalled(t, dir);
		pthread_mutex_unlock(&t->deleg_mu);
		atomic_fetch_add(&t->dl_released, 1);
	}
	return rc;
}

/* Another node's recall: answered once @dir is given back (or was not
 * held here). */
void
tier_deleg_watched(struct objfs_tier *t, uint64_t notify_id, uint64_t cookie,
		const unsigned char *p, size_t len)
{
	int queued = 0;

	if (len == strlen(TIER_RECALL_ASK) + 16) {
		uint64_t dir = get_be64(p + strlen(TIER_RECALL_ASK));
		uint64_t node = get_be64(p + strlen(TIER_RECALL_ASK) + 8);

		pthread_mutex_lock(&t->lock);
		if (node == t->node && t->recall_n < TIER_RECALL_REQS) {
			t->recall_req[t->recall_n].id = notify_id;
			t->recall_req[t->recall_n].cookie = cookie;
			t->recall_req[t->recall_n].dir = dir;
			t->recall_n++;
			queued = 1;
		}
		pthread_mutex_unlock(&t->lock);
	}
	if (!queued)
		(void)objfs_remote_notify_ack(t->r, notify_id, cookie, NULL, 0);
	tier_share_kick(t);
}

/*
 * The follower's pass: recalls answered (the directory given back with
 * what waits, then the answer), what waited long enough shipped, and
 * directories nobody here changed for a while given back.
 */
void
tier_deleg_tick(struct objfs_tier *t)
{
	uint64_t now = objfs_mono_ns(), idle[16];
	size_t nidle = 0;

	for (;;) {
		uint64_t id, cookie, dir;
		int rc;

		pthread_mutex_lock(&t->lock);
		if (!t->recall_n) {
			pthread_mutex_unlock(&t->lock);
			break;
		}
		t->recall_n--;
		id = t->recall_req[t->recall_n].id;
		cookie = t->recall_req[t->recall_n].cookie;
		dir = t->recall_req[t->recall_n].dir;
		pthread_mutex_unlock(&t->lock);
		rc = release(t, dir);
		if (rc < 0)
			objfs_log(OBJFS_LOG_WARNING, "remote: %s: giving "
				"directory %" PRIu64 " back to the node that "
				"asked: %s", t->spec, dir, strerror(-rc));
		else
			atomic_fetch_add(&t->dl_answered, 1);
		(void)objfs_remote_notify_ack(t->r, id, cookie, NULL, 0);
	}
	now = objfs_mono_ns();
	if (atomic_load(&t->dl_waiting) && now > atomic_load(&t->dl_waiting_ns) &&
	    now - atomic_load(&t->dl_waiting_ns) >=
	    (uint64_t)t->batch_ms * 1000000ull) {
		int rc = tier_deleg_flush(t);

		if (rc < 0 && rc != -EIO)
			objfs_log(OBJFS_LOG_WARNING, "remote: %s: shipping "
				"this node's waiting changes: %s", t->spec,
				strerror(-rc));
	}
	/* Now, not when the pass began: a directory used since then is
	 * not idle (its last use may be later than the pass's start). */
	now = objfs_mono_ns();
	pthread_mutex_lock(&t->deleg_mu);
	for (size_t i = 0; i < t->dl_n && nidle < 16; i++)
		if (t->dl[i].node == t->node && !t->dl[i].lost &&
		    now > t->dl[i].used_ns && now - t->dl[i].used_ns >=
		    (uint64_t)(DELEG_IDLE_MS + 2 * t->batch_ms) * 1000000ull)
			idle[nidle++] = t->dl[i].dir;
	pthread_mutex_unlock(&t->deleg_mu);
	for (size_t i = 0; i < nidle; i++)
		(void)release(t, idle[i]);
}

int
tier_deleg_release_all(struct objfs_tier *t)
{
	int rc = 0;

	for (;;) {
		struct tier_deleg *e;
		uint64_t dir = 0;
		int r;

		pthread_mutex_lock(&t->deleg_mu);
		for (size_t i = 0; i < t->dl_n && !dir; i++)
			if (t->dl[i].node == t->node && !t->dl[i].lost)
				dir = t->dl[i].dir;
		pthread_mutex_unlock(&t->deleg_mu);
		if (!dir)
			break;
		r = release(t, dir);
		if (r < 0) {
			rc = r;
			break;
		}
		pthread_mutex_lock(&t->deleg_mu);
		e = tier_dl_find(t, dir);
		if (e && e->node == t->node)
			e->lost = 1;	/* not again */
		pthread_mutex_unlock(&t->deleg_mu);
	}
	if (rc == 0)
		rc = tier_deleg_flush(t);
	return rc;
}

/* The directory that refused this thread's last commit, if any. */
int
tier_deleg_blocked(uint64_t *dir, uint64_t *node)
{
	*dir = tl_dir;
	*node = tl_dir_node;
	tl_dir = tl_dir_node = 0;
	return *dir != 0;
}

/*
 * Get @dir back from node @node, which holds it: asked (the holder ships
 * and gives it back before it answers), or broken once the holder's lock
 * lapsed; then the log applied.  0 when it is not held by @node any
 * more, -ETIMEDOUT when the holder lives and does not give it back.
 */
int
tier_deleg_recall(struct objfs_tier *t, uint64_t dir, uint64_t node)
{
	unsigned char ask[sizeof(TIER_RECALL_ASK) + 16];
	uint64_t until = objfs_mono_ns() + (uint64_t)(t->lease_s +
		t->timeout_s) * 1000000000ull;
	size_t al = strlen(TIER_RECALL_ASK);

	memcpy(ask, TIER_RECALL_ASK, al);
	put_be64(ask + al, dir);
	put_be64(ask + al + 8, node);
	atomic_fetch_add(&t->dl_recalls, 1);
	for (;;) {
		struct tier_deleg *e;
		int rc, still;

		rc = tier_node_alive(t, node);
		if (rc == 0) {
			tl_break_node = node;
			rc = run(t, break_one, dir);
			if (rc == 0) {
				atomic_fetch_add(&t->dl_broken, 1);
				objfs_log(OBJFS_LOG_WARNING, "remote: %s: "
					"directory %" PRIu64 " was held by node "
					"%016" PRIx64 ", which is gone (its "
					"lock lapsed): taken back; what it had "
					"not shipped is lost", t->spec, dir,
					node);
			}
		} else if (rc > 0) {
			(void)objfs_remote_ask(t->r, TIER_WATCH, ask, al + 16,
					1000, NULL, NULL);
		}
		if (rc >= 0)
			rc = tier_share_catch_up(t);
		if (rc < 0)
			return rc;
		pthread_mutex_lock(&t->deleg_mu);
		e = tier_dl_find(t, dir);
		still = e && e->node == node;
		/* Two nodes working in one directory: neither takes it for
		 * a while (their changes go to the log one by one), rather
		 * than hand it to and fro at every change. */
		if (!still)
			note_recalled(t, dir);
		pthread_mutex_unlock(&t->deleg_mu);
		if (!still)
			return 0;
		if (objfs_mono_ns() > until || objfs_deadline_passed())
			return -ETIMEDOUT;
		{
			struct timespec ts = { 0, 50 * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
}

int
tier_deleg_read(struct objfs_tier *t, uint64_t dir)
{
	struct tier_deleg *e;
	uint64_t node = 0;
	int mine;

	pthread_mutex_lock(&t->deleg_mu);
	e = tier_dl_find(t, dir);
	if (e && e->node != t->node)
		node = e->node;
	mine = e && e->node == t->node;
	pthread_mutex_unlock(&t->deleg_mu);
	if (node)
		return tier_deleg_recall(t, dir, node);
	/* Held here, and this node within its deadline (no other node can
	 * have broken it): every name of the directory is in this index. */
	if (!mine || tier_past_deadline(t) < 0)
		return 0;
	pthread_mutex_lock(&t->lock);
	mine = !t->lost && !t->diverged;
	pthread_mutex_unlock(&t->lock);
	return mine;
}

int
tier_deleg_recall_all(struct objfs_tier *t)
{
	struct { uint64_t dir, node; } *v = NULL;
	size_t n = 0;
	int rc = 0;

	pthread_mutex_lock(&t->deleg_mu);
	if (t->dl_n)
		v = malloc(t->dl_n * sizeof(*v));
	for (size_t i = 0; v && i < t->dl_n; i++)
		if (t->dl[i].node != t->node) {
			v[n].dir = t->dl[i].dir;
			v[n++].node = t->dl[i].node;
		}
	if (t->dl_n && !v)
		rc = -ENOMEM;
	pthread_mutex_unlock(&t->deleg_mu);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = tier_deleg_recall(t, v[i].dir, v[i].node);
	free(v);
	return rc;
}

/* ---- a mount ----------------------------------------------------------- */

struct dload {
	struct objfs_tier *t;
	struct objfs_meta_txn *tx;
	uint64_t prev;
};

static int
dload_one(void *arg, const char *key, uint64_t node)
{
	struct dload *dl = arg;
	struct objfs_tier *t = dl->t;
	struct tier_deleg *e;
	char tk[24];
	int tok;
	uint64_t dir = tier_deleg_key((const unsigned char *)key, strlen(key),
			&tok);

	if (!dir || tok)
		return 0;
	e = tier_dl_add(t, dir);
	if (!e)
		return -ENOMEM;
	/* The last daemon's of this data directory: this mount's now
	 * (what it left waiting ships under it). */
	e->node = tier_owned(t, node) ? t->node : node;
	e->used_ns = objfs_mono_ns();
	dtok_key(tk, dir);
	(void)tier_super_or_0(dl->tx, tk, &e->tok);
	if (e->node == t->node)
		t->dl_held++;
	return 0;
}

int
tier_deleg_attach(struct objfs_tier *t, uint64_t prev)
{
	struct dload dl = { t, NULL, prev };
	size_t waiting = 0;
	int rc = objfs_meta_begin(t->m, 0, &dl.tx);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&t->deleg_mu);
	rc = objfs_meta_super_list(dl.tx, "D", dload_one, &dl);
	pthread_mutex_unlock(&t->deleg_mu);
	if (rc == 0)
		rc = objfs_meta_outbox_count(dl.tx, &waiting);
	objfs_meta_abort(dl.tx);
	if (waiting) {
		atomic_store(&t->dl_waiting, waiting);
		atomic_store(&t->dl_waiting_ns, objfs_mono_ns());
	}
	return rc;
}

/* The last daemon's delegations, taken over before the log is applied
 * (tier_deleg_attach), become this mount's in the tree: in @tx, the
 * commit that takes its leases over too (lease.c). */
int
tier_deleg_rewrite(struct objfs_tier *t, struct objfs_meta_txn *tx,
		uint64_t prev)
{
	struct tier_deleg *v;
	size_t n = 0;
	int rc = 0, any = 0;

	pthread_mutex_lock(&t->deleg_mu);
	v = malloc((t->dl_n + 1) * sizeof(*v));
	if (v && t->dl_n) {	/* t->dl is NULL while none was ever known */
		memcpy(v, t->dl, t->dl_n * sizeof(*v));
		n = t->dl_n;
	}
	pthread_mutex_unlock(&t->deleg_mu);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char k[24];
		uint64_t node;

		if (v[i].node != t->node || v[i].lost)
			continue;
		deleg_key(k, v[i].dir);
		rc = tier_super_or_0(tx, k, &node);
		if (rc == 0 && node == prev) {
			rc = objfs_meta_super_put(tx, k, t->node);
			any = 1;
		}
	}
	free(v);
	(void)any;
	return rc;
}

int
tier_deleg_take_over(struct objfs_tier *t, uint64_t prev)
{
	int rc;

	(void)prev;
	pthread_mutex_lock(&t->lock);
	rc = t->diverged ? -ESTALE : 0;
	pthread_mutex_unlock(&t->lock);
	if (rc < 0)
		tier_mark_rebuild(t);
	return rc;
}

size_t
tier_deleg_status(struct objfs_tier *t, char *buf, size_t size)
{
	size_t held = 0, others = 0;
	int n, diverged;

	pthread_mutex_lock(&t->lock);
	diverged = t->diverged;
	pthread_mutex_unlock(&t->lock);
	pthread_mutex_lock(&t->deleg_mu);
	for (size_t i = 0; i < t->dl_n; i++) {
		if (t->dl[i].node == t->node)
			held += !t->dl[i].lost;
		else
			others++;
	}
	pthread_mutex_unlock(&t->deleg_mu);
	n = snprintf(buf, size,
		"remote_dirs_held: %zu\n"
		"remote_dirs_elsewhere: %zu\n"
		"remote_dirs_taken: %" PRIu64 "\n"
		"remote_dirs_given_back: %" PRIu64 "\n"
		"remote_dirs_recalled: %" PRIu64 "\n"
		"remote_dirs_recalls_answered: %" PRIu64 "\n"
		"remote_dirs_broken: %" PRIu64 "\n"
		"remote_commits_deferred: %" PRIu64 "\n"
		"remote_deferred_waiting: %" PRIu64 "\n"
		"remote_batches_shipped: %" PRIu64 "\n"
		"remote_batches_unsure: %" PRIu64 "\n"
		"remote_batches_unsure_landed: %" PRIu64 "\n"
		"remote_diverged: %d\n",
		held, others, (uint64_t)atomic_load(&t->dl_granted),
		(uint64_t)atomic_load(&t->dl_released),
		(uint64_t)atomic_load(&t->dl_recalls),
		(uint64_t)atomic_load(&t->dl_answered),
		(uint64_t)atomic_load(&t->dl_broken),
		(uint64_t)atomic_load(&t->dl_deferred),
		(uint64_t)atomic_load(&t->dl_waiting),
		(uint64_t)atomic_load(&t->dl_batches),
		(uint64_t)atomic_load(&t->dl_unsure),
		(uint64_t)atomic_load(&t->dl_unsure_landed), diverged);
	return n < 0 ? 0 : (size_t)n >= size ? size - 1 : (size_t)n;
}
