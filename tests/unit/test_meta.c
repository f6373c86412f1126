/* SPDX-License-Identifier: MIT */
/*
 * test_meta.c - the LMDB index: namespace, listing order, xattrs, chunk
 * records, orphans, inode deletion and reopening; the journal (commits
 * survive a killed process, a torn record ends the replay, checkpoints),
 * failed transactions, damaged records and damaged files, readers and
 * writers in threads.
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
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cmocka.h>
#include <lmdb.h>

#include "meta/meta.h"
#include "src/base/csum.h"

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
	assert_int_equal(objfs_meta_open(f->dir, 1, &f->m, NULL), 0);
	assert_int_equal(objfs_meta_begin(f->m, 1, &f->t), 0);
	*state = f;
	return 0;
}

static void
rm_index(const char *dir)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/journal", dir);
	unlink(path);
	rmdir(dir);
}

static int
teardown(void **state)
{
	struct fx *f = *state;
	char path[128];

	objfs_meta_abort(f->t);
	if (f->m)
		assert_int_equal(objfs_meta_close(f->m), 0);
	(void)path;
	rm_index(f->dir);
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
count_chunk(void *arg, uint64_t idx, const struct objfs_chunk_rec *r)
{
	uint64_t *v = arg;

	assert_non_null(r);
	assert_int_equal(r->csum, idx * 1000);
	assert_int_equal(r->len, (uint32_t)idx + 1);
	assert_int_equal(r->slot, idx + 100);
	v[0]++;
	v[1] += idx;
	return 0;
}

static void
put_chunk(struct objfs_meta_txn *t, uint64_t ino, uint64_t i)
{
	struct objfs_chunk_rec r = { i * 1000, i + 100, (uint32_t)i + 1, 0,
		NULL, 0, 0, { 0, 0 }, 0 };

	assert_int_equal(objfs_meta_chunk_put(t, ino, i, &r), 0);
}

static int
sums_listed(void *arg, uint64_t idx, const struct objfs_chunk_rec *r)
{
	const unsigned char *want = arg;

	assert_non_null(r);
	if (idx == 0) {			/* a record without sums */
		assert_int_equal(r->shift, 0);
		assert_null(r->tab);
	} else {
		assert_int_equal(r->shift, 12);
		assert_int_equal(r->len, 3 * 4096 + 1);
		assert_memory_equal(r->tab, want, 16);
	}
	return 0;
}

/* Records with a table of sub-block sums (schema 3) come back whole,
 * beside records without one; a table too long for the record is
 * refused. */
static void
test_chunk_record_sums(void **state)
{
	struct fx *f = *state;
	unsigned char tab[16], got[4 * OBJFS_SUMS_MAX];
	struct objfs_chunk_rec r = { 77, 5, 3 * 4096 + 1, 12, tab, 0, 0,
		{ 0, 0 }, 0 }, g;

	for (int i = 0; i < 16; i++)
		tab[i] = (unsigned char)(0xa0 + i);
	put_chunk(f->t, 9, 0);
	assert_int_equal(objfs_meta_chunk_put(f->t, 9, 1, &r), 0);
	assert_int_equal(objfs_meta_chunk_get(f->t, 9, 1, &g, got), 0);
	assert_int_equal(g.csum, 77);
	assert_int_equal(g.slot, 5);
	assert_int_equal(g.len, 3 * 4096 + 1);
	assert_int_equal(g.shift, 12);
	assert_ptr_equal(g.tab, got);
	assert_memory_equal(got, tab, 16);
	assert_int_equal(objfs_meta_chunk_get(f->t, 9, 0, &g, got), 0);
	assert_int_equal(g.shift, 0);
	assert_int_equal(objfs_meta_chunk_get(f->t, 9, 2, &g, got), -ENOENT);
	assert_int_equal(objfs_meta_chunk_list(f->t, 9, sums_listed, tab), 0);
	/* A second slot and the map of the sub-blocks in it. */
	r.has_alt = 1;
	r.alt = 42;
	r.map[0] = 0x5;
	r.map[1] = 0;
	assert_int_equal(objfs_meta_chunk_put(f->t, 9, 4, &r), 0);
	assert_int_equal(objfs_meta_chunk_get(f->t, 9, 4, &g, got), 0);
	assert_int_equal(g.has_alt, 1);
	assert_int_equal(g.alt, 42);
	assert_int_equal(g.map[0], 0x5);
	assert_int_equal(g.map[1], 0);
	assert_memory_equal(got, tab, 16);
	assert_int_equal(objfs_meta_chunk_get(f->t, 9, 1, &g, got), 0);
	assert_int_equal(g.has_alt, 0);
	/* ... which only a record with sub-blocks can have. */
	r.shift = 0;
	assert_int_equal(objfs_meta_chunk_put(f->t, 9, 5, &r), -EINVAL);
	r.shift = 12;
	r.has_alt = 0;
	r.len = (OBJFS_SUMS_MAX + 1) * 4096;	/* 129 sums */
	assert_int_equal(objfs_meta_chunk_put(f->t, 9, 3, &r), -EINVAL);
}

static int
share_listed(void *arg, uint64_t slot, uint64_t n)
{
	uint64_t *v = arg;

	v[0]++;
	v[1] += slot * 100 + n;
	return 0;
}

static int
share_all(void *arg, uint64_t home, uint64_t slot, uint64_t n)
{
	uint64_t *v = arg;

	v[0]++;
	v[1] += home * 10000 + slot * 100 + n;
	return 0;
}

