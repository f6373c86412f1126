/* SPDX-License-Identifier: MIT */
/*
 * pool.c - a Ceph pool as the chunk store (copy.h): the remote tier's
 * second store.
 *
 * A chunk's copy is the pool object named by its content,
 * "c.<xxh3-128 of its bytes>-<length>" (remote.h), holding exactly its
 * bytes and their sub-block sums.  Its record in the index names it: the
 * two halves of the hash in the fields the backing directory uses for a
 * slot and a home (chunk.h: slot = first 8 bytes, home = last 8, both
 * big-endian), with the chunk's checksum, length and sums as ever.  So:
 *	- a copy is never overwritten: new bytes are a new object, and an
 *	  object of a name is never changed once made (exclusive create);
 *	- the same bytes are stored once, whatever file or chunk they are
 *	  (dedup, always: the name is the content);
 *	- a batch is durable when every put has answered (a write to a
 *	  replicated pool answers once every replica has it), before the
 *	  commit that records it (writeout.c);
 *	- nothing is given back at a commit: a copy that no record names
 *	  is garbage that the collector removes (tier.c), so drop, release
 *	  and deletion have nothing to do here, and a crash at any step
 *	  leaves at worst such garbage.
 * Every read is checked: a whole chunk against its checksum, a part
 * against the sums of its sub-blocks in the record.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/status.h"
#include "src/store_int.h"
#include "src/cluster/tier_int.h"

#define PUTS_WINDOW	32	/* requests in flight: a look and a write
				 * for each of 16 chunks */

static void
hash_split(const unsigned char h[16], uint64_t *hi, uint64_t *lo)
{
	*hi = *lo = 0;
	for (int i = 0; i < 8; i++) {
		*hi = *hi << 8 | h[i];
		*lo = *lo << 8 | h[8 + i];
	}
}

/* The object of @c's copy. */
static void
copy_name(uint64_t hi, uint64_t lo, uint32_t len,
		char name[OBJFS_REMOTE_CHUNK_NAME])
{
	snprintf(name, OBJFS_REMOTE_CHUNK_NAME, "c.%016" PRIx64 "%016" PRIx64
		"-%" PRIx32, hi, lo, len);
}

/* A pool error as the caller gets it: a copy the pool does not have, or
 * whose bytes do not match, is -EIO; a cluster that did not answer
 * -ETIMEDOUT (logged by tier.c). */
static int
pool_err(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const char *name, int rc)
{
	objfs_tier_note(s->tier, rc, "reading a chunk");
	if (rc == -ENOENT) {
		objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 ": chunk %" PRIu64
			": %s is not in the pool", ip->ino, idx, name);
		return -EIO;
	}
	if (rc == -EBADMSG || rc == -EIO) {
		atomic_fetch_add(&s->csum_failures, 1);
		return -EIO;
	}
	return rc;
}

/* ---- an object in memory ---------------------------------------------- */

struct load_ctx {
	struct objfs_store *s;
	struct objfs_inode *ip;
	uint64_t n, seq;
	int bad;
};

static int
load_record(void *arg, uint64_t idx, const struct objfs_chunk_rec *r)
{
	struct load_ctx *l = arg;
	struct objfs_chunk *c;

	if (!r || idx >= l->s->max_size >> l->s->chunk_shift ||
	    r->len > l->s->chunk_size || r->has_alt ||
	    r->shift != l->s->sub_shift) {
		l->bad = 1;
		return 0;
	}
	c = objfs_chunkmap_add(&l->ip->chunks, idx);
	if (!c)
		return -ENOMEM;
	c->flags = OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS;
	c->csum = r->csum;
	c->slot = r->slot;
	c->home = r->home;
	c->disk_len = r->len;
	c->rec_seq = l->seq;
	l->n++;
	return 0;
}

static int
pool_load(struct objfs_store *s, struct objfs_inode *ip, uint64_t *n,
		int *bad)
{
	struct load_ctx l = { s, ip, 0, 0, 0 };
	struct objfs_meta_txn *t;
	int rc = objfs_meta_begin(s->meta, 0, &t);

	if (rc < 0)
		return rc;
	(void)objfs_meta_commit_seq(t, &l.seq);
	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_chunk_list(t, ip->ino, load_record, &l);
	objfs_meta_abort(t);
	if (rc < 0)
		return rc;
	*n = l.n;
	*bad = l.bad;
	return 0;
}

