/* SPDX-License-Identifier: MIT */
/*
 * test_chunk.c - the chunk map (sparse entries, states, cutting) and the
 * slot map.
 */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <cmocka.h>

#include "src/memory/chunk.h"

static int
setup(void **state)
{
	struct objfs_arena *a;

	assert_int_equal(objfs_arena_create(4u << 20, 64u << 10, &a), 0);
	*state = a;
	return 0;
}

static int
teardown(void **state)
{
	objfs_arena_destroy(*state);
	return 0;
}

static void
test_sparse_entries(void **state)
{
	static const uint64_t at[] = { 0, 7, 8, 1000, 123456,
		(1ull << OBJFS_CHUNKMAP_BITS) - 1 };
	struct objfs_chunkmap m;
	struct objfs_chunk *c;
	uint64_t i, n = 0;

	objfs_chunkmap_init(&m);
	assert_null(objfs_chunkmap_get(&m, 0));
	assert_null(objfs_chunkmap_next(&m, 0, &i));
	/* Out of order, the highest first: the tree grows taller under
	 * what it holds, and keeps it. */
	for (int k = 5; k >= 0; k--) {
		c = objfs_chunkmap_add(&m, at[k]);
		assert_non_null(c);
		assert_int_equal(objfs_chunk_state(c), OBJFS_CHUNK_HOLE);
		c->slot = at[k] + 1;
	}
	assert_int_equal(m.n, at[5] + 1);
	assert_null(objfs_chunkmap_add(&m, 1ull << OBJFS_CHUNKMAP_BITS));
	for (int k = 0; k < 6; k++)
		assert_int_equal(objfs_chunkmap_get(&m, at[k])->slot, at[k] + 1);
	/* What was never added is a hole: no entry. */
	assert_null(objfs_chunkmap_get(&m, 999));
	assert_null(objfs_chunkmap_get(&m, at[5] - 8));	/* another leaf */
	/* In order, every entry of the leaves made, and only those. */
	OBJFS_CHUNKMAP_EACH(&m, 9, i, c) {
		assert_true(i >= 9);
		if (c->slot) {
			assert_int_equal(c->slot, i + 1);
			n++;
		}
	}
	assert_int_equal(n, 3);		/* 1000, 123456, the last */
	assert_non_null(objfs_chunkmap_next(&m, at[5], &i));
	assert_int_equal(i, at[5]);
	assert_null(objfs_chunkmap_next(&m, at[5] + 1, &i));
	/* Cut in the middle: what is below stays. */
	objfs_chunkmap_cut(&m, NULL, 1001);
	assert_int_equal(m.n, 1001);
	assert_null(objfs_chunkmap_get(&m, 123456));
	assert_int_equal(objfs_chunkmap_get(&m, 1000)->slot, 1001);
	assert_int_equal(objfs_chunkmap_get(&m, 8)->slot, 9);
	c = objfs_chunkmap_add(&m, 123456);	/* made again, a hole */
	assert_int_equal(c->slot, 0);
	objfs_chunkmap_fini(&m, NULL);
	assert_null(objfs_chunkmap_get(&m, 0));
}

/* The slot map against a plain bitmap, through random takes and puts. */
static void
test_slot_runs(void **state)
{
	enum { N = 300 };
	static unsigned char model[N + 64];
	struct objfs_slotmap m;
	unsigned seed = 5;
	uint64_t s, end;

	(void)state;
	objfs_slots_init(&m);
	assert_int_equal(objfs_slots_end(&m), 0);
	for (int op = 0; op < 20000; op++) {
		uint64_t slot = (uint64_t)rand_r(&seed) % N;

		switch (rand_r(&seed) % 3) {
		case 0:
			assert_int_equal(objfs_slots_take(&m, slot),
					model[slot] ? -EEXIST : 0);
			model[slot] = 1;
			break;
		case 1:
			objfs_slots_put(&m, slot);
			model[slot] = 0;
			break;
		default: {
			uint64_t floor = (uint64_t)rand_r(&seed) % N, want;

			assert_int_equal(objfs_slots_alloc(&m, slot, floor, &s),
					0);
			if (!model[slot]) {
				want = slot;
			} else {
				for (want = floor; model[want]; want++)
					;
			}
			assert_int_equal(s, want);
			model[s] = 1;
			if (s >= N) {	/* keep the slots below N + 1 */
				objfs_slots_put(&m, s);
				model[s] = 0;
			}
			break;
		}
		}
		for (end = N + 64; end > 0 && !model[end - 1]; end--)
			;
		assert_int_equal(objfs_slots_end(&m), end);
		for (uint64_t k = 0; k < N + 64; k++)
			assert_int_equal(objfs_slots_taken(&m, k), model[k]);
		/* Runs stay sorted, apart and merged. */
		for (uint64_t k = 0; k < m.n; k++) {
			assert_true(m.run[k].lo < m.run[k].hi);
			if (k)
				assert_true(m.run[k - 1].hi < m.run[k].lo);
		}
	}
	objfs_slots_fini(&m);
	/* Far slots cost a run, not a bitmap up to them. */
	assert_int_equal(objfs_slots_take(&m, 1ull << 40), 0);
	assert_int_equal(m.n, 1);
	assert_int_equal(objfs_slots_end(&m), (1ull << 40) + 1);
	objfs_slots_fini(&m);
}

