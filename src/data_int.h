/* SPDX-License-Identifier: MIT */
/*
 * data_int.h - what the file-bytes modules share: data.c (loading,
 * reads, writes, truncation, holes), readahead.c, writeout.c and space.c.
 * All called with the inode's lock held unless they say otherwise.
 */
#ifndef OBJFS_DATA_INT_H
#define OBJFS_DATA_INT_H

#include "store_int.h"

static inline uint64_t
min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t
max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Publish the block of chunk @idx (@c) as it is now, the file @size
 * bytes, last written at @mtime_ns (arena.h, Tags). */
void data_publish(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, uint64_t size, int64_t mtime_ns);

/* The sub-block size (log2) of the disk copy of @c; 0: checked whole. */
static inline unsigned
data_sub_shift(const struct objfs_store *s, const struct objfs_chunk *c)
{
	return (c->flags & OBJFS_CHUNK_SUMS) ? s->sub_shift : 0;
}

/* Sub-blocks [co, co+n) of @c changed (the write-out may then write only
 * those, spill.h). */
static inline void
data_mark_subs(const struct objfs_store *s, struct objfs_chunk *c,
		uint32_t co, uint32_t n)
{
	uint32_t i = co >> s->sub_shift, j = (co + n - 1) >> s->sub_shift;

	for (; n && i <= j && i < OBJFS_SUMS_MAX; i++)
		objfs_bits_set(c->dsub, i);
}

/* data.c */
/* Fill a PARTIAL chunk's block from its disk copy and make it a plain
 * resident one (nothing to do for others); -EIO when the copy does not
 * verify, the chunk unchanged. */
int data_complete(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t idx, struct objfs_chunk *c);
/* The record of chunk @idx (@c), its sums into @tab (OBJFS_SUMS_MAX
 * room) and, when it has a second slot, where that is into @alt (may be
 * NULL).  -EIO, logged, when it is not the record of the copy @c
 * names. */
int data_chunk_rec(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t idx, const struct objfs_chunk *c,
		struct objfs_chunk_rec *r, unsigned char *tab,
		struct objfs_alt *alt);
/* The backing file's fd (made, with @create, when missing; *@created
 * says so), or a negative errno. */
int data_backing_fd(struct objfs_store *s, struct objfs_inode *ip,
		int create, int *created);
/* Bytes of chunk @idx that lie inside the file. */
uint32_t data_extent_in_file(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t idx);
/* A buffer for a disk copy of @len bytes, aligned for direct I/O. */
void *data_bounce_alloc(uint32_t len);
/* Read the disk copy of @c into @buf (disk_len bytes), verifying it. */
int data_read_disk_copy(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t idx, const struct objfs_chunk *c, void *buf);
/* Bring the disk copy of chunk @idx into a new block of at least
 * @min_cap bytes.  -ENOSPC when the arena has no such block. */
int data_restore(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, uint32_t min_cap);
/* Bytes [co, co+n) of a chunk whose valid bytes are src[0..have). */
void data_iov_add_chunk(struct objfs_iov *v, const unsigned char *src,
		uint32_t have, uint32_t co, uint32_t n);
/* Commit @t when @rc is 0 (the commit's number in *@seq), else abort it;
 * the result. */
int data_commit_or_abort(struct objfs_meta_txn *t, int rc, uint64_t *seq);

/* readahead.c */
/* Free the read-ahead slots (no load may be reading: see unload). */
void data_ra_free(struct objfs_inode *ip);
/* A sequential reader at chunk @idx (this request began at @first):
 * queue loads of the spilled chunks after it into slots it is done
 * with. */
void data_ra_ahead(struct objfs_store *s, struct objfs_inode *ip,
		struct objfs_rahead *ra, uint64_t first, uint64_t idx);
/* Serve bytes [co, co+n) of spilled chunk @idx from its verified disk
 * copy, into @v.  -EAGAIN when it waited for a load (the inode lock was
 * dropped: start again). */
int data_read_from_disk(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t idx, struct objfs_chunk *c, uint64_t first,
		struct objfs_iov *v, uint32_t co, uint32_t n);
/* Is a read-ahead of slot @slot under way (without the inode lock)? */
int data_slot_loading(const struct objfs_inode *ip, uint64_t slot);

/* share.c */
#define DATA_COPY_FREE	1u	/* no record points at the copy any more */
#define DATA_COPY_FILE	2u	/* ... and its home is gone: the whole file */
/* The object whose backing file holds @c's disk copy. */
static inline uint64_t
data_copy_home(const struct objfs_inode *ip, const struct objfs_chunk *c)
{
	return c->home ? c->home : ip->ino;
}
/* Is @c's disk copy shared, so that nothing may be written into it (no
 * append in place, no sub-blocks in its slots)?  1, 0, or -errno (to be
 * taken as 1). */
int data_copy_shared(struct objfs_store *s, const struct objfs_inode *ip,
		const struct objfs_chunk *c);
/* How many records use @c's disk copy (the share DB's count, 1 without
 * an entry) into *@n: 0 or -errno.  A copy is shared with another file
 * only when that is 2 or more (a count left at 1 says nothing more). */
int data_copy_users(struct objfs_store *s, const struct objfs_inode *ip,
		const struct objfs_chunk *c, uint64_t *n);
/* The fd through which chunk @c's disk copy is read: @ip's backing file,
 * or, for a copy shared from another object's, that file opened for
 * this read (*@own: data_copy_fd_done() closes it). */
int data_copy_fd(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_chunk *c, int *own);
void data_copy_fd_done(int fd, int own);
/* In @t, chunk @c of @ip stops pointing at its disk copy (rewritten,
 * cut, punched, deleted): *@what gets DATA_COPY_FREE when the copy is to
 * be given back once @t is durable (always, for a copy not shared), and
 * DATA_COPY_FILE when it was the last one in a deleted object's file
 * (whose tombstone is then put in @t). */
int data_copy_drop(struct objfs_store *s, struct objfs_meta_txn *t,
		const struct objfs_inode *ip, const struct objfs_chunk *c,
		unsigned *what);
/* Dedup.  A disk copy, other than @c's own, holding the @len bytes of
 * @buf whose chunk checksum is @csum (candidates from the content DB,
 * each read, checked against its sums and compared byte for byte):
 * 1 and where it is, or 0.  No transaction held. */
int data_dedup_find(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_chunk *c, const void *buf, uint32_t len,
		uint64_t csum, uint64_t *home, uint64_t *slot);
/* In @t, the commit of a write-out: take a reference on the copy found,
 * if it is still what was read (its content entry unchanged, and
 * counted, or its one record still whole).  1 taken, 0 gone (write the
 * chunk instead), or -errno. */
int data_dedup_claim(struct objfs_meta_txn *t, uint64_t home, uint64_t slot,
		uint64_t csum, uint32_t len);
/* After @t committed as @seq: defer what data_copy_drop() freed, and
 * @c's second slot. */
void data_copy_release(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_chunk *c, unsigned what, uint64_t seq);

/* space.c */
/* Put @slot of @ino on the list of space to give back once commit @seq
 * is durable (it stays taken meanwhile). */
void data_defer_slot(struct objfs_store *s, uint64_t ino, uint64_t slot,
		uint64_t seq);
/* Drop what is deferred for @ino: it is going as a whole. */
void data_forget_deferred(struct objfs_store *s, uint64_t ino);

#endif
