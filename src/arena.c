/* SPDX-License-Identifier: MIT */
/*
 * arena.c - a binary buddy allocator over a memfd.
 *
 * Layout of the shared mapping:
 *
 *	offset 0	struct objfs_arena_hdr (magic, version, sizes, use);
 *			the first MIN_BLOCK is allocated to it for good
 *	...		blocks, each 2^k * MIN_BLOCK bytes, aligned to its size
 *
 * The capacity is a whole number of chunks, and a chunk is the largest
 * block, so every chunk-sized slab is a buddy tree of its own.
 *
 * Bookkeeping lives in private memory, not in the arena, so that managing
 * free blocks never touches (and so never faults in) arena pages:
 *
 *	state[i]	for the min-block index i that starts a block:
 *			its order, plus STATE_FREE when it is on a free list
 *	next[i],prev[i]	doubly linked free lists, one per order, LIFO, so
 *			the block freed last (whose pages are warm) is reused first
 *	own_ino[i],	owner of the allocated block starting at i (0: none),
 *	own_idx[i]	set by objfs_arena_set_owner(), cleared on free
 *	own_flags[i]	REF and DIRTY bits, atomics set by the data path
 *			without the lock, cleared by the clock under it
 *
 * Invariants (checked by assert in debug builds): a block on free list k
 * has state == (k | STATE_FREE); two free buddies of the same order never
 * both exist (they are merged on free); used == sum of allocated blocks.
 *
 * Locking: every field below the mutex is protected by arena->lock.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena.h"

#define STATE_FREE	0x80u
#define NIL		UINT32_MAX
#define MAX_ORDERS	20		/* 4 KiB << 19 = 2 GiB chunks at most */

struct objfs_arena_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t chunk_size;
	uint64_t capacity;
	_Atomic uint64_t used;
};
_Static_assert(sizeof(struct objfs_arena_hdr) == 32,
		"arena header layout is shared: keep it fixed");
_Static_assert(sizeof(struct objfs_arena_hdr) <= OBJFS_ARENA_MIN_BLOCK,
		"arena header must fit in the first block");

struct objfs_arena {
	int fd;
	unsigned char *base;
	uint64_t capacity;
	uint32_t chunk_size;
	unsigned max_order;		/* chunk = MIN_BLOCK << max_order */
	uint32_t nblocks;		/* capacity / MIN_BLOCK */
	struct objfs_arena_hdr *hdr;

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
};

static unsigned
order_of(size_t size)
{
	unsigned k = 0;

	while (((size_t)OBJFS_ARENA_MIN_BLOCK << k) < size)
		k++;
	return k;
}

static void
list_push(struct objfs_arena *a, unsigned k, uint32_t i)
{
	a->state[i] = (uint8_t)(k | STATE_FREE);
	a->prev[i] = NIL;
	a->next[i] = a->head[k];
	if (a->head[k] != NIL)
		a->prev[a->head[k]] = i;
	a->head[k] = i;
}

static void
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

static int
alloc_locked(struct objfs_arena *a, unsigned order, uint32_t *idx_out)
{
	unsigned k = order;
	uint32_t i;

	while (k <= a->max_order && a->head[k] == NIL)
		k++;
	if (k > a->max_order)
		return -ENOSPC;
	i = a->head[k];
	list_remove(a, k, i);
	while (k > order) {
		k--;
		list_push(a, k, i + (1u << k));
	}
	a->state[i] = (uint8_t)order;
	a->used += (uint64_t)OBJFS_ARENA_MIN_BLOCK << order;
	atomic_store_explicit(&a->hdr->used, a->used, memory_order_relaxed);
	*idx_out = i;
	return 0;
}

int
objfs_arena_create(uint64_t capacity, uint32_t chunk_size,
		struct objfs_arena **out)
{
	struct objfs_arena *a;
	uint32_t idx;
	uint64_t n;
	int rc;

