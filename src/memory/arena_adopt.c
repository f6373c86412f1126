/* SPDX-License-Identifier: MIT */
/*
 * arena_adopt.c - taking over the arena a dead daemon of the same data
 * directory left (objfs_arena_adopt, arena.h): whose file it is, which
 * tags name whole blocks and pass their check, the newer of two blocks
 * of one chunk, and the intents left unfinished.  The blocks it keeps are
 * claimed in the buddy allocator as if just allocated.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/memory/arena_int.h"

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
	arena_read_boot_id(boot, sizeof(boot));
	if (h.chunk_size != chunk_size || h.dir_id != dir_id) {
		*why = "it belongs to another data directory";
		goto refuse;
	}
	if (strncmp(h.boot_id, boot, sizeof(boot)) != 0) {
		*why = "it was made before the machine restarted";
		goto refuse;
	}
	capacity = h.capacity;
	if (arena_check_sizes(&capacity, chunk_size) < 0 || capacity != h.capacity) {
		*why = "its header is damaged";
		goto refuse;
	}
	if ((*why = private_file(path, fd, arena_map_bytes(capacity))) != NULL)
		goto refuse;
	rc = arena_setup(capacity, chunk_size, &a);
	if (rc < 0) {
		close(fd);
		*why = "out of memory";
		return rc;
	}
	a->fd = fd;
	a->path = strdup(path);
	if (!a->path || (rc = arena_map_it(a)) < 0) {
		rc = a->path ? rc : -ENOMEM;
		arena_teardown(a);
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
		arena_teardown(a);
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
