/* SPDX-License-Identifier: MIT */
/*
 * salvage.c - rebuild an index from a damaged one (objfs_meta_rebuild,
 * for objfsctl recover).
 *
 * LMDB's own code trusts its pages, and a damaged page can make it read
 * anywhere.  This reads the data file itself, with every offset checked
 * against the page it is in, and trusts no record it finds unless the
 * record's checksum holds: every objfs value ends with an xxh3 of its DB,
 * key and value (meta_keys.h), so a record found in any page says which
 * DB it belongs to.
 *
 *  1. The newer valid meta page gives the page size and the roots of
 *     LMDB's free list and main DB; the main DB gives the roots of
 *     objfs's DBs.
 *  2. The trees are walked from those roots; their records are "live".
 *     Pages on the free list are remembered: they hold stale versions.
 *  3. Every other leaf page (a subtree cut off by damage) is read too,
 *     and its records are used for keys the live trees do not have; then
 *     the pages on the free list, whose records are stale copies, for
 *     keys found nowhere else (an older name beats no name).
 *  4. The journal's records after the last checkpoint are applied on top.
 *  5. The result goes into a new index, in one transaction.
 *
 * Test with tests/integration/check_recover.sh.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/csum.h"
#include "src/base/log.h"
#include "meta/meta.h"
#include "meta/meta_int.h"

/* LMDB 0.9's file format (mdb.c), 64-bit; see also meta_int.h. */
#define PAGEHDR		LMDB_PAGEHDR
#define P_BRANCH	0x01
#define P_LEAF		0x02
#define P_OVERFLOW	0x04
#define P_META		LMDB_P_META
#define P_LEAF2		0x20
#define P_SUBP		0x40
#define F_BIGDATA	0x01
#define F_SUBDATA	0x02
#define F_DUPDATA	0x04
#define MDB_MAGIC_NUM	LMDB_MAGIC
#define DB_SIZE		48
#define META_DBS	LMDB_META_DBS
#define META_TXNID	LMDB_META_TXNID
#define NO_PAGE		UINT64_MAX

struct rec {
	unsigned char *k, *v;
	uint32_t klen, vlen;
	int db;
	int prio;		/* LIVE, STRAY or FREED: the higher wins */
};

enum { FREED = 1, STRAY, LIVE };

struct salvage {
	const unsigned char *p;		/* the data file, mapped */
	uint64_t npages;
	uint32_t psize;
	unsigned char *seen;		/* pages of the live trees */
	unsigned char *freed;		/* pages on the free list */
	struct rec **tab;		/* (db, key) -> record */
	size_t cap, n;
	struct objfs_meta_salvage_report *r;
	int nomem;
	int cut;			/* the live trees are not whole */
};

static uint64_t
le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static const unsigned char *
page(struct salvage *sv, uint64_t pg)
{
	if (pg >= sv->npages)
		return NULL;
	return sv->p + pg * sv->psize;
}

/* ---- the table of records found -------------------------------------- */

static size_t
slot_of(struct salvage *sv, int db, const unsigned char *k, size_t klen)
{
	size_t i = (size_t)objfs_csum64_seed(k, klen, (uint64_t)db) &
		(sv->cap - 1);

	while (sv->tab[i] && !(sv->tab[i]->db == db &&
	       sv->tab[i]->klen == klen && !memcmp(sv->tab[i]->k, k, klen)))
		i = (i + 1) & (sv->cap - 1);
	return i;
}

static int
grow(struct salvage *sv)
{
	struct rec **old = sv->tab;
	size_t oc = sv->cap;

	sv->cap = oc ? 2 * oc : 4096;
	sv->tab = calloc(sv->cap, sizeof(*sv->tab));
	if (!sv->tab) {
		sv->tab = old;
		sv->cap = oc;
		return -ENOMEM;
	}
	for (size_t i = 0; i < oc; i++)
		if (old[i])
			sv->tab[slot_of(sv, old[i]->db, old[i]->k,
					old[i]->klen)] = old[i];
	free(old);
	return 0;
}

