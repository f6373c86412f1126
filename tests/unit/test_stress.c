/* SPDX-License-Identifier: MIT */
/*
 * test_stress.c - many threads on one store with a small arena: writes,
 * reads, truncates, renames, unlinks, fsyncs and readdirs, against the
 * spiller, the restore threads and read-ahead of a shared spilled file.
 * Every thread checks every byte it reads against its own copy, and
 * after a remount every file must hold what its thread last wrote, and
 * objfsctl check must find nothing wrong.  Run plain, under ASan/UBSan,
 * under ThreadSanitizer and under valgrind (scripts/test): the point is
 * that they stay silent.
 *
 * OBJFS_STRESS_ITERS sets the operations per thread (default 2000).
 */
#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "src/tools/check.h"
#include "src/store.h"

#define CHUNK		(64u << 10)
#define THREADS		4
#define FILES		3		/* per thread */
#define MAX_LEN		(1u << 20)	/* per file */
#define SHARED_LEN	(4u << 20)	/* read by all, spilled */
#define MAX_WRITE	(192u << 10)

static const struct objfs_cred cr = { 0, 0 };
static const struct objfs_writer wr = { 0 };

struct file {
	char name[32];
	uint64_t ino;		/* 0: does not exist */
	int open;		/* held open by its thread */
	size_t len;
	unsigned char *want;	/* MAX_LEN bytes: what it must hold */
};

struct worker {
	struct objfs_store *s;
	int id;
	unsigned seed;
	int iters;
	struct file f[FILES];
	const unsigned char *shared;
	uint64_t shared_ino;
	char err[256];		/* the first failure, empty if none */
	uint64_t ops[8];
};

#define FAIL(w, ...) do { \
	if (!(w)->err[0]) \
		snprintf((w)->err, sizeof((w)->err), __VA_ARGS__); \
	return -1; \
} while (0)

static void
fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (unsigned char)(seed >> 16);
	}
}

static int
verify(struct worker *w, uint64_t ino, const unsigned char *want,
		size_t len, uint64_t off, size_t n, const char *what)
{
	unsigned char *got = malloc(n + 1);
	size_t r;
	int rc;

	if (!got)
		FAIL(w, "out of memory");
	rc = objfs_store_read(w->s, ino, off, got, n + 1, &r);
	if (rc < 0) {
		free(got);
		FAIL(w, "%s: read: %s", what, strerror(-rc));
	}
	if (r != (off + n >= len ? len - off : n + 1) ||
	    memcmp(got, want + off, n) != 0) {
		free(got);
		FAIL(w, "%s: bytes [%llu, +%zu) differ (read %zu)", what,
			(unsigned long long)off, n, r);
	}
	free(got);
	return 0;
}

static int
op_create(struct worker *w, struct file *f)
{
	struct objfs_attr a;
	int rc = objfs_store_create(w->s, 1, f->name, 0644, O_RDWR, 0, &cr, &a);

	if (rc < 0)
		FAIL(w, "create %s: %s", f->name, strerror(-rc));
	f->ino = a.ino;
	f->open = 1;
	f->len = 0;
	return 0;
}

/* Give up the last name's inode: close, and the kernel's lookup goes. */
static int
op_drop(struct worker *w, struct file *f)
{
	int rc;

	if (f->open && (rc = objfs_store_release(w->s, f->ino, O_RDWR, 0)) < 0)
		FAIL(w, "release %s: %s", f->name, strerror(-rc));
	objfs_store_forget(w->s, f->ino, 1);
	f->ino = 0;
	f->open = 0;
	return 0;
}

static int
op_write(struct worker *w, struct file *f)
{
	size_t off = (size_t)rand_r(&w->seed) % (f->len + 1), n, done;
	size_t len = 1 + (size_t)rand_r(&w->seed) % MAX_WRITE;
	int rc, changed;

	if (off + len > MAX_LEN)
		len = MAX_LEN - off;
	if (!len)
		return 0;
	fill(f->want + off, len, (unsigned)rand_r(&w->seed));
	rc = objfs_store_write(w->s, f->ino, off, f->want + off, len, &wr,
			&changed, &n);
	if (rc < 0 || n != len)
		FAIL(w, "write %s [%zu, +%zu): %s", f->name, off, len,
			rc < 0 ? strerror(-rc) : "short");
	done = off + len;
	if (done > f->len)
		f->len = done;
	return 0;
}

