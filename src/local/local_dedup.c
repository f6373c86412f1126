/* SPDX-License-Identifier: MIT */
/*
 * local_dedup.c - the backing directory's copies that several chunks share
 * (local_int.h): copies made by copy_file_range over whole chunks
 * (local_share), equal content written once (dedup), deleting an object
 * (local_doom, local_gone), the store's figures, and the rules every
 * other path follows for shared copies.
 *
 * A shared copy stays where it was written: slot S of the backing file
 * of object H (its "home").  The index's share DB counts the records
 * that point at it: (H, S) -> n; a copy without an entry has one record,
 * H's own.  A record in another object's file ends with H (meta.h,
 * schema 5); H's own records never name H, so a copy becomes shared
 * without touching them (or H's lock): whether a copy is shared is the
 * share DB's to say (local_copy_shared).  The count changes in the very commit that adds
 * or removes a record, so no crash can leave it unlike the records: a
 * copy is never given back while a record (durable or not) points at
 * it, and never left behind once none does.
 *
 *	- Nothing is ever written into a shared copy: a chunk whose record
 *	  is shared is written out whole, to a free slot of its own file
 *	  (no append in place, no sub-blocks in a second slot), and its
 *	  old record's reference is dropped in the same commit.
 *	- Dropping the last reference gives the slot back as any freed
 *	  slot is: once the commit is durable, through the deferred list
 *	  (local_space.c), in H's file, whoever dropped it.
 *	- H's own slot map keeps S taken while the share DB counts it, even
 *	  after H's own record went elsewhere (local.c loads both).
 *	- H's backing file outlives H while other objects' records point
 *	  into it: deleting H writes no tombstone then.  The commit that
 *	  drops the last reference into the file of a deleted H writes it,
 *	  and the file goes once that commit is durable.
 *
 * Called with the inode lock(s) held (store_int.h): local_share()
 * with both, which only ns_lock permits.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meta/meta_keys.h"
#include "src/base/log.h"
#include "src/local/local_int.h"
#include "src/status.h"

int
local_copy_shared(struct objfs_store *s, const struct objfs_inode *ip,
		const struct objfs_chunk *c)
{
	struct objfs_meta_txn *t;
	uint64_t n;
	int rc;

	if (!(c->flags & OBJFS_CHUNK_ONDISK))
		return 0;
	if (c->home)
		return 1;
	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_share_get(t, ip->ino, c->slot, &n);
	objfs_meta_abort(t);
	return rc == -ENOENT ? 0 : rc < 0 ? rc : 1;
}

int
local_users(struct objfs_store *s, const struct objfs_inode *ip,
		const struct objfs_chunk *c, uint64_t *n)
{
	struct objfs_meta_txn *t;
	int rc;

	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_share_get(t, local_copy_home(ip, c), c->slot, n);
	objfs_meta_abort(t);
	if (rc == -ENOENT) {
		*n = 1;
		rc = 0;
	}
	return rc;
}

int
local_drop(struct objfs_store *s, struct objfs_meta_txn *t,
		const struct objfs_inode *ip, const struct objfs_chunk *c,
		unsigned *what)
{
	uint64_t n, home = local_copy_home(ip, c);
	struct objfs_attr a;
	int rc;

	(void)s;
	*what = 0;
	if (!(c->flags & OBJFS_CHUNK_ONDISK))
		return 0;
	rc = objfs_meta_share_get(t, home, c->slot, &n);
	if (rc == -ENOENT && !c->home) {
		*what = OBJFS_COPY_FREE;		/* its own copy, not shared */
		return objfs_meta_content_del(t, home, c->slot);
	}
	if (rc == -ENOENT) {
		/* Counted nowhere: a record of a copy that is not shared
		 * after all (the count went with a damaged record).  Never
		 * give back what another record may still name. */
		objfs_log(OBJFS_LOG_WARNING, "inode %" PRIu64 ": shared copy "
			"%" PRIu64 ":%" PRIu64 " has no count; kept", ip->ino,
			c->home, c->slot);
		return 0;
	}
	if (rc < 0)
		return rc;
	rc = objfs_meta_share_put(t, home, c->slot, n - 1);
	if (rc < 0 || n > 1)
		return rc;
	*what = OBJFS_COPY_FREE;
	rc = objfs_meta_content_del(t, home, c->slot);
	if (rc < 0 || !c->home)
		return rc;
	/* The last reference into the file of an object that is gone: the
	 * file goes too, once this commit is durable. */
	rc = objfs_meta_inode_get(t, c->home, &a);
	if (rc != -ENOENT)
		return rc < 0 ? rc : 0;
	rc = objfs_data_file_shared(t, c->home);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	*what |= OBJFS_COPY_FILE;
	return objfs_meta_deleted_add(t, c->home);
}

