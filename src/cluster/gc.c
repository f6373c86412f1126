/* SPDX-License-Identifier: MIT */
/*
 * gc.c - the pool's garbage collector: mark and sweep.
 *
 * A chunk's object can be garbage: its last record went (a file deleted
 * or rewritten), or it was put and never recorded (a batch that failed,
 * a daemon killed between the upload and the commit).  Objects are
 * never counted, so that a crash at any step leaves at worst garbage:
 *	1. wait for every batch begun before the collection to end (its
 *	   commit made or abandoned), noting from now on every chunk a
 *	   batch puts or finds (tier_gc_touch);
 *	2. mark: every chunk the index's records name, at one commit T;
 *	3. make the pool's tree reach T (the shipper, tier_sync): from then
 *	   on no tree the pool can show names a chunk T does not;
 *	4. sweep: every chunk object neither marked nor noted, and older
 *	   than the grace period, is removed, under gc_mu, so that a put
 *	   that finds it either comes first (and is noted: it stays) or
 *	   comes after (and finds it gone: it writes it again).
 * Snapshot parts and log records of earlier epochs, left by a mount that
 * stopped between writing the new head and removing the old ones, go too.
 * Ages are on the pool's clock, never this machine's: the collection
 * begins by writing its own object, objfs.gc.<node>, and reads back when
 * the pool says it was written; a chunk written at or after that moment
 * is young whatever the clocks of the nodes (a node's clock ahead of the
 * OSD's once had a chunk put during the collection look older than it).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/base/sync.h"
#include "src/store_int.h"
#include "src/cluster/tier_int.h"

/* ---- the set of chunks put while a collection runs ------------------ */

static size_t
slot_of(const struct gc_name *n, size_t cap)
{
	return (size_t)(n->lo ^ n->hi >> 7 ^ n->len) & (cap - 1);
}

/* Add @n (gc_mu held); a full table grows, and without memory the
 * collection is told to keep everything (gc_n = SIZE_MAX). */
static void
recent_add(struct objfs_tier *t, const struct gc_name *n)
{
	size_t i;

	if (t->gc_n == SIZE_MAX)
		return;
	if (2 * (t->gc_n + 1) > t->gc_cap) {
		size_t cap = t->gc_cap ? 2 * t->gc_cap : 1024;
		struct gc_name *v = calloc(cap, sizeof(*v));

		if (!v) {
			t->gc_n = SIZE_MAX;
			return;
		}
		for (size_t k = 0; k < t->gc_cap; k++) {
			if (!t->recent[k].used)
				continue;
			for (i = slot_of(&t->recent[k], cap); v[i].used;
			     i = (i + 1) & (cap - 1))
				;
			v[i] = t->recent[k];
		}
		free(t->recent);
		t->recent = v;
		t->gc_cap = cap;
	}
	for (i = slot_of(n, t->gc_cap); t->recent[i].used;
	     i = (i + 1) & (t->gc_cap - 1))
		if (t->recent[i].hi == n->hi && t->recent[i].lo == n->lo &&
		    t->recent[i].len == n->len)
			return;
	t->recent[i] = *n;
	t->recent[i].used = 1;
	t->gc_n++;
}

static int
recent_has(const struct objfs_tier *t, const struct gc_name *n)
{
	if (t->gc_n == SIZE_MAX)
		return 1;
	if (!t->gc_cap)
		return 0;
	for (size_t i = slot_of(n, t->gc_cap); t->recent[i].used;
	     i = (i + 1) & (t->gc_cap - 1))
		if (t->recent[i].hi == n->hi && t->recent[i].lo == n->lo &&
		    t->recent[i].len == n->len)
			return 1;
	return 0;
}

static void
recent_clear(struct objfs_tier *t)
{
	free(t->recent);
	t->recent = NULL;
	t->gc_n = t->gc_cap = 0;
}

/* ---- batches ------------------------------------------------------------ */

unsigned
tier_gc_enter(struct objfs_tier *t)
{
	unsigned g;

	pthread_mutex_lock(&t->gc_mu);
	g = (unsigned)(t->gc_gen & 1);
	t->inflight[g]++;
	pthread_mutex_unlock(&t->gc_mu);
	return g;
}

void
tier_gc_leave(struct objfs_tier *t, unsigned g)
{
	pthread_mutex_lock(&t->gc_mu);
	if (--t->inflight[g] == 0)
		pthread_cond_broadcast(&t->gc_cv);
	pthread_mutex_unlock(&t->gc_mu);
}