/* A shared record names its home and comes back with it, beside the
 * sums; it has no second slot, and neither it nor a record without
 * sums can be written with one.  The share DB counts per (home, slot),
 * one object's entries apart from another's, and a count of 0 is no
 * entry. */
static void
test_shared_records(void **state)
{
	struct fx *f = *state;
	unsigned char tab[16], got[4 * OBJFS_SUMS_MAX];
	struct objfs_chunk_rec r = { 77, 5, 3 * 4096 + 1, 12, tab, 0, 0,
		{ 0, 0 }, 31 }, g;
	uint64_t n, v[2] = { 0, 0 };

	memset(tab, 0x5a, sizeof(tab));
	assert_int_equal(objfs_meta_chunk_put(f->t, 40, 2, &r), 0);
	assert_int_equal(objfs_meta_chunk_get(f->t, 40, 2, &g, got), 0);
	assert_int_equal(g.home, 31);
	assert_int_equal(g.slot, 5);
	assert_int_equal(g.has_alt, 0);
	assert_memory_equal(got, tab, 16);
	r.has_alt = 1;
	assert_int_equal(objfs_meta_chunk_put(f->t, 40, 3, &r), -EINVAL);
	r.has_alt = 0;
	r.shift = 0;
	assert_int_equal(objfs_meta_chunk_put(f->t, 40, 3, &r), -EINVAL);
	r.home = 0;
	r.shift = 12;
	assert_int_equal(objfs_meta_chunk_put(f->t, 40, 2, &r), 0);
	assert_int_equal(objfs_meta_chunk_get(f->t, 40, 2, &g, got), 0);
	assert_int_equal(g.home, 0);

	assert_int_equal(objfs_meta_share_get(f->t, 31, 5, &n), -ENOENT);
	assert_int_equal(objfs_meta_share_put(f->t, 31, 5, 2), 0);
	assert_int_equal(objfs_meta_share_put(f->t, 31, 7, 3), 0);
	assert_int_equal(objfs_meta_share_put(f->t, 32, 0, 4), 0);
	assert_int_equal(objfs_meta_share_get(f->t, 31, 5, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(objfs_meta_share_list(f->t, 31, share_listed, v), 0);
	assert_int_equal(v[0], 2);
	assert_int_equal(v[1], 502 + 703);
	v[0] = v[1] = 0;
	assert_int_equal(objfs_meta_share_all(f->t, share_all, v), 0);
	assert_int_equal(v[0], 3);
	assert_int_equal(v[1], 310502 + 310703 + 320004);
	assert_int_equal(objfs_meta_share_put(f->t, 31, 5, 0), 0);
	assert_int_equal(objfs_meta_share_get(f->t, 31, 5, &n), -ENOENT);
	assert_int_equal(objfs_meta_share_put(f->t, 31, 5, 0), 0);
	v[0] = v[1] = 0;
	assert_int_equal(objfs_meta_share_list(f->t, 31, share_listed, v), 0);
	assert_int_equal(v[0], 1);
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
		put_chunk(f->t, 9, i);
	put_chunk(f->t, 10, 0);
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
	assert_int_equal(objfs_meta_deleted_add(f->t, 50), 0);
	assert_int_equal(objfs_meta_commit(f->t), 0);
	f->t = NULL;
	assert_int_equal(objfs_meta_sync(f->m), 0);
	assert_int_equal(objfs_meta_close(f->m), 0);

	assert_int_equal(objfs_meta_open(f->dir, 0, &f->m, NULL), 0);
	assert_int_equal(objfs_meta_begin(f->m, 0, &f->t), 0);
	assert_int_equal(objfs_meta_deleted_get(f->t, 50), 0);
	assert_int_equal(objfs_meta_deleted_get(f->t, 51), -ENOENT);
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

/* ---- the journal: what a killed process committed is kept -------- */

static void
commit_names(struct objfs_meta *m, int from, int to)
{
	struct objfs_meta_txn *t;
	char name[32];

	for (int i = from; i < to; i++) {
		if (objfs_meta_begin(m, OBJFS_META_WRITE, &t) != 0)
			_exit(3);
		snprintf(name, sizeof(name), "n%d", i);
		if (objfs_meta_dirent_add(t, 1, name, strlen(name),
				(uint64_t)i + 100, S_IFREG, (uint64_t)i + 10) ||
		    objfs_meta_commit(t) != 0)
			_exit(4);
	}
}

/* In a child: open, commit @n names, and die without closing, as a
 * killed daemon does (its page cache stays). */
static void
child_commits_and_dies(const char *dir, int from, int to, int tick)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct objfs_meta *m;

		if (objfs_meta_open(dir, 1, &m, NULL) != 0)
			_exit(2);
		commit_names(m, from, to);
		if (tick && objfs_meta_tick(m, 0) != 0)
			_exit(5);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static int
count_names(struct objfs_meta *m, int from, int to)
{
	struct objfs_meta_txn *t;
	struct objfs_dirent d;
	char name[32];
	int n = 0;

	assert_int_equal(objfs_meta_begin(m, 0, &t), 0);
	for (int i = from; i < to; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		if (objfs_meta_dirent_get(t, 1, name, strlen(name), &d) == 0) {
			assert_int_equal(d.ino, (uint64_t)i + 100);
			n++;
		}
	}
	objfs_meta_abort(t);
	return n;
}

static void
copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out;
	ssize_t n;

	assert_true(in >= 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

static void
test_journal_after_kill(void **state)
{
	struct fx *f = *state;
	char other[64], from[128], to[128];

	objfs_meta_abort(f->t);
	f->t = NULL;
	assert_int_equal(objfs_meta_close(f->m), 0);
	f->m = NULL;
	child_commits_and_dies(f->dir, 0, 500, 0);
	/* The data file alone does not have them: no commit of LMDB per
	 * operation; the journal does. */
	strcpy(other, "/tmp/objfs-meta-XXXXXX");
	assert_non_null(mkdtemp(other));
	snprintf(from, sizeof(from), "%s/data.mdb", f->dir);
	snprintf(to, sizeof(to), "%s/data.mdb", other);
	copy_file(from, to);
	assert_int_equal(objfs_meta_open(other, 0, &f->m, NULL), 0);
	assert_int_equal(count_names(f->m, 0, 500), 0);
	assert_int_equal(objfs_meta_close(f->m), 0);
	rm_index(other);
	/* With its journal, all 500 are back, and are then checkpointed. */
	assert_int_equal(objfs_meta_open(f->dir, 0, &f->m, NULL), 0);
	assert_int_equal(count_names(f->m, 0, 500), 500);
	assert_int_equal(objfs_meta_close(f->m), 0);
	/* A second kill after a checkpoint, with more names. */
	child_commits_and_dies(f->dir, 500, 700, 1);
	assert_int_equal(objfs_meta_open(f->dir, 0, &f->m, NULL), 0);
	assert_int_equal(count_names(f->m, 0, 700), 700);
}

/* Flip byte @at (from the end when negative) of @path. */
static void
flip_byte(const char *path, long at)
{
	unsigned char b;
	struct stat st;
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	if (at < 0)
		at += st.st_size;
	assert_int_equal(pread(fd, &b, 1, at), 1);
	b ^= 0x5a;
	assert_int_equal(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

/* Offset of the last byte of the last journal record with number @seq:
 * records follow each other from offset 0, 24-byte headers. */
static long
journal_record_end(const char *dir, uint64_t want)
{
	char path[128];
	unsigned char h[24];
	long off = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/journal", dir);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	for (;;) {
		uint32_t len;
		uint64_t seq;

		assert_int_equal(pread(fd, h, 24, off), 24);
		memcpy(&len, h + 4, 4);
		memcpy(&seq, h + 8, 8);
		off += 24 + len;
		if (seq == want)
			break;
	}
	close(fd);
	return off - 1;
}

static void
test_torn_journal(void **state)
{
	struct fx *f = *state;
	char path[128];

	objfs_meta_abort(f->t);
	f->t = NULL;
	assert_int_equal(objfs_meta_close(f->m), 0);
	f->m = NULL;
	child_commits_and_dies(f->dir, 0, 10, 0);
	/* The names are records 1 to 10.  Tear the last one (a machine
	 * crash while it was being written). */
	snprintf(path, sizeof(path), "%s/journal", f->dir);
	flip_byte(path, journal_record_end(f->dir, 10));
	assert_int_equal(objfs_meta_open(f->dir, 0, &f->m, NULL), 0);
	assert_int_equal(count_names(f->m, 0, 9), 9);
	assert_int_equal(count_names(f->m, 9, 10), 0);
}

static void
test_failed_write_changes_nothing(void **state)
{
	struct fx *f = *state;
	struct objfs_meta_txn *t2;
	struct objfs_dirent d;
	uint64_t seq, seq2;

	assert_int_equal(objfs_meta_dirent_add(f->t, 1, "kept", 4, 5, S_IFREG,
				3), 0);
	assert_int_equal(objfs_meta_commit_seq(f->t, &seq), 0);
	assert_int_equal(objfs_meta_begin(f->m, OBJFS_META_WRITE, &f->t), 0);
	assert_int_equal(objfs_meta_dirent_add(f->t, 1, "lost", 4, 6, S_IFREG,
				4), 0);
	/* No write inside a write. */
	assert_int_equal(objfs_meta_begin(f->m, OBJFS_META_WRITE, &t2),
			-EDEADLK);
	/* A read inside sees the write's own changes. */
	assert_int_equal(objfs_meta_begin(f->m, 0, &t2), 0);
	assert_int_equal(objfs_meta_dirent_get(t2, 1, "lost", 4, &d), 0);
	objfs_meta_abort(t2);
	objfs_meta_abort(f->t);
	assert_int_equal(objfs_meta_begin(f->m, 0, &f->t), 0);
	assert_int_equal(objfs_meta_dirent_get(f->t, 1, "lost", 4, &d), -ENOENT);
	assert_int_equal(objfs_meta_dirent_get(f->t, 1, "kept", 4, &d), 0);
	/* A read commits to the number of the last write. */
	assert_int_equal(objfs_meta_commit_seq(f->t, &seq2), 0);
	assert_int_equal(seq2, seq);
	assert_true(objfs_meta_durable_seq(f->m) < seq);
	assert_int_equal(objfs_meta_sync(f->m), 0);
	assert_true(objfs_meta_durable_seq(f->m) >= seq);
	/* A write inside a read is fine. */
	assert_int_equal(objfs_meta_begin(f->m, 0, &f->t), 0);
	assert_int_equal(objfs_meta_begin(f->m, OBJFS_META_WRITE, &t2), 0);
	assert_int_equal(objfs_meta_dirent_add(t2, 1, "inner", 5, 7, S_IFREG,
				5), 0);
	assert_int_equal(objfs_meta_commit(t2), 0);
	assert_int_equal(objfs_meta_dirent_get(f->t, 1, "inner", 5, &d), 0);
	/* Checkpointed: durable too. */
	objfs_meta_abort(f->t);
	f->t = NULL;
	assert_int_equal(objfs_meta_tick(f->m, 0), 0);
	assert_true(objfs_meta_durable_seq(f->m) > seq);
}

/* The offset of @pat in @path (a value to damage). */
static long
find_bytes(const char *path, const char *pat)
{
	size_t plen = strlen(pat);
	struct stat st;
	char *buf;
	long at = -1;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	for (long i = 0; i + (long)plen <= st.st_size; i++)
		if (memcmp(buf + i, pat, plen) == 0) {
			at = i;
			break;
		}
	free(buf);
	close(fd);
	return at;
}

static void
test_damaged_record(void **state)
{
	struct fx *f = *state;
	struct objfs_meta_report r;
	char path[128], buf[64];
	size_t len;
	long at;

	assert_int_equal(objfs_meta_xattr_set(f->t, 3, "user.v",
				"DAMAGE-ME-PLEASE", 16, 0), 0);
	assert_int_equal(objfs_meta_xattr_set(f->t, 3, "user.w", "fine", 4, 0),
			0);
	assert_int_equal(objfs_meta_commit(f->t), 0);
	f->t = NULL;
	assert_int_equal(objfs_meta_close(f->m), 0);
	f->m = NULL;
	snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
	at = find_bytes(path, "DAMAGE-ME-PLEASE");
	assert_true(at > 0);
	flip_byte(path, at + 3);
	assert_int_equal(objfs_meta_verify(f->dir, &r), 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.damaged, 1);
	assert_true(r.records > 3);
	assert_int_equal(objfs_meta_open(f->dir, 0, &f->m, NULL), 0);
	assert_int_equal(objfs_meta_begin(f->m, 0, &f->t), 0);
	assert_int_equal(objfs_meta_xattr_get(f->t, 3, "user.v", buf,
				sizeof(buf), &len), -EIO);
	assert_int_equal(objfs_meta_xattr_get(f->t, 3, "user.w", buf,
				sizeof(buf), &len), 0);
	assert_int_equal(objfs_meta_xattr_list(f->t, 3, buf, sizeof(buf), &len),
			-EIO);
}

/* Random bytes (from @seed) over pages 2 to 5 of @dir's data file:
 * branch and leaf pages. */
static void
junk_pages(const char *dir, unsigned seed)
{
	unsigned char junk[4096];
	char path[256];
	int fd;

	srand(seed);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)rand();
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	for (int pg = 2; pg <= 5; pg++)
		assert_int_equal(pwrite(fd, junk, sizeof(junk), pg * 4096L),
				(ssize_t)sizeof(junk));
	close(fd);
}

static void
test_damaged_file(void **state)
{
	struct fx *f = *state;
	struct objfs_meta_report r;
	struct objfs_meta *m;
	char name[32];

	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "file-%05d", i);
		assert_int_equal(objfs_meta_dirent_add(f->t, 1, name,
					strlen(name), (uint64_t)i + 2, S_IFREG,
					(uint64_t)i + 3), 0);
	}
	assert_int_equal(objfs_meta_commit(f->t), 0);
	f->t = NULL;
	assert_int_equal(objfs_meta_close(f->m), 0);
	f->m = NULL;
	junk_pages(f->dir, 7);
	assert_int_equal(objfs_meta_verify(f->dir, &r), 0);
	assert_int_equal(r.status, -EUCLEAN);
	assert_true(r.what[0] != '\0');
	assert_int_equal(objfs_meta_open(f->dir, 0, &m, NULL), -EUCLEAN);
}

/* The first of the pages at the end of @dir's data file that LMDB keeps
 * on its free list only, or 0 if the last page is in use. */
static uint64_t
free_tail(const char *dir, uint64_t *last)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_envinfo info;
	MDB_val k, v;
	uint64_t first;
	unsigned char *is_free;

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 16), 0);
	assert_int_equal(mdb_env_open(env, dir, MDB_NOLOCK | MDB_RDONLY, 0600),
			0);
	assert_int_equal(mdb_env_info(env, &info), 0);
	*last = info.me_last_pgno;
	is_free = calloc(*last + 1, 1);
	assert_non_null(is_free);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	assert_int_equal(mdb_cursor_open(txn, 0, &cur), 0);	/* FREE_DBI */
	while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0) {
		const size_t *ids = v.mv_data;	/* count, then page numbers */

		for (size_t i = 1; i <= ids[0]; i++)
			if (ids[i] <= *last)
				is_free[ids[i]] = 1;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	for (first = *last + 1; first > 2 && is_free[first - 1]; first--)
		;
	free(is_free);
	return first <= *last ? first : 0;
}

