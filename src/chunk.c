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

void
objfs_slots_init(struct objfs_slotmap *m)
{
	m->bits = NULL;
	m->words = 0;
}

void
objfs_slots_fini(struct objfs_slotmap *m)
{
	free(m->bits);
	objfs_slots_init(m);
}

int
objfs_slots_taken(const struct objfs_slotmap *m, uint64_t slot)
{
	uint64_t w = slot / 64;

	return w < m->words && (m->bits[w] >> (slot % 64) & 1);
}

int
objfs_slots_take(struct objfs_slotmap *m, uint64_t slot)
{
	uint64_t w = slot / 64;

	if (w >= m->words) {
		uint64_t n = m->words ? m->words : 4;
		uint64_t *b;

		while (n <= w)
			n *= 2;
		if (n > SIZE_MAX / sizeof(*b))
			return -ENOMEM;
		b = realloc(m->bits, n * sizeof(*b));
		if (!b)
			return -ENOMEM;
		memset(b + m->words, 0, (n - m->words) * sizeof(*b));
		m->bits = b;
		m->words = n;
	}
	if (m->bits[w] >> (slot % 64) & 1)
		return -EEXIST;
	m->bits[w] |= 1ull << (slot % 64);
	return 0;
}

void
objfs_slots_put(struct objfs_slotmap *m, uint64_t slot)
{
	if (slot / 64 < m->words)
		m->bits[slot / 64] &= ~(1ull << (slot % 64));
}

uint64_t
objfs_slots_end(const struct objfs_slotmap *m)
{
	for (uint64_t w = m->words; w-- > 0; )
		if (m->bits[w])
			return w * 64 + 64 - (uint64_t)__builtin_clzll(m->bits[w]);
	return 0;
}

int
objfs_slots_alloc(struct objfs_slotmap *m, uint64_t want, uint64_t floor,
		uint64_t *out)
{
	uint64_t s;
	int rc;

	if (!objfs_slots_taken(m, want)) {
		rc = objfs_slots_take(m, want);
		if (rc == 0)
			*out = want;
		return rc;
	}
	for (s = floor; s / 64 < m->words; ) {
		uint64_t w = m->bits[s / 64] | ((1ull << (s % 64)) - 1);

		if (w != UINT64_MAX) {
			s = s / 64 * 64 + (uint64_t)__builtin_ctzll(~w);
			break;
		}
		s = (s / 64 + 1) * 64;
	}
	rc = objfs_slots_take(m, s);
	if (rc == 0)
		*out = s;
	return rc;
}
