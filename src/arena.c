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

#include "arena.h"
#include "base/csum.h"

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
	uint64_t damaged;		/* adoption: tags that failed their
					 * check (set before it returns) */
};

/* What a tag says the block at @i is, hashed: a tag damaged in its
 * owner, chunk, order or number, or moved to another block, fails it,
 * and adoption leaves that block alone.  Set once, when the block is
 * published (the fields it covers do not change until it is freed), so a
 * daemon killed at any instant leaves it true. */
static uint32_t
tag_check(uint32_t i, uint64_t ino, uint32_t idx, unsigned order,
		uint32_t seq)
{
	uint64_t w[4] = { i, ino, ((uint64_t)order << 32) | idx, seq };

	return (uint32_t)objfs_csum64(w, sizeof(w));
}

static struct objfs_arena_tag *
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
static void
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

static void
tag_valid_get(const struct objfs_arena_tag *t, unsigned order, uint64_t *valid)
{
	for (unsigned w = 0; w < OBJFS_BITS_WORDS; w++)
		valid[w] = w / TAG_WORDS < (1u << order) ?
			t[w / TAG_WORDS].valid[w % TAG_WORDS] : 0;
}

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

/*
 * A file in a tmpfs of limited size (/dev/shm) gets its pages when they
 * are first touched, and a touch the tmpfs has no room for is SIGBUS.  So
 * each slab's pages, and those of its tags, are allocated (fallocate)
 * before its first block is handed out; a full tmpfs is then ENOSPC, a
 * full arena, which the spiller makes room in.  Allocating pages that
 * exist (an adopted arena's) changes nothing.
 */
static int
reserve_slab(struct objfs_arena *a, uint32_t slab)
{
	uint64_t off = (uint64_t)slab * a->chunk_size;
	uint64_t t = a->capacity + off / OBJFS_ARENA_MIN_BLOCK *
		sizeof(struct objfs_arena_tag);
	uint64_t tlen = a->chunk_size / OBJFS_ARENA_MIN_BLOCK *
		sizeof(struct objfs_arena_tag);

	if (fallocate(a->fd, 0, (off_t)off, (off_t)a->chunk_size) < 0 ||
	    fallocate(a->fd, 0, (off_t)t, (off_t)tlen) < 0)
		return errno == ENOSPC ? -ENOSPC : -errno;
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
static uint64_t
map_bytes(uint64_t capacity)
{
	uint64_t t = capacity / OBJFS_ARENA_MIN_BLOCK *
		sizeof(struct objfs_arena_tag);

	return capacity + ((t + OBJFS_ARENA_MIN_BLOCK - 1) &
			~(uint64_t)(OBJFS_ARENA_MIN_BLOCK - 1));
}

static int
check_sizes(uint64_t *capacity, uint32_t chunk_size)
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
	free(a->path);
	free(a);
}

/* The private bookkeeping, every slab free; -errno. */
static int
setup(uint64_t capacity, uint32_t chunk_size, struct objfs_arena **out)
{
	struct objfs_arena *a = calloc(1, sizeof(*a));
	uint64_t n;
	int rc;

	if (!a)
		return -ENOMEM;
	a->fd = -1;
	a->capacity = capacity;
	a->map_size = map_bytes(capacity);
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

static void
teardown(struct objfs_arena *a)
{
	if (a->base)
		munmap(a->base, a->map_size);
	if (a->fd >= 0)
		close(a->fd);
	pthread_mutex_destroy(&a->lock);
	free_private(a);
}

/* Map @a->fd; the header block is allocated for good. */
static int
map_it(struct objfs_arena *a)
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

static void
read_boot_id(char *out, size_t size)
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
	read_boot_id(h->boot_id, sizeof(h->boot_id));
	atomic_store(&h->used, a->used);
}

int
objfs_arena_create(uint64_t capacity, uint32_t chunk_size,
		struct objfs_arena **out)
{
	struct objfs_arena *a;
	int rc = check_sizes(&capacity, chunk_size);