static void
pool_unload(struct objfs_store *s, struct objfs_inode *ip)
{
	(void)s;
	(void)ip;
}

/* ---- reads, and fetches ahead of a sequential reader ----------------- */

/* The fetch of @hi/@lo/@len under way, taken out of the table; NULL. */
static struct objfs_remote_fetch *
pf_take(struct objfs_tier *t, uint64_t hi, uint64_t lo, uint32_t len)
{
	struct objfs_remote_fetch *f = NULL;

	pthread_mutex_lock(&t->pf_mu);
	for (unsigned i = 0; i < t->pf_n; i++)
		if (t->pf[i].hi == hi && t->pf[i].lo == lo &&
		    t->pf[i].len == len) {
			f = t->pf[i].f;
			t->pf[i] = t->pf[--t->pf_n];
			break;
		}
	pthread_mutex_unlock(&t->pf_mu);
	return f;
}

void
tier_prefetch_clear(struct objfs_tier *t)
{
	pthread_mutex_lock(&t->pf_mu);
	while (t->pf_n)
		objfs_remote_fetch_free(t->pf[--t->pf_n].f);
	pthread_mutex_unlock(&t->pf_mu);
}

/* Room in the table: a fetch that answered and was not taken within a
 * second (its reader went elsewhere) goes.  0 when there is none. */
static int
pf_room(struct objfs_tier *t, uint64_t now)
{
	if (t->pf_n < TIER_PREFETCH_MAX)
		return 1;
	for (unsigned i = 0; i < t->pf_n; i++)
		if (now - t->pf[i].t_ns > 1000000000u &&
		    objfs_remote_fetch_done(t->pf[i].f)) {
			objfs_remote_fetch_free(t->pf[i].f);
			t->pf[i] = t->pf[--t->pf_n];
			return 1;
		}
	return 0;
}

/*
 * A reader that goes on from where it was (the chunk after the last it
 * read, or the restores just ahead of it): the next chunks that are only
 * in the pool are fetched now, many at once, into buffers of their own,
 * and taken by the reads that come for them (their bytes checked then).
 */
static void
pf_ahead(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx)
{
	struct objfs_tier *t = s->tier;
	uint64_t now = objfs_mono_ns();

	if (!ip->rd_next || idx + 1 < ip->rd_next ||
	    idx > ip->rd_next + TIER_PREFETCH_AHEAD)
		return;
	pthread_mutex_lock(&t->pf_mu);
	for (uint64_t j = idx + 1; j <= idx + TIER_PREFETCH_AHEAD; j++) {
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, j);
		char name[OBJFS_REMOTE_CHUNK_NAME];
		struct objfs_remote_fetch *f;
		unsigned i;

		if (!c || objfs_chunk_state(c) != OBJFS_CHUNK_SPILLED)
			continue;
		for (i = 0; i < t->pf_n; i++)
			if (t->pf[i].hi == c->slot && t->pf[i].lo == c->home &&
			    t->pf[i].len == c->disk_len)
				break;
		if (i < t->pf_n)
			continue;	/* under way already */
		if (!pf_room(t, now))
			break;
		copy_name(c->slot, c->home, c->disk_len, name);
		if (objfs_remote_fetch_start(t->r, name, c->disk_len, &f) < 0)
			break;
		t->pf[t->pf_n++] = (struct tier_prefetch){ c->slot, c->home,
			c->disk_len, now, f };
		atomic_fetch_add(&t->pf_started, 1);
	}
	pthread_mutex_unlock(&t->pf_mu);
}

/* The copy into @buf: from a fetch ahead when there is one, else now. */
static int
fetch(struct objfs_store *s, uint64_t hi, uint64_t lo, uint32_t len,
		unsigned shift, uint64_t csum, void *buf, char *name)
{
	struct objfs_remote_fetch *f = pf_take(s->tier, hi, lo, len);
	uint64_t t0 = objfs_mono_ns();
	int rc;

	if (f) {
		rc = objfs_remote_fetch_take(f, buf, shift, csum);
		objfs_remote_fetch_free(f);
		if (rc == 0) {
			atomic_fetch_add(&s->tier->pf_hits, 1);
			objfs_tier_count(&s->tier->down, len, t0);
			return 0;
		}
		/* Not usable (gone, damaged, timed out): read it again. */
	}
	rc = objfs_remote_chunk_get(s->tier->r, name, buf, len, shift, csum);
	if (rc == 0)
		objfs_tier_count(&s->tier->down, len, t0);
	return rc;
}

