/* SPDX-License-Identifier: MIT */
/*
 * check.c - the simulator's invariants (doc/design.md, "The simulator",
 * S1-S11), each checked against the pool as it is and the nodes' own
 * state, never against what the code under test says of itself:
 *
 * The tree.  The checker keeps its own index of the tree in the pool,
 * built the way a fresh mount builds one (the head's snapshot, then its
 * epoch's log from the snapshot's base, in order, up to the first record
 * that is missing), with the real index code, and brings it up to date
 * after every action.  The invariants read that index, the pool's
 * objects and each live node's tier.
 *
 * After every action (check_step): S3 one inode number names one object
 * (no entry names its own directory, each directory one name, an entry's
 * type is its inode's, and a number once gone from the tree never names
 * anything again); S4 the log has no hole (the head's epoch's records
 * after its base are consecutive); S6 at most one epoch acknowledges (a
 * node that would acknowledge is in the head's epoch, or its epoch's log
 * is fenced after where it is); S8 nothing is shipped twice (no record
 * puts a directory entry the tree holds already, as it is).
 *
 * Everything quiet (check_quiet): S2 every live node's index is the tree
 * (its shared records, after it caught up); S5 a lease or delegation the
 * tree gives a live node is in that node's table, and the other way
 * round.  At the end (check_fresh, check_gc): S1 every path of a fresh
 * mount holds what the model allows (every acknowledged change is there,
 * nothing that failed is); S7 a collection is not deferred for ever by a
 * node that is gone.  The request threads check S9 (each read what the
 * model allows: close-to-open) and S10 (one call, one timeout); the
 * driver S11 (the run ends: no deadlock, no operation that never ends).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meta/meta.h"
#include "meta/meta_keys.h"
#include "src/status.h"
#include "src/store_int.h"
#include "src/cluster/tier_int.h"
#include "tests/sim/sim.h"

const char *const inv_names[INV_N] = {
	"?",
	"S1 every acknowledged change is in the tree a fresh mount reads",
	"S2 every live node's index is the tree at its log position",
	"S3 one inode number names one object",
	"S4 the log has no hole",
	"S5 a lease or delegation the tree gives a live node is in its table",
	"S6 at most one epoch acknowledges",
	"S7 collection is not blocked for ever by a dead node",
	"S8 nothing is shipped twice",
	"S9 a read sees what close-to-open allows",
	"S10 one call, one timeout",
	"S11 the run ends",
};

#define MAX_INO_SEEN	8192

struct checker {
	struct world *w;
	struct objfs_meta *m;		/* the tree, as a fresh mount reads it */
	int have;
	struct head h;
	uint64_t pos;			/* its log applied up to here */
	int fenced;			/* its epoch's log ended in a fence */
	int gen;
	/* Inode numbers the tree named, and their type; gone ones. */
	struct {
		uint64_t ino;
		uint32_t type;
		int gone;
	} seen[MAX_INO_SEEN];
	size_t nseen;
	char dup[600];			/* a record that put an entry twice */
};

void
violation(struct world *w, int inv, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	if (w->violated)
		return;
	w->violated = inv;
	n = (size_t)snprintf(w->why, sizeof(w->why), "%s: ", inv_names[inv]);
	va_start(ap, fmt);
	vsnprintf(w->why + n, sizeof(w->why) - n, fmt, ap);
	va_end(ap);
	if (w->trace)
		fprintf(w->trace, "%.6f VIOLATION %s\n", (double)sim_now() / 1e9,
			w->why);
}

struct checker *
checker_new(struct world *w)
{
	struct checker *c = calloc(1, sizeof(*c));

	if (!c)
		abort();
	c->w = w;
	return c;
}

void
checker_free(struct checker *c)
{
	if (!c)
		return;
	if (c->m)
		(void)objfs_meta_close(c->m);
	free(c);
}

/* ---- the tree from the pool ------------------------------------------------- */

static int
tree_open(struct checker *c)
{
	char dir[320];
	int rc;

	if (c->m)
		(void)objfs_meta_close(c->m);
	c->m = NULL;
	snprintf(dir, sizeof(dir), "%s/tree.%d", c->w->root, ++c->gen);
	if (mkdir(dir, 0700) < 0)
		return -errno;
	rc = objfs_meta_open(dir, OBJFS_META_CREATE, &c->m, NULL);
	return rc;
}

