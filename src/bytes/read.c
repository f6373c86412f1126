/* SPDX-License-Identifier: MIT */
/*
 * read.c - a read of a file's bytes, from the request down to the copies
 * (doc/design.md, "Reads"): the list of pieces a read is served from
 * (struct objfs_iov, store.h: arena blocks, read-ahead slots, buffers of
 * its own, a static zero page), a spilled chunk brought back into the
 * arena (data_restore) or its missing sub-blocks (data_fill_subs,
 * data_complete), and spilled chunks served straight from disk above the
 * low watermark: per-inode read-ahead slots outside the arena, filled
 * ahead of a sequential reader by the restore threads without the
 * inode's lock.  A read passes through this file once: it calls down to
 * the arena and, through s->copy (copy.h), the chunk store, and up to
 * nothing.  Writes that must first read a chunk (data.c) and write-out
 * (writeout.c) call in here.
 *
 * A LOADING slot belongs to its loader; ra->reading counts the loads that
 * read without the lock (the chunk store's read_start/run/end, copy.h),
 * and the slots' buffers and the store's state of the object stay until
 * it is zero (objfs_data_unload waits for it).
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

/* ---- the pieces a read is served from ------------------------------- */

static const unsigned char zeros[65536];

/* Add @n bytes at @p to the iovec list (zeros when @p is NULL, in
 * pieces of the static zero page). */
void
data_iov_add(struct objfs_iov *v, const void *p, size_t n)
{
	while (n) {
		size_t k = p ? n : n < sizeof(zeros) ? n : sizeof(zeros);

		v->iov[v->n].iov_base = (void *)(p ? p : zeros);
		v->iov[v->n].iov_len = k;
		v->n++;
		n -= k;
	}
}

/* Bytes [co, co+n) of a chunk whose valid bytes are src[0..have). */
void
data_iov_add_chunk(struct objfs_iov *v, const unsigned char *src, uint32_t have,
		uint32_t co, uint32_t n)
{
	uint32_t k = 0;

	if (co < have) {
		k = have - co < n ? have - co : n;
		data_iov_add(v, src + co, k);
	}
	data_iov_add(v, NULL, n - k);
}

size_t
objfs_data_iov_max(struct objfs_store *s, size_t len)
{
	/* Per chunk touched: one piece of data and zeros after it; zeros
	 * come in pieces of sizeof(zeros). */
	return 2 * (len / s->chunk_size + 2) + len / sizeof(zeros) + 2;
}

void
objfs_iov_release(struct objfs_iov *v)
{
	for (size_t i = 0; i < v->nbounce; i++)
		free(v->bounce[i]);
	free(v->bounce);
	v->bounce = NULL;
	v->nbounce = 0;
}

/* ---- a chunk in the arena: restored, completed, read ------------------ */

/*
 * Bring the disk copy of chunk @idx into a new block of at least
 * @min_cap bytes.  -ENOSPC when the arena has no such block.
 */
int
data_restore(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, uint32_t min_cap)
{
	uint32_t want = data_extent_in_file(s, ip, idx), cap;
	unsigned char *p;
	uint64_t off;
	int rc;

	if (want < c->disk_len)
		want = c->disk_len;
	if (want < min_cap)
		want = min_cap;
	rc = data_block_alloc(s, ip, idx, want, 0, &off, &cap);
	if (rc < 0)
		return rc;
	p = objfs_arena_ptr(s->arena, off);
	rc = s->copy->read(s, ip, idx, c, p);
	if (rc < 0) {
		objfs_arena_free(s->arena, off, cap);
		return rc;
	}
	memset(p + c->disk_len, 0, cap - c->disk_len);
	c->off = off;
	c->cap = cap;
	c->flags &= ~OBJFS_CHUNK_PARTREAD;
	objfs_chunkmap_set_dirty(&ip->chunks, idx, c, 0);
	c->dirty_lo = UINT32_MAX;
	objfs_bits_zero(c->dsub);
	data_publish(s, ip, idx, c, ip->attr.size, data_mtime_ns(ip));
	atomic_fetch_add(&s->restored_chunks, 1);
	atomic_fetch_add(&s->restored_bytes, c->disk_len);
	return 0;
}

