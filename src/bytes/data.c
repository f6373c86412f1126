/* SPDX-License-Identifier: MIT */
/*
 * data.c - the bytes of regular files: loading an object, writes,
 * truncation, holes (punch, zero range), fallocate, seeks, adopting a
 * dead daemon's blocks, and deleting an object (objfs_data_doom, _gone,
 * _destroy).  Reads, and bringing a spilled chunk back, are read.c's;
 * writing chunks out writeout.c's.  Where a chunk's durable copy is, and
 * how it is read, written, shared and given back, is the chunk
 * store's (copy.h): this file reaches copies only through s->copy.
 *
 * Every function here is called with the inode's lock held (store_int.h)
 * and touches only that inode, the arena (which locks itself), the index
 * and, through the chunk store, its copies.
 *
 * Truncation and hole punching change records in one commit with the
 * attributes (the inode's count of records, nrec, included); the copies
 * they stop using are dropped in that commit and released, to be given
 * back once it is durable, as write-out's are.  A deleted object's copies
 * go once its deletion is durable.
 *
 * The inode record counts its chunk records (attr.nrec).  Loading finds
 * them all with valid checksums or marks the object damaged
 * (OBJFS_ATTR_DAMAGED): a chunk with neither a block nor a record then
 * reads as EIO, never as zeros.
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

#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/base/sync.h"
#include "src/bytes/data_int.h"


/* Shared mode: do @ip's attributes in the index differ from those it
 * was loaded with (a commit came between two reads)? */
static int
torn(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_meta_txn *t;
	struct objfs_attr a;
	int rc = objfs_meta_begin(s->meta, 0, &t);

	if (rc < 0)
		return 0;
	rc = objfs_meta_inode_get(t, ip->ino, &a);
	objfs_meta_abort(t);
	return rc == 0 && (a.nrec != ip->attr.nrec ||
		a.ctime_sec != ip->attr.ctime_sec ||
		a.ctime_nsec != ip->attr.ctime_nsec);
}

int
objfs_data_load(struct objfs_store *s, struct objfs_inode *ip)
{
	uint64_t n = 0;
	int bad = 0, rc;

	objfs_inode_assert_locked(ip);
	rc = s->copy->load(s, ip, &n, &bad);
	if (rc < 0) {
		objfs_chunkmap_fini(&ip->chunks, s->arena);
		return rc;
	}
	if ((bad || n != ip->attr.nrec) && s->shared && torn(s, ip)) {
		/* Another node's record applied between the caller's read of
		 * the attributes and this read of the chunks: read again. */
		objfs_chunkmap_fini(&ip->chunks, s->arena);
		return -EAGAIN;
	}
	if (bad || n != ip->attr.nrec) {
		objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 ": %" PRIu64 " of its %"
			PRIu64 " chunk records are usable%s; the chunks "
			"without one read as I/O errors", ip->ino, n,
			ip->attr.nrec, bad ? " (others are damaged)" : "");
		ip->attr.pad |= OBJFS_ATTR_DAMAGED;
	}
	if (ip->attr.pad & OBJFS_ATTR_DAMAGED)
		ip->attr.nrec = n;	/* what the records now are */
	return 0;
}

/* Make the block of @c at least @need bytes, keeping its content. */
static int
grow(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, uint32_t need)
{
	uint64_t off;
	uint32_t cap;
	unsigned char *p;
	int rc;

	rc = data_block_alloc(s, ip, idx, need, 1, &off, &cap);
	if (rc < 0)
		return rc;
	p = objfs_arena_ptr(s->arena, off);
	memcpy(p, objfs_arena_ptr(s->arena, c->off), c->cap);
	memset(p + c->cap, 0, cap - c->cap);
	/* The new block is the chunk's before the old one is freed: a
	 * daemon killed in between leaves two, and the newer is taken. */
	if (objfs_arena_published(s->arena, c->off)) {
		uint64_t old = c->off;

		c->off = off;
		data_publish(s, ip, idx, c, ip->attr.size, data_mtime_ns(ip));
		c->off = old;
	}
	objfs_arena_free(s->arena, c->off, c->cap);
	c->off = off;
	c->cap = cap;
	return 0;
}