struct applying {
	struct checker *c;
	struct objfs_meta_txn *tx;
	uint64_t seq;
};

/* A native 64-bit value in a journal's bytes (unaligned). */
static uint64_t
u64_at(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* S8: an entry put as the tree holds it already. */
static int
dup_entry(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct applying *a = arg;
	struct objfs_dirent d;
	uint64_t parent, ino, cookie;
	char name[OBJFS_NAME_MAX + 1];

	if (op != OBJFS_JOURNAL_PUT || db != OBJFS_MDB_DIRENT || klen < 9 ||
	    klen - 8 > OBJFS_NAME_MAX || vlen < 16)
		return 0;
	parent = get_be64(k);
	memcpy(name, k + 8, klen - 8);
	name[klen - 8] = '\0';
	ino = u64_at(v);
	cookie = u64_at(v + 8);
	if (objfs_meta_dirent_get(a->tx, parent, name, klen - 8, &d) == 0 &&
	    d.ino == ino && d.cookie == cookie && !a->c->dup[0])
		snprintf(a->c->dup, sizeof(a->c->dup), "log record %" PRIu64
			" puts the entry %s of directory %" PRIu64 " (inode %"
			PRIu64 ", cookie %" PRIu64 ") that the tree holds "
			"already", a->seq, name, parent, d.ino, d.cookie);
	return 0;
}

/* OBJFS_SIM_INO=N: every change a log record makes to inode N, to the
 * trace (what a failing seed's file went through). */
static int
trace_ino(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct applying *a = arg;
	uint64_t want = strtoull(getenv("OBJFS_SIM_INO"), NULL, 0);
	FILE *f = a->c->w->trace;

	if (f && db == OBJFS_MDB_SUPER && klen == 17 && (k[0] == 'w' ||
	    k[0] == 'g') && strtoull((const char *)k + 1, NULL, 16) == want) {
		fprintf(f, "%.6f   tree: record %" PRIu64 ": %s %c of inode %"
			PRIu64 " = %016" PRIx64 "\n", (double)sim_now() / 1e9,
			a->seq, op == OBJFS_JOURNAL_PUT ? "put" : "del", k[0],
			want, op == OBJFS_JOURNAL_PUT && vlen >= 8 ?
			u64_at(v) : 0);
		return 0;
	}
	if (!f || klen < 8 || get_be64(k) != want ||
	    (db != OBJFS_MDB_INODE && db != OBJFS_MDB_CHUNK))
		return 0;
	if (db == OBJFS_MDB_INODE && op == OBJFS_JOURNAL_PUT &&
	    vlen >= OBJFS_ATTR_RECORD) {
		struct objfs_attr at;

		memcpy(&at, v, OBJFS_ATTR_RECORD);
		fprintf(f, "%.6f   tree: record %" PRIu64 ": inode %" PRIu64
			" size %" PRIu64 " nrec %" PRIu64 "\n",
			(double)sim_now() / 1e9, a->seq, want, at.size, at.nrec);
	} else {
		fprintf(f, "%.6f   tree: record %" PRIu64 ": %s %s of inode %"
			PRIu64 "\n", (double)sim_now() / 1e9, a->seq,
			op == OBJFS_JOURNAL_PUT ? "put" : op ==
			OBJFS_JOURNAL_DEL ? "del" : "delrange",
			db == OBJFS_MDB_INODE ? "inode" : "chunk", want);
	}
	return 0;
}

static int
apply_commit(void *arg, uint64_t seq, const void *pl, size_t n)
{
	struct applying *a = arg;
	int rc = objfs_meta_begin(a->c->m, OBJFS_META_ESSENTIAL, &a->tx);

	if (rc < 0)
		return rc;
	a->seq = seq;
	(void)objfs_meta_payload_walk(pl, n, dup_entry, a);
	if (getenv("OBJFS_SIM_INO"))
		(void)objfs_meta_payload_walk(pl, n, trace_ino, a);
	rc = objfs_meta_apply(a->tx, pl, n);
	return objfs_commit_or_abort(a->tx, rc, NULL);
}

/* Bring the checker's tree up to the pool's.  -errno when the pool's
 * objects cannot be read as a tree (that is a violation of its own). */
static int
tree_update(struct checker *c)
{
	struct world *w = c->w;
	const void *p;
	size_t len;
	struct head h;
	int rc;

	if (simpool_peek(w->pool, TIER_WATCH, &p, &len, NULL) < 0)
		return 0;	/* no tree yet */
	rc = tier_head_parse(p, len, &h);
	if (rc < 0)
		return rc;
	if (!c->have || h.epoch != c->h.epoch || h.snap != c->h.snap ||
	    h.base != c->h.base) {
		/* A new snapshot: the tree again from it.  (A compaction's
		 * snapshot holds what the log held up to its base.) */
		if (c->have && h.epoch == c->h.epoch && c->pos >= h.base &&
		    !c->fenced) {
			c->h = h;	/* the same tree, further on */
		} else {
			rc = tree_open(c);
			if (rc < 0)
				return rc;
			c->h = h;
			c->pos = h.base;
			c->fenced = 0;
			c->have = 1;
			for (uint64_t k = 0; k < h.parts; k++) {
				char name[64];
				uint64_t n = 0;

				tier_snap_name(name, &h, k);
				if (simpool_peek(w->pool, name, &p, &len,
						NULL) < 0)
					return -ENOENT;
				rc = tier_snap_check(p, len, k);
				if (rc == 0)
					rc = objfs_meta_import(c->m,
						(const unsigned char *)p +
						TIER_SNAP_HDR,
						len - TIER_SNAP_HDR, &n);
				if (rc < 0)
					return rc;
			}
		}
	}
	while (!c->fenced) {
		struct applying a = { c, NULL, 0 };
		char name[64];
		uint64_t last;

		tier_log_name(name, c->h.epoch, c->pos + 1);
		if (simpool_peek(w->pool, name, &p, &len, NULL) < 0)
			break;
		if (tier_log_is_fence(p, len)) {
			c->fenced = 1;
			break;
		}
		rc = tier_log_walk(p, len, c->pos + 1, &last, apply_commit, &a);
		if (rc < 0)
			return rc;
		c->pos = last;
		if (c->dup[0]) {
			violation(w, INV_ONCE, "%s", c->dup);
			return 0;
		}
	}
	return 0;
}

/* ---- S3: one inode number names one object ----------------------------- */

struct ino_walk {
	struct checker *c;
	struct objfs_meta_txn *tx;
	uint64_t *names;		/* dirents naming each directory */
	uint64_t *dirs;
	size_t ndirs;
	char bad[512];
};

static int
seen_note(struct checker *c, uint64_t ino, uint32_t type, char *bad,
		size_t size)
{
	for (size_t i = 0; i < c->nseen; i++) {
		if (c->seen[i].ino != ino)
			continue;
		if (c->seen[i].gone) {
			snprintf(bad, size, "inode %" PRIu64 " left the tree "
				"and came back", ino);
			return -1;
		}
		if (c->seen[i].type != type) {
			snprintf(bad, size, "inode %" PRIu64 " was %s and is "
				"now %s", ino, S_ISDIR(c->seen[i].type) ?
				"a directory" : "a file", S_ISDIR(type) ?
				"a directory" : "a file");
			return -1;
		}
		return 0;
	}
	if (c->nseen < MAX_INO_SEEN) {
		c->seen[c->nseen].ino = ino;
		c->seen[c->nseen].type = type;
		c->seen[c->nseen++].gone = 0;
	}
	return 0;
}

static int
ino_cb(void *arg, uint64_t ino, const struct objfs_attr *a)
{
	struct ino_walk *iw = arg;

	if (!a) {
		snprintf(iw->bad, sizeof(iw->bad), "inode %" PRIu64 "'s record "
			"is damaged", ino);
		return 1;
	}
	return seen_note(iw->c, ino, a->mode & S_IFMT, iw->bad,
			sizeof(iw->bad)) < 0;
}

static int
dirent_cb(void *arg, uint64_t parent, const struct objfs_dirent *d)
{
	struct ino_walk *iw = arg;
	struct objfs_attr a;

	if (!d) {
		snprintf(iw->bad, sizeof(iw->bad), "an entry of directory %"
			PRIu64 " is damaged", parent);
		return 1;
	}
	if (d->ino == parent) {
		snprintf(iw->bad, sizeof(iw->bad), "entry %s of directory %"
			PRIu64 " names the directory itself", d->name, parent);
		return 1;
	}
	if (objfs_meta_inode_get(iw->tx, d->ino, &a) < 0) {
		snprintf(iw->bad, sizeof(iw->bad), "entry %s of directory %"
			PRIu64 " names inode %" PRIu64 ", which the tree does "
			"not hold", d->name, parent, d->ino);
		return 1;
	}
	if ((a.mode & S_IFMT) != (d->type & S_IFMT)) {
		snprintf(iw->bad, sizeof(iw->bad), "entry %s of directory %"
			PRIu64 " says inode %" PRIu64 " is %o, the inode says %o",
			d->name, parent, d->ino, d->type & S_IFMT,
			a.mode & S_IFMT);
		return 1;
	}
	if (S_ISDIR(a.mode)) {
		for (size_t i = 0; i < iw->ndirs; i++) {
			if (iw->dirs[i] == d->ino) {
				snprintf(iw->bad, sizeof(iw->bad), "directory "
					"%" PRIu64 " has two names (the "
					"second: %s in %" PRIu64 ")", d->ino,
					d->name, parent);
				return 1;
			}
		}
		iw->dirs = realloc(iw->dirs, (iw->ndirs + 1) *
			sizeof(*iw->dirs));
		if (!iw->dirs)
			abort();
		iw->dirs[iw->ndirs++] = d->ino;
	}
	return 0;
}

static void
check_inodes(struct checker *c)
{
	struct ino_walk iw = { c, NULL, NULL, NULL, 0, "" };
	int rc;

	if (!c->m || objfs_meta_begin(c->m, 0, &iw.tx) < 0)
		return;
	for (size_t i = 0; i < c->nseen; i++)
		if (!c->seen[i].gone && objfs_meta_inode_get(iw.tx,
				c->seen[i].ino, &(struct objfs_attr){ 0 }) ==
				-ENOENT)
			c->seen[i].gone = 1;
	rc = objfs_meta_inode_all(iw.tx, ino_cb, &iw);
	if (rc == 0 && !iw.bad[0])
		rc = objfs_meta_dirent_all(iw.tx, dirent_cb, &iw);
	objfs_meta_abort(iw.tx);
	free(iw.dirs);
	if (iw.bad[0])
		violation(c->w, INV_ONE_INODE, "%s", iw.bad);
}

/* ---- S4: the log has no hole ----------------------------------------------- */

struct hole {
	struct checker *c;
	uint64_t epoch, next, first;
	int gap;
	char bad[256];
};

static int
hole_cb(void *arg, const char *name, const void *data, size_t len)
{
	struct hole *h = arg;
	uint64_t epoch, seq;

	if (sscanf(name, "objfs.log.%" SCNx64 ".%" SCNx64, &epoch, &seq) != 2 ||
	    epoch != h->epoch || seq <= h->c->h.base)
		return 0;
	if (!h->first) {
		h->first = seq;
		if (seq != h->c->h.base + 1 && !h->bad[0])
			snprintf(h->bad, sizeof(h->bad), "epoch %" PRIu64 "'s "
				"first record after its snapshot (of %" PRIu64
				") is %" PRIu64, epoch, h->c->h.base, seq);
	} else if (seq != h->next && !h->bad[0]) {
		snprintf(h->bad, sizeof(h->bad), "epoch %" PRIu64 "'s log "
			"has records up to %" PRIu64 ", then %" PRIu64 ": "
			"readers stop at the hole, and never see it", epoch,
			h->next - 1, seq);
	}
	/* A record holds commits first..last (an exclusive mount's
	 * shipper puts many in one): the next is last + 1. */
	if (len >= TIER_LOG_HDR && !tier_log_is_fence(data, len) &&
	    get_be64((const unsigned char *)data + 16) >= seq)
		seq = get_be64((const unsigned char *)data + 16);
	h->next = seq + 1;
	return 0;
}

static void
check_holes(struct checker *c)
{
	struct hole h = { c, c->h.epoch, 0, 0, 0, "" };
	char prefix[64];

	if (!c->have)
		return;
	snprintf(prefix, sizeof(prefix), "objfs.log.%016" PRIx64 ".",
		c->h.epoch);
	(void)simpool_each(c->w->pool, prefix, hole_cb, &h);
	if (h.bad[0])
		violation(c->w, INV_NO_HOLE, "%s", h.bad);
}

/* ---- S6: at most one epoch acknowledges ----------------------------------- */

static uint64_t
node_mono(int inc)
{
	int64_t mono, real;

	sim_get_clock(inc, &mono, &real);
	return (uint64_t)((int64_t)(SIM_MONO_BASE + sim_now()) + mono);
}

/* Would node @n acknowledge a commit now, by its own reckoning? */
static int
would_ack(struct node *n, struct objfs_tier *t)
{
	uint64_t margin = n->exclusive ? 2ull * SIM_NS :
		tier_node_margin_ns(t);

	return !t->lost && !t->diverged && !t->stop &&
		node_mono(n->inc) + margin < t->lease_ns;
}

struct fence_scan {
	uint64_t pos;
	int found;
};

static int
fence_cb(void *arg, const char *name, const void *data, size_t len)
{
	struct fence_scan *f = arg;
	uint64_t e, seq;

	if (sscanf(name, "objfs.log.%" SCNx64 ".%" SCNx64, &e, &seq) == 2 &&
	    seq > f->pos && tier_log_is_fence(data, len))
		f->found = 1;
	return 0;
}

/* Is epoch @epoch's log fenced after @pos (a put there would fail)? */
static int
fenced_after(struct world *w, uint64_t epoch, uint64_t pos)
{
	struct fence_scan f = { pos, 0 };
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "objfs.log.%016" PRIx64 ".", epoch);
	(void)simpool_each(w->pool, prefix, fence_cb, &f);
	return f.found;
}

