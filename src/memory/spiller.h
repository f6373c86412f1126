/* SPDX-License-Identifier: MIT */
/*
 * spiller.h - the spiller and the restore threads, as a module that owns
 * its state: the watermarks, the threads, the back-pressure of writers
 * waiting for room, and the ring of restore and read-ahead requests.
 *
 * It knows the arena (whose clock chooses victims and whose figures say
 * when to work) and nothing else of the store: it reaches the file layer
 * only through the calls in struct objfs_spiller_ops, each of which finds
 * the inode, takes its lock, does the work and lets it go.  The spiller
 * holds none of its own locks across them.
 *
 * Every function but start takes NULL (before the spiller is started, or
 * after it failed to start) and then does nothing: kick and the requests
 * are dropped, waiting for room fails with -ENOSPC at once.
 */
#ifndef OBJFS_SPILLER_H
#define OBJFS_SPILLER_H

#include <stdint.h>

struct objfs_arena;
struct objfs_arena_victim;
struct objfs_spiller;

struct objfs_spiller_ops {
	/* Write out what is dirty among @v[0..n) (the victims of one inode,
	 * in ascending chunk order, at most OBJFS_SPILLER_BATCH) and drop
	 * them; the bytes freed, and the first error in *err. */
	uint64_t (*evict)(void *ctx, const struct objfs_arena_victim *v,
			int n, int *err);
	/* A full disk: give back now the space that waits for a commit to
	 * be durable.  1 if there was any. */
	int (*reclaim)(void *ctx);
	/* Restore @n spilled chunks of @ino from @idx into the arena. */
	void (*restore)(void *ctx, uint64_t ino, uint64_t idx, uint64_t n);
	/* Load chunk @idx of @ino into its read-ahead slot @slot, if request
	 * @gen still wants it. */
	void (*read_ahead)(void *ctx, uint64_t ino, uint64_t idx, int slot,
			uint64_t gen);
	/* Free up to @want bytes of memory that nobody uses and that costs
	 * nothing to drop but is not in the clock (the per-object files of
	 * sealed objects); the bytes freed.  May be NULL. */
	uint64_t (*shed)(void *ctx, uint64_t want);
};

struct objfs_spiller_config {
	struct objfs_arena *arena;
	uint32_t chunk_size;
	uint64_t high_bytes;		/* start spilling above this use */
	uint64_t low_bytes;		/* stop at this use */
	unsigned restore_threads;	/* 1 or more */
	const struct objfs_spiller_ops *ops;
	void *ctx;			/* given to every op */
};

struct objfs_spiller_stats {
	uint64_t dropped_bytes;		/* arena bytes freed by evictions */
	uint64_t write_waits;		/* times a writer waited for room */
	uint64_t high_bytes, low_bytes;
};

/* The victims evicted at a time (the arena's clock gives at most this). */
#define OBJFS_SPILLER_BATCH	64

int objfs_spiller_start(const struct objfs_spiller_config *cfg,
		struct objfs_spiller **out);
/* Stop the threads (writers waiting get -ENOSPC) and free it. */
void objfs_spiller_stop(struct objfs_spiller *sp);
/* Wake the spiller and wait for one pass: 0 when it freed something,
 * -ENOSPC (or its write error) when it could free nothing.  No lock may
 * be held: the pass may evict the caller's own chunks. */
int objfs_spiller_wait_space(struct objfs_spiller *sp);
/* After an allocation: wake the spiller if use is past the high
 * watermark and it is not at work already.  Cheap when it is. */
void objfs_spiller_kick(struct objfs_spiller *sp);
/* Ask for chunks from @idx of @ino to be restored in the background. */
void objfs_spiller_restore_ahead(struct objfs_spiller *sp, uint64_t ino,
		uint64_t idx);
/* Ask for chunk @idx of @ino to be loaded into read-ahead slot @slot;
 * -EAGAIN when the ring is full (then nothing will load it). */
int objfs_spiller_read_ahead(struct objfs_spiller *sp, uint64_t ino,
		uint64_t idx, int slot, uint64_t gen);
void objfs_spiller_get_stats(struct objfs_spiller *sp,
		struct objfs_spiller_stats *st);

#endif
