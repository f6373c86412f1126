/* SPDX-License-Identifier: MIT */
/*
 * chunk.c - chunk map container and state transitions (see chunk.h).
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/memory/chunk.h"

#define LEAF_BITS	3
#define LEAF_N		(1u << LEAF_BITS)
#define NODE_BITS	4
#define NODE_N		(1u << NODE_BITS)

/* Each leaf and node counts the dirty entries below it, so that the walk
 * over the dirty ones skips the subtrees that have none (as the page
 * cache's radix tree tags do). */
struct leaf {
	struct objfs_chunk e[LEAF_N];
	uint32_t ndirty;
};

struct node {
	void *slot[NODE_N];
	uint64_t ndirty;
};

/* Indexes a tree of @height inner levels covers. */
static uint64_t
span(unsigned height)
{
	return 1ull << (LEAF_BITS + NODE_BITS * height);
}

void
objfs_chunkmap_init(struct objfs_chunkmap *m)
{
	m->root = NULL;
	m->height = 0;
	m->n = 0;
	m->ndirty = 0;
}

void
objfs_chunkmap_fini(struct objfs_chunkmap *m, struct objfs_arena *a)
{
	objfs_chunkmap_cut(m, a, 0);
	objfs_chunkmap_init(m);
}

struct objfs_chunk *
objfs_chunkmap_add(struct objfs_chunkmap *m, uint64_t idx)
{
	void **p;

	if (idx >> OBJFS_CHUNKMAP_BITS)
		return NULL;
	/* Taller until @idx fits: the old tree becomes the first child. */
	while (idx >= span(m->height)) {
		struct node *up;

		if (!m->root) {
			m->height++;
			continue;
		}
		up = calloc(1, sizeof(*up));
		if (!up)
			return NULL;
		up->slot[0] = m->root;
		up->ndirty = m->ndirty;
		m->root = up;
		m->height++;
	}
	p = &m->root;
	for (unsigned h = m->height; h > 0; h--) {
		if (!*p && !(*p = calloc(1, sizeof(struct node))))
			return NULL;
		p = &((struct node *)*p)->slot[(idx >> (LEAF_BITS +
				NODE_BITS * (h - 1))) & (NODE_N - 1)];
	}
	if (!*p && !(*p = calloc(1, sizeof(struct leaf))))
		return NULL;
	if (idx >= m->n)
		m->n = idx + 1;
	return &((struct leaf *)*p)->e[idx & (LEAF_N - 1)];
}

struct objfs_chunk *
objfs_chunkmap_get(const struct objfs_chunkmap *m, uint64_t idx)
{
	void *p = m->root;

	if (idx >= m->n || idx >= span(m->height))
		return NULL;
	for (unsigned h = m->height; p && h > 0; h--)
		p = ((struct node *)p)->slot[(idx >> (LEAF_BITS +
				NODE_BITS * (h - 1))) & (NODE_N - 1)];
	return p ? &((struct leaf *)p)->e[idx & (LEAF_N - 1)] : NULL;
}

/* The first entry at or after @from in the tree @p of @height levels
 * whose first index is @base. */
static struct objfs_chunk *
next_in(void *p, unsigned height, uint64_t base, uint64_t from,
		uint64_t *out)
{
	uint64_t sp;

	if (height == 0) {
		uint64_t i = from > base ? from - base : 0;

		if (i >= LEAF_N)
			return NULL;
		*out = base + i;
		return &((struct leaf *)p)->e[i];
	}
	sp = span(height - 1);
	for (uint64_t k = from > base ? (from - base) / sp : 0; k < NODE_N;
	     k++) {
		void *c = ((struct node *)p)->slot[k];
		struct objfs_chunk *r;

		if (c && (r = next_in(c, height - 1, base + k * sp, from, out)))
			return r;
	}
	return NULL;
}

struct objfs_chunk *
objfs_chunkmap_next(const struct objfs_chunkmap *m, uint64_t idx,
		uint64_t *out)
{
	struct objfs_chunk *c;

	if (!m->root || idx >= m->n)
		return NULL;
	/* The common step, to the next entry of the same or a present
	 * leaf, is a plain lookup. */
	c = objfs_chunkmap_get(m, idx);
	if (c) {
		*out = idx;
		return c;
	}
	c = next_in(m->root, m->height, 0, idx, out);
	return c && *out < m->n ? c : NULL;
}

/* Add @delta to the dirty counts on the path to entry @idx (which
 * exists). */
static void
count_dirty(struct objfs_chunkmap *m, uint64_t idx, int delta)
{
	void *p = m->root;

	m->ndirty += (uint64_t)(int64_t)delta;
	for (unsigned h = m->height; h > 0; h--) {
		struct node *nd = p;

		nd->ndirty += (uint64_t)(int64_t)delta;
		p = nd->slot[(idx >> (LEAF_BITS + NODE_BITS * (h - 1))) &
				(NODE_N - 1)];
	}
	((struct leaf *)p)->ndirty += (uint32_t)delta;
}