/* A chunk of a damaged object that has neither a block nor a record: it
 * may have had bytes, so it is not a hole. */
int
data_lost(struct objfs_inode *ip, uint64_t idx)
{
	objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 " chunk %" PRIu64 ": its "
		"record is lost; not served as zeros", ip->ino, idx);
	return -EIO;
}

int
objfs_data_read_iov(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t off, size_t len, struct objfs_iov *v)
{
	struct objfs_arena_stats st;
	uint64_t first = off >> s->chunk_shift;
	size_t done;
	int rc, jump;

	objfs_inode_assert_locked(ip);
again:
	objfs_iov_release(v);
	v->n = 0;
	v->len = 0;
	if (off >= ip->attr.size)
		return 0;
	len = (size_t)min64(len, ip->attr.size - off);
	done = 0;
	while (done < len) {
		uint64_t pos = off + done, idx = pos >> s->chunk_shift;
		uint32_t co = (uint32_t)(pos & (s->chunk_size - 1));
		uint32_t n = (uint32_t)min64(len - done, s->chunk_size - co);
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, idx);

		switch (c ? objfs_chunk_state(c) : OBJFS_CHUNK_HOLE) {
		case OBJFS_CHUNK_HOLE:
			if (ip->attr.pad & OBJFS_ATTR_DAMAGED)
				return data_lost(ip, idx);
			data_iov_add(v, NULL, n);
			break;
		case OBJFS_CHUNK_SPILLED:
			/* Restore, bringing the next chunks back ahead of a
			 * reader, unless that would eat into what writers
			 * need, or the reader jumps about and wants a small
			 * part (its sub-blocks are read alone, read.c);
			 * then serve the read from the disk copy. */
			objfs_arena_get_stats(s->arena, &st);
			rc = -ENOSPC;
			jump = ip->rd_next && idx != ip->rd_next &&
				idx + 1 != ip->rd_next &&
				(c->flags & OBJFS_CHUNK_SUMS) &&
				n <= c->disk_len / 2;
			if (jump && !(c->flags & OBJFS_CHUNK_PARTREAD)) {
				c->flags |= OBJFS_CHUNK_PARTREAD;
			} else if (st.used < s->restore_limit) {
				if (!jump)
					objfs_spiller_restore_ahead(s->spiller,
							ip->ino, idx + 1);
				rc = data_restore(s, ip, idx, c, 0);
			}
			if (rc == 0)
				goto resident;
			if (rc != -ENOSPC)
				return rc;
			rc = data_read_from_disk(s, ip, idx, c, first, v, co,
					n);
			if (rc == -EAGAIN)
				goto again;	/* waited: all may have moved */
			if (rc < 0)
				return rc;
			break;
		case OBJFS_CHUNK_RESIDENT_CLEAN:
		case OBJFS_CHUNK_RESIDENT_DIRTY:
			/* A block with only the sub-blocks written: the rest
			 * from disk first. */
			if ((rc = data_complete(s, ip, idx, c)) < 0)
				return rc;
resident:
			objfs_arena_touch(s->arena, c->off, 0);
			data_iov_add_chunk(v, objfs_arena_ptr(s->arena, c->off),
					c->cap, co, n);
			break;
		}
		done += n;
		v->len = done;
		ip->rd_next = idx + 1;
	}
	return 0;
}

/*
 * Bring sub-blocks @first..@last of PARTIAL chunk @idx (@c) that its
 * block does not hold from the disk copy into it, each checked against
 * its sum.  Sub-blocks past the copy hold zeros already.
 */
int
data_fill_subs(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, uint32_t first, uint32_t last)
{
	uint32_t n = objfs_nsums(c->disk_len, s->sub_shift), i, j;
	unsigned char *p;
	int rc;

	if (last >= n)
		last = n ? n - 1 : 0;
	p = objfs_arena_ptr(s->arena, c->off);
	for (i = first; n && i <= last; i = j) {
		uint32_t lo = i << s->sub_shift, hi;

		if (objfs_bits_has(c->valid, i)) {
			j = i + 1;
			continue;
		}
		for (j = i + 1; j <= last && !objfs_bits_has(c->valid, j); j++)
			;
		hi = (uint32_t)min64((uint64_t)j << s->sub_shift, c->disk_len);
		/* Whole blocks: zeros past the copy's end, inside the block
		 * (its block is a whole chunk: make_partial). */
		rc = s->copy->read_part(s, ip, idx, c, p + lo, lo, hi);
		if (rc < 0)
			return rc;
		for (uint32_t k = i; k < j; k++)
			objfs_bits_set(c->valid, k);
	}
	return 0;
}