static void
rec_free(struct rec *e)
{
	if (e) {
		free(e->k);
		free(e->v);
		free(e);
	}
}

/* Keep @v as the value of (@db, @k), unless a record found at a higher
 * priority has it already. */
static void
put(struct salvage *sv, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen, int prio)
{
	struct rec *e;
	size_t i;

	if ((sv->n + 1) * 2 > sv->cap && grow(sv) < 0) {
		sv->nomem = 1;
		return;
	}
	i = slot_of(sv, db, k, klen);
	e = sv->tab[i];
	if (e && e->prio >= prio && !(prio == LIVE && e->prio == LIVE))
		return;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e || !(e->k = malloc(klen ? klen : 1))) {
			free(e);
			sv->nomem = 1;
			return;
		}
		memcpy(e->k, k, klen);
		e->klen = (uint32_t)klen;
		e->db = db;
		sv->tab[i] = e;
		sv->n++;
		if (prio == LIVE)
			sv->r->live++;
		else if (prio == STRAY)
			sv->r->stray++;
		else
			sv->r->freed++;
	}
	free(e->v);
	e->v = malloc(vlen ? vlen : 1);
	if (!e->v) {
		sv->nomem = 1;
		return;
	}
	memcpy(e->v, v, vlen);
	e->vlen = (uint32_t)vlen;
	e->prio = prio;
}