static void
check_holders(struct checker *c)
{
	struct world *w = c->w;

	if (!c->have)
		return;
	for (int i = 0; i <= SIM_MAX_NODES; i++) {
		struct node *n = &w->nodes[i];
		struct objfs_tier *t;

		if (!n->up || n->state != 1 || !n->s || sim_node_dead(n->inc))
			continue;
		t = n->s->tier;
		if (!t || !would_ack(n, t) || t->epoch == c->h.epoch)
			continue;
		if (t->shared && fenced_after(w, t->epoch, atomic_load(&t->pos)))
			continue;
		if (!t->shared && t->epoch < c->h.epoch &&
		    fenced_after(w, t->epoch, t->shipped))
			continue;
		violation(w, INV_ONE_HOLDER, "node%d (%s, epoch %" PRIu64
			", its deadline %.3f s ahead) would acknowledge, but "
			"the head is at epoch %" PRIu64 " and nothing fences "
			"the log of its epoch", i, t->shared ? "shared" :
			"exclusive", t->epoch, (double)(t->lease_ns -
			node_mono(n->inc)) / 1e9, c->h.epoch);
		return;
	}
}

void
check_step(struct world *w)
{
	struct checker *c = w->chk;
	int rc;

	if (w->violated)
		return;
	sim_atomic_begin();
	rc = tree_update(c);
	if (rc < 0 && !w->violated)
		violation(w, INV_ONE_INODE, "the pool's tree cannot be read: %s",
			strerror(-rc));
	if (!w->violated)
		check_holes(c);
	if (!w->violated)
		check_inodes(c);
	if (!w->violated)
		check_holders(c);
	sim_atomic_end();
}