static int
op_truncate(struct worker *w, struct file *f)
{
	struct objfs_setattr sa = { .valid = OBJFS_SET_SIZE };
	struct objfs_attr a;
	int rc;

	sa.size = (uint64_t)rand_r(&w->seed) % (MAX_LEN + 1);
	if (sa.size > f->len)
		memset(f->want + f->len, 0, sa.size - f->len);
	rc = objfs_store_setattr(w->s, f->ino, &sa, &a);
	if (rc < 0 || a.size != sa.size)
		FAIL(w, "truncate %s to %llu: %s", f->name,
			(unsigned long long)sa.size,
			rc < 0 ? strerror(-rc) : "wrong size");
	f->len = sa.size;
	return 0;
}

/* Rename file @a over file @b (both this thread's): @b's old inode goes. */
static int
op_rename(struct worker *w, struct file *a, struct file *b)
{
	struct objfs_attr at;
	unsigned char *t;
	int rc = objfs_store_rename(w->s, 1, a->name, 1, b->name, 0, &cr);

	if (rc < 0)
		FAIL(w, "rename %s over %s: %s", a->name, b->name,
			strerror(-rc));
	if (b->ino && op_drop(w, b) < 0)
		return -1;
	rc = objfs_store_lookup(w->s, 1, b->name, &at);
	if (rc < 0 || at.ino != a->ino)
		FAIL(w, "lookup %s after the rename: %s", b->name,
			rc < 0 ? strerror(-rc) : "another inode");
	objfs_store_forget(w->s, at.ino, 1);
	b->ino = a->ino;
	b->open = a->open;
	b->len = a->len;
	t = b->want;
	b->want = a->want;
	a->want = t;
	a->ino = 0;
	a->open = 0;
	return 0;
}

static int
op_unlink(struct worker *w, struct file *f)
{
	int rc;

	/* Half the time closed first: then the unlink takes the inode's
	 * records at once; else it is an orphan until the release. */
	if (f->open && rand_r(&w->seed) % 2) {
		rc = objfs_store_release(w->s, f->ino, O_RDWR, 0);
		if (rc < 0)
			FAIL(w, "release %s: %s", f->name, strerror(-rc));
		f->open = 0;
	}
	rc = objfs_store_unlink(w->s, 1, f->name);
	if (rc < 0)
		FAIL(w, "unlink %s: %s", f->name, strerror(-rc));
	if (f->open && verify(w, f->ino, f->want, f->len, 0, f->len,
			"an unlinked file still open") < 0)
		return -1;
	return op_drop(w, f);
}

static int
count_name(void *arg, const char *name, const struct objfs_attr *a,
		uint64_t next_off)
{
	(void)name;
	(void)a;
	(void)next_off;
	(*(int *)arg)++;
	return 0;
}

static int
op_shared(struct worker *w)
{
	/* A few chunks in order from a random place: a sequential reader,
	 * so read-ahead queues the chunks after them. */
	uint64_t off = (uint64_t)(rand_r(&w->seed) % (SHARED_LEN / CHUNK - 4)) *
		CHUNK;

	for (int i = 0; i < 4; i++, off += CHUNK)
		if (verify(w, w->shared_ino, w->shared, SHARED_LEN, off, CHUNK,
				"the shared file") < 0)
			return -1;
	return 0;
}

static void *
work(void *arg)
{
	struct worker *w = arg;
	int rc = 0;

	for (int i = 0; i < w->iters && rc == 0; i++) {
		int op = rand_r(&w->seed) % 8, k = rand_r(&w->seed) % FILES;
		struct file *f = &w->f[k];

		if (!f->ino) {
			rc = op_create(w, f);
			continue;
		}
		w->ops[op]++;
		switch (op) {
		case 0:
		case 1:
			rc = op_write(w, f);
			break;
		case 2:
			rc = verify(w, f->ino, f->want, f->len, 0, f->len,
					f->name);
			break;
		case 3:
			rc = op_truncate(w, f);
			break;
		case 4:
			rc = op_rename(w, f, &w->f[(k + 1) % FILES]);
			break;
		case 5:
			rc = op_unlink(w, f);
			break;
		case 6:
			rc = objfs_store_fsync(w->s, f->ino, rand_r(&w->seed) % 2);
			if (rc < 0) {
				snprintf(w->err, sizeof(w->err), "fsync %s: %s",
					f->name, strerror(-rc));
				rc = -1;
			}
			break;
		default: {
			int n = 0;

			rc = op_shared(w);
			if (rc == 0 && (rc = objfs_store_readdir(w->s, 1, 0, 0,
					count_name, &n)) < 0) {
				snprintf(w->err, sizeof(w->err), "readdir: %s",
					strerror(-rc));
				rc = -1;
			}
			break;
		}
		}
	}
	return NULL;
}

