/* SPDX-License-Identifier: MIT */
/*
 * data.c - the bytes of regular files: reads, writes, truncation, holes,
 * and writing chunks out to the backing directory.
 *
 * Every function here is called with the inode's lock held (store_int.h)
 * and touches only that inode, the arena (which locks itself), the
 * backing file and the index.
 *
 * Writing out (objfs_data_flush) keeps this order so that a daemon killed
 * at any instant leaves an index whose every chunk record matches the
 * bytes in the backing file:
 *	1. delete the records of chunks whose disk copy is about to be
 *	   overwritten (commit);
 *	2. pwrite the chunks;
 *	3. (fsync only) fdatasync the backing file;
 *	4. put the new records and the attributes (commit).
 * A chunk caught between 1 and 4 reads as zeros after a crash; never as
 * bytes that fail their checksum.  Truncation deletes records before it
 * gives the backing file's space back, for the same reason.
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

#include "csum.h"
#include "log.h"
#include "store_int.h"

static const unsigned char zeros[65536];

static uint64_t
min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static int
chunk_record(void *arg, uint64_t idx, uint64_t csum, uint32_t len)
{
	struct objfs_inode *ip = arg;
	struct objfs_chunk *c;
	int rc = objfs_chunkmap_ensure(&ip->chunks, idx + 1);

	if (rc < 0)
		return rc;
	c = objfs_chunkmap_get(&ip->chunks, idx);
	c->flags = OBJFS_CHUNK_ONDISK;
	c->csum = csum;
	c->disk_len = len;
	return 0;
}

int
objfs_data_load(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_meta_txn *t;
	int rc = objfs_meta_begin(s->meta, 0, &t);

	if (rc < 0)
		return rc;
	rc = objfs_meta_chunk_list(t, ip->ino, chunk_record, ip);
	objfs_meta_abort(t);
	if (rc < 0)
		objfs_chunkmap_fini(&ip->chunks, s->arena);
	return rc;
}

static int
backing_fd(struct objfs_store *s, struct objfs_inode *ip, int create)
{
	int fd;

	if (ip->bfd >= 0)
		return ip->bfd;
	if (!create && ip->no_file)
		return -ENOENT;
	fd = objfs_backing_file(s->backing, ip->ino, create);
	if (fd >= 0) {
		ip->bfd = fd;
		ip->no_file = 0;
	}
	return fd;
}

/* A block for chunk @idx of @ip, tagged so that the spiller can find it;
 * @dirty says whether its bytes are about to differ from the disk (so the
 * clock never takes it for a clean block in the meantime). */
static int
block_alloc(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		size_t size, int dirty, uint64_t *off, uint32_t *cap)
{
	int rc = objfs_arena_alloc(s->arena, size ? size : 1, off, cap);

	if (rc == 0) {
		objfs_arena_set_owner(s->arena, *off, ip->ino, idx);
		objfs_arena_touch(s->arena, *off, dirty);
		/* Past the high watermark: start the spiller now, so that
		 * writers rarely have to wait for it. */
		if (objfs_arena_used(s->arena) > s->high_bytes)
			objfs_spiller_kick(s);
	}
	return rc;
}

/* Bytes of chunk @idx that lie inside the file. */
static uint32_t
extent_in_file(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx)
{
	uint64_t start = idx << s->chunk_shift;

	if (ip->attr.size <= start)
		return 0;
	return (uint32_t)min64(s->chunk_size, ip->attr.size - start);
}

/* A buffer for a disk copy of @len bytes, aligned for direct I/O. */
static void *
bounce_alloc(uint32_t len)
{
	void *p;

	return posix_memalign(&p, OBJFS_SPILL_ALIGN,
			objfs_spill_span(len ? len : 1)) ? NULL : p;
}