/* LMDB does not write a page that a transaction took and gave back
 * ("loose"), so the file can end before its last page when that page is
 * free: a clean index, which must open.  Cut at a page in use, it must
 * not.  (The first refused to mount after a clean unmount.) */
static void
test_free_pages_past_the_end(void **state)
{
	struct fx *f = *state;
	struct objfs_meta_report r;
	char name[32], path[256];
	uint64_t first = 0, last = 0;

	objfs_meta_abort(f->t);
	f->t = NULL;
	for (int round = 0; round < 20 && !first; round++) {
		assert_int_equal(objfs_meta_begin(f->m, OBJFS_META_WRITE,
					&f->t), 0);
		for (int i = 0; i < 4000; i++) {
			snprintf(name, sizeof(name), "file-%d-%05d", round, i);
			assert_int_equal(objfs_meta_dirent_add(f->t, 1, name,
					strlen(name), (uint64_t)i + 2, S_IFREG,
					(uint64_t)i + 3), 0);
		}
		assert_int_equal(objfs_meta_commit(f->t), 0);
		assert_int_equal(objfs_meta_begin(f->m, OBJFS_META_WRITE,
					&f->t), 0);
		for (int i = 0; i < 4000; i++) {
			snprintf(name, sizeof(name), "file-%d-%05d", round, i);
			assert_int_equal(objfs_meta_dirent_del(f->t, 1, name,
					strlen(name)), 0);
		}
		assert_int_equal(objfs_meta_commit(f->t), 0);
		f->t = NULL;
		assert_int_equal(objfs_meta_close(f->m), 0);
		f->m = NULL;
		first = free_tail(f->dir, &last);
		if (!first)
			assert_int_equal(objfs_meta_open(f->dir, 0, &f->m,
						NULL), 0);
	}
	assert_true(first > 2);
	snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
	assert_int_equal(truncate(path, (off_t)first * 4096), 0);
	assert_int_equal(objfs_meta_verify(f->dir, &r), 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(objfs_meta_open(f->dir, 0, &f->m, NULL), 0);
	assert_int_equal(objfs_meta_close(f->m), 0);
	f->m = NULL;
	/* cut into the pages in use: refused */
	assert_int_equal(truncate(path, 3 * 4096), 0);
	assert_int_equal(objfs_meta_verify(f->dir, &r), 0);
	assert_int_equal(r.status, -EUCLEAN);
	assert_int_equal(objfs_meta_open(f->dir, 0, &f->m, NULL), -EUCLEAN);
	f->m = NULL;
}

/* Add (or delete) names @pfx-0 .. @pfx-(n-1) under directory 1, name i
 * for inode @base + i. */
static void
add_names(struct objfs_meta_txn *t, const char *pfx, uint64_t base, int n,
		int del)
{
	char name[32];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s-%05d", pfx, i);
		if (del)
			assert_int_equal(objfs_meta_dirent_del(t, 1, name,
						strlen(name)), 0);
		else
			assert_int_equal(objfs_meta_dirent_add(t, 1, name,
						strlen(name), base + (uint64_t)i,
						S_IFREG, base + (uint64_t)i), 0);
	}
}

