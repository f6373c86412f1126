/* SPDX-License-Identifier: MIT */
/*
 * test_arena.c - the buddy allocator: sizes, exhaustion, fragmentation and
 * coalescing, small tails, and that blocks never overlap.
 */
#include <config.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "src/arena.h"

#define CHUNK	(64u << 10)
#define CAP	(16ull << 20)	/* 256 chunks */

static int
setup(void **state)
{
	struct objfs_arena *a;

	assert_int_equal(objfs_arena_create(CAP, CHUNK, &a), 0);
	*state = a;
	return 0;
}

static int
teardown(void **state)
{
	objfs_arena_destroy(*state);
	return 0;
}

/* dirty_bytes: a block counts once from its first dirty touch until it is
 * marked clean or freed, at its own size. */
static void
test_dirty_bytes(void **state)
{
	struct objfs_arena *a = *state;
	uint64_t o1, o2;
	uint32_t c1, c2;

	assert_int_equal(objfs_arena_alloc(a, 5000, &o1, &c1), 0);
	assert_int_equal(objfs_arena_alloc(a, CHUNK, &o2, &c2), 0);
	assert_int_equal(objfs_arena_dirty(a), 0);
	objfs_arena_touch(a, o1, 0);		/* referenced, not dirty */
	assert_int_equal(objfs_arena_dirty(a), 0);
	objfs_arena_touch(a, o1, 1);
	objfs_arena_touch(a, o1, 1);		/* counted once */
	assert_int_equal(objfs_arena_dirty(a), c1);
	objfs_arena_touch(a, o2, 1);
	assert_int_equal(objfs_arena_dirty(a), (uint64_t)c1 + c2);
	objfs_arena_mark_clean(a, o1);
	objfs_arena_mark_clean(a, o1);		/* and uncounted once */
	assert_int_equal(objfs_arena_dirty(a), c2);
	objfs_arena_free(a, o2, c2);		/* freed while dirty */
	assert_int_equal(objfs_arena_dirty(a), 0);
	objfs_arena_touch(a, o1, 1);
	objfs_arena_free(a, o1, c1);
	assert_int_equal(objfs_arena_dirty(a), 0);
}

static void
test_bad_sizes(void **state)
{
	struct objfs_arena *a;

	assert_int_equal(objfs_arena_create(CAP, 3u << 16, &a), -EINVAL);
	assert_int_equal(objfs_arena_create(CAP, 4096, &a), -EINVAL);
	assert_int_equal(objfs_arena_create(CHUNK, CHUNK, &a), -EINVAL);
	assert_int_equal(objfs_arena_alloc(*state, 0, &(uint64_t){0},
				&(uint32_t){0}), -EINVAL);
	assert_int_equal(objfs_arena_alloc(*state, CHUNK + 1, &(uint64_t){0},
				&(uint32_t){0}), -EINVAL);
}

static void
test_rounding(void **state)
{
	struct objfs_arena *a = *state;
	uint64_t off;
	uint32_t cap;

	assert_int_equal(objfs_arena_block_size(a, 1), 4096);
	assert_int_equal(objfs_arena_block_size(a, 4097), 8192);
	assert_int_equal(objfs_arena_block_size(a, CHUNK), CHUNK);
	assert_int_equal(objfs_arena_alloc(a, 5000, &off, &cap), 0);
	assert_int_equal(cap, 8192);
	assert_int_equal(off % cap, 0);		/* aligned to its size */
	assert_true(off != 0);			/* header block is never given */
	objfs_arena_free(a, off, cap);
}

