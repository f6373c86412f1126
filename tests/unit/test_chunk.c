/* SPDX-License-Identifier: MIT */
/*
 * test_chunk.c - chunk map growth, states and cutting.
 */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "src/chunk.h"

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
test_growth_and_holes(void **state)
{
	struct objfs_chunkmap m;

	objfs_chunkmap_init(&m);
	assert_null(objfs_chunkmap_get(&m, 0));
	assert_int_equal(objfs_chunkmap_ensure(&m, 1000), 0);
	assert_int_equal(m.n, 1000);
	for (uint64_t i = 0; i < 1000; i++)
		assert_int_equal(objfs_chunk_state(objfs_chunkmap_get(&m, i)),
				OBJFS_CHUNK_HOLE);
	assert_null(objfs_chunkmap_get(&m, 1000));
	assert_int_equal(objfs_chunkmap_ensure(&m, 10), 0);	/* no shrink */
	assert_int_equal(m.n, 1000);
	objfs_chunkmap_fini(&m, *state);
}

static void
test_states(void **state)
{
	struct objfs_arena *a = *state;
	struct objfs_chunkmap m;
	struct objfs_chunk *c;
	uint64_t res, disk;

	objfs_chunkmap_init(&m);
	assert_int_equal(objfs_chunkmap_ensure(&m, 3), 0);
	c = objfs_chunkmap_get(&m, 1);
	assert_int_equal(objfs_arena_alloc(a, 5000, &c->off, &c->cap), 0);
	c->flags |= OBJFS_CHUNK_DIRTY;
	assert_int_equal(objfs_chunk_state(c), OBJFS_CHUNK_RESIDENT_DIRTY);
	c->flags = OBJFS_CHUNK_ONDISK;
	c->disk_len = 5000;
	assert_int_equal(objfs_chunk_state(c), OBJFS_CHUNK_RESIDENT_CLEAN);
	objfs_chunkmap_usage(&m, &res, &disk);
	assert_int_equal(res, 8192);
	assert_int_equal(disk, 5000);
	/* Dropping a clean chunk keeps its disk copy: now spilled. */
	objfs_chunk_drop(c, a);
	assert_int_equal(objfs_chunk_state(c), OBJFS_CHUNK_SPILLED);
	objfs_chunkmap_usage(&m, &res, &disk);
	assert_int_equal(res, 0);
	objfs_chunkmap_fini(&m, a);
}

static void
test_cut_frees_blocks(void **state)
{
	struct objfs_arena *a = *state;
	struct objfs_arena_stats st;
	struct objfs_chunkmap m;

	objfs_chunkmap_init(&m);
	assert_int_equal(objfs_chunkmap_ensure(&m, 8), 0);
	for (int i = 0; i < 8; i++) {
		struct objfs_chunk *c = objfs_chunkmap_get(&m, (uint64_t)i);

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
		cmocka_unit_test_setup_teardown(test_growth_and_holes, setup,
				teardown),
		cmocka_unit_test_setup_teardown(test_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_frees_blocks, setup,
				teardown),
	};

	return cmocka_run_group_tests_name("chunk", tests, NULL, NULL);
}
