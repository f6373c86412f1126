/* SPDX-License-Identifier: MIT */
/*
 * publish.c - the store's side of shared mode (-o shared; the tier's is
 * src/cluster/shared.c; doc/design.md, "Many nodes on one namespace"):
 * operations tried again after the pool's log moved on, other mounts'
 * commits applied to the index and to the inodes in memory, write leases
 * taken at open and given back at the last close, and a file published
 * whole at fsync and close.
 *
 * Locks: apply_lock (store_int.h) is outermost.  An operation that may
 * commit a change to the shared tree holds it shared from before it reads
 * anything until its commit (OBJFS_SHARED); applying a record holds it
 * exclusive, so no operation reads a state that a record changes under
 * it.  The kernel's caches to drop are queued and sent by notify.c.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "src/base/deadline.h"
#include "src/base/sync.h"
#include "src/base/be.h"
#include "src/base/csum.h"
#include "src/base/log.h"
#include "meta/meta_keys.h"
#include "src/store_int.h"

int
objfs_share_begin(struct objfs_store *s)
{
	return s->shared ? objfs_rdlock_until(&s->apply_lock) : 0;
}

void
objfs_share_end(struct objfs_store *s)
{
	if (s->shared)
		pthread_rwlock_unlock(&s->apply_lock);
}

/* Tries before an operation that keeps losing the race for the log's
 * next record gives up (each loss means another mount's change went in:
 * the log moves, so this is not a livelock but a bound). */
#define SHARE_TRIES	256
/* A lease of a live node is looked at again this often, this long apart
 * (about half a second), before the operation fails with EBUSY. */
#define SHARE_BUSY_TRIES	12
#define SHARE_BUSY_WAIT_MS	40

/* A change given up after SHARE_TRIES tries: said in the log (at most
 * once a second), with what it kept meeting. */
static void
gave_up(const char *why, unsigned tries)
{
	static _Atomic uint64_t last;
	uint64_t now = objfs_mono_ns(), l = atomic_load(&last);

	if (now - l < 1000000000u || !atomic_compare_exchange_strong(&last,
			&l, now))
		return;
	objfs_log(OBJFS_LOG_WARNING, "a change given up after %u tries "
		"(EAGAIN): %s", tries, why);
}

int
objfs_share_retry(struct objfs_store *s, int *rc, unsigned tries)
{
	int r;

	if (!s->shared)
		return 0;
	/* One call, one timeout: no try after the call's deadline, and
	 * nothing that means "try again" reaches the caller. */
	if ((*rc == -ETIME || *rc == -ERESTART || *rc == -EBUSY) &&
	    objfs_deadline_passed()) {
		*rc = -ETIMEDOUT;
		return 0;
	}
	if (*rc == -ENOLCK) {
		/* A file whose lease this node lost (fenced). */
		*rc = -EIO;
		return 0;
	}
	if (*rc == -ETIME) {
		/* Past this node's deadline: its lock proved first. */
		r = s->tier_ops->fresh(s->tier);
		if (r == 0 && tries < SHARE_TRIES)
			return 1;
		if (r == 0)
			gave_up("this node stayed past its deadline", tries);
		*rc = r < 0 ? r : -EAGAIN;
		return 0;
	}
	if (*rc == -ERESTART) {
		if (tries >= SHARE_TRIES) {
			gave_up("it kept losing the race for the log's next "
				"record", tries);
			*rc = -EAGAIN;
			return 0;
		}
		r = s->tier_ops->catch_up(s->tier);
		if (r < 0) {
			*rc = r;
			return 0;
		}
		return 1;
	}
	if (*rc == -EBUSY) {
		/* A lease of another node: gone nodes' leases are broken. */
		r = s->tier_ops->unblock(s->tier);
		if (r == 0 && tries < SHARE_TRIES)
			return 1;
		if (r == -EBUSY && tries < SHARE_BUSY_TRIES) {
			/* A live node's.  Its writer's close() may have
			 * returned with the lease still held: the kernel sends
			 * the RELEASE that gives it back after close() returns.
			 * A moment for it, before EBUSY. */
			struct timespec ts = { 0, SHARE_BUSY_WAIT_MS * 1000000L };

			nanosleep(&ts, NULL);
			r = s->tier_ops->catch_up(s->tier);
			if (r == 0)
				return 1;
		}
		if (r == 0)
			gave_up("a lease or directory kept being another "
				"node's", tries);
		if (r != -EBUSY)
			*rc = r == 0 ? -EAGAIN : r;
	}
	return 0;
}