int
data_complete(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c)
{
	int rc;

	if (!(c->flags & OBJFS_CHUNK_PARTIAL))
		return 0;
	rc = data_fill_subs(s, ip, idx, c, 0, OBJFS_SUMS_MAX - 1);
	if (rc < 0)
		return rc;
	c->flags &= ~OBJFS_CHUNK_PARTIAL;
	objfs_bits_zero(c->valid);
	objfs_arena_tag_whole(s->arena, c->off);
	return 0;
}

/* ---- read-ahead of spilled chunks, outside the arena ---------------- */

/* Bytes of read-ahead buffers per inode, in whole chunks (2 to 8). */
#define RA_BYTES	(8u << 20)
#define RA_MAX_SLOTS	8

static struct objfs_rahead *
ra_get(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_rahead *ra = ip->ra;
	unsigned n = RA_BYTES / s->chunk_size;

	if (ra)
		return ra;
	n = n < 2 ? 2 : n > RA_MAX_SLOTS ? RA_MAX_SLOTS : n;
	ra = calloc(1, sizeof(*ra) + n * sizeof(ra->slot[0]));
	if (!ra)
		return NULL;
	if (objfs_cond_init(&ra->cv) != 0) {
		free(ra);
		return NULL;
	}
	ra->n = n;
	ra->last = UINT64_MAX;
	for (unsigned i = 0; i < n; i++) {
		ra->slot[i].buf = objfs_copy_buf(s->chunk_size);
		if (!ra->slot[i].buf) {
			while (i--)
				free(ra->slot[i].buf);
			pthread_cond_destroy(&ra->cv);
			free(ra);
			return NULL;
		}
	}
	ip->ra = ra;
	return ra;
}

void
data_ra_free(struct objfs_inode *ip)
{
	struct objfs_rahead *ra = ip->ra;

	if (!ra)
		return;
	for (unsigned i = 0; i < ra->n; i++)
		free(ra->slot[i].buf);
	pthread_cond_destroy(&ra->cv);
	free(ra);
	ip->ra = NULL;
}

void
objfs_data_ra_release(struct objfs_inode *ip)
{
	objfs_inode_assert_locked(ip);
	if (!ip->ra)
		return;
	for (unsigned i = 0; i < ip->ra->n; i++)
		if (ip->ra->slot[i].state == OBJFS_RA_LOADING)
			return;
	data_ra_free(ip);
}

/* The slot holding (or loading) the current disk copy of chunk @idx. */
static struct objfs_ra_slot *
ra_find(const struct objfs_store *s, struct objfs_rahead *ra, uint64_t idx,
		const struct objfs_chunk *c)
{
	for (unsigned i = 0; i < ra->n; i++) {
		struct objfs_ra_slot *sl = &ra->slot[i];

		if (sl->state != OBJFS_RA_EMPTY && sl->idx == idx &&
		    sl->key == s->copy->key(c) && sl->csum == c->csum &&
		    sl->len == c->disk_len)
			return sl;
	}
	return NULL;
}

/* A slot to fill, for a request that reads chunks @first to @idx: an
 * empty one, else the ready one furthest behind @first; with @ahead_ok,
 * else the ready one furthest beyond @idx.  NULL when every candidate is
 * loading or in use. */
static struct objfs_ra_slot *
ra_victim(struct objfs_rahead *ra, uint64_t first, uint64_t idx, int ahead_ok)
{
	struct objfs_ra_slot *best = NULL;

	for (unsigned i = 0; i < ra->n; i++) {
		struct objfs_ra_slot *sl = &ra->slot[i];

		if (sl->state == OBJFS_RA_EMPTY)
			return sl;
		if (sl->state != OBJFS_RA_READY)
			continue;
		if (sl->idx < first) {
			if (!best || best->idx >= first || sl->idx < best->idx)
				best = sl;
		} else if (ahead_ok && sl->idx > idx &&
			   (!best || (best->idx > idx && sl->idx > best->idx))) {
			best = sl;
		}
	}
	return best;
}

