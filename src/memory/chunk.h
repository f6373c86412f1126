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
 * zeros.  A resident dirty chunk may be PARTIAL: only the sub-blocks in
 * @valid hold its bytes, the others are those of its disk copy (data.c).
 * Block bytes past end of file are kept zero, so growing a file never
 * exposes old bytes.
 *
 * Where the disk (durable) copy is, is the chunk store's (copy.h): @slot,
 * @alt and @home are its name for it, read by the store alone.  For the
 * backing directory (local.c), a disk copy lives in a slot of the
 * object's backing file: chunk-sized,
 * slot s at byte s * chunk size.  Chunk i goes to slot i when that slot is
 * free; a new version never goes to the slot of a copy that an index
 * record, durable or not, still points at (copy-on-write), so it then
 * takes another one.  The slot map says which slots are taken.  A disk
 * copy may be shared with other chunks, of this object or others
 * (local_dedup.c): then @home names the object whose file holds it.
 *
 * Not thread-safe: the owner (the inode) holds its lock around every call.
 */
#ifndef OBJFS_CHUNK_H
#define OBJFS_CHUNK_H

#include <stdint.h>

#include "src/memory/arena.h"

#define OBJFS_CHUNK_DIRTY	0x1u	/* arena copy differs from the disk */
#define OBJFS_CHUNK_ONDISK	0x2u	/* a disk copy and its record exist */
#define OBJFS_CHUNK_SUMS	0x4u	/* the disk copy's record has sub-block
					 * sums (csum.h): parts of it can be
					 * read and checked alone */
#define OBJFS_CHUNK_ALT		0x8u	/* ... and a second slot, @alt, that
					 * holds some of them (backing.h) */
#define OBJFS_CHUNK_PARTIAL	0x10u	/* resident, but only the sub-blocks
					 * in @valid hold its bytes (a write
					 * into a spilled chunk that did not
					 * restore it; data.c) */
#define OBJFS_CHUNK_PARTREAD	0x20u	/* spilled, and a jumping reader read
					 * a part of it: the next such read
					 * restores it (when there is room) */

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
	uint64_t alt;		/* the second slot (OBJFS_CHUNK_ALT); which
				 * sub-blocks are there is in the record */
	uint64_t home;		/* 0: the disk copy is in this object's
				 * backing file (shared or not: the share
				 * DB says); else in object @home's, a copy
				 * shared with it (local_dedup.c) */
	/* Sub-blocks changed since the block last equalled the disk copy
	 * (all ones: not known), and (PARTIAL) those the block holds. */
	uint64_t dsub[OBJFS_BITS_WORDS];
	uint64_t valid[OBJFS_BITS_WORDS];
};

/*
 * The map is a radix tree: leaves of 8 entries, inner nodes of 16
 * pointers, as tall as the highest entry needs.  Memory follows the
 * chunks a file has, not its highest offset: a 1-byte write at the
 * largest offset adds one leaf and at most five nodes (about 1 KiB), and
 * a dense file costs its entries and a sixteenth more.  Entries that were
 * never given bytes do not exist; objfs_chunkmap_get() answers NULL for
 * them (a hole).
 */
struct objfs_chunkmap {
	void *root;		/* a leaf when height is 0 */
	unsigned height;	/* inner levels above the leaves */
	uint64_t n;		/* one past the highest entry made */
	uint64_t ndirty;	/* entries with OBJFS_CHUNK_DIRTY */
};

/* Chunk indexes go up to 2^OBJFS_CHUNKMAP_BITS - 1. */
#define OBJFS_CHUNKMAP_BITS	23

void objfs_chunkmap_init(struct objfs_chunkmap *m);
/* Free every resident block and the map itself. */
void objfs_chunkmap_fini(struct objfs_chunkmap *m, struct objfs_arena *a);

/* Entry @idx, made (a hole) when it does not exist; NULL on ENOMEM or
 * an index past OBJFS_CHUNKMAP_BITS. */
struct objfs_chunk *objfs_chunkmap_add(struct objfs_chunkmap *m, uint64_t idx);

