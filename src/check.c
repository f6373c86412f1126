/* SPDX-License-Identifier: MIT */
/*
 * check.c - objfsctl check and objfsctl recover (see check.h).
 *
 * Offline: the data directory's lock keeps a daemon out meanwhile.  The
 * index is opened read-only (objfs_meta_open with OBJFS_META_RDONLY: the
 * journal is replayed in memory, nothing is committed), after the
 * structural walk in a child process that every open does.  When that
 * walk finds the index damaged, check says so and stops there; recover
 * rebuilds a copy of the index from the records that still verify
 * (objfs_meta_rebuild) and works from the copy.
 *
 * Chunk bytes are read with objfs_spill_read, which verifies each chunk's
 * checksum; the core's own log lines are silenced meanwhile, since every
 * finding is printed here.
 */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "base/csum.h"
#include "base/log.h"
#include "spill.h"
#include "store_int.h"
#include "../meta/meta_keys.h"

struct ino {
	uint64_t ino;
	struct objfs_attr a;
	int ok;			/* its record is intact */
	uint32_t names;		/* dirents pointing at it */
	uint32_t subdirs;	/* directories among its entries */
	uint64_t recs;		/* chunk records */
	uint64_t parent;	/* a directory's parent by its name */
	int orphan;
	int dead;		/* has a tombstone */
};

struct ck {
	FILE *out;
	int problems;
	int notes;
	uint32_t chunk;
	struct objfs_meta_txn *t;
	int bdir;		/* backing/, or -1 */
	size_t files;		/* in backing/ */
	struct ino *iv;
	size_t ni, cap;
	/* dirent (parent, cookie) pairs, sorted, for the cookie check */
	struct pc {
		uint64_t parent, cookie;
	} *pcv;
	size_t npc, pccap;
};

static void __attribute__((format(printf, 2, 3)))
problem(struct ck *c, const char *fmt, ...)
{
	va_list ap;

	fputs("  problem: ", c->out);
	va_start(ap, fmt);
	vfprintf(c->out, fmt, ap);
	va_end(ap);
	fputc('\n', c->out);
	c->problems++;
}

static void __attribute__((format(printf, 2, 3)))
note(struct ck *c, const char *fmt, ...)
{
	va_list ap;

	fputs("  note: ", c->out);
	va_start(ap, fmt);
	vfprintf(c->out, fmt, ap);
	va_end(ap);
	fputc('\n', c->out);
	c->notes++;
}

