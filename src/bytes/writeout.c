/* SPDX-License-Identifier: MIT */
/*
 * writeout.c - writing dirty chunks out: fsync and close
 * (objfs_data_flush), the spiller's evictions (objfs_data_evict), and
 * restores ahead of a reader (objfs_data_restore_range).
 *
 * A write-out is one batch of the chunk store (copy.h): each dirty chunk
 * gets a new copy (or only its changed sub-blocks are written, or an
 * equal copy already stored is used), the batch is made durable, and one
 * index commit records the copies with the attributes.  Where the bytes
 * go, and why no crash can lose a copy a record names, is the store's
 * (local.c's header for the backing directory).  What stays here is
 * which chunks, in what batches, and the chunk map and the arena's tags
 * once the commit is made.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/log.h"
#include "src/bytes/data_int.h"

#define FLUSH_BATCH_BYTES	(256ull << 20)

/*
 * Write out the chunks @sel[0..nsel) (ascending indexes) that are still
 * resident and dirty, and the attributes.  On error the chunks written so
 * far are recorded and the rest stay dirty in the arena.
 */
static int
writeout(struct objfs_store *s, struct objfs_inode *ip, const uint64_t *sel,
		size_t nsel, int evicting, int nodup)
{
	const struct objfs_copy_ops *cs = s->copy;
	struct objfs_copy_batch *b = NULL;
	struct objfs_meta_txn *t;
	struct objfs_attr a;
	size_t n = 0;
	uint64_t seq, added = 0, i;
	struct objfs_chunk *c;
	int rc = 0, r;

	/* An object whose records left the index gets none back: not its
	 * attributes, and no chunk (its map was emptied when it went, so
	 * there is none to write; were there one, it stays unwritten). */
	if (ip->gone) {
		ip->attr_dirty = 0;
		return nsel ? -ENOENT : 0;
	}
	if (nsel && (rc = cs->batch_new(s, ip, sel, nsel, evicting, &b)) < 0)
		goto out;
	for (size_t k = 0; k < nsel; k++) {
		uint32_t len;

		i = sel[k];
		c = objfs_chunkmap_get(&ip->chunks, i);
		if (!c || !c->cap || !(c->flags & OBJFS_CHUNK_DIRTY))
			continue;
		len = (uint32_t)min64(c->cap, data_extent_in_file(s, ip, i));
		rc = cs->put_subs(b, i, c, len);
		if (rc < 0)
			break;
		if (rc > 0) {
			rc = 0;
			continue;
		}
		/* Written whole: a block with only some sub-blocks gets the
		 * rest from its copy first. */
		rc = data_complete(s, ip, i, c);
		if (rc == 0)
			rc = cs->put(b, i, c, len, nodup);
		if (rc < 0)
			break;
	}
	n = b ? cs->batch_count(b) : 0;
	/* The records must never reach the disk before the copies. */
	r = n ? cs->batch_sync(b) : 0;
	if (r < 0) {
		n = 0;
		rc = rc ? rc : r;
	}
	if (rc < 0)
		objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64
			": writing out to the %s store: %s",
			ip->ino, cs->name, strerror(-rc));
	if (n == 0 && rc < 0)
		goto out;
	/* Record what did reach the store, even after an error. */
	a = ip->attr;
	r = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (r == 0) {
		if (n)
			r = cs->batch_record(b, t, &added);
		a.nrec += added;
		if (r == 0)
			r = objfs_meta_inode_put(t, &a);
		r = objfs_commit_or_abort(t, r, &seq);
	}
	if (r < 0) {
		if (b)
			cs->batch_undo(b);
		rc = rc ? rc : r;
		goto out;
	}
	if (n)
		cs->batch_done(b, seq);
	for (size_t k = 0; k < n; k++) {
		const struct objfs_copy_made *m = cs->batch_entry(b, k);

		if (m->skip)
			continue;	/* stays dirty, written next time */
		c = objfs_chunkmap_get(&ip->chunks, m->idx);
		objfs_chunkmap_set_dirty(&ip->chunks, m->idx, c, 0);
		objfs_bits_zero(c->dsub);
		c->dirty_lo = UINT32_MAX;
		objfs_arena_mark_clean(s->arena, c->off);
		/* A PARTIAL block goes below and never holds the whole chunk:
		 * its tag stays dirty (adopting it so rewrites what is
		 * already there), never clean. */
		if (!(c->flags & OBJFS_CHUNK_PARTIAL))
			objfs_arena_tag_clean(s->arena, c->off, c->csum);
		atomic_fetch_add(&s->written_out_chunks, 1);
		if (m->subs)
			atomic_fetch_add(&s->sub_writeouts, 1);
		if (m->dup) {
			atomic_fetch_add(&s->dedup_chunks, 1);
			atomic_fetch_add(&s->made_durable_bytes, m->len);
		} else {
			atomic_fetch_add(&s->written_out_bytes, m->written);
			atomic_fetch_add(&s->made_durable_bytes, m->written);
		}
		/* A block that held only the sub-blocks written has nothing
		 * else to give: the chunk is in the store alone now. */
		if (c->flags & OBJFS_CHUNK_PARTIAL) {
			objfs_chunkmap_drop(&ip->chunks, m->idx, c, s->arena);
			objfs_bits_zero(c->valid);
		}
	}
	ip->attr.nrec = a.nrec;
	if (rc == 0)
		ip->attr_dirty = 0;
	/* An equal copy that went between the read and the commit: those
	 * chunks are written as any other, now (a caller that is told all
	 * is written must not find one still dirty). */
	if (rc == 0 && !nodup) {
		uint64_t *again = NULL;
		size_t m = 0;

		for (size_t k = 0; k < n; k++)
			m += cs->batch_entry(b, k)->skip;
		if (m && !(again = malloc(m * sizeof(*again))))
			rc = -ENOMEM;
		m = 0;
		for (size_t k = 0; again && k < n; k++)
			if (cs->batch_entry(b, k)->skip)
				again[m++] = cs->batch_entry(b, k)->idx;
		if (again) {
			cs->batch_free(b);
			b = NULL;
			rc = writeout(s, ip, again, m, evicting, 1);
		}
		free(again);
	}
