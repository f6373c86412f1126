/* SPDX-License-Identifier: MIT */
/*
 * tier_share.c - shared mode (-o shared): many mounts, on as many
 * machines, of one pool's namespace (doc/design.md, "Many nodes on one
 * namespace").
 *
 * The tree is the head's snapshot and one log, as for a single mount; in
 * shared mode every mount appends to that log.  A commit that changes
 * the shared tree is put, in the index's commit hook (objfs_meta_set_hook)
 * and before the commit is journaled, as log record "remote_pos + 1" with
 * an exclusive create: whoever creates a number first has it, and a mount
 * that finds it taken rolls its commit back, applies what it missed and
 * tries its operation again (-ERESTART, store_int.h's OBJFS_SHARED).  So
 * every commit in the log was made against the tree as the log stood just
 * before it, and every mount that applies the log in order holds the same
 * tree.  Other mounts find new records within TIER_FOLLOW_MS (a thread
 * looks that often) and apply them (objfs_store_apply_remote).
 *
 * A file open for writing on one mount is leased to it: the super record
 * "w<ino>" names the node, and every commit that touches another node's
 * leased inode is refused (-EBUSY) by the hook, checked against the tree
 * as the log has it.  The writer's own changes to the file's records stay
 * in its index (the hook leaves them out of what it puts) until it
 * publishes the file: at fsync and close, one commit holds the file's
 * whole state (objfs_meta_inode_entries), so other mounts see the old
 * version or the new one, never a part.  A node holds a RADOS lock,
 * "objfs.node.<number>", renewed every third of its duration
 * (remote_lease): when a lease's node no longer holds it, the node is
 * gone and its lease is broken by the next mount that needs the file (a
 * commit that puts the file's state as published and drops the lease).
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

#include "base/clock.h"
#include "base/csum.h"
#include "base/log.h"
#include "../meta/meta_keys.h"
#include "store_int.h"
#include "tier_int.h"

/* This thread's commit applies log record @tl_applying (not put again),
 * or publishes @tl_publish whole; the lease that refused its last try. */
static _Thread_local uint64_t tl_applying, tl_publish;
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

static int
super_or_0(struct objfs_meta_txn *tx, const char *k, uint64_t *v)
{
	int rc = objfs_meta_super_get(tx, k, v);

	if (rc == -ENOENT) {
		*v = 0;
		rc = 0;
	}
	return rc;
}

static int
lease_get(struct objfs_meta_txn *tx, uint64_t ino, uint64_t *node)
{
	char k[24];

	lease_key(k, ino);
	return super_or_0(tx, k, node);
}