/* Read the disk copy of @c into @buf (disk_len bytes), verifying it. */
static int
read_disk_copy(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, void *buf)
{
	int fd = backing_fd(s, ip, 0);
	int rc;

	if (fd < 0) {
		objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 ": backing file: %s",
			ip->ino, strerror(-fd));
		return -EIO;
	}
	rc = objfs_spill_read(fd, ip->ino, idx, s->chunk_size, buf,
			c->disk_len, c->csum);
	if (rc == -EBADMSG) {
		atomic_fetch_add(&s->csum_failures, 1);
		rc = -EIO;
	}
	return rc;
}

/*
 * Bring the disk copy of chunk @idx into a new block of at least
 * @min_cap bytes.  -ENOSPC when the arena has no such block.
 */
static int
restore(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, uint32_t min_cap)
{
	uint32_t want = extent_in_file(s, ip, idx), cap;
	unsigned char *p;
	uint64_t off;
	int rc;

	if (want < c->disk_len)
		want = c->disk_len;
	if (want < min_cap)
		want = min_cap;
	rc = block_alloc(s, ip, idx, want, 0, &off, &cap);
	if (rc < 0)
		return rc;
	p = objfs_arena_ptr(s->arena, off);
	rc = read_disk_copy(s, ip, idx, c, p);
	if (rc < 0) {
		objfs_arena_free(s->arena, off, cap);
		return rc;
	}
	memset(p + c->disk_len, 0, cap - c->disk_len);
	c->off = off;
	c->cap = cap;
	c->flags &= ~OBJFS_CHUNK_DIRTY;
	atomic_fetch_add(&s->restored_chunks, 1);
	atomic_fetch_add(&s->restored_bytes, c->disk_len);
	return 0;
}

/* Add @n bytes at @p to the iovec list (zeros when @p is NULL, in
 * pieces of the static zero page). */