/*
 * A write of [wlo, need) into spilled chunk @idx (@c), within its disk
 * copy and over at most a quarter of its sub-blocks, does not restore it
 * (a 1 MiB read for a 4 KiB write), unless it continues the inode's last
 * write (@seq) and the arena has room: a writer going through the chunk
 * in order would otherwise read it a sub-block at a time.  (Restoring
 * whenever the arena had room made every other random write restore, in
 * a file larger than the arena: the spiller stops at that very mark.)
 * Otherwise the
 * chunk gets a block of which only the sub-blocks written hold bytes
 * (PARTIAL), those the write covers in part read from disk first.  The
 * write-out then writes them alone (writeout.c), and a read, or anything
 * else that needs the whole chunk, completes it first.  1 when done so,
 * 0 when the chunk is to be restored instead, or -errno.
 */
static int
make_partial(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, uint32_t need, uint32_t wlo, int seq)
{
	uint32_t n = objfs_nsums(c->disk_len, s->sub_shift), want;
	uint32_t first = wlo >> s->sub_shift, last = (need - 1) >> s->sub_shift;
	unsigned char *p;
	int rc;

	if ((c->flags & (OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS)) !=
			(OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS) ||
	    need <= wlo || need > c->disk_len ||
	    last - first + 1 > n / 4 ||
	    (seq && objfs_arena_used(s->arena) < s->restore_limit))
		return 0;
	want = data_extent_in_file(s, ip, idx);
	if (want < c->disk_len)
		want = c->disk_len;
	rc = data_block_alloc(s, ip, idx, want, 1, &c->off, &c->cap);
	if (rc < 0)
		return rc;
	p = objfs_arena_ptr(s->arena, c->off);
	memset(p + c->disk_len, 0, c->cap - c->disk_len);
	c->flags |= OBJFS_CHUNK_PARTIAL;
	objfs_bits_zero(c->valid);
	objfs_bits_zero(c->dsub);
	c->dirty_lo = UINT32_MAX;
	return 1;
}

/* The sub-blocks at the ends of a write of [wlo, need) into PARTIAL
 * chunk @c that it covers only in part: filled from disk first. */
static int
fill_ends(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, uint32_t need, uint32_t wlo)
{
	uint32_t sub = 1u << s->sub_shift, first = wlo >> s->sub_shift,
		 last = (need - 1) >> s->sub_shift;
	int rc = 0;

	if (wlo & (sub - 1))
		rc = data_fill_subs(s, ip, idx, c, first, first);
	if (rc == 0 && (need & (sub - 1)) && need < c->disk_len)
		rc = data_fill_subs(s, ip, idx, c, last, last);
	return rc;
}

/*
 * Make chunk @idx resident with a block covering [0, need), zero-filled
 * where it had no bytes, except [wlo, need) of a new block, which the
 * caller is about to overwrite.  The caller marks it dirty.  A spilled
 * chunk may become PARTIAL instead of restored (make_partial); a PARTIAL
 * one stays so only for another small write within its copy.
 */
static int
make_resident(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, uint32_t need, uint32_t wlo, int seq)
{
	unsigned char *p;
	int rc;

	if (c->cap && (c->flags & OBJFS_CHUNK_PARTIAL)) {
		uint32_t n = objfs_nsums(c->disk_len, s->sub_shift);
		uint64_t m[OBJFS_BITS_WORDS];

		objfs_bits_copy(m, c->valid);

		if (need > wlo && need <= c->disk_len) {
			for (uint32_t i = wlo >> s->sub_shift;
			     i <= (need - 1) >> s->sub_shift; i++)
				objfs_bits_set(m, i);
			if (objfs_bits_count(m) <= n / 4)
				return fill_ends(s, ip, idx, c, need, wlo);
		}
		rc = data_complete(s, ip, idx, c);
		if (rc < 0)
			return rc;
	}
	if (c->cap)
		return c->cap >= need ? 0 : grow(s, ip, idx, c, need);
	if (c->flags & OBJFS_CHUNK_ONDISK) {
		rc = make_partial(s, ip, idx, c, need, wlo, seq);
		if (rc > 0) {
			rc = fill_ends(s, ip, idx, c, need, wlo);
			if (rc < 0)	/* as it was: spilled */
				objfs_chunkmap_drop(&ip->chunks, idx, c,
						s->arena);
			return rc;
		}
		if (rc < 0)
			return rc;
		return data_restore(s, ip, idx, c, need);
	}
	/* A damaged object's chunk without a record may have had bytes:
	 * only a write that replaces all of them may go on. */
	if ((ip->attr.pad & OBJFS_ATTR_DAMAGED) &&
	    (wlo > 0 || need < data_extent_in_file(s, ip, idx)))
		return data_lost(ip, idx);
	rc = data_block_alloc(s, ip, idx, need, 1, &c->off, &c->cap);
	if (rc < 0)
		return rc;
	p = objfs_arena_ptr(s->arena, c->off);
	memset(p, 0, wlo);
	memset(p + need, 0, c->cap - need);
	return 0;
}