	if (rc < 0 || (rc = setup(capacity, chunk_size, &a)) < 0)
		return rc;
	a->fd = memfd_create("objfs-arena", MFD_CLOEXEC);
	if (a->fd < 0 || ftruncate(a->fd, (off_t)a->map_size) < 0 ||
	    (rc = map_it(a)) < 0) {
		rc = rc < 0 ? rc : -errno;
		teardown(a);
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
	int rc = check_sizes(&capacity, chunk_size);

	if (rc < 0)
		return rc;
	if ((size_t)snprintf(dir, sizeof(dir), "%s/objfs.XXXXXX", root) >=
			sizeof(dir) || strlen(dir) + sizeof("/arena") > path_size)
		return -ENAMETOOLONG;
	/* A name nobody can have made first, a directory only we enter. */
	if (!mkdtemp(dir))
		return -errno;
	snprintf(path, path_size, "%s/arena", dir);
	rc = setup(capacity, chunk_size, &a);
	if (rc < 0)
		goto err_dir;
	a->path = strdup(path);
	a->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);
	/* Held while a daemon uses it (a copy of the data directory, which
	 * names the same arena, must not adopt it meanwhile). */
	if (!a->path || a->fd < 0 || flock(a->fd, LOCK_EX | LOCK_NB) < 0 ||
	    ftruncate(a->fd, (off_t)a->map_size) < 0 ||
	    (rc = map_it(a)) < 0) {
		rc = rc < 0 ? rc : !a->path ? -ENOMEM : -errno;
		(void)unlink(path);
		teardown(a);
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
		teardown(a);
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

/* ---- adoption ------------------------------------------------------------ */

/* Allocate the block of @order at min-block @i, which must be free. */
static int
claim_locked(struct objfs_arena *a, uint32_t i, unsigned order)
{
	unsigned k;
	uint32_t j = 0;

	for (k = order; k <= a->max_order; k++) {
		j = i & ~((1u << k) - 1);
		if (a->state[j] == (k | STATE_FREE))
			break;
	}
	if (k > a->max_order)
		return -EEXIST;		/* overlaps a block already taken */
	list_remove(a, k, j);
	while (k > order) {
		k--;
		if (i >= j + (1u << k)) {	/* ours is the upper half */
			list_push(a, k, j);
			j += 1u << k;
		} else {
			list_push(a, k, j + (1u << k));
		}
	}
	a->state[j] = (uint8_t)order;
	a->used += (uint64_t)OBJFS_ARENA_MIN_BLOCK << order;
	return 0;
}

static int
by_chunk_newest(const void *x, const void *y)
{
	const struct objfs_arena_found *p = x, *q = y;

	if (p->ino != q->ino)
		return p->ino < q->ino ? -1 : 1;
	if (p->idx != q->idx)
		return p->idx < q->idx ? -1 : 1;
	/* Serial numbers: two blocks of one chunk are published close
	 * together, far less than 2^31 apart. */
	return (int32_t)((uint32_t)p->seq - (uint32_t)q->seq) > 0 ? -1 :
		p->seq != q->seq;
}

/* Is the file at @fd, in the directory of @path, ours alone? */
static const char *
private_file(const char *path, int fd, uint64_t want_size)
{
	char dir[PATH_MAX], *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return "its path is not absolute";
	*slash = '\0';
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 077))
		return "its directory is not a private directory of this user";
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 077) || st.st_nlink != 1)
		return "it is not a private file of this user";
	if (want_size && (uint64_t)st.st_size != want_size)
		return "its size is not the one its header gives";
	return NULL;
}

