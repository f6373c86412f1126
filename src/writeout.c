/* SPDX-License-Identifier: MIT */
/*
 * writeout.c - writing dirty chunks out: fsync and close
 * (objfs_data_flush), the spiller's evictions (objfs_data_spill_evict),
 * and restores ahead of a reader (objfs_data_spill_restore).
 *
 * Write-out is copy-on-write, so that no crash, at any instant, loses a
 * disk copy the index pointed at:
 *	1. each dirty chunk goes to a free slot of the backing file, never
 *	   to the slot of a copy that a record, durable or not, points at
 *	   (its all-zero 4 KiB blocks punched there, not written: spill.c);
 *	2. fdatasync the backing file (and, for a new file, the directory):
 *	   the index must never reach the disk before what it points to;
 *	3. one index commit puts the new records and the attributes;
 *	4. the old slots are given back (punched) only once that commit is
 *	   durable (objfs_data_release, space.c), since until then a machine
 *	   crash would bring their records back.
 * A daemon killed between 1 and 3 leaves the old records, pointing at
 * intact old copies; a torn write can only tear a slot no record needs.
 * The two exceptions write where no durable record reads: an append in
 * place after a copy's durable end, and sub-blocks into a chunk's second
 * slot (design.md, "Write-out").
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/csum.h"
#include "base/log.h"
#include "base/sync.h"
#include "data_int.h"

/* A chunk written out, not yet recorded. */
struct written {
	uint64_t idx, slot, csum;
	uint32_t len;
	int tail;		/* into its own slot, after its copy */
	int subs;		/* only its changed sub-blocks, at their other
				 * place (slot or alt.slot) */
	int new_alt;		/* ... into a second slot taken for it */
	int dup;		/* not written: an equal copy is on disk
				 * already, slot @slot of object @home's
				 * file (share.c) */
	int skip;		/* (dup) gone before the commit: not recorded,
				 * the chunk stays dirty */
	uint64_t home;		/* (dup) */
	unsigned drop;		/* what its old copy gives (share.c) */
	unsigned nsubs;		/* ... how many */
	struct objfs_alt alt;	/* (subs) the second slot, and the map */
	unsigned char tab[4 * OBJFS_SUMS_MAX];	/* its sub-block sums */
};

/* Changed sub-blocks at most, of a chunk's, for a write-out of those
 * alone: beyond this, writing the whole chunk to a new slot costs little
 * more and leaves one slot. */
#define SUBS_MAX_PART	4	/* a quarter of the sub-blocks */
#define FLUSH_BATCH_BYTES	(256ull << 20)

/*
 * Write only the changed sub-blocks of chunk @i (@c) into @x, at the
 * places of the chunk's two slots their current versions are not at.
 * Only when the chunk's record is durable: then no older record can come
 * back in a crash, and the other places hold bytes no record needs.  1
 * when done, 0 when the whole chunk is to be written instead, or -errno.
 */
static int
write_subs(struct objfs_store *s, struct objfs_inode *ip, int fd, uint64_t i,
		struct objfs_chunk *c, struct written *x, uint64_t nchunks,
		uint64_t durable)
{
	uint32_t n = objfs_nsums(x->len, s->sub_shift);
	unsigned char otab[4 * OBJFS_SUMS_MAX];
	struct objfs_chunk_rec r;
	unsigned k = objfs_bits_count(c->dsub);
	int rc;

	/* Never into a shared copy (share.c). */
	if ((c->flags & (OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS)) !=
			(OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS) ||
	    x->len != c->disk_len || c->rec_seq > durable || k == 0 ||
	    k > n / SUBS_MAX_PART || data_copy_shared(s, ip, c) != 0)
		return 0;
	/* The record's sums stand for the sub-blocks not written, and name
	 * the second slot, if there is one.  Without them (logged), the
	 * chunk is written whole, as ever. */
	if (data_chunk_rec(s, ip, i, c, &r, otab, &x->alt) < 0)
		return 0;
	x->new_alt = !(c->flags & OBJFS_CHUNK_ALT);
	if (x->new_alt) {
		objfs_bits_zero(x->alt.map);
		rc = objfs_slots_alloc(&ip->slots, nchunks, nchunks,
				&x->alt.slot);
		if (rc < 0)
			return rc;
	}
	x->slot = c->slot;
	rc = objfs_spill_write_subs(fd, x->slot, &x->alt, s->chunk_size,
			objfs_arena_ptr(s->arena, c->off), x->len, s->sub_shift,
			c->dsub, otab, x->tab, &x->csum);
	if (rc < 0 && x->new_alt)
		objfs_slots_put(&ip->slots, x->alt.slot);
	x->nsubs = k;
	return rc < 0 ? rc : 1;
}