static void
test_states(void **state)
{
	struct objfs_arena *a = *state;
	struct objfs_chunkmap m;
	struct objfs_chunk *c;
	uint64_t res, disk;

	objfs_chunkmap_init(&m);
	c = objfs_chunkmap_add(&m, 1);
	assert_non_null(c);
	assert_int_equal(objfs_arena_alloc(a, 5000, &c->off, &c->cap), 0);
	objfs_chunkmap_set_dirty(&m, 1, c, 1);
	assert_int_equal(objfs_chunk_state(c), OBJFS_CHUNK_RESIDENT_DIRTY);
	assert_int_equal(m.ndirty, 1);
	objfs_chunkmap_set_dirty(&m, 1, c, 0);
	assert_int_equal(m.ndirty, 0);
	c->flags = OBJFS_CHUNK_ONDISK;
	c->disk_len = 5000;
	assert_int_equal(objfs_chunk_state(c), OBJFS_CHUNK_RESIDENT_CLEAN);
	objfs_chunkmap_usage(&m, &res, &disk);
	assert_int_equal(res, 8192);
	assert_int_equal(disk, 5000);
	/* Dropping a clean chunk keeps its disk copy: now spilled. */
	objfs_chunkmap_drop(&m, 1, c, a);
	assert_int_equal(objfs_chunk_state(c), OBJFS_CHUNK_SPILLED);
	objfs_chunkmap_usage(&m, &res, &disk);
	assert_int_equal(res, 0);
	objfs_chunkmap_fini(&m, a);
}

/* The walk over the dirty entries finds exactly the entries marked dirty,
 * in order, across a sparse map of five levels, while entries are marked,
 * cleaned, dropped and cut; the counts stay equal to a count by hand. */
static void
test_dirty_walk(void **state)
{
	struct objfs_arena *a = *state;
	enum { N = 4000 };
	static uint64_t idx[N];
	struct objfs_chunkmap m;
	struct objfs_chunk *c;
	uint64_t i, cut = UINT64_MAX;

	(void)a;
	objfs_chunkmap_init(&m);
	srand(7);
	for (int k = 0; k < N; k++) {
		/* Dense runs and far-apart entries, up to the top index. */
		idx[k] = k < N / 2 ? (uint64_t)k :
			((uint64_t)rand() * 2654435761u) &
			((1ull << OBJFS_CHUNKMAP_BITS) - 1);
		c = objfs_chunkmap_add(&m, idx[k]);
		assert_non_null(c);
	}
	for (int round = 0; round < 6; round++) {
		uint64_t n = 0, seen = 0, prev = 0;
		int first = 1;

		for (int k = 0; k < N; k++) {
			if (idx[k] >= cut)
				continue;
			c = objfs_chunkmap_get(&m, idx[k]);
			assert_non_null(c);
			objfs_chunkmap_set_dirty(&m, idx[k], c, rand() % 3 == 0);
		}
		if (round == 3) {		/* drop some: never dirty after */
			for (int k = 0; k < N; k += 5)
				if (idx[k] < cut)
					objfs_chunkmap_drop(&m, idx[k],
						objfs_chunkmap_get(&m, idx[k]),
						a);
		}
		if (round == 4) {		/* cut the top half away */
			cut = 1ull << (OBJFS_CHUNKMAP_BITS - 1);
			objfs_chunkmap_cut(&m, a, cut);
		}
		/* Counted by hand over every entry (an index drawn twice is
		 * one entry). */
		n = 0;
		OBJFS_CHUNKMAP_EACH(&m, 0, i, c)
			n += (c->flags & OBJFS_CHUNK_DIRTY) != 0;
		assert_int_equal(m.ndirty, n);
		OBJFS_CHUNKMAP_EACH_DIRTY(&m, 0, i, c) {
			assert_true(c->flags & OBJFS_CHUNK_DIRTY);
			assert_ptr_equal(c, objfs_chunkmap_get(&m, i));
			assert_true(first || i > prev);
			first = 0;
			prev = i;
			seen++;
		}
		assert_int_equal(seen, n);
		/* From the middle of the range, too. */
		seen = 0;
		OBJFS_CHUNKMAP_EACH_DIRTY(&m, 1000, i, c) {
			assert_true(i >= 1000);
			seen++;
		}
		n = 0;
		OBJFS_CHUNKMAP_EACH(&m, 1000, i, c)
			n += (c->flags & OBJFS_CHUNK_DIRTY) != 0;
		assert_int_equal(seen, n);
	}
	objfs_chunkmap_fini(&m, a);
	assert_int_equal(m.ndirty, 0);
}

static void
test_cut_frees_blocks(void **state)
{
	struct objfs_arena *a = *state;
	struct objfs_arena_stats st;
	struct objfs_chunkmap m;

	objfs_chunkmap_init(&m);
	for (int i = 0; i < 8; i++) {
		struct objfs_chunk *c = objfs_chunkmap_add(&m, (uint64_t)i);

		assert_non_null(c);
		assert_int_equal(objfs_arena_alloc(a, 64u << 10, &c->off,
					&c->cap), 0);
	}
	objfs_arena_get_stats(a, &st);
	assert_int_equal(st.used, 8u * (64u << 10));
	objfs_chunkmap_cut(&m, a, 3);
	assert_int_equal(m.n, 3);
	objfs_arena_get_stats(a, &st);
	assert_int_equal(st.used, 3u * (64u << 10));
	objfs_chunkmap_fini(&m, a);
	objfs_arena_get_stats(a, &st);
	assert_int_equal(st.used, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sparse_entries, setup,
				teardown),
		cmocka_unit_test(test_slot_runs),
		cmocka_unit_test_setup_teardown(test_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dirty_walk, setup,
				teardown),
		cmocka_unit_test_setup_teardown(test_cut_frees_blocks, setup,
				teardown),
	};

	return cmocka_run_group_tests_name("chunk", tests, NULL, NULL);
}
