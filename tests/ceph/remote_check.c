/* SPDX-License-Identifier: MIT */
/*
 * remote_check.c - objfs's client of a Ceph pool (src/rados/remote.c) against a
 * real cluster (tests/integration/remote_client.sh starts it).  Prints
 * TAP.
 *
 *   remote_check CONF POOL          the calls, on a cluster that answers
 *   remote_check CONF POOL down     with its OSD stopped: each call fails
 *                                   with ETIMEDOUT within its timeout
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/base/csum.h"
#include "src/rados/remote.h"

static int n, failed;

static void
check(const char *what, int ok)
{
	n++;
	if (!ok)
		failed++;
	printf("%sok %d - %s\n", ok ? "" : "not ", n, what);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
parse_checks(void)
{
	char pool[OBJFS_REMOTE_NAME_MAX], ns[OBJFS_REMOTE_NAME_MAX], err[256];

	check("rados:p parses: pool p, no namespace",
		objfs_rados_parse("rados:p", pool, ns, err, sizeof(err)) == 0 &&
		strcmp(pool, "p") == 0 && ns[0] == '\0');
	check("rados:p/ns parses: pool p, namespace ns",
		objfs_rados_parse("rados:p/ns", pool, ns, err, sizeof(err)) == 0 &&
		strcmp(pool, "p") == 0 && strcmp(ns, "ns") == 0);
	check("s3:b is refused, saying what is expected",
		objfs_rados_parse("s3:b", pool, ns, err, sizeof(err)) == -EINVAL &&
		strstr(err, "rados:POOL"));
	check("rados: (no pool) is refused",
		objfs_rados_parse("rados:", pool, ns, err, sizeof(err)) == -EINVAL &&
		strstr(err, "empty"));
	check("rados:p/ (empty namespace) is refused",
		objfs_rados_parse("rados:p/", pool, ns, err, sizeof(err)) == -EINVAL);
	check("rados:p/a/b (two names) is refused",
		objfs_rados_parse("rados:p/a/b", pool, ns, err, sizeof(err)) == -EINVAL &&
		strstr(err, "'/'"));
}

/* Chunks named by their content: stored once, never changed, every read
 * checked. */
static void
chunk_checks(struct objfs_remote *r, const unsigned char *buf, size_t len)
{
	unsigned char tab[4 * OBJFS_SUMS_MAX], tab2[4 * OBJFS_SUMS_MAX];
	char name[OBJFS_REMOTE_CHUNK_NAME], name2[OBJFS_REMOTE_CHUNK_NAME];
	unsigned char *back = malloc(len), *other = calloc(1, len + 1);
	unsigned shift = 12;
	uint64_t csum, csum2, size;

	csum = objfs_chunk_csum(buf, (uint32_t)len, shift, tab);
	objfs_remote_chunk_name(buf, (uint32_t)len, name);
	memcpy(other, buf, len);
	other[len / 2] ^= 1;		/* one bit in one sub-block */
	csum2 = objfs_chunk_csum(other, (uint32_t)len, shift, tab2);
	objfs_remote_chunk_name(other, (uint32_t)len, name2);
	check("a chunk's name: c., 32 hex digits, its length",
		strlen(name) == 2 + 32 + 1 + 6 && strncmp(name, "c.", 2) == 0 &&
		strcmp(name + 35, "100000") == 0);
	check("one bit changed: another name", strcmp(name, name2) != 0);
	check("a new chunk is written (1)", objfs_remote_chunk_put(r, name, buf,
			(uint32_t)len, shift, tab) == 1);
	check("the same bytes again: already there (0), nothing written",
		objfs_remote_chunk_put(r, name, buf, (uint32_t)len, shift,
			tab) == 0);
	check("read back, checked", objfs_remote_chunk_get(r, name, back,
			(uint32_t)len, shift, csum) == 0 &&
		memcmp(back, buf, len) == 0);
	memset(back, 0, len);
	check("a part read (bytes 5000-9000): its whole sub-blocks, checked",
		objfs_remote_chunk_get_part(r, name, back, (uint32_t)len, shift,
			tab, 5000, 9000) == 0 &&
		memcmp(back, buf + 4096, 8192) == 0);
	check("a part read against other sums: EBADMSG",
		objfs_remote_chunk_get_part(r, name, back, (uint32_t)len, shift,
			tab2, (uint32_t)len / 2, (uint32_t)len / 2 + 1) ==
		-EBADMSG);
	check("read with another checksum: EIO, never the bytes",
		objfs_remote_chunk_get(r, name, back, (uint32_t)len, shift,
			csum2) == -EIO);
	check("an absent chunk: ENOENT", objfs_remote_chunk_get(r, name2, back,
			(uint32_t)len, shift, csum2) == -ENOENT);
	/* Damage under its name: other bytes, then a longer object. */
	check("other bytes put under a chunk's name",
		objfs_remote_put(r, name2, buf, len) == 0);
	check("... read: EIO", objfs_remote_chunk_get(r, name2, back,
			(uint32_t)len, shift, csum2) == -EIO);
	check("... and a put of its real bytes: EIO, not taken as there",
		objfs_remote_chunk_put(r, name2, other, (uint32_t)len, shift,
			tab2) == -EIO);
	check("an object one byte longer than its name says: EIO on read",
		objfs_remote_put(r, name2, other, len + 1) == 0 &&
		objfs_remote_stat(r, name2, &size) == 0 && size == len + 1 &&
		objfs_remote_chunk_get(r, name2, back, (uint32_t)len, shift,
			csum2) == -EIO);
	free(back);
	free(other);
}