void
local_release(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_chunk *c, unsigned what, uint64_t seq)
{
	uint64_t home = local_copy_home(ip, c);

	if (what & OBJFS_COPY_FILE)
		local_defer_slot(s, home, OBJFS_WHOLE_FILE, seq);
	else if (what & OBJFS_COPY_FREE)
		local_defer_slot(s, home, c->slot, seq);
	/* A second slot is never shared. */
	if (c->flags & OBJFS_CHUNK_ALT)
		local_defer_slot(s, ip->ino, c->alt, seq);
}

/* ---- equal content (dedup) --------------------------------------------- */

#define DEDUP_CANDIDATES	4

struct cands {
	uint64_t home[DEDUP_CANDIDATES], slot[DEDUP_CANDIDATES];
	unsigned n;
};

static int
cand_add(void *arg, uint64_t home, uint64_t slot)
{
	struct cands *k = arg;

	k->home[k->n] = home;
	k->slot[k->n] = slot;
	return ++k->n == DEDUP_CANDIDATES;	/* enough */
}

int
local_dedup_find(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_chunk *c, const void *buf, uint32_t len,
		uint64_t csum, uint64_t *home, uint64_t *slot)
{
	struct objfs_meta_txn *t;
	struct cands k = { { 0 }, { 0 }, 0 };
	unsigned char *b = NULL;
	int rc;

	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return 0;
	rc = objfs_meta_content_find(t, csum, cand_add, &k);
	objfs_meta_abort(t);
	if (rc < 0 || k.n == 0)
		return 0;
	for (unsigned i = 0; i < k.n; i++) {
		int fd, own = k.home[i] != ip->ino, same;

		/* Its own copy as it is: nothing to share. */
		if ((c->flags & OBJFS_CHUNK_ONDISK) && k.slot[i] == c->slot &&
		    k.home[i] == local_copy_home(ip, c))
			continue;
		if (!b && !(b = objfs_copy_buf(len)))
			return 0;
		fd = own ? objfs_backing_file(s->backing, k.home[i], 0, NULL) :
			local_backing_fd(s, ip, 0, NULL);
		if (fd < 0)
			continue;
		/* The bytes, checked against their sums, and compared: equal
		 * checksums are a candidate, never a proof. */
		same = objfs_backing_read(fd, k.home[i], 0, k.slot[i], NULL,
				s->chunk_size, b, len, s->sub_shift, csum) == 0 &&
			memcmp(b, buf, len) == 0;
		local_copy_fd_done(fd, own);
		if (same) {
			free(b);
			*home = k.home[i];
			*slot = k.slot[i];
			return 1;
		}
	}
	free(b);
	return 0;
}

int
local_dedup_claim(struct objfs_meta_txn *t, uint64_t home, uint64_t slot,
		uint64_t csum, uint32_t len)
{
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	struct objfs_chunk_rec r;
	uint64_t have, idx, n;
	int rc;

	/* The entry is deleted whenever the copy's bytes change or the copy
	 * is given back: while it says so, the bytes read are there. */
	rc = objfs_meta_content_get(t, home, slot, &have, &idx);
	if (rc == -ENOENT || (rc == 0 && have != csum))
		return 0;
	if (rc < 0)
		return rc;
	rc = objfs_meta_share_get(t, home, slot, &n);
	if (rc == -ENOENT) {
		/* Not shared yet: its one record must still be the one the
		 * entry names, whole (a shortened or grown one is not). */
		rc = objfs_meta_chunk_get(t, home, idx, &r, tab);
		if (rc == -ENOENT || (rc == 0 && (r.slot != slot || r.home ||
		    r.has_alt || r.csum != csum || r.len != len)))
			return 0;
		if (rc < 0)
			return rc;
		n = 1;
	} else if (rc < 0) {
		return rc;
	}
	rc = objfs_meta_share_put(t, home, slot, n + 1);
	return rc < 0 ? rc : 1;
}