/* A sequential reader at chunk @idx (this request began at @first):
 * queue loads of the spilled chunks after it into slots it has finished
 * with. */
void
data_ra_ahead(struct objfs_store *s, struct objfs_inode *ip,
		struct objfs_rahead *ra, uint64_t first, uint64_t idx)
{
	int seq = idx == ra->last || idx == ra->last + 1;

	ra->last = idx;
	if (!seq)
		return;
	for (uint64_t j = idx + 1; j < idx + ra->n; j++) {
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, j);
		struct objfs_ra_slot *sl;

		if (!c || objfs_chunk_state(c) != OBJFS_CHUNK_SPILLED ||
		    ra_find(s, ra, j, c))
			continue;
		sl = ra_victim(ra, first, idx, 0);
		if (!sl)
			return;
		sl->state = OBJFS_RA_LOADING;
		sl->idx = j;
		sl->key = s->copy->key(c);
		sl->csum = c->csum;
		sl->len = c->disk_len;
		sl->gen = ++ra->next_gen;
		if (objfs_spiller_read_ahead(s->spiller, ip->ino, j, (int)(sl - ra->slot),
				sl->gen) < 0) {
			sl->state = OBJFS_RA_EMPTY;
			return;
		}
	}
}

/* A verified disk copy of chunk @idx, for a read served from disk. */
static int
load_direct(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, void *buf)
{
	int rc = s->copy->read(s, ip, idx, c, buf);

	if (rc == 0)
		atomic_fetch_add(&s->direct_reads, 1);
	return rc;
}

