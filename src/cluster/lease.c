/* SPDX-License-Identifier: MIT */
/*
 * lease.c - shared mode's write leases and the commit hook
 * (doc/design.md, "Many nodes on one namespace": invariants 1 and 3).
 *
 * The hook (tier_share_hook, objfs_meta_set_hook) puts every commit that
 * changes the shared tree in the pool's log as record "remote_pos + 1",
 * by exclusive create: whoever creates a number first has it, and a
 * mount that finds it taken rolls its commit back, applies what it
 * missed and tries its operation again (-ERESTART).  So every commit in
 * the log was made against the tree as the log stood just before it.
 *
 * A file open for writing is leased to its node: the tree's super records
 * "w<ino>" (the node) and "g<ino>" (the token: the log position that
 * granted it).  The node keeps what it holds in memory (t->held, under
 * lease_mu, a leaf taken under the index's lock).  Every commit that
 * touches a file is checked, in the hook, against the tree as the log
 * has it just before the record: another node's lease refuses it
 * (-EBUSY); a lease this node held and lost (another node broke it after
 * this node's lock lapsed) fences it (-ENOLCK), and nothing of the file
 * is published from here again.  The writer's own changes to the file
 * stay in its index (the hook leaves them out of what it puts) until it
 * publishes the file whole, at fsync and close.  A lease whose node no
 * longer holds its lock is broken by the next node that needs the file
 * (tier_share_unblock): one commit puts the file as published and drops
 * the lease.
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

/* This thread's commit publishes the files of tl_publish[] whole (one
 * file, or a group of them: publish.c's group commit; the record it
 * applies is tier_applying()'s); the lease that refused its last try. */
#define TL_PUBLISH_MAX	64
static _Thread_local uint64_t tl_publish[TL_PUBLISH_MAX];
static _Thread_local unsigned tl_npublish;
static _Thread_local uint64_t tl_blocked_ino, tl_blocked_node;

static void
lease_key(char k[24], uint64_t ino)
{
	snprintf(k, 24, TIER_LEASE_FMT, ino);
}

static void
grant_key(char k[24], uint64_t ino)
{
	snprintf(k, 24, TIER_GRANT_FMT, ino);
}

int
tier_lease_node(struct objfs_meta_txn *tx, uint64_t ino, uint64_t *node)
{
	char k[24];

	lease_key(k, ino);
	return tier_super_or_0(tx, k, node);
}

/* The lease of @ino as the tree has it: its node and its grant. */
static int
lease_get2(struct objfs_meta_txn *tx, uint64_t ino, uint64_t *node,
		uint64_t *tok)
{
	char k[24];
	int rc = tier_lease_node(tx, ino, node);

	grant_key(k, ino);
	if (rc == 0)
		rc = tier_super_or_0(tx, k, tok);
	return rc;
}

/* ---- the leases this node holds (lease_mu) ---------------------------- */

static size_t
held_slot(const struct objfs_tier *t, uint64_t ino)
{
	return (size_t)(ino * 0x9e3779b97f4a7c15ull >> 20) &
		(t->held_cap - 1);
}

/* The entry of @ino, or NULL (lease_mu held). */
static struct tier_lease *
held_find(struct objfs_tier *t, uint64_t ino)
{
	if (!t->held_n)
		return NULL;
	for (size_t i = held_slot(t, ino); t->held[i].ino;
	     i = (i + 1) & (t->held_cap - 1))
		if (t->held[i].ino == ino)
			return &t->held[i];
	return NULL;
}

