/* SPDX-License-Identifier: MIT */
/*
 * arena.h - the shared-memory arena that holds file bytes.
 *
 * One memfd of fixed capacity, mapped MAP_SHARED once and never grown.
 * Blocks are named by their byte offset from the start of the mapping,
 * never by pointer (a chunk stores a 32-bit block index, not an 8-byte
 * pointer).  Only the daemon maps the memfd; no other process shares it
 * today.  Blocks are powers of two from OBJFS_ARENA_MIN_BLOCK up
 * to the chunk size: whole chunks for the body of a file, small blocks for
 * the tails of small files.  Freed blocks go back to the allocator, not to
 * the kernel, so memory the arena has touched once stays mapped and fast.
 *
 * All functions are thread-safe (one mutex inside the arena).
 */
#ifndef OBJFS_ARENA_H
#define OBJFS_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define OBJFS_ARENA_MIN_BLOCK	4096u
#define OBJFS_ARENA_MAGIC	0x414e4552414a424fULL	/* "OBJAREN A" */
#define OBJFS_ARENA_VERSION	1u

struct objfs_arena;

struct objfs_arena_stats {
	uint64_t capacity;	/* bytes blocks can be carved from */
	uint64_t used;		/* bytes in allocated blocks */
	uint64_t largest_free;	/* largest block that can be allocated now */
};

/*
 * Create an arena of @capacity bytes (rounded down to a multiple of
 * @chunk_size) carved into blocks of at most @chunk_size, a power of two
 * from 2 * OBJFS_ARENA_MIN_BLOCK up to 2 GiB.  The arena holds at least
 * two chunks.
 * Returns 0, -EINVAL (sizes), -ENOMEM, or the errno of memfd/mmap.
 */
int objfs_arena_create(uint64_t capacity, uint32_t chunk_size,
		struct objfs_arena **out);
void objfs_arena_destroy(struct objfs_arena *a);

/*
 * Allocate a block of at least @size bytes (1 <= size <= chunk size).
 * Writes the block's offset and its real size.  The block's content is
 * undefined.  Returns 0 or -ENOSPC when no block that large is free.
 */
int objfs_arena_alloc(struct objfs_arena *a, size_t size, uint64_t *off_out,
		uint32_t *cap_out);

/* Return a block obtained from objfs_arena_alloc().  @cap is its size. */
void objfs_arena_free(struct objfs_arena *a, uint64_t off, uint32_t cap);

/* Address of the byte at @off in this process's mapping. */
void *objfs_arena_ptr(struct objfs_arena *a, uint64_t off);

/* The block size a request of @size bytes is rounded up to. */
uint32_t objfs_arena_block_size(const struct objfs_arena *a, size_t size);

void objfs_arena_get_stats(struct objfs_arena *a,
		struct objfs_arena_stats *st);
/* Bytes of blocks flagged dirty (objfs_arena_touch with @dirty, until
 * objfs_arena_mark_clean or the block's free): not yet on disk. */
uint64_t objfs_arena_dirty(struct objfs_arena *a);
/* Bytes allocated, without taking the lock (may be a moment old). */
uint64_t objfs_arena_used(struct objfs_arena *a);

/* Fault every page of the arena in now (MADV_POPULATE_WRITE). */
int objfs_arena_prefault(struct objfs_arena *a);

/* The memfd, for splicing replies straight from the arena. */
int objfs_arena_fd(const struct objfs_arena *a);

/*
 * Owners and the eviction clock.  A block handed to a chunk is tagged with
 * its owner (object @ino, chunk @idx); objfs_arena_free() clears the tag.
 * The data path marks a block referenced (and dirty) on each access
 * without taking the arena lock; the spiller's clock gives every
 * referenced block a second chance before choosing it (CLOCK, an LRU
 * approximation).  Only tagged blocks are ever chosen.
 */
#define OBJFS_ARENA_REF		0x1u
#define OBJFS_ARENA_DIRTY	0x2u

struct objfs_arena_victim {
	uint64_t ino;
	uint64_t idx;
	uint64_t off;
	uint32_t cap;
	uint32_t dirty;
};

void objfs_arena_set_owner(struct objfs_arena *a, uint64_t off, uint64_t ino,
		uint64_t idx);
/* Mark the block at @off referenced, and dirty when @dirty.  Lock-free. */
void objfs_arena_touch(struct objfs_arena *a, uint64_t off, int dirty);
/* The block's bytes now equal their disk copy.  Lock-free. */
void objfs_arena_mark_clean(struct objfs_arena *a, uint64_t off);
/*
 * Advance the clock and collect up to @max blocks not referenced since the
 * hand last passed them; with @clean_only, dirty blocks are passed over
 * (and keep their reference).  Scans at most two turns of the arena.
 * Returns the number of victims written to @v.  The caller re-checks each
 * victim under its owner's lock: the tag may change meanwhile.
 */
int objfs_arena_clock(struct objfs_arena *a, int clean_only,
		struct objfs_arena_victim *v, int max);

#endif