/*
 * Give block @f of a dead daemon's arena back to its chunk (mount.c,
 * adopt_blocks; ip->attr.size is already the file's size from the tags).
 * A dirty block is the chunk's newest version; a clean one is kept only
 * if the disk copy it equals is still the record; a PARTIAL one only if
 * the disk copy its other sub-blocks are in still is.  1: kept dirty, 2:
 * kept clean, 0: not the chunk's (the caller frees it).
 */
int
objfs_data_adopt(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_arena_found *f)
{
	uint64_t start = f->idx << s->chunk_shift;
	int dirty = !!(f->flags & OBJFS_ARENA_TAG_DIRTY);
	struct objfs_chunk *c;
	uint32_t in;

	objfs_inode_assert_locked(ip);
	if (f->idx >= (s->max_size >> s->chunk_shift) ||
	    start >= ip->attr.size || f->cap > s->chunk_size)
		return 0;
	c = objfs_chunkmap_get(&ip->chunks, f->idx);
	if (c && c->cap)
		return 0;
	/* A PARTIAL block never holds the whole chunk: never clean (the
	 * write-out leaves its tag dirty; this is the check that says so). */
	if (!dirty && ((f->flags & OBJFS_ARENA_TAG_PARTIAL) ||
	    !(c && (c->flags & OBJFS_CHUNK_ONDISK) &&
	      c->csum == f->csum && f->cap >= c->disk_len)))
		return 0;
	if (dirty && (f->flags & OBJFS_ARENA_TAG_PARTIAL) &&
	    !(c && (c->flags & (OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS)) ==
			(OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS) &&
	      f->cap >= c->disk_len))
		return 0;
	/* A block taken as clean must hold the disk copy's bytes: the
	 * arena outlives its daemon, and damage to it (or a tag that names
	 * the wrong chunk) must not pass for the chunk. */
	if (!dirty) {
		unsigned char tab[4 * OBJFS_SUMS_MAX];
		unsigned shift = (c->flags & OBJFS_CHUNK_SUMS) ?
			s->sub_shift : 0;

		if (objfs_chunk_csum(objfs_arena_ptr(s->arena, f->off),
				c->disk_len, shift, tab) != c->csum) {
			objfs_log(OBJFS_LOG_WARNING, "inode %" PRIu64 " chunk %"
				PRIu64 ": the arena's clean block does not hold "
				"its disk copy's bytes: not adopted (read from "
				"disk)", ip->ino, f->idx);
			return 0;
		}
	}
	if (!c && !(c = objfs_chunkmap_add(&ip->chunks, f->idx)))
		return 0;
	c->off = f->off;
	c->cap = f->cap;
	objfs_arena_set_owner(s->arena, f->off, ip->ino, f->idx);
	if (dirty) {
		objfs_chunkmap_set_dirty(&ip->chunks, f->idx, c, 1);
		c->dirty_lo = 0;	/* what changed is not known */
		objfs_bits_fill(c->dsub);
		if (f->flags & OBJFS_ARENA_TAG_PARTIAL) {
			/* What it holds, all of it taken as changed (a write
			 * adds its changed sub-blocks to the held ones: all
			 * ones here would claim the whole chunk). */
			c->flags |= OBJFS_CHUNK_PARTIAL;
			objfs_bits_copy(c->valid, f->valid);
			objfs_bits_copy(c->dsub, f->valid);
		}
	} else {
		c->dirty_lo = UINT32_MAX;
		objfs_bits_zero(c->dsub);
	}
	/* Block bytes past the end of the file are zero. */
	in = data_extent_in_file(s, ip, f->idx);
	if (in < c->cap)
		memset((unsigned char *)objfs_arena_ptr(s->arena, c->off) + in,
				0, c->cap - in);
	objfs_arena_touch(s->arena, c->off, dirty);
	return dirty ? 1 : 2;
}

