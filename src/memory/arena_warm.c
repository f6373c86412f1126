/* SPDX-License-Identifier: MIT */
/*
 * arena_warm.c - the arena's pages: a slab's allocated before its first
 * block is handed out (arena_alloc_pages(), the allocator's and the
 * warmer's), and the warmer: a thread that faults in the pages of the
 * whole free slabs the allocator hands out next, ahead of their use.
 * arena.c calls in here; nothing here calls arena.c.
 *
 * A tmpfs page costs most on its first touch: the kernel allocates it,
 * zeroes it and maps it, one 4 KiB fault at a time.  Measured here, that
 * is 0.6 to 0.76 ms for each MiB copied into fresh arena pages against
 * 0.1 ms into pages already there; a reader restoring chunks (from the
 * pool, or the disk) or a writer filling a new arena pays it inline.  The
 * warmer pays it beforehand, on another core, in batches
 * (MADV_POPULATE_WRITE), for at most WARM_AHEAD bytes (a quarter of the
 * arena when smaller) of the free slabs at the head of the whole-slab
 * free list: the ones the next allocations take, since freed slabs (warm
 * already) go back at its head and fresh ones come in offset order.
 *
 * It never writes a byte: MADV_POPULATE_WRITE faults pages in as for a
 * write without changing them, so a slab taken while it is being warmed
 * is safe to use at once.  Under a tmpfs of limited size a slab's pages
 * are allocated first (fallocate, as the allocator does), so a touch is
 * never SIGBUS; a slab that cannot be is left cold, for the allocator to
 * refuse (ENOSPC).  The memory cap holds: only the arena's own pages are
 * faulted in, at most WARM_AHEAD of them beyond those in use.
 *
 * Locking: the arena's lock (a leaf) guards warm[], warm_on and
 * warm_stop, and is the mutex of warm_cv; it is never held across the
 * fallocate or the madvise.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "src/memory/arena_int.h"
#include "src/base/log.h"

#define WARM_AHEAD	(64u << 20)

/*
 * A file in a tmpfs of limited size (/dev/shm) gets its pages when they
 * are first touched, and a touch the tmpfs has no room for is SIGBUS.  So
 * each slab's pages, and those of its tags, are allocated (fallocate)
 * before its first block is handed out; a full tmpfs is then ENOSPC, a
 * full arena, which the spiller makes room in.  Allocating pages that
 * exist (an adopted arena's) changes nothing.
 */
int
arena_alloc_pages(struct objfs_arena *a, uint32_t slab)
{
	uint64_t off = (uint64_t)slab * a->chunk_size;
	uint64_t t = a->capacity + off / OBJFS_ARENA_MIN_BLOCK *
		sizeof(struct objfs_arena_tag);
	uint64_t tlen = a->chunk_size / OBJFS_ARENA_MIN_BLOCK *
		sizeof(struct objfs_arena_tag);

	if (fallocate(a->fd, 0, (off_t)off, (off_t)a->chunk_size) < 0 ||
	    fallocate(a->fd, 0, (off_t)t, (off_t)tlen) < 0)
		return -errno;
	return 0;
}

static unsigned
ahead_slabs(const struct objfs_arena *a)
{
	uint64_t b = a->capacity / 4 < WARM_AHEAD ? a->capacity / 4 :
		WARM_AHEAD;
	uint64_t n = b / a->chunk_size;

	return n ? (unsigned)n : 1;
}

/* The first of the next @n whole free slabs that is not warm; NIL. */
static uint32_t
next_cold(const struct objfs_arena *a, unsigned n)
{
	uint32_t i = a->head[a->max_order];

	for (unsigned k = 0; k < n && i != NIL; k++, i = a->next[i])
		if (!a->warm[i >> a->max_order])
			return i >> a->max_order;
	return NIL;
}

/* Fault in slab @slab's pages (allocated first if @reserve): 0, or
 * -errno and it stays cold. */
static int
warm_slab(struct objfs_arena *a, uint32_t slab, int reserve)
{
	uint64_t off = (uint64_t)slab * a->chunk_size;
	int rc = reserve ? arena_alloc_pages(a, slab) : 0;

	if (rc < 0)
		return rc;
#ifdef MADV_POPULATE_WRITE
	if (madvise(a->base + off, a->chunk_size, MADV_POPULATE_WRITE) < 0)
		return -errno;
	return 0;
#else
	return -EOPNOTSUPP;
#endif
}

static void *
warm_main(void *arg)
{
	struct objfs_arena *a = arg;
	unsigned n = ahead_slabs(a);

	pthread_mutex_lock(&a->lock);
	while (!a->warm_stop) {
		uint32_t slab = next_cold(a, n);
		int reserve, rc;

		if (slab == NIL) {
			pthread_cond_wait(&a->warm_cv, &a->lock);
			continue;
		}
		a->warm[slab] = 1;	/* not picked again, whatever comes */
		reserve = a->ready && !a->ready[slab];
		pthread_mutex_unlock(&a->lock);
		rc = warm_slab(a, slab, reserve);
		pthread_mutex_lock(&a->lock);
		/* Cold for good when it failed: the allocator reserves it
		 * itself, and says ENOSPC if it cannot. */
		if (rc == 0) {
			if (reserve)
				a->ready[slab] = 1;
			atomic_fetch_add(&a->warmed, a->chunk_size);
		} else if (rc == -EOPNOTSUPP || rc == -EINVAL) {
			break;		/* a kernel without POPULATE_WRITE */
		}
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

int
objfs_arena_warm_start(struct objfs_arena *a)
{
	int rc;

	a->warm = calloc(a->capacity / a->chunk_size, 1);
	if (!a->warm)
		return -ENOMEM;
	rc = pthread_cond_init(&a->warm_cv, NULL);
	if (rc) {
		free(a->warm);
		a->warm = NULL;
		return -rc;
	}
	a->warm_stop = 0;
	rc = pthread_create(&a->warm_thread, NULL, warm_main, a);
	if (rc) {
		pthread_cond_destroy(&a->warm_cv);
		free(a->warm);
		a->warm = NULL;
		return -rc;
	}
	pthread_mutex_lock(&a->lock);
	a->warm_on = 1;
	pthread_mutex_unlock(&a->lock);
	return 0;
}

uint64_t
objfs_arena_warmed(struct objfs_arena *a)
{
	return atomic_load(&a->warmed);
}

void
arena_warm_kick(struct objfs_arena *a)
{
	if (a->warm_on)
		pthread_cond_signal(&a->warm_cv);
}

void
arena_warm_stop(struct objfs_arena *a)
{
	pthread_mutex_lock(&a->lock);
	if (!a->warm_on) {
		pthread_mutex_unlock(&a->lock);
		return;
	}
	a->warm_on = 0;
	a->warm_stop = 1;
	pthread_cond_signal(&a->warm_cv);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->warm_thread, NULL);
	pthread_cond_destroy(&a->warm_cv);
}