int
objfs_share_dir_use(struct objfs_store *s, uint64_t dir)
{
	return s->shared && s->tier_ops->dir_use ?
		s->tier_ops->dir_use(s->tier, dir) : 0;
}

int
objfs_share_dir_read(struct objfs_store *s, uint64_t dir)
{
	return s->shared && s->tier_ops->dir_read ?
		s->tier_ops->dir_read(s->tier, dir) : 0;
}

/* ---- another mount's commit ------------------------------------------- */

#define TOUCH_MAX	4096

struct touched {
	struct objfs_store *s;
	uint64_t ino[TOUCH_MAX];
	size_t n;
	int all;		/* more than TOUCH_MAX: every inode in memory */
	/* The inodes whose names the record takes away (the kernel may
	 * hold them: named_gone), read before it is applied. */
	struct objfs_meta_txn *tx;
	uint64_t unnamed[TOUCH_MAX];
	size_t nun;
	int unnamed_all;
};

static void
touch(struct touched *t, uint64_t ino)
{
	for (size_t i = t->n; i-- > 0 && i + 8 >= t->n; )
		if (t->ino[i] == ino)
			return;		/* the common repeat: a file's chunks */
	if (t->n < TOUCH_MAX)
		t->ino[t->n++] = ino;
	else
		t->all = 1;
}

static int
scan(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct touched *t = arg;

	(void)op;
	(void)v;
	(void)vlen;
	switch (db) {
	case OBJFS_MDB_INODE:
	case OBJFS_MDB_SYMLINK:
	case OBJFS_MDB_CHUNK:
	case OBJFS_MDB_XATTR:
		if (klen >= 8)
			touch(t, get_be64(k));
		break;
	case OBJFS_MDB_DIRENT:
		/* A name that came or went: the kernel's entry (or its
		 * memory that there is none) is dropped. */
		if (klen > 8)
			objfs_store_notify_add(t->s, get_be64(k), (const char *)k + 8,
				klen - 8, 0);
		if (klen >= 8)
			touch(t, get_be64(k));
		break;
	default:
		break;
	}
	return 0;
}

/* Before a record is applied: each name it removes or points elsewhere
 * (a rename, an unlink, a rename over), and the inode it named. */
static int
scan_names(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct touched *t = arg;
	struct objfs_dirent d;

	(void)op;
	(void)v;
	(void)vlen;
	if (db != OBJFS_MDB_DIRENT || klen <= 8)
		return 0;
	if (objfs_meta_dirent_get(t->tx, get_be64(k), (const char *)k + 8,
			klen - 8, &d) < 0)
		return 0;	/* a new name: no kernel holds it */
	if (t->nun < TOUCH_MAX)
		t->unnamed[t->nun++] = d.ino;
	else
		t->unnamed_all = 1;
	return 0;
}

/* The inodes in memory that a record took a name of: an open that came
 * through one of the kernel's names of them looks the path up again
 * unless the kernel looked one up since (open_file). */
static void
named_gone(struct objfs_store *s, struct touched *t, uint64_t g)
{
	if (t->unnamed_all) {
		struct objfs_inode **all;
		size_t k;

		if (objfs_inode_snapshot(s, &all, &k) == 0) {
			for (size_t i = 0; i < k; i++) {
				objfs_inode_lock(all[i]);
				all[i]->change_gen = g;
				objfs_inode_unlock(all[i]);
			}
			objfs_inode_put_all(s, all, k);
		}
		return;
	}
	for (size_t i = 0; i < t->nun; i++) {
		struct objfs_inode *ip;

		if (objfs_store_iget_cached(s, t->unnamed[i], &ip) < 0)
			continue;	/* not in memory: the kernel holds none */
		objfs_inode_lock(ip);
		ip->change_gen = g;
		objfs_inode_unlock(ip);
		objfs_store_iput(s, ip);
	}
}

/* @ip (locked) as the index has it now: its chunk map and attributes
 * loaded anew (what it held in memory, written or not, let go). */
