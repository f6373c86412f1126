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
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/memory/arena_int.h"
#include "src/base/csum.h"

static int
reserve_slab(struct objfs_arena *a, uint32_t slab)
{
	int rc = arena_alloc_pages(a, slab);

	if (rc < 0)
		return rc;
	a->ready[slab] = 1;
	return 0;
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
	if (a->ready && !a->ready[i >> a->max_order]) {
		int rc = reserve_slab(a, i >> a->max_order);

		if (rc < 0)
			return rc;
	}
	list_remove(a, k, i);
	if (k == a->max_order)
		arena_warm_kick(a);	/* a whole slab taken: warm the next */
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

/* Bytes of the mapping: the blocks, then a tag per 4 KiB block. */
uint64_t
arena_map_bytes(uint64_t capacity)
{
	uint64_t t = capacity / OBJFS_ARENA_MIN_BLOCK *
		sizeof(struct objfs_arena_tag);

	return capacity + ((t + OBJFS_ARENA_MIN_BLOCK - 1) &
			~(uint64_t)(OBJFS_ARENA_MIN_BLOCK - 1));
}

int
arena_check_sizes(uint64_t *capacity, uint32_t chunk_size)
{
	if (chunk_size < 2 * OBJFS_ARENA_MIN_BLOCK ||
	    (chunk_size & (chunk_size - 1)) != 0 ||
	    order_of(chunk_size) >= MAX_ORDERS)
		return -EINVAL;
	*capacity -= *capacity % chunk_size;
	if (*capacity < 2ull * chunk_size ||
	    *capacity / OBJFS_ARENA_MIN_BLOCK >= NIL)
		return -EINVAL;
	return 0;
}

static void
free_private(struct objfs_arena *a)
{
	free(a->state);
	free(a->next);
	free(a->prev);
	free(a->own_ino);
	free(a->own_idx);
	free((void *)a->own_flags);
	free(a->ready);
	free(a->warm);
	free(a->path);
	free(a);
}

/* The private bookkeeping, every slab free; -errno. */
int
arena_setup(uint64_t capacity, uint32_t chunk_size, struct objfs_arena **out)
{
	struct objfs_arena *a = calloc(1, sizeof(*a));
	uint64_t n;
	int rc;

	if (!a)
		return -ENOMEM;
	a->fd = -1;
	a->capacity = capacity;
	a->map_size = arena_map_bytes(capacity);
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
		free_private(a);
		return -ENOMEM;
	}
	rc = pthread_mutex_init(&a->lock, NULL);
	if (rc) {
		free_private(a);
		return -rc;
	}
	for (unsigned k = 0; k < MAX_ORDERS; k++)
		a->head[k] = NIL;
	/* Push slabs from the top so that the lowest offsets are used first. */
	n = capacity / chunk_size;
	while (n-- > 0)
		list_push(a, a->max_order,
				(uint32_t)(n * (chunk_size / OBJFS_ARENA_MIN_BLOCK)));
	*out = a;
	return 0;
}

void
arena_teardown(struct objfs_arena *a)
{
	arena_warm_stop(a);
	if (a->base)
		munmap(a->base, a->map_size);
	if (a->fd >= 0)
		close(a->fd);
	pthread_mutex_destroy(&a->lock);
	free_private(a);
}

/* Map @a->fd; the header block is allocated for good. */
int
arena_map_it(struct objfs_arena *a)
{
	uint32_t idx;
	int rc;

	a->base = mmap(NULL, a->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			a->fd, 0);
	if (a->base == MAP_FAILED) {
		a->base = NULL;
		return -errno;
	}
	/* Huge pages make first touch and TLB misses cheaper; best effort. */
	(void)madvise(a->base, a->capacity, MADV_HUGEPAGE);
	a->hdr = (struct objfs_arena_hdr *)a->base;
	a->tags = (struct objfs_arena_tag *)(a->base + a->capacity);
	if (a->path && !(a->ready = calloc(a->capacity / a->chunk_size, 1)))
		return -ENOMEM;
	rc = alloc_locked(a, 0, &idx);	/* a full tmpfs: ENOSPC */
	assert(rc < 0 || idx == 0);
	return rc;
}