/* Entry @idx, or NULL when it does not exist (a hole). */
struct objfs_chunk *objfs_chunkmap_get(const struct objfs_chunkmap *m,
		uint64_t idx);

/* The first entry at or after @idx, its index in *@out; NULL when there
 * is none.  Entries that exist may be holes. */
struct objfs_chunk *objfs_chunkmap_next(const struct objfs_chunkmap *m,
		uint64_t idx, uint64_t *out);

/* Every entry from @from on, in order: @i its index, @c the entry. */
#define OBJFS_CHUNKMAP_EACH(m, from, i, c) \
	for ((c) = objfs_chunkmap_next((m), (from), &(i)); (c); \
	     (c) = objfs_chunkmap_next((m), (i) + 1, &(i)))

/*
 * OBJFS_CHUNK_DIRTY is set and cleared only here, so that the map can
 * count the dirty entries in each subtree: entry @idx is @c.  Walking
 * the dirty entries then costs their number times the height, not the
 * file's chunks.
 */
void objfs_chunkmap_set_dirty(struct objfs_chunkmap *m, uint64_t idx,
		struct objfs_chunk *c, int dirty);
/* The first dirty entry at or after @idx (as objfs_chunkmap_next). */
struct objfs_chunk *objfs_chunkmap_next_dirty(const struct objfs_chunkmap *m,
		uint64_t idx, uint64_t *out);
#define OBJFS_CHUNKMAP_EACH_DIRTY(m, from, i, c) \
	for ((c) = objfs_chunkmap_next_dirty((m), (from), &(i)); (c); \
	     (c) = objfs_chunkmap_next_dirty((m), (i) + 1, &(i)))
/* Has any entry a block in the arena?  Stops at the first. */
int objfs_chunkmap_has_resident(const struct objfs_chunkmap *m);

enum objfs_chunk_state objfs_chunk_state(const struct objfs_chunk *c);

/* Free the block of entry @idx (@c), if any; the chunk keeps its disk
 * state.  Bytes of a dirty chunk are discarded: callers drop clean
 * chunks, or chunks that truncation removes. */
void objfs_chunkmap_drop(struct objfs_chunkmap *m, uint64_t idx,
		struct objfs_chunk *c, struct objfs_arena *a);

/* Free blocks of entries >= @first, remove those entries, and make the
 * map end at @first at most. */
void objfs_chunkmap_cut(struct objfs_chunkmap *m, struct objfs_arena *a,
		uint64_t first);

/* The bytes the chunks hold, each its arena block or its disk copy
 * (rounded up to 4 KiB), whichever is larger: a file's st_blocks. */
uint64_t objfs_chunkmap_held(const struct objfs_chunkmap *m);

/* Bytes resident in the arena and bytes with a disk copy. */
void objfs_chunkmap_usage(const struct objfs_chunkmap *m, uint64_t *resident,
		uint64_t *ondisk);

/* The slots of one backing file that are taken: sorted, disjoint runs
 * [lo, hi), merged when they touch, so memory follows the runs, not the
 * highest slot. */
struct objfs_slot_run {
	uint64_t lo, hi;
};

struct objfs_slotmap {
	struct objfs_slot_run *run;
	uint64_t n, alloc;
};

void objfs_slots_init(struct objfs_slotmap *m);
void objfs_slots_fini(struct objfs_slotmap *m);
/* Take @slot: 0, -EEXIST when it is taken already, -ENOMEM. */
int objfs_slots_take(struct objfs_slotmap *m, uint64_t slot);
/* Give @slot back.  Splitting a run needs memory: without it the slot
 * stays taken (never reused until the map is rebuilt at the next load),
 * which is safe. */
void objfs_slots_put(struct objfs_slotmap *m, uint64_t slot);
int objfs_slots_taken(const struct objfs_slotmap *m, uint64_t slot);
/* One past the highest slot taken (0 when none is). */
uint64_t objfs_slots_end(const struct objfs_slotmap *m);
/* Take @want if it is free, else the lowest free slot from @floor on;
 * the slot in *@out.  0 or -ENOMEM. */
int objfs_slots_alloc(struct objfs_slotmap *m, uint64_t want, uint64_t floor,
		uint64_t *out);

#endif