	if (chunk_size < 2 * OBJFS_ARENA_MIN_BLOCK ||
	    (chunk_size & (chunk_size - 1)) != 0 ||
	    order_of(chunk_size) >= MAX_ORDERS)
		return -EINVAL;
	capacity -= capacity % chunk_size;
	if (capacity < 2ull * chunk_size ||
	    capacity / OBJFS_ARENA_MIN_BLOCK >= NIL)
		return -EINVAL;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->capacity = capacity;
	a->chunk_size = chunk_size;
	a->max_order = order_of(chunk_size);
	a->nblocks = (uint32_t)(capacity / OBJFS_ARENA_MIN_BLOCK);
	a->state = calloc(a->nblocks, 1);
	a->next = malloc((size_t)a->nblocks * sizeof(uint32_t));
	a->prev = malloc((size_t)a->nblocks * sizeof(uint32_t));
	a->own_ino = calloc(a->nblocks, sizeof(uint64_t));
	a->own_idx = calloc(a->nblocks, sizeof(uint64_t));
	a->own_flags = calloc(a->nblocks, sizeof(*a->own_flags));
	if (!a->state || !a->next || !a->prev || !a->own_ino || !a->own_idx ||
	    !a->own_flags) {
		rc = -ENOMEM;
		goto err_free;
	}
	rc = pthread_mutex_init(&a->lock, NULL);
	if (rc) {
		rc = -rc;
		goto err_free;
	}
	a->fd = memfd_create("objfs-arena", MFD_CLOEXEC);
	if (a->fd < 0) {
		rc = -errno;
		goto err_mutex;
	}
	if (ftruncate(a->fd, (off_t)capacity) < 0) {
		rc = -errno;
		goto err_close;
	}
	a->base = mmap(NULL, capacity, PROT_READ | PROT_WRITE, MAP_SHARED,
			a->fd, 0);
	if (a->base == MAP_FAILED) {
		rc = -errno;
		goto err_close;
	}
	/* Huge pages make first touch and TLB misses cheaper; best effort. */
	(void)madvise(a->base, capacity, MADV_HUGEPAGE);

	for (unsigned k = 0; k < MAX_ORDERS; k++)
		a->head[k] = NIL;
	/* Push slabs from the top so that the lowest offsets are used first. */
	n = capacity / chunk_size;
	while (n-- > 0)
		list_push(a, a->max_order,
				(uint32_t)(n * (chunk_size / OBJFS_ARENA_MIN_BLOCK)));

	a->hdr = (struct objfs_arena_hdr *)a->base;
	rc = alloc_locked(a, 0, &idx);
	assert(rc == 0 && idx == 0);
	a->hdr->magic = OBJFS_ARENA_MAGIC;
	a->hdr->version = OBJFS_ARENA_VERSION;
	a->hdr->chunk_size = chunk_size;
	a->hdr->capacity = capacity;
	*out = a;
	return 0;

err_close:
	close(a->fd);
err_mutex:
	pthread_mutex_destroy(&a->lock);
err_free:
	free(a->state);
	free(a->next);
	free(a->prev);
	free(a->own_ino);
	free(a->own_idx);
	free((void *)a->own_flags);
	free(a);
	return rc;
}

void
objfs_arena_destroy(struct objfs_arena *a)
{
	if (!a)
		return;
	munmap(a->base, a->capacity);
	close(a->fd);
	pthread_mutex_destroy(&a->lock);
	free(a->state);
	free(a->next);
	free(a->prev);
	free(a->own_ino);
	free(a->own_idx);
	free((void *)a->own_flags);
	free(a);
}

uint32_t
objfs_arena_block_size(const struct objfs_arena *a, size_t size)
{
	if (size == 0)
		size = 1;
	return (uint32_t)OBJFS_ARENA_MIN_BLOCK << order_of(size);
}