static int
pool_read(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, void *buf)
{
	char name[OBJFS_REMOTE_CHUNK_NAME];
	int rc;

	copy_name(c->slot, c->home, c->disk_len, name);
	pf_ahead(s, ip, idx);
	rc = fetch(s, c->slot, c->home, c->disk_len, chunk_sub_shift(s, c),
			c->csum, buf, name);
	if (rc < 0)
		return pool_err(s, ip, idx, name, rc);
	return 0;
}

/*
 * A part of a chunk of the version a reader opened, which the index no
 * longer names (shared mode: another node published a new version, or
 * removed the file, while it was open here; the inode is detached, or
 * gone): its sums are gone with its record, so the whole chunk is read
 * and checked against the checksum in memory, and the part copied out as
 * read_part's contract has it.
 */
static int
read_part_whole(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, void *buf, uint32_t lo, uint32_t hi)
{
	uint32_t shift = s->sub_shift, base, end;
	unsigned char *whole = objfs_copy_buf(c->disk_len);
	int rc;

	if (!whole)
		return -ENOMEM;
	rc = pool_read(s, ip, idx, c, whole);
	if (rc == 0) {
		base = lo >> shift << shift;
		end = (uint32_t)min64(((uint64_t)((hi - 1) >> shift) + 1) <<
				shift, c->disk_len);
		memcpy(buf, whole + base, end - base);
		memset((unsigned char *)buf + (end - base), 0,
			objfs_copy_span(end - base) - (end - base));
	}
	free(whole);
	return rc;
}

static int
pool_read_part(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, void *buf, uint32_t lo, uint32_t hi)
{
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	char name[OBJFS_REMOTE_CHUNK_NAME];
	uint32_t shift = s->sub_shift, base, end;
	struct objfs_chunk_rec r;
	struct objfs_meta_txn *t;
	uint64_t t0 = objfs_mono_ns();
	int rc;

	/* The sums are in the record, not in memory: one index read. */
	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_chunk_get(t, ip->ino, idx, &r, tab);
	objfs_meta_abort(t);
	/* Shared mode: the record may be another node's newer version's
	 * already, before the inode is marked detached (the log's record is
	 * applied to the index first, the inode after): on 67f5056 such a
	 * read failed with EIO for a moment while B rewrote the file. */
	if ((rc == 0 || rc == -ENOENT) &&
	    (ip->detached || ip->gone || s->shared) &&
	    (rc == -ENOENT || r.slot != c->slot || r.home != c->home ||
	     r.len != c->disk_len || r.shift != shift))
		return read_part_whole(s, ip, idx, c, buf, lo, hi);
	if (rc == 0 && (r.slot != c->slot || r.home != c->home ||
	    r.len != c->disk_len || r.shift != shift))
		rc = -EIO;
	if (rc < 0) {
		objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 ": chunk %" PRIu64
			": its record cannot be read (%s)", ip->ino, idx,
			strerror(-rc));
		return -EIO;
	}
	copy_name(c->slot, c->home, c->disk_len, name);
	rc = objfs_remote_chunk_get_part(s->tier->r, name, buf, c->disk_len,
			shift, tab, lo, hi);
	if (rc < 0)
		return pool_err(s, ip, idx, name, rc);
	base = lo >> shift << shift;
	end = (uint32_t)min64(((uint64_t)((hi - 1) >> shift) + 1) << shift,
			c->disk_len);
	if (end == c->disk_len)
		memset((unsigned char *)buf + (end - base), 0,
			objfs_copy_span(end - base) - (end - base));
	objfs_tier_count(&s->tier->down, end - base, t0);
	atomic_fetch_add(&s->part_reads, 1);
	return 0;
}

struct objfs_copy_read {
	char name[OBJFS_REMOTE_CHUNK_NAME];
	uint64_t ino, idx, csum, hi, lo;
	uint32_t len;
	unsigned shift;
};