static void
reload(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_meta_txn *tx;
	struct objfs_attr a;
	int rc, tries = 0;

	objfs_data_unload(s, ip);
	ip->attr_dirty = 0;
	ip->detached = 0;
	ip->cache_stale = 1;		/* the kernel's pages are old */
again:
	rc = objfs_meta_begin(s->meta, 0, &tx);
	if (rc == 0) {
		rc = objfs_meta_inode_get(tx, ip->ino, &a);
		objfs_meta_abort(tx);
	}
	if (rc == 0) {
		ip->attr = a;
		rc = objfs_data_load(s, ip);
		if (rc == -EAGAIN && ++tries < 16)
			goto again;	/* a record came between the reads */
	} else if (rc == -ENOENT) {
		ip->gone = 1;
		ip->attr.nlink = 0;
		rc = 0;
	}
	if (rc < 0)
		objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 ": cannot load the "
			"version the tree has: %s", ip->ino, strerror(-rc));
}

void
objfs_share_fence(struct objfs_store *s, struct objfs_inode *ip)
{
	uint64_t dirty;

	objfs_inode_assert_locked(ip);
	if (ip->fenced)
		return;
	dirty = ip->chunks.ndirty;
	ip->fenced = 1;
	atomic_store(&s->fenced_last, ip->ino);
	atomic_fetch_add(&s->fenced_files, 1);
	objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 ": fenced: this node lost "
		"its write lease (another node broke it while this node's lock "
		"had lapsed, and the tree has that node's version since): what "
		"was written to it here since its last publish is dropped (%"
		PRIu64 " chunk(s) of it still in memory), and its writers here "
		"get EIO (write, fsync, close) until they close it", ip->ino,
		dirty);
	reload(s, ip);
}

void
objfs_share_unfence(struct objfs_store *s, struct objfs_inode *ip)
{
	objfs_inode_assert_locked(ip);
	if (!ip->fenced)
		return;
	ip->fenced = 0;
	s->tier_ops->forget(s->tier, ip->ino);
}

/* Bring @ip (locked) in line with the index after a record changed it. */
static void
refresh(struct objfs_store *s, struct objfs_inode *ip, uint64_t g)
{
	struct objfs_meta_txn *tx;
	struct objfs_attr a;
	int rc;

	ip->change_gen = g;	/* what the kernel holds of it may be old */

	/* A record that broke this node's lease of a file it writes: the
	 * file is fenced at once (not at its writer's next fsync).  One
	 * whose writers have gone (their close failed, and the follower
	 * was to publish it later) drops its bytes the same way, and is
	 * writable again at once (simulator, seed 143 of 400 actions: the
	 * unmount tried to write them out, and failed). */
	if (!ip->fenced &&
	    s->tier_ops->lease_state(s->tier, ip->ino) == -ENOLCK) {
		objfs_share_fence(s, ip);
		if (!ip->nwriters)
			objfs_share_unfence(s, ip);
		return;
	}
	rc = objfs_meta_begin(s->meta, 0, &tx);
	if (rc < 0)
		return;
	rc = objfs_meta_inode_get(tx, ip->ino, &a);
	objfs_meta_abort(tx);
	if (rc == -ENOENT) {
		/* Deleted by another mount: what this one has open of it
		 * reads on from memory and the pool, as an unlinked file. */
		ip->gone = 1;
		ip->attr.nlink = 0;
		ip->attr_dirty = 0;
		return;
	}
	if (rc < 0)
		return;
	if (!S_ISREG(a.mode)) {
		ip->attr = a;
		return;
	}
	if (ip->nopen || ip->chunks.ndirty) {
		/* Open here: its readers keep the version they opened (its
		 * chunk map names that version's chunks); the new one is
		 * loaded at the last close. */
		ip->detached = 1;
		return;
	}
	reload(s, ip);
}

void
objfs_share_reload(struct objfs_store *s, struct objfs_inode *ip)
{
	objfs_inode_assert_locked(ip);
	if (!ip->detached || ip->nopen)
		return;
	ip->detached = 0;
	if (ip->gone)
		return;
	refresh(s, ip, ip->change_gen);	/* the change is counted */
}

static void
refresh_ino(struct objfs_store *s, uint64_t ino, uint64_t g)
{
	struct objfs_inode *ip;

	/* One being loaded may have read the index before this record. */
	if (objfs_store_iget_loaded(s, ino, &ip) < 0)
		return;
	objfs_inode_lock(ip);
	refresh(s, ip, g);
	objfs_inode_unlock(ip);
	objfs_store_iput(s, ip);
	objfs_store_notify_add(s, 0, NULL, 0, ino);
}