/* ---- S2, S5: everything quiet ------------------------------------------------ */

struct rec {
	int db;
	unsigned char *k, *v;
	size_t klen, vlen;
};

struct dump {
	struct rec *r;
	size_t n, cap;
};

static int
tree_db(int db, const unsigned char *k, size_t klen)
{
	static const char *const local[] = { "id", "clean", "journal_seq",
		SUPER_TREE, SUPER_EPOCH, SUPER_OWNER, OBJFS_SUPER_REMOTE_POS,
		OBJFS_SUPER_IDS_INO, OBJFS_SUPER_IDS_INO_END, OBJFS_SUPER_IDS_CK,
		OBJFS_SUPER_IDS_CK_END, OBJFS_SUPER_SHIPPED, "schema" };

	switch (db) {
	case OBJFS_MDB_SUPER:
		for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++)
			if (klen == strlen(local[i]) && !memcmp(k, local[i],
					klen))
				return 0;
		return !(klen > 4 && !memcmp(k, "own.", 4));
	case OBJFS_MDB_INODE:
	case OBJFS_MDB_DIRENT:
	case OBJFS_MDB_DIRCOOKIE:
	case OBJFS_MDB_XATTR:
	case OBJFS_MDB_SYMLINK:
	case OBJFS_MDB_CHUNK:
		return 1;
	default:
		return 0;
	}
}