static void
iov_add(struct objfs_iov *v, const void *p, size_t n)
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
static void
iov_add_chunk(struct objfs_iov *v, const unsigned char *src, uint32_t have,
		uint32_t co, uint32_t n)
{
	uint32_t k = 0;

	if (co < have) {
		k = have - co < n ? have - co : n;
		iov_add(v, src + co, k);
	}
	iov_add(v, NULL, n - k);
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
	pthread_cond_init(&ra->cv, NULL);
	ra->n = n;
	ra->last = UINT64_MAX;
	for (unsigned i = 0; i < n; i++) {
		ra->slot[i].buf = bounce_alloc(s->chunk_size);
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

static void
ra_free(struct objfs_inode *ip)
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
	if (!ip->ra)
		return;
	for (unsigned i = 0; i < ip->ra->n; i++)
		if (ip->ra->slot[i].state == OBJFS_RA_LOADING)
			return;
	ra_free(ip);
}

/* The slot holding (or loading) the current disk copy of chunk @idx. */
static struct objfs_ra_slot *
ra_find(struct objfs_rahead *ra, uint64_t idx, const struct objfs_chunk *c)
{
	for (unsigned i = 0; i < ra->n; i++) {
		struct objfs_ra_slot *sl = &ra->slot[i];

		if (sl->state != OBJFS_RA_EMPTY && sl->idx == idx &&
		    sl->csum == c->csum && sl->len == c->disk_len)
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
static void
ra_ahead(struct objfs_store *s, struct objfs_inode *ip,
		struct objfs_rahead *ra, uint64_t first, uint64_t idx)
{
	int seq = idx == ra->last || idx == ra->last + 1;

	ra->last = idx;
	if (!seq)
		return;
	for (uint64_t j = idx + 1; j < idx + ra->n && j < ip->chunks.n; j++) {
		struct objfs_chunk *c = &ip->chunks.v[j];
		struct objfs_ra_slot *sl;

		if (objfs_chunk_state(c) != OBJFS_CHUNK_SPILLED ||
		    ra_find(ra, j, c))
			continue;
		sl = ra_victim(ra, first, idx, 0);
		if (!sl)
			return;
		sl->state = OBJFS_RA_LOADING;
		sl->idx = j;
		sl->csum = c->csum;
		sl->len = c->disk_len;
		sl->gen = ++ra->next_gen;
		if (objfs_spiller_read_ahead(s, ip->ino, j, (int)(sl - ra->slot),
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
	int rc = read_disk_copy(s, ip, idx, c, buf);

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
	b = bounce_alloc(s->chunk_size);
	if (!b)
		return -ENOMEM;
	v->bounce[v->nbounce++] = b;
	rc = load_direct(s, ip, idx, c, b);
	if (rc < 0)
		return rc;
	iov_add_chunk(v, b, c->disk_len, co, n);
	return 0;
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

/*
 * Serve bytes [co, co+n) of spilled chunk @idx from its verified disk
 * copy, into @v.  Slots of chunks from @first on are already in @v, so
 * they are not reused.  -EAGAIN when it waited for a load (the inode lock
 * was dropped, so the caller must start again; it held no pieces, so
 * every wait is followed by progress).
 */
static int
read_from_disk(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, uint64_t first, struct objfs_iov *v,
		uint32_t co, uint32_t n)
{
	struct objfs_rahead *ra = ra_get(s, ip);
	struct objfs_ra_slot *sl;
	int rc;

	if (!ra)
		return -ENOMEM;
	sl = ra_find(ra, idx, c);
	if (!sl) {
		sl = ra_victim(ra, first, idx, 1);
		if (!sl)	/* one read spans more chunks than slots */
			return read_bounce(s, ip, idx, c, v, co, n);
		sl->state = OBJFS_RA_EMPTY;
		rc = load_direct(s, ip, idx, c, sl->buf);
		if (rc < 0)
			return rc;
		sl->idx = idx;
		sl->csum = c->csum;
		sl->len = c->disk_len;
		sl->state = OBJFS_RA_READY;
	} else if (sl->state == OBJFS_RA_LOADING) {
		/* Waiting drops the lock, which keeps the pieces already in
		 * @v valid: only a request that holds none may wait (and then
		 * start over); others read the chunk themselves. */
		if (v->n)
			return read_bounce(s, ip, idx, c, v, co, n);
		pthread_cond_wait(&ra->cv, &ip->lock);
		return -EAGAIN;
	}
	/* The kernel reads a chunk in several requests: each is served from
	 * this copy, not read and checked again. */
	iov_add_chunk(v, sl->buf, c->disk_len, co, n);
	if (idx != ra->last)
		ra_ahead(s, ip, ra, first, idx);
	return 0;
}

void
objfs_data_read_ahead(struct objfs_store *s, struct objfs_inode *ip,
		int slot, uint64_t gen)
{
	struct objfs_rahead *ra = ip->ra;
	struct objfs_ra_slot *sl;
	struct objfs_chunk *c;
	uint64_t idx, csum;
	uint32_t len;
	int fd, rc = -ESTALE;

	if (!ra || slot < 0 || (unsigned)slot >= ra->n)
		return;
	sl = &ra->slot[slot];
	if (sl->state != OBJFS_RA_LOADING || sl->gen != gen)
		return;
	idx = sl->idx;
	csum = sl->csum;
	len = sl->len;
	c = objfs_chunkmap_get(&ip->chunks, idx);
	fd = backing_fd(s, ip, 0);
	if (c && objfs_chunk_state(c) == OBJFS_CHUNK_SPILLED &&
	    c->csum == csum && c->disk_len == len && fd >= 0) {
		/* The slot is ours while LOADING, and the reference the
		 * caller holds keeps fd open: read without the lock, so the
		 * reader copies the chunk before this one meanwhile. */
		pthread_mutex_unlock(&ip->lock);
		rc = objfs_spill_read(fd, ip->ino, idx, s->chunk_size, sl->buf,
				len, csum);
		pthread_mutex_lock(&ip->lock);
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

size_t
objfs_data_iov_max(struct objfs_store *s, size_t len)
{
	/* Per chunk touched: one piece of data and zeros after it; zeros
	 * come in pieces of sizeof(zeros). */
	return 2 * (len / s->chunk_size + 2) + len / sizeof(zeros) + 2;
}

int
objfs_data_read_iov(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t off, size_t len, struct objfs_iov *v)
{
	struct objfs_arena_stats st;
	uint64_t first = off >> s->chunk_shift;
	size_t done;
	int rc;

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
			iov_add(v, NULL, n);
			break;
		case OBJFS_CHUNK_SPILLED:
			/* Restore, bringing the next chunks back ahead of a
			 * reader, unless that would eat into what writers
			 * need; then serve the read from the disk copy. */
			objfs_arena_get_stats(s->arena, &st);
			rc = -ENOSPC;
			if (st.used < s->restore_limit) {
				objfs_spiller_restore_ahead(s, ip->ino, idx + 1);
				rc = restore(s, ip, idx, c, 0);
			}
			if (rc == 0)
				goto resident;
			if (rc != -ENOSPC)
				return rc;
			rc = read_from_disk(s, ip, idx, c, first, v, co, n);
			if (rc == -EAGAIN)
				goto again;	/* waited: all may have moved */
			if (rc < 0)
				return rc;
			break;
		case OBJFS_CHUNK_RESIDENT_CLEAN:
		case OBJFS_CHUNK_RESIDENT_DIRTY:
resident:
			objfs_arena_touch(s->arena, c->off, 0);
			iov_add_chunk(v, objfs_arena_ptr(s->arena, c->off),
					c->cap, co, n);
			break;
		}
		done += n;
		v->len = done;
	}
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

	rc = block_alloc(s, ip, idx, need, 1, &off, &cap);
	if (rc < 0)
		return rc;
	p = objfs_arena_ptr(s->arena, off);
	memcpy(p, objfs_arena_ptr(s->arena, c->off), c->cap);
	memset(p + c->cap, 0, cap - c->cap);
	objfs_arena_free(s->arena, c->off, c->cap);
	c->off = off;
	c->cap = cap;
	return 0;
}

/*
 * Make chunk @idx resident with a block covering [0, need), zero-filled
 * where it had no bytes, except [wlo, need) of a new block, which the
 * caller is about to overwrite.  The caller marks it dirty.
 */
static int
make_resident(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, uint32_t need, uint32_t wlo)
{
	unsigned char *p;
	int rc;

	if (c->cap)
		return c->cap >= need ? 0 : grow(s, ip, idx, c, need);
	if (c->flags & OBJFS_CHUNK_ONDISK)
		return restore(s, ip, idx, c, need);
	rc = block_alloc(s, ip, idx, need, 1, &c->off, &c->cap);
	if (rc < 0)
		return rc;
	p = objfs_arena_ptr(s->arena, c->off);
	memset(p, 0, wlo);
	memset(p + need, 0, c->cap - need);
	return 0;
}

int
objfs_data_write(struct objfs_store *s, struct objfs_inode *ip, uint64_t off,
		const void *buf, size_t len, size_t *n_out)
{
	const unsigned char *src = buf;
	size_t done = 0;
	int rc = 0;

	if (off + len < off || off + len > (uint64_t)INT64_MAX)
		return -EFBIG;
	while (done < len) {
		uint64_t pos = off + done, idx = pos >> s->chunk_shift;
		uint32_t co = (uint32_t)(pos & (s->chunk_size - 1));
		uint32_t n = (uint32_t)min64(len - done, s->chunk_size - co);
		struct objfs_chunk *c;
		unsigned char *p;

		rc = objfs_chunkmap_ensure(&ip->chunks, idx + 1);
		if (rc < 0)
			break;
		c = objfs_chunkmap_get(&ip->chunks, idx);
		rc = make_resident(s, ip, idx, c, co + n, co);
		if (rc < 0)
			break;
		p = objfs_arena_ptr(s->arena, c->off);
		memcpy(p + co, src + done, n);
		c->flags |= OBJFS_CHUNK_DIRTY;
		objfs_arena_touch(s->arena, c->off, 1);
		done += n;
	}
	if (off + done > ip->attr.size)
		ip->attr.size = off + done;
	*n_out = done;
	return rc;
}

static int
commit_or_abort(struct objfs_meta_txn *t, int rc)
{
	if (rc < 0) {
		objfs_meta_abort(t);
		return rc;
	}
	return objfs_meta_commit(t);
}

int
objfs_data_truncate(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t size)
{
	uint64_t keep = (size + s->chunk_size - 1) >> s->chunk_shift;
	uint32_t tail = (uint32_t)(size & (s->chunk_size - 1));
	struct objfs_chunk *c = NULL;
	struct objfs_meta_txn *t;
	int rc, ondisk = 0;

	if (size > (uint64_t)INT64_MAX)
		return -EFBIG;
	if (size >= ip->attr.size) {
		ip->attr.size = size;
		ip->attr_dirty = 1;
		return 0;
	}
	for (uint64_t i = keep; i < ip->chunks.n; i++)
		ondisk |= !!(ip->chunks.v[i].flags & OBJFS_CHUNK_ONDISK);
	if (tail)
		c = objfs_chunkmap_get(&ip->chunks, keep - 1);
	if (ondisk || (c && (c->flags & OBJFS_CHUNK_ONDISK) &&
			c->disk_len > tail)) {
		rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
		if (rc < 0)
			return rc;
		rc = objfs_meta_chunk_del_from(t, ip->ino, keep);
		if (rc == 0 && c && (c->flags & OBJFS_CHUNK_ONDISK) &&
		    c->disk_len > tail) {
			/* The disk copy shrinks to its first @tail bytes: a
			 * new checksum over bytes that stay where they are. */
			uint64_t csum;

			if (c->flags & OBJFS_CHUNK_DIRTY) {
				/* Stale copy: flush rewrites it; drop now. */
				rc = objfs_meta_chunk_del(t, ip->ino, keep - 1);
				c->flags &= ~OBJFS_CHUNK_ONDISK;
			} else if (c->cap) {
				csum = objfs_csum64(objfs_arena_ptr(s->arena,
						c->off), tail);
				rc = objfs_meta_chunk_put(t, ip->ino, keep - 1,
						csum, tail);
				if (rc == 0) {
					c->csum = csum;
					c->disk_len = tail;
				}
			} else {
				unsigned char *b = bounce_alloc(c->disk_len);

				rc = b ? read_disk_copy(s, ip, keep - 1, c, b)
					: -ENOMEM;
				if (rc == 0) {
					csum = objfs_csum64(b, tail);
					rc = objfs_meta_chunk_put(t, ip->ino,
							keep - 1, csum, tail);
				}
				free(b);
				if (rc == 0) {
					c->csum = csum;
					c->disk_len = tail;
				}
			}
		}
		rc = commit_or_abort(t, rc);
		if (rc < 0)
			return rc;
	}
	if (c && c->cap > tail)
		memset((unsigned char *)objfs_arena_ptr(s->arena, c->off) + tail,
				0, c->cap - tail);
	objfs_chunkmap_cut(&ip->chunks, s->arena, keep);
	if (backing_fd(s, ip, 0) >= 0 && ftruncate(ip->bfd, (off_t)size) < 0)
		objfs_log(OBJFS_LOG_WARNING, "inode %" PRIu64
			": cannot shrink backing file: %m", ip->ino);
	ip->attr.size = size;
	ip->attr_dirty = 1;
	return 0;
}

/*
 * Write out the chunks marked OBJFS_CHUNK_SEL that are resident and dirty,
 * in the order described at the top of this file, and the attributes.
 * Clears SEL everywhere.  With @sync, the backing file and the index are
 * made durable.  On error the chunks written so far are recorded and the
 * rest stay dirty in the arena.
 */
static int
writeout(struct objfs_store *s, struct objfs_inode *ip, int sync)
{
	struct objfs_meta_txn *t;
	uint64_t first_done = UINT64_MAX, end_done = 0;
	int rc = 0, stale = 0, any = 0, fd = -1, r;

	for (uint64_t i = 0; i < ip->chunks.n; i++) {
		struct objfs_chunk *c = &ip->chunks.v[i];

		if (!(c->flags & OBJFS_CHUNK_SEL))
			continue;
		if (c->cap && (c->flags & OBJFS_CHUNK_DIRTY)) {
			any = 1;
			stale |= !!(c->flags & OBJFS_CHUNK_ONDISK);
		} else {
			c->flags &= ~OBJFS_CHUNK_SEL;
		}
	}
	if (stale) {
		rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
		if (rc < 0)
			goto out_clear;
		for (uint64_t i = 0; rc == 0 && i < ip->chunks.n; i++) {
			struct objfs_chunk *c = &ip->chunks.v[i];

			if ((c->flags & OBJFS_CHUNK_SEL) &&
			    (c->flags & OBJFS_CHUNK_ONDISK))
				rc = objfs_meta_chunk_del(t, ip->ino, i);
		}
		rc = commit_or_abort(t, rc);
		if (rc < 0)
			goto out_clear;
		for (uint64_t i = 0; i < ip->chunks.n; i++)
			if (ip->chunks.v[i].flags & OBJFS_CHUNK_SEL)
				ip->chunks.v[i].flags &= ~OBJFS_CHUNK_ONDISK;
	}
	if (any || (sync && ip->bfd >= 0)) {
		fd = backing_fd(s, ip, any);
		if (fd < 0 && any) {
			rc = fd;
			goto out_clear;
		}
	}
	for (uint64_t i = 0; any && i < ip->chunks.n; i++) {
		struct objfs_chunk *c = &ip->chunks.v[i];
		uint32_t len;

		if (!(c->flags & OBJFS_CHUNK_SEL))
			continue;
		len = (uint32_t)min64(c->cap, extent_in_file(s, ip, i));
		rc = objfs_spill_write(fd, i, s->chunk_size,
				objfs_arena_ptr(s->arena, c->off), len, &c->csum);
		if (rc < 0)
			break;
		c->disk_len = len;
		c->flags |= OBJFS_CHUNK_RECDIRTY;
		if (first_done == UINT64_MAX)
			first_done = i;
		end_done = i + 1;
	}
	if (rc == 0 && any && ftruncate(fd, (off_t)ip->attr.size) < 0)
		rc = -errno;
	/* Chunks spilled earlier without fsync are in the page cache too. */
	if (rc == 0 && sync && fd >= 0 && fdatasync(fd) < 0)
		rc = -errno;
	if (rc < 0)
		objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64
			": writing to the backing directory: %s",
			ip->ino, strerror(-rc));
	/* Record what did reach the disk, even after an error. */
	r = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (r < 0) {
		rc = rc ? rc : r;
		goto out_clear;
	}
	for (uint64_t i = first_done; r == 0 && i < end_done; i++) {
		struct objfs_chunk *c = &ip->chunks.v[i];

		if (c->flags & OBJFS_CHUNK_RECDIRTY)
			r = objfs_meta_chunk_put(t, ip->ino, i, c->csum,
					c->disk_len);
	}
	if (r == 0)
		r = objfs_meta_inode_put(t, &ip->attr);
	r = commit_or_abort(t, r);
	if (r < 0) {
		rc = rc ? rc : r;
		goto out_clear;
	}
	for (uint64_t i = first_done; i < end_done; i++) {
		struct objfs_chunk *c = &ip->chunks.v[i];

		if (c->flags & OBJFS_CHUNK_RECDIRTY) {
			c->flags &= ~(OBJFS_CHUNK_RECDIRTY | OBJFS_CHUNK_DIRTY);
			c->flags |= OBJFS_CHUNK_ONDISK;
			objfs_arena_mark_clean(s->arena, c->off);
			atomic_fetch_add(&s->written_out_chunks, 1);
			atomic_fetch_add(&s->written_out_bytes, c->disk_len);
		}
	}
	if (rc == 0)
		ip->attr_dirty = 0;
out_clear:
	for (uint64_t i = 0; i < ip->chunks.n; i++)
		ip->chunks.v[i].flags &= ~(OBJFS_CHUNK_SEL | OBJFS_CHUNK_RECDIRTY);
	return rc;
}

int
objfs_data_flush(struct objfs_store *s, struct objfs_inode *ip, int sync)
{
	int any = 0;

	for (uint64_t i = 0; i < ip->chunks.n; i++) {
		struct objfs_chunk *c = &ip->chunks.v[i];

		if (c->cap && (c->flags & OBJFS_CHUNK_DIRTY)) {
			c->flags |= OBJFS_CHUNK_SEL;
			any = 1;
		}
	}
	if (!any && !ip->attr_dirty && !sync)
		return 0;
	return writeout(s, ip, sync);
}

int
objfs_data_evict(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_arena_victim *v, int n, uint64_t *freed)
{
	int rc = 0, dirty = 0;

	*freed = 0;
	for (int k = 0; k < n; k++) {
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, v[k].idx);

		if (!c || !c->cap || c->off != v[k].off)
			continue;	/* changed since the clock chose it */
		if (c->flags & OBJFS_CHUNK_DIRTY) {
			c->flags |= OBJFS_CHUNK_SEL;
			dirty = 1;
		}
	}
	if (dirty) {
		rc = writeout(s, ip, 0);
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
		objfs_chunk_drop(c, s->arena);
	}
	return rc;
}

/* Restore the spilled chunks of [idx, idx+n) while the arena has room for
 * them below the restore limit. */
void
objfs_data_restore_range(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t idx, uint64_t n)
{
	struct objfs_arena_stats st;

	for (uint64_t i = idx; i < idx + n && i < ip->chunks.n; i++) {
		struct objfs_chunk *c = &ip->chunks.v[i];

		if (objfs_chunk_state(c) != OBJFS_CHUNK_SPILLED)
			continue;
		objfs_arena_get_stats(s->arena, &st);
		if (st.used + s->chunk_size > s->restore_limit)
			return;
		if (restore(s, ip, i, c, 0) < 0)
			return;
	}
}

/* Zero [off, off+len) inside the file: whole chunks become holes. */
static int
zero_range(struct objfs_store *s, struct objfs_inode *ip, uint64_t off,
		uint64_t len)
{
	struct objfs_meta_txn *t = NULL;
	uint64_t end = off + len;
	uint64_t whole_lo = (off + s->chunk_size - 1) & ~(uint64_t)(s->chunk_size - 1);
	uint64_t whole_hi = end & ~(uint64_t)(s->chunk_size - 1);
	size_t n;
	int rc = 0;

	while (off < end) {
		uint64_t idx = off >> s->chunk_shift;
		uint64_t cs = idx << s->chunk_shift;
		uint64_t ce = cs + s->chunk_size;
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, idx);

		if (!c || objfs_chunk_state(c) == OBJFS_CHUNK_HOLE) {
			off = ce;
			continue;
		}
		if (off == cs && end >= ce) {
			if (c->flags & OBJFS_CHUNK_ONDISK) {
				if (!t && (rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL,
							&t)) < 0)
					return rc;
				rc = objfs_meta_chunk_del(t, ip->ino, idx);
				if (rc < 0)
					break;
			}
			objfs_chunk_drop(c, s->arena);
			c->flags = 0;
			off = ce;
			continue;
		}
		n = (size_t)min64(min64(end, ce) - off, sizeof(zeros));
		rc = objfs_data_write(s, ip, off, zeros, n, &n);
		if (rc < 0)
			break;
		off += n;
	}
	if (t)
		rc = commit_or_abort(t, rc);
	/* Whole chunks in the range have no record any more: give their
	 * disk space back.  Partial chunks keep theirs until rewritten. */
	if (rc == 0 && whole_hi > whole_lo && backing_fd(s, ip, 0) >= 0)
		(void)fallocate(ip->bfd, FALLOC_FL_PUNCH_HOLE |
				FALLOC_FL_KEEP_SIZE, (off_t)whole_lo,
				(off_t)(whole_hi - whole_lo));
	return rc;
}

int
objfs_data_fallocate(struct objfs_store *s, struct objfs_inode *ip, int mode,
		uint64_t off, uint64_t len)
{
	uint64_t end = off + len, size = ip->attr.size, pos;
	int rc;

	if (len == 0 || end < off || end > (uint64_t)INT64_MAX)
		return -EINVAL;
	switch (mode) {
	case 0:
	case FALLOC_FL_KEEP_SIZE:
		/* Reserve arena blocks for the holes in the range. */
		for (pos = off; pos < end; ) {
			uint64_t idx = pos >> s->chunk_shift;
			uint64_t ce = (idx + 1) << s->chunk_shift;
			uint32_t need = (uint32_t)(min64(end, ce) -
					(idx << s->chunk_shift));
			struct objfs_chunk *c;

			rc = objfs_chunkmap_ensure(&ip->chunks, idx + 1);
			if (rc < 0)
				return rc;
			c = objfs_chunkmap_get(&ip->chunks, idx);
			if (!(c->flags & OBJFS_CHUNK_ONDISK) || c->cap) {
				rc = make_resident(s, ip, idx, c, need, need);
				if (rc < 0)
					return rc;
				c->flags |= OBJFS_CHUNK_DIRTY;
				objfs_arena_touch(s->arena, c->off, 1);
			}
			pos = ce;
		}
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

int
objfs_data_seek(struct objfs_store *s, struct objfs_inode *ip, uint64_t off,
		int whence, uint64_t *out)
{
	uint64_t size = ip->attr.size, idx;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off >= size)
		return -ENXIO;
	for (idx = off >> s->chunk_shift; idx < ip->chunks.n; idx++) {
		int hole = objfs_chunk_state(&ip->chunks.v[idx]) ==
			OBJFS_CHUNK_HOLE;

		if (hole == (whence == SEEK_HOLE))
			break;
	}
	if (idx << s->chunk_shift >= size) {
		if (whence == SEEK_DATA)
			return -ENXIO;
		*out = size;
		return 0;
	}
	*out = idx << s->chunk_shift > off ? idx << s->chunk_shift : off;
	return 0;
}

void
objfs_data_unload(struct objfs_store *s, struct objfs_inode *ip)
{
	ra_free(ip);
	objfs_chunkmap_fini(&ip->chunks, s->arena);
	if (ip->bfd >= 0)
		close(ip->bfd);
	ip->bfd = -1;
}

int
objfs_data_destroy(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_meta_txn *t;
	int rc;

	objfs_data_unload(s, ip);
	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_inode_del(t, ip->ino);
	if (rc == -ENOENT)
		rc = 0;
	if (rc == 0)
		rc = objfs_meta_orphan_del(t, ip->ino);
	rc = commit_or_abort(t, rc);
	if (rc < 0)
		return rc;
	return objfs_data_remove_file(s, ip);
}

int
objfs_data_remove_file(struct objfs_store *s, struct objfs_inode *ip)
{
	/* A file spilled once and then cut to nothing still has one. */
	if (!S_ISREG(ip->attr.mode) || ip->no_file)
		return 0;
	return objfs_backing_remove(s->backing, ip->ino);
}