/* Puts in flight: chunks the pool has are found and not sent; after 8
 * looks in a row find nothing, new chunks are written without one, and
 * a chunk found there again (EEXIST, its bytes compared) is reported as
 * there, not as an error. */
static void
puts_checks(struct objfs_remote *r)
{
	enum { N = 24, OLD = 6, LEN = 64u << 10 };
	static unsigned char b[N][LEN], tab[N][4 * OBJFS_SUMS_MAX];
	char name[N][OBJFS_REMOTE_CHUNK_NAME];
	struct objfs_remote_puts *p;
	size_t looks, at_once;
	int order[N], ok = 1, intact = 1, k = 0;
	unsigned char back[LEN];

	srand(11);
	for (int i = 0; i < N; i++) {
		for (unsigned j = 0; j < LEN; j++)
			b[i][j] = (unsigned char)rand();
		objfs_chunk_csum(b[i], LEN, 12, tab[i]);
		objfs_remote_chunk_name(b[i], LEN, name[i]);
	}
	/* The pool has chunks 0..OLD-1 already. */
	for (int i = 0; i < OLD; i++)
		ok &= objfs_remote_chunk_put(r, name[i], b[i], LEN, 12,
				tab[i]) == 1;
	check("puts: six chunks put one by one", ok);
	/* Then a batch of 12 new ones, the six the pool has, 6 new ones. */
	for (int i = OLD; i < OLD + 12; i++)
		order[k++] = i;
	for (int i = 0; i < OLD; i++)
		order[k++] = i;
	for (int i = OLD + 12; i < N; i++)
		order[k++] = i;
	if (objfs_remote_puts_new(r, 4, &p) < 0) {
		check("puts: a batch", 0);
		return;
	}
	for (k = 0; k < N; k++)
		ok &= objfs_remote_puts_add(p, name[order[k]], b[order[k]], LEN,
				12, tab[order[k]], 1) == 0;
	ok &= objfs_remote_puts_wait(p) == 0;
	check("puts: a batch of 24, waited for", ok);
	ok = 1;
	for (k = 0; k < N; k++)
		ok &= objfs_remote_puts_result(p, (size_t)k) ==
			(order[k] < OLD ? 0 : 1);
	check("puts: the 18 new ones written (1), the 6 there found (0)", ok);
	objfs_remote_puts_counts(p, &looks, &at_once);
	check("puts: after 8 looks found nothing, chunks were written "
		"without one", at_once >= 1 && looks >= 8);
	check("puts: and looking started again once one was found there",
		looks > 8);
	objfs_remote_puts_free(p);
	for (int i = 0; i < N; i++)
		intact &= objfs_remote_chunk_get(r, name[i], back, LEN, 12,
				objfs_chunk_csum(b[i], LEN, 12, tab[i])) == 0 &&
			memcmp(back, b[i], LEN) == 0;
	check("puts: every chunk reads back, checked", intact);
	printf("# puts: %zu looked for, %zu written without a look\n", looks,
		at_once);
}