/* The lease of @ino as the tree has it: its node and its grant. */
static int
lease_get2(struct objfs_meta_txn *tx, uint64_t ino, uint64_t *node,
		uint64_t *tok)
{
	char k[24];
	int rc = lease_get(tx, ino, node);

	grant_key(k, ino);
	if (rc == 0)
		rc = super_or_0(tx, k, tok);
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

static void
node_name(char name[64], uint64_t node)
{
	snprintf(name, 64, TIER_NODE_FMT, node);
}

/* ---- the hook: what a commit puts in the pool's log ------------------- */

/* Super records of this data directory, not of the tree. */
static int
local_super(const unsigned char *k, size_t klen)
{
	static const char *const own[] = { "id", "clean", "journal_seq",
		SUPER_TREE, SUPER_EPOCH, SUPER_OWNER, OBJFS_SUPER_REMOTE_POS };

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (klen == strlen(own[i]) && memcmp(k, own[i], klen) == 0)
			return 1;
	return 0;
}

/* The inode a lease key names, or 0. */
static uint64_t
lease_ino(const unsigned char *k, size_t klen)
{
	char hex[17];
	char *end;
	uint64_t ino;

	if (klen != 17 || k[0] != 'w')
		return 0;
	memcpy(hex, k + 1, 16);
	hex[16] = '\0';
	ino = strtoull(hex, &end, 16);
	return *end ? 0 : ino;
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
	if (db != OBJFS_MDB_SUPER || !(ino = lease_ino(k, klen)))
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
		 * it is. */
		if (node && ino != tl_publish && !lease_changed(f, ino))
			return held_add(f, ino);
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

static uint64_t lease_margin_ns(const struct objfs_tier *t);

/* A lease or grant key of the tree that a payload puts or deletes. */
static uint64_t
lease_entry(int db, const unsigned char *k, size_t klen, int *grant)
{
	char hex[17];
	char *end;
	uint64_t ino;

	if (db != OBJFS_MDB_SUPER || klen != 17 || (k[0] != 'w' && k[0] != 'g'))
		return 0;
	memcpy(hex, k + 1, 16);
	hex[16] = '\0';
	ino = strtoull(hex, &end, 16);
	*grant = k[0] == 'g';
	return *end ? 0 : ino;
}

struct lease_moves {
	struct objfs_tier *t;
	int own;		/* this node's commit, appended */
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

	if (!ino)
		return 0;
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
	} else if (op != OBJFS_JOURNAL_PUT && !grant && e && !e->fenced) {
		held_del(t, ino);
	}
	pthread_mutex_unlock(&t->lease_mu);
	return 0;
}

static int
share_hook(void *arg, struct objfs_meta_txn *tx, const void *pl, size_t n,
		uint64_t *pos)
{
	struct objfs_tier *t = arg;
	struct filt f = { 0 };
	struct lease_moves lm = { t, 0 };
	unsigned char *rec;
	uint64_t cur = 0, t0;
	size_t len;
	int rc;

	f.t = t;
	f.tx = tx;
	pthread_mutex_lock(&t->lock);
	rc = t->lost;
	pthread_mutex_unlock(&t->lock);
	if (rc)
		return -EIO;	/* the epoch's log is fenced (fenced_out) */
	if (tl_applying) {
		/* Another node's record (or this node's, found in the log
		 * by the follower): a lease it breaks is lost here. */
		(void)objfs_meta_payload_walk(pl, n, lease_moved, &lm);
		*pos = tl_applying;
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
	if (rc < 0 || f.len == 0) {
		free(f.p);
		return rc;	/* refused, or this mount's alone */
	}
	rc = objfs_meta_super_get(tx, OBJFS_SUPER_REMOTE_POS, &cur);
	if (rc < 0) {
		free(f.p);
		return rc == -ENOENT ? -EIO : rc;
	}
	rec = make_record(cur + 1, f.p, f.len, &len);
	free(f.p);
	if (!rec)
		return -ENOMEM;
	t0 = objfs_mono_ns();
	/* Past this node's local deadline nothing is appended before its
	 * lock is proved held (the caller renews and tries again): a node
	 * that stopped may have been given up by the others, and the log
	 * compacted past it. */
	pthread_mutex_lock(&t->lock);
	rc = t0 + lease_margin_ns(t) >= t->lease_ns ? -ETIME : 0;
	pthread_mutex_unlock(&t->lock);
	if (rc < 0) {
		free(rec);
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
	free(rec);
	objfs_tier_note(t, rc == -ERESTART ? 0 : rc, "writing the pool's log");
	if (rc < 0)
		return rc;
	objfs_tier_count(&t->logs, len, t0);
	atomic_fetch_add(&t->sh_appended, 1);
	/* The leases this commit granted or gave back are (not) held. */
	lm.own = 1;
	(void)objfs_meta_payload_walk(pl, n, lease_moved, &lm);
	/* The other mounts look now rather than at their next poll. */
	(void)objfs_remote_notify(t->r, TIER_WATCH);
	atomic_store(&t->pos, cur + 1);
	*pos = cur + 1;
	return 0;
}

/* ---- following the log ------------------------------------------------ */

static int
index_pos(struct objfs_tier *t, uint64_t *pos)
{
	struct objfs_meta_txn *tx;
	int rc = objfs_meta_begin(t->m, 0, &tx);

	if (rc < 0)
		return rc;
	rc = objfs_meta_super_get(tx, OBJFS_SUPER_REMOTE_POS, pos);
	objfs_meta_abort(tx);
	return rc;
}

static int
apply_commit(void *arg, uint64_t seq, const void *pl, size_t n)
{
	struct objfs_tier *t = arg;
	int rc;

	tl_applying = seq;
	rc = objfs_store_apply_remote(t->s, pl, n);
	tl_applying = 0;
	if (rc == 0) {
		atomic_store(&t->pos, seq);
		atomic_fetch_add(&t->sh_applied, 1);
	}
	return rc;
}

static void
fenced_out(struct objfs_tier *t, uint64_t seq)
{
	pthread_mutex_lock(&t->lock);
	if (!t->lost)
		objfs_log(OBJFS_LOG_ERR, "remote: %s: the log of epoch %" PRIu64
			" was fenced at record %" PRIu64 " by a mount that took "
			"the namespace over while this node's hold had lapsed: "
			"nothing more is written here (EIO); unmount, and mount "
			"again", t->spec, t->epoch, seq);
	t->lost = 1;
	pthread_mutex_unlock(&t->lock);
}

/*
 * Apply the log up to its end.  With @since (a monotonic time), a pass
 * begun after it that reached the end is enough: concurrent callers
 * share one pass (an open waits for at most the pass under way and one
 * more).  *@applied: how many commits were applied.
 */
static int
catch_up(struct objfs_tier *t, uint64_t since, uint64_t *applied)
{
	static const size_t first_cap = 64 << 10;
	unsigned char *buf;
	uint64_t start, before = atomic_load(&t->sh_applied);
	int rc = 0;

	if (since && atomic_load(&t->view_ns) > since)
		return 0;
	buf = malloc(first_cap);
	if (!buf)
		return -ENOMEM;
	pthread_mutex_lock(&t->catch_mu);
	start = objfs_mono_ns();
	if (since && atomic_load(&t->view_ns) > since) {
		pthread_mutex_unlock(&t->catch_mu);
		free(buf);
		return 0;
	}
	for (;;) {
		uint64_t pos, last;
		void *big = NULL;
		unsigned char *p = buf;
		size_t len = 0;

		rc = index_pos(t, &pos);
		if (rc < 0)
			break;
		rc = objfs_remote_log_get(t->r, t->epoch, pos + 1, buf, first_cap,
				&len);
		if (rc == -EFBIG) {
			char name[64];

			tier_log_name(name, t->epoch, pos + 1);
			rc = objfs_remote_get_all(t->r, name, &big, &len);
			p = big;
		}
		if (rc == -ENOENT) {
			/* The end: every record put before @start is applied. */
			atomic_store(&t->view_ns, start);
			rc = 0;
			break;
		}
		objfs_tier_note(t, rc, "reading the pool's log");
		if (rc < 0)
			break;
		if (tier_log_is_fence(p, len)) {
			/* An exclusive mount took the namespace over while
			 * this node's shared hold had lapsed: this epoch's log
			 * ends here, and this node can add nothing to it. */
			free(big);
			fenced_out(t, pos + 1);
			rc = -ESTALE;
			break;
		}
		rc = tier_log_walk(p, len, pos + 1, &last, apply_commit, t);
		free(big);
		if (rc == -EPROTO)
			objfs_log(OBJFS_LOG_ERR, "remote: %s: log record %" PRIu64
				" is damaged: this mount stops following the "
				"pool's log", t->spec, pos + 1);
		if (rc < 0)
			break;
	}
	pthread_mutex_unlock(&t->catch_mu);
	free(buf);
	if (applied)
		*applied = atomic_load(&t->sh_applied) - before;
	return rc;
}

int
tier_share_catch_up(struct objfs_tier *t)
{
	return catch_up(t, 0, NULL);
}

/* A notify came (another mount appended): the follower looks now. */
static void
kick(void *arg)
{
	struct objfs_tier *t = arg;

	pthread_mutex_lock(&t->lock);
	t->kicked = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
}

static void node_name(char name[64], uint64_t node);
#define node_alive tier_share_node_alive

/* The watch: a notify of an append (no payload) wakes the follower; a
 * collector's request for this node's pins is answered by it. */
static void
watched(void *arg, uint64_t notify_id, uint64_t cookie, const void *data,
		size_t len)
{
	struct objfs_tier *t = arg;
	int queued = 0;

	if (data && len == strlen(TIER_PINS_ASK) &&
	    memcmp(data, TIER_PINS_ASK, len) == 0) {
		pthread_mutex_lock(&t->lock);
		if (t->pins_n < TIER_PINS_REQS) {
			t->pins_req[t->pins_n].id = notify_id;
			t->pins_req[t->pins_n].cookie = cookie;
			t->pins_n++;
			queued = 1;
		}
		pthread_mutex_unlock(&t->lock);
	}
	if (data && !queued)	/* not ours, or too many: no answer given */
		(void)objfs_remote_notify_ack(t->r, notify_id, cookie, NULL, 0);
	kick(t);
}

struct pins {
	unsigned char *p;
	size_t len, cap;
	uint64_t count;
};

static int
pins_add(struct pins *pn, uint64_t hi, uint64_t lo, uint32_t len)
{
	if (pn->len + 20 > pn->cap) {
		size_t cap = pn->cap ? 2 * pn->cap : 4096;
		unsigned char *v = realloc(pn->p, cap);

		if (!v)
			return -ENOMEM;
		pn->p = v;
		pn->cap = cap;
	}
	put_be64(pn->p + pn->len, hi);
	put_be64(pn->p + pn->len + 8, lo);
	put_be32(pn->p + pn->len + 16, len);
	pn->len += 20;
	pn->count++;
	return 0;
}

/*
 * Answer the collectors that asked: the log applied to its end (so that
 * every version another node replaced before they marked is detached
 * here, and still open if it is), then the chunks of every version open
 * here written to objfs.pins.<node>, then the answer: this node's number.
 * A version opened after this is at least as new as the collector's mark,
 * so its chunks are marked, or were put or found since (kept by the
 * sweep's own rules).
 */
static void
answer_pins(struct objfs_tier *t)
{
	struct pins pn = { 0 };
	struct objfs_inode **all;
	unsigned char nodebuf[8];
	uint32_t magic = TIER_PINS_MAGIC;
	char name[64];
	size_t k = 0;
	unsigned n;
	int rc;

	pthread_mutex_lock(&t->lock);
	n = t->pins_n;
	pthread_mutex_unlock(&t->lock);
	if (!n)
		return;
	rc = tier_share_catch_up(t);
	if (rc == 0 && pins_add(&pn, 0, 0, 0) == 0) {	/* the header's room */
		pn.len = 24;
		pn.count = 0;
	} else if (rc == 0) {
		rc = -ENOMEM;
	}
	if (rc == 0 && (rc = objfs_inode_snapshot(t->s, &all, &k)) == 0) {
		for (size_t i = 0; i < k; i++) {
			struct objfs_inode *ip = all[i];
			struct objfs_chunk *c;
			uint64_t idx;

			objfs_inode_lock(ip);
			if (S_ISREG(ip->attr.mode) && ip->nopen)
				OBJFS_CHUNKMAP_EACH(&ip->chunks, 0, idx, c)
					if ((c->flags & OBJFS_CHUNK_ONDISK) &&
					    rc == 0)
						rc = pins_add(&pn, c->slot,
							c->home, c->disk_len);
			objfs_inode_unlock(ip);
		}
		objfs_inode_put_all(t->s, all, k);
	}
	if (rc == 0) {
		put_be32(pn.p, magic);
		put_be32(pn.p + 4, 0);
		put_be64(pn.p + 8, pn.count);
		put_be64(pn.p + 16, objfs_csum64(pn.p + 24, pn.len - 24));
		snprintf(name, sizeof(name), TIER_PINS_FMT, t->node);
		rc = objfs_remote_put(t->r, name, pn.p, pn.len);
		objfs_tier_note(t, rc, "writing this node's pins");
	}
	free(pn.p);
	put_be64(nodebuf, t->node);
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->pins_n; i++)
		(void)objfs_remote_notify_ack(t->r, t->pins_req[i].id,
			t->pins_req[i].cookie, rc == 0 ? nodebuf : NULL,
			rc == 0 ? 8 : 0);
	t->pins_n = 0;
	pthread_mutex_unlock(&t->lock);
	if (rc < 0)
		objfs_log(OBJFS_LOG_WARNING, "remote: %s: cannot name the chunks "
			"open here to a collector: %s (it defers)", t->spec,
			strerror(-rc));
}

struct answers {
	uint64_t *v;
	size_t n, cap;
	int bad;
};

static void
answered(void *arg, const void *data, size_t len)
{
	struct answers *a = arg;

	if (len != 8) {
		a->bad = 1;	/* a node that could not name its pins */
		return;
	}
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		uint64_t *v = realloc(a->v, cap * sizeof(*v));

		if (!v) {
			a->bad = 1;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = get_be64(data);
}

int
tier_share_pins(struct objfs_tier *t,
		int (*add)(void *arg, uint64_t hi, uint64_t lo, uint32_t len),
		void *arg, uint64_t **nodes, size_t *n, char *why,
		size_t whysize)
{
	struct answers a = { 0 };
	int rc;

	*nodes = NULL;
	*n = 0;
	/* A watcher that does not answer in time may be a node that died
	 * (its watch outlives it by the watch's timeout): whether a live
	 * node is missing is told by the locks (tier_share_unanswered). */
	rc = objfs_remote_ask(t->r, TIER_WATCH, TIER_PINS_ASK,
			strlen(TIER_PINS_ASK), t->timeout_s * 1000u, answered,
			&a);
	if (rc == -ETIMEDOUT)
		rc = 0;
	if (rc == 0 && a.bad) {
		snprintf(why, whysize, "deferred: a node could not name the "
			"chunks of the versions open on it (its log says why)");
		rc = -EBUSY;
	}
	for (size_t i = 0; rc == 0 && i < a.n; i++) {
		char name[64];
		unsigned char *p;
		size_t len;

		snprintf(name, sizeof(name), TIER_PINS_FMT, a.v[i]);
		rc = objfs_remote_get_all(t->r, name, (void **)&p, &len);
		if (rc < 0) {
			snprintf(why, whysize, "stopped: cannot read %s: %s",
				name, strerror(-rc));
			break;
		}
		if (len < 24 || get_be32(p) != TIER_PINS_MAGIC ||
		    (len - 24) / 20 != get_be64(p + 8) ||
		    (len - 24) % 20 ||
		    objfs_csum64(p + 24, len - 24) != get_be64(p + 16)) {
			snprintf(why, whysize, "stopped: %s is damaged", name);
			rc = -EIO;
		}
		for (size_t off = 24; rc == 0 && off < len; off += 20)
			rc = add(arg, get_be64(p + off), get_be64(p + off + 8),
					get_be32(p + off + 16));
		free(p);
	}
	if (rc < 0) {
		free(a.v);
		return rc;
	}
	*nodes = a.v;
	*n = a.n;
	return 0;
}

int
tier_share_unanswered(struct objfs_tier *t, uint64_t node, char *why,
		size_t whysize)
{
	char name[64];
	int rc = node_alive(t, node);

	if (rc < 0)
		return rc;
	if (rc) {
		snprintf(why, whysize, "deferred: node %016" PRIx64 " lives "
			"and did not answer (not watching the head yet?)", node);
		return -EBUSY;
	}
	/* Gone: what it left goes (its pins, its lock's object). */
	snprintf(name, sizeof(name), TIER_PINS_FMT, node);
	(void)objfs_remote_remove(t->r, name);
	node_name(name, node);
	(void)objfs_remote_remove(t->r, name);
	return 0;
}

int
tier_share_view(struct objfs_tier *t)
{
	uint64_t applied = 0;
	int rc;

	/* A node past its deadline (it stopped) proves its lock first: the
	 * log may have been compacted past what it read (lapsed()). */
	rc = tier_share_fresh(t);
	if (rc == 0) {
		pthread_mutex_lock(&t->lock);
		rc = t->lost ? -EIO : 0;
		pthread_mutex_unlock(&t->lock);
	}
	if (rc == 0)
		rc = catch_up(t, objfs_mono_ns(), &applied);

	/* The kernel's caches are told by the follower: a request must not
	 * wait for the kernel to drop a name its own caller may hold the
	 * directory of. */
	if (applied)
		kick(t);
	return rc;
}

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
					watched, t, &t->watch) < 0)
				t->watching = 0;
		}
		rc = tier_share_catch_up(t);
		/* What changed, to the kernel's caches, with no lock held. */
		objfs_store_notify_send(t->s);
		answer_pins(t);
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
	tl_publish = ino;
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

