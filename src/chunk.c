/* SPDX-License-Identifier: MIT */
/*
 * chunk.c - chunk map container and state transitions (see chunk.h).
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chunk.h"

void
objfs_chunkmap_init(struct objfs_chunkmap *m)
{
	m->v = NULL;
	m->n = 0;
	m->alloc = 0;
}

void
objfs_chunkmap_fini(struct objfs_chunkmap *m, struct objfs_arena *a)
{
	objfs_chunkmap_cut(m, a, 0);
	free(m->v);
	objfs_chunkmap_init(m);
}

int
objfs_chunkmap_ensure(struct objfs_chunkmap *m, uint64_t n)
{
	struct objfs_chunk *v;
	uint64_t na;

	if (n <= m->n)
		return 0;
	if (n > m->alloc) {
		na = m->alloc ? m->alloc : 4;
		while (na < n)
			na *= 2;
		if (na > SIZE_MAX / sizeof(*v))
			return -ENOMEM;
		v = realloc(m->v, na * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->v = v;
		m->alloc = na;
	}
	memset(m->v + m->n, 0, (n - m->n) * sizeof(*m->v));
	m->n = n;
	return 0;
}

struct objfs_chunk *
objfs_chunkmap_get(struct objfs_chunkmap *m, uint64_t idx)
{
	return idx < m->n ? &m->v[idx] : NULL;
}

enum objfs_chunk_state
objfs_chunk_state(const struct objfs_chunk *c)
{
	if (c->cap)
		return (c->flags & OBJFS_CHUNK_DIRTY) ?
			OBJFS_CHUNK_RESIDENT_DIRTY : OBJFS_CHUNK_RESIDENT_CLEAN;
	return (c->flags & OBJFS_CHUNK_ONDISK) ? OBJFS_CHUNK_SPILLED :
		OBJFS_CHUNK_HOLE;
}

void
objfs_chunk_drop(struct objfs_chunk *c, struct objfs_arena *a)
{
	if (c->cap)
		objfs_arena_free(a, c->off, c->cap);
	c->cap = 0;
	c->off = 0;
	c->flags &= ~OBJFS_CHUNK_DIRTY;
}

void
objfs_chunkmap_cut(struct objfs_chunkmap *m, struct objfs_arena *a,
		uint64_t first)
{
	for (uint64_t i = first; i < m->n; i++)
		objfs_chunk_drop(&m->v[i], a);
	if (first < m->n)
		m->n = first;
}

void
objfs_chunkmap_usage(const struct objfs_chunkmap *m, uint64_t *resident,
		uint64_t *ondisk)
{
	uint64_t r = 0, d = 0;

	for (uint64_t i = 0; i < m->n; i++) {
		r += m->v[i].cap;
		if (m->v[i].flags & OBJFS_CHUNK_ONDISK)
			d += m->v[i].disk_len;
	}
	*resident = r;
	*ondisk = d;
}