/* A collector of one mount reads a chunk's age and version; a put of
 * another mount finds the chunk meanwhile: with touch (shared mode) the
 * find writes to it, and the collector's remove at the version it read
 * fails; without, a find only reads, and the remove goes through. */
/* A batch of one put of chunk @name, with a look: its result, or -1. */
static int
look_put(struct objfs_remote *r, const char *name, const unsigned char *b,
		uint32_t len, const unsigned char *tab)
{
	struct objfs_remote_puts *p = NULL;
	int rc = -1;

	if (objfs_remote_puts_new(r, 4, &p) == 0 &&
	    objfs_remote_puts_add(p, name, b, len, 12, tab, 1) == 0 &&
	    objfs_remote_puts_wait(p) == 0)
		rc = objfs_remote_puts_result(p, 0);
	if (p)
		objfs_remote_puts_free(p);
	return rc;
}

static void
touch_checks(struct objfs_remote *r, struct objfs_remote *r2)
{
	enum { LEN = 64u << 10 };
	static unsigned char b[LEN], tab[4 * OBJFS_SUMS_MAX];
	char name[OBJFS_REMOTE_CHUNK_NAME];
	uint64_t size, v1 = 0, v2 = 0, v3 = 0;
	int64_t mtime;
	int found;

	srand(23);
	for (unsigned j = 0; j < LEN; j++)
		b[j] = (unsigned char)rand();
	objfs_chunk_csum(b, LEN, 12, tab);
	objfs_remote_chunk_name(b, LEN, name);
	check("touch: a chunk put", objfs_remote_chunk_put(r, name, b, LEN, 12,
			tab) == 1);
	check("touch: its age and version read", objfs_remote_age_ver(r, name,
			&size, &mtime, &v1) == 0 && size == LEN && v1 > 0);
	objfs_remote_set_touch(r2, 1);
	found = look_put(r2, name, b, LEN, tab) == 0;
	check("touch: another client's look finds it (0)", found);
	check("touch: and moved its version",
		objfs_remote_age_ver(r, name, &size, &mtime, &v2) == 0 &&
		v2 > v1);
	check("touch: a remove at the version read before: ECANCELED, kept",
		objfs_remote_remove_at(r, name, v1) == -ECANCELED &&
		objfs_remote_age_ver(r, name, &size, &mtime, &v3) == 0);
	check("touch: a put that meets it (EEXIST, same bytes) also moves it",
		objfs_remote_chunk_put(r2, name, b, LEN, 12, tab) == 0 &&
		objfs_remote_age_ver(r, name, &size, &mtime, &v3) == 0 &&
		v3 > v2);
	objfs_remote_set_touch(r2, 0);
	found = look_put(r2, name, b, LEN, tab) == 0;
	check("touch: without it a look only reads: the version stays",
		found && objfs_remote_age_ver(r, name, &size, &mtime, &v1) == 0 &&
		v1 == v3);
	check("touch: a remove at the version read: done",
		objfs_remote_remove_at(r, name, v1) == 0 &&
		objfs_remote_age_ver(r, name, &size, &mtime, &v1) == -ENOENT);
	objfs_remote_set_touch(r2, 1);
	found = look_put(r2, name, b, LEN, tab) == 1;
	check("touch: a touching look of a chunk that is gone writes it (1)",
		found && objfs_remote_age_ver(r, name, &size, &mtime, &v1) == 0 &&
		size == LEN);
}

/* The log's records are taken once (fencing); the head changes only
 * from the version its writer read. */