void
objfs_chunkmap_set_dirty(struct objfs_chunkmap *m, uint64_t idx,
		struct objfs_chunk *c, int dirty)
{
	int was = (c->flags & OBJFS_CHUNK_DIRTY) != 0;

	if (was == !!dirty)
		return;
	if (dirty)
		c->flags |= OBJFS_CHUNK_DIRTY;
	else
		c->flags &= ~OBJFS_CHUNK_DIRTY;
	count_dirty(m, idx, dirty ? 1 : -1);
}

/* Free the block, clear DIRTY; no counting (the caller counts). */
static void
drop_block(struct objfs_chunk *c, struct objfs_arena *a)
{
	if (c->cap)
		objfs_arena_free(a, c->off, c->cap);
	c->cap = 0;
	c->off = 0;
	c->flags &= ~(OBJFS_CHUNK_DIRTY | OBJFS_CHUNK_PARTIAL);
}

void
objfs_chunkmap_drop(struct objfs_chunkmap *m, uint64_t idx,
		struct objfs_chunk *c, struct objfs_arena *a)
{
	objfs_chunkmap_set_dirty(m, idx, c, 0);
	drop_block(c, a);
}

/* The first dirty entry at or after @from in the tree @p (as next_in). */
static struct objfs_chunk *
next_dirty_in(void *p, unsigned height, uint64_t base, uint64_t from,
		uint64_t *out)
{
	uint64_t sp;

	if (height == 0) {
		struct leaf *l = p;

		if (!l->ndirty)
			return NULL;
		for (uint64_t i = from > base ? from - base : 0; i < LEAF_N;
		     i++)
			if (l->e[i].flags & OBJFS_CHUNK_DIRTY) {
				*out = base + i;
				return &l->e[i];
			}
		return NULL;
	}
	if (!((struct node *)p)->ndirty)
		return NULL;
	sp = span(height - 1);
	for (uint64_t k = from > base ? (from - base) / sp : 0; k < NODE_N;
	     k++) {
		void *c = ((struct node *)p)->slot[k];
		struct objfs_chunk *r;

		if (c && (r = next_dirty_in(c, height - 1, base + k * sp, from,
				out)))
			return r;
	}
	return NULL;
}

struct objfs_chunk *
objfs_chunkmap_next_dirty(const struct objfs_chunkmap *m, uint64_t idx,
		uint64_t *out)
{
	if (!m->root || !m->ndirty || idx >= m->n)
		return NULL;
	return next_dirty_in(m->root, m->height, 0, idx, out);
}