static int
keycmp(const unsigned char *a, size_t alen, const unsigned char *b,
		size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

/* Remove (@db, @k). */
static void
del_one(struct salvage *sv, int db, const unsigned char *k, size_t klen)
{
	size_t i = slot_of(sv, db, k, klen);

	if (!sv->tab[i])
		return;
	rec_free(sv->tab[i]);
	sv->tab[i] = NULL;
	sv->n--;
	/* Re-seat the entries after it (open addressing). */
	for (size_t j = (i + 1) & (sv->cap - 1); sv->tab[j];
	     j = (j + 1) & (sv->cap - 1)) {
		struct rec *m = sv->tab[j];

		sv->tab[j] = NULL;
		sv->tab[slot_of(sv, m->db, m->k, m->klen)] = m;
	}
}

/* Remove (@db, @k), or with @range every key of @db that shares its first
 * 8 bytes and is >= it (a journal's delete range). */
static void
del(struct salvage *sv, int db, const unsigned char *k, size_t klen,
		int range)
{
	struct rec **hit;
	size_t n = 0;

	if (!range || klen < 8) {
		del_one(sv, db, k, klen);
		return;
	}
	hit = malloc((sv->n + 1) * sizeof(*hit));
	if (!hit) {
		sv->nomem = 1;
		return;
	}
	for (size_t i = 0; i < sv->cap; i++) {
		struct rec *e = sv->tab[i];

		if (e && e->db == db && e->klen >= 8 && !memcmp(e->k, k, 8) &&
		    keycmp(e->k, e->klen, k, klen) >= 0)
			hit[n++] = e;
	}
	/* Unhook them all first: del_one frees what it finds. */
	for (size_t i = 0; i < n; i++) {
		struct rec copy = *hit[i];

		copy.k = malloc(copy.klen ? copy.klen : 1);
		if (!copy.k) {
			sv->nomem = 1;
			break;
		}
		memcpy(copy.k, hit[i]->k, copy.klen);
		hit[i] = calloc(1, sizeof(**hit));
		if (!hit[i]) {
			free(copy.k);
			sv->nomem = 1;
			break;
		}
		*hit[i] = copy;
		hit[i]->v = NULL;
	}
	for (size_t i = 0; i < n && !sv->nomem; i++)
		del_one(sv, db, hit[i]->k, hit[i]->klen);
	for (size_t i = 0; i < n; i++)
		rec_free(hit[i]);
	free(hit);
}

/* ---- reading pages ------------------------------------------------------ */

/* The @i-th node of page @p, bounds checked; NULL if it cannot be. */
static const unsigned char *
node(struct salvage *sv, const unsigned char *p, unsigned i)
{
	uint64_t lower = le(p + 12, 2), off;

	if (lower < PAGEHDR || lower > sv->psize || PAGEHDR + 2 * i + 2 > lower)
		return NULL;
	off = le(p + PAGEHDR + 2 * i, 2);
	if (off < lower || off + 8 > sv->psize)
		return NULL;
	return p + off;
}

static unsigned
nodes(struct salvage *sv, const unsigned char *p)
{
	uint64_t lower = le(p + 12, 2);

	return lower >= PAGEHDR && lower <= sv->psize ?
		(unsigned)(lower - PAGEHDR) / 2 : 0;
}

/* A leaf node's key and value; 0 when they do not fit where they are. */
static int
leaf_kv(struct salvage *sv, const unsigned char *p, const unsigned char *n,
		const unsigned char **k, size_t *klen,
		const unsigned char **v, size_t *vlen, int mark)
{
	uint64_t room = sv->psize - (uint64_t)(n - p) - 8;
	uint64_t ks = le(n + 6, 2), ds = le(n, 2) | le(n + 2, 2) << 16;
	unsigned fl = (unsigned)le(n + 4, 2);

	if (ks > room || (fl & F_DUPDATA))
		return 0;
	*k = n + 8;
	*klen = ks;
	if (fl & F_BIGDATA) {
		const unsigned char *op;
		uint64_t pg, pages;

		if (ks + 8 > room)
			return 0;
		pg = le(n + 8 + ks, 8);
		op = page(sv, pg);
		if (!op || le(op, 8) != pg || !(le(op + 10, 2) & P_OVERFLOW))
			return 0;
		pages = le(op + 12, 4);
		if (pages == 0 || pg + pages > sv->npages ||
		    ds > pages * sv->psize - PAGEHDR)
			return 0;
		if (mark)
			memset(sv->seen + pg, 1, pages);
		*v = op + PAGEHDR;
	} else {
		if (ks + ds > room)
			return 0;
		*v = n + 8 + ks;
	}
	*vlen = ds;
	return 1;
}

struct roots {
	uint64_t root[OBJFS_META_NDBS];
	int found[OBJFS_META_NDBS];	/* named in the main DB */
};

/* Walk a tree from @pg: @db >= 0 one of objfs's, -1 the main DB (into
 * @rt), -2 the free list. */
static void
walk(struct salvage *sv, uint64_t pg, int depth, int db, struct roots *rt)
{
	const unsigned char *p = page(sv, pg);
	unsigned fl;

	if (pg == NO_PAGE || (p && sv->seen[pg]))
		return;		/* an empty tree, or a page seen */
	if (!p || depth > 32 || le(p, 8) != pg) {
		sv->cut = 1;
		return;
	}
	sv->seen[pg] = 1;
	fl = (unsigned)le(p + 10, 2);
	for (unsigned i = 0; i < nodes(sv, p); i++) {
		const unsigned char *n = node(sv, p, i), *k, *v;
		size_t klen, vlen;

		if (!n) {
			sv->cut = 1;
			break;
		}
		if (fl & P_BRANCH) {
			uint64_t child = le(n, 2) | le(n + 2, 2) << 16 |
				le(n + 4, 2) << 32;

			walk(sv, child, depth + 1, db, rt);
			continue;
		}
		if (!(fl & P_LEAF) || (fl & (P_LEAF2 | P_SUBP)) ||
		    !leaf_kv(sv, p, n, &k, &klen, &v, &vlen, 1)) {
			sv->cut = 1;
			continue;
		}
		if (db == -1) {
			for (int d = 0; d < OBJFS_META_NDBS; d++)
				if (klen == strlen(objfs_meta_db_names[d]) &&
				    !memcmp(k, objfs_meta_db_names[d], klen) &&
				    vlen == DB_SIZE) {
					rt->root[d] = le(v + 40, 8);
					rt->found[d] = 1;
				}
		} else if (db == -2) {
			uint64_t cnt = vlen >= 8 ? le(v, 8) : 0;

			for (uint64_t j = 0; j < cnt && 8 + 8 * j + 8 <= vlen; j++) {
				uint64_t f = le(v + 8 + 8 * j, 8);

				if (f < sv->npages)
					sv->freed[f] = 1;
			}
		} else if (objfs_meta_rec_ok(db, k, klen, v, vlen)) {
			put(sv, db, k, klen, v, vlen, LIVE);
		} else {
			sv->r->damaged++;
			sv->cut = 1;
		}
	}
}

/* Leaf pages no live tree reached: those not freed (@freed 0), or the
 * freed ones; each record found tries every DB. */
static void
scan_strays(struct salvage *sv, int freed)
{
	for (uint64_t pg = 2; pg < sv->npages; pg++) {
		const unsigned char *p = page(sv, pg);
		unsigned fl = (unsigned)le(p + 10, 2);

		if (sv->seen[pg] || sv->freed[pg] != freed || le(p, 8) != pg ||
		    !(fl & P_LEAF) || (fl & (P_LEAF2 | P_SUBP | P_BRANCH)))
			continue;
		for (unsigned i = 0; i < nodes(sv, p); i++) {
			const unsigned char *n = node(sv, p, i), *k, *v;
			size_t klen, vlen;

			if (!n)
				break;
			if (!leaf_kv(sv, p, n, &k, &klen, &v, &vlen, 0))
				continue;
			for (int db = 0; db < OBJFS_META_NDBS; db++)
				if (objfs_meta_rec_ok(db, k, klen, v, vlen)) {
					put(sv, db, k, klen, v, vlen, freed ?
						FREED : STRAY);
					break;
				}
		}
	}
}

/* The newer meta page that looks whole, or NULL. */
static const unsigned char *
best_meta(const unsigned char *file, uint64_t size, uint32_t *psize)
{
	const unsigned char *best = NULL;
	uint64_t best_txn = 0;

	for (int i = 0; i < 2; i++) {
		/* Page 0 says the page size; page 1 is at that offset. */
		uint64_t ps = i == 0 ? 0 : *psize ? *psize : 4096;
		const unsigned char *m = file + ps;
		uint64_t txn, pz;

		if (ps + META_TXNID + 8 > size ||
		    le(m + PAGEHDR, 4) != MDB_MAGIC_NUM ||
		    le(m + PAGEHDR + 4, 4) != 1 || !(le(m + 10, 2) & P_META))
			continue;
		pz = le(m + META_DBS, 4);
		if (pz < 512 || pz > 65536 || (pz & (pz - 1)))
			continue;
		if (i == 0)
			*psize = (uint32_t)pz;
		txn = le(m + META_TXNID, 8);
		if (!best || txn > best_txn) {
			best = m;
			best_txn = txn;
			*psize = (uint32_t)pz;
		}
	}
	return best;
}

static int
journal_entry(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct salvage *sv = arg;

	if (op == OBJFS_JOURNAL_PUT)
		put(sv, db, k, klen, v, vlen, LIVE);
	else
		del(sv, db, k, klen, op == OBJFS_JOURNAL_DELRANGE);
	return 0;
}

static void
overlay_journal(struct salvage *sv, const char *from)
{
	const char *jk = OBJFS_SUPER_JOURNAL;
	unsigned char *buf = NULL;
	uint64_t ckpt = 0, off = 0;
	char path[4200];
	struct stat st;
	size_t cap = 0, len, i;
	int fd;

	i = slot_of(sv, DB_SUPER, (const unsigned char *)jk, strlen(jk));
	if (sv->tab[i] && sv->tab[i]->vlen == 8 + OBJFS_META_TRAILER)
		memcpy(&ckpt, sv->tab[i]->v, 8);
	snprintf(path, sizeof(path), "%s/journal", from);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0) {
		while ((len = objfs_meta_journal_read(fd, (uint64_t)st.st_size,
				off, ckpt + sv->r->journal + 1, &buf,
				&cap)) > 0) {
			if (objfs_meta_journal_entries(buf, len, journal_entry,
					sv))
				break;
			off += OBJFS_META_JHDR + len;
			sv->r->journal++;
		}
	}
	free(buf);
	close(fd);
}