static int
dump_entry(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct dump *d = arg;
	struct rec *r;

	if (op != OBJFS_JOURNAL_PUT || !tree_db(db, k, klen))
		return 0;
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 256;
		d->r = realloc(d->r, d->cap * sizeof(*d->r));
		if (!d->r)
			abort();
	}
	r = &d->r[d->n++];
	r->db = db;
	r->k = malloc(klen);
	r->v = malloc(vlen ? vlen : 1);
	if (!r->k || !r->v)
		abort();
	memcpy(r->k, k, r->klen = klen);
	memcpy(r->v, v, r->vlen = vlen);
	return 0;
}

static int
dump_part(void *arg, const void *p, size_t len)
{
	return objfs_meta_payload_walk(p, len, dump_entry, arg);
}

static int
rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int c;

	if (x->db != y->db)
		return x->db - y->db;
	c = memcmp(x->k, y->k, n);
	return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

static void
dump_free(struct dump *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->r[i].k);
		free(d->r[i].v);
	}
	free(d->r);
}

static const char *const dbname[] = { "super", "inode", "dirent",
	"dircookie", "xattr", "symlink", "chunk" };

static void
rec_text(const struct rec *r, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "%s:", r->db < 7 ?
		dbname[r->db] : "?");

	for (size_t i = 0; i < r->klen && n + 3 < size; i++)
		n += (size_t)snprintf(buf + n, size - n,
			r->k[i] >= 32 && r->k[i] < 127 ? "%c" : "\\%02x",
			r->k[i]);
}

