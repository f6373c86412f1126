/* SPDX-License-Identifier: MIT */
/*
 * arena_int.h - what arena.c (the allocator) and arena_adopt.c (taking
 * over a dead daemon's arena) share: the shared mapping's layout, the
 * private bookkeeping (arena.c's header describes both) and the helpers
 * both use.  Not for the arena's users: arena.h is theirs.
 */
#ifndef OBJFS_ARENA_INT_H
#define OBJFS_ARENA_INT_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "src/memory/arena.h"
#include "src/base/csum.h"

#define STATE_FREE	0x80u
#define NIL		UINT32_MAX
#define MAX_ORDERS	20		/* 4 KiB << 19 = 2 GiB chunks at most */

struct objfs_arena_tag {
	_Atomic uint64_t ino;		/* 0: nothing published here */
	uint32_t seq;			/* publication order (serial number
					 * arithmetic: it wraps) */
	uint32_t check;			/* tag_check() of who the block is:
					 * its place, ino, idx, order, seq */
	uint64_t size;
	uint64_t csum;
	int64_t mtime_ns;
	uint32_t idx;
	_Atomic uint32_t flags;		/* TAG_DIRTY, TAG_PARTIAL; order << 8 */
	uint64_t valid[2];		/* PARTIAL: sub-blocks 0-127; the next
					 * ones in the @valid of the block's
					 * next entries (tag_valid_*) */
};
_Static_assert(sizeof(struct objfs_arena_tag) == 64, "tag layout is shared");

struct objfs_arena_intent {
	_Atomic uint64_t ino;		/* 0 free, INTENT_BUSY being written */
	uint32_t kind;
	uint32_t pad;
	uint64_t a, b;
};
#define INTENT_BUSY	UINT64_MAX

struct objfs_arena_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t chunk_size;
	uint64_t capacity;
	_Atomic uint64_t used;
	uint64_t dir_id;
	_Atomic uint64_t seq;		/* the last tag published */
	uint64_t pad;
	char boot_id[40];
	struct objfs_arena_intent intents[OBJFS_ARENA_INTENTS];
};
_Static_assert(sizeof(struct objfs_arena_hdr) <= OBJFS_ARENA_MIN_BLOCK,
		"arena header must fit in the first block");

struct objfs_arena {
	int fd;
	unsigned char *base;
	uint64_t capacity;
	uint64_t map_size;		/* capacity + the tag table */
	uint32_t chunk_size;
	unsigned max_order;		/* chunk = MIN_BLOCK << max_order */
	uint32_t nblocks;		/* capacity / MIN_BLOCK */
	struct objfs_arena_hdr *hdr;
	struct objfs_arena_tag *tags;	/* nblocks, after the blocks */
	char *path;			/* the shared file, or NULL (memfd) */
	int kept;			/* frees leave the tags (keep) */
	uint8_t *ready;			/* protected by lock: per slab, its
					 * pages are allocated (shared file) */

	pthread_mutex_t lock;
	uint8_t *state;			/* protected by lock */
	uint32_t *next;			/* protected by lock */
	uint32_t *prev;			/* protected by lock */
	uint32_t head[MAX_ORDERS];	/* protected by lock */
	uint64_t used;			/* protected by lock */
	uint64_t *own_ino;		/* protected by lock */
	uint64_t *own_idx;		/* protected by lock */
	_Atomic uint8_t *own_flags;	/* atomic */
	_Atomic uint64_t dirty;		/* bytes of blocks flagged DIRTY */
	uint32_t hand;			/* protected by lock: clock position */
	/* The warmer (arena_warm.c): per slab, 1 once it has taken it
	 * (its pages faulted in, or being, or left cold on a failure). */
	uint8_t *warm;			/* protected by lock */
	pthread_cond_t warm_cv;		/* with lock: a whole slab taken, or
					 * stop */
	pthread_t warm_thread;
	int warm_on, warm_stop;		/* protected by lock */
	_Atomic uint64_t warmed;	/* bytes faulted in ahead */
	uint64_t damaged;		/* adoption: tags that failed their
					 * check (set before it returns) */
};