int
objfs_store_apply_remote(struct objfs_store *s, const void *pl, size_t n)
{
	struct touched *t = calloc(1, sizeof(*t));
	struct objfs_meta_txn *tx;
	uint64_t v;
	int rc;

	if (!t)
		return -ENOMEM;
	t->s = s;
	/* Not while a walk again reads what its open will open (walk.c). */
	objfs_walk_apply_begin(s);
	pthread_rwlock_wrlock(&s->apply_lock);
	pthread_mutex_lock(&s->ns_lock);
	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &tx);
	if (rc == 0) {
		t->tx = tx;
		(void)objfs_meta_payload_walk(pl, n, scan_names, t);
		rc = objfs_meta_apply(tx, pl, n);
	}
	/* Numbers of this node's that a change whose caller got an error
	 * used after all: never handed out again. */
	if (rc == 0)
		rc = objfs_ids_seen(s, tx, pl, n);
	rc = objfs_commit_or_abort(tx, rc, NULL);
	if (rc == 0) {
		uint64_t g = atomic_fetch_add(&s->remote_gen, 1) + 1;

		named_gone(s, t, g);
		(void)objfs_meta_payload_walk(pl, n, scan, t);
		/* The inode and cookie counters are this node's own range's
		 * (namespace.c, ids_room), not the tree's. */
		if (objfs_meta_begin(s->meta, 0, &tx) == 0) {
			if (objfs_meta_inode_count(tx, &v) == 0)
				atomic_store(&s->ninodes, v);
			objfs_meta_abort(tx);
		}
		if (t->all) {
			struct objfs_inode **all;
			size_t k;

			if (objfs_inode_snapshot(s, &all, &k) == 0) {
				for (size_t i = 0; i < k; i++) {
					objfs_inode_lock(all[i]);
					refresh(s, all[i], g);
					objfs_inode_unlock(all[i]);
					objfs_store_notify_add(s, 0, NULL, 0, all[i]->ino);
				}
				objfs_inode_put_all(s, all, k);
			}
		} else {
			for (size_t i = 0; i < t->n; i++)
				refresh_ino(s, t->ino[i], g);
		}
	}
	pthread_mutex_unlock(&s->ns_lock);
	pthread_rwlock_unlock(&s->apply_lock);
	objfs_walk_apply_end(s);
	free(t);
	return rc;
}

/* ---- leases and publishing -------------------------------------------- */

static int
lease_commit(struct objfs_store *s, uint64_t ino, int take)
{
	struct objfs_meta_txn *tx;
	int rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &tx);

	if (rc < 0)
		return rc;
	rc = s->tier_ops->lease(s->tier, tx, ino, take);
	return objfs_commit_or_abort(tx, rc, NULL);
}

int
objfs_share_lease(struct objfs_store *s, uint64_t ino)
{
	int rc;

	OBJFS_SHARED(s, rc, lease_commit(s, ino, 1));
	return rc;
}

int
objfs_share_unlease(struct objfs_store *s, uint64_t ino)
{
	int rc;

	OBJFS_SHARED(s, rc, lease_commit(s, ino, 0));
	return rc;
}

/* The sum of @ip's entries as this index has them (its lock held). */
static int
entries_sum(struct objfs_store *s, uint64_t ino, uint64_t *sum)
{
	struct objfs_meta_txn *tx;
	void *ents = NULL;
	size_t n = 0;
	int rc = objfs_meta_begin(s->meta, 0, &tx);

	if (rc < 0)
		return rc;
	rc = objfs_meta_inode_entries(tx, ino, &ents, &n);
	objfs_meta_abort(tx);
	if (rc == 0)
		*sum = objfs_csum64(ents, n);
	free(ents);
	return rc;
}

void
objfs_share_created(struct objfs_store *s, struct objfs_inode *ip)
{
	uint64_t sum;

	objfs_inode_assert_locked(ip);
	if (entries_sum(s, ip->ino, &sum) == 0)
		ip->pub_sum = sum;
}

/* The file's whole state as this index has it, in one commit that other
 * mounts apply at once (none when it is what this node published last);
 * with @release, the lease goes in the same one.  The inode's lock is
 * taken before the index's transaction, never under it (store_int.h). */