static void
val_text(const struct rec *r, char *buf, size_t size)
{
	if (r->db == OBJFS_MDB_INODE && r->vlen >= OBJFS_ATTR_RECORD) {
		struct objfs_attr a;

		memcpy(&a, r->v, OBJFS_ATTR_RECORD);
		snprintf(buf, size, "mode %o nlink %u size %" PRIu64 " nrec %"
			PRIu64 " mtime %" PRId64 ".%09u ctime %" PRId64 ".%09u",
			a.mode, a.nlink, a.size, a.nrec, a.mtime_sec,
			a.mtime_nsec, a.ctime_sec, a.ctime_nsec);
		return;
	}
	if (r->db == OBJFS_MDB_DIRENT && r->vlen >= 16) {
		snprintf(buf, size, "inode %" PRIu64 " cookie %" PRIu64,
			u64_at(r->v), u64_at(r->v + 8));
		return;
	}
	if (r->db == OBJFS_MDB_SUPER && r->vlen >= 8) {
		snprintf(buf, size, "%" PRIu64, u64_at(r->v));
		return;
	}
	snprintf(buf, size, "%zu bytes", r->vlen);
}

/* Index @m against the checker's tree: 0 alike, else what differs. */
static int
compare(struct checker *c, struct objfs_meta *m, char *why, size_t size)
{
	struct dump a = { 0 }, b = { 0 };
	uint64_t seq;
	size_t i = 0, j = 0;
	int rc;

	rc = objfs_meta_dump(m, 1u << 20, dump_part, &a, &seq);
	if (rc == 0)
		rc = objfs_meta_dump(c->m, 1u << 20, dump_part, &b, &seq);
	if (rc < 0) {
		snprintf(why, size, "cannot read an index: %s", strerror(-rc));
		goto out;
	}
	qsort(a.r, a.n, sizeof(*a.r), rec_cmp);
	qsort(b.r, b.n, sizeof(*b.r), rec_cmp);
	while (i < a.n || j < b.n) {
		char t[200];
		int k = i == a.n ? 1 : j == b.n ? -1 : rec_cmp(&a.r[i], &b.r[j]);

		if (k == 0 && (a.r[i].vlen != b.r[j].vlen ||
		    memcmp(a.r[i].v, b.r[j].v, a.r[i].vlen))) {
			char x[160] = "", y[160] = "";

			rec_text(&a.r[i], t, sizeof(t));
			val_text(&a.r[i], x, sizeof(x));
			val_text(&b.r[j], y, sizeof(y));
			snprintf(why, size, "record %s differs: the node's %s, "
				"the tree's %s", t, x, y);
			rc = 1;
			break;
		}
		if (k < 0) {
			rec_text(&a.r[i], t, sizeof(t));
			snprintf(why, size, "the node has record %s, the tree "
				"does not", t);
			rc = 1;
			break;
		}
		if (k > 0) {
			rec_text(&b.r[j], t, sizeof(t));
			snprintf(why, size, "the tree has record %s, the node "
				"does not", t);
			rc = 1;
			break;
		}
		i++;
		j++;
	}
out:
	dump_free(&a);
	dump_free(&b);
	return rc;
}

