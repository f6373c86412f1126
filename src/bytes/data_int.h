/* SPDX-License-Identifier: MIT */
/*
 * data_int.h - what the file-bytes modules share: data.c (loading,
 * reads, writes, truncation, holes), read.c and writeout.c, above
 * the chunk-store layer (copy.h), and what that layer's stores use of
 * them (local_int.h).  All called with the inode's lock held unless they
 * say otherwise.
 */
#ifndef OBJFS_DATA_INT_H
#define OBJFS_DATA_INT_H

#include "src/store_int.h"

/* Publish the block of chunk @idx (@c) as it is now, the file @size
 * bytes, last written at @mtime_ns (arena.h, Tags). */
void data_publish(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, uint64_t size, int64_t mtime_ns);

/* Sub-blocks [co, co+n) of @c changed (the write-out may then write only
 * those, backing.h). */
static inline void
data_mark_subs(const struct objfs_store *s, struct objfs_chunk *c,
		uint32_t co, uint32_t n)
{
	uint32_t i = co >> s->sub_shift, j = (co + n - 1) >> s->sub_shift;

	for (; n && i <= j && i < OBJFS_SUMS_MAX; i++)
		objfs_bits_set(c->dsub, i);
}

/* data.c */
/* Bytes of chunk @idx that lie inside the file. */
uint32_t data_extent_in_file(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t idx);
/* A block of at least @size bytes for chunk @idx of @ip, tagged so that
 * the spiller can find it; @dirty: its bytes are about to differ from the
 * disk.  -ENOSPC when the arena has none. */
int data_block_alloc(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t idx, size_t size, int dirty, uint64_t *off,
		uint32_t *cap);
/* read.c */
/* Fill a PARTIAL chunk's block from its disk copy and make it a plain
 * resident one (nothing to do for others); -EIO when the copy does not
 * verify, the chunk unchanged. */
int data_complete(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t idx, struct objfs_chunk *c);
/* Bring sub-blocks @first..@last of PARTIAL chunk @idx that its block
 * does not hold from the disk copy into it, each checked. */
int data_fill_subs(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t idx, struct objfs_chunk *c, uint32_t first,
		uint32_t last);
/* Bring the disk copy of chunk @idx into a new block of at least
 * @min_cap bytes.  -ENOSPC when the arena has no such block. */
int data_restore(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		struct objfs_chunk *c, uint32_t min_cap);
/* Chunk @idx of a damaged object has neither a block nor a record: EIO
 * (logged once), never zeros. */
int data_lost(struct objfs_inode *ip, uint64_t idx);
/* Add @n bytes at @p to a read's list (zeros when @p is NULL). */
void data_iov_add(struct objfs_iov *v, const void *p, size_t n);
/* Bytes [co, co+n) of a chunk whose valid bytes are src[0..have). */
void data_iov_add_chunk(struct objfs_iov *v, const unsigned char *src,
		uint32_t have, uint32_t co, uint32_t n);

/* writeout.c, for the spiller (spiller_ops.c) */
/* Write out the dirty chunks among @v (victims of @ip chosen by the
 * clock, in ascending chunk order) and free their blocks; *freed gets
 * the bytes freed. */
int objfs_data_evict(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_arena_victim *v, int n, uint64_t *freed);
/* Restore the spilled chunks of [idx, idx+n) while the arena has room
 * for them below the restore limit. */
void objfs_data_restore_range(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t idx, uint64_t n);

/* read.c: read-ahead */
/* Load chunk idx into read-ahead slot @slot if request @gen still wants
 * it (the inode's lock dropped for the read). */
void objfs_data_read_ahead(struct objfs_store *s, struct objfs_inode *ip,
		int slot, uint64_t gen);
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
#endif