int
objfs_arena_alloc(struct objfs_arena *a, size_t size, uint64_t *off_out,
		uint32_t *cap_out)
{
	unsigned order;
	uint32_t idx;
	int rc;

	if (size == 0 || size > a->chunk_size)
		return -EINVAL;
	order = order_of(size);
	pthread_mutex_lock(&a->lock);
	rc = alloc_locked(a, order, &idx);
	pthread_mutex_unlock(&a->lock);
	if (rc < 0)
		return rc;
	*off_out = (uint64_t)idx * OBJFS_ARENA_MIN_BLOCK;
	*cap_out = (uint32_t)OBJFS_ARENA_MIN_BLOCK << order;
	return 0;
}

void
objfs_arena_free(struct objfs_arena *a, uint64_t off, uint32_t cap)
{
	uint32_t i = (uint32_t)(off / OBJFS_ARENA_MIN_BLOCK);
	unsigned k;

	assert(off % OBJFS_ARENA_MIN_BLOCK == 0 && i != 0 && i < a->nblocks);
	pthread_mutex_lock(&a->lock);
	k = a->state[i];
	assert(!(k & STATE_FREE));
	assert(((uint32_t)OBJFS_ARENA_MIN_BLOCK << k) == cap);
	(void)cap;
	a->used -= (uint64_t)OBJFS_ARENA_MIN_BLOCK << k;
	a->own_ino[i] = 0;
	if (atomic_exchange_explicit(&a->own_flags[i], 0, memory_order_relaxed) &
			OBJFS_ARENA_DIRTY)
		atomic_fetch_sub_explicit(&a->dirty,
				(uint64_t)OBJFS_ARENA_MIN_BLOCK << k,
				memory_order_relaxed);
	while (k < a->max_order) {
		uint32_t b = i ^ (1u << k);

		if (a->state[b] != (k | STATE_FREE))
			break;
		list_remove(a, k, b);
		a->state[b] = 0;
		a->state[i] = 0;
		if (b < i)
			i = b;
		k++;
	}
	list_push(a, k, i);
	atomic_store_explicit(&a->hdr->used, a->used, memory_order_relaxed);
	pthread_mutex_unlock(&a->lock);
}

void *
objfs_arena_ptr(struct objfs_arena *a, uint64_t off)
{
	assert(off < a->capacity);
	return a->base + off;
}

void
objfs_arena_get_stats(struct objfs_arena *a, struct objfs_arena_stats *st)
{
	int k;

	pthread_mutex_lock(&a->lock);
	/* The header block is bookkeeping, not user capacity. */
	st->capacity = a->capacity - OBJFS_ARENA_MIN_BLOCK;
	st->used = a->used - OBJFS_ARENA_MIN_BLOCK;
	st->largest_free = 0;
	for (k = (int)a->max_order; k >= 0; k--) {
		if (a->head[k] != NIL) {
			st->largest_free = (uint64_t)OBJFS_ARENA_MIN_BLOCK << k;
			break;
		}
	}
	pthread_mutex_unlock(&a->lock);
}

uint64_t
objfs_arena_used(struct objfs_arena *a)
{
	return atomic_load_explicit(&a->hdr->used, memory_order_relaxed) -
		OBJFS_ARENA_MIN_BLOCK;
}

int
objfs_arena_prefault(struct objfs_arena *a)
{
#ifdef MADV_POPULATE_WRITE
	if (madvise(a->base, a->capacity, MADV_POPULATE_WRITE) == 0)
		return 0;
#endif
	/* Older kernels: touch one byte per page of every free block. */
	for (uint64_t off = OBJFS_ARENA_MIN_BLOCK; off < a->capacity;
	     off += 4096)
		((volatile unsigned char *)a->base)[off] = 0;
	return 0;
}

int
objfs_arena_fd(const struct objfs_arena *a)
{
	return a->fd;
}