void
arena_read_boot_id(char *out, size_t size)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	memset(out, 0, size);
	if (f) {
		if (!fgets(out, (int)size, f))
			out[0] = '\0';
		fclose(f);
	}
	out[strcspn(out, "\n")] = '\0';
}

static void
init_header(struct objfs_arena *a, uint64_t dir_id)
{
	struct objfs_arena_hdr *h = a->hdr;

	h->magic = OBJFS_ARENA_MAGIC;
	h->version = OBJFS_ARENA_VERSION;
	h->chunk_size = a->chunk_size;
	h->capacity = a->capacity;
	h->dir_id = dir_id;
	arena_read_boot_id(h->boot_id, sizeof(h->boot_id));
	atomic_store(&h->used, a->used);
}

int
objfs_arena_create(uint64_t capacity, uint32_t chunk_size,
		struct objfs_arena **out)
{
	struct objfs_arena *a;
	int rc = arena_check_sizes(&capacity, chunk_size);

	if (rc < 0 || (rc = arena_setup(capacity, chunk_size, &a)) < 0)
		return rc;
	a->fd = memfd_create("objfs-arena", MFD_CLOEXEC);
	if (a->fd < 0 || ftruncate(a->fd, (off_t)a->map_size) < 0 ||
	    (rc = arena_map_it(a)) < 0) {
		rc = rc < 0 ? rc : -errno;
		arena_teardown(a);
		return rc;
	}
	init_header(a, 0);
	*out = a;
	return 0;
}

int
objfs_arena_create_shared(const char *root, uint64_t capacity,
		uint32_t chunk_size, uint64_t dir_id, char *path, size_t path_size,
		struct objfs_arena **out)
{
	struct objfs_arena *a;
	char dir[PATH_MAX];
	int rc = arena_check_sizes(&capacity, chunk_size);

	if (rc < 0)
		return rc;
	if ((size_t)snprintf(dir, sizeof(dir), "%s/objfs.XXXXXX", root) >=
			sizeof(dir) || strlen(dir) + sizeof("/arena") > path_size)
		return -ENAMETOOLONG;
	/* A name nobody can have made first, a directory only we enter. */
	if (!mkdtemp(dir))
		return -errno;
	snprintf(path, path_size, "%s/arena", dir);
	rc = arena_setup(capacity, chunk_size, &a);
	if (rc < 0)
		goto err_dir;
	a->path = strdup(path);
	a->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);
	/* Held while a daemon uses it (a copy of the data directory, which
	 * names the same arena, must not adopt it meanwhile). */
	if (!a->path || a->fd < 0 || flock(a->fd, LOCK_EX | LOCK_NB) < 0 ||
	    ftruncate(a->fd, (off_t)a->map_size) < 0 ||
	    (rc = arena_map_it(a)) < 0) {
		rc = rc < 0 ? rc : !a->path ? -ENOMEM : -errno;
		(void)unlink(path);
		arena_teardown(a);
		goto err_dir;
	}
	init_header(a, dir_id);
	*out = a;
	return 0;
err_dir:
	(void)rmdir(dir);
	return rc;
}

void
objfs_arena_destroy(struct objfs_arena *a)
{
	if (a)
		arena_teardown(a);
}

const char *
objfs_arena_path(const struct objfs_arena *a)
{
	return a->path;
}

void
objfs_arena_remove(struct objfs_arena *a)
{
	char *slash;

	if (!a->path)
		return;
	(void)unlink(a->path);
	slash = strrchr(a->path, '/');
	*slash = '\0';
	(void)rmdir(a->path);
	*slash = '/';
}

