/* SPDX-License-Identifier: MIT */
/*
 * test_arena.c - the buddy allocator: sizes, exhaustion, fragmentation and
 * coalescing, small tails, that blocks never overlap, adoption, and the
 * warmer.
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
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/memory/arena.h"

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


/* ---- the arena that outlives its daemon ---------------------------------- */

#define DIR_ID	0x1234abcdull

struct shared {
	char root[64];
	char path[256];
};

static struct objfs_arena *
make_shared(struct shared *sh)
{
	struct objfs_arena *a;

	snprintf(sh->root, sizeof(sh->root), "/tmp/objfs-arena.XXXXXX");
	assert_non_null(mkdtemp(sh->root));
	assert_int_equal(objfs_arena_create_shared(sh->root, CAP, CHUNK, DIR_ID,
			sh->path, sizeof(sh->path), &a), 0);
	return a;
}

static void
drop_shared(struct shared *sh)
{
	char dir[256];

	unlink(sh->path);
	snprintf(dir, sizeof(dir), "%s", sh->path);
	*strrchr(dir, '/') = '\0';
	rmdir(dir);
	rmdir(sh->root);
}

static struct objfs_arena *
adopt_ok(struct shared *sh, struct objfs_arena_found **f, size_t *n,
		struct objfs_arena_redo *redo, int *nredo)
{
	struct objfs_arena *a;
	const char *why = NULL;

	assert_int_equal(objfs_arena_adopt(sh->path, CHUNK, DIR_ID, &a, f, n,
			redo, nredo, &why), 0);
	return a;
}

/* What a killed daemon published comes back, with its bytes, owners and
 * sizes; what it freed or never published does not; the blocks adopted
 * are allocated (a new block never overlaps one). */
