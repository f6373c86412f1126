/* SPDX-License-Identifier: MIT */
/*
 * test_meta.c - the LMDB index: namespace, listing order, xattrs, chunk
 * records, orphans, inode deletion and reopening, and the writable map
 * growing under readers.
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cmocka.h>

#include "meta/meta.h"

struct fx {
	char dir[64];
	struct objfs_meta *m;
	struct objfs_meta_txn *t;
};

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	strcpy(f->dir, "/tmp/objfs-meta-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(objfs_meta_open(f->dir, &f->m), 0);
	assert_int_equal(objfs_meta_begin(f->m, 1, &f->t), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;
	char path[128];

	objfs_meta_abort(f->t);
	objfs_meta_close(f->m);
	snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/lock.mdb", f->dir);
	unlink(path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void
test_dirents(void **state)
{
	struct fx *f = *state;
	struct objfs_dirent d;
	char longname[300];

	assert_int_equal(objfs_meta_dirent_add(f->t, 1, "a", 1, 10, S_IFREG, 5), 0);
	assert_int_equal(objfs_meta_dirent_add(f->t, 1, "a", 1, 11, S_IFREG, 6),
			-EEXIST);
	assert_int_equal(objfs_meta_dirent_get(f->t, 1, "a", 1, &d), 0);
	assert_int_equal(d.ino, 10);
	assert_int_equal(d.cookie, 5);
	assert_string_equal(d.name, "a");
	assert_int_equal(objfs_meta_dirent_get(f->t, 2, "a", 1, &d), -ENOENT);
	assert_int_equal(objfs_meta_dirent_get(f->t, 1, "ab", 2, &d), -ENOENT);
	memset(longname, 'x', sizeof(longname));
	assert_int_equal(objfs_meta_dirent_add(f->t, 1, longname, 256, 12,
				S_IFREG, 7), -ENAMETOOLONG);
	assert_int_equal(objfs_meta_dirent_add(f->t, 1, longname, 255, 12,
				S_IFREG, 7), 0);
	assert_int_equal(objfs_meta_dir_empty(f->t, 1), -ENOTEMPTY);
	assert_int_equal(objfs_meta_dir_empty(f->t, 2), 0);
	assert_int_equal(objfs_meta_dirent_del(f->t, 1, "a", 1), 0);
	assert_int_equal(objfs_meta_dirent_del(f->t, 1, "a", 1), -ENOENT);
	assert_int_equal(objfs_meta_dirent_del(f->t, 1, longname, 255), 0);
	assert_int_equal(objfs_meta_dir_empty(f->t, 1), 0);
}

struct collect {
	uint64_t cookies[16];
	char names[16][8];
	int n;
	int stop_at;
};

static int
collect(void *arg, const struct objfs_dirent *d)
{
	struct collect *c = arg;

	c->cookies[c->n] = d->cookie;
	snprintf(c->names[c->n], 8, "%.7s", d->name);
	c->n++;
	return c->n == c->stop_at;
}

static void
test_listing_order(void **state)
{
	struct fx *f = *state;
	struct collect c = { .stop_at = 16 };

	/* Names in reverse alphabetical order, cookies ascending: listing
	 * follows cookies, so entries added later come later. */
	assert_int_equal(objfs_meta_dirent_add(f->t, 7, "z", 1, 20, S_IFREG, 3), 0);
	assert_int_equal(objfs_meta_dirent_add(f->t, 7, "y", 1, 21, S_IFREG, 4), 0);
	assert_int_equal(objfs_meta_dirent_add(f->t, 7, "x", 1, 22, S_IFDIR, 9), 0);
	assert_int_equal(objfs_meta_dirent_add(f->t, 8, "other", 5, 23, S_IFREG, 5), 0);
	assert_int_equal(objfs_meta_dir_list(f->t, 7, 0, collect, &c), 0);
	assert_int_equal(c.n, 3);
	assert_string_equal(c.names[0], "z");
	assert_string_equal(c.names[2], "x");
	c.n = 0;
	assert_int_equal(objfs_meta_dir_list(f->t, 7, 3, collect, &c), 0);
	assert_int_equal(c.n, 2);		/* strictly after cookie 3 */
	assert_int_equal(c.cookies[0], 4);
	c.n = 0;
	c.stop_at = 1;
	assert_int_equal(objfs_meta_dir_list(f->t, 7, 0, collect, &c), 0);
	assert_int_equal(c.n, 1);		/* callback stops the walk */
}

