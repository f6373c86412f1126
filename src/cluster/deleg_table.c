/* SPDX-License-Identifier: MIT */
/*
 * deleg_table.c - the table of the tree's directory delegations
 * (tier_int.h: dl[] and its index, under deleg_mu), for deleg.c.
 */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/cluster/tier_int.h"

/* A lookup, a lookup's recall and every commit's classification find
 * directories here: an index, not a scan (an unpacked tree holds as many
 * directories as it touched in the last seconds). */
static size_t
dl_hash(const struct objfs_tier *t, uint64_t dir)
{
	return (size_t)((dir * 0x9e3779b97f4a7c15ull) >> 17) &
		(t->dl_nslot - 1);
}

/* The slot of @dir, or the empty one where it would go. */
static size_t
dl_slot_of(const struct objfs_tier *t, uint64_t dir)
{
	size_t h = dl_hash(t, dir);

	while (t->dl_slot[h] && t->dl[t->dl_slot[h] - 1].dir != dir)
		h = (h + 1) & (t->dl_nslot - 1);
	return h;
}

struct tier_deleg *
tier_dl_find(struct objfs_tier *t, uint64_t dir)
{
	size_t h;

	if (!t->dl_nslot)
		return NULL;
	h = dl_slot_of(t, dir);
	return t->dl_slot[h] ? &t->dl[t->dl_slot[h] - 1] : NULL;
}

/* The index sized for @cap entries, every entry of dl[] in it. */
static int
dl_reindex(struct objfs_tier *t, size_t cap)
{
	size_t n = 16;
	uint32_t *v;

	while (n < 2 * cap)
		n *= 2;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	free(t->dl_slot);
	t->dl_slot = v;
	t->dl_nslot = n;
	for (size_t i = 0; i < t->dl_n; i++)
		v[dl_slot_of(t, t->dl[i].dir)] = (uint32_t)i + 1;
	return 0;
}

struct tier_deleg *
tier_dl_add(struct objfs_tier *t, uint64_t dir)
{
	struct tier_deleg *e = tier_dl_find(t, dir);

	if (e)
		return e;
	if (t->dl_n == t->dl_cap) {
		size_t cap = t->dl_cap ? 2 * t->dl_cap : 16;
		struct tier_deleg *v;

		/* The index first: one larger than dl[] needs is harmless,
		 * one too small would fill. */
		if (cap > UINT32_MAX / 2 || dl_reindex(t, cap) < 0)
			return NULL;
		v = realloc(t->dl, cap * sizeof(*v));
		if (!v)
			return NULL;
		t->dl = v;
		t->dl_cap = cap;
	}
	e = &t->dl[t->dl_n++];
	memset(e, 0, sizeof(*e));
	e->dir = dir;
	t->dl_slot[dl_slot_of(t, dir)] = (uint32_t)t->dl_n;
	return e;
}

/* Out of dl[] (the last entry takes its place) and out of the index
 * (the probe runs after it shifted back: no tombstones). */
void
tier_dl_del(struct objfs_tier *t, uint64_t dir)
{
	size_t h, i, last, mask = t->dl_nslot - 1;
	struct tier_deleg *e = tier_dl_find(t, dir);

	if (!e)
		return;
	h = dl_slot_of(t, dir);
	i = (size_t)(e - t->dl);
	t->dl_slot[h] = 0;
	for (size_t j = (h + 1) & mask; t->dl_slot[j]; j = (j + 1) & mask) {
		size_t want = dl_hash(t, t->dl[t->dl_slot[j] - 1].dir);

		/* Moved back to the hole unless its home lies in (h, j]. */
		if (((j - want) & mask) >= ((j - h) & mask)) {
			t->dl_slot[h] = t->dl_slot[j];
			t->dl_slot[j] = 0;
			h = j;
		}
	}
	last = --t->dl_n;
	if (i != last) {
		t->dl[i] = t->dl[last];
		t->dl_slot[dl_slot_of(t, t->dl[i].dir)] = (uint32_t)i + 1;
	}
}