/* Put what was found into a new index in @to. */
static int
write_index(struct salvage *sv, const char *to)
{
	MDB_dbi dbi[OBJFS_META_NDBS];
	MDB_env *env;
	MDB_txn *txn;
	int rc = mdb_env_create(&env);

	if (rc)
		return -EIO;
	rc = mdb_env_set_maxdbs(env, OBJFS_META_NDBS);
	if (rc == 0)
		rc = mdb_env_set_mapsize(env, 16ull << 30);
	if (rc == 0)
		rc = mdb_env_open(env, to, MDB_NOLOCK, 0600);
	if (rc == 0)
		rc = mdb_txn_begin(env, NULL, 0, &txn);
	for (int d = 0; rc == 0 && d < OBJFS_META_NDBS; d++)
		rc = mdb_dbi_open(txn, objfs_meta_db_names[d], MDB_CREATE,
				&dbi[d]);
	for (size_t i = 0; rc == 0 && i < sv->cap; i++) {
		struct rec *e = sv->tab[i];
		MDB_val k, v;

		if (!e)
			continue;
		k.mv_size = e->klen;
		k.mv_data = e->k;
		v.mv_size = e->vlen;
		v.mv_data = e->v;
		rc = mdb_put(txn, dbi[e->db], &k, &v, 0);
	}
	if (rc == 0)
		rc = mdb_txn_commit(txn);
	if (rc)
		objfs_log(OBJFS_LOG_ERR, "rebuilding the index in %s: %s", to,
			mdb_strerror(rc));
	mdb_env_close(env);
	return rc ? (rc == ENOSPC || rc == MDB_MAP_FULL ? -ENOSPC : -EIO) : 0;
}