static int
publish_commit(struct objfs_store *s, struct objfs_inode *ip, int release)
{
	struct objfs_meta_txn *tx;
	void *ents = NULL;
	uint64_t sum = 0, last;
	size_t n = 0;
	int rc;

	objfs_inode_lock(ip);
	last = ip->pub_sum;
	objfs_inode_unlock(ip);
	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &tx);
	if (rc < 0)
		return rc;
	rc = objfs_meta_inode_entries(tx, ip->ino, &ents, &n);
	if (rc == 0) {
		sum = objfs_csum64(ents, n);
		if (sum == last && !release) {
			/* The tree has it as this node published it last, so
			 * the pool has it, unless the lease was broken since:
			 * a break publishes the file as it was last published
			 * (found by a fsync that slipped in between a break
			 * and the breaker's own publish, applied one record
			 * at a time). */
			free(ents);
			objfs_meta_abort(tx);
			return s->tier_ops->lease_state(s->tier, ip->ino);
		}
		if (sum != last && n)
			rc = objfs_meta_apply(tx, ents, n);
	}
	free(ents);
	if (rc == 0 && release)
		rc = s->tier_ops->lease(s->tier, tx, ip->ino, 0);
	s->tier_ops->publishing(s->tier, ip->ino);
	rc = objfs_commit_or_abort(tx, rc, NULL);
	s->tier_ops->publishing(s->tier, 0);
	if (rc == 0) {
		objfs_inode_lock(ip);
		/* Once the lease is given back, others may change it. */
		ip->pub_sum = release ? 0 : sum;
		objfs_inode_unlock(ip);
	}
	return rc;
}

/* ---- group commit: concurrent publishes share one commit ----------- */

/* One publish waiting in the queue (on its caller's stack). */
struct objfs_pub_wait {
	struct objfs_pub_wait *next;
	struct objfs_inode *ip;
	int release, rc, done;
	int same;		/* nothing to send (publish_commit's skip) */
	uint64_t sum;
};

/* The most files one commit publishes (the hook's set, lease.c). */
#define PUB_GROUP_MAX	64

/* publish_commit() for the files of @w[0..@n) in one transaction: one
 * record in the pool's log, or none of them published. */
static int
publish_group(struct objfs_store *s, struct objfs_pub_wait **w, size_t n)
{
	struct objfs_meta_txn *tx;
	uint64_t last[PUB_GROUP_MAX];
	int rc;

	/* The inodes' locks before the index's transaction, never in it
	 * (store_int.h). */
	for (size_t i = 0; i < n; i++) {
		objfs_inode_lock(w[i]->ip);
		last[i] = w[i]->ip->pub_sum;
		objfs_inode_unlock(w[i]->ip);
	}
	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &tx);
	if (rc < 0)
		return rc;
	s->tier_ops->publishing(s->tier, 0);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct objfs_inode *ip = w[i]->ip;
		void *ents = NULL;
		size_t en = 0;

		rc = objfs_meta_inode_entries(tx, ip->ino, &ents, &en);
		if (rc < 0)
			break;
		w[i]->sum = objfs_csum64(ents, en);
		w[i]->same = w[i]->sum == last[i] && !w[i]->release;
		if (!w[i]->same && w[i]->sum != last[i] && en)
			rc = objfs_meta_apply(tx, ents, en);
		free(ents);
		if (rc == 0 && w[i]->release)
			rc = s->tier_ops->lease(s->tier, tx, ip->ino, 0);
		if (!w[i]->same)
			s->tier_ops->publishing(s->tier, ip->ino);
	}
	rc = objfs_commit_or_abort(tx, rc, NULL);
	s->tier_ops->publishing(s->tier, 0);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (w[i]->same)
			continue;
		objfs_inode_lock(w[i]->ip);
		w[i]->ip->pub_sum = w[i]->release ? 0 : w[i]->sum;
		objfs_inode_unlock(w[i]->ip);
	}
	return rc;
}

/* The leader's part: @w[0..@n) published, each with its own answer. */
static void
publish_run(struct objfs_store *s, struct objfs_pub_wait **w, size_t n)
{
	int rc = -EAGAIN;

	if (n > 1) {
		OBJFS_SHARED(s, rc, publish_group(s, w, n));
		if (rc == 0) {
			for (size_t i = 0; i < n; i++)
				w[i]->rc = w[i]->same ? s->tier_ops->lease_state(
						s->tier, w[i]->ip->ino) : 0;
			atomic_fetch_add(&s->pub_groups, 1);
			atomic_fetch_add(&s->pub_grouped, n - 1);
			return;
		}
	}
	/* Alone, or the group refused (a file's lease lost, the pool not
	 * answering): one at a time, so each has its own answer. */
	for (size_t i = 0; i < n; i++)
		OBJFS_SHARED(s, w[i]->rc, publish_commit(s, w[i]->ip,
				w[i]->release));
}

