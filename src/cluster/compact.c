/* SPDX-License-Identifier: MIT */
/*
 * compact.c - shared mode's bounded history (doc/design.md, "Many
 * nodes on one namespace", "Compaction"): the shared log compacted into
 * snapshots while nodes work, and the records nobody needs removed.
 *
 * The tree of a shared namespace is the head's snapshot and the log after
 * it.  Once remote_compact records (or more for a large tree: one per 8
 * KiB of snapshot) follow the snapshot, a node compacts: it builds the
 * tree from the pool into an index of its own (DATA/compact.tmp: the
 * head's snapshot and the log, exactly what a new node's mount reads, so
 * nothing this node holds unpublished can leak into it), dumps it as a
 * new snapshot of the same epoch, and swaps the head to it by
 * compare-and-swap.  A new node then reads that snapshot and the records
 * after it: its mount costs the tree, not the history.
 *
 * Removing records.  Every node registers the log position it has applied
 * in the omap of objfs.nodes (at open with 0: it needs everything from
 * its index's position on; then at every renewal).  After its swap, the
 * compactor removes the records up to the least position of the nodes
 * that hold their lock, and no further than the old snapshot's base; the
 * new head's floor says that records up to that base may be gone.  So a
 * live node never finds a record it needs gone, and a node that comes
 * back after its lock lapsed, or whose index is behind the floor,
 * rebuilds (it is told: lapsed(), prepare).  One compaction at a time is
 * a courtesy (the lock objfs.compact); the swap is what decides.
 *
 * Locks: none of its own.  It runs in a thread of its own and takes
 * t->lock only to read and wait.
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
#include "src/base/log.h"
#include "src/store_int.h"
#include "src/cluster/tier_int.h"

#define REGISTRY	"objfs.nodes"
#define COMPACT_LOCK	"objfs.compact"
#define COMPACT_SNAP_PER_RECORD	8192u	/* bytes of snapshot a record more */
#define SNAP_PART	(32u << 20)

static void
node_key(char k[24], uint64_t node)
{
	snprintf(k, 24, "%016" PRIx64, node);
}

/* An entry: the position (8 bytes), then which of the node's
 * registrations it is (8 bytes). */
#define REG_LEN	16

int
tier_compact_register(struct objfs_tier *t, uint64_t pos)
{
	unsigned char v[REG_LEN];
	char k[24];

	uint64_t zero = 0;

	/* From a random start: a node's id may outlive its mount. */
	(void)atomic_compare_exchange_strong(&t->reg_count, &zero,
			tier_random64() | 1);
	node_key(k, t->node);
	put_be64(v, pos);
	put_be64(v + 8, atomic_fetch_add(&t->reg_count, 1));
	return objfs_remote_omap_set(t->r, REGISTRY, k, v, sizeof(v));
}

void
tier_compact_unregister(struct objfs_tier *t)
{
	char k[24];

	node_key(k, t->node);
	(void)objfs_remote_omap_set(t->r, REGISTRY, k, NULL, 0);
}

struct least {
	struct objfs_tier *t;
	uint64_t pos;
	char dead[64][24];	/* gone nodes' keys, removed after */
	unsigned char dead_val[64][REG_LEN];	/* ... if still these */
	size_t dead_len[64];
	unsigned ndead;
};

static int
least_one(void *arg, const char *key, const void *val, size_t len)
{
	struct least *l = arg;
	char *end;
	uint64_t node = strtoull(key, &end, 16), pos;
	int alive;

	if (*end || (len != 8 && len != REG_LEN))
		return 0;	/* not ours (8 bytes: before the count) */
	pos = get_be64(val);
	alive = node == l->t->node ? 1 : tier_node_alive(l->t, node);
	if (alive < 0)
		return alive;
	if (!alive) {
		if (l->ndead < 64) {
			snprintf(l->dead[l->ndead], 24, "%s", key);
			memcpy(l->dead_val[l->ndead], val, len);
			l->dead_len[l->ndead++] = len;
		}
		return 0;
	}
	if (pos < l->pos)
		l->pos = pos;
	return 0;
}

/* The least position a live node has registered (at most @cap); gone
 * nodes' entries are removed, each only if it is still the value read: a
 * node that was stopped may take its lock again and register between
 * the reading and the removal, and a removal of that registration would
 * leave its records unprotected from the next compaction while it reads
 * them (it would find the log's end at a removed record). */