/* What a tag says the block at @i is, hashed: a tag damaged in its
 * owner, chunk, order or number, or moved to another block, fails it,
 * and adoption leaves that block alone.  Set once, when the block is
 * published (the fields it covers do not change until it is freed), so a
 * daemon killed at any instant leaves it true. */
static inline uint32_t
tag_check(uint32_t i, uint64_t ino, uint32_t idx, unsigned order,
		uint32_t seq)
{
	uint64_t w[4] = { i, ino, ((uint64_t)order << 32) | idx, seq };

	return (uint32_t)objfs_csum64(w, sizeof(w));
}

static inline struct objfs_arena_tag *
tag_of(struct objfs_arena *a, uint64_t off)
{
	assert(off % OBJFS_ARENA_MIN_BLOCK == 0 && off < a->capacity);
	return &a->tags[off / OBJFS_ARENA_MIN_BLOCK];
}

/*
 * A PARTIAL block's set of sub-blocks is longer than one entry holds when
 * its chunk has more than 128: the rest goes into the @valid of the
 * block's next entries, which nothing else uses (a block's entries after
 * its first are never published while it is one).  Only blocks of more
 * than 128 sub-blocks of 4 KiB have such sets, and so the entries.
 */
#define TAG_WORDS	2u
static inline void
tag_valid_put(struct objfs_arena_tag *t, unsigned order, const uint64_t *valid)
{
	for (unsigned w = 0; w < OBJFS_BITS_WORDS; w++) {
		uint64_t v = valid ? valid[w] : 0;

		if (w / TAG_WORDS >= (1u << order)) {
			assert(v == 0);
			continue;
		}
		t[w / TAG_WORDS].valid[w % TAG_WORDS] = v;
	}
}

static inline void
tag_valid_get(const struct objfs_arena_tag *t, unsigned order, uint64_t *valid)
{
	for (unsigned w = 0; w < OBJFS_BITS_WORDS; w++)
		valid[w] = w / TAG_WORDS < (1u << order) ?
			t[w / TAG_WORDS].valid[w % TAG_WORDS] : 0;
}

static inline unsigned
order_of(size_t size)
{
	unsigned k = 0;

	while (((size_t)OBJFS_ARENA_MIN_BLOCK << k) < size)
		k++;
	return k;
}

static inline void
list_push(struct objfs_arena *a, unsigned k, uint32_t i)
{
	a->state[i] = (uint8_t)(k | STATE_FREE);
	a->prev[i] = NIL;
	a->next[i] = a->head[k];
	if (a->head[k] != NIL)
		a->prev[a->head[k]] = i;
	a->head[k] = i;
}

static inline void
list_remove(struct objfs_arena *a, unsigned k, uint32_t i)
{
	assert(a->state[i] == (k | STATE_FREE));
	if (a->prev[i] != NIL)
		a->next[a->prev[i]] = a->next[i];
	else
		a->head[k] = a->next[i];
	if (a->next[i] != NIL)
		a->prev[a->next[i]] = a->prev[i];
	a->state[i] = (uint8_t)k;
}

/* arena.c */
/* The capacity a mapping of @capacity arena bytes needs, tags included. */
uint64_t arena_map_bytes(uint64_t capacity);
/* Round @capacity to whole chunks; -EINVAL when it cannot hold one. */
int arena_check_sizes(uint64_t *capacity, uint32_t chunk_size);
/* The private bookkeeping of an arena of @capacity (no mapping yet). */
int arena_setup(uint64_t capacity, uint32_t chunk_size,
		struct objfs_arena **out);
void arena_teardown(struct objfs_arena *a);
/* Map a->fd (a->map_size bytes): a->base, a->hdr, a->tags. */
int arena_map_it(struct objfs_arena *a);
/* This boot's id (/proc/sys/kernel/random/boot_id), NUL-terminated. */
void arena_read_boot_id(char *out, size_t size);

/* Allocate slab @slab's pages and its tags' in the arena's file
 * (fallocate; no lock needed): 0 or -errno. */
int arena_alloc_pages(struct objfs_arena *a, uint32_t slab);
/* The warmer's, for arena.c: a whole slab was taken (lock held). */
void arena_warm_kick(struct objfs_arena *a);
void arena_warm_stop(struct objfs_arena *a);

#endif