/* How many of @pfx-0 .. @pfx-(n-1) are in @dir's index, each with its
 * own inode number. */
static int
rebuilt_names(const char *dir, const char *pfx, uint64_t base, int n)
{
	struct objfs_meta_txn *t;
	struct objfs_dirent d;
	struct objfs_meta *m;
	char name[32];
	int found = 0;

	assert_int_equal(objfs_meta_open(dir, OBJFS_META_RDONLY, &m, NULL), 0);
	assert_int_equal(objfs_meta_begin(m, 0, &t), 0);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s-%05d", pfx, i);
		if (objfs_meta_dirent_get(t, 1, name, strlen(name), &d) == 0) {
			assert_int_equal(d.ino, base + (uint64_t)i);
			found++;
		}
	}
	objfs_meta_abort(t);
	assert_int_equal(objfs_meta_close(m), 0);
	return found;
}

/* A rebuild from whole trees takes only their records: a deleted name
 * stays deleted.  From cut trees it takes what else verifies, and never a
 * record with a wrong value. */
static void
test_rebuild(void **state)
{
	struct fx *f = *state;
	struct objfs_meta_salvage_report r;
	char to[128];

	add_names(f->t, "keep", 10, 2000, 0);
	add_names(f->t, "gone", 10000, 2000, 0);
	assert_int_equal(objfs_meta_commit(f->t), 0);
	f->t = NULL;
	assert_int_equal(objfs_meta_close(f->m), 0);
	assert_int_equal(objfs_meta_open(f->dir, 0, &f->m, NULL), 0);
	assert_int_equal(objfs_meta_begin(f->m, 1, &f->t), 0);
	add_names(f->t, "gone", 10000, 2000, 1);
	assert_int_equal(objfs_meta_commit(f->t), 0);
	f->t = NULL;
	assert_int_equal(objfs_meta_close(f->m), 0);
	f->m = NULL;

	snprintf(to, sizeof(to), "%s/rebuilt", f->dir);
	assert_int_equal(mkdir(to, 0700), 0);
	assert_int_equal(objfs_meta_rebuild(f->dir, to, &r), 0);
	assert_int_equal(rebuilt_names(to, "keep", 10, 2000), 2000);
	assert_int_equal(rebuilt_names(to, "gone", 10000, 2000), 0);
	assert_int_equal(r.whole, 1);
	assert_int_equal(r.stray + r.freed, 0);
	assert_true(r.live >= 2000);
	rm_index(to);

	junk_pages(f->dir, 11);	/* cut the trees */
	assert_int_equal(mkdir(to, 0700), 0);
	assert_int_equal(objfs_meta_rebuild(f->dir, to, &r), 0);
	assert_int_equal(r.whole, 0);
	assert_true(r.stray + r.freed > 0);
	/* count_names checks each inode number found. */
	assert_true(rebuilt_names(to, "keep", 10, 2000) > 1000);
	(void)rebuilt_names(to, "gone", 10000, 2000);
	rm_index(to);
}