/* ---- deleting an object ------------------------------------------------ */

/* What a deleted object gives back once its commit is durable: slots, or
 * whole files (of objects gone before, whose last shared copy this was),
 * and with @whole its own file (a tombstone is in the commit). */
struct objfs_copy_doomed {
	struct objfs_deferred *v;
	size_t n, cap;
	int whole;
};

static int
doomed_add(struct objfs_copy_doomed *d, uint64_t ino, uint64_t slot)
{
	struct objfs_deferred *v;

	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 8;

		v = realloc(d->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		d->v = v;
		d->cap = cap;
	}
	d->v[d->n++] = (struct objfs_deferred){ ino, slot, 0 };
	return 0;
}

int
local_doom(struct objfs_store *s, struct objfs_meta_txn *t,
		struct objfs_inode *ip, struct objfs_copy_doomed **out)
{
	struct objfs_copy_doomed *d = calloc(1, sizeof(*d));
	struct objfs_chunk *c;
	uint64_t i;
	int rc = 0, kept;

	if (!d)
		return -ENOMEM;
	OBJFS_CHUNKMAP_EACH(&ip->chunks, 0, i, c) {
		unsigned what;

		if (!(c->flags & OBJFS_CHUNK_ONDISK))
			continue;
		rc = local_drop(s, t, ip, c, &what);
		if (rc == 0 && (what & OBJFS_COPY_FILE))
			rc = doomed_add(d, c->home, OBJFS_WHOLE_FILE);
		else if (rc == 0 && (what & OBJFS_COPY_FREE) && c->home)
			rc = doomed_add(d, c->home, c->slot);
		if (rc < 0)
			goto fail;
	}
	/* Its own copies are given back one by one if the file must
	 * stay; with the file otherwise. */
	kept = objfs_data_file_shared(t, ip->ino);
	if (kept < 0) {
		rc = kept;
		goto fail;
	}
	OBJFS_CHUNKMAP_EACH(&ip->chunks, 0, i, c) {
		uint64_t n;

		if (!kept || !(c->flags & OBJFS_CHUNK_ONDISK) || c->home)
			continue;
		/* One of its copies still counted: not its to give. */
		if (objfs_meta_share_get(t, ip->ino, c->slot, &n) == 0)
			continue;
		rc = doomed_add(d, ip->ino, c->slot);
		if (rc == 0 && (c->flags & OBJFS_CHUNK_ALT))
			rc = doomed_add(d, ip->ino, c->alt);
		if (rc < 0)
			goto fail;
	}
	d->whole = !kept && local_has_copies(ip);
	if (d->whole && (rc = objfs_meta_deleted_add(t, ip->ino)) < 0)
		goto fail;
	*out = d;
	return 0;

fail:
	local_doomed_free(d);
	return rc;
}

void
local_doomed_free(struct objfs_copy_doomed *d)
{
	free(d->v);
	free(d);
}

void
local_gone(struct objfs_store *s, struct objfs_inode *ip, uint64_t seq,
		struct objfs_copy_doomed *d)
{
	if (d->whole) {
		local_forget_deferred(s, ip->ino);
		local_defer_slot(s, ip->ino, OBJFS_WHOLE_FILE, seq);
	}
	for (size_t k = 0; k < d->n; k++)
		local_defer_slot(s, d->v[k].ino, d->v[k].slot, seq);
	local_doomed_free(d);
}

/* ---- copies that share ------------------------------------------------- */

/* Can chunk @c's disk copy be shared as it is: on disk, equal to the
 * arena's block if any, checked in sub-blocks, all in one slot? */
static int
shareable(const struct objfs_chunk *c)
{
	return c && (c->flags & (OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS |
			OBJFS_CHUNK_DIRTY | OBJFS_CHUNK_ALT |
			OBJFS_CHUNK_PARTIAL)) ==
		(OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS);
}

struct shared_one {
	uint64_t si, di;	/* source and destination chunk */
	unsigned drop;		/* what the destination's old copy gives */
	struct objfs_chunk old;	/* the destination's chunk before */
};