/* How many of the chunks @sel[0..n) write_subs() would write as
 * sub-blocks, but for their records not being durable; each PARTIAL one
 * counts 4 (written whole, it must read its other sub-blocks first). */
static unsigned
subs_waiting(struct objfs_store *s, struct objfs_inode *ip,
		const uint64_t *sel, size_t n, uint64_t durable)
{
	unsigned w = 0;

	for (size_t k = 0; k < n; k++) {
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, sel[k]);
		unsigned d;

		if (!c || !c->cap || !(c->flags & OBJFS_CHUNK_DIRTY) ||
		    (c->flags & (OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS)) !=
			(OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS) || c->home ||
		    c->rec_seq <= durable)
			continue;
		d = objfs_bits_count(c->dsub);
		if (d && d <= objfs_nsums(c->disk_len, s->sub_shift) /
				SUBS_MAX_PART)
			w += (c->flags & OBJFS_CHUNK_PARTIAL) ? 4 : 1;
	}
	return w;
}

/* A write-out that is not to be recorded: the slot it took goes back. */
static void
put_back(struct objfs_inode *ip, const struct written *x)
{
	if (x->subs) {
		if (x->new_alt)
			objfs_slots_put(&ip->slots, x->alt.slot);
	} else if (!x->tail && !x->dup) {
		objfs_slots_put(&ip->slots, x->slot);
	}
}

/*
 * Write out the chunks @sel[0..nsel) (ascending indexes) that are still
 * resident and dirty, in the order described at the top of this file,
 * and the attributes.  On error the chunks written so far are recorded
 * and the rest stay dirty in the arena.
 */