static int
pool_read_start(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, struct objfs_copy_read **out)
{
	struct objfs_copy_read *rd = malloc(sizeof(*rd));

	if (!rd)
		return -ENOMEM;
	copy_name(c->slot, c->home, c->disk_len, rd->name);
	rd->hi = c->slot;
	rd->lo = c->home;
	rd->ino = ip->ino;
	rd->idx = idx;
	rd->csum = c->csum;
	rd->len = c->disk_len;
	rd->shift = chunk_sub_shift(s, c);
	*out = rd;
	return 0;
}

/* Without the inode's lock: the object is never changed, and the
 * collector leaves any that a record named since it began (tier.c). */
static int
pool_read_run(struct objfs_store *s, struct objfs_copy_read *rd, void *buf)
{
	int rc = fetch(s, rd->hi, rd->lo, rd->len, rd->shift, rd->csum, buf,
			rd->name);

	if (rc < 0) {
		objfs_tier_note(s->tier, rc, "reading a chunk");
		if (rc == -ENOENT)
			objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 ": chunk %"
				PRIu64 ": %s is not in the pool", rd->ino,
				rd->idx, rd->name);
		if (rc == -EIO || rc == -EBADMSG)
			atomic_fetch_add(&s->csum_failures, 1);
		return rc == -ENOENT || rc == -EBADMSG ? -EIO : rc;
	}
	return 0;
}

static void
pool_read_end(struct objfs_store *s, struct objfs_inode *ip,
		struct objfs_copy_read *rd)
{
	(void)s;
	(void)ip;
	free(rd);
}

static uint64_t
pool_key(const struct objfs_chunk *c)
{
	return c->slot ^ c->home;
}

/* ---- write-out batches ------------------------------------------------ */

struct put {
	uint64_t idx, csum, hi, lo;
	uint32_t len;
	int same;			/* its present copy's bytes: no put */
	size_t k;			/* its put (objfs_remote_puts_result) */
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	struct objfs_copy_made made;
};

struct objfs_copy_batch {
	struct objfs_store *s;
	struct objfs_inode *ip;
	struct objfs_remote_puts *puts;
	uint64_t t0;
	unsigned gcg;			/* tier_gc_enter's */
	size_t n, nputs;
	struct put p[];
};

static int
pool_batch_new(struct objfs_store *s, struct objfs_inode *ip,
		const uint64_t *sel, size_t n, int evicting,
		struct objfs_copy_batch **out)
{
	struct objfs_copy_batch *b = malloc(sizeof(*b) + n * sizeof(b->p[0]));
	int rc;

	(void)sel;
	(void)evicting;
	if (!b)
		return -ENOMEM;
	rc = objfs_remote_puts_new(s->tier->r, PUTS_WINDOW, &b->puts);
	if (rc < 0) {
		free(b);
		return rc;
	}
	b->s = s;
	b->ip = ip;
	b->n = b->nputs = 0;
	b->t0 = objfs_mono_ns();
	/* Until the commit that records its chunks is made or given up,
	 * no collection marks without it (gc.c). */
	b->gcg = tier_gc_enter(s->tier);
	*out = b;
	return 0;
}

/* A copy is always whole: an object is never changed. */
static int
pool_put_subs(struct objfs_copy_batch *b, uint64_t idx, struct objfs_chunk *c,
		uint32_t len)
{
	(void)b;
	(void)idx;
	(void)c;
	(void)len;
	return 0;
}

static int
pool_put(struct objfs_copy_batch *b, uint64_t idx, struct objfs_chunk *c,
		uint32_t len, int nodup)
{
	struct objfs_store *s = b->s;
	struct put *x = &b->p[b->n];
	char name[OBJFS_REMOTE_CHUNK_NAME];
	const void *bytes = objfs_arena_ptr(s->arena, c->off);
	unsigned char h[16];
	int rc;

	(void)nodup;	/* equal bytes are one object, always */
	memset(&x->made, 0, sizeof(x->made));
	x->idx = idx;
	x->len = len;
	x->same = 0;
	x->csum = objfs_chunk_csum(bytes, len, s->sub_shift, x->tab);
	objfs_content_hash128(bytes, len, h);
	hash_split(h, &x->hi, &x->lo);
	copy_name(x->hi, x->lo, len, name);
	tier_gc_touch(s->tier, x->hi, x->lo, len);
	/* The bytes of its present copy again (a file saved anew over
	 * itself): nothing to send, the record stays as it is. */
	if ((c->flags & OBJFS_CHUNK_ONDISK) && c->slot == x->hi &&
	    c->home == x->lo && c->disk_len == len) {
		x->same = 1;
		b->n++;
		return 0;
	}
	/* The arena's block is read until the batch is synced: the inode's
	 * lock keeps it as it is until then.  A chunk that had a copy and
	 * changed (an append, a rewrite in place) is new bytes, most
	 * likely: sent at once, not looked for first. */
	rc = objfs_remote_puts_add(b->puts, name, bytes, len, s->sub_shift,
			x->tab, !(c->flags & OBJFS_CHUNK_ONDISK));
	if (rc < 0)
		return rc;
	x->k = b->nputs++;
	b->n++;
	return 0;
}