static int
least_live(struct objfs_tier *t, uint64_t cap, uint64_t *out)
{
	struct least *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return -ENOMEM;
	l->t = t;
	l->pos = cap;
	rc = objfs_remote_omap_list(t->r, REGISTRY, least_one, l);
	if (rc == -ENOENT)
		rc = 0;
	for (unsigned i = 0; rc == 0 && i < l->ndead; i++)
		(void)objfs_remote_omap_del_if(t->r, REGISTRY, l->dead[i],
				l->dead_val[i], l->dead_len[i]);
	if (rc == 0)
		*out = l->pos;
	free(l);
	return rc;
}

/* Records a compaction waits for after head @h. */
static uint64_t
threshold(const struct objfs_tier *t, const struct head *h)
{
	uint64_t k = t->compact_min;
	uint64_t by_size = h->bytes / COMPACT_SNAP_PER_RECORD;

	return by_size > k ? by_size : k;
}

static void
gone_name(char name[64], uint64_t epoch)
{
	snprintf(name, 64, "objfs.gone.%016" PRIx64, epoch);
}

/* A batch of removals, many at once (tier_fan): on S3 each is a request
 * of tens of milliseconds. */
#define REMOVE_BATCH	256

struct removal {
	struct objfs_tier *t;
	uint64_t epoch, first;
	int rc[REMOVE_BATCH];
};

static void
remove_one(void *arg, size_t i)
{
	struct removal *r = arg;
	char rec[64];

	tier_log_name(rec, r->epoch, r->first + i);
	r->rc[i] = objfs_remote_remove(r->t->r, rec);
}

/* Remove the log records of @epoch up to @upto that are still there (the
 * last removal's end is kept in objfs.gone.<epoch>: it moves only past
 * a batch removed whole). */
static void
remove_records(struct objfs_tier *t, uint64_t epoch, uint64_t upto,
		uint64_t *removed)
{
	struct removal *r = malloc(sizeof(*r));
	unsigned char v[8];
	char name[64];
	uint64_t from = 0, seq;
	void *buf;
	size_t len;

	*removed = 0;
	if (!r)
		return;
	gone_name(name, epoch);
	if (objfs_remote_get_all(t->r, name, &buf, &len) == 0) {
		if (len == 8)
			from = get_be64(buf);
		free(buf);
	}
	r->t = t;
	r->epoch = epoch;
	for (seq = from + 1; seq <= upto; seq += REMOVE_BATCH) {
		size_t n = upto - seq + 1 < REMOVE_BATCH ?
			(size_t)(upto - seq + 1) : REMOVE_BATCH;
		int whole = 1;

		r->first = seq;
		tier_fan(n, 16, remove_one, r);
		for (size_t i = 0; i < n; i++) {
			if (r->rc[i] < 0)
				whole = 0;
			else
				(*removed)++;
		}
		if (!whole)
			break;	/* the next compaction goes on from here */
		if (((seq + n - 1) >> 10) != ((seq - 1) >> 10) ||
		    seq + n - 1 == upto) {
			put_be64(v, seq + n - 1);
			(void)objfs_remote_put(t->r, name, v, sizeof(v));
		}
	}
	free(r);
}

static int
build_tmp(struct objfs_tier *t, const char *dir, struct head *h,
		struct objfs_meta **out, uint64_t *end)
{
	uint64_t entries, records;
	int rc;

	for (int tries = 0;; tries++) {
		struct objfs_meta *m;

		(void)mkdir(dir, 0700);
		rc = tier_clear_dir(dir);
		if (rc < 0)
			return rc;
		rc = objfs_meta_open(dir, OBJFS_META_CREATE, &m, NULL);
		if (rc < 0)
			return rc;
		rc = tier_tree_build(t, m, h, end, &entries, &records);
		if (rc == 0) {
			*out = m;
			return 0;
		}
		(void)objfs_meta_close(m);
		if (rc != -EAGAIN || tries == 4)
			return rc;
	}
}

/*
 * One compaction, if the log asks for it: 1 when the head was swapped, 0
 * when nothing was to be done (or another node did it), or -errno.
 */