/*
 * Publish @ip with the publishes other threads of this node make at the
 * same moment: whoever finds no publish under way leads, taking what
 * waits (at most PUB_GROUP_MAX files, each once) into one commit; the
 * others wait for its answer.  A publish that comes while one is under
 * way waits for it, then goes with all that came meanwhile: N concurrent
 * closes cost about two records, not N (doc/design.md, "Group commit").
 */
static int
publish_grouped(struct objfs_store *s, struct objfs_inode *ip, int release)
{
	struct objfs_pub_wait me = { .ip = ip, .release = release };

	pthread_mutex_lock(&s->pub_mu);
	*s->pub_tail = &me;
	s->pub_tail = &me.next;
	while (!me.done) {
		struct objfs_pub_wait *w[PUB_GROUP_MAX], **pp;
		size_t n = 0;

		if (s->pub_busy) {
			pthread_cond_wait(&s->pub_cv, &s->pub_mu);
			continue;
		}
		/* Lead: the queue's first files, each at most once. */
		for (pp = &s->pub_head; *pp && n < PUB_GROUP_MAX;) {
			struct objfs_pub_wait *e = *pp;
			size_t j;

			for (j = 0; j < n && w[j]->ip != e->ip; j++)
				;
			if (j < n) {
				pp = &e->next;	/* the next group's */
				continue;
			}
			w[n++] = e;
			*pp = e->next;
		}
		s->pub_tail = &s->pub_head;
		while (*s->pub_tail)
			s->pub_tail = &(*s->pub_tail)->next;
		s->pub_busy = 1;
		pthread_mutex_unlock(&s->pub_mu);
		publish_run(s, w, n);
		pthread_mutex_lock(&s->pub_mu);
		for (size_t i = 0; i < n; i++)
			w[i]->done = 1;
		s->pub_busy = 0;
		pthread_cond_broadcast(&s->pub_cv);
	}
	pthread_mutex_unlock(&s->pub_mu);
	return me.rc;
}

int
objfs_share_publish(struct objfs_store *s, struct objfs_inode *ip,
		int release)
{
	int rc;

	/* What is written to it here goes to the pool first: the index's
	 * record of the file (its size above all) is what the publish puts
	 * in the log, and a size whose bytes were not yet written out would
	 * publish a hole (a sync whose write-out timed out published 2582
	 * zero bytes: the simulator, seed 81 of 300 actions).  Not
	 * published then: its caller says so, and the follower tries again
	 * (objfs_share_defer). */
	objfs_inode_lock(ip);
	rc = ip->chunks.ndirty && !ip->fenced ? objfs_data_flush(s, ip) : 0;
	objfs_inode_unlock(ip);
	/* Acknowledged only while this node's lock is surely its own (a
	 * node that stopped past its deadline proves it first). */
	if (rc == 0)
		rc = s->tier_ops->fresh(s->tier);
	if (rc == 0)
		rc = publish_grouped(s, ip, release);
	/* Refused because the lease is lost (the retry made it EIO): the
	 * file is fenced now, not when the follower gets to it. */
	if (rc < 0 && s->tier_ops->lease_state(s->tier, ip->ino) == -ENOLCK)
		rc = -ENOLCK;
	if (rc == -ENOLCK) {
		objfs_inode_lock(ip);
		objfs_share_fence(s, ip);
		if (!ip->nwriters)
			objfs_share_unfence(s, ip);
		objfs_inode_unlock(ip);
		return -EIO;
	}
	if (rc == -EBUSY) {
		/* The lease is still this node's (a lost one is -ENOLCK,
		 * above): another node holds the file's directory and did
		 * not give it back in time.  The bytes are only here: the
		 * lease stays, and the close's caller gets the error while
		 * the follower publishes later (objfs_share_defer).  Until
		 * the simulator's seed 93 this said the lease was lost and
		 * answered EIO, which the follower took for "fenced": the
		 * file was never published, and this index differed from
		 * the tree for good. */
		objfs_log(OBJFS_LOG_WARNING, "inode %" PRIu64 ": not published: "
			"another node holds its directory and did not give it "
			"back; published later", ip->ino);
	}
	return rc;
}