static int
pool_batch_sync(struct objfs_copy_batch *b)
{
	int rc = objfs_remote_puts_wait(b->puts);
	uint64_t sent = 0;

	if (rc < 0) {
		/* What did reach the pool is garbage no record names: the
		 * collector removes it. */
		objfs_tier_note(b->s->tier, rc, "writing chunks");
		return rc;
	}
	for (size_t k = 0; k < b->n; k++) {
		int r = b->p[k].same ? 0 :
			objfs_remote_puts_result(b->puts, b->p[k].k);

		if (r > 0)
			sent += b->p[k].len;
		else
			atomic_fetch_add(&b->s->tier->dedup.n, 1);
		b->p[k].made.written = r > 0 ? b->p[k].len : 0;
		b->p[k].made.dup = r == 0;
	}
	objfs_tier_count(&b->s->tier->up, sent, b->t0);
	objfs_tier_note(b->s->tier, 0, NULL);
	return 0;
}

static int
pool_batch_record(struct objfs_copy_batch *b, struct objfs_meta_txn *t,
		uint64_t *added)
{
	struct objfs_store *s = b->s;
	struct objfs_inode *ip = b->ip;
	int rc = 0;

	*added = 0;
	for (size_t k = 0; rc == 0 && k < b->n; k++) {
		struct put *x = &b->p[k];
		struct objfs_chunk_rec rec = { x->csum, x->hi, x->len,
			s->sub_shift, x->tab, 0, 0, { 0 }, x->lo };
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, x->idx);

		if (x->same)
			continue;	/* its record says so already */
		rc = objfs_meta_chunk_put(t, ip->ino, x->idx, &rec);
		*added += !(c->flags & OBJFS_CHUNK_ONDISK);
	}
	return rc;
}

static void
pool_batch_undo(struct objfs_copy_batch *b)
{
	b->n = 0;
}

static void
pool_batch_done(struct objfs_copy_batch *b, uint64_t seq)
{
	struct objfs_inode *ip = b->ip;

	for (size_t k = 0; k < b->n; k++) {
		struct put *x = &b->p[k];
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, x->idx);

		x->made.idx = x->idx;
		x->made.len = x->len;
		c->flags |= OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS;
		c->flags &= ~OBJFS_CHUNK_ALT;
		c->slot = x->hi;
		c->home = x->lo;
		c->csum = x->csum;
		c->disk_len = x->len;
		c->rec_seq = seq;
	}
}

static size_t
pool_batch_count(const struct objfs_copy_batch *b)
{
	return b->n;
}

static const struct objfs_copy_made *
pool_batch_entry(const struct objfs_copy_batch *b, size_t k)
{
	return &b->p[k].made;
}

static void
pool_batch_free(struct objfs_copy_batch *b)
{
	objfs_remote_puts_free(b->puts);
	tier_gc_leave(b->s->tier, b->gcg);
	free(b);
}

/* ---- leaving a copy: the collector's (tier.c) ------------------------- */

static int
pool_drop(struct objfs_store *s, struct objfs_meta_txn *t,
		const struct objfs_inode *ip, const struct objfs_chunk *c,
		unsigned *what)
{
	(void)s;
	(void)t;
	(void)ip;
	(void)c;
	*what = 0;
	return 0;
}

static void
pool_release(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_chunk *c, unsigned what, uint64_t seq)
{
	(void)s;
	(void)ip;
	(void)c;
	(void)what;
	(void)seq;
}

/* ---- truncation: the shorter bytes are another object ----------------- */

struct objfs_copy_cut {
	struct objfs_tier *t;
	uint64_t csum, hi, lo;
	uint32_t len;
	unsigned gcg;
	unsigned char tab[4 * OBJFS_SUMS_MAX];
};