static int
held_put(struct objfs_tier *t, uint64_t ino, uint64_t tok)
{
	struct tier_lease *e = held_find(t, ino);
	size_t i;

	if (e) {
		e->tok = tok;
		e->fenced = 0;
		return 0;
	}
	if (2 * (t->held_n + 1) > t->held_cap) {
		size_t cap = t->held_cap ? 2 * t->held_cap : 64;
		struct tier_lease *v = calloc(cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < t->held_cap; k++) {
			if (!t->held[k].ino)
				continue;
			for (i = (size_t)(t->held[k].ino *
				0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
			     v[i].ino; i = (i + 1) & (cap - 1))
				;
			v[i] = t->held[k];
		}
		free(t->held);
		t->held = v;
		t->held_cap = cap;
	}
	for (i = held_slot(t, ino); t->held[i].ino;
	     i = (i + 1) & (t->held_cap - 1))
		;
	t->held[i] = (struct tier_lease){ ino, tok, 0 };
	t->held_n++;
	return 0;
}

/* Forget @ino (lease_mu held): the entries after it in its run move
 * back, so that no search stops early. */
static void
held_del(struct objfs_tier *t, uint64_t ino)
{
	struct tier_lease *e = held_find(t, ino);
	size_t i, j, home;

	if (!e)
		return;
	i = (size_t)(e - t->held);
	t->held[i].ino = 0;
	t->held_n--;
	for (j = (i + 1) & (t->held_cap - 1); t->held[j].ino;
	     j = (j + 1) & (t->held_cap - 1)) {
		home = held_slot(t, t->held[j].ino);
		/* Entry j stays unless its home lies cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && home <= i && home > j)) {
			t->held[i] = t->held[j];
			t->held[j].ino = 0;
			i = j;
		}
	}
}

/* @ino's lease, which this node held, is lost (lease_mu held). */
static void
held_fence(struct objfs_tier *t, struct tier_lease *e)
{
	if (e->fenced)
		return;
	e->fenced = 1;
	atomic_fetch_add(&t->sh_fenced, 1);
	objfs_log(OBJFS_LOG_ERR, "remote: %s: inode %" PRIu64 ": this node's "
		"write lease (granted at log record %" PRIu64 ") was broken by "
		"another node while this node's lock had lapsed: what was "
		"written to it here since its last publish is not published, "
		"and its writers here get EIO until they close it", t->spec,
		e->ino, e->tok);
}

/*
 * Is this node's lease of @ino, as the tree in @tx has it, the one it
 * holds?  0 yes, or not held here (*@held 0); -ENOLCK when it held it and
 * lost it (then fenced from now on).
 */
static int
held_check(struct objfs_tier *t, uint64_t ino, uint64_t node, uint64_t tok,
		int *held)
{
	struct tier_lease *e;
	int rc = 0;

	pthread_mutex_lock(&t->lease_mu);
	e = held_find(t, ino);
	*held = e != NULL;
	if (e && (e->fenced || node != t->node || tok != e->tok)) {
		held_fence(t, e);
		rc = -ENOLCK;
	}
	pthread_mutex_unlock(&t->lease_mu);
	return rc;
}

/* ---- the hook: what a commit puts in the pool's log ------------------- */

/* Super records of this data directory, not of the tree. */
static int
local_super(const unsigned char *k, size_t klen)
{
	static const char *const own[] = { "id", "clean", "journal_seq",
		SUPER_TREE, SUPER_EPOCH, SUPER_OWNER, OBJFS_SUPER_REMOTE_POS,
		OBJFS_SUPER_IDS_INO, OBJFS_SUPER_IDS_INO_END, OBJFS_SUPER_IDS_CK,
		OBJFS_SUPER_IDS_CK_END, OBJFS_SUPER_SHIPPED };

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (klen == strlen(own[i]) && memcmp(k, own[i], klen) == 0)
			return 1;
	/* The data directory's earlier daemons (shared.c, TIER_OWNED_FMT). */
	return klen > 4 && memcmp(k, "own.", 4) == 0;
}

/* The inode a lease key names, or 0. */
uint64_t
tier_lease_ino(const unsigned char *k, size_t klen)
{
	char c;

	return tier_key_ino(k, klen, "w", &c);
}

#define FILT_LEASES	16

struct filt {
	struct objfs_tier *t;
	struct objfs_meta_txn *tx;
	unsigned char *p;
	size_t len, cap;
	uint64_t leases[FILT_LEASES];	/* lease keys the commit changes */
	unsigned nleases;
	int many;			/* more than FILT_LEASES */
	uint64_t last_ino, last_node;	/* the last lease read: a file's
					 * records come together */
	uint64_t last_tok;		/* ... its grant */
	int last_checked;		/* ... checked against ours */
	uint64_t *held;			/* this node's leased inodes whose
					 * entries were left out */
	size_t nheld, capheld;
	int names;			/* the commit changes a name */
};

/* @ino's entries were left out (this node writes it). */
static int
held_add(struct filt *f, uint64_t ino)
{
	uint64_t *v;

	if (f->nheld && f->held[f->nheld - 1] == ino)
		return 0;
	for (size_t i = 0; i < f->nheld; i++)
		if (f->held[i] == ino)
			return 0;
	if (f->nheld == f->capheld) {
		f->capheld = f->capheld ? 2 * f->capheld : 8;
		v = realloc(f->held, f->capheld * sizeof(*v));
		if (!v)
			return -ENOMEM;
		f->held = v;
	}
	f->held[f->nheld++] = ino;
	return 0;
}

static int
scan_leases(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct filt *f = arg;
	uint64_t ino;

	(void)op;
	(void)v;
	(void)vlen;
	if (db != OBJFS_MDB_SUPER || !(ino = tier_lease_ino(k, klen)))
		return 0;
	if (f->nleases < FILT_LEASES)
		f->leases[f->nleases++] = ino;
	else
		f->many = 1;
	return 0;
}

static int
lease_changed(const struct filt *f, uint64_t ino)
{
	if (f->many)
		return 1;
	for (unsigned i = 0; i < f->nleases; i++)
		if (f->leases[i] == ino)
			return 1;
	return 0;
}

/* Room in what is put for @n bytes more. */
static int
room(struct filt *f, size_t n)
{
	size_t cap = f->cap ? f->cap : 4096;
	unsigned char *p;

	if (f->len + n <= f->cap)
		return 0;
	while (cap < f->len + n)
		cap *= 2;
	p = realloc(f->p, cap);
	if (!p)
		return -ENOMEM;
	f->p = p;
	f->cap = cap;
	return 0;
}

static int
keep(struct filt *f, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	int rc = room(f, 8 + klen + vlen);

	if (rc == 0)
		f->len += objfs_meta_entry_put(f->p + f->len, op, db, k, klen,
				v, vlen);
	return rc;
}

/* Whole entries @p (@n bytes) appended to what is put. */
static int
keep_raw(struct filt *f, const void *p, size_t n)
{
	int rc = room(f, n);

	if (rc == 0) {
		memcpy(f->p + f->len, p, n);
		f->len += n;
	}
	return rc;
}

static int
publishing(uint64_t ino)
{
	for (unsigned i = 0; i < tl_npublish; i++)
		if (tl_publish[i] == ino)
			return 1;
	return 0;
}

static int
filter_one(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct filt *f = arg;
	uint64_t ino, node;
	int rc;

	switch (db) {
	case OBJFS_MDB_SUPER:
		if (local_super(k, klen))
			return 0;
		break;
	case OBJFS_MDB_DIRENT:
		f->names = 1;
		break;
	case OBJFS_MDB_DIRCOOKIE:
		break;
	case OBJFS_MDB_INODE:
	case OBJFS_MDB_SYMLINK:
	case OBJFS_MDB_CHUNK:
	case OBJFS_MDB_XATTR:
		if (klen < 8)
			return -EIO;
		ino = get_be64(k);
		if (ino != f->last_ino) {
			rc = lease_get2(f->tx, ino, &f->last_node,
					&f->last_tok);
			if (rc < 0)
				return rc;
			f->last_ino = ino;
			f->last_checked = 0;
		}
		node = f->last_node;
		if (db == OBJFS_MDB_INODE && getenv("DBG_INO") &&
		    ino == strtoull(getenv("DBG_INO"), NULL, 0)) {
			struct objfs_attr da;

			memcpy(&da, v, sizeof(da) < vlen ? sizeof(da) : vlen);
			OBJFS_DEBUG("hook node %016" PRIx64 ": commit puts inode %"
				PRIu64 " size %" PRIu64 " op %d lease %016" PRIx64
				" publishing %d", f->t->node, ino, da.size, op,
				node, publishing(ino));
		}
		/* A file whose lease this node holds: the lease must be the
		 * one it was granted, in the tree as the log has it just
		 * before this record (fencing).  A commit that changes the
		 * lease itself checked it before (tier_share_lease). */
		if (!f->last_checked && !lease_changed(f, ino)) {
			int held;

			rc = held_check(f->t, ino, node, f->last_tok, &held);
			if (rc < 0)
				return rc;
			f->last_checked = 1;
		}
		if (node && node != f->t->node) {
			/* Another node writes it. */
			tl_blocked_ino = ino;
			tl_blocked_node = node;
			return -EBUSY;
		}
		/* Ours: what we do to it is published whole, at fsync or
		 * close; the commit that takes the lease (a create) goes as
		 * it is.  Its removal goes as it is too: "whole" is then only
		 * the range deletes of what it had, and the inode's own
		 * delete would be lost (an unlink that found it closed while
		 * the RELEASE that gives its lease back was still on its way
		 * left an inode without a name in the tree). */
		if (node && !publishing(ino) && !lease_changed(f, ino) &&
		    !(db == OBJFS_MDB_INODE && op == OBJFS_JOURNAL_DEL))
			return held_add(f, ino);
		if (node && db == OBJFS_MDB_INODE && op == OBJFS_JOURNAL_DEL)
			f->names = 1;	/* and its other records' deletes */
		break;
	default:
		/* Orphans, tombstones: this mount's own. */
		return 0;
	}
	return keep(f, op, db, k, klen, v, vlen);
}

/* Log record @g holding one commit, @pl. */
static unsigned char *
make_record(uint64_t g, const void *pl, size_t n, size_t *len)
{
	uint32_t magic = TIER_LOG_MAGIC, count = 1;
	unsigned char *p = malloc(TIER_LOG_HDR + 16 + n);

	if (!p)
		return NULL;
	memcpy(p, &magic, 4);
	memcpy(p + 4, &count, 4);
	put_be64(p + 8, g);
	put_be64(p + 16, g);
	put_be64(p + TIER_LOG_HDR, g);
	put_be64(p + TIER_LOG_HDR + 8, n);
	memcpy(p + TIER_LOG_HDR + 16, pl, n);
	*len = TIER_LOG_HDR + 16 + n;
	put_be64(p + 24, objfs_csum64_seed(p + TIER_LOG_HDR,
			*len - TIER_LOG_HDR, 0));
	return p;
}

/* Record @g is there: is it this one (a try whose answer was lost)? */
static int
same_record(struct objfs_tier *t, uint64_t g, const void *rec, size_t len)
{
	char name[64];
	void *have;
	size_t hlen;
	int rc;

	tier_log_name(name, t->epoch, g);
	rc = objfs_remote_get_all(t->r, name, &have, &hlen);
	if (rc < 0)
		return rc;
	rc = hlen == len && memcmp(have, rec, len) == 0;
	free(have);
	return rc;
}

/* A lease or grant key of the tree that a payload puts or deletes. */
static uint64_t
lease_entry(int db, const unsigned char *k, size_t klen, int *grant)
{
	char c = 0;
	uint64_t ino = db == OBJFS_MDB_SUPER ? tier_key_ino(k, klen, "wg", &c) :
		0;

	*grant = c == 'g';
	return ino;
}

struct lease_moves {
	struct objfs_tier *t;
	int own;		/* this node's commit, appended */
	int late;		/* ... found in the log by the follower, its
				 * put in doubt (tier_doubt_settle) */
};

/*
 * The leases a payload changes, against those this node holds: another
 * node's record that deletes or replaces one fences it (a break); this
 * node's own appended commit makes the table follow it (granted: held
 * with its token; given back: forgotten).
 */
static int
lease_moved(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct lease_moves *lm = arg;
	struct objfs_tier *t = lm->t;
	struct tier_lease *e;
	uint64_t val = 0;
	int grant;
	uint64_t ino = lease_entry(db, k, klen, &grant);

	if (!ino) {
		if (db == OBJFS_MDB_SUPER)
			tier_deleg_moved(t, lm->own, op, k, klen, v, vlen);
		return 0;
	}
	if (op == OBJFS_JOURNAL_PUT && vlen >= 8)
		memcpy(&val, v, 8);
	pthread_mutex_lock(&t->lease_mu);
	e = held_find(t, ino);
	if (!lm->own) {
		if (e && (op != OBJFS_JOURNAL_PUT ||
		    (grant ? val != e->tok : val != t->node)))
			held_fence(t, e);
	} else if (op == OBJFS_JOURNAL_PUT && grant) {
		(void)held_put(t, ino, val);
		/* Granted by a commit whose caller got an error (an open
		 * that timed out): no writer here needs it; given back
		 * once the follower gets to it, unless one opened since. */
		if (lm->late)
			objfs_share_defer(t->s, ino, 0);
	} else if (op != OBJFS_JOURNAL_PUT && !grant && e && !e->fenced) {
		held_del(t, ino);
	}
	pthread_mutex_unlock(&t->lease_mu);
	return 0;
}

int
tier_share_hook(void *arg, struct objfs_meta_txn *tx, const void *pl, size_t n,
		uint64_t *pos)
{
	struct objfs_tier *t = arg;
	struct filt f = { 0 };
	struct lease_moves lm = { t, 0, 0 };
	unsigned char *rec, *all = NULL;
	void *ob = NULL;
	uint64_t cur = 0, t0;
	size_t len, obn = 0, count = 0, alln;
	int rc, defer = 0;

	f.t = t;
	f.tx = tx;
	pthread_mutex_lock(&t->lock);
	rc = t->lost || t->diverged;
	pthread_mutex_unlock(&t->lock);
	if (rc)
		return -EIO;	/* the epoch's log is fenced (fenced_out), or
				 * this index went ahead of the tree */
	if (tier_applying()) {
		/* The follower read the index's position, then the record
		 * after it, then waited for the apply lock: meanwhile a commit
		 * of this node's own may have put that very record and
		 * committed it here (its notify wakes the follower before its
		 * local commit).  Applied again, an older state of this node's
		 * own files would come back over what it did since (a file
		 * made, written and closed: its create applied again over its
		 * chunk, "1 of its 0 chunk records").  Under the apply lock,
		 * the index's position says. */
		rc = objfs_meta_super_get(tx, OBJFS_SUPER_REMOTE_POS, &cur);
		if (rc == 0 && cur >= tier_applying())
			return -EALREADY;
		/* Another node's record: a lease it breaks is lost here.
		 * Or this node's own, in doubt until the follower found it
		 * (tier_applying_own): what it granted is this node's, and
		 * the waiting commits it carried are shipped (in this index
		 * already, they leave the outbox). */
		int carrier;

		lm.own = lm.late = tier_applying_own(&count);
		carrier = lm.own;
		if (!lm.own && atomic_load(&t->dl_waiting)) {
			/* Commits wait here, and a record begins with all of
			 * them, byte for byte: this data directory's killed
			 * daemon put it, its answer came too late (a doubt
			 * this mount cannot know of).  They are in the log:
			 * out of the outbox, never shipped again (the
			 * simulator's seed 1191). */
			rc = objfs_meta_hook_peek(tx, &ob, &obn, &count);
			if (rc < 0)
				return rc;
			/* (Its leases name that daemon: the take-over makes
			 * them this mount's, tier_share_attach.) */
			carrier = count && obn <= n && !memcmp(pl, ob, obn);
			free(ob);
			ob = NULL;
			count = carrier ? count : 0;
		}
		if (carrier && count) {
			rc = objfs_meta_hook_take(tx, &ob, &obn, &count);
			free(ob);
			if (rc < 0)
				return rc;
			tier_deleg_shipped(t, count);
			atomic_fetch_add(&t->dl_unsure_landed, 1);
		}
		(void)objfs_meta_payload_walk(pl, n, lease_moved, &lm);
		*pos = tier_applying();
		return 0;
	}
	rc = objfs_meta_payload_walk(pl, n, scan_leases, &f);
	if (rc == 0)
		rc = objfs_meta_payload_walk(pl, n, filter_one, &f);
	/* A name of a file this node writes changes (a rename, a link, an
	 * unlink): the file goes with it, whole as it is now, so that its
	 * link count and times agree with its names everywhere. */
	for (size_t i = 0; rc == 0 && f.names && i < f.nheld; i++) {
		void *ents = NULL;
		size_t en = 0;

		rc = objfs_meta_inode_entries(tx, f.held[i], &ents, &en);
		if (rc == 0 && en)
			rc = keep_raw(&f, ents, en);
		free(ents);
	}
	free(f.held);
	/* From here on @pl is not read: the outbox's entries go into the
	 * journal's buffer it points into. */
	if (rc == 0 && f.len)
		rc = tier_deleg_classify(t, f.p, f.len, &defer);
	/* Nothing is kept while a record of kept commits may or may not be
	 * in the log: this commit carries them again (doubt_carrying). */
	if (defer && tier_doubt_carrying(t))
		defer = 0;
	if (rc == 0 && defer) {
		/* Of directories this node holds and inodes only it knows:
		 * kept, shipped with the next record this node puts. */
		rc = tier_past_deadline(t);
		if (rc == 0)
			rc = objfs_meta_hook_defer(tx, f.p, f.len);
		if (rc == 0) {
			lm.own = 1;
			(void)objfs_meta_payload_walk(f.p, f.len, lease_moved,
					&lm);
			tier_deleg_deferred(t);
		}
		free(f.p);
		return rc;
	}
	/* A put the call could not wait for is not sent (src/remote.h):
	 * refused here, before what waits is taken into it, so that it is
	 * not taken for one in doubt (those filled the doubt list while the
	 * OSD's answers were dropped, and every change failed with EAGAIN
	 * until another node wrote; refused after the take, the waiting
	 * changes went with it: the simulator's seed 149 of 300 actions). */
	if (rc == 0 && (f.len || tier_deleg_flushing()) &&
	    objfs_remote_late(t->r))
		rc = -ETIMEDOUT;
	if (rc == 0)
		rc = objfs_meta_super_get(tx, OBJFS_SUPER_REMOTE_POS, &cur);
	if (rc == -ENOENT)
		rc = -EIO;
	/* What waits goes first, in this commit's record: a commit that
	 * has a record to put, a shipping, a settling.  A commit with
	 * nothing for the log (a file's chunks written out here while
	 * this node holds its lease: published whole at its close) stays
	 * local: its put could lose the race for the log's next record,
	 * and its caller (a FLUSH, not in OBJFS_SHARED) could not do it
	 * again (close() answered ERESTART to 8 processes of 8 making
	 * files in held directories while another node gave its own
	 * back). */
	if (rc == 0 && ((atomic_load(&t->dl_waiting) && f.len) ||
	    tier_deleg_flushing()))
		rc = objfs_meta_hook_take(tx, &ob, &obn, &count);
	if (rc == 0 && count && tier_deleg_lost_any(t))
		rc = -EIO;	/* refused whole: deleg.c said so (diverge) */
	if (rc < 0) {
		free(f.p);
		free(ob);
		return rc;	/* refused */
	}
	alln = obn + f.len;
	if (alln == 0) {
		free(f.p);
		free(ob);
		return 0;	/* this mount's alone */
	}
	all = ob;
	if (f.len) {
		all = realloc(ob, alln);
		if (!all) {
			free(ob);
			free(f.p);
			return -ENOMEM;
		}
		memcpy(all + obn, f.p, f.len);
	}
	rec = make_record(cur + 1, all, alln, &len);
	free(all);
	if (!rec) {
		free(f.p);
		return -ENOMEM;
	}
	t0 = objfs_mono_ns();
	rc = tier_past_deadline(t);
	if (rc == 0)
		rc = tier_doubt_add(t, cur + 1, rec, len, obn, count);
	if (rc < 0) {
		free(rec);
		free(f.p);
		return rc;
	}
	rc = objfs_remote_log_put(t->r, t->epoch, cur + 1, rec, len);
	if (rc == -EEXIST) {
		rc = same_record(t, cur + 1, rec, len);
		if (rc == 0) {
			/* Another mount's: apply it, then try again. */
			atomic_fetch_add(&t->sh_conflicts, 1);
			rc = -ERESTART;
		} else if (rc == 1) {
			rc = 0;
		}
	}
	objfs_tier_note(t, rc == -ERESTART ? 0 : rc, "writing the pool's log");
	/* In the pool, but answered past this node's deadline: it may have
	 * stopped between the check above and the put, and the record have
	 * landed in a slot freed meanwhile (a compaction past this node, an
	 * exclusive mount's removal of the epoch), which nobody reads.  Not
	 * acknowledged: in doubt, as a put that timed out, until the
	 * follower finds what the log holds there (a lock that lapsed, with
	 * the log compacted past this node, ends its writing: lapsed()).
	 * Issue 47's defect 5: mkdir returned 0, and the directory was
	 * gone. */
	if (rc == 0 && tier_past_deadline(t) < 0) {
		atomic_fetch_add(&t->sh_late, 1);
		rc = -ETIMEDOUT;
	}
	/* Refused outright (another's record there, a full pool): not in
	 * the log, ever.  Anything else may have landed: it stays in doubt
	 * until the follower finds what the log holds there. */
	if (rc == -ERESTART || rc == -ENOSPC || rc == -EDQUOT) {
		tier_doubt_put(t, cur + 1, rec, len, 1);
	} else if (rc < 0) {
		tier_doubt_put(t, cur + 1, rec, len, 0);
		if (count)
			atomic_fetch_add(&t->dl_unsure, 1);
	}
	free(rec);
	if (rc < 0) {
		free(f.p);
		return rc;
	}
	objfs_tier_count(&t->logs, len, t0);
	atomic_fetch_add(&t->sh_appended, 1);
	/* The leases (and directories) this commit granted or gave back are
	 * (not) held; those of the waiting commits were when they were
	 * kept. */
	lm.own = 1;
	(void)objfs_meta_payload_walk(f.p, f.len, lease_moved, &lm);
	free(f.p);
	tier_deleg_shipped(t, count);
	/* The other mounts look now rather than at their next poll. */
	(void)objfs_remote_notify(t->r, TIER_WATCH);
	atomic_store(&t->pos, cur + 1);
	*pos = cur + 1;
	return 0;
}

/* ---- leases ----------------------------------------------------------- */

int
tier_share_lease(struct objfs_tier *t, struct objfs_meta_txn *tx, uint64_t ino,
		int take)
{
	char k[24], g[24];
	uint64_t node, tok, pos;
	int held, rc = lease_get2(tx, ino, &node, &tok);

	if (rc < 0)
		return rc;
	lease_key(k, ino);
	grant_key(g, ino);
	/* The lease this node holds must still be the one it was granted
	 * (in the tree as the log has it up to this commit), whether it is
	 * given back or taken again by another open here. */
	rc = held_check(t, ino, node, tok, &held);
	if (rc < 0 || (held && take))
		return rc;
	if (!take) {
		if (node != t->node)
			return 0;
		rc = objfs_meta_super_del(tx, k);
		if (rc == 0)
			rc = objfs_meta_super_del(tx, g);
		return rc == -ENOENT ? 0 : rc;
	}
	if (node && node != t->node) {
		tl_blocked_ino = ino;
		tl_blocked_node = node;
		return -EBUSY;
	}
	/* Granted in the record this commit becomes: the log position after
	 * the one this index has applied.  Its token from now on. */
	rc = objfs_meta_super_get(tx, OBJFS_SUPER_REMOTE_POS, &pos);
	if (rc == 0)
		rc = objfs_meta_super_put(tx, k, t->node);
	if (rc == 0)
		rc = objfs_meta_super_put(tx, g, pos + 1);
	return rc == -ENOENT ? -EIO : rc;
}

void
tier_share_publishing(struct objfs_tier *t, uint64_t ino)
{
	(void)t;
	if (!ino)
		tl_npublish = 0;
	else if (tl_npublish < TL_PUBLISH_MAX)
		tl_publish[tl_npublish++] = ino;
}

int
tier_share_lease_state(struct objfs_tier *t, uint64_t ino)
{
	struct tier_lease *e;
	int rc;

	pthread_mutex_lock(&t->lease_mu);
	e = held_find(t, ino);
	rc = e && e->fenced ? -ENOLCK : 0;
	pthread_mutex_unlock(&t->lease_mu);
	return rc;
}

void
tier_share_forget(struct objfs_tier *t, uint64_t ino)
{
	pthread_mutex_lock(&t->lease_mu);
	held_del(t, ino);
	pthread_mutex_unlock(&t->lease_mu);
}

struct lease_scan {
	uint64_t owner, only;		/* @owner's leases (of @only, not 0) */
	uint64_t *v;
	size_t n, cap;
};

static int
lease_found(void *arg, const char *key, uint64_t node)
{
	struct lease_scan *ls = arg;
	uint64_t ino = tier_lease_ino((const unsigned char *)key, strlen(key));

	if (!ino || node != ls->owner || (ls->only && ino != ls->only))
		return 0;
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? ls->cap * 2 : 16;
		uint64_t *v = realloc(ls->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ls->v = v;
		ls->cap = cap;
	}
	ls->v[ls->n++] = ino;
	return 0;
}

/*
 * The leases node @owner holds in the tree (of @only, when not 0), in one
 * commit, tried again after the log moved: @publish gives them back, each
 * file put whole as this index has it (this mount's at unmount; a gone
 * node's, whose last published version this index holds, and which
 * replaces whatever that node's index held beyond it when it comes back),
 * else they become this mount's (a killed daemon's of this data
 * directory).  *@count: how many.
 */
int
tier_share_rewrite_leases(struct objfs_tier *t, uint64_t owner, uint64_t only,
		int publish, size_t *count)
{
	for (int tries = 0; tries < 64; tries++) {
		struct lease_scan ls = { owner, only, NULL, 0, 0 };
		struct objfs_meta_txn *tx;
		int rc = objfs_meta_begin(t->m, OBJFS_META_ESSENTIAL, &tx);

		if (rc < 0)
			return rc;
		rc = objfs_meta_super_list(tx, "w", lease_found, &ls);
		/* Taken over from this data directory's last daemon: its
		 * directories too, and the data directory says this mount is
		 * its owner now, in the same commit, so that a mount killed
		 * in the middle leaves all of it to the next, or none. */
		if (rc == 0 && !publish)
			rc = tier_deleg_rewrite(t, tx, owner);
		if (rc == 0 && !publish)
			rc = objfs_meta_super_put(tx, SUPER_OWNER, t->node);
		for (size_t i = 0; rc == 0 && i < ls.n; i++) {
			char k[24];
			void *ents = NULL;
			size_t n = 0;

			lease_key(k, ls.v[i]);
			if (!publish) {
				rc = objfs_meta_super_put(tx, k, t->node);
				continue;
			}
			rc = objfs_meta_super_del(tx, k);
			if (rc == 0) {
				char g[24];

				grant_key(g, ls.v[i]);
				rc = objfs_meta_super_del(tx, g);
				if (rc == -ENOENT)
					rc = 0;	/* granted before grants */
			}
			if (rc == 0)
				rc = objfs_meta_inode_entries(tx, ls.v[i], &ents,
						&n);
			if (rc == 0 && n)
				rc = objfs_meta_apply(tx, ents, n);
			free(ents);
		}
		free(ls.v);
		*count = ls.n;
		if (rc == 0 && ls.n == 0 && publish) {
			objfs_meta_abort(tx);
			return 0;
		}
		rc = objfs_commit_or_abort(tx, rc, NULL);
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


int
tier_share_unblock(struct objfs_tier *t)
{
	uint64_t ino = tl_blocked_ino, node = tl_blocked_node, dir, dnode;
	int rc;

	tl_blocked_ino = tl_blocked_node = 0;
	/* A directory another node holds: recalled (or broken once its
	 * lock lapsed), then the commit is tried again. */
	if (tier_deleg_blocked(&dir, &dnode))
		return tier_deleg_recall(t, dir, dnode);
	if (!ino)
		return -EBUSY;
	rc = tier_node_alive(t, node);
	if (rc < 0)
		return rc;
	if (rc) {
		atomic_fetch_add(&t->sh_refused, 1);
		return -EBUSY;
	}
	{
		size_t n = 0;

		rc = tier_share_rewrite_leases(t, node, ino, 1, &n);
		if (rc == 0 && n) {
			atomic_fetch_add(&t->sh_broken, 1);
			objfs_log(OBJFS_LOG_WARNING, "remote: %s: inode %" PRIu64
				" was leased for writing to node %016" PRIx64
				", which is gone (its lock lapsed): its lease "
				"is broken, its last published version stands",
				t->spec, ino, node);
		}
		return rc;
	}
}