int
tier_share_node_alive(struct objfs_tier *t, uint64_t node)
{
	char name[64], client[128], cookie[256];
	int rc;

	node_name(name, node);
	rc = objfs_remote_holder(t->r, name, client, sizeof(client), cookie,
			sizeof(cookie));
	objfs_tier_note(t, rc == -ENOENT ? 0 : rc, "reading a node's lock");
	return rc == 0 ? 1 : rc == -ENOENT ? 0 : rc;
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
	uint64_t ino = lease_ino((const unsigned char *)key, strlen(key));

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
static int
rewrite_leases(struct objfs_tier *t, uint64_t owner, uint64_t only,
		int publish, size_t *count)
{
	for (int tries = 0; tries < 64; tries++) {
		struct lease_scan ls = { owner, only, NULL, 0, 0 };
		struct objfs_meta_txn *tx;
		int rc = objfs_meta_begin(t->m, OBJFS_META_ESSENTIAL, &tx);

		if (rc < 0)
			return rc;
		rc = objfs_meta_super_list(tx, "w", lease_found, &ls);
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
		if (rc == 0 && ls.n == 0) {
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
	uint64_t ino = tl_blocked_ino, node = tl_blocked_node;
	int rc;

	tl_blocked_ino = tl_blocked_node = 0;
	if (!ino)
		return -EBUSY;
	rc = node_alive(t, node);
	if (rc < 0)
		return rc;
	if (rc) {
		atomic_fetch_add(&t->sh_refused, 1);
		return -EBUSY;
	}
	{
		size_t n = 0;

		rc = rewrite_leases(t, node, ino, 1, &n);
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

/* ---- open, start, stop ------------------------------------------------ */

int
tier_share_open(struct objfs_tier *t, char *msg, size_t msgsize)
{
	char name[64], who[256] = "";
	int rc;

	t->node = tier_random64();
	pthread_mutex_init(&t->catch_mu, NULL);
	pthread_mutex_init(&t->lease_mu, NULL);
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
	node_name(name, t->node);
	rc = objfs_remote_hold(t->r, name, t->holder, t->lease_s, NULL, 0);
	if (rc < 0) {
		(void)objfs_remote_release(t->r, TIER_HOLD, t->holder);
		snprintf(msg, msgsize, "%s: cannot take this node's lock: %s",
			t->spec, strerror(-rc));
		return rc;
	}
	t->lease_ns = objfs_mono_ns() + (uint64_t)t->lease_s * 1000000000u;
	/* Until it knows where it is in the log, this node needs all of it
	 * (tier_compact.c). */
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
static int
lapsed(struct objfs_tier *t, const char *name)
{
	int rc;

	struct head h;

	atomic_fetch_add(&t->sh_lapses, 1);
	objfs_log(OBJFS_LOG_WARNING, "remote: %s: this node's lock (%s) had "
		"lapsed: taking it again, and checking its write leases "
		"against the log (a lease another node broke meanwhile is "
		"lost: its writers here get EIO)", t->spec, name);
	rc = objfs_remote_hold(t->r, name, t->holder, t->lease_s, NULL, 0);
	/* Registered again before the head is read: a compaction that did
	 * not see this node removed no record past the head's floor. */
	if (rc == 0)
		rc = tier_compact_register(t, atomic_load(&t->pos));
	if (rc == 0)
		rc = tier_head_read(t, &h, NULL);
	if (rc == 0 && (h.epoch != t->epoch || atomic_load(&t->pos) < h.floor)) {
		pthread_mutex_lock(&t->lock);
		if (!t->lost)
			objfs_log(OBJFS_LOG_ERR, "remote: %s: while this node "
				"was stopped the log was compacted past where "
				"it had read it (record %" PRIu64 ", the floor "
				"is %" PRIu64 "): nothing more is written here "
				"(EIO); unmount, and mount again", t->spec,
				(uint64_t)atomic_load(&t->pos), h.floor);
		t->lost = 1;
		pthread_mutex_unlock(&t->lock);
		return -EIO;
	}
	if (rc == 0)
		rc = tier_share_catch_up(t);
	return rc;
}

int
tier_share_renew(struct objfs_tier *t)
{
	char name[64];
	int rc = objfs_remote_hold_renew(t->r, TIER_HOLD, t->holder, t->hold_s,
			1);

	/* The shared hold only keeps exclusive mounts out (and an
	 * exclusive mount that took it fences the epoch's log: the next
	 * append here finds it): taken again if it lapsed. */
	if (rc == -ENOENT)
		rc = objfs_remote_hold_shared(t->r, TIER_HOLD, t->holder,
				t->hold_s, NULL, 0);
	node_name(name, t->node);
	if (rc == 0) {
		rc = objfs_remote_hold_renew(t->r, name, t->holder, t->lease_s,
				0);
		if (rc == -ENOENT)
			rc = lapsed(t, name);
	}
	/* Where this node is in the log: what compaction may remove. */
	if (rc == 0 && t->attached)
		rc = tier_compact_register(t, atomic_load(&t->pos));
	return rc;
}

/* The margin the local deadline keeps before the lock could lapse. */
static uint64_t
lease_margin_ns(const struct objfs_tier *t)
{
	uint64_t m = (uint64_t)t->lease_s * 1000000000u / 4;

	return m < 2000000000u ? m : 2000000000u;
}

int
tier_share_fresh(struct objfs_tier *t)
{
	uint64_t t0 = objfs_mono_ns(), lease;
	int rc;

	pthread_mutex_lock(&t->lock);
	lease = t->lease_ns;
	pthread_mutex_unlock(&t->lock);
	if (t0 + lease_margin_ns(t) < lease)
		return 0;
	/* Past the local deadline (this node stopped, or could not renew):
	 * nothing is acknowledged before the lock is proved held, or found
	 * lapsed and the leases checked. */
	rc = tier_share_renew(t);
	objfs_tier_note(t, rc, "renewing the hold");
	if (rc == 0) {
		pthread_mutex_lock(&t->lock);
		if (t->lease_ns < t0 + (uint64_t)t->lease_s * 1000000000u)
			t->lease_ns = t0 + (uint64_t)t->lease_s * 1000000000u;
		pthread_mutex_unlock(&t->lock);
	}
	return rc;
}

/* Inodes with bytes the killed daemon wrote (adopted from the arena) to a
 * file whose lease it lost: another node published the file since, and
 * that version stands; the bytes go, said in the log. */
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
			(void)lease_get(tx, ip->ino, &node);
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
	rc = index_pos(t, &pos);
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
	objfs_meta_set_hook(t->m, share_hook, t);
	rc = tier_share_catch_up(t);
	if (rc == -ESTALE) {
		/* The head's epoch was fenced by an exclusive mount that
		 * stopped before its own head: this mount begins a new
		 * epoch from the tree as the log has it up to the fence. */
		objfs_meta_set_hook(t->m, NULL, NULL);
		pthread_mutex_lock(&t->lock);
		t->lost = 0;
		pthread_mutex_unlock(&t->lock);
		objfs_log(OBJFS_LOG_INFO, "remote: %s: the head's epoch is "
			"fenced; this mount begins a new one", t->spec);
		return 0;
	}
	if (rc < 0) {
		snprintf(msg, msgsize, "%s: cannot apply the pool's log: %s",
			t->spec, strerror(-rc));
		return rc;
	}
	/* This data directory's last daemon was killed: the leases it still
	 * holds are this mount's before anything of its files is touched
	 * (orphans removed, the arena adopted). */
	if (prev && prev != t->node) {
		rc = rewrite_leases(t, prev, 0, 0, &n);
		if (rc < 0) {
			snprintf(msg, msgsize, "%s: cannot take over the leases "
				"of the last daemon of this data directory: %s",
				t->spec, strerror(-rc));
			return rc;
		}
		t->took_over = 1;
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
			rc = rewrite_leases(t, t->node, 0, 1, &n);
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
	if (objfs_remote_watch(t->r, TIER_WATCH, t->lease_s, watched, t,
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

/* The store is about to let its inodes go (unmount): the follower stops
 * (it brings inodes in line), and the files this mount was writing are
 * published and their leases given back while the inodes are there for
 * a catch-up that races another mount's commit. */
void
tier_share_quiesce(struct objfs_tier *t)
{
	size_t n = 0;
	int rc;

	if (t->watching) {
		objfs_remote_unwatch(t->r, t->watch);
		t->watching = 0;
	}
	if (t->follow_started) {
		pthread_mutex_lock(&t->lock);
		t->follow_stop = 1;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->lock);
		pthread_join(t->follow_th, NULL);
		t->follow_started = 0;
	}
	tier_compact_stop(t);
	if (!t->attached || t->quiesced)
		return;
	t->quiesced = 1;
	objfs_share_todo(t->s);		/* what failed before: once more */
	rc = rewrite_leases(t, t->node, 0, 1, &n);
	if (rc < 0)
		objfs_log(OBJFS_LOG_ERR, "remote: %s: cannot publish the files "
			"this mount was writing: %s; other nodes may take them "
			"once this node's lock lapses (remote_lease)", t->spec,
			strerror(-rc));
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

	node_name(name, t->node);
	tier_compact_unregister(t);
	(void)objfs_remote_release(t->r, name, t->holder);
	/* Gone cleanly: its lock's object and its pins go too. */
	(void)objfs_remote_remove(t->r, name);
	snprintf(name, sizeof(name), TIER_PINS_FMT, t->node);
	(void)objfs_remote_remove(t->r, name);
	(void)objfs_remote_release(t->r, TIER_HOLD, t->holder);
	pthread_mutex_destroy(&t->catch_mu);
	pthread_mutex_destroy(&t->lease_mu);
	free(t->held);
}

struct lease_count {
	uint64_t node, mine, others;
};

static int
lease_counted(void *arg, const char *key, uint64_t node)
{
	struct lease_count *c = arg;

	if (lease_ino((const unsigned char *)key, strlen(key)))
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
		"remote_log_conflicts: %" PRIu64 "\n"
		"remote_lease_refusals: %" PRIu64 "\n"
		"remote_leases_broken: %" PRIu64 "\n"
		"remote_leases_here: %" PRIu64 "\n"
		"remote_leases_elsewhere: %" PRIu64 "\n"
		"remote_leases_fenced: %" PRIu64 "\n"
		"remote_lock_lapses: %" PRIu64 "\n"
		"remote_compactions: %" PRIu64 "\n"
		"remote_log_records_removed: %" PRIu64 "\n",
		t->node, (uint64_t)atomic_load(&t->pos),
		(uint64_t)atomic_load(&t->sh_appended),
		(uint64_t)atomic_load(&t->sh_applied),
		(uint64_t)atomic_load(&t->sh_conflicts),
		(uint64_t)atomic_load(&t->sh_refused),
		(uint64_t)atomic_load(&t->sh_broken), lc.mine, lc.others,
		(uint64_t)atomic_load(&t->sh_fenced),
		(uint64_t)atomic_load(&t->sh_lapses),
		(uint64_t)atomic_load(&t->compactions),
		(uint64_t)atomic_load(&t->compact_removed));

	return n < 0 ? 0 : (size_t)n >= size ? size - 1 : (size_t)n;
}