int
objfs_arena_adopt(const char *path, uint32_t chunk_size, uint64_t dir_id,
		struct objfs_arena **out, struct objfs_arena_found **found,
		size_t *nfound, struct objfs_arena_redo *redo, int *nredo,
		const char **why)
{
	struct objfs_arena_hdr h;
	struct objfs_arena_found *v = NULL;
	struct objfs_arena *a;
	char boot[40];
	size_t n = 0, m = 0;
	uint64_t capacity;
	int fd, rc;

	*found = NULL;
	*nfound = 0;
	*nredo = 0;
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*why = errno == ENOENT ? "it is gone (the machine restarted, "
			"or it was removed)" : "it cannot be opened";
		return -ENOENT;
	}
	/* Whose it is, before anything in it is believed. */
	if ((*why = private_file(path, fd, 0)) != NULL)
		goto refuse;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		*why = "another objfs is using it (is this a copy of a data "
			"directory that is mounted?)";
		goto refuse;
	}
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h.magic != OBJFS_ARENA_MAGIC || h.version != OBJFS_ARENA_VERSION) {
		*why = "it is not an objfs arena of this version";
		goto refuse;
	}
	read_boot_id(boot, sizeof(boot));
	if (h.chunk_size != chunk_size || h.dir_id != dir_id) {
		*why = "it belongs to another data directory";
		goto refuse;
	}
	if (strncmp(h.boot_id, boot, sizeof(boot)) != 0) {
		*why = "it was made before the machine restarted";
		goto refuse;
	}
	capacity = h.capacity;
	if (check_sizes(&capacity, chunk_size) < 0 || capacity != h.capacity) {
		*why = "its header is damaged";
		goto refuse;
	}
	if ((*why = private_file(path, fd, map_bytes(capacity))) != NULL)
		goto refuse;
	rc = setup(capacity, chunk_size, &a);
	if (rc < 0) {
		close(fd);
		*why = "out of memory";
		return rc;
	}
	a->fd = fd;
	a->path = strdup(path);
	if (!a->path || (rc = map_it(a)) < 0) {
		rc = a->path ? rc : -ENOMEM;
		teardown(a);
		*why = "it cannot be mapped";
		return rc;
	}
	/* The tags that name a whole block inside the arena.  Only the
	 * parts of the table that have pages are read (a read of a hole
	 * would allocate one), and a block's own entries are skipped. */
	v = malloc(sizeof(*v) * 1024);
	for (size_t cap = 1024, i = 1, end = 0; v && i < a->nblocks; i++) {
		struct objfs_arena_tag *t;

		if (i >= end) {
			off_t pos = (off_t)(a->capacity + i * sizeof(*t)), d, e;

			d = lseek(fd, pos, SEEK_DATA);
			e = d < 0 ? -1 : lseek(fd, d, SEEK_HOLE);
			if (d < 0 || e < 0) {
				if (d < 0 && errno == ENXIO)
					break;		/* no more pages */
				end = a->nblocks;	/* cannot tell: read all */
			} else {
				i = (size_t)(d - (off_t)a->capacity) / sizeof(*t);
				end = ((size_t)(e - (off_t)a->capacity) +
					sizeof(*t) - 1) / sizeof(*t);
				if (i < 1)
					i = 1;
				if (i >= a->nblocks)
					break;
			}
		}
		t = &a->tags[i];
		uint64_t ino = atomic_load(&t->ino);
		uint32_t f = atomic_load(&t->flags);
		unsigned order = f >> 8;

		if (ino == 0)
			continue;
		if (order > a->max_order || (i & ((1u << order) - 1)) ||
		    i + (1u << order) > a->nblocks ||
		    t->check != tag_check((uint32_t)i, ino, t->idx, order,
				t->seq)) {
			atomic_store(&t->ino, 0);	/* not a block */
			a->damaged++;
			continue;
		}
		if (n == cap) {
			void *p = realloc(v, sizeof(*v) * (cap *= 2));

			if (!p) {
				free(v);
				v = NULL;
				break;
			}
			v = p;
		}
		v[n++] = (struct objfs_arena_found){
			.ino = ino, .idx = t->idx,
			.off = (uint64_t)i * OBJFS_ARENA_MIN_BLOCK,
			.cap = (uint32_t)OBJFS_ARENA_MIN_BLOCK << order,
			.flags = f & 0xff, .size = t->size,
			.mtime_ns = t->mtime_ns, .seq = t->seq,
			.csum = t->csum,
		};
		tag_valid_get(t, order, v[n - 1].valid);
		i += (1u << order) - 1;		/* its own entries */
	}
	if (!v) {
		teardown(a);
		*why = "out of memory";
		return -ENOMEM;
	}
	/* Two blocks of one chunk (killed while moving it): the newer. */
	qsort(v, n, sizeof(*v), by_chunk_newest);
	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < n; i++) {
		struct objfs_arena_tag *t = &a->tags[v[i].off /
			OBJFS_ARENA_MIN_BLOCK];
		uint32_t b = (uint32_t)(v[i].off / OBJFS_ARENA_MIN_BLOCK);

		if ((m > 0 && v[m - 1].ino == v[i].ino &&
		     v[m - 1].idx == v[i].idx) ||
		    claim_locked(a, b, order_of(v[i].cap)) < 0) {
			atomic_store(&t->ino, 0);
			continue;
		}
		a->own_ino[b] = v[i].ino;
		a->own_idx[b] = v[i].idx;
		v[m++] = v[i];
	}
	atomic_store(&a->hdr->used, a->used);
	pthread_mutex_unlock(&a->lock);
	for (int k = 0; k < OBJFS_ARENA_INTENTS; k++) {
		struct objfs_arena_intent *it = &a->hdr->intents[k];
		uint64_t ino = atomic_load(&it->ino);

		if (ino == 0 || ino == INTENT_BUSY)
			continue;
		redo[*nredo] = (struct objfs_arena_redo){ ino, it->kind,
			it->a, it->b };
		(*nredo)++;
	}
	*found = v;
	*nfound = m;
	*out = a;
	return 0;

refuse:
	close(fd);
	return -ENOENT;
}

uint64_t
objfs_arena_damaged_tags(const struct objfs_arena *a)
{
	return a->damaged;
}

void
objfs_arena_clear_intents(struct objfs_arena *a)
{
	for (int k = 0; k < OBJFS_ARENA_INTENTS; k++)
		atomic_store(&a->hdr->intents[k].ino, 0);
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