static void
test_xattrs(void **state)
{
	struct fx *f = *state;
	char buf[64];
	size_t len;

	assert_int_equal(objfs_meta_xattr_set(f->t, 5, "user.a", "1", 1, 0), 0);
	assert_int_equal(objfs_meta_xattr_set(f->t, 5, "user.b", "22", 2, 0), 0);
	assert_int_equal(objfs_meta_xattr_set(f->t, 6, "user.c", "3", 1, 0), 0);
	assert_int_equal(objfs_meta_xattr_set(f->t, 5, "user.a", "x", 1,
				XATTR_CREATE), -EEXIST);
	assert_int_equal(objfs_meta_xattr_set(f->t, 5, "user.z", "x", 1,
				XATTR_REPLACE), -ENODATA);
	assert_int_equal(objfs_meta_xattr_get(f->t, 5, "user.b", buf, 0, &len), 0);
	assert_int_equal(len, 2);
	assert_int_equal(objfs_meta_xattr_get(f->t, 5, "user.b", buf, 1, &len),
			-ERANGE);
	assert_int_equal(objfs_meta_xattr_get(f->t, 5, "user.b", buf, 64, &len), 0);
	assert_memory_equal(buf, "22", 2);
	assert_int_equal(objfs_meta_xattr_list(f->t, 5, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 14);
	assert_memory_equal(buf, "user.a\0user.b\0", 14);
	assert_int_equal(objfs_meta_xattr_list(f->t, 5, buf, 5, &len), -ERANGE);
	assert_int_equal(objfs_meta_xattr_del(f->t, 5, "user.a"), 0);
	assert_int_equal(objfs_meta_xattr_del(f->t, 5, "user.a"), -ENODATA);
	assert_int_equal(objfs_meta_xattr_get(f->t, 5, "user.a", buf, 64, &len),
			-ENODATA);
	assert_int_equal(objfs_meta_xattr_set(f->t, 5, "user.big", buf,
				OBJFS_XATTR_SIZE_MAX + 1, 0), -E2BIG);
}

static int
count_chunk(void *arg, uint64_t idx, uint64_t csum, uint32_t len)
{
	uint64_t *v = arg;

	assert_int_equal(csum, idx * 1000);
	assert_int_equal(len, (uint32_t)idx + 1);
	v[0]++;
	v[1] += idx;
	return 0;
}

static void
test_chunks_and_inode_delete(void **state)
{
	struct fx *f = *state;
	struct objfs_attr a = { .ino = 9, .mode = S_IFREG | 0644, .nlink = 1 };
	struct objfs_attr b;
	uint64_t v[2] = { 0, 0 };
	char buf[8];
	size_t len;

	assert_int_equal(objfs_meta_inode_put(f->t, &a), 0);
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(objfs_meta_chunk_put(f->t, 9, i, i * 1000,
					(uint32_t)i + 1), 0);
	assert_int_equal(objfs_meta_chunk_put(f->t, 10, 0, 0, 1), 0);
	assert_int_equal(objfs_meta_chunk_list(f->t, 9, count_chunk, v), 0);
	assert_int_equal(v[0], 10);
	/* Deleting a run of records with a cursor visits each one. */
	assert_int_equal(objfs_meta_chunk_del_from(f->t, 9, 4), 0);
	v[0] = v[1] = 0;
	assert_int_equal(objfs_meta_chunk_list(f->t, 9, count_chunk, v), 0);
	assert_int_equal(v[0], 4);
	assert_int_equal(v[1], 0 + 1 + 2 + 3);
	assert_int_equal(objfs_meta_chunk_del(f->t, 9, 2), 0);
	assert_int_equal(objfs_meta_chunk_del(f->t, 9, 2), 0);	/* absent: ok */
	assert_int_equal(objfs_meta_xattr_set(f->t, 9, "user.x", "1", 1, 0), 0);
	assert_int_equal(objfs_meta_inode_del(f->t, 9), 0);
	assert_int_equal(objfs_meta_inode_get(f->t, 9, &b), -ENOENT);
	assert_int_equal(objfs_meta_xattr_get(f->t, 9, "user.x", buf, 8, &len),
			-ENODATA);
	v[0] = 0;
	assert_int_equal(objfs_meta_chunk_list(f->t, 9, count_chunk, v), 0);
	assert_int_equal(v[0], 0);
	v[0] = 0;
	assert_int_equal(objfs_meta_chunk_list(f->t, 10, count_chunk, v), 0);
	assert_int_equal(v[0], 1);		/* the neighbour is untouched */
}

static int
collect_orphan(void *arg, uint64_t ino)
{
	((uint64_t *)arg)[((uint64_t *)arg)[0]++ + 1] = ino;
	return 0;
}

static void
test_orphans_and_reopen(void **state)
{
	struct fx *f = *state;
	struct objfs_attr a = { .ino = 42, .size = 1234, .mode = S_IFREG,
		.nlink = 0 };
	struct objfs_attr b;
	uint64_t v[4] = { 0 }, val;
	char target[16];
	size_t len;

	assert_int_equal(objfs_meta_inode_put(f->t, &a), 0);
	assert_int_equal(objfs_meta_orphan_add(f->t, 42), 0);
	assert_int_equal(objfs_meta_orphan_add(f->t, 43), 0);
	assert_int_equal(objfs_meta_orphan_del(f->t, 43), 0);
	assert_int_equal(objfs_meta_super_put(f->t, "next_ino", 77), 0);
	assert_int_equal(objfs_meta_symlink_put(f->t, 42, "target", 6), 0);
	assert_int_equal(objfs_meta_commit(f->t), 0);
	f->t = NULL;
	assert_int_equal(objfs_meta_sync(f->m), 0);
	objfs_meta_close(f->m);

	assert_int_equal(objfs_meta_open(f->dir, &f->m), 0);
	assert_int_equal(objfs_meta_begin(f->m, 0, &f->t), 0);
	assert_int_equal(objfs_meta_inode_get(f->t, 42, &b), 0);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(objfs_meta_orphan_list(f->t, collect_orphan, v), 0);
	assert_int_equal(v[0], 1);
	assert_int_equal(v[1], 42);
	assert_int_equal(objfs_meta_super_get(f->t, "next_ino", &val), 0);
	assert_int_equal(val, 77);
	assert_int_equal(objfs_meta_super_get(f->t, "nothing", &val), -ENOENT);
	assert_int_equal(objfs_meta_symlink_get(f->t, 42, target, 3, &len), 0);
	assert_int_equal(len, 6);		/* full length, truncated copy */
	assert_memory_equal(target, "tar", 3);
}

/* ---- the writable map grows, with readers running and nested ------- */
#define VAL	60000
#define NVALS	2400		/* 144 MB of values: past half of 256 MiB */

struct reader {
	struct objfs_meta *m;
	_Atomic int stop;
	_Atomic long reads;
};

static void
fill_val(unsigned char *v, unsigned i)
{
	for (unsigned k = 0; k < VAL; k++)
		v[k] = (unsigned char)(i * 7 + k);
}

static void *
read_loop(void *arg)
{
	struct reader *r = arg;
	static unsigned char want[VAL];
	unsigned char *got = malloc(VAL);
	struct objfs_meta_txn *t;
	size_t len;

	fill_val(want, 0);
	while (!r->stop) {
		if (objfs_meta_begin(r->m, 0, &t) != 0)
			abort();
		if (objfs_meta_xattr_get(t, 1, "user.v0", got, VAL, &len) != 0 ||
		    len != VAL || memcmp(got, want, VAL) != 0)
			abort();
		objfs_meta_abort(t);
		r->reads++;
		usleep(200);
	}
	free(got);
	return NULL;
}

static void
test_map_grows(void **state)
{
	struct fx *f = *state;
	unsigned char *v = malloc(VAL), *got = malloc(VAL);
	struct objfs_meta_txn *t, *rt;
	struct reader r = { .m = f->m };
	pthread_t th;
	char name[32];
	size_t len;

	objfs_meta_abort(f->t);
	f->t = NULL;
	alarm(300);		/* a deadlock fails the test */
	assert_int_equal(objfs_meta_map_size(f->m), 256u << 20);
	fill_val(v, 0);
	assert_int_equal(objfs_meta_begin(f->m, 1, &t), 0);
	assert_int_equal(objfs_meta_xattr_set(t, 1, "user.v0", v, VAL, 0), 0);
	assert_int_equal(objfs_meta_commit(t), 0);
	assert_int_equal(pthread_create(&th, NULL, read_loop, &r), 0);
	for (unsigned i = 1; i < NVALS; i += 100) {
		assert_int_equal(objfs_meta_begin(f->m, 1, &t), 0);
		for (unsigned j = i; j < i + 100 && j < NVALS; j++) {
			fill_val(v, j);
			snprintf(name, sizeof(name), "user.v%u", j);
			assert_int_equal(objfs_meta_xattr_set(t, 1, name, v, VAL,
						0), 0);
		}
		assert_int_equal(objfs_meta_commit(t), 0);
	}
	/* A write inside a read: the map cannot be remapped meanwhile. */
	assert_int_equal(objfs_meta_begin(f->m, 0, &rt), 0);
	assert_int_equal(objfs_meta_begin(f->m, 1, &t), 0);
	assert_int_equal(objfs_meta_xattr_set(t, 2, "user.n", "n", 1, 0), 0);
	assert_int_equal(objfs_meta_commit(t), 0);
	objfs_meta_abort(rt);
	r.stop = 1;
	pthread_join(th, NULL);
	assert_true(r.reads > 0);
	assert_true(objfs_meta_map_size(f->m) >= 512u << 20);
	/* Everything is there, and after reopening too. */
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(objfs_meta_begin(f->m, 0, &t), 0);
		for (unsigned j = 0; j < NVALS; j += 97) {
			fill_val(v, j);
			snprintf(name, sizeof(name), "user.v%u", j);
			assert_int_equal(objfs_meta_xattr_get(t, 1, name, got, VAL,
						&len), 0);
			assert_int_equal(len, VAL);
			assert_memory_equal(got, v, VAL);
		}
		objfs_meta_abort(t);
		objfs_meta_close(f->m);
		assert_int_equal(objfs_meta_open(f->dir, &f->m), 0);
		assert_true(objfs_meta_map_size(f->m) >= 512u << 20);
	}
	alarm(0);
	free(v);
	free(got);
}

static void
test_open_errors(void **state)
{
	struct objfs_meta *m;

	assert_int_equal(objfs_meta_open("/nonexistent/objfs/index", &m),
			-ENOENT);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dirents, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listing_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_xattrs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chunks_and_inode_delete,
				setup, teardown),
		cmocka_unit_test_setup_teardown(test_orphans_and_reopen, setup,
				teardown),
		cmocka_unit_test_setup_teardown(test_map_grows, setup, teardown),
		cmocka_unit_test(test_open_errors),
	};

	return cmocka_run_group_tests_name("meta", tests, NULL, NULL);
}