int
objfs_share_publish_all(struct objfs_store *s)
{
	struct objfs_inode **all;
	size_t k;
	int rc = 0;

	if (!s->shared || objfs_inode_snapshot(s, &all, &k) < 0)
		return 0;
	for (size_t i = 0; i < k; i++) {
		int w, r;

		objfs_inode_lock(all[i]);
		w = all[i]->nwriters > 0 && all[i]->attr.nlink;
		objfs_inode_unlock(all[i]);
		if (w && (r = objfs_share_publish(s, all[i], 0)) < 0 &&
		    !rc)
			rc = r;
	}
	objfs_inode_put_all(s, all, k);
	return rc;
}

/* ---- what the follower does later ----------------------------------- */

/* Remove what the tree has of @ino, which has no name left and no inode
 * in memory any more (its destroy failed). */
static int
destroy_commit(struct objfs_store *s, uint64_t ino)
{
	struct objfs_meta_txn *tx;
	int rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &tx);

	if (rc < 0)
		return rc;
	rc = objfs_meta_inode_del(tx, ino);
	if (rc == -ENOENT)
		rc = 0;
	if (rc == 0)
		rc = objfs_meta_orphan_del(tx, ino);
	if (rc == -ENOENT)
		rc = 0;
	if (rc == 0)
		rc = s->tier_ops->lease(s->tier, tx, ino, 0);
	return objfs_commit_or_abort(tx, rc, NULL);
}

/* A file whose publish failed at its last close: published, and its
 * lease given back, unless a writer here has it open again (whose close
 * does it). */
static int
publish_later(struct objfs_store *s, uint64_t ino)
{
	struct objfs_inode *ip;
	int rc = objfs_inode_get(s, ino, &ip), pub = 0;

	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	objfs_inode_lock(ip);
	if (!ip->nwriters && !ip->fenced && ip->attr.nlink && !ip->gone &&
	    S_ISREG(ip->attr.mode)) {
		rc = objfs_data_flush(s, ip);
		pub = rc == 0;
	}
	objfs_inode_unlock(ip);
	if (pub)
		rc = objfs_share_publish(s, ip, 1);
	objfs_inode_put(s, ip);
	return rc;
}

void
objfs_share_todo(struct objfs_store *s)
{
	struct objfs_todo *v;
	size_t n;

	pthread_mutex_lock(&s->todo_mu);
	v = s->todo;
	n = s->ntodo;
	s->todo = NULL;
	s->ntodo = s->captodo = 0;
	pthread_mutex_unlock(&s->todo_mu);
	for (size_t i = 0; i < n; i++) {
		int rc;

		if (v[i].destroy)
			OBJFS_SHARED(s, rc, destroy_commit(s, v[i].ino));
		else
			rc = publish_later(s, v[i].ino);
		if (rc == 0) {
			objfs_log(OBJFS_LOG_INFO, "inode %" PRIu64 ": %s", v[i].ino,
				v[i].destroy ? "removed from the tree (its "
				"destroy had failed)" : "published, and its lease "
				"given back (its close had failed)");
			continue;
		}
		OBJFS_DEBUG("inode %" PRIu64 ": publishing later: %d", v[i].ino,
			rc);
		if (rc == -EIO && !v[i].destroy)
			continue;	/* fenced: nothing to publish */
		objfs_share_defer(s, v[i].ino, v[i].destroy);
	}
	free(v);
}

int
objfs_share_catch_up(struct objfs_store *s)
{
	int rc;

	if (!s->shared)
		return -ENOTSUP;
	rc = s->tier_ops->recall_all ? s->tier_ops->recall_all(s->tier) : 0;
	/* As an open does: a node past its deadline proves its lock first
	 * (it may have been fenced out meanwhile: EIO, not a stale tree
	 * said to be caught up). */
	if (rc == 0)
		rc = s->tier_ops->view(s->tier);
	objfs_store_notify_send(s, 1);
	return rc;
}

uint64_t
objfs_store_call_ns(const struct objfs_store *s)
{
	return s->call_ns;
}

int
objfs_store_is_shared(const struct objfs_store *s)
{
	return s->shared;
}