void
objfs_arena_keep(struct objfs_arena *a)
{
	a->kept = 1;
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
	/* Unpublished before anyone can be given the block again; but an
	 * arena kept for the next mount is freed only as the daemon goes. */
	if (!a->kept)
		atomic_store_explicit(&a->tags[i].ino, 0,
				memory_order_release);
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
	/* Older kernels: write one byte per page, the byte it holds (an
	 * adopted arena's blocks hold files' bytes). */
	for (uint64_t off = OBJFS_ARENA_MIN_BLOCK; off < a->capacity;
	     off += 4096)
		((volatile unsigned char *)a->base)[off] =
			((volatile unsigned char *)a->base)[off];
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

/* ---- tags and intents ---------------------------------------------------- */

void
objfs_arena_publish(struct objfs_arena *a, uint64_t off, uint64_t ino,
		uint64_t idx, uint32_t flags, uint64_t size, int64_t mtime_ns,
		uint64_t csum, const uint64_t *valid)
{
	struct objfs_arena_tag *t = tag_of(a, off);
	uint32_t i = (uint32_t)(off / OBJFS_ARENA_MIN_BLOCK);

	/* The block's order cannot change while its owner holds it. */
	atomic_store_explicit(&t->ino, 0, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	t->seq = (uint32_t)(atomic_fetch_add_explicit(&a->hdr->seq, 1,
			memory_order_relaxed) + 1);
	t->check = tag_check(i, ino, (uint32_t)idx, a->state[i], t->seq);
	t->size = size;
	t->csum = csum;
	t->mtime_ns = mtime_ns;
	t->idx = (uint32_t)idx;
	tag_valid_put(t, a->state[i], valid);
	atomic_store_explicit(&t->flags, flags | ((uint32_t)a->state[i] << 8),
			memory_order_relaxed);
	/* Everything above, then the name: the moment it counts. */
	atomic_store_explicit(&t->ino, ino, memory_order_release);
}

int
objfs_arena_published(struct objfs_arena *a, uint64_t off)
{
	return atomic_load_explicit(&tag_of(a, off)->ino,
			memory_order_relaxed) != 0;
}

void
objfs_arena_tag_dirty(struct objfs_arena *a, uint64_t off)
{
	struct objfs_arena_tag *t = tag_of(a, off);

	if (!(atomic_load_explicit(&t->flags, memory_order_relaxed) &
	      OBJFS_ARENA_TAG_DIRTY))
		atomic_fetch_or_explicit(&t->flags, OBJFS_ARENA_TAG_DIRTY,
				memory_order_release);
	/* Before the bytes the caller is about to change. */
	atomic_thread_fence(memory_order_release);
}

void
objfs_arena_tag_write(struct objfs_arena *a, uint64_t off, uint64_t size,
		int64_t mtime_ns, const uint64_t *valid)
{
	struct objfs_arena_tag *t = tag_of(a, off);

	/* After the bytes: what the tag says they are is now so. */
	atomic_thread_fence(memory_order_release);
	if (size > t->size)
		t->size = size;
	t->mtime_ns = mtime_ns;
	if (valid)
		tag_valid_put(t, atomic_load_explicit(&t->flags,
				memory_order_relaxed) >> 8, valid);
}

void
objfs_arena_tag_clean(struct objfs_arena *a, uint64_t off, uint64_t csum)
{
	struct objfs_arena_tag *t = tag_of(a, off);

	t->csum = csum;
	atomic_fetch_and_explicit(&t->flags, ~OBJFS_ARENA_TAG_DIRTY,
			memory_order_release);
}

void
objfs_arena_tag_cut(struct objfs_arena *a, uint64_t off, uint64_t size)
{
	struct objfs_arena_tag *t = tag_of(a, off);

	if (t->size > size)
		t->size = size;
	atomic_thread_fence(memory_order_release);
}

void
objfs_arena_tag_whole(struct objfs_arena *a, uint64_t off)
{
	atomic_fetch_and_explicit(&tag_of(a, off)->flags,
			~OBJFS_ARENA_TAG_PARTIAL, memory_order_release);
}

int
objfs_arena_intent(struct objfs_arena *a, uint64_t ino, uint32_t kind,
		uint64_t x, uint64_t y)
{
	for (;;) {
		for (int k = 0; k < OBJFS_ARENA_INTENTS; k++) {
			struct objfs_arena_intent *it = &a->hdr->intents[k];
			uint64_t zero = 0;

			if (!atomic_compare_exchange_strong(&it->ino, &zero,
					INTENT_BUSY))
				continue;
			it->kind = kind;
			it->a = x;
			it->b = y;
			atomic_store_explicit(&it->ino, ino,
					memory_order_release);
			return k;
		}
		/* More changes in progress than slots: rare, and short. */
		sched_yield();
	}
}

void
objfs_arena_intent_end(struct objfs_arena *a, int slot)
{
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&a->hdr->intents[slot].ino, 0,
			memory_order_release);
}