static void
pool_cut_free(struct objfs_copy_cut *k)
{
	tier_gc_leave(k->t, k->gcg);
	free(k);
}

static int
pool_cut_prepare(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, uint32_t len,
		struct objfs_copy_cut **out)
{
	struct objfs_copy_cut *k = calloc(1, sizeof(*k));
	char name[OBJFS_REMOTE_CHUNK_NAME];
	unsigned char h[16], *b = NULL;
	const void *bytes;
	uint64_t t0;
	int rc = 0;

	if (!k)
		return -ENOMEM;
	k->len = len;
	k->t = s->tier;
	k->gcg = tier_gc_enter(s->tier);
	if (c->cap && !(c->flags & OBJFS_CHUNK_DIRTY)) {
		bytes = objfs_arena_ptr(s->arena, c->off);
	} else if (!(b = objfs_copy_buf(c->disk_len))) {
		rc = -ENOMEM;
	} else {
		rc = pool_read(s, ip, idx, c, b);
		bytes = b;
	}
	if (rc == 0) {
		k->csum = objfs_chunk_csum(bytes, len, s->sub_shift, k->tab);
		objfs_content_hash128(bytes, len, h);
		hash_split(h, &k->hi, &k->lo);
		copy_name(k->hi, k->lo, len, name);
		tier_gc_touch(s->tier, k->hi, k->lo, len);
		t0 = objfs_mono_ns();
		rc = objfs_remote_chunk_put(s->tier->r, name, bytes, len,
				s->sub_shift, k->tab);
		objfs_tier_note(s->tier, rc < 0 ? rc : 0, "writing a chunk");
		if (rc >= 0)
			objfs_tier_count(&s->tier->up, rc > 0 ? len : 0, t0);
		rc = rc < 0 ? rc : 0;
	}
	free(b);
	if (rc < 0) {
		pool_cut_free(k);
		return rc;
	}
	*out = k;
	return 0;
}

static int
pool_cut_record(struct objfs_store *s, struct objfs_meta_txn *t,
		struct objfs_inode *ip, uint64_t idx, const struct objfs_chunk *c,
		const struct objfs_copy_cut *k)
{
	struct objfs_chunk_rec r = { k->csum, k->hi, k->len, s->sub_shift,
		k->tab, 0, 0, { 0 }, k->lo };

	(void)c;
	return objfs_meta_chunk_put(t, ip->ino, idx, &r);
}

static void
pool_cut_done(struct objfs_chunk *c, const struct objfs_copy_cut *k,
		uint64_t seq)
{
	c->flags |= OBJFS_CHUNK_SUMS;
	c->slot = k->hi;
	c->home = k->lo;
	c->csum = k->csum;
	c->disk_len = k->len;
	c->rec_seq = seq;
}


/*
 * fallocate: a pool cannot set space aside for one client, so this only
 * refuses what the pool has no room for now (ENOSPC), from the figure
 * the tier refreshes every few seconds; a write-out may still find the
 * pool full later, and then fails with ENOSPC as it would without it.
 */
static int
pool_reserve(struct objfs_store *s, struct objfs_inode *ip, uint64_t first,
		uint64_t last)
{
	uint64_t need = 0, avail = atomic_load(&s->tier->space_avail);

	for (uint64_t i = first; i <= last; i++) {
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, i);

		if (!(c && (c->flags & OBJFS_CHUNK_ONDISK)))
			need += s->chunk_size;
	}
	return avail && need > avail ? -ENOSPC : 0;
}

/* copy_file_range copies: the copies' bytes are the same objects in the
 * pool (dedup), so only the reading and the hashing are paid. */
static int
pool_share(struct objfs_store *s, struct objfs_inode *src, uint64_t off_in,
		struct objfs_inode *dst, uint64_t off_out, uint64_t len,
		uint64_t *done)
{
	(void)s;
	(void)src;
	(void)off_in;
	(void)dst;
	(void)off_out;
	(void)len;
	*done = 0;
	return 0;
}

static int
pool_users(struct objfs_store *s, const struct objfs_inode *ip,
		const struct objfs_chunk *c, uint64_t *n)
{
	(void)s;
	(void)ip;
	(void)c;
	*n = 1;
	return 0;
}