static void
log_checks(struct objfs_remote *r, struct objfs_remote *r2)
{
	char got[64];
	size_t len;
	uint64_t v1 = 0, v2, vr;

	check("log record 1 written", objfs_remote_log_put(r, 7, 1, "one", 3) == 0);
	check("a second writer of record 1: EEXIST, the first's stays",
		objfs_remote_log_put(r2, 7, 1, "ONE", 3) == -EEXIST &&
		objfs_remote_log_get(r, 7, 1, got, sizeof(got), &len) == 0 &&
		len == 3 && memcmp(got, "one", 3) == 0);
	check("record 2 absent: ENOENT",
		objfs_remote_log_get(r, 7, 2, got, sizeof(got), &len) == -ENOENT);
	check("a record longer than the room: EFBIG",
		objfs_remote_log_get(r, 7, 1, got, 2, &len) == -EFBIG);
	check("the head made where there was none",
		objfs_remote_head_put(r, "h1", 2, &v1) == 0 && v1 != 0);
	v2 = 0;
	check("made again by another: ECANCELED",
		objfs_remote_head_put(r2, "hX", 2, &v2) == -ECANCELED);
	check("read: its bytes and version", objfs_remote_head_get(r2, got,
			sizeof(got), &len, &vr) == 0 && len == 2 &&
		memcmp(got, "h1", 2) == 0 && vr == v1);
	v2 = vr;
	check("replaced from the version read",
		objfs_remote_head_put(r2, "h2", 2, &v2) == 0 && v2 != v1);
	check("a writer with the older version: ECANCELED, nothing written",
		objfs_remote_head_put(r, "h3", 2, &v1) == -ECANCELED &&
		objfs_remote_head_get(r, got, sizeof(got), &len, &vr) == 0 &&
		memcmp(got, "h2", 2) == 0 && vr == v2);
}