void
tier_gc_touch(struct objfs_tier *t, uint64_t hi, uint64_t lo, uint32_t len)
{
	struct gc_name n = { hi, lo, len, 1 };

	if (!atomic_load(&t->gc_active))
		return;
	pthread_mutex_lock(&t->gc_mu);
	if (atomic_load(&t->gc_active))
		recent_add(t, &n);
	pthread_mutex_unlock(&t->gc_mu);
}

int
tier_gc_init(struct objfs_tier *t)
{
	pthread_mutex_init(&t->gc_mu, NULL);
	if (objfs_cond_init(&t->gc_cv) != 0) {
		pthread_mutex_destroy(&t->gc_mu);
		return -ENOMEM;
	}
	return 0;
}

void
tier_gc_fini(struct objfs_tier *t)
{
	recent_clear(t);
	pthread_cond_destroy(&t->gc_cv);
	pthread_mutex_destroy(&t->gc_mu);
}

/* ---- mark --------------------------------------------------------------- */

struct marks {
	struct gc_name *v;
	size_t n, cap;
};

static int
mark_one(void *arg, uint64_t ino, uint64_t idx,
		const struct objfs_chunk_rec *r)
{
	struct marks *m = arg;

	(void)ino;
	(void)idx;
	if (!r)
		return -EIO;	/* a damaged record: sweep nothing */
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 4096;
		struct gc_name *v = realloc(m->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n++] = (struct gc_name){ r->slot, r->home, r->len, 1 };
	return 0;
}