/* ---- shipping (ship.c): the outbox, dump and import ------------------- */

struct dump_buf {
	unsigned char *p;
	size_t len, pieces;
};

static int
dump_cb(void *arg, const void *p, size_t len)
{
	struct dump_buf *d = arg;

	d->p = realloc(d->p, d->len + len);
	assert_non_null(d->p);
	memcpy(d->p + d->len, p, len);
	d->len += len;
	d->pieces++;
	return 0;
}

/* Every outbox entry above @after, in order: their count, the last one's
 * number in *@last. */
static int
outbox_count(struct objfs_meta *m, uint64_t after, uint64_t *last)
{
	uint64_t seq = after, prev = after;
	size_t len;
	void *buf;

	if (after == 0 && objfs_meta_outbox_next(m, 0, &seq, &buf, &len) == 0) {
		free(buf);
		prev = seq - 1;		/* from the first there is */
		seq = prev;
	}
	int n = 0;

	while (objfs_meta_outbox_next(m, seq, &seq, &buf, &len) == 0) {
		assert_int_equal(seq, prev + 1);	/* no gap */
		assert_true(len > 0);
		prev = seq;
		free(buf);
		n++;
	}
	*last = prev;
	return n;
}

static void
test_outbox_and_dump(void **state)
{
	struct fx *f = *state;
	struct dump_buf d = { 0 };
	uint64_t last, seq, first, entries = 0;
	struct objfs_meta *other;
	char dir2[64];
	pid_t pid;
	int st;

	objfs_meta_abort(f->t);
	f->t = NULL;
	assert_int_equal(objfs_meta_close(f->m), 0);
	/* Commits made with the outbox on, by a process killed before any
	 * checkpoint: the journal's replay brings their entries back. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct objfs_meta *m;

		if (objfs_meta_open(f->dir, OBJFS_META_OUTBOX, &m, NULL) != 0)
			_exit(2);
		commit_names(m, 0, 300);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(objfs_meta_open(f->dir, OBJFS_META_OUTBOX, &f->m,
			NULL), 0);
	first = objfs_meta_last_seq(f->m) - 299;
	assert_int_equal(outbox_count(f->m, 0, &last), 300);
	assert_int_equal(last, objfs_meta_last_seq(f->m));
	/* Taken out up to 200: the rest stays, across a close. */
	assert_int_equal(objfs_meta_outbox_done(f->m, first + 199), 0);
	assert_int_equal(objfs_meta_outbox_next(f->m, 0, &seq, (void **)&d.p, &d.len),
			0);
	assert_int_equal(seq, first + 200);
	free(d.p);
	d.p = NULL;
	d.len = 0;
	assert_int_equal(objfs_meta_close(f->m), 0);
	assert_int_equal(objfs_meta_open(f->dir, OBJFS_META_OUTBOX, &f->m,
			NULL), 0);
	assert_int_equal(outbox_count(f->m, first + 199, &last), 100);
	/* Replaying the outbox's payloads on a dump taken before them gives
	 * the same names as a dump taken after. */
	strcpy(dir2, "/tmp/objfs-meta-XXXXXX");
	assert_non_null(mkdtemp(dir2));
	assert_int_equal(objfs_meta_dump(f->m, 4096, dump_cb, &d, &seq), 0);
	assert_true(d.pieces > 1);		/* in pieces of about 4 KiB */
	assert_int_equal(seq, objfs_meta_last_seq(f->m));
	assert_int_equal(objfs_meta_open(dir2, OBJFS_META_CREATE, &other,
			NULL), 0);
	assert_int_equal(objfs_meta_import(other, d.p, d.len, &entries), 0);
	assert_true(entries >= 300);
	assert_int_equal(objfs_meta_checkpoint_now(other), 0);
	assert_int_equal(objfs_meta_close(other), 0);
	assert_int_equal(objfs_meta_open(dir2, 0, &other, NULL), 0);
	assert_int_equal(count_names(other, 0, 300), 300);
	/* The outbox is not in a dump. */
	assert_int_equal(objfs_meta_close(other), 0);
	assert_int_equal(objfs_meta_open(dir2, OBJFS_META_OUTBOX, &other,
			NULL), 0);
	assert_int_equal(outbox_count(other, 0, &last), 0);
	/* A damaged record is refused, and leaves the index unusable. */
	d.p[d.len - 1] ^= 0x5a;
	assert_int_equal(objfs_meta_import(other, d.p, d.len, NULL), -EIO);
	assert_int_equal(objfs_meta_checkpoint_now(other), -EIO);
	objfs_meta_close(other);
	rm_index(dir2);
	free(d.p);
}