struct lease_scan {
	struct objfs_tier *t;
	uint64_t node;
	char bad[256];
};

static int
tree_lease(void *arg, const char *key, uint64_t val)
{
	struct lease_scan *ls = arg;
	struct objfs_tier *t = ls->t;
	char which = 0;
	uint64_t ino = tier_key_ino((const unsigned char *)key, strlen(key),
			"wD", &which);

	if (!ino || val != ls->node || ls->bad[0])
		return 0;
	if (which == 'w') {
		int found = 0;

		pthread_mutex_lock(&t->lease_mu);
		for (size_t i = 0; i < t->held_cap; i++)
			if (t->held[i].ino == ino && !t->held[i].fenced)
				found = 1;
		pthread_mutex_unlock(&t->lease_mu);
		if (!found)
			snprintf(ls->bad, sizeof(ls->bad), "the tree leases "
				"inode %" PRIu64 " to node %016" PRIx64 ", "
				"whose table does not hold it", ino, ls->node);
	} else {
		struct tier_deleg *d;

		pthread_mutex_lock(&t->deleg_mu);
		d = tier_dl_find(t, ino);
		if (!d || d->node != ls->node || d->lost)
			snprintf(ls->bad, sizeof(ls->bad), "the tree gives "
				"directory %" PRIu64 " to node %016" PRIx64
				", whose table does not hold it", ino,
				ls->node);
		pthread_mutex_unlock(&t->deleg_mu);
	}
	return 0;
}

void
check_quiet(struct world *w)
{
	struct checker *c = w->chk;
	char why[512];

	if (w->violated)
		return;
	sim_atomic_begin();
	if (tree_update(c) < 0 || w->violated) {
		sim_atomic_end();
		return;
	}
	for (int i = 0; i < w->cfg.nodes && !w->violated; i++) {
		struct node *n = &w->nodes[i];
		struct objfs_tier *t;
		struct objfs_meta_txn *tx;
		struct lease_scan ls;

		if (!n->up || !n->s)
			continue;
		t = n->s->tier;
		/* An exclusive mount (S3) writes the tree: its index is the
		 * tree, whatever the numbers of its records. */
		if (t->epoch != c->h.epoch || (t->shared &&
		    atomic_load(&t->pos) != c->pos)) {
			violation(w, INV_AGREE, "node%d is at record %" PRIu64
				" of epoch %" PRIu64 " after catching up; the "
				"tree ends at %" PRIu64 " of epoch %" PRIu64,
				i, (uint64_t)atomic_load(&t->pos), t->epoch,
				c->pos, c->h.epoch);
			break;
		}
		if (compare(c, n->s->meta, why, sizeof(why))) {
			violation(w, INV_AGREE, "node%d's index is not the "
				"tree: %s", i, why);
			break;
		}
		ls = (struct lease_scan){ t, t->node, "" };
		if (objfs_meta_begin(c->m, 0, &tx) == 0) {
			(void)objfs_meta_super_list(tx, "w", tree_lease, &ls);
			(void)objfs_meta_super_list(tx, "D", tree_lease, &ls);
			objfs_meta_abort(tx);
		}
		if (!ls.bad[0]) {
			/* And the other way round: what it holds, the tree
			 * gives it. */
			pthread_mutex_lock(&t->lease_mu);
			for (size_t k = 0; k < t->held_cap && !ls.bad[0]; k++) {
				uint64_t node = 0;

				if (!t->held[k].ino || t->held[k].fenced)
					continue;
				if (objfs_meta_begin(c->m, 0, &tx) == 0) {
					(void)tier_lease_node(tx,
						t->held[k].ino, &node);
					objfs_meta_abort(tx);
				}
				if (node != t->node)
					snprintf(ls.bad, sizeof(ls.bad),
						"node holds the lease of inode %"
						PRIu64 " in its table; the "
						"tree gives it to %016" PRIx64,
						t->held[k].ino, node);
			}
			pthread_mutex_unlock(&t->lease_mu);
		}
		if (ls.bad[0])
			violation(w, INV_LEASES, "node%d: %s", i, ls.bad);
	}
	sim_atomic_end();
}