static void
test_exhaustion(void **state)
{
	struct objfs_arena *a = *state;
	struct objfs_arena_stats st;
	uint64_t offs[256], off;
	uint32_t cap;
	int n = 0;

	/* The header takes one small block, so one chunk is split. */
	while (objfs_arena_alloc(a, CHUNK, &offs[n], &cap) == 0)
		n++;
	assert_int_equal(n, 255);
	assert_int_equal(objfs_arena_alloc(a, CHUNK, &off, &cap), -ENOSPC);
	objfs_arena_get_stats(a, &st);
	assert_true(st.used <= st.capacity);
	/* The split chunk still has small blocks. */
	assert_int_equal(objfs_arena_alloc(a, 4096, &off, &cap), 0);
	objfs_arena_free(a, off, cap);
	objfs_arena_free(a, offs[17], CHUNK);
	assert_int_equal(objfs_arena_alloc(a, CHUNK, &off, &cap), 0);
	assert_int_equal(off, offs[17]);	/* freed block reused */
	offs[17] = off;
	for (int i = 0; i < n; i++)
		objfs_arena_free(a, offs[i], CHUNK);
	objfs_arena_get_stats(a, &st);
	assert_int_equal(st.used, 0);
}

static void
test_fragmentation_and_coalescing(void **state)
{
	struct objfs_arena *a = *state;
	struct objfs_arena_stats st;
	size_t max = CAP / 4096;
	uint64_t *offs = calloc(max, sizeof(*offs)), off;
	uint32_t cap;
	size_t n = 0;

	assert_non_null(offs);
	while (objfs_arena_alloc(a, 4096, &offs[n], &cap) == 0)
		n++;
	assert_int_equal(n, max - 1);
	/* Free every other block: half the arena is free, in pieces too
	 * small for any larger block. */
	for (size_t i = 0; i < n; i += 2)
		objfs_arena_free(a, offs[i], 4096);
	objfs_arena_get_stats(a, &st);
	assert_int_equal(st.largest_free, 4096);
	assert_int_equal(objfs_arena_alloc(a, 8192, &off, &cap), -ENOSPC);
	/* Free the rest: buddies merge back into whole chunks. */
	for (size_t i = 1; i < n; i += 2)
		objfs_arena_free(a, offs[i], 4096);
	objfs_arena_get_stats(a, &st);
	assert_int_equal(st.used, 0);
	assert_int_equal(st.largest_free, CHUNK);
	n = 0;
	while (objfs_arena_alloc(a, CHUNK, &offs[n], &cap) == 0)
		n++;
	assert_int_equal(n, 255);
	for (size_t i = 0; i < n; i++)
		objfs_arena_free(a, offs[i], CHUNK);
	free(offs);
}

static void
test_small_tails(void **state)
{
	struct objfs_arena *a = *state;
	uint64_t offs[3000];
	uint32_t caps[3000];

	/* 3000 small files fit in an arena of 256 chunks. */
	for (int i = 0; i < 3000; i++)
		assert_int_equal(objfs_arena_alloc(a, 100 + i % 3000, &offs[i],
					&caps[i]), 0);
	for (int i = 0; i < 3000; i++)
		objfs_arena_free(a, offs[i], caps[i]);
}

static void
test_no_overlap(void **state)
{
	struct objfs_arena *a = *state;
	uint64_t offs[400];
	uint32_t caps[400];
	int n = 0;

	srand(7);
	for (; n < 400; n++) {
		size_t sz = 1 + (size_t)rand() % CHUNK;

		if (objfs_arena_alloc(a, sz, &offs[n], &caps[n]) < 0)
			break;
		memset(objfs_arena_ptr(a, offs[n]), n & 0xff, caps[n]);
	}
	assert_true(n > 20);
	for (int i = 0; i < n; i++) {
		unsigned char *p = objfs_arena_ptr(a, offs[i]);

		for (uint32_t j = 0; j < caps[i]; j += 512)
			assert_int_equal(p[j], i & 0xff);
	}
	for (int i = 0; i < n; i++)
		objfs_arena_free(a, offs[i], caps[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dirty_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rounding, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exhaustion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fragmentation_and_coalescing,
				setup, teardown),
		cmocka_unit_test_setup_teardown(test_small_tails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_overlap, setup, teardown),
	};

	return cmocka_run_group_tests_name("arena", tests, NULL, NULL);
}