int
local_share(struct objfs_store *s, struct objfs_inode *src,
		uint64_t off_in, struct objfs_inode *dst, uint64_t off_out,
		uint64_t len, uint64_t *done)
{
	uint64_t cs = s->chunk_size, si = off_in >> s->chunk_shift;
	uint64_t di = off_out >> s->chunk_shift, n = 0, seq, k, bytes = 0;
	struct objfs_attr a = dst->attr;
	struct objfs_meta_txn *t;
	struct shared_one *v;
	int rc = 0;

	objfs_inode_assert_locked(src);
	objfs_inode_assert_locked(dst);
	*done = 0;
	if ((off_in | off_out) & (cs - 1) || off_in >= src->attr.size ||
	    dst->gone || src->gone)
		return 0;
	/* Whole chunks, and a last one that ends the source, when nothing
	 * of the destination lies past it in that chunk. */
	if (len > src->attr.size - off_in)
		len = src->attr.size - off_in;
	if (off_out + len > s->max_size)
		return 0;
	n = len >> s->chunk_shift;
	if ((len & (cs - 1)) && off_in + len == src->attr.size &&
	    dst->attr.size <= off_out + len)
		n++;
	if (n == 0)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	rc = objfs_meta_begin(s->meta, OBJFS_META_WRITE, &t);
	if (rc < 0) {
		free(v);
		return rc;
	}
	for (k = 0; k < n; k++) {
		struct objfs_chunk *c = objfs_chunkmap_get(&src->chunks, si + k);
		struct objfs_chunk *d = objfs_chunkmap_get(&dst->chunks, di + k);
		struct shared_one *x = &v[k];
		unsigned char tab[4 * OBJFS_SUMS_MAX];
		struct objfs_chunk_rec r;
		uint64_t home, cnt;

		/* A hole is copied by the caller, and anything else that is
		 * not a clean disk copy (the flush before failed, or it
		 * changed since). */
		if (!shareable(c))
			break;
		/* The record as it is, sums included: the destination's is
		 * the same but for its key and the home. */
		rc = local_chunk_rec(s, src, si + k, c, &r, tab, NULL);
		if (rc < 0)
			break;
		home = local_copy_home(src, c);
		rc = objfs_meta_share_get(t, home, c->slot, &cnt);
		if (rc == -ENOENT && c->home)
			rc = -EIO;	/* a shared record with no count */
		if (rc == -ENOENT)
			cnt = 1;	/* the source's record alone */
		else if (rc < 0)
			break;
		x->si = si + k;
		x->di = di + k;
		x->drop = 0;
		x->old = d ? *d : (struct objfs_chunk){ 0 };
		/* The source's record stays as it is; the destination's names
		 * the home, unless that is the destination itself. */
		r.home = home == dst->ino ? 0 : home;
		if ((rc = objfs_meta_share_put(t, home, c->slot, cnt + 1)) < 0)
			break;
		/* The destination's old copy, if any, loses a reference. */
		if (d && (rc = local_drop(s, t, dst, d, &x->drop)) < 0)
			break;
		if (!(d && (d->flags & OBJFS_CHUNK_ONDISK)))
			a.nrec++;
		if ((rc = objfs_meta_chunk_put(t, dst->ino, di + k, &r)) < 0)
			break;
		bytes = min64(len, (k + 1) << s->chunk_shift);
	}
	n = k;
	if (n == 0 || rc < 0) {
		/* Nothing to share, or a failure after some chunks were put
		 * in this transaction: abort it all (nothing changed), and
		 * the caller copies bytes instead, which reports any damage
		 * as a read would. */
		objfs_meta_abort(t);
		free(v);
		return rc == -ENOMEM ? rc : 0;
	}
	if (off_out + bytes > a.size)
		a.size = off_out + bytes;
	objfs_attr_touch_mc(&a);
	rc = objfs_meta_inode_put(t, &a);
	/* The first shared copy marks the index: an objfs that knows
	 * nothing of sharing must refuse it from now on. */
	if (rc == 0 && s->schema < OBJFS_META_SCHEMA_SHARE &&
	    (rc = objfs_meta_super_put(t, OBJFS_SUPER_SCHEMA,
			OBJFS_META_SCHEMA_SHARE)) == 0)
		rc = objfs_meta_super_put(t, OBJFS_SUPER_SUB_SHIFT,
				s->sub_shift);
	rc = objfs_commit_or_abort(t, rc, &seq);
	if (rc < 0) {
		free(v);
		return rc == -ENOMEM ? rc : 0;
	}
	s->schema = OBJFS_META_SCHEMA_SHARE;
	for (k = 0; k < n; k++) {
		struct shared_one *x = &v[k];
		struct objfs_chunk *c = objfs_chunkmap_get(&src->chunks, x->si);
		struct objfs_chunk *d = objfs_chunkmap_add(&dst->chunks, x->di);

		local_release(s, dst, &x->old, x->drop, seq);
		if (!d) {
			/* No memory for the entry: the record is in the
			 * index, so the next load finds it; until then the
			 * chunk reads as before.  Mark the object for it. */
			objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 ": out of "
				"memory for chunk %" PRIu64 " of a copy",
				dst->ino, x->di);
			continue;
		}
		/* After the commit: a daemon killed before it adopts the old
		 * block, and the copy did not happen. */
		objfs_chunkmap_drop(&dst->chunks, x->di, d, s->arena);
		d->flags = c->flags & (OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS);
		d->home = local_copy_home(src, c) == dst->ino ? 0 :
			local_copy_home(src, c);
		d->slot = c->slot;
		d->csum = c->csum;
		d->disk_len = c->disk_len;
		d->rec_seq = seq;
		d->dirty_lo = UINT32_MAX;
		objfs_bits_zero(d->dsub);
		objfs_bits_zero(d->valid);
	}
	atomic_fetch_add(&s->shared_chunks, n);
	free(v);
	dst->attr = a;
	dst->attr_dirty = 0;
	*done = bytes;
	return 0;
}