int
objfs_data_write(struct objfs_store *s, struct objfs_inode *ip, uint64_t off,
		const void *buf, size_t len, size_t *n_out)
{
	const unsigned char *src = buf;
	size_t done = 0;
	int64_t now = 0;
	uint64_t size;
	int rc = 0, pub, seq = off == ip->wr_end && off > 0;

	objfs_inode_assert_locked(ip);
	/* As far as the largest file size, like a local filesystem. */
	if (off >= s->max_size)
		return -EFBIG;
	if (len > s->max_size - off)
		len = (size_t)(s->max_size - off);
	while (done < len) {
		uint64_t pos = off + done, idx = pos >> s->chunk_shift;
		uint32_t co = (uint32_t)(pos & (s->chunk_size - 1));
		uint32_t n = (uint32_t)min64(len - done, s->chunk_size - co);
		struct objfs_chunk *c;
		unsigned char *p;

		c = objfs_chunkmap_add(&ip->chunks, idx);
		if (!c) {
			rc = -ENOMEM;
			break;
		}
		rc = make_resident(s, ip, idx, c, co + n, co, seq);
		if (rc < 0)
			break;
		p = objfs_arena_ptr(s->arena, c->off);
		pub = objfs_arena_published(s->arena, c->off);
		if (pub)	/* before the bytes change */
			objfs_arena_tag_dirty(s->arena, c->off);
		memcpy(p + co, src + done, n);
		objfs_chunkmap_set_dirty(&ip->chunks, idx, c, 1);
		if (co < c->dirty_lo)
			c->dirty_lo = co;
		data_mark_subs(s, c, co, n);
		if (c->flags & OBJFS_CHUNK_PARTIAL) {	/* held now */
			objfs_bits_or(c->valid, c->dsub);
		}
		if (!now)
			now = objfs_time_ns();
		size = max64(ip->attr.size, pos + n);
		if (pub)
			objfs_arena_tag_write(s->arena, c->off, size, now,
					(c->flags & OBJFS_CHUNK_PARTIAL) ?
					c->valid : NULL);
		else
			data_publish(s, ip, idx, c, size, now);
		objfs_arena_touch(s->arena, c->off, 1);
		done += n;
	}
	if (off + done > ip->attr.size)
		ip->attr.size = off + done;
	ip->wr_end = off + done;
	*n_out = done;
	return rc;
}