out:
	if (b)
		cs->batch_free(b);
	return rc;
}

int
objfs_data_flush(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_chunk *c;
	uint64_t i, *sel = NULL;
	size_t n = 0, cap = 0, batch;
	int rc;

	objfs_inode_assert_locked(ip);
	if (ip->fenced)
		return -EIO;	/* shared mode: its lease is lost */
	if (!ip->chunks.ndirty && !ip->attr_dirty)
		return 0;
	/* The dirty chunks only: the walk skips the clean parts of the map. */
	if (ip->chunks.ndirty) {
		cap = ip->chunks.ndirty;
		sel = malloc(cap * sizeof(*sel));
		if (!sel)
			return -ENOMEM;
	}
	OBJFS_CHUNKMAP_EACH_DIRTY(&ip->chunks, 0, i, c)
		if (c->cap && n < cap)
			sel[n++] = i;
	/* In batches of about 256 MiB, each flushed and committed: what a
	 * long write-out has done shows in dirty_bytes (objfsctl sync's
	 * progress), and its list of written chunks stays small. */
	batch = (size_t)(FLUSH_BATCH_BYTES >> s->chunk_shift);
	if (batch < 16)
		batch = 16;
	rc = writeout(s, ip, sel, n < batch ? n : batch, 0, 0);
	for (size_t k = batch; rc == 0 && k < n; k += batch)
		rc = writeout(s, ip, sel + k, n - k < batch ? n - k : batch, 0,
				0);
	free(sel);
	return rc;
}

/* Write out the dirty chunks among @v (victims of @ip chosen by the clock,
 * in ascending chunk order) and free their blocks; *freed gets the bytes
 * freed. */
int
objfs_data_evict(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_arena_victim *v, int n, uint64_t *freed)
{
	uint64_t sel[OBJFS_EVICT_MAX];
	size_t nsel = 0;
	int rc = 0;

	objfs_inode_assert_locked(ip);
	*freed = 0;
	assert(n <= OBJFS_EVICT_MAX);
	for (int k = 0; k < n; k++) {
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, v[k].idx);

		if (!c || !c->cap || c->off != v[k].off)
			continue;	/* changed since the clock chose it */
		if (c->flags & OBJFS_CHUNK_DIRTY)
			sel[nsel++] = v[k].idx;
	}
	if (nsel) {	/* in the order of @v: ascending */
		rc = writeout(s, ip, sel, nsel, 1, 0);
		if (rc == 0)
			atomic_fetch_add(&s->evictions, 1);
	}
	for (int k = 0; k < n; k++) {
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, v[k].idx);

		if (!c || !c->cap || c->off != v[k].off ||
		    (c->flags & OBJFS_CHUNK_DIRTY) ||
		    !(c->flags & OBJFS_CHUNK_ONDISK))
			continue;
		*freed += c->cap;
		objfs_chunkmap_drop(&ip->chunks, v[k].idx, c, s->arena);
	}
	return rc;
}

/* Restore the spilled chunks of [idx, idx+n) while the arena has room for
 * them below the restore limit. */
void
objfs_data_restore_range(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		uint64_t n)
{
	struct objfs_arena_stats st;
	struct objfs_chunk *c;
	uint64_t i;

	objfs_inode_assert_locked(ip);
	OBJFS_CHUNKMAP_EACH(&ip->chunks, idx, i, c) {
		if (i >= idx + n)
			break;
		if (objfs_chunk_state(c) != OBJFS_CHUNK_SPILLED)
			continue;
		objfs_arena_get_stats(s->arena, &st);
		if (st.used + s->chunk_size > s->restore_limit)
			return;
		if (data_restore(s, ip, i, c, 0) < 0)
			return;
	}
}