/* ---- the store's figures (status) ------------------------------------- */

/* The figures' walk of the index: the shared copies (sorted by the share
 * DB's key order), each counted once, at its longest record. */
struct fig_walk {
	struct objfs_status_figures *f;
	struct fig_copy { uint64_t home, slot; uint32_t len; } *v;
	size_t n, cap;
};

static int
fig_share(void *arg, uint64_t home, uint64_t slot, uint64_t n)
{
	struct fig_walk *w = arg;

	if (n > 1)
		w->f->shared_now++;
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct fig_copy *v = realloc(w->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->v = v;
		w->cap = cap;
	}
	w->v[w->n++] = (struct fig_copy){ home, slot, 0 };
	return 0;
}

static int
fig_copy_cmp(const void *a, const void *b)
{
	const struct fig_copy *x = a, *y = b;

	if (x->home != y->home)
		return x->home < y->home ? -1 : 1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static int
add_chunk(void *arg, uint64_t ino, uint64_t idx,
		const struct objfs_chunk_rec *r)
{
	struct fig_walk *w = arg;
	struct fig_copy key, *p;

	(void)idx;
	if (!r)
		return 0;
	w->f->disk_bytes += r->len;
	w->f->disk_chunks++;
	key.home = r->home ? r->home : ino;
	key.slot = r->slot;
	p = w->n ? bsearch(&key, w->v, w->n, sizeof(*p), fig_copy_cmp) : NULL;
	if (!p)
		w->f->disk_stored += r->len;
	else if (r->len > p->len)
		p->len = r->len;
	return 0;
}

int
local_figures(struct objfs_store *s, struct objfs_status_figures *f)
{
	struct fig_walk w = { f, NULL, 0, 0 };
	struct objfs_meta_txn *t;
	int rc;

	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	/* The share DB walks in key order: sorted for bsearch. */
	rc = objfs_meta_share_all(t, fig_share, &w);
	if (rc == 0)
		rc = objfs_meta_chunk_all(t, add_chunk, &w);
	for (size_t i = 0; rc == 0 && i < w.n; i++)
		f->disk_stored += w.v[i].len;
	free(w.v);
	objfs_meta_abort(t);
	if (rc < 0)
		return rc;
	return objfs_backing_free(s->backing, &f->fs_bytes, NULL, &f->fs_avail);
}