int
objfs_meta_rebuild(const char *from, const char *to,
		struct objfs_meta_salvage_report *r)
{
	struct salvage sv = { .r = r };
	const unsigned char *meta;
	struct roots rt;
	char path[4200];
	struct stat st;
	void *map;
	int fd, rc;

	memset(r, 0, sizeof(*r));
	snprintf(path, sizeof(path), "%s/data.mdb", from);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size < 2 * 4096) {
		rc = errno ? -errno : -ENODATA;
		close(fd);
		return st.st_size < 2 * 4096 ? -ENODATA : rc;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	sv.p = map;
	meta = best_meta(sv.p, (uint64_t)st.st_size, &sv.psize);
	if (!sv.psize)
		sv.psize = 4096;	/* both meta pages lost: LMDB's usual */
	sv.npages = (uint64_t)st.st_size / sv.psize;
	r->pages = sv.npages;
	sv.seen = calloc(sv.npages, 1);
	sv.freed = calloc(sv.npages, 1);
	rc = sv.seen && sv.freed ? 0 : -ENOMEM;
	for (int d = 0; d < OBJFS_META_NDBS; d++) {
		rt.root[d] = NO_PAGE;
		rt.found[d] = 0;
	}
	if (rc == 0 && meta) {
		walk(&sv, le(meta + META_DBS + 40, 8), 0, -2, &rt);
		walk(&sv, le(meta + META_DBS + DB_SIZE + 40, 8), 0, -1, &rt);
		for (int d = 0; d < OBJFS_META_NDBS; d++)
			if (rt.root[d] != NO_PAGE)
				walk(&sv, rt.root[d], 0, d, &rt);
	}
	/* Whole live trees are the index: records elsewhere are stale (a
	 * deleted name's among them).  Only when something is cut are they
	 * the best there is. */
	if (!meta)
		sv.cut = 1;
	for (int d = 0; d < OBJFS_META_NDBS; d++)
		if (!rt.found[d])
			sv.cut = 1;
	r->whole = !sv.cut;
	if (rc == 0 && sv.cut) {
		scan_strays(&sv, 0);
		scan_strays(&sv, 1);
	}
	if (rc == 0) {
		overlay_journal(&sv, from);
		rc = sv.nomem ? -ENOMEM : write_index(&sv, to);
	}
	for (size_t i = 0; i < sv.cap; i++)
		rec_free(sv.tab[i]);
	free(sv.tab);
	free(sv.seen);
	free(sv.freed);
	munmap(map, (size_t)st.st_size);
	return rc;
}