int
objfs_chunkmap_has_resident(const struct objfs_chunkmap *m)
{
	const struct objfs_chunk *c;
	uint64_t i;

	if (m->ndirty)
		return 1;
	OBJFS_CHUNKMAP_EACH(m, 0, i, c)
		if (c->cap)
			return 1;
	return 0;
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

/* Cut the tree @p (@height levels, first index @base) at @first: free
 * its blocks and nodes from there.  Returns 1 when @p itself is freed. */
static int
cut_in(void *p, unsigned height, uint64_t base, uint64_t first,
		struct objfs_arena *a, uint64_t *undirtied)
{
	uint64_t gone = 0;

	if (height == 0) {
		struct leaf *l = p;

		for (uint64_t i = first > base ? first - base : 0; i < LEAF_N;
		     i++) {
			gone += (l->e[i].flags & OBJFS_CHUNK_DIRTY) != 0;
			drop_block(&l->e[i], a);
			memset(&l->e[i], 0, sizeof(l->e[i]));
		}
		l->ndirty -= (uint32_t)gone;
	} else {
		struct node *nd = p;
		uint64_t sp = span(height - 1);

		for (uint64_t k = first > base ? (first - base) / sp : 0;
		     k < NODE_N; k++)
			if (nd->slot[k] && cut_in(nd->slot[k], height - 1,
					base + k * sp, first, a, &gone))
				nd->slot[k] = NULL;
		nd->ndirty -= gone;
	}
	*undirtied += gone;
	if (base < first)
		return 0;
	free(p);
	return 1;
}

void
objfs_chunkmap_cut(struct objfs_chunkmap *m, struct objfs_arena *a,
		uint64_t first)
{
	uint64_t gone = 0;

	if (m->root && first < m->n) {
		int freed = cut_in(m->root, m->height, 0, first, a, &gone);

		m->ndirty -= gone;
		if (freed)
			objfs_chunkmap_init(m);
	}
	if (first < m->n)
		m->n = first;
}

uint64_t
objfs_chunkmap_held(const struct objfs_chunkmap *m)
{
	const struct objfs_chunk *c;
	uint64_t h = 0, i;

	OBJFS_CHUNKMAP_EACH(m, 0, i, c) {
		uint64_t d = (c->flags & OBJFS_CHUNK_ONDISK) ?
			((uint64_t)c->disk_len + 4095) & ~(uint64_t)4095 : 0;

		h += c->cap > d ? c->cap : d;
	}
	return h;
}

void
objfs_chunkmap_usage(const struct objfs_chunkmap *m, uint64_t *resident,
		uint64_t *ondisk)
{
	const struct objfs_chunk *c;
	uint64_t r = 0, d = 0, i;

	OBJFS_CHUNKMAP_EACH(m, 0, i, c) {
		r += c->cap;
		if (c->flags & OBJFS_CHUNK_ONDISK)
			d += c->disk_len;
	}
	*resident = r;
	*ondisk = d;
}

void
objfs_slots_init(struct objfs_slotmap *m)
{
	m->run = NULL;
	m->n = 0;
	m->alloc = 0;
}

void
objfs_slots_fini(struct objfs_slotmap *m)
{
	free(m->run);
	objfs_slots_init(m);
}

/* The first run whose end is past @slot (m->n when none is). */
static uint64_t
run_at(const struct objfs_slotmap *m, uint64_t slot)
{
	uint64_t lo = 0, hi = m->n;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (m->run[mid].hi <= slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int
objfs_slots_taken(const struct objfs_slotmap *m, uint64_t slot)
{
	uint64_t k = run_at(m, slot);

	return k < m->n && m->run[k].lo <= slot;
}

/* Room for one more run at @k.  0 or -ENOMEM. */
static int
run_insert(struct objfs_slotmap *m, uint64_t k, uint64_t lo, uint64_t hi)
{
	if (m->n == m->alloc) {
		uint64_t na = m->alloc ? m->alloc * 2 : 4;
		struct objfs_slot_run *r;

		if (na > SIZE_MAX / sizeof(*r))
			return -ENOMEM;
		r = realloc(m->run, na * sizeof(*r));
		if (!r)
			return -ENOMEM;
		m->run = r;
		m->alloc = na;
	}
	memmove(m->run + k + 1, m->run + k, (m->n - k) * sizeof(*m->run));
	m->run[k].lo = lo;
	m->run[k].hi = hi;
	m->n++;
	return 0;
}

static void
run_remove(struct objfs_slotmap *m, uint64_t k)
{
	memmove(m->run + k, m->run + k + 1, (m->n - k - 1) * sizeof(*m->run));
	m->n--;
}

int
objfs_slots_take(struct objfs_slotmap *m, uint64_t slot)
{
	uint64_t k = run_at(m, slot);
	int after = k > 0 && m->run[k - 1].hi == slot;
	int before = k < m->n && m->run[k].lo == slot + 1;

	if (k < m->n && m->run[k].lo <= slot)
		return -EEXIST;
	if (after && before) {		/* it joins two runs */
		m->run[k - 1].hi = m->run[k].hi;
		run_remove(m, k);
	} else if (after) {
		m->run[k - 1].hi++;
	} else if (before) {
		m->run[k].lo--;
	} else {
		return run_insert(m, k, slot, slot + 1);
	}
	return 0;
}

void
objfs_slots_put(struct objfs_slotmap *m, uint64_t slot)
{
	uint64_t k = run_at(m, slot);
	struct objfs_slot_run *r;

	if (k >= m->n || m->run[k].lo > slot)
		return;
	r = &m->run[k];
	if (r->lo == slot && r->hi == slot + 1)
		run_remove(m, k);
	else if (r->lo == slot)
		r->lo++;
	else if (r->hi == slot + 1)
		r->hi--;
	else if (run_insert(m, k + 1, slot + 1, m->run[k].hi) == 0)
		m->run[k].hi = slot;	/* (run_insert may move the runs) */
}

uint64_t
objfs_slots_end(const struct objfs_slotmap *m)
{
	return m->n ? m->run[m->n - 1].hi : 0;
}

int
objfs_slots_alloc(struct objfs_slotmap *m, uint64_t want, uint64_t floor,
		uint64_t *out)
{
	uint64_t s = want, k;
	int rc;

	if (objfs_slots_taken(m, want)) {
		/* The lowest free slot from @floor: @floor itself, or the
		 * end of the run holding it (runs are merged, so it is
		 * free). */
		k = run_at(m, floor);
		s = k < m->n && m->run[k].lo <= floor ? m->run[k].hi : floor;
	}
	rc = objfs_slots_take(m, s);
	if (rc == 0)
		*out = s;
	return rc;
}