static void
test_adopt(void **state)
{
	struct objfs_arena_redo redo[OBJFS_ARENA_INTENTS];
	struct objfs_arena_found *f;
	struct objfs_arena *a;
	struct shared sh;
	struct stat st;
	/* Sub-blocks 0, 2 and 199: the last in the block's second entry. */
	uint64_t o1, o2, o3, o4, v[OBJFS_BITS_WORDS] = { 5, 0, 0, 1ull << 7 };
	uint32_t c1, c2, c3, c4;
	char dir[256];
	size_t n;
	int nredo;

	(void)state;
	a = make_shared(&sh);
	assert_int_equal(stat(sh.path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(dir, sizeof(dir), "%s", sh.path);
	*strrchr(dir, '/') = '\0';
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);

	assert_int_equal(objfs_arena_alloc(a, CHUNK, &o1, &c1), 0);
	assert_int_equal(objfs_arena_alloc(a, 5000, &o2, &c2), 0);
	assert_int_equal(objfs_arena_alloc(a, CHUNK, &o3, &c3), 0);
	assert_int_equal(objfs_arena_alloc(a, CHUNK, &o4, &c4), 0);
	memset(objfs_arena_ptr(a, o1), 'a', CHUNK);
	objfs_arena_publish(a, o1, 7, 0, OBJFS_ARENA_TAG_DIRTY, CHUNK, 11, 0,
			NULL);
	memset(objfs_arena_ptr(a, o2), 'b', 5000);
	objfs_arena_publish(a, o2, 7, 1, 0, CHUNK + 5000, 12, 99, NULL);
	objfs_arena_tag_dirty(a, o2);
	objfs_arena_tag_write(a, o2, CHUNK + 6000, 13, NULL);
	objfs_arena_publish(a, o3, 8, 3, OBJFS_ARENA_TAG_DIRTY |
			OBJFS_ARENA_TAG_PARTIAL, 4 * CHUNK, 14, 0, v);
	objfs_arena_tag_clean(a, o3, 77);
	objfs_arena_publish(a, o4, 9, 0, OBJFS_ARENA_TAG_DIRTY, 1, 15, 0, NULL);
	objfs_arena_free(a, o4, c4);		/* freed: not adopted */
	assert_int_equal(objfs_arena_intent(a, 7, OBJFS_INTENT_TRUNCATE, 100,
			0), 0);
	objfs_arena_destroy(a);			/* the daemon dies */

	a = adopt_ok(&sh, &f, &n, redo, &nredo);
	assert_int_equal(n, 3);
	assert_int_equal(f[0].ino, 7);
	assert_int_equal(f[0].idx, 0);
	assert_int_equal(f[0].off, o1);
	assert_int_equal(f[0].cap, CHUNK);
	assert_int_equal(f[0].flags, OBJFS_ARENA_TAG_DIRTY);
	assert_int_equal(f[0].size, CHUNK);
	assert_int_equal(((unsigned char *)objfs_arena_ptr(a, o1))[CHUNK - 1],
			'a');
	assert_int_equal(f[1].idx, 1);
	assert_int_equal(f[1].cap, c2);
	assert_int_equal(f[1].flags, OBJFS_ARENA_TAG_DIRTY);
	assert_int_equal(f[1].size, CHUNK + 6000);
	assert_int_equal(f[1].mtime_ns, 13);
	assert_int_equal(f[2].ino, 8);
	assert_int_equal(f[2].flags, OBJFS_ARENA_TAG_PARTIAL);
	assert_int_equal(f[2].csum, 77);
	assert_int_equal(f[2].valid[0], 5);
	assert_int_equal(f[2].valid[1], 0);
	assert_int_equal(f[2].valid[2], 0);
	assert_int_equal(f[2].valid[3], 1ull << 7);
	assert_int_equal(nredo, 1);
	assert_int_equal(redo[0].ino, 7);
	assert_int_equal(redo[0].kind, OBJFS_INTENT_TRUNCATE);
	assert_int_equal(redo[0].a, 100);
	{
		struct objfs_arena_stats st2;
		uint64_t o;
		uint32_t c;

		objfs_arena_get_stats(a, &st2);
		assert_int_equal(st2.used, 2 * CHUNK + c2);
		/* every new block is outside the adopted ones */
		while (objfs_arena_alloc(a, 4096, &o, &c) == 0) {
			assert_true(o + c <= o1 || o >= o1 + CHUNK);
			assert_true(o + c <= o2 || o >= o2 + c2);
			assert_true(o + c <= o3 || o >= o3 + CHUNK);
		}
	}
	free(f);
	objfs_arena_remove(a);
	objfs_arena_destroy(a);
	assert_int_equal(access(sh.path, F_OK), -1);
	drop_shared(&sh);
}

/* Two blocks name one chunk (killed while moving it to a bigger block):
 * the one published last is adopted, and the other is free again. */
static void
test_adopt_newest(void **state)
{
	struct objfs_arena_redo redo[OBJFS_ARENA_INTENTS];
	struct objfs_arena_found *f;
	struct objfs_arena *a;
	struct shared sh;
	uint64_t o1, o2;
	uint32_t c1, c2;
	size_t n;
	int nredo;

	(void)state;
	a = make_shared(&sh);
	assert_int_equal(objfs_arena_alloc(a, 4096, &o1, &c1), 0);
	assert_int_equal(objfs_arena_alloc(a, 8192, &o2, &c2), 0);
	objfs_arena_publish(a, o1, 5, 2, OBJFS_ARENA_TAG_DIRTY, 10, 1, 0, NULL);
	objfs_arena_publish(a, o2, 5, 2, OBJFS_ARENA_TAG_DIRTY, 20, 2, 0, NULL);
	objfs_arena_destroy(a);
	a = adopt_ok(&sh, &f, &n, redo, &nredo);
	assert_int_equal(n, 1);
	assert_int_equal(f[0].off, o2);
	assert_int_equal(f[0].size, 20);
	assert_int_equal(nredo, 0);
	free(f);
	/* kept for the next mount: frees at exit leave the tags */
	objfs_arena_keep(a);
	objfs_arena_free(a, o2, c2);
	objfs_arena_destroy(a);
	a = adopt_ok(&sh, &f, &n, redo, &nredo);
	assert_int_equal(n, 1);
	free(f);
	objfs_arena_remove(a);
	objfs_arena_destroy(a);
	drop_shared(&sh);
}

/* An arena that is not this data directory's, or that others could have
 * read or replaced, is refused, and left as it is. */
static void
test_adopt_refused(void **state)
{
	struct objfs_arena_redo redo[OBJFS_ARENA_INTENTS];
	struct objfs_arena_found *f;
	struct objfs_arena *a;
	struct shared sh;
	const char *why;
	char dir[256];
	size_t n;
	int nredo;

	(void)state;
	a = make_shared(&sh);
	objfs_arena_destroy(a);
	why = NULL;
	assert_int_equal(objfs_arena_adopt(sh.path, CHUNK, DIR_ID + 1, &a, &f,
			&n, redo, &nredo, &why), -ENOENT);
	assert_string_equal(why, "it belongs to another data directory");
	assert_int_equal(objfs_arena_adopt(sh.path, CHUNK * 2, DIR_ID, &a, &f,
			&n, redo, &nredo, &why), -ENOENT);
	assert_int_equal(chmod(sh.path, 0644), 0);
	assert_int_equal(objfs_arena_adopt(sh.path, CHUNK, DIR_ID, &a, &f, &n,
			redo, &nredo, &why), -ENOENT);
	assert_string_equal(why, "it is not a private file of this user");
	assert_int_equal(chmod(sh.path, 0600), 0);
	snprintf(dir, sizeof(dir), "%s", sh.path);
	*strrchr(dir, '/') = '\0';
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(objfs_arena_adopt(sh.path, CHUNK, DIR_ID, &a, &f, &n,
			redo, &nredo, &why), -ENOENT);
	assert_string_equal(why,
			"its directory is not a private directory of this user");
	assert_int_equal(chmod(dir, 0700), 0);
	assert_int_equal(truncate(sh.path, 8192), 0);
	assert_int_equal(objfs_arena_adopt(sh.path, CHUNK, DIR_ID, &a, &f, &n,
			redo, &nredo, &why), -ENOENT);
	unlink(sh.path);
	assert_int_equal(objfs_arena_adopt(sh.path, CHUNK, DIR_ID, &a, &f, &n,
			redo, &nredo, &why), -ENOENT);
	assert_non_null(strstr(why, "gone"));
	drop_shared(&sh);
}

/* ---- the warmer ------------------------------------------------------ */

static int
resident(struct objfs_arena *a, uint64_t off, size_t len)
{
	unsigned char v[CHUNK / 4096];

	assert_true(len <= CHUNK);
	assert_int_equal(mincore(objfs_arena_ptr(a, off), len, v), 0);
	for (size_t i = 0; i < len / 4096; i++)
		if (!(v[i] & 1))
			return 0;
	return 1;
}

static int
wait_warmed(struct objfs_arena *a, uint64_t want)
{
	for (int i = 0; i < 1000 && objfs_arena_warmed(a) < want; i++)
		usleep(10000);
	return objfs_arena_warmed(a) == want;
}

/* The warmer faults in the pages of the whole free slabs the allocator
 * takes next, a quarter of this small arena ahead (64 slabs), no more
 * while nothing is taken, and the next ones as slabs are taken; the
 * blocks it warmed hold what is written into them; destroying the arena
 * stops it. */
static void
test_warmer(void **state)
{
	struct shared sh;
	struct objfs_arena *a = make_shared(&sh);
	const uint64_t ahead = CAP / 4;
	uint64_t off[8];
	uint32_t cap;

	(void)state;
	assert_int_equal(objfs_arena_warm_start(a), 0);
	assert_true(wait_warmed(a, ahead));
	usleep(200000);
	assert_int_equal(objfs_arena_warmed(a), ahead);
	/* Slab 0 holds the header; slabs 1..64 are the next whole ones. */
	for (uint64_t k = 1; k <= ahead / CHUNK; k++)
		assert_true(resident(a, k * CHUNK, CHUNK));
	for (int i = 0; i < 8; i++) {
		assert_int_equal(objfs_arena_alloc(a, CHUNK, &off[i], &cap), 0);
		assert_int_equal(off[i], (uint64_t)(i + 1) * CHUNK);
		memset(objfs_arena_ptr(a, off[i]), 'a' + i, CHUNK);
	}
	assert_true(wait_warmed(a, ahead + 8 * (uint64_t)CHUNK));
	for (uint64_t k = ahead / CHUNK + 1; k <= ahead / CHUNK + 8; k++)
		assert_true(resident(a, k * CHUNK, CHUNK));
	for (int i = 0; i < 8; i++) {
		const unsigned char *p = objfs_arena_ptr(a, off[i]);

		for (uint32_t j = 0; j < CHUNK; j++)
			assert_int_equal(p[j], 'a' + i);
	}
	objfs_arena_remove(a);
	objfs_arena_destroy(a);
	drop_shared(&sh);
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
		cmocka_unit_test(test_adopt),
		cmocka_unit_test(test_adopt_newest),
		cmocka_unit_test(test_adopt_refused),
		cmocka_unit_test(test_warmer),
	};

	return cmocka_run_group_tests_name("arena", tests, NULL, NULL);
}