/* ---- shared mode: the commit hook, apply, a file's entries ----------- */

struct hook_rec {
	unsigned char *p;		/* the last payload the hook saw */
	size_t len;
	unsigned calls;
	int refuse;			/* the hook's answer */
	uint64_t pos;			/* the position it names */
};

static int
hook_cb(void *arg, struct objfs_meta_txn *t, const void *pl, size_t n,
		uint64_t *pos)
{
	struct hook_rec *h = arg;

	(void)t;
	h->calls++;
	free(h->p);
	h->p = malloc(n ? n : 1);
	assert_non_null(h->p);
	memcpy(h->p, pl, n);
	h->len = n;
	if (h->refuse)
		return h->refuse;
	*pos = h->pos;
	return 0;
}

static int
lease_seen(void *arg, const char *key, uint64_t val)
{
	unsigned *n = arg;

	assert_int_equal(key[0], 'w');
	assert_int_equal(val, 7);
	(*n)++;
	return 0;
}

static int
count_recs(void *arg, uint64_t idx, const struct objfs_chunk_rec *r)
{
	uint64_t *n = arg;

	assert_non_null(r);
	assert_int_equal(r->slot, idx + 100);	/* put_chunk's */
	(*n)++;
	return 0;
}

static void
test_shared_hook(void **state)
{
	struct fx *f = *state;
	struct hook_rec h = { 0 };
	struct objfs_attr a = { .ino = 9, .mode = S_IFREG | 0644, .nlink = 1,
		.size = 3 << 20 };
	struct objfs_meta *b;
	struct objfs_meta_txn *t;
	uint64_t v = 0, n = 0, before;
	unsigned leases = 0;
	char dir2[64], buf[16];
	void *ents;
	size_t len, got;

	objfs_meta_abort(f->t);
	f->t = NULL;
	objfs_meta_set_hook(f->m, hook_cb, &h);
	/* A refused commit leaves nothing. */
	h.refuse = -ERESTART;
	before = objfs_meta_last_seq(f->m);
	assert_int_equal(objfs_meta_begin(f->m, 1, &t), 0);
	assert_int_equal(objfs_meta_inode_put(t, &a), 0);
	assert_int_equal(objfs_meta_commit(t), -ERESTART);
	assert_int_equal(objfs_meta_last_seq(f->m), before);
	assert_int_equal(objfs_meta_begin(f->m, 0, &t), 0);
	assert_int_equal(objfs_meta_inode_get(t, 9, &a), -ENOENT);
	objfs_meta_abort(t);
	/* An accepted one: the hook saw its entries, and the position it
	 * named is recorded with it. */
	h.refuse = 0;
	h.pos = 41;
	assert_int_equal(objfs_meta_begin(f->m, 1, &t), 0);
	assert_int_equal(objfs_meta_inode_put(t, &a), 0);
	for (uint64_t i = 0; i < 3; i++)
		put_chunk(t, 9, i);
	assert_int_equal(objfs_meta_xattr_set(t, 9, "user.k", "v", 1, 0), 0);
	assert_int_equal(objfs_meta_super_put(t, "w0000000000000009", 7), 0);
	assert_int_equal(objfs_meta_super_put(t, "w000000000000000a", 7), 0);
	assert_int_equal(objfs_meta_commit(t), 0);
	assert_true(h.len > 0);
	assert_int_equal(objfs_meta_begin(f->m, 0, &t), 0);
	assert_int_equal(objfs_meta_super_get(t, "remote_pos", &v), 0);
	assert_int_equal(v, 41);
	assert_int_equal(objfs_meta_super_list(t, "w", lease_seen, &leases), 0);
	assert_int_equal(leases, 2);
	objfs_meta_abort(t);
	/* A commit that changes nothing still reaches the hook, and records
	 * its position (another mount's commit of its own keys only). */
	h.pos = 42;
	assert_int_equal(objfs_meta_begin(f->m, 1, &t), 0);
	assert_int_equal(objfs_meta_commit(t), 0);
	assert_int_equal(h.len, 0);
	assert_int_equal(objfs_meta_begin(f->m, 0, &t), 0);
	assert_int_equal(objfs_meta_super_get(t, "remote_pos", &v), 0);
	assert_int_equal(v, 42);
	objfs_meta_abort(t);
	objfs_meta_set_hook(f->m, NULL, NULL);

	/* The payload applied to another index makes the same records, and
	 * a file's entries applied there replace what it had of the file. */
	strcpy(dir2, "/tmp/objfs-meta-XXXXXX");
	assert_non_null(mkdtemp(dir2));
	assert_int_equal(objfs_meta_open(dir2, OBJFS_META_CREATE, &b, NULL), 0);
	assert_int_equal(objfs_meta_begin(b, 1, &t), 0);
	for (uint64_t i = 0; i < 6; i++)	/* stale: three too many */
		put_chunk(t, 9, i);
	assert_int_equal(objfs_meta_xattr_set(t, 9, "user.old", "x", 1, 0), 0);
	assert_int_equal(objfs_meta_commit(t), 0);
	assert_int_equal(objfs_meta_begin(f->m, 0, &t), 0);
	assert_int_equal(objfs_meta_inode_entries(t, 9, &ents, &len), 0);
	objfs_meta_abort(t);
	assert_int_equal(objfs_meta_begin(b, 1, &t), 0);
	assert_int_equal(objfs_meta_apply(t, ents, len), 0);
	assert_int_equal(objfs_meta_commit(t), 0);
	assert_int_equal(objfs_meta_begin(b, 0, &t), 0);
	assert_int_equal(objfs_meta_inode_get(t, 9, &a), 0);
	assert_int_equal(a.size, 3 << 20);
	assert_int_equal(objfs_meta_chunk_list(t, 9, count_recs, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(objfs_meta_xattr_get(t, 9, "user.k", buf, sizeof(buf),
			&got), 0);
	assert_int_equal(objfs_meta_xattr_get(t, 9, "user.old", buf,
			sizeof(buf), &got), -ENODATA);
	/* The position is this data directory's own: never applied. */
	assert_int_equal(objfs_meta_super_get(t, "remote_pos", &v), -ENOENT);
	objfs_meta_abort(t);
	/* A damaged entry: -EIO, and the transaction is aborted whole. */
	((unsigned char *)ents)[len - 1] ^= 0x5a;
	assert_int_equal(objfs_meta_begin(b, 1, &t), 0);
	assert_int_equal(objfs_meta_apply(t, ents, len), -EIO);
	objfs_meta_abort(t);
	assert_int_equal(objfs_meta_begin(b, 0, &t), 0);
	n = 0;
	assert_int_equal(objfs_meta_chunk_list(t, 9, count_recs, &n), 0);
	assert_int_equal(n, 3);
	objfs_meta_abort(t);
	free(ents);
	free(h.p);
	assert_int_equal(objfs_meta_close(b), 0);
	rm_index(dir2);
}

static void
test_open_errors(void **state)
{
	char dir[64], path[128];
	struct objfs_meta *m;
	int fd;

	assert_int_equal(objfs_meta_open("/nonexistent/objfs/index", 0, &m,
				NULL), -ENOENT);
	strcpy(dir, "/tmp/objfs-meta-XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(objfs_meta_open(dir, 0, &m, NULL), -ENOENT);
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	close(fd);
	assert_int_equal(objfs_meta_open(dir, 1, &m, NULL), -ENODATA);
	/* Cut short at creation: page 0 lost, page 1 LMDB's first meta page
	 * (transaction 0): nothing was ever committed. */
	{
		unsigned char pg[3 * 4096] = { 0 };
		uint32_t magic = 0xBEEFC0DEu;

		pg[4096] = 1;			/* pgno */
		pg[4096 + 10] = 0x08;		/* P_META */
		memcpy(pg + 4096 + 16, &magic, 4);
		pg[4096 + 20] = 1;		/* version */
		fd = open(path, O_WRONLY | O_TRUNC);
		assert_int_equal(write(fd, pg, sizeof(pg)), (ssize_t)sizeof(pg));
		close(fd);
		assert_int_equal(objfs_meta_open(dir, 1, &m, NULL), -ENODATA);
		pg[4096 + 144] = 1;		/* transaction 1: committed */
		fd = open(path, O_WRONLY | O_TRUNC);
		assert_int_equal(write(fd, pg, sizeof(pg)), (ssize_t)sizeof(pg));
		close(fd);
		assert_int_not_equal(objfs_meta_open(dir, 1, &m, NULL),
				-ENODATA);
	}
	fd = open(path, O_WRONLY | O_TRUNC);
	for (int i = 0; i < 64; i++)
		assert_int_equal(write(fd, "not an index, just some bytes...",
					32), 32);
	close(fd);
	assert_int_equal(objfs_meta_open(dir, 1, &m, NULL), -EPROTO);
	rm_index(dir);
}

/* ---- readers and writers in threads ------------------------------- */

struct reader {
	struct objfs_meta *m;
	_Atomic int stop;
	_Atomic long reads;
};

static void *
read_loop(void *arg)
{
	struct reader *r = arg;
	struct objfs_meta_txn *t;
	char got[16];
	size_t len;

	while (!r->stop) {
		if (objfs_meta_begin(r->m, 0, &t) != 0)
			abort();
		if (objfs_meta_xattr_get(t, 1, "user.v0", got, sizeof(got),
				&len) != 0 || len != 5 || memcmp(got, "value", 5))
			abort();
		objfs_meta_abort(t);
		r->reads++;
		usleep(100);	/* let the writer in (valgrind runs threads
				 * one at a time) */
	}
	return NULL;
}

static void
test_threads(void **state)
{
	struct fx *f = *state;
	struct reader r = { .m = f->m };
	pthread_t th[2];
	char name[32];

	assert_int_equal(objfs_meta_xattr_set(f->t, 1, "user.v0", "value", 5,
				0), 0);
	assert_int_equal(objfs_meta_commit(f->t), 0);
	f->t = NULL;
	alarm(600);		/* a deadlock fails the test */
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, read_loop, &r), 0);
	for (unsigned i = 1; i < 1500; i++) {
		struct objfs_meta_txn *t;

		assert_int_equal(objfs_meta_begin(f->m, OBJFS_META_WRITE, &t),
				0);
		snprintf(name, sizeof(name), "user.v%u", i);
		assert_int_equal(objfs_meta_xattr_set(t, 1, name, "x", 1, 0), 0);
		assert_int_equal(objfs_meta_commit(t), 0);
		if (i % 500 == 0)
			assert_int_equal(objfs_meta_tick(f->m, 0), 0);
		if (i % 700 == 0)
			assert_int_equal(objfs_meta_sync(f->m), 0);
	}
	r.stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_true(r.reads > 0);
	alarm(0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dirents, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listing_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_xattrs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_records, setup,
				teardown),
		cmocka_unit_test_setup_teardown(test_chunk_record_sums,
				setup, teardown),
		cmocka_unit_test_setup_teardown(test_chunks_and_inode_delete,
				setup, teardown),
		cmocka_unit_test_setup_teardown(test_orphans_and_reopen, setup,
				teardown),
		cmocka_unit_test_setup_teardown(test_journal_after_kill, setup,
				teardown),
		cmocka_unit_test_setup_teardown(test_torn_journal, setup,
				teardown),
		cmocka_unit_test_setup_teardown(test_failed_write_changes_nothing,
				setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_record, setup,
				teardown),
		cmocka_unit_test_setup_teardown(test_rebuild, setup,
				teardown),
		cmocka_unit_test_setup_teardown(test_damaged_file, setup,
				teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_pages_past_the_end,
				setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_hook, setup,
				teardown),
		cmocka_unit_test_setup_teardown(test_outbox_and_dump, setup,
				teardown),
		cmocka_unit_test(test_open_errors),
	};

	return cmocka_run_group_tests_name("meta", tests, NULL, NULL);
}