int
main(int argc, char **argv)
{
	struct objfs_remote_config cfg = { .timeout_s = 5 };
	struct objfs_remote *r, *r2;
	char spec[256], err[512], who[256];
	size_t len = 1u << 20, got;
	unsigned char *buf, *back;
	uint64_t size;
	double t;
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: remote_check CONF POOL [down]\n");
		return 2;
	}
	cfg.conf = argv[1];
	buf = malloc(len);
	back = malloc(len);
	srand(7);
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)rand();
	if (argc > 3 && strcmp(argv[3], "down") == 0) {
		snprintf(spec, sizeof(spec), "rados:%s/t", argv[2]);
		cfg.spec = spec;
		rc = objfs_rados_connect(&cfg, &r, err, sizeof(err));
		check("connects while the monitor answers", rc == 0);
		if (rc == 0) {
			t = now();
			rc = objfs_remote_put(r, "down-put", buf, len);
			check("a write with the OSD down fails with ETIMEDOUT",
				rc == -ETIMEDOUT);
			check("... after its 5 s timeout, within 15 s",
				now() - t >= 4.5 && now() - t < 15);
			t = now();
			rc = objfs_remote_get(r, "obj", 0, back, len, &got);
			check("a read with the OSD down fails with ETIMEDOUT",
				rc == -ETIMEDOUT);
			check("... within 15 s", now() - t < 15);
			objfs_remote_close(r);
		}
		printf("1..%d\n", n);
		return 0;
	}
	parse_checks();

	cfg.spec = "rados:no-such-pool";
	rc = objfs_rados_connect(&cfg, &r, err, sizeof(err));
	check("a pool that does not exist: ENOENT, said so",
		rc == -ENOENT && strstr(err, "no such pool"));
	cfg.conf = "/nonexistent/ceph.conf";
	snprintf(spec, sizeof(spec), "rados:%s", argv[2]);
	cfg.spec = spec;
	rc = objfs_rados_connect(&cfg, &r, err, sizeof(err));
	check("a configuration file that does not exist: refused, naming it",
		rc < 0 && strstr(err, "/nonexistent/ceph.conf"));
	cfg.conf = argv[1];

	snprintf(spec, sizeof(spec), "rados:%s/t", argv[2]);
	cfg.spec = spec;
	rc = objfs_rados_connect(&cfg, &r, err, sizeof(err));
	check("connects to the pool and namespace", rc == 0);
	if (rc < 0) {
		printf("# %s\n1..%d\n", err, n);
		return 0;
	}
	check("put 1 MiB", objfs_remote_put(r, "obj", buf, len) == 0);
	check("stat: 1 MiB", objfs_remote_stat(r, "obj", &size) == 0 &&
		size == len);
	check("get: the same bytes",
		objfs_remote_get(r, "obj", 0, back, len, &got) == 0 &&
		got == len && memcmp(buf, back, len) == 0);
	check("get from an offset: the bytes there",
		objfs_remote_get(r, "obj", 1000, back, 100, &got) == 0 &&
		got == 100 && memcmp(buf + 1000, back, 100) == 0);
	check("put again, shorter: replaced whole",
		objfs_remote_put(r, "obj", buf + 5, 10) == 0 &&
		objfs_remote_stat(r, "obj", &size) == 0 && size == 10);
	check("create of an object that exists: EEXIST, unchanged",
		objfs_remote_create(r, "obj", buf, len) == -EEXIST &&
		objfs_remote_stat(r, "obj", &size) == 0 && size == 10);
	check("create of a new one", objfs_remote_create(r, "new", buf, 7) == 0 &&
		objfs_remote_stat(r, "new", &size) == 0 && size == 7);
	chunk_checks(r, buf, len);
	puts_checks(r);
	check("get of an absent object: ENOENT",
		objfs_remote_get(r, "absent", 0, back, 10, &got) == -ENOENT);
	check("remove, and of an absent one", objfs_remote_remove(r, "new") == 0 &&
		objfs_remote_remove(r, "new") == 0 &&
		objfs_remote_stat(r, "new", &size) == -ENOENT);

	/* Namespaces keep objects apart. */
	snprintf(spec, sizeof(spec), "rados:%s/other", argv[2]);
	cfg.spec = spec;
	rc = objfs_rados_connect(&cfg, &r2, err, sizeof(err));
	check("another namespace of the pool", rc == 0);
	if (rc == 0) {
		check("... does not see the first's objects",
			objfs_remote_stat(r2, "obj", &size) == -ENOENT);
		objfs_remote_close(r2);
	}
	snprintf(spec, sizeof(spec), "rados:%s/t", argv[2]);
	cfg.spec = spec;
	rc = objfs_rados_connect(&cfg, &r2, err, sizeof(err));
	check("a second client of the namespace", rc == 0);
	if (rc == 0) {
		log_checks(r, r2);
		touch_checks(r, r2);

		/* The hold: one holder at a time, renewed by its holder,
		 * free again after it expires or is released. */
		check("a hold taken", objfs_remote_hold(r, "hold", "host-a:1", 3,
				who, sizeof(who)) == 0);
		check("renewed by its holder", objfs_remote_hold(r, "hold",
				"host-a:1", 3, who, sizeof(who)) == 0);
		objfs_remote_close(r2);
	}
	/* A second client of the same namespace, as a second machine. */
	snprintf(spec, sizeof(spec), "rados:%s/t", argv[2]);
	cfg.spec = spec;
	rc = objfs_rados_connect(&cfg, &r2, err, sizeof(err));
	if (rc == 0) {
		check("another holder is refused with EBUSY, told who holds it",
			objfs_remote_hold(r2, "hold", "host-b:2", 3, who,
				sizeof(who)) == -EBUSY &&
			strcmp(who, "host-a:1") == 0);
		t = now();
		while (objfs_remote_hold(r2, "hold", "host-b:2", 3, who,
				sizeof(who)) == -EBUSY && now() - t < 20)
			nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
		check("... and takes it once it expired (3 s)",
			now() - t >= 1 && now() - t < 20);
		check("released by its holder",
			objfs_remote_release(r2, "hold", "host-b:2") == 0);
		check("then taken at once by another",
			objfs_remote_hold(r, "hold", "host-a:1", 3, who,
				sizeof(who)) == 0 &&
			objfs_remote_release(r, "hold", "host-a:1") == 0);
		objfs_remote_close(r2);
	} else {
		check("a second client connects", 0);
	}
	objfs_remote_close(r);
	free(buf);
	free(back);
	printf("1..%d\n", n);
	return 0;
}