int
objfs_data_truncate(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t size, struct objfs_attr *a)
{
	uint64_t keep = (size + s->chunk_size - 1) >> s->chunk_shift;
	uint32_t tail = (uint32_t)(size & (s->chunk_size - 1));
	struct objfs_chunk *c = NULL;
	struct objfs_meta_txn *t;
	uint64_t nrec = ip->attr.nrec, cut = 0, seq, i, k;
	struct objfs_copy_cut *cutc = NULL;
	unsigned *what = NULL;
	struct objfs_chunk *e;
	int rc, shorten = 0, slot;

	objfs_inode_assert_locked(ip);
	if (size > s->max_size)
		return -EFBIG;
	if (size < ip->attr.size) {
		OBJFS_CHUNKMAP_EACH(&ip->chunks, keep, i, e)
			cut += !!(e->flags & OBJFS_CHUNK_ONDISK);
		if (tail)
			c = objfs_chunkmap_get(&ip->chunks, keep - 1);
		/* The last chunk's disk copy now ends at @tail: its record
		 * must not bring back the bytes after it. */
		shorten = c && (c->flags & OBJFS_CHUNK_ONDISK) &&
			c->disk_len > tail;
		if (c && (rc = data_complete(s, ip, keep - 1, c)) < 0)
			return rc;
		if (shorten && (rc = s->copy->cut_prepare(s, ip, keep - 1, c,
				tail, &cutc)) < 0)
			return rc;
	}
	a->size = size;
	a->nrec = nrec - cut;
	if (size == 0)
		a->pad &= ~OBJFS_ATTR_DAMAGED;	/* nothing left to lose */
	/* From the commit until the arena's tags are cut, a daemon that
	 * adopts the arena must finish the cut itself. */
	slot = objfs_arena_intent(s->arena, ip->ino, OBJFS_INTENT_TRUNCATE,
			size, 0);
	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (rc < 0) {
		objfs_arena_intent_end(s->arena, slot);
		if (cutc)
			s->copy->cut_free(cutc);
		return rc;
	}
	if (cut && !(what = malloc(cut * sizeof(*what))))
		rc = -ENOMEM;
	/* The copies cut lose a reference each (local_dedup.c). */
	k = 0;
	if (rc == 0)
		OBJFS_CHUNKMAP_EACH(&ip->chunks, keep, i, e)
			if ((e->flags & OBJFS_CHUNK_ONDISK) &&
			    (rc = s->copy->drop(s, t, ip, e, &what[k++])) < 0)
				break;
	if (rc == 0 && cut)
		rc = objfs_meta_chunk_del_from(t, ip->ino, keep);
	if (rc == 0 && shorten)
		rc = s->copy->cut_record(s, t, ip, keep - 1, c, cutc);
	if (rc == 0)
		rc = objfs_meta_inode_put(t, a);
	rc = objfs_commit_or_abort(t, rc, &seq);
	if (rc < 0) {
		free(what);
		if (cutc)
			s->copy->cut_free(cutc);
		objfs_arena_intent_end(s->arena, slot);
		return rc;
	}
	k = 0;
	OBJFS_CHUNKMAP_EACH(&ip->chunks, keep, i, e)
		if (e->flags & OBJFS_CHUNK_ONDISK)
			s->copy->release(s, ip, e, what[k++], seq);
	free(what);
	if (shorten) {
		s->copy->cut_done(c, cutc, seq);
		s->copy->cut_free(cutc);
	}
	if (c && c->cap > tail)
		memset((unsigned char *)objfs_arena_ptr(s->arena, c->off) + tail,
				0, c->cap - tail);
	objfs_chunkmap_cut(&ip->chunks, s->arena, keep);
	/* The blocks left say the file is no longer than this. */
	OBJFS_CHUNKMAP_EACH(&ip->chunks, 0, i, e)
		if (e->cap)
			objfs_arena_tag_cut(s->arena, e->off, size);
	objfs_arena_intent_end(s->arena, slot);
	ip->attr = *a;
	ip->attr_dirty = 0;
	return 0;
}


/*
 * Zero [off, off+len) inside the file: whole chunks become holes, in one
 * index commit (with the attributes); the partial chunks at either end
 * are made resident first, so that once the commit is done nothing can
 * fail.  On error nothing has changed.
 */