static int
writeout(struct objfs_store *s, struct objfs_inode *ip, const uint64_t *sel,
		size_t nsel, int evicting, int nodup)
{
	uint64_t nchunks = (ip->attr.size + s->chunk_size - 1) >> s->chunk_shift;
	struct written *w = NULL;
	struct objfs_meta_txn *t;
	struct objfs_attr a;
	size_t n = 0;
	uint64_t seq, added = 0, durable = objfs_meta_durable_seq(s->meta), i;
	struct objfs_chunk *c;
	int rc = 0, fd = -1, r;

	/* An object whose records left the index gets none back: not its
	 * attributes, and no chunk (its map was emptied when it went, so
	 * there is none to write; were there one, it stays unwritten). */
	if (ip->gone) {
		ip->attr_dirty = 0;
		return nsel ? -ENOENT : 0;
	}
	if (nsel) {
		w = malloc(nsel * sizeof(*w));
		fd = w ? data_backing_fd(s, ip, 1, NULL) : -ENOMEM;
		if (fd < 0) {
			rc = fd;
			goto out_clear;
		}
	}
	/* Chunks that could be written as a few sub-blocks but whose
	 * records are not durable yet (rewritten within the last second, as
	 * random writes beyond the arena do, or loaded since the last
	 * flush) are made durable first, with one flush of the journal:
	 * otherwise each is written whole, and one with only some
	 * sub-blocks in the arena (PARTIAL) must first read the rest.  An
	 * eviction does so for any; an fsync, which pays its own flush at
	 * the end, only when that spares more than one whole chunk. */
	if (subs_waiting(s, ip, sel, nsel, durable) > (evicting ? 0u : 1u) &&
	    objfs_meta_sync(s->meta) == 0)
		durable = objfs_meta_durable_seq(s->meta);
	for (size_t k = 0; k < nsel; k++) {
		struct written *x = &w[n];

		i = sel[k];
		c = objfs_chunkmap_get(&ip->chunks, i);
		if (!c || !c->cap || !(c->flags & OBJFS_CHUNK_DIRTY))
			continue;
		x->idx = i;
		x->len = (uint32_t)min64(c->cap, data_extent_in_file(s, ip, i));
		x->subs = x->new_alt = x->dup = x->skip = 0;
		x->home = 0;
		rc = write_subs(s, ip, fd, i, c, x, nchunks, durable);
		if (rc < 0)
			break;
		if (rc > 0) {
			x->subs = 1;
			x->tail = 0;
			rc = 0;
			n++;
			continue;
		}
		/* Written whole: a block with only some sub-blocks gets the
		 * rest from disk first. */
		rc = data_complete(s, ip, i, c);
		if (rc < 0)
			break;
		/* (Not with a second slot: the bytes before the copy's end
		 * are not all in the first.) */
		x->tail = (c->flags & OBJFS_CHUNK_ONDISK) &&
			!(c->flags & OBJFS_CHUNK_ALT) &&
			c->dirty_lo >= c->disk_len && x->len > c->disk_len &&
			c->rec_seq <= durable && data_copy_shared(s, ip, c) == 0;
		if (x->tail) {
			/* It only grew since its disk copy, and its record is
			 * durable (so no older, longer one of this slot can
			 * come back): the new bytes go after that copy, in
			 * its own slot.  Nothing a record needs is changed:
			 * the partial block before them is written with the
			 * bytes it holds (sector writes are whole or not at
			 * all). */
			x->slot = c->slot;
			rc = objfs_spill_write_tail(fd, x->slot, s->chunk_size,
					objfs_arena_ptr(s->arena, c->off),
					c->disk_len & ~(OBJFS_SPILL_ALIGN - 1),
					x->len, s->sub_shift, x->tab, &x->csum);
			if (rc < 0)
				break;
			n++;
			continue;
		}
		/* Its sums first: a copy with the same bytes may be on disk
		 * already (dedup), and then nothing is written. */
		x->csum = objfs_chunk_csum(objfs_arena_ptr(s->arena, c->off),
				x->len, s->sub_shift, x->tab);
		if (s->dedup && !nodup && x->len && data_dedup_find(s, ip, c,
				objfs_arena_ptr(s->arena, c->off), x->len,
				x->csum, &x->home, &x->slot)) {
			x->dup = 1;
			n++;
			continue;
		}
		/* Slot i if free; never the one a record points at. */
		rc = objfs_slots_alloc(&ip->slots, i, nchunks, &x->slot);
		if (rc < 0)
			break;
		rc = objfs_spill_write_raw(fd, x->slot, s->chunk_size,
				objfs_arena_ptr(s->arena, c->off), x->len);
		if (rc < 0) {
			objfs_slots_put(&ip->slots, x->slot);
			break;
		}
		n++;
	}
	/* Direct I/O wrote whole blocks: when the last slot's copy ends the
	 * file, cut the padding, so that an object written out once is a
	 * file holding exactly its bytes. */
	for (size_t k = 0; k < n; k++)
		if (!w[k].subs && !w[k].dup &&
		    w[k].slot + 1 == objfs_slots_end(&ip->slots) &&
		    ftruncate(fd, (off_t)((w[k].slot << s->chunk_shift) +
				w[k].len)) < 0 && rc == 0)
			rc = -errno;
	/* The records must never reach the disk before the bytes, nor
	 * before a new file's name. */
	if (n && fdatasync(fd) < 0)
		r = -errno;
	else if (n && ip->bfile_new &&
		 (r = objfs_backing_sync_dir(s->backing)) == 0)
		ip->bfile_new = 0;
	else
		r = 0;
	if (r < 0) {
		for (size_t k = 0; k < n; k++)
			put_back(ip, &w[k]);
		n = 0;
		rc = rc ? rc : r;
	}
	if (rc < 0)
		objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64
			": writing to the backing directory: %s",
			ip->ino, strerror(-rc));
	if (n == 0 && rc < 0)
		goto out_clear;
	/* Record what did reach the disk, even after an error. */
	a = ip->attr;
	r = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (r == 0) {
		for (size_t k = 0; r == 0 && k < n; k++) {
			struct written *x = &w[k];
			struct objfs_chunk_rec rec = { x->csum, x->slot,
				x->len, s->sub_shift, x->tab, x->subs,
				x->alt.slot, { 0 },
				x->home == ip->ino ? 0 : x->home };

			objfs_bits_copy(rec.map, x->alt.map);
			c = objfs_chunkmap_get(&ip->chunks, x->idx);
			/* An equal copy found: take a reference on it, if it
			 * is still there as it was read. */
			if (x->dup) {
				r = data_dedup_claim(t, x->home, x->slot,
						x->csum, x->len);
				x->skip = r == 0;
				if (r <= 0)
					continue;
				r = 0;
			}
			/* A whole write leaves the old copy: it loses this
			 * record's reference (a shared one may stay). */
			x->drop = 0;
			if (!x->tail && !x->subs)
				r = data_copy_drop(s, t, ip, c, &x->drop);
			/* What the copy holds, for later dedup: a new one,
			 * one that grew; none for one whose sub-blocks
			 * change in place. */
			if (r == 0 && x->subs)
				r = objfs_meta_content_del(t, ip->ino, c->slot);
			else if (r == 0 && !x->dup && s->dedup)
				r = objfs_meta_content_set(t, ip->ino, x->slot,
						x->csum, x->idx);
			if (r == 0)
				r = objfs_meta_chunk_put(t, ip->ino, x->idx,
						&rec);
			added += !(c->flags & OBJFS_CHUNK_ONDISK);
		}
		a.nrec += added;
		if (r == 0)
			r = objfs_meta_inode_put(t, &a);
		r = data_commit_or_abort(t, r, &seq);
	}
	if (r < 0) {
		for (size_t k = 0; k < n; k++)
			put_back(ip, &w[k]);
		rc = rc ? rc : r;
		goto out_clear;
	}
	for (size_t k = 0; k < n; k++) {
		if (w[k].skip)
			continue;	/* stays dirty, written next time */
		c = objfs_chunkmap_get(&ip->chunks, w[k].idx);
		/* A whole write took a new slot: the old one, and a second
		 * one, go once this commit is durable.  A write of changed
		 * sub-blocks keeps both slots (the places it did not write
		 * still hold versions the record points at). */
		if (!w[k].tail && !w[k].subs)
			data_copy_release(s, ip, c, w[k].drop, seq);
		c->home = w[k].home == ip->ino ? 0 : w[k].home;
		objfs_chunkmap_set_dirty(&ip->chunks, w[k].idx, c, 0);
		c->flags |= OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS;
		c->flags &= ~OBJFS_CHUNK_ALT;
		if (w[k].subs) {
			c->flags |= OBJFS_CHUNK_ALT;
			c->alt = w[k].alt.slot;
		}
		objfs_bits_zero(c->dsub);
		c->dirty_lo = UINT32_MAX;
		c->slot = w[k].slot;
		c->csum = w[k].csum;
		c->disk_len = w[k].len;
		c->rec_seq = seq;
		objfs_arena_mark_clean(s->arena, c->off);
		/* A PARTIAL block goes below and never holds the whole chunk:
		 * its tag stays dirty (adopting it so rewrites what is
		 * already there), never clean. */
		if (!(c->flags & OBJFS_CHUNK_PARTIAL))
			objfs_arena_tag_clean(s->arena, c->off, c->csum);
		atomic_fetch_add(&s->written_out_chunks, 1);
		if (w[k].subs)
			atomic_fetch_add(&s->sub_writeouts, 1);
		if (w[k].dup) {
			atomic_fetch_add(&s->dedup_chunks, 1);
			atomic_fetch_add(&s->made_durable_bytes, w[k].len);
		} else {
			uint64_t b = w[k].subs ?
				(uint64_t)w[k].nsubs << s->sub_shift : w[k].len;

			atomic_fetch_add(&s->written_out_bytes, b);
			atomic_fetch_add(&s->made_durable_bytes, b);
		}
		/* A block that held only the sub-blocks written has nothing
		 * else to give: the chunk is on disk alone now. */
		if (c->flags & OBJFS_CHUNK_PARTIAL) {
			objfs_chunkmap_drop(&ip->chunks, w[k].idx, c, s->arena);
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
			m += w[k].skip;
		if (m && !(again = malloc(m * sizeof(*again))))
			rc = -ENOMEM;
		m = 0;
		for (size_t k = 0; again && k < n; k++)
			if (w[k].skip)
				again[m++] = w[k].idx;
		if (again)
			rc = writeout(s, ip, again, m, evicting, 1);
		free(again);
	}
out_clear:
	free(w);
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
static int
evict(struct objfs_store *s, struct objfs_inode *ip,
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
static void
restore_range(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
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

/* ---- what the spiller calls (spiller.h) ------------------------------- */

uint64_t
objfs_data_spill_evict(void *store, const struct objfs_arena_victim *v, int n,
		int *err)
{
	struct objfs_store *s = store;
	struct objfs_inode *ip;
	uint64_t freed = 0;
	int rc;

	/* An inode that is not in memory (or still loading) has no blocks
	 * the clock could have chosen: nothing to do. */
	if (objfs_store_iget_cached(s, v[0].ino, &ip) < 0)
		return 0;
	objfs_inode_lock(ip);
	rc = evict(s, ip, v, n, &freed);
	objfs_inode_unlock(ip);
	objfs_store_iput(s, ip);
	if (rc < 0 && *err == 0)
		*err = rc;
	return freed;
}

void
objfs_data_spill_restore(void *store, uint64_t ino, uint64_t idx, uint64_t n)
{
	struct objfs_store *s = store;
	struct objfs_inode *ip;

	if (objfs_store_iget_cached(s, ino, &ip) < 0)
		return;
	objfs_inode_lock(ip);
	restore_range(s, ip, idx, n);
	objfs_inode_unlock(ip);
	objfs_store_iput(s, ip);
}

int
objfs_data_spill_reclaim(void *store)
{
	return objfs_data_reclaim(store);
}