/* ---- deleting an object: its records go, its objects are garbage ------ */

static int
pool_doom(struct objfs_store *s, struct objfs_meta_txn *t,
		struct objfs_inode *ip, struct objfs_copy_doomed **d)
{
	(void)s;
	(void)t;
	(void)ip;
	*d = NULL;
	return 0;
}

static void
pool_gone(struct objfs_store *s, struct objfs_inode *ip, uint64_t seq,
		struct objfs_copy_doomed *d)
{
	(void)s;
	(void)ip;
	(void)seq;
	(void)d;
}

static void
pool_doomed_free(struct objfs_copy_doomed *d)
{
	(void)d;
}

static void
pool_give_back(struct objfs_store *s, int all)
{
	(void)s;
	(void)all;
}

static int
pool_reclaim(struct objfs_store *s)
{
	(void)s;
	return 0;
}

static uint64_t
pool_trim(struct objfs_store *s)
{
	(void)s;
	return 0;
}

static int
pool_space(struct objfs_store *s, uint64_t *total, uint64_t *free_,
		uint64_t *avail)
{
	*total = atomic_load(&s->tier->space_total);
	*avail = *free_ = atomic_load(&s->tier->space_avail);
	return 0;
}

/* ---- figures ---------------------------------------------------------- */

struct fig_walk {
	struct objfs_status_figures *f;
	struct gc_name *v;
	size_t n, cap;
};

static int
fig_chunk(void *arg, uint64_t ino, uint64_t idx,
		const struct objfs_chunk_rec *r)
{
	struct fig_walk *w = arg;

	(void)ino;
	(void)idx;
	if (!r)
		return 0;
	w->f->disk_chunks++;
	w->f->disk_bytes += r->len;
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 1024;
		struct gc_name *v = realloc(w->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->v = v;
		w->cap = cap;
	}
	w->v[w->n++] = (struct gc_name){ r->slot, r->home, r->len, 1 };
	return 0;
}

static int
pool_figures(struct objfs_store *s, struct objfs_status_figures *f)
{
	struct fig_walk w = { f, NULL, 0, 0 };
	struct objfs_meta_txn *t;
	int rc = objfs_meta_begin(s->meta, 0, &t);

	if (rc < 0)
		return rc;
	rc = objfs_meta_chunk_all(t, fig_chunk, &w);
	objfs_meta_abort(t);
	/* Each object once, however many records name it. */
	if (rc == 0 && w.n) {
		qsort(w.v, w.n, sizeof(*w.v), tier_name_cmp);
		for (size_t i = 0; i < w.n; i++)
			if (i == 0 || tier_name_cmp(&w.v[i], &w.v[i - 1]))
				f->disk_stored += w.v[i].len;
			else if (i == 1 || tier_name_cmp(&w.v[i - 1], &w.v[i - 2]))
				f->shared_now++;
	}
	free(w.v);
	if (rc < 0)
		return rc;
	return pool_space(s, &f->fs_bytes, &f->fs_avail, &f->fs_avail);
}

const struct objfs_copy_ops objfs_copy_pool = {
	.name = "pool",
	.load = pool_load,
	.unload = pool_unload,
	.read = pool_read,
	.read_part = pool_read_part,
	.read_start = pool_read_start,
	.read_run = pool_read_run,
	.read_end = pool_read_end,
	.key = pool_key,
	.batch_new = pool_batch_new,
	.put_subs = pool_put_subs,
	.put = pool_put,
	.batch_sync = pool_batch_sync,
	.batch_record = pool_batch_record,
	.batch_undo = pool_batch_undo,
	.batch_done = pool_batch_done,
	.batch_count = pool_batch_count,
	.batch_entry = pool_batch_entry,
	.batch_free = pool_batch_free,
	.drop = pool_drop,
	.release = pool_release,
	.cut_prepare = pool_cut_prepare,
	.cut_record = pool_cut_record,
	.cut_done = pool_cut_done,
	.cut_free = pool_cut_free,
	.reserve = pool_reserve,
	.share = pool_share,
	.users = pool_users,
	.doom = pool_doom,
	.gone = pool_gone,
	.doomed_free = pool_doomed_free,
	.give_back = pool_give_back,
	.reclaim = pool_reclaim,
	.trim = pool_trim,
	.space = pool_space,
	.figures = pool_figures,
};