static int
zero_range(struct objfs_store *s, struct objfs_inode *ip, uint64_t off,
		uint64_t len)
{
	struct objfs_meta_txn *t = NULL;
	uint64_t end = off + len, ends[2] = { off, end }, seq = 0, idx;
	struct objfs_attr a = ip->attr;
	unsigned *what = NULL;
	size_t nwhat = 0, cwhat = 0;
	struct objfs_chunk *c;
	int rc = 0, slot;

	for (int e = 0; e < 2; e++) {
		uint64_t cs;
		uint32_t in;

		idx = ends[e] >> s->chunk_shift;
		cs = idx << s->chunk_shift;
		c = objfs_chunkmap_get(&ip->chunks, idx);
		if (!c || objfs_chunk_state(c) == OBJFS_CHUNK_HOLE ||
		    (ends[e] == cs && (e == 1 || end >= cs + s->chunk_size)))
			continue;	/* a hole, or whole */
		in = data_extent_in_file(s, ip, idx);
		rc = make_resident(s, ip, idx, c, in ? in : 1, in, 0);
		if (rc < 0)
			return rc;
	}
	/* Until the arena is zeroed too, an adopting daemon finishes it. */
	slot = objfs_arena_intent(s->arena, ip->ino, OBJFS_INTENT_ZERO, off,
			len);
	OBJFS_CHUNKMAP_EACH(&ip->chunks, (off + s->chunk_size - 1) >>
			s->chunk_shift, idx, c) {
		if (((idx + 1) << s->chunk_shift) > end)
			break;
		if (!(c->flags & OBJFS_CHUNK_ONDISK))
			continue;
		if (!t && (rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL,
				&t)) < 0)
			break;
		if (nwhat == cwhat) {
			unsigned *w = realloc(what, (cwhat = cwhat ? 2 * cwhat :
					64) * sizeof(*w));

			if (!w) {
				rc = -ENOMEM;
				break;
			}
			what = w;
		}
		rc = s->copy->drop(s, t, ip, c, &what[nwhat++]);
		if (rc == 0)
			rc = objfs_meta_chunk_del(t, ip->ino, idx);
		if (rc < 0)
			break;
		a.nrec--;
	}
	if (t) {
		if (rc == 0)
			rc = objfs_meta_inode_put(t, &a);
		rc = objfs_commit_or_abort(t, rc, &seq);
	}
	if (rc < 0) {
		free(what);
		objfs_arena_intent_end(s->arena, slot);
		return rc;
	}
	/* Nothing can fail from here on. */
	nwhat = 0;
	OBJFS_CHUNKMAP_EACH(&ip->chunks, off >> s->chunk_shift, idx, c) {
		uint64_t cs = idx << s->chunk_shift;
		uint64_t lo = off > cs ? off - cs : 0, hi;

		if (cs >= end)
			break;
		if (objfs_chunk_state(c) == OBJFS_CHUNK_HOLE)
			continue;
		hi = min64(end, cs + s->chunk_size) - cs;
		if (lo == 0 && hi == s->chunk_size) {
			if (c->flags & OBJFS_CHUNK_ONDISK)
				s->copy->release(s, ip, c, what[nwhat++], seq);
			objfs_chunkmap_drop(&ip->chunks, idx, c, s->arena);
			c->flags = 0;
		} else if (lo < c->cap) {
			objfs_arena_tag_dirty(s->arena, c->off);
			memset((unsigned char *)objfs_arena_ptr(s->arena, c->off)
					+ lo, 0, min64(hi, c->cap) - lo);
			objfs_chunkmap_set_dirty(&ip->chunks, idx, c, 1);
			c->dirty_lo = 0;	/* conservative */
			objfs_bits_fill(c->dsub);
			objfs_arena_touch(s->arena, c->off, 1);
		}
	}
	objfs_arena_intent_end(s->arena, slot);
	free(what);
	ip->attr.nrec = a.nrec;
	return 0;
}

/*
 * fallocate: room in the store for the chunks of [off, end) that have no
 * copy, so that writing them out later cannot fail for want of space
 * (copy.h, reserve).  The arena is not touched, so this works whatever its
 * size.  All or nothing.
 */
static int
reserve_range(struct objfs_store *s, struct objfs_inode *ip, uint64_t off,
		uint64_t end)
{
	return s->copy->reserve(s, ip, off >> s->chunk_shift,
			(end - 1) >> s->chunk_shift);
}