/* Read chunk @idx into a buffer that belongs to @v alone. */
static int
read_bounce(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, struct objfs_iov *v, uint32_t co,
		uint32_t n)
{
	unsigned char *b;
	void **nb;
	int rc;

	nb = realloc(v->bounce, (v->nbounce + 1) * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	v->bounce = nb;
	b = objfs_copy_buf(s->chunk_size);
	if (!b)
		return -ENOMEM;
	v->bounce[v->nbounce++] = b;
	rc = load_direct(s, ip, idx, c, b);
	if (rc < 0)
		return rc;
	data_iov_add_chunk(v, b, c->disk_len, co, n);
	return 0;
}

/*
 * A reader that jumps about (this chunk is neither the one it read last
 * nor the next) and wants a small part of the copy: read only the
 * sub-blocks that hold bytes [co, co+n), each checked against its sum in
 * the chunk's record, into a buffer of @v's own.  1 when it did; 0 when
 * the whole copy is to be read instead (records from before schema 3
 * have no sums; a part as large as half the copy is read whole, into a
 * slot, for the requests that follow); or -errno.
 */
static int
read_part(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, struct objfs_rahead *ra,
		struct objfs_iov *v, uint32_t co, uint32_t n)
{
	uint32_t hi, base, end, shift = s->sub_shift;
	unsigned char *b;
	void **nb;
	int rc;

	if (!(c->flags & OBJFS_CHUNK_SUMS) || idx == ra->last ||
	    idx == ra->last + 1)
		return 0;
	if (co >= c->disk_len) {	/* past the copy: zeros */
		data_iov_add_chunk(v, NULL, 0, co, n);
		return 1;
	}
	hi = co + n < c->disk_len ? co + n : c->disk_len;
	base = co >> shift << shift;
	end = (uint32_t)min64(((uint64_t)((hi - 1) >> shift) + 1) << shift,
			c->disk_len);
	if (end - base > c->disk_len / 2)
		return 0;
	nb = realloc(v->bounce, (v->nbounce + 1) * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	v->bounce = nb;
	b = objfs_copy_buf(end - base);
	if (!b)
		return -ENOMEM;
	v->bounce[v->nbounce++] = b;
	rc = s->copy->read_part(s, ip, idx, c, b, co, hi);
	if (rc < 0)
		return rc;
	ra->last = idx;
	data_iov_add_chunk(v, b, c->disk_len - base, co - base, n);
	return 1;
}

/*
 * Serve bytes [co, co+n) of spilled chunk @idx from its verified disk
 * copy, into @v.  Slots of chunks from @first on are already in @v, so
 * they are not reused.  -EAGAIN when it waited for a load (the inode lock
 * was dropped, so the caller must start again; it held no pieces, so
 * every wait is followed by progress).
 */
int
data_read_from_disk(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, uint64_t first, struct objfs_iov *v,
		uint32_t co, uint32_t n)
{
	struct objfs_rahead *ra = ra_get(s, ip);
	struct objfs_ra_slot *sl;
	int rc;

	if (!ra)
		return -ENOMEM;
	sl = ra_find(s, ra, idx, c);
	if (!sl && (rc = read_part(s, ip, idx, c, ra, v, co, n)) != 0)
		return rc < 0 ? rc : 0;
	if (!sl) {
		sl = ra_victim(ra, first, idx, 1);
		if (!sl)	/* one read spans more chunks than slots */
			return read_bounce(s, ip, idx, c, v, co, n);
		sl->state = OBJFS_RA_EMPTY;
		rc = load_direct(s, ip, idx, c, sl->buf);
		if (rc < 0)
			return rc;
		sl->idx = idx;
		sl->key = s->copy->key(c);
		sl->csum = c->csum;
		sl->len = c->disk_len;
		sl->state = OBJFS_RA_READY;
	} else if (sl->state == OBJFS_RA_LOADING) {
		/* Waiting drops the lock, which keeps the pieces already in
		 * @v valid: only a request that holds none may wait (and then
		 * start over); others read the chunk themselves. */
		if (v->n)
			return read_bounce(s, ip, idx, c, v, co, n);
		objfs_inode_wait(ip, &ra->cv);
		return -EAGAIN;
	}
	/* The kernel reads a chunk in several requests: each is served from
	 * this copy, not read and checked again. */
	data_iov_add_chunk(v, sl->buf, c->disk_len, co, n);
	if (idx != ra->last)
		data_ra_ahead(s, ip, ra, first, idx);
	return 0;
}

/* Load chunk idx into read-ahead slot @slot if request @gen still wants
 * it (ip->lock held; dropped for the read: the spiller's restore
 * threads, spiller_ops.c). */
void
objfs_data_read_ahead(struct objfs_store *s, struct objfs_inode *ip, int slot,
		uint64_t gen)
{
	struct objfs_rahead *ra = ip->ra;
	struct objfs_copy_read *rd;
	struct objfs_ra_slot *sl;
	struct objfs_chunk *c;
	int rc = -ESTALE;

	objfs_inode_assert_locked(ip);
	if (!ra || slot < 0 || (unsigned)slot >= ra->n)
		return;
	sl = &ra->slot[slot];
	if (sl->state != OBJFS_RA_LOADING || sl->gen != gen)
		return;
	c = objfs_chunkmap_get(&ip->chunks, sl->idx);
	if (c && objfs_chunk_state(c) == OBJFS_CHUNK_SPILLED &&
	    s->copy->key(c) == sl->key && c->csum == sl->csum &&
	    c->disk_len == sl->len &&
	    (rc = s->copy->read_start(s, ip, sl->idx, c, &rd)) == 0) {
		/* The slot is ours while LOADING; the buffers and the store's
		 * state stay while ra->reading says a load is under way
		 * (unloading waits for it); the copy is not given back
		 * before read_end.  Read without the lock, so the reader
		 * copies the chunk before this one meanwhile. */
		ra->reading++;
		objfs_inode_unlock(ip);
		rc = s->copy->read_run(s, rd, sl->buf);
		objfs_inode_lock(ip);
		ra->reading--;
		s->copy->read_end(s, ip, rd);
	}
	/* A failure (a chunk rewritten meanwhile, or a bad copy) leaves the
	 * slot empty: the reader then reads it itself, and reports. */
	if (sl->state == OBJFS_RA_LOADING && sl->gen == gen) {
		sl->state = rc == 0 ? OBJFS_RA_READY : OBJFS_RA_EMPTY;
		if (rc == 0)
			atomic_fetch_add(&s->direct_reads, 1);
	}
	pthread_cond_broadcast(&ra->cv);
}