static int
compact_once(struct objfs_tier *t, uint64_t *next)
{
	char dir[PATH_MAX + 16], text[TIER_HEAD_MAX];
	struct head h, b, nh;
	struct objfs_meta *m = NULL;
	struct snap_up u = { 0 };
	uint64_t ver, end, seq, least = 0, removed = 0, t0 = objfs_mono_ns();
	int rc;

	rc = tier_head_read(t, &h, &ver);
	if (rc < 0)
		return rc;
	if (h.epoch != t->epoch)
		return tier_epoch_check(t);	/* an exclusive mount's now */
	*next = h.base + threshold(t, &h);
	if (atomic_load(&t->pos) < *next)
		return 0;
	rc = objfs_remote_hold(t->r, COMPACT_LOCK, t->holder,
			2 * t->timeout_s + 60, NULL, 0);
	if (rc == -EBUSY)
		return 0;	/* another node is at it */
	if (rc < 0)
		return rc;
	snprintf(dir, sizeof(dir), "%s/compact.tmp", t->dir);
	b = h;
	rc = build_tmp(t, dir, &b, &m, &end);
	if (rc == 0 && (b.base != h.base || b.epoch != h.epoch))
		rc = 0, end = 0;	/* compacted by another meanwhile */
	if (rc == 0 && end > h.base + 1) {
		u.t = t;
		u.h.version = 2;
		u.h.epoch = h.epoch;
		u.h.snap = tier_random64();
		rc = objfs_meta_dump(m, SNAP_PART, tier_snap_part, &u, &seq);
		nh = u.h;
		nh.tree = h.tree;
		nh.owner = h.owner;
		nh.base = end - 1;
		nh.parts = u.parts;
		nh.bytes = u.bytes;
		/* Records up to the old base may be gone from now on. */
		nh.floor = h.base > h.floor ? h.base : h.floor;
		if (rc == 0)
			rc = objfs_remote_head_put(t->r, text, tier_head_text(&nh,
					text, sizeof(text)), &ver);
		if (rc == -ECANCELED) {
			/* Another swapped first: its parts are nobody's. */
			tier_remove_snapshot(t, &nh);
			rc = 0;
		} else if (rc < 0) {
			/* No answer: the swap may land yet, naming these
			 * parts; left for the collector if it does not. */
		} else {
			rc = 1;
		}
	}
	if (m)
		(void)objfs_meta_close(m);
	(void)tier_clear_dir(dir);
	(void)rmdir(dir);
	if (rc == 1) {
		/* The old snapshot goes (a node building from it starts
		 * again from this one), then the records nobody needs. */
		tier_remove_snapshot(t, &h);
		if (least_live(t, h.base, &least) == 0)
			remove_records(t, h.epoch, least, &removed);
		atomic_fetch_add(&t->compactions, 1);
		atomic_fetch_add(&t->compact_removed, removed);
		*next = nh.base + threshold(t, &nh);
		objfs_log(OBJFS_LOG_INFO, "remote: %s: the log compacted: a "
			"snapshot of record %" PRIu64 " (%" PRIu64 " bytes in %"
			PRIu64 " part(s)) in %.1f s; %" PRIu64 " log record(s) "
			"up to %" PRIu64 " removed", t->spec, nh.base, nh.bytes,
			nh.parts, (double)(objfs_mono_ns() - t0) / 1e9, removed,
			least);
	}
	(void)objfs_remote_release(t->r, COMPACT_LOCK, t->holder);
	return rc;
}

static void *
compact_main(void *arg)
{
	struct objfs_tier *t = arg;
	uint64_t next = 0;
	int quiet = 0;

	pthread_mutex_lock(&t->lock);
	while (!t->stop && !t->follow_stop) {
		int rc;

		objfs_cond_wait_ms(&t->cv, &t->lock, 1000);
		if (t->stop || t->follow_stop || t->lost)
			continue;
		if (atomic_load(&t->pos) < next)
			continue;
		pthread_mutex_unlock(&t->lock);
		rc = compact_once(t, &next);
		if (rc < 0 && !quiet)
			objfs_log(OBJFS_LOG_WARNING, "remote: %s: compacting the "
				"log: %s (tried again later)", t->spec,
				strerror(-rc));
		quiet = rc < 0;
		if (rc < 0)	/* not at once again */
			next = atomic_load(&t->pos) + 64;
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int
tier_compact_start(struct objfs_tier *t)
{
	int rc;

	if (!t->compact_min)
		return 0;	/* -o remote_compact=0 */
	rc = pthread_create(&t->compact_th, NULL, compact_main, t);
	if (rc == 0)
		t->compact_started = 1;
	return -rc;
}

void
tier_compact_stop(struct objfs_tier *t)
{
	if (!t->compact_started)
		return;
	pthread_mutex_lock(&t->lock);
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->compact_th, NULL);
	t->compact_started = 0;
}