static void
open_store(const char *dir, struct objfs_store **s)
{
	struct objfs_store_config cfg = {
		.data_dir = dir, .arena_size = 4u << 20, .chunk_size = CHUNK,
	};

	assert_int_equal(objfs_store_open(&cfg, s, NULL, NULL), 0);
}

static void
test_stress(void **state)
{
	char dir[] = "/tmp/objfs-stress-XXXXXX", cmd[64];
	static struct worker w[THREADS];
	const char *env = getenv("OBJFS_STRESS_ITERS");
	int iters = env ? atoi(env) : 2000;
	unsigned char *shared = malloc(SHARED_LEN);
	pthread_t th[THREADS];
	struct objfs_store *s;
	struct objfs_attr a;
	size_t n;
	int changed;

	(void)state;
	assert_non_null(mkdtemp(dir));
	open_store(dir, &s);
	/* The shared file, written and then pushed out of the arena by a
	 * remount, so that reading it goes to disk. */
	fill(shared, SHARED_LEN, 77);
	assert_int_equal(objfs_store_create(s, 1, "shared", 0644, O_RDWR, 0,
				&cr, &a), 0);
	assert_int_equal(objfs_store_write(s, a.ino, 0, shared, SHARED_LEN,
				&wr, &changed, &n), 0);
	assert_int_equal(objfs_store_close(s), 0);
	open_store(dir, &s);
	assert_int_equal(objfs_store_lookup(s, 1, "shared", &a), 0);
	assert_int_equal(objfs_store_open_file(s, a.ino, O_RDONLY, 0,
				&(enum objfs_cache){0}), 0);

	for (int t = 0; t < THREADS; t++) {
		memset(&w[t], 0, sizeof(w[t]));
		w[t].s = s;
		w[t].id = t;
		w[t].seed = 1000u + (unsigned)t;
		w[t].iters = iters;
		w[t].shared = shared;
		w[t].shared_ino = a.ino;
		for (int k = 0; k < FILES; k++) {
			snprintf(w[t].f[k].name, sizeof(w[t].f[k].name),
				"t%d-%d", t, k);
			w[t].f[k].want = calloc(1, MAX_LEN);
			assert_non_null(w[t].f[k].want);
		}
	}
	for (int t = 0; t < THREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, work, &w[t]), 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < THREADS; t++) {
		if (w[t].err[0])
			fail_msg("thread %d: %s", t, w[t].err);
		print_message("thread %d: %llu writes, %llu reads, %llu "
			"truncates, %llu renames, %llu unlinks, %llu fsyncs, "
			"%llu shared reads\n", t,
			(unsigned long long)(w[t].ops[0] + w[t].ops[1]),
			(unsigned long long)w[t].ops[2],
			(unsigned long long)w[t].ops[3],
			(unsigned long long)w[t].ops[4],
			(unsigned long long)w[t].ops[5],
			(unsigned long long)w[t].ops[6],
			(unsigned long long)w[t].ops[7]);
	}
	{
		struct objfs_store_stats st;

		objfs_store_get_stats(s, &st);
		print_message("chunks written out %llu, restored %llu, read "
			"straight from disk %llu; writer waits %llu\n",
			(unsigned long long)st.written_out_chunks,
			(unsigned long long)st.restored_chunks,
			(unsigned long long)st.direct_reads,
			(unsigned long long)st.write_waits);
		/* The arena was too small for it all: the spiller and the
		 * disk paths took part. */
		assert_true(st.written_out_chunks > 0);
		assert_true(st.restored_chunks + st.direct_reads > 0);
	}
	assert_int_equal(objfs_store_close(s), 0);

	/* What every thread wrote last is what a remount finds. */
	open_store(dir, &s);
	for (int t = 0; t < THREADS; t++) {
		for (int k = 0; k < FILES; k++) {
			struct file *f = &w[t].f[k];
			int rc = objfs_store_lookup(s, 1, f->name, &a);

			if (!f->ino) {
				assert_int_equal(rc, -ENOENT);
				continue;
			}
			assert_int_equal(rc, 0);
			assert_int_equal(a.size, f->len);
			w[t].s = s;
			if (verify(&w[t], a.ino, f->want, f->len, 0, f->len,
					f->name) < 0)
				fail_msg("after the remount: %s", w[t].err);
			objfs_store_forget(s, a.ino, 1);
		}
	}
	assert_int_equal(objfs_store_close(s), 0);
	{
		FILE *out = fopen("/dev/null", "w");

		assert_non_null(out);
		assert_int_equal(objfs_check(dir, out), 0);
		fclose(out);
	}
	for (int t = 0; t < THREADS; t++)
		for (int k = 0; k < FILES; k++)
			free(w[t].f[k].want);
	free(shared);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
