/* SPDX-License-Identifier: MIT */
/*
 * block.c - a chunk's block in the arena, as the file bytes see it: a new
 * block tagged with its owner (so that the spiller's clock can find it),
 * its tag published as the chunk is now (arena.h, Tags: what an adopting
 * daemon finds), and the chunk's extent inside the file.  Below data.c,
 * read.c and writeout.c, which all make and publish blocks; it calls only
 * the arena and the spiller.
 */
#include <config.h>

#include "src/bytes/data_int.h"

/* A block for chunk @idx of @ip, tagged so that the spiller can find it;
 * @dirty says whether its bytes are about to differ from the disk (so the
 * clock never takes it for a clean block in the meantime). */
int
data_block_alloc(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		size_t size, int dirty, uint64_t *off, uint32_t *cap)
{
	int rc = objfs_arena_alloc(s->arena, size ? size : 1, off, cap);

	if (rc == 0) {
		objfs_arena_set_owner(s->arena, *off, ip->ino, idx);
		objfs_arena_touch(s->arena, *off, dirty);
		/* Past the high watermark: start the spiller now, so that
		 * writers rarely have to wait for it. */
		objfs_spiller_kick(s->spiller);
	}
	return rc;
}

/* The block's tag as the chunk is now (arena.h, Tags): the adopting
 * daemon's view of it from here on. */
void
data_publish(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, uint64_t size, int64_t mtime_ns)
{
	uint32_t f = 0;

	if (c->flags & OBJFS_CHUNK_DIRTY)
		f |= OBJFS_ARENA_TAG_DIRTY;
	if (c->flags & OBJFS_CHUNK_PARTIAL)
		f |= OBJFS_ARENA_TAG_PARTIAL;
	objfs_arena_publish(s->arena, c->off, ip->ino, idx, f, size, mtime_ns,
			(f & OBJFS_ARENA_TAG_DIRTY) ? 0 : c->csum,
			(f & OBJFS_ARENA_TAG_PARTIAL) ? c->valid : NULL);
}

int64_t
data_mtime_ns(const struct objfs_inode *ip)
{
	return ip->attr.mtime_sec * 1000000000ll + ip->attr.mtime_nsec;
}

/* Bytes of chunk @idx that lie inside the file. */
uint32_t
data_extent_in_file(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx)
{
	uint64_t start = idx << s->chunk_shift;

	if (ip->attr.size <= start)
		return 0;
	return (uint32_t)min64(s->chunk_size, ip->attr.size - start);
}