void
objfs_arena_set_owner(struct objfs_arena *a, uint64_t off, uint64_t ino,
		uint64_t idx)
{
	uint32_t i = (uint32_t)(off / OBJFS_ARENA_MIN_BLOCK);

	pthread_mutex_lock(&a->lock);
	assert(!(a->state[i] & STATE_FREE));
	a->own_ino[i] = ino;
	a->own_idx[i] = idx;
	pthread_mutex_unlock(&a->lock);
}

void
objfs_arena_touch(struct objfs_arena *a, uint64_t off, int dirty)
{
	uint32_t i = (uint32_t)(off / OBJFS_ARENA_MIN_BLOCK);
	uint8_t want = (uint8_t)(OBJFS_ARENA_REF |
			(dirty ? OBJFS_ARENA_DIRTY : 0)), old;

	/* Skip the atomic read-modify-write when nothing would change: the
	 * hot path touches the same block many times in a row. */
	if ((atomic_load_explicit(&a->own_flags[i], memory_order_relaxed) &
	     want) != want) {
		old = atomic_fetch_or_explicit(&a->own_flags[i], want,
				memory_order_relaxed);
		/* The block's order does not change while its owner, who
		 * holds it, touches it. */
		if (dirty && !(old & OBJFS_ARENA_DIRTY))
			atomic_fetch_add_explicit(&a->dirty,
					(uint64_t)OBJFS_ARENA_MIN_BLOCK <<
					a->state[i], memory_order_relaxed);
	}
}

uint64_t
objfs_arena_dirty(struct objfs_arena *a)
{
	return atomic_load_explicit(&a->dirty, memory_order_relaxed);
}

void
objfs_arena_mark_clean(struct objfs_arena *a, uint64_t off)
{
	uint32_t i = (uint32_t)(off / OBJFS_ARENA_MIN_BLOCK);

	if (atomic_fetch_and_explicit(&a->own_flags[i],
			(uint8_t)~OBJFS_ARENA_DIRTY, memory_order_relaxed) &
			OBJFS_ARENA_DIRTY)
		atomic_fetch_sub_explicit(&a->dirty,
				(uint64_t)OBJFS_ARENA_MIN_BLOCK << a->state[i],
				memory_order_relaxed);
}

int
objfs_arena_clock(struct objfs_arena *a, int clean_only,
		struct objfs_arena_victim *v, int max)
{
	uint64_t scanned = 0, limit = 2ull * a->nblocks;
	int n = 0;

	pthread_mutex_lock(&a->lock);
	/* Once something is found, do not start a second turn: it would
	 * only find the same blocks again. */
	while (n < max && scanned < limit && !(n > 0 && scanned >= a->nblocks)) {
		uint32_t i = a->hand, step = 1;
		uint8_t f;

		if (a->state[i] & STATE_FREE)
			step = 1u << (a->state[i] & 0x7f);
		if (a->own_ino[i] != 0) {
			step = 1u << (a->state[i] & 0x7f);
			f = atomic_load_explicit(&a->own_flags[i],
					memory_order_relaxed);
			if (clean_only && (f & OBJFS_ARENA_DIRTY)) {
				/* passed over, keeps its reference */
			} else if (f & OBJFS_ARENA_REF) {
				atomic_fetch_and_explicit(&a->own_flags[i],
						(uint8_t)~OBJFS_ARENA_REF,
						memory_order_relaxed);
			} else {
				v[n].ino = a->own_ino[i];
				v[n].idx = a->own_idx[i];
				v[n].off = (uint64_t)i * OBJFS_ARENA_MIN_BLOCK;
				v[n].cap = (uint32_t)OBJFS_ARENA_MIN_BLOCK << (a->state[i] & 0x7f);
				v[n].dirty = !!(f & OBJFS_ARENA_DIRTY);
				n++;
			}
		}
		scanned += step;
		a->hand = i + step >= a->nblocks ? 0 : i + step;
	}
	pthread_mutex_unlock(&a->lock);
	return n;
}
