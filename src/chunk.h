/* SPDX-License-Identifier: MIT */
/*
 * chunk.h - the chunk map of one object.
 *
 * An object's bytes are a sequence of fixed-size chunks; the map holds one
 * entry per chunk up to the last one that was ever given bytes.  A chunk
 * is in one of these states:
 *
 *	hole		neither resident nor on disk: reads as zeros
 *	resident dirty	in the arena, newer than any disk copy
 *	resident clean	in the arena and identical to its disk copy
 *			(evicting it costs nothing)
 *	on disk		only in the backing file
 *
 * A resident chunk's block may be smaller than a chunk (the tail of a small
 * file); bytes past the block, and past the disk copy's length, read as
 * zeros.  Block bytes past end of file are kept zero, so growing a file
 * never exposes old bytes.
 *
 * A disk copy lives in a slot of the object's backing file: chunk-sized,
 * slot s at byte s * chunk size.  Chunk i goes to slot i when that slot is
 * free; a new version never goes to the slot of a copy that an index
 * record, durable or not, still points at (copy-on-write), so it then
 * takes another one.  The slot map says which slots are taken.
 *
 * Not thread-safe: the owner (the inode) holds its lock around every call.
 */
#ifndef OBJFS_CHUNK_H
#define OBJFS_CHUNK_H

#include <stdint.h>

#include "arena.h"

#define OBJFS_CHUNK_DIRTY	0x1u	/* arena copy differs from the disk */
#define OBJFS_CHUNK_ONDISK	0x2u	/* a disk copy and its record exist */
#define OBJFS_CHUNK_RECDIRTY	0x4u	/* record in memory not in the index */
#define OBJFS_CHUNK_SEL		0x8u	/* chosen for the write-out under way */

enum objfs_chunk_state {
	OBJFS_CHUNK_HOLE,
	OBJFS_CHUNK_RESIDENT_DIRTY,
	OBJFS_CHUNK_RESIDENT_CLEAN,
	OBJFS_CHUNK_SPILLED,
};

struct objfs_chunk {
	uint64_t off;		/* arena offset; valid when cap != 0 */
	uint64_t csum;		/* checksum of the disk copy (ONDISK) */
	uint64_t slot;		/* slot of the disk copy (ONDISK) */
	uint32_t cap;		/* arena block size, 0 = not resident */
	uint32_t disk_len;	/* bytes in the disk copy (ONDISK) */
	uint32_t flags;
	uint32_t dirty_lo;	/* the lowest byte changed since the block
				 * last equalled the disk copy (0: not known) */
	uint64_t rec_seq;	/* the commit that made its record (ONDISK):
				 * until it is durable, an older, longer
				 * record of the same slot may be the one a
				 * crash brings back */
};

struct objfs_chunkmap {
	struct objfs_chunk *v;
	uint64_t n;		/* entries in use */
	uint64_t alloc;		/* entries allocated */
};

void objfs_chunkmap_init(struct objfs_chunkmap *m);
/* Free every resident block and the map itself. */
void objfs_chunkmap_fini(struct objfs_chunkmap *m, struct objfs_arena *a);

/* Make entries [0, n) exist (new ones are holes).  0 or -ENOMEM. */
int objfs_chunkmap_ensure(struct objfs_chunkmap *m, uint64_t n);

/* Entry @idx, or NULL when @idx is past the map (a hole). */
struct objfs_chunk *objfs_chunkmap_get(struct objfs_chunkmap *m, uint64_t idx);

enum objfs_chunk_state objfs_chunk_state(const struct objfs_chunk *c);

/* Free the block of @c, if any; the chunk keeps its disk state.  Bytes of
 * a dirty chunk are discarded: callers drop clean chunks, or chunks that
 * truncation removes. */
void objfs_chunk_drop(struct objfs_chunk *c, struct objfs_arena *a);

/* Free blocks of entries >= @first and shorten the map to @first. */
void objfs_chunkmap_cut(struct objfs_chunkmap *m, struct objfs_arena *a,
		uint64_t first);

/* Bytes resident in the arena and bytes with a disk copy. */
void objfs_chunkmap_usage(const struct objfs_chunkmap *m, uint64_t *resident,
		uint64_t *ondisk);

/* The slots of one backing file that are taken: a bitmap. */
struct objfs_slotmap {
	uint64_t *bits;
	uint64_t words;
};

void objfs_slots_init(struct objfs_slotmap *m);
void objfs_slots_fini(struct objfs_slotmap *m);
/* Take @slot: 0, -EEXIST when it is taken already, -ENOMEM. */
int objfs_slots_take(struct objfs_slotmap *m, uint64_t slot);
void objfs_slots_put(struct objfs_slotmap *m, uint64_t slot);
int objfs_slots_taken(const struct objfs_slotmap *m, uint64_t slot);
/* One past the highest slot taken (0 when none is). */
uint64_t objfs_slots_end(const struct objfs_slotmap *m);
/* Take @want if it is free, else the lowest free slot from @floor on;
 * the slot in *@out.  0 or -ENOMEM. */
int objfs_slots_alloc(struct objfs_slotmap *m, uint64_t want, uint64_t floor,
		uint64_t *out);

#endif
