/* SPDX-License-Identifier: MIT */
/*
 * arena.h - the shared-memory arena that holds file bytes.
 *
 * One shared-memory file of fixed capacity, mapped MAP_SHARED once and
 * never grown: a file in a private directory under /dev/shm that outlives
 * the daemon (objfs_arena_create_shared, objfs_arena_adopt), or a memfd
 * that does not (objfs_arena_create).  Blocks are named by their byte
 * offset from the start of the mapping, never by pointer.  Only the
 * daemon maps it.  Blocks are powers of two from OBJFS_ARENA_MIN_BLOCK up
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

#include "src/base/bits.h"

#define OBJFS_ARENA_MIN_BLOCK	4096u
#define OBJFS_ARENA_MAGIC	0x414e4552414a424fULL	/* "OBJAREN A" */
#define OBJFS_ARENA_VERSION	3u	/* 3: tags carry a check */

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
 * The same, as the file "arena" (0600) in a new directory (0700, a name
 * mkdtemp makes under @root, normally /dev/shm), so that a daemon started
 * after this one dies can adopt it.  @dir_id names the data directory;
 * the boot is recorded too.  The file's path is written to @path.
 */
int objfs_arena_create_shared(const char *root, uint64_t capacity,
		uint32_t chunk_size, uint64_t dir_id, char *path, size_t path_size,
		struct objfs_arena **out);

/*
 * What a dead daemon's arena still holds: each block published for a
 * chunk (the newest one when two name the same chunk), and each change in
 * progress at its death (an intent).
 */
struct objfs_arena_found {
	uint64_t ino, idx;
	uint64_t off;
	uint32_t cap;
	uint32_t flags;		/* OBJFS_ARENA_TAG_DIRTY, _PARTIAL */
	uint64_t size;		/* the file's size as of its last change */
	int64_t mtime_ns;	/* the time of the last write into it */
	uint64_t csum;		/* clean: the checksum of the disk copy */
	uint64_t seq;		/* when it was published (newest wins) */
	uint64_t valid[OBJFS_BITS_WORDS];	/* PARTIAL: the sub-blocks it
						 * holds */
};

#define OBJFS_ARENA_INTENTS	64
enum { OBJFS_INTENT_TRUNCATE = 1, OBJFS_INTENT_ZERO = 2 };
struct objfs_arena_redo {
	uint64_t ino;
	uint32_t kind;
	uint64_t a, b;		/* TRUNCATE: size; ZERO: offset, length */
};

/*
 * Adopt the arena at @path left by a daemon that is gone (the data
 * directory's lock says so): it must be a regular file of this user's,
 * mode 0600, in a 0700 directory of this user's, made on this boot for
 * the data directory @dir_id with @chunk_size.  Its published blocks are
 * allocated again, with their owners; *found (sorted by inode, chunk) and
 * *redo list them and the changes to finish.  The caller frees each block
 * it does not keep.  -ENOENT (with *why) when there is nothing to adopt.
 */
int objfs_arena_adopt(const char *path, uint32_t chunk_size, uint64_t dir_id,
		struct objfs_arena **out, struct objfs_arena_found **found,
		size_t *nfound, struct objfs_arena_redo *redo, int *nredo,
		const char **why);

/* How many tags of the adopted arena failed their check (damaged, or
 * not written by objfs): their blocks were not adopted. */
uint64_t objfs_arena_damaged_tags(const struct objfs_arena *a);

/* Remove the arena's file and directory (a clean unmount: its bytes are
 * all on disk), or keep it for the next mount (-o keep_arena): frees from
 * then on leave the tags as they are. */
void objfs_arena_remove(struct objfs_arena *a);
void objfs_arena_keep(struct objfs_arena *a);
/* The path of a shared arena, or NULL for a memfd. */
const char *objfs_arena_path(const struct objfs_arena *a);
/* The intents (objfs_arena_intent) left: done after adoption. */
void objfs_arena_clear_intents(struct objfs_arena *a);

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
/* Start the warmer (arena_warm.c): the pages of the free slabs handed out
 * next are faulted in ahead of their use, by a thread of its own, stopped
 * by objfs_arena_destroy.  _warmed: the bytes it faulted in so far. */
int objfs_arena_warm_start(struct objfs_arena *a);
uint64_t objfs_arena_warmed(struct objfs_arena *a);

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

/*
 * Tags: what the arena itself records of each block, for the daemon that
 * adopts it after this one dies (a 64-byte entry per 4 KiB block, after
 * the blocks).  A block is published once it holds its chunk's bytes, and
 * its tag is cleared when it is freed, before anyone else can have it.
 * The data path orders its stores so that at any instant the tags say no
 * more than the blocks hold: a block is marked dirty before its bytes
 * change, and clean (with the disk copy's checksum) only once that copy's
 * record is committed.  Callers hold the owner's lock.
 */
#define OBJFS_ARENA_TAG_DIRTY	0x1u
#define OBJFS_ARENA_TAG_PARTIAL	0x2u

void objfs_arena_publish(struct objfs_arena *a, uint64_t off, uint64_t ino,
		uint64_t idx, uint32_t flags, uint64_t size, int64_t mtime_ns,
		uint64_t csum, const uint64_t *valid);
int objfs_arena_published(struct objfs_arena *a, uint64_t off);
/* About to change the block's bytes. */
void objfs_arena_tag_dirty(struct objfs_arena *a, uint64_t off);
/* Changed: the file is now @size (kept if larger), written at @mtime_ns;
 * @valid, when not NULL, is the PARTIAL block's sub-blocks. */
void objfs_arena_tag_write(struct objfs_arena *a, uint64_t off, uint64_t size,
		int64_t mtime_ns, const uint64_t *valid);
/* Equal to the disk copy whose checksum is @csum (its record committed). */
void objfs_arena_tag_clean(struct objfs_arena *a, uint64_t off, uint64_t csum);
/* The file was cut to @size. */
void objfs_arena_tag_cut(struct objfs_arena *a, uint64_t off, uint64_t size);
/* The block holds all of its chunk now (no longer PARTIAL). */
void objfs_arena_tag_whole(struct objfs_arena *a, uint64_t off);

/*
 * Intents: a truncation or zeroing of inode @ino in progress, recorded
 * before its index commit and cleared once the arena is cut to match, so
 * that a daemon adopting the arena finishes it (it is idempotent).
 * Returns the slot for objfs_arena_intent_end().
 */
int objfs_arena_intent(struct objfs_arena *a, uint64_t ino, uint32_t kind,
		uint64_t x, uint64_t y);
void objfs_arena_intent_end(struct objfs_arena *a, int slot);

#endif