int
objfs_data_fallocate(struct objfs_store *s, struct objfs_inode *ip, int mode,
		uint64_t off, uint64_t len)
{
	uint64_t end = off + len, size = ip->attr.size;
	int rc;

	objfs_inode_assert_locked(ip);
	if (len == 0 || end < off)
		return -EINVAL;
	if (end > s->max_size)
		return -EFBIG;
	switch (mode) {
	case 0:
	case FALLOC_FL_KEEP_SIZE:
		rc = reserve_range(s, ip, off, end);
		if (rc < 0)
			return rc;
		if (mode == 0 && end > size)
			ip->attr.size = end;
		return 0;
	case FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE:
		if (off >= size)
			return 0;
		return zero_range(s, ip, off, min64(end, size) - off);
	case FALLOC_FL_ZERO_RANGE:
	case FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE:
		if (off < size) {
			rc = zero_range(s, ip, off, min64(end, size) - off);
			if (rc < 0)
				return rc;
		}
		if (!(mode & FALLOC_FL_KEEP_SIZE) && end > ip->attr.size)
			ip->attr.size = end;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* How far into its chunk @c's bytes reach: its arena block or its disk
 * copy, whichever is longer (past both, the chunk reads as zeros). */
static uint64_t
chunk_extent(const struct objfs_store *s, const struct objfs_chunk *c)
{
	uint64_t e = c->cap;

	if ((c->flags & OBJFS_CHUNK_ONDISK) && c->disk_len > e)
		e = c->disk_len;
	return e < s->chunk_size ? e : s->chunk_size;
}

/*
 * SEEK_DATA and SEEK_HOLE, at the precision the chunk map knows: a chunk
 * without an entry, or a hole, is a hole; past a chunk's extent (its
 * block or disk copy) the rest of the chunk is a hole too, so a 64 KiB
 * file extended to 1 MiB has its hole from 64 KiB on.  Bytes that read
 * as zeros inside an extent are reported as data, which POSIX allows.
 */
int
objfs_data_seek(struct objfs_store *s, struct objfs_inode *ip, uint64_t off,
		int whence, uint64_t *out)
{
	uint64_t size = ip->attr.size, i, pos = off;
	struct objfs_chunk *c;

	objfs_inode_assert_locked(ip);
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off >= size)
		return -ENXIO;
	OBJFS_CHUNKMAP_EACH(&ip->chunks, off >> s->chunk_shift, i, c) {
		uint64_t start = i << s->chunk_shift, end;

		if (start >= size)
			break;
		if (whence == SEEK_HOLE && start > pos)
			break;			/* a chunk with no entry */
		if (objfs_chunk_state(c) == OBJFS_CHUNK_HOLE) {
			if (whence == SEEK_HOLE)
				break;
			continue;
		}
		end = start + chunk_extent(s, c);
		if (whence == SEEK_DATA) {
			if (end > pos) {
				*out = start > pos ? start : pos;
				return *out < size ? 0 : -ENXIO;
			}
			continue;
		}
		if (end > pos)
			pos = end;
		if (end < start + s->chunk_size)
			break;			/* the rest of this chunk */
	}
	if (whence == SEEK_DATA)
		return -ENXIO;
	*out = pos < size ? pos : size;
	return 0;
}

void
objfs_data_unload(struct objfs_store *s, struct objfs_inode *ip)
{
	objfs_inode_assert_locked(ip);
	/* A load reading without the lock (an unlink of the closed file
	 * can come meanwhile) keeps its buffer and the copy it reads until
	 * it is done. */
	while (ip->ra && ip->ra->reading)
		objfs_inode_wait(ip, &ip->ra->cv);
	data_ra_free(ip);
	if (s->unload_above)
		s->unload_above(s, ip);	/* sealed state (objfs_sealed_unload) */
	objfs_chunkmap_fini(&ip->chunks, s->arena);
	s->copy->unload(s, ip);
}

/* ---- destruction: an object leaves the index ------------------------- */

int
objfs_data_doom(struct objfs_store *s, struct objfs_meta_txn *t,
		struct objfs_inode *ip, struct objfs_copy_doomed **d)
{
	objfs_inode_assert_locked(ip);
	return s->copy->doom(s, t, ip, d);
}

void
objfs_data_gone(struct objfs_store *s, struct objfs_inode *ip, uint64_t seq,
		struct objfs_copy_doomed *d)
{
	objfs_inode_assert_locked(ip);
	objfs_data_unload(s, ip);
	s->copy->gone(s, ip, seq, d);
}

void
objfs_data_doomed_free(struct objfs_store *s, struct objfs_copy_doomed *d)
{
	if (d)
		s->copy->doomed_free(d);
}

int
objfs_data_destroy(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_copy_doomed *d = NULL;
	struct objfs_meta_txn *t;
	uint64_t seq;
	int rc;

	objfs_inode_assert_locked(ip);
	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (rc < 0)
		return rc;
	rc = objfs_data_doom(s, t, ip, &d);
	if (rc < 0) {
		objfs_meta_abort(t);
		return rc;
	}
	rc = objfs_meta_inode_del(t, ip->ino);
	if (rc == -ENOENT)
		rc = 0;
	if (rc == 0)
		rc = objfs_meta_orphan_del(t, ip->ino);
	/* Shared mode: this node's lease of it goes with it. */
	if (rc == 0 && s->shared)
		rc = s->tier_ops->lease(s->tier, t, ip->ino, 0);
	rc = objfs_commit_or_abort(t, rc, &seq);
	if (rc < 0) {
		objfs_data_doomed_free(s, d);
		return rc;
	}
	objfs_data_gone(s, ip, seq, d);
	return 0;
}