int
tier_name_cmp(const void *a, const void *b)
{
	const struct gc_name *x = a, *y = b;

	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* ---- sweep -------------------------------------------------------------- */

/* A chunk named by a version open on some node (tier_share_pins). */
static int
mark_pin(void *arg, uint64_t hi, uint64_t lo, uint32_t len)
{
	struct objfs_chunk_rec r = { .slot = hi, .home = lo, .len = len };

	return mark_one(arg, 0, 0, &r);
}

/* Snapshot parts of this epoch that no head names, left by a compaction
 * that stopped, go after this long. */
#define SNAP_LEFT_AGE	3600u

struct sweep_cand {
	char name[64];
	uint32_t min_age;
};

struct sweep {
	struct objfs_tier *t;
	struct marks *m;
	struct sweep_cand *cand;	/* objects to look at */
	uint64_t snap;			/* the head's snapshot */
	size_t n, cap;
	uint64_t listed, marked;
	uint64_t *nodes;		/* shared mode: nodes with a lock */
	size_t nnodes, capnodes;
};

static int
node_listed(struct sweep *w, uint64_t node)
{
	if (w->nnodes == w->capnodes) {
		size_t cap = w->capnodes ? 2 * w->capnodes : 16;
		uint64_t *v = realloc(w->nodes, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->nodes = v;
		w->capnodes = cap;
	}
	w->nodes[w->nnodes++] = node;
	return 0;
}

/* Object @name is to be removed if it is older than the grace, and at
 * least @min_age seconds old. */
static int
cand(struct sweep *w, const char *name, uint32_t min_age)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 1024;
		struct sweep_cand *v = realloc(w->cand, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->cand = v;
		w->cap = cap;
	}
	snprintf(w->cand[w->n].name, sizeof(w->cand[w->n].name), "%s", name);
	w->cand[w->n++].min_age = min_age;
	return 0;
}

static int
list_one(void *arg, const char *name)
{
	struct sweep *w = arg;
	struct gc_name k;
	uint64_t e, x;

	w->listed++;
	if (sscanf(name, "c.%16" SCNx64 "%16" SCNx64 "-%" SCNx32, &k.hi, &k.lo,
			&k.len) == 3) {
		if (w->m->n && bsearch(&k, w->m->v, w->m->n, sizeof(k),
				tier_name_cmp)) {
			w->marked++;
			return 0;
		}
	} else if (sscanf(name, "objfs.snap.%16" SCNx64 ".%8" SCNx64, &e,
			&x) == 2) {
		uint64_t snap;

		/* Of an earlier epoch; or of this one, not the head's, an
		 * hour old (a compaction that stopped before its head: a
		 * compaction under way uploads parts before its head). */
		if (e > w->t->epoch)
			return 0;
		if (e == w->t->epoch) {
			if (strlen(name) != 53 || sscanf(name + 28, "%16"
				SCNx64, &snap) != 1 ||
			    snap == w->snap)
				return 0;
			return cand(w, name, SNAP_LEFT_AGE);
		}
	} else if (sscanf(name, "objfs.log.%16" SCNx64 ".%16" SCNx64, &e,
			&x) == 2) {
		/* Shared mode: the compactor removes this epoch's records,
		 * as the nodes that still need them allow. */
		if (e > w->t->epoch || (e == w->t->epoch &&
		    (w->t->shared || x > w->t->head_base)))
			return 0;
	} else if (sscanf(name, "objfs.node.%16" SCNx64, &e) == 1) {
		return w->t->shared ? node_listed(w, e) : 0;
	} else {
		return 0;	/* the head, the hold, anything not ours */
	}
	return cand(w, name, 0);
}

#define OTHERS_MAX	16

struct other_leases {
	uint64_t node, n, first;
	uint64_t others[OTHERS_MAX];	/* the nodes named, the first few */
	size_t nothers;
};

static int
other_lease(void *arg, const char *key, uint64_t node)
{
	struct other_leases *o = arg;
	size_t i;

	if (strlen(key) != 17 || node == o->node)
		return 0;
	if (!o->n++)
		o->first = node;
	for (i = 0; i < o->nothers && o->others[i] != node; i++)
		;
	if (i == o->nothers && i < OTHERS_MAX)
		o->others[o->nothers++] = node;
	return 0;
}

/* The leases and directories other nodes hold in this index's tree. */
static int
others_scan(struct objfs_tier *t, struct other_leases *o)
{
	struct objfs_meta_txn *tx;
	int rc = objfs_meta_begin(t->m, 0, &tx);

	o->n = o->first = 0;
	o->nothers = 0;
	if (rc < 0)
		return rc;
	rc = objfs_meta_super_list(tx, "w", other_lease, o);
	/* A directory another node holds: what waits there to be shipped
	 * may name chunks no record does yet. */
	if (rc == 0)
		rc = objfs_meta_super_list(tx, "D", other_lease, o);
	objfs_meta_abort(tx);
	return rc;
}

struct dirs_of {
	uint64_t node;
	uint64_t dir[64];
	size_t n;
};

static int
dir_of(void *arg, const char *key, uint64_t node)
{
	struct dirs_of *d = arg;
	int tok = 0;
	uint64_t dir = tier_deleg_key((const unsigned char *)key, strlen(key),
			&tok);

	if (dir && !tok && node == d->node && d->n < 64)
		d->dir[d->n++] = dir;
	return 0;
}

/* Node @node holds leases or directories and its lock lapsed: they are
 * taken from it as a node that needs one of them would (its files put as
 * this index has them, its directories broken), so that a node that is
 * gone does not keep every collection waiting for ever. */
static int
take_from_gone(struct objfs_tier *t, uint64_t node)
{
	struct dirs_of d = { node, { 0 }, 0 };
	struct objfs_meta_txn *tx;
	size_t n = 0;
	int rc = tier_share_rewrite_leases(t, node, 0, 1, &n);

	if (rc == 0 && n) {
		atomic_fetch_add(&t->sh_broken, n);
		objfs_log(OBJFS_LOG_WARNING, "remote: %s: %zu file(s) leased "
			"to node %016" PRIx64 ", which is gone (its lock "
			"lapsed): the leases are broken, the last published "
			"versions stand", t->spec, n, node);
	}
	if (rc == 0 && (rc = objfs_meta_begin(t->m, 0, &tx)) == 0) {
		rc = objfs_meta_super_list(tx, "D", dir_of, &d);
		objfs_meta_abort(tx);
	}
	for (size_t i = 0; rc == 0 && i < d.n; i++)
		rc = tier_deleg_recall(t, d.dir[i], node);
	return rc;
}

/* Now on the pool's clock (seconds): the time it gives an object written
 * now.  The object is removed again (a collection killed first leaves
 * it, to be written over by the next). */
static void
clock_name(const struct objfs_tier *t, char name[48])
{
	snprintf(name, 48, TIER_GC "%016" PRIx64, t->node);
}

static int
pool_now(struct objfs_tier *t, int64_t *now)
{
	char name[48];
	uint64_t size, ver;
	int rc;

	clock_name(t, name);
	rc = objfs_remote_put(t->r, name, "gc", 2);
	if (rc == 0)
		rc = objfs_remote_age_ver(t->r, name, &size, now, &ver);
	if (rc == -ENOENT)	/* removed under us: nothing is ours to do */
		rc = -EAGAIN;
	return rc;
}

int
tier_gc(struct objfs_tier *t, unsigned grace_s, char *report, size_t size)
{
	struct marks m = { 0 };
	struct sweep w = { 0 };
	struct objfs_meta_txn *tx;
	uint64_t seq, t0 = objfs_mono_ns(), removed = 0, bytes = 0, young = 0,
		 noted = 0, other = 0, pins = 0;
	int64_t now = 0;
	uint64_t *answered = NULL;
	size_t nanswered = 0;
	char why[200] = "", clk[48];
	unsigned old;
	int rc;

	w.t = t;
	w.m = &m;
	w.snap = t->head_snap;
	rc = pool_now(t, &now);
	if (rc < 0) {
		snprintf(report, size, "not run: the pool's time: %s",
			strerror(-rc));
		return rc;
	}
	if (t->shared) {
		struct head h;

		/* Compacted by any node since: the head names its snapshot.
		 * A head of another epoch is an exclusive mount's tree, which
		 * this node's index is not: it collects nothing. */
		rc = tier_head_read(t, &h, NULL);
		if (rc == 0 && h.epoch != t->epoch)
			rc = tier_epoch_check(t);
		if (rc < 0) {
			snprintf(report, size, "not run: %s", strerror(-rc));
			return rc;
		}
		w.snap = h.snap;
	}

	if (t->shared) {
		/* A file another node writes has chunks only its index names
		 * until it publishes it: no sweep meanwhile. */
		struct other_leases o = { .node = t->node };

		/* What every node has published and leased so far: the
		 * leases are checked, and the chunks marked, from there. */
		rc = tier_share_catch_up(t);
		if (rc == 0)
			rc = others_scan(t, &o);
		/* Those of nodes that are gone are taken from them first. */
		if (rc == 0 && o.n) {
			int took = 0;

			for (size_t i = 0; rc == 0 && i < o.nothers; i++) {
				rc = tier_node_alive(t, o.others[i]);
				if (rc == 0) {
					rc = take_from_gone(t, o.others[i]);
					took = 1;
				} else if (rc > 0) {
					rc = 0;
				}
			}
			if (rc == 0 && took)
				rc = others_scan(t, &o);
		}
		if (rc == 0 && o.n) {
			snprintf(report, size, "deferred: %" PRIu64 " file(s) "
				"open for writing, or directories held, on other "
				"nodes (node %016" PRIx64 "...): their chunks are "
				"named only there until they close or ship",
				o.n, o.first);
			objfs_log(OBJFS_LOG_INFO, "remote: %s: garbage "
				"collection %s", t->spec, report);
			pthread_mutex_lock(&t->lock);
			snprintf(t->gc_last, sizeof(t->gc_last), "%s", report);
			pthread_mutex_unlock(&t->lock);
			return -EBUSY;
		}
		if (rc < 0)
			return rc;
	}
	pthread_mutex_lock(&t->gc_mu);
	if (t->gc_running) {
		pthread_mutex_unlock(&t->gc_mu);
		snprintf(report, size, "a collection is under way already");
		return -EBUSY;
	}
	t->gc_running = 1;
	/* 1: the batches begun before now end first; those begun from now
	 * on note what they put. */
	atomic_store(&t->gc_active, 1);
	old = (unsigned)(t->gc_gen & 1);
	t->gc_gen++;
	while (t->inflight[old])
		pthread_cond_wait(&t->gc_cv, &t->gc_mu);
	pthread_mutex_unlock(&t->gc_mu);
	/* 2: mark. */
	rc = objfs_meta_begin(t->m, 0, &tx);
	if (rc == 0) {
		(void)objfs_meta_commit_seq(tx, &seq);
		rc = objfs_meta_begin(t->m, 0, &tx);
	}
	if (rc == 0) {
		rc = objfs_meta_chunk_all(tx, mark_one, &m);
		objfs_meta_abort(tx);
	}
	/* Shared mode: the versions open on every node are kept too; each
	 * node applies the log (past this mark) before it names them. */
	if (rc == 0 && t->shared) {
		size_t before = m.n;

		rc = tier_share_pins(t, mark_pin, &m, &answered, &nanswered,
				why, sizeof(why));
		pins = m.n - before;
	}
	if (rc == 0 && m.n)
		qsort(m.v, m.n, sizeof(*m.v), tier_name_cmp);
	/* 3: the pool's tree at least as new as the mark. */
	if (rc == 0)
		rc = t->s->tier_ops->sync(t, seq);
	/* 4: sweep. */
	if (rc == 0)
		rc = objfs_remote_list(t->r, list_one, &w);
	/* Every node that has a lock answered, or is gone. */
	for (size_t k = 0; rc == 0 && k < w.nnodes; k++) {
		size_t i;

		for (i = 0; i < nanswered && answered[i] != w.nodes[k]; i++)
			;
		if (i == nanswered)
			rc = tier_share_unanswered(t, w.nodes[k], why,
					sizeof(why));
	}
	for (size_t k = 0; rc == 0 && k < w.n; k++) {
		const char *name = w.cand[k].name;
		struct gc_name n;
		uint64_t osize, ver = 0;
		int64_t mtime;
		int r = objfs_remote_age_ver(t->r, name, &osize, &mtime, &ver);

		if (r == -ENOENT)
			continue;
		if (r < 0) {
			rc = r;
			break;
		}
		/* Shared mode: a chunk put or found since the collection
		 * began (by a node whose commit may follow the mark) stays,
		 * whatever the grace. */
		if (now - mtime < (int64_t)grace_s ||
		    now - mtime < (int64_t)w.cand[k].min_age ||
		    (t->shared && mtime >= now)) {
			young++;
			continue;
		}
		if (name[0] != 'c') {		/* an old epoch's */
			if (objfs_remote_remove(t->r, name) == 0)
				other++;
			continue;
		}
		if (sscanf(name, "c.%16" SCNx64 "%16" SCNx64 "-%" SCNx32, &n.hi,
				&n.lo, &n.len) != 3)
			continue;
		pthread_mutex_lock(&t->gc_mu);
		if (recent_has(t, &n)) {
			noted++;
		} else if ((r = objfs_remote_remove_at(t->r, name, ver)) == 0) {
			removed++;
			bytes += n.len;
		} else if (r == -ECANCELED || r == -ENOENT) {
			/* Found by a put of another mount since its age was
			 * read (shared mode: it wrote to it), or gone. */
			noted++;
			r = 0;
		}
		pthread_mutex_unlock(&t->gc_mu);
		if (r < 0) {
			rc = r;
			break;
		}
	}
	objfs_tier_note(t, rc, "collecting garbage");
	clock_name(t, clk);
	(void)objfs_remote_remove(t->r, clk);
	pthread_mutex_lock(&t->gc_mu);
	atomic_store(&t->gc_active, 0);
	recent_clear(t);
	t->gc_running = 0;
	pthread_mutex_unlock(&t->gc_mu);
	if (rc == 0) {
		atomic_fetch_add(&t->gc_runs, 1);
		atomic_fetch_add(&t->gc_removed, removed);
		atomic_fetch_add(&t->gc_removed_bytes, bytes);
		snprintf(report, size, "%" PRIu64 " objects listed, %" PRIu64
			" chunks named by the tree (%zu records, %" PRIu64
			" of open versions), %" PRIu64
			" chunks removed (%" PRIu64 " bytes), %" PRIu64 " old "
			"snapshot or log objects removed, %" PRIu64 " kept "
			"younger than %u s, %" PRIu64 " kept as put meanwhile, "
			"in %.1f s", w.listed, w.marked, m.n - pins, pins,
			removed, bytes,
			other, young, grace_s, noted,
			(double)(objfs_mono_ns() - t0) / 1e9);
	} else if (why[0]) {
		snprintf(report, size, "%s", why);
	} else {
		snprintf(report, size, "stopped: %s (%" PRIu64 " chunks removed "
			"before)", strerror(-rc), removed);
	}
	pthread_mutex_lock(&t->lock);
	snprintf(t->gc_last, sizeof(t->gc_last), "%s", report);
	pthread_mutex_unlock(&t->lock);
	objfs_log(rc == 0 ? OBJFS_LOG_INFO : OBJFS_LOG_WARNING,
		"remote: %s: garbage collection: %s", t->spec, report);
	free(m.v);
	free(w.cand);
	free(w.nodes);
	free(answered);
	return rc;
}

void *
tier_gc_main(void *arg)
{
	struct objfs_tier *t = arg;

	pthread_mutex_lock(&t->lock);
	while (!t->stop && !t->lost) {
		char report[256];

		objfs_cond_wait_ms(&t->cv, &t->lock, 60000);
		if (t->stop || t->lost)
			break;
		if (objfs_mono_ns() < t->gc_next_ns)
			continue;
		t->gc_next_ns = objfs_mono_ns() +
			(uint64_t)OBJFS_GC_INTERVAL_S * 1000000000u;
		pthread_mutex_unlock(&t->lock);
		(void)tier_gc(t, OBJFS_GC_GRACE_S, report, sizeof(report));
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}