static struct ino *
find(struct ck *c, uint64_t ino)
{
	size_t lo = 0, hi = c->ni;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c->iv[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->ni && c->iv[lo].ino == ino ? &c->iv[lo] : NULL;
}

/* Inode records come in key order: the array stays sorted. */
static int
add_inode(void *arg, uint64_t ino, const struct objfs_attr *a)
{
	struct ck *c = arg;
	struct ino *x;

	if (c->ni == c->cap) {
		size_t n = c->cap ? 2 * c->cap : 1024;
		struct ino *v = realloc(c->iv, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->iv = v;
		c->cap = n;
	}
	x = &c->iv[c->ni++];
	memset(x, 0, sizeof(*x));
	x->ino = ino;
	x->ok = a != NULL;
	if (a)
		x->a = *a;
	else
		problem(c, "inode %" PRIu64 ": its record is damaged", ino);
	return 0;
}

static int
add_dirent(void *arg, uint64_t parent, const struct objfs_dirent *d)
{
	struct ck *c = arg;
	struct ino *p = find(c, parent), *x;

	if (!d) {
		problem(c, "directory %" PRIu64 ": a name record is damaged",
			parent);
		return 0;
	}
	if (!p || !p->ok || !S_ISDIR(p->a.mode))
		problem(c, "name '%s' is in %" PRIu64 ", which is not a "
			"directory", d->name, parent);
	x = find(c, d->ino);
	if (!x) {
		problem(c, "name '%s' in directory %" PRIu64 " points to inode %"
			PRIu64 ", which does not exist", d->name, parent,
			d->ino);
		return 0;
	}
	x->names++;
	if (x->ok && (x->a.mode & S_IFMT) != d->type)
		problem(c, "name '%s' in directory %" PRIu64 " says type %o, "
			"inode %" PRIu64 " is %o", d->name, parent, d->type,
			d->ino, x->a.mode & S_IFMT);
	if (x->ok && S_ISDIR(x->a.mode)) {
		if (p)
			p->subdirs++;
		x->parent = parent;
	}
	if (c->npc == c->pccap) {
		size_t n = c->pccap ? 2 * c->pccap : 1024;
		struct pc *v = realloc(c->pcv, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->pcv = v;
		c->pccap = n;
	}
	c->pcv[c->npc++] = (struct pc){ parent, d->cookie };
	return 0;
}

static int
pc_cmp(const void *a, const void *b)
{
	const struct pc *x = a, *y = b;

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return x->cookie < y->cookie ? -1 : x->cookie > y->cookie;
}

static int
check_cookie(void *arg, uint64_t parent, uint64_t cookie, const char *name,
		size_t len)
{
	struct ck *c = arg;
	struct pc key = { parent, cookie };
	struct objfs_dirent d;

	if (!name) {
		problem(c, "directory %" PRIu64 ": a listing record is damaged",
			parent);
		return 0;
	}
	if (!bsearch(&key, c->pcv, c->npc, sizeof(key), pc_cmp) ||
	    objfs_meta_dirent_get(c->t, parent, name, len, &d) < 0 ||
	    d.cookie != cookie)
		problem(c, "directory %" PRIu64 " lists '%.*s' (cookie %" PRIu64
			"), which it does not hold", parent, (int)len, name,
			cookie);
	return 0;
}

static int
mark_orphan(void *arg, uint64_t ino)
{
	struct ck *c = arg;
	struct ino *x = find(c, ino);

	if (x)
		x->orphan = 1;
	return 0;
}

static int
mark_dead(void *arg, uint64_t ino)
{
	struct ck *c = arg;
	struct ino *x = find(c, ino);

	if (x) {
		x->dead = 1;
		problem(c, "inode %" PRIu64 " is live but has a tombstone", ino);
	}
	return 0;
}

static int
check_owner(void *arg, const char *db, uint64_t ino, int ok)
{
	struct ck *c = arg;

	if (!ok)
		problem(c, "a %s record is damaged", db);
	else if (!find(c, ino))
		problem(c, "a %s record belongs to inode %" PRIu64 ", which "
			"does not exist", db, ino);
	return 0;
}

/* ---- chunk records against the backing files ------------------------ */

struct chunks {
	struct ck *c;
	uint64_t ino;		/* the file whose records come now */
	int fd;
	struct objfs_slotmap slots;
	unsigned char *buf;
	uint64_t verified, bytes, bad;
};

static void
chunks_done(struct chunks *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	objfs_slots_fini(&k->slots);
}

static int
open_backing(int bdir, uint64_t ino)
{
	char name[17];

	snprintf(name, sizeof(name), "%016" PRIx64, ino);
	return bdir < 0 ? -ENOENT : openat(bdir, name, O_RDONLY | O_NOFOLLOW |
			O_CLOEXEC);
}

static int
check_chunk(void *arg, uint64_t ino, uint64_t idx,
		const struct objfs_chunk_rec *r)
{
	struct chunks *k = arg;
	struct ck *c = k->c;
	struct ino *x = find(c, ino);
	int rc;

	if (ino != k->ino) {
		chunks_done(k);
		k->ino = ino;
		k->fd = open_backing(c->bdir, ino);
		if (k->fd < 0 && r)
			problem(c, "inode %" PRIu64 ": its chunks are recorded "
				"but its backing file cannot be opened: %s",
				ino, strerror(errno));
	}
	if (!r) {
		problem(c, "inode %" PRIu64 ": a chunk record is damaged", ino);
		return 0;
	}
	if (!x) {
		problem(c, "chunk %" PRIu64 " is recorded for inode %" PRIu64
			", which does not exist", idx, ino);
		return 0;
	}
	x->recs++;
	if (x->ok && (!S_ISREG(x->a.mode) ||
	    idx * c->chunk >= x->a.size))
		problem(c, "inode %" PRIu64 ": chunk %" PRIu64 " is recorded "
			"past its size (%" PRIu64 ")", ino, idx, x->a.size);
	if (r->len > c->chunk) {
		problem(c, "inode %" PRIu64 " chunk %" PRIu64 ": length %u is "
			"more than a chunk", ino, idx, r->len);
		return 0;
	}
	rc = objfs_slots_take(&k->slots, r->slot);
	if (rc == -EEXIST)
		problem(c, "inode %" PRIu64 " chunk %" PRIu64 ": slot %" PRIu64
			" is used by another chunk too", ino, idx, r->slot);
	if (k->fd < 0)
		return 0;
	rc = objfs_spill_read(k->fd, ino, idx, r->slot, c->chunk, k->buf,
			r->len, r->csum);
	if (rc == 0) {
		k->verified++;
		k->bytes += r->len;
	} else {
		k->bad++;
		problem(c, "inode %" PRIu64 " chunk %" PRIu64 " (slot %" PRIu64
			"): %s", ino, idx, r->slot, rc == -EBADMSG ?
			"the bytes do not match their checksum" :
			"the backing file is short or unreadable");
	}
	return 0;
}

/* ---- the backing directory ------------------------------------------- */

static int
list_backing(int bdir, int (*cb)(void *arg, uint64_t ino), void *arg)
{
	struct dirent *e;
	DIR *d;
	int fd, rc = 0;

	if (bdir < 0)
		return 0;
	fd = openat(bdir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while (rc == 0 && (e = readdir(d))) {
		uint64_t ino;
		char *end;

		if (strlen(e->d_name) != 16 || strspn(e->d_name,
				"0123456789abcdef") != 16)
			continue;
		ino = strtoull(e->d_name, &end, 16);
		rc = cb(arg, ino);
	}
	closedir(d);
	return rc;
}

static int
check_file(void *arg, uint64_t ino)
{
	struct ck *c = arg;
	struct ino *x = find(c, ino);
	int dead = objfs_meta_deleted_get(c->t, ino) == 0;

	if (dead)
		note(c, "backing file of deleted object %" PRIu64 " is still "
			"there; the next mount removes it", ino);
	else if (!x)
		note(c, "backing file %016" PRIx64 " belongs to no object the "
			"index knows (objfsctl recover saves it as unverified)",
			ino);
	else if (x->ok && !S_ISREG(x->a.mode))
		problem(c, "backing file %016" PRIx64 " belongs to inode %" PRIu64
			", which is not a regular file", ino, ino);
	return 0;
}

/* ---- opening ------------------------------------------------------------ */

struct dir {
	int dirfd, lockfd, bdir;
	char index[4200];
};

static int
open_dir(const char *data_dir, struct dir *d, FILE *out)
{
	long holder = 0;
	int rc;

	d->lockfd = d->bdir = -1;
	d->dirfd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->dirfd < 0) {
		rc = -errno;
		fprintf(out, "%s: %s\n", data_dir, strerror(-rc));
		return rc;
	}
	rc = objfs_store_lock_dir(d->dirfd, &d->lockfd, &holder);
	if (rc < 0) {
		if (rc == -EBUSY)
			fprintf(out, "%s: served by a running objfs (pid %ld); "
				"unmount it first\n", data_dir, holder);
		else
			fprintf(out, "%s: cannot lock: %s\n", data_dir,
				strerror(-rc));
		close(d->dirfd);
		return rc;
	}
	d->bdir = openat(d->dirfd, "backing", O_RDONLY | O_DIRECTORY |
			O_NOFOLLOW | O_CLOEXEC);
	snprintf(d->index, sizeof(d->index), "%s/index", data_dir);
	return 0;
}

static void
close_dir(struct dir *d)
{
	if (d->bdir >= 0)
		close(d->bdir);
	close(d->lockfd);
	close(d->dirfd);
}

static int
count_one(void *arg, uint64_t ino)
{
	(*(size_t *)arg)++;
	return 0;
}

/* The superblock's figures; chunk size 0 when they cannot be read. */
static void
read_super(struct ck *c, const char *data_dir, int dirfd)
{
	uint64_t schema = 0, chunk = 0, id = 0;
	char buf[64], want[32];
	ssize_t n;
	int fd;

	if (objfs_meta_super_get(c->t, OBJFS_SUPER_SCHEMA, &schema) == -ENOENT &&
	    objfs_meta_empty(c->t) && !c->files) {
		note(c, "the index is empty (a first mount cut short): the "
			"next mount fills it");
		return;
	}
	if (objfs_meta_super_get(c->t, OBJFS_SUPER_SCHEMA, &schema) < 0 ||
	    objfs_meta_super_get(c->t, OBJFS_SUPER_CHUNK, &chunk) < 0) {
		problem(c, "the index has no readable superblock (schema, "
			"chunk size)");
		return;
	}
	if (schema != OBJFS_META_SCHEMA)
		problem(c, "schema %" PRIu64 ", this objfs writes %u", schema,
			OBJFS_META_SCHEMA);
	if (chunk < 4096 || chunk > (1u << 30) || (chunk & (chunk - 1))) {
		problem(c, "chunk size %" PRIu64 " is not one objfs makes",
			chunk);
		return;
	}
	c->chunk = (uint32_t)chunk;
	if (objfs_meta_super_get(c->t, OBJFS_SUPER_ID, &id) == 0) {
		snprintf(want, sizeof(want), "%016" PRIx64 "\n", id);
		fd = openat(dirfd, "id", O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n < 0)
			note(c, "%s/id is missing; the next mount writes it",
				data_dir);
		else if ((buf[n] = '\0', strcmp(buf, want) != 0))
			problem(c, "%s/id does not match the index's: the "
				"index belongs to another data directory",
				data_dir);
	}
}

int
objfs_check(const char *data_dir, FILE *out)
{
	struct objfs_meta_report rep;
	struct ck c = { .out = out, .bdir = -1 };
	struct chunks k = { .c = &c, .ino = UINT64_MAX, .fd = -1 };
	struct objfs_meta *m = NULL;
	int saved_log = objfs_log_max, rc;
	size_t files = 0;
	struct dir d;

	rc = open_dir(data_dir, &d, out);
	if (rc < 0)
		return rc;
	c.bdir = d.bdir;
	(void)list_backing(d.bdir, count_one, &files);
	c.files = files;
	fprintf(out, "objfsctl check %s\n", data_dir);
	if (d.bdir < 0)
		note(&c, "there is no backing directory");
	rc = objfs_meta_exists(d.index);
	if ((rc == -ENOENT || rc == -ENODATA) && !files) {
		/* Never made, or a first mount cut short: nothing is lost,
		 * and a mount makes it. */
		note(&c, "there is no index yet (%s): the next mount makes one",
			rc == -ENOENT ? "no index/data.mdb" :
			"index/data.mdb never got its first commit");
		rc = 0;
		goto out;
	}
	rc = objfs_meta_verify(d.index, &rep);
	if (rc == 0 && rep.status == 0)
		fprintf(out, "  index: %" PRIu64 " records in %" PRIu64 " pages, "
			"%" PRIu64 " journal records to replay\n", rep.records,
			rep.pages, rep.journal_records);
	if (rc < 0 || rep.status < 0) {
		problem(&c, "the index cannot be read: %s (%s)", rep.what[0] ?
			rep.what : "missing", strerror(rc < 0 ? -rc :
			-rep.status));
		if (files)
			fprintf(out, "  %zu backing file(s) hold objects: "
				"'objfsctl recover %s' saves them\n", files,
				data_dir);
		goto out;
	}
	objfs_log_max = OBJFS_LOG_ERR - 1;	/* findings print below */
	rc = objfs_meta_open(d.index, OBJFS_META_RDONLY, &m, NULL);
	if (rc == 0)
		rc = objfs_meta_begin(m, 0, &c.t);
	if (rc < 0) {
		problem(&c, "the index cannot be opened: %s", strerror(-rc));
		goto out;
	}
	read_super(&c, data_dir, d.dirfd);
	if (!c.chunk)
		goto out;
	k.buf = aligned_alloc(OBJFS_SPILL_ALIGN, c.chunk);
	if (!k.buf) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = objfs_meta_inode_all(c.t, add_inode, &c)) < 0 ||
	    (rc = objfs_meta_dirent_all(c.t, add_dirent, &c)) < 0)
		goto out;
	qsort(c.pcv, c.npc, sizeof(*c.pcv), pc_cmp);
	if ((rc = objfs_meta_cookie_all(c.t, check_cookie, &c)) < 0 ||
	    (rc = objfs_meta_orphan_list(c.t, mark_orphan, &c)) < 0 ||
	    (rc = objfs_meta_deleted_list(c.t, mark_dead, &c)) < 0 ||
	    (rc = objfs_meta_owner_all(c.t, check_owner, &c)) < 0 ||
	    (rc = objfs_meta_chunk_all(c.t, check_chunk, &k)) < 0)
		goto out;
	chunks_done(&k);
	if (!find(&c, OBJFS_ROOT_INO))
		problem(&c, "there is no root directory");
	for (size_t i = 0; i < c.ni; i++) {
		struct ino *x = &c.iv[i];
		uint32_t want;
		char tgt[8];
		size_t len;

		if (!x->ok)
			continue;
		if (S_ISDIR(x->a.mode)) {
			want = 2 + x->subdirs;
			if (x->ino != OBJFS_ROOT_INO && x->names &&
			    x->a.parent != x->parent)
				problem(&c, "directory %" PRIu64 " says its parent "
					"is %" PRIu64 ", its name is in %" PRIu64,
					x->ino, x->a.parent, x->parent);
		} else {
			want = x->names;
		}
		if (x->ino != OBJFS_ROOT_INO && !x->names && !x->orphan)
			problem(&c, "inode %" PRIu64 " has no name and is not "
				"an orphan", x->ino);
		else if (x->a.nlink != want && !(x->orphan && x->a.nlink == 0))
			problem(&c, "inode %" PRIu64 ": link count %u, but %u "
				"name(s) point at it", x->ino, x->a.nlink, want);
		if (S_ISREG(x->a.mode) && x->recs != x->a.nrec)
			problem(&c, "inode %" PRIu64 ": %" PRIu64 " chunk "
				"records, its record says %" PRIu64, x->ino,
				x->recs, x->a.nrec);
		if (S_ISREG(x->a.mode) && (x->a.pad & OBJFS_ATTR_DAMAGED))
			problem(&c, "inode %" PRIu64 " is marked damaged (chunk "
				"records were lost)", x->ino);
		if (S_ISLNK(x->a.mode) && objfs_meta_symlink_get(c.t, x->ino,
				tgt, sizeof(tgt), &len) < 0)
			problem(&c, "symlink %" PRIu64 " has no target", x->ino);
	}
	(void)list_backing(d.bdir, check_file, &c);
	if (rep.damaged)
		note(&c, "%" PRIu64 " record(s) in all fail their checksum",
			rep.damaged);
	fprintf(out, "  %zu inodes, %zu names, %" PRIu64 " chunks (%" PRIu64
		" bytes) verified against their backing files, %zu backing "
		"files\n", c.ni, c.npc, k.verified, k.bytes, files);
	rc = 0;
out:
	objfs_log_max = saved_log;
	chunks_done(&k);
	free(k.buf);
	if (c.t)
		objfs_meta_abort(c.t);
	if (m)
		objfs_meta_close(m);
	close_dir(&d);
	free(c.iv);
	free(c.pcv);
	if (rc < 0)
		return rc;
	fprintf(out, "%d problem(s), %d note(s)\n", c.problems, c.notes);
	return c.problems;
}

/* ---- recover ------------------------------------------------------------ */

struct name {
	uint64_t parent, ino;
	uint32_t type;
	char *name;
};

struct rv {
	struct ck c;
	const char *dest;
	int dfd;			/* dest */
	FILE *report;
	struct name *nv;
	size_t nn, ncap;
	uint64_t saved, whole, damaged, unverified, bytes;
};

static int
add_name(void *arg, uint64_t parent, const struct objfs_dirent *d)
{
	struct rv *r = arg;

	if (!d)
		return 0;
	if (r->nn == r->ncap) {
		size_t n = r->ncap ? 2 * r->ncap : 256;
		struct name *v = realloc(r->nv, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->nv = v;
		r->ncap = n;
	}
	r->nv[r->nn].parent = parent;
	r->nv[r->nn].ino = d->ino;
	r->nv[r->nn].type = d->type;
	r->nv[r->nn].name = strdup(d->name);
	if (!r->nv[r->nn].name)
		return -ENOMEM;
	r->nn++;
	return 0;
}

struct copy {
	struct rv *r;
	int in, out;
	unsigned char *buf;
	uint64_t found, bad;
};

static int
copy_chunk(void *arg, uint64_t idx, const struct objfs_chunk_rec *rec)
{
	struct copy *k = arg;
	struct rv *r = k->r;
	uint32_t c = r->c.chunk;

	if (!rec || rec->len > c || k->in < 0) {
		k->bad++;
		return 0;
	}
	k->found++;
	if (objfs_spill_read(k->in, 0, idx, rec->slot, c, k->buf, rec->len,
			rec->csum) < 0) {
		fprintf(r->report, "chunk %" PRIu64 " (slot %" PRIu64 ") does not "
			"verify: left as zeros\n", idx, rec->slot);
		k->bad++;
		return 0;
	}
	if (pwrite(k->out, k->buf, rec->len, (off_t)(idx * c)) !=
			(ssize_t)rec->len)
		return -errno;
	return 0;
}

/* Save regular file @x as dest/INO (or INO.damaged). */
static int
save_file(struct rv *r, const struct ino *x)
{
	struct copy k = { .r = r, .in = -1 };
	struct timespec ts[2];
	char tmp[64], name[64];
	int rc;

	snprintf(tmp, sizeof(tmp), "%" PRIu64 ".part", x->ino);
	k.out = openat(r->dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			0600);
	if (k.out < 0)
		return -errno;
	k.buf = aligned_alloc(OBJFS_SPILL_ALIGN, r->c.chunk);
	if (!k.buf) {
		close(k.out);
		return -ENOMEM;
	}
	k.in = open_backing(r->c.bdir, x->ino);
	fprintf(r->report, "== inode %" PRIu64 "\n", x->ino);
	rc = objfs_meta_chunk_list(r->c.t, x->ino, copy_chunk, &k);
	if (rc == 0 && ftruncate(k.out, (off_t)x->a.size) < 0)
		rc = -errno;
	if (k.in < 0 && x->a.nrec)
		fprintf(r->report, "its backing file is missing\n");
	if (k.found != x->a.nrec)
		fprintf(r->report, "%" PRIu64 " chunk records found, %" PRIu64
			" expected\n", k.found, x->a.nrec);
	if (k.in >= 0)
		close(k.in);
	free(k.buf);
	ts[0].tv_sec = x->a.atime_sec;
	ts[0].tv_nsec = x->a.atime_nsec;
	ts[1].tv_sec = x->a.mtime_sec;
	ts[1].tv_nsec = x->a.mtime_nsec;
	(void)fchmod(k.out, x->a.mode & 0777);
	(void)futimens(k.out, ts);
	close(k.out);
	if (rc < 0)
		return rc;
	if (k.bad || k.found != x->a.nrec || (x->a.pad & OBJFS_ATTR_DAMAGED)) {
		snprintf(name, sizeof(name), "%" PRIu64 ".damaged", x->ino);
		r->damaged++;
	} else {
		snprintf(name, sizeof(name), "%" PRIu64, x->ino);
		r->whole++;
		fprintf(r->report, "whole\n");
	}
	r->saved++;
	r->bytes += x->a.size;
	return renameat(r->dfd, tmp, r->dfd, name) < 0 ? -errno : 0;
}

struct extent {
	uint64_t end, n;
};

static int
chunk_end(void *arg, uint64_t idx, const struct objfs_chunk_rec *rec)
{
	struct extent *e = arg;

	if (rec) {
		uint64_t end = idx * ((uint64_t *)arg)[2] + rec->len;

		if (end > e->end)
			e->end = end;
		e->n++;
	}
	return 0;
}

/* A backing file whose inode record is lost: with chunk records, saved
 * verified as INO.noattr (its size: the end of its last chunk); without,
 * copied as it is. */
static int
save_unverified(void *arg, uint64_t ino)
{
	struct rv *r = arg;
	struct ino *x = find(&r->c, ino);
	uint64_t ext[3] = { 0, 0, r->c.chunk };
	char name[64], tmp[64], buf[65536];
	ssize_t n;
	int in, out;

	if (x && x->ok && S_ISREG(x->a.mode))
		return 0;
	if (r->c.t && objfs_meta_chunk_list(r->c.t, ino, chunk_end, ext) == 0 &&
	    ext[1]) {
		struct ino y = { .ino = ino, .ok = 1 };

		y.a.ino = ino;
		y.a.mode = S_IFREG | 0600;
		y.a.size = ext[0];
		y.a.nrec = ext[1];
		fprintf(r->report, "== inode %" PRIu64 ": its record is lost; "
			"saved from its %" PRIu64 " chunk records\n", ino,
			ext[1]);
		if (save_file(r, &y) == 0) {
			snprintf(tmp, sizeof(tmp), "%" PRIu64, ino);
			snprintf(name, sizeof(name), "%" PRIu64 ".noattr", ino);
			if (renameat(r->dfd, tmp, r->dfd, name) < 0) {
				snprintf(tmp, sizeof(tmp), "%" PRIu64 ".damaged",
					ino);
				(void)renameat(r->dfd, tmp, r->dfd, name);
			}
			return 0;
		}
	}
	in = open_backing(r->c.bdir, ino);
	if (in < 0)
		return 0;
	snprintf(name, sizeof(name), "%" PRIu64 ".unverified", ino);
	out = openat(r->dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			0600);
	if (out < 0) {
		close(in);
		return -errno;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	close(in);
	close(out);
	fprintf(r->report, "== backing file %016" PRIx64 ": no record describes "
		"it; copied as %s, unverified (chunk i at offset i * chunk size "
		"while it was never rewritten)\n", ino, name);
	r->unverified++;
	return 0;
}

/* The path of directory entry @i, from the root; 0 if it cannot be. */
static int
path_of(struct rv *r, size_t i, char *buf, size_t size, int depth)
{
	uint64_t parent = r->nv[i].parent;
	size_t len;

	if (depth > 512)
		return 0;
	if (parent == OBJFS_ROOT_INO) {
		snprintf(buf, size, "%s", r->nv[i].name);
		return 1;
	}
	for (size_t j = 0; j < r->nn; j++) {
		if (r->nv[j].ino != parent || !S_ISDIR(r->nv[j].type))
			continue;
		if (!path_of(r, j, buf, size, depth + 1))
			return 0;
		len = strlen(buf);
		snprintf(buf + len, size - len, "/%s", r->nv[i].name);
		return 1;
	}
	return 0;
}

static void
mkdirs(int dfd, const char *path)
{
	char p[8192];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p; (s = strchr(s, '/')); s++) {
		*s = '\0';
		(void)mkdirat(dfd, p, 0700);
		*s = '/';
	}
	(void)mkdirat(dfd, p, 0700);
}

static void
rebuild_names(struct rv *r)
{
	FILE *names;
	char path[8192], tree[8300], obj[64], tgt[4097];
	size_t len;
	int fd = openat(r->dfd, "NAMES", O_WRONLY | O_CREAT | O_TRUNC |
			O_CLOEXEC, 0600);

	names = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!names)
		return;
	(void)mkdirat(r->dfd, "tree", 0700);
	for (size_t i = 0; i < r->nn; i++) {
		struct name *n = &r->nv[i];
		int ok = path_of(r, i, path, sizeof(path), 0);

		fprintf(names, "%" PRIu64 "\t%s%s\n", n->ino, ok ? "/" :
			"?/", ok ? path : n->name);
		if (!ok)
			continue;
		snprintf(tree, sizeof(tree), "tree/%s", path);
		if (S_ISDIR(n->type)) {
			mkdirs(r->dfd, tree);
			continue;
		}
		*strrchr(tree, '/') = '\0';
		mkdirs(r->dfd, tree);
		snprintf(tree, sizeof(tree), "tree/%s", path);
		if (S_ISREG(n->type)) {
			snprintf(obj, sizeof(obj), "%" PRIu64, n->ino);
			if (linkat(r->dfd, obj, r->dfd, tree, 0) < 0) {
				snprintf(obj, sizeof(obj), "%" PRIu64 ".damaged",
					n->ino);
				(void)linkat(r->dfd, obj, r->dfd, tree, 0);
			}
		} else if (S_ISLNK(n->type) && objfs_meta_symlink_get(r->c.t,
				n->ino, tgt, sizeof(tgt) - 1, &len) == 0) {
			tgt[len < sizeof(tgt) - 1 ? len : sizeof(tgt) - 1] = '\0';
			(void)symlinkat(tgt, r->dfd, tree);
		}
	}
	fclose(names);
}

int
objfs_recover(const char *data_dir, const char *dest_arg, FILE *out)
{
	struct objfs_meta_salvage_report sr;
	struct objfs_meta_report rep;
	struct rv r = { .c = { .out = out, .bdir = -1 }, .dfd = -1 };
	struct objfs_meta *m = NULL;
	char dest[4200], idx[4300];
	const char *index;
	int saved_log = objfs_log_max, rc, fd;
	struct dir d;

	rc = open_dir(data_dir, &d, out);
	if (rc < 0)
		return rc;
	r.c.bdir = d.bdir;
	snprintf(dest, sizeof(dest), "%s", dest_arg ? dest_arg : "");
	if (!dest_arg)
		snprintf(dest, sizeof(dest), "%s/lost+found", data_dir);
	if (mkdir(dest, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		fprintf(out, "%s: %s\n", dest, strerror(-rc));
		goto out;
	}
	r.dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r.dfd < 0) {
		rc = -errno;
		goto out;
	}
	fd = openat(r.dfd, "REPORT", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			0600);
	if (fd < 0) {
		rc = -errno;
		fprintf(out, "%s: %s (recover into an empty directory)\n", dest,
			rc == -EEXIST ? "holds an earlier recovery" :
			strerror(-rc));
		goto out;
	}
	r.report = fdopen(fd, "w");
	fprintf(out, "objfsctl recover %s into %s\n", data_dir, dest);
	index = d.index;
	rc = objfs_meta_verify(d.index, &rep);
	if (rc < 0 || rep.status < 0) {
		fprintf(out, "  the index is damaged (%s): rebuilding it from "
			"the records that still verify\n", rep.what[0] ?
			rep.what : strerror(-rc));
		snprintf(idx, sizeof(idx), "%s/.index", dest);
		rc = mkdir(idx, 0700) < 0 ? -errno : objfs_meta_rebuild(d.index,
				idx, &sr);
		if (rc == 0) {
			fprintf(out, "  found %" PRIu64 " records in the live "
				"trees, %" PRIu64 " in pages they no longer reach, "
				"%" PRIu64 " stale ones in freed pages, %" PRIu64
				" from the journal; %" PRIu64 " damaged\n",
				sr.live, sr.stray, sr.freed, sr.journal,
				sr.damaged);
			if (sr.whole)
				fprintf(out, "  the live trees are whole: "
					"records outside them are stale and "
					"were not used\n");
			index = idx;
		} else {
			fprintf(out, "  nothing to rebuild from (%s): saving "
				"the backing files as they are\n",
				strerror(-rc));
			index = NULL;
		}
	}
	objfs_log_max = OBJFS_LOG_ERR - 1;
	rc = index ? objfs_meta_open(index, OBJFS_META_RDONLY, &m, NULL) :
		-ENOENT;
	if (rc == 0)
		rc = objfs_meta_begin(m, 0, &r.c.t);
	if (rc == 0) {
		read_super(&r.c, data_dir, d.dirfd);
		if (!r.c.chunk) {
			r.c.chunk = OBJFS_DEFAULT_CHUNK;
			fprintf(out, "  the chunk size is lost: taking %u\n",
				r.c.chunk);
		}
		rc = objfs_meta_inode_all(r.c.t, add_inode, &r.c);
		if (rc == 0)
			rc = objfs_meta_dirent_all(r.c.t, add_name, &r);
		for (size_t i = 0; rc == 0 && i < r.c.ni; i++)
			if (r.c.iv[i].ok && S_ISREG(r.c.iv[i].a.mode))
				rc = save_file(&r, &r.c.iv[i]);
	}
	if (rc < 0 && rc != -ENOENT && r.c.t) {
		fprintf(out, "  %s\n", strerror(-rc));
		goto out;
	}
	rc = list_backing(d.bdir, save_unverified, &r);
	if (r.c.t)
		rebuild_names(&r);
	fprintf(out, "  saved %" PRIu64 " objects (%" PRIu64 " bytes): %" PRIu64
		" whole, %" PRIu64 " damaged; %" PRIu64 " backing files copied "
		"unverified; %zu names in NAMES and tree/\n", r.saved, r.bytes,
		r.whole, r.damaged, r.unverified, r.nn);
	fprintf(out, "  what each object holds: %s/REPORT\n", dest);
out:
	objfs_log_max = saved_log;
	if (r.report)
		fclose(r.report);
	if (r.c.t)
		objfs_meta_abort(r.c.t);
	if (m)
		objfs_meta_close(m);
	if (r.dfd >= 0)
		close(r.dfd);
	close_dir(&d);
	for (size_t i = 0; i < r.nn; i++)
		free(r.nv[i].name);
	free(r.nv);
	free(r.c.iv);
	if (rc < 0)
		return rc;
	return (int)(r.damaged + r.unverified);
}