/* ---- S1: the tree a fresh mount reads ----------------------------------------- */

static uint64_t
fresh_value(struct world *w, struct objfs_store *s, int p)
{
	char path[SIM_PATH_LEN], *save = NULL, *part;
	uint64_t ino = 1, v = V_UNREADABLE;
	struct objfs_attr a = { 0 };
	enum objfs_cache cache;
	unsigned char *buf;
	size_t got = 0, n;
	int rc = 0;

	snprintf(path, sizeof(path), "%s", w->paths[p].s);
	for (part = strtok_r(path, "/", &save); part;
	     part = strtok_r(NULL, "/", &save)) {
		rc = objfs_store_lookup(s, ino, part, &a);
		if (rc == -ENOENT || rc == -ENOTDIR)
			return V_ABSENT;
		if (rc < 0)
			return V_CORRUPT;
		objfs_store_forget(s, a.ino, 1);
		ino = a.ino;
	}
	if (S_ISDIR(a.mode))
		return V_DIR;
	buf = malloc((160u << 10) + 1);
	if (!buf)
		abort();
	rc = objfs_store_open_file(s, ino, O_RDONLY | SIM_O_LARGEFILE, 0, &cache);
	while (rc == 0 && got <= (160u << 10)) {
		rc = objfs_store_read(s, ino, got, buf + got,
				(160u << 10) + 1 - got, &n);
		if (rc < 0 || n == 0)
			break;
		got += n;
	}
	if (rc == 0) {
		(void)objfs_store_release(s, ino, O_RDONLY | SIM_O_LARGEFILE, 0);
		v = V_CORRUPT;
		if (got == 0) {
			v = V_EMPTY;
		} else {
			uint64_t id;
			char head[24];

			memcpy(head, buf, got < 21 ? got : 21);
			head[got < 21 ? got : 21] = '\0';
			if (sscanf(head, "id:%16" SCNx64, &id) == 1) {
				unsigned char *want = malloc(got);

				if (!want)
					abort();
				world_content(id, (uint32_t)got, want);
				if (!memcmp(want, buf, got))
					v = V_ID(id);
				free(want);
			}
		}
		if (v == V_CORRUPT && w->trace) {
			size_t z = 0;

			while (z < got && !buf[z])
				z++;
			fprintf(w->trace, "%.6f fresh %s (inode %" PRIu64 "): %zu bytes, %zu zero "
				"bytes first, begins \"%.20s\"\n",
				(double)sim_now() / 1e9, w->paths[p].s, ino, got, z,
				z < got ? (const char *)buf + z : "");
		}
	}
	free(buf);
	return v;
}

void
check_fresh(struct world *w, struct objfs_store *fresh)
{
	char why[512];

	if (w->violated)
		return;
	for (int p = 0; p < w->npaths && !w->violated; p++) {
		uint64_t v = fresh_value(w, fresh, p);

		if (!model_check(w, p, v, sim_now(), sim_now(), why,
				sizeof(why)))
			violation(w, INV_ACKED, "a fresh mount: %s", why);
	}
	if (w->violated)
		return;
	sim_atomic_begin();
	if (tree_update(w->chk) == 0 && !w->violated &&
	    compare(w->chk, fresh->meta, why, sizeof(why)))
		violation(w, INV_AGREE, "a fresh mount's index is not the "
			"tree: %s", why);
	sim_atomic_end();
}

void
check_gc(struct world *w, struct node *n)
{
	char num[4] = "0";
	int rc;

	if (w->violated || !n->up)
		return;
	/* Every lock of a node that is gone has lapsed by now. */
	sim_sleep(((uint64_t)w->cfg.lease_s + w->cfg.hold_s + 5) * SIM_NS);
	rc = objfs_store_setxattr(n->s, OBJFS_STATUS_INO, OBJFS_XATTR_GC, num,
			1, 0);
	if (rc < 0)
		violation(w, INV_GC, "a collection on a fresh node, every "
			"other node gone for %u s, answered %s",
			w->cfg.lease_s + w->cfg.hold_s + 5, strerror(-rc));
}
