/* SPDX-License-Identifier: MIT */
/*
 * check.c - objfsctl check (see check.h); recover.c shares its inode
 * table and the opening of the data directory (check_int.h).
 *
 * Offline: the data directory's lock keeps a daemon out meanwhile.  The
 * index is opened read-only (objfs_meta_open with OBJFS_META_RDONLY: the
 * journal is replayed in memory, nothing is committed), after the
 * structural walk in a child process that every open does.  When that
 * walk finds the index damaged, check says so and stops there; recover
 * rebuilds a copy of the index from the records that still verify
 * (objfs_meta_rebuild) and works from the copy.
 *
 * Chunk bytes are read with objfs_backing_read, which verifies each chunk's
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

#include "src/tools/check.h"
#include "src/tools/check_int.h"
#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/local/backing.h"
#include "src/store_int.h"
#include "meta/meta_keys.h"

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

struct ino *
ck_find(struct ck *c, uint64_t ino)
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
int
ck_add_inode(void *arg, uint64_t ino, const struct objfs_attr *a)
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
	struct ino *p = ck_find(c, parent), *x;

	if (!d) {
		problem(c, "directory %" PRIu64 ": a name record is damaged",
			parent);
		return 0;
	}
	if (!p || !p->ok || !S_ISDIR(p->a.mode))
		problem(c, "name '%s' is in %" PRIu64 ", which is not a "
			"directory", d->name, parent);
	x = ck_find(c, d->ino);
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
	if (!c->npc || !bsearch(&key, c->pcv, c->npc, sizeof(key), pc_cmp) ||
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
	struct ino *x = ck_find(c, ino);

	if (x)
		x->orphan = 1;
	return 0;
}

static int
mark_dead(void *arg, uint64_t ino)
{
	struct ck *c = arg;
	struct ino *x = ck_find(c, ino);

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
	else if (!ck_find(c, ino))
		problem(c, "a %s record belongs to inode %" PRIu64 ", which "
			"does not exist", db, ino);
	return 0;
}

/* ---- chunk records against the backing files ------------------------ */

struct chunks {
	struct ck *c;
	uint64_t ino;		/* the file whose records come now */
	int fd, opened;
	struct objfs_slotmap slots;
	unsigned char *buf;
	uint64_t verified, bytes, bad, unread;
	struct shref {			/* every record's copy */
		uint64_t home, slot;
		int foreign;		/* in another object's file */
		int counted;		/* the share DB has its copy */
	} *sh;
	size_t nsh, csh;
	uint64_t shared;	/* foreign ones, counted in the share DB */
};

static void
chunks_done(struct chunks *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	objfs_slots_fini(&k->slots);
}

int
ck_open_backing(int bdir, uint64_t ino)
{
	char name[17];

	snprintf(name, sizeof(name), "%016" PRIx64, ino);
	return bdir < 0 ? -ENOENT : openat(bdir, name, O_RDONLY | O_NOFOLLOW |
			O_CLOEXEC);
}

/* A chunk record of a pool's cache: its object is named by its content
 * (slot and home the two halves of the hash, pool.c). */
static int
check_pool_chunk(struct chunks *k, uint64_t ino, uint64_t idx,
		const struct objfs_chunk_rec *r)
{
	struct ck *c = k->c;
	int rc;

	if (r->has_alt || !r->shift) {
		problem(c, "inode %" PRIu64 " chunk %" PRIu64 ": not a record "
			"of a chunk in the pool (it names a slot)", ino, idx);
		return 0;
	}
	if (objfs_sums_csum(r->tab, r->len, r->shift) != r->csum)
		problem(c, "inode %" PRIu64 " chunk %" PRIu64 ": its sub-block "
			"sums do not match its checksum", ino, idx);
	if (!c->pool) {
		k->unread++;
		return 0;
	}
	rc = c->pool->verify(c->pool->arg, r, k->buf);
	if (rc == 0) {
		k->verified++;
		k->bytes += r->len;
		return 0;
	}
	k->bad++;
	problem(c, "inode %" PRIu64 " chunk %" PRIu64 " (c.%016" PRIx64 "%016"
		PRIx64 "-%x): %s", ino, idx, r->slot, r->home, r->len,
		rc == -ENOENT ? "not in the pool" : rc == -EBADMSG ?
		"its bytes in the pool do not match its checksum" :
		strerror(-rc));
	return rc == -ENOENT || rc == -EBADMSG ? 0 : rc;
}

static int
check_chunk(void *arg, uint64_t ino, uint64_t idx,
		const struct objfs_chunk_rec *r)
{
	struct chunks *k = arg;
	struct ck *c = k->c;
	struct ino *x = ck_find(c, ino);
	struct objfs_alt alt;
	uint64_t home, n;
	int rc, fd;

	if (c->pool_tree) {
		if (!r) {
			problem(c, "inode %" PRIu64 ": a chunk record is damaged",
				ino);
			return 0;
		}
		if (!x) {
			problem(c, "chunk %" PRIu64 " is recorded for inode %"
				PRIu64 ", which does not exist", idx, ino);
			return 0;
		}
		x->recs++;
		if (x->ok && (!S_ISREG(x->a.mode) ||
		    idx * c->chunk >= x->a.size))
			problem(c, "inode %" PRIu64 ": chunk %" PRIu64 " is "
				"recorded past its size (%" PRIu64 ")", ino, idx,
				x->a.size);
		if (r->len > c->chunk) {
			problem(c, "inode %" PRIu64 " chunk %" PRIu64 ": length "
				"%u is more than a chunk", ino, idx, r->len);
			return 0;
		}
		return check_pool_chunk(k, ino, idx, r);
	}

	if (ino != k->ino) {
		chunks_done(k);
		k->ino = ino;
		k->opened = 0;
	}
	/* Opened for the first record in its own file (an object whose
	 * records all share other objects' copies has none). */
	if (!k->opened && !(r && r->home && r->home != ino)) {
		k->opened = 1;
		k->fd = ck_open_backing(c->bdir, ino);
		if (k->fd < 0 && r)
			problem(c, "inode %" PRIu64 ": its chunks are recorded "
				"but its backing file cannot be opened: %s",
				ino, strerror(errno));
	}
	fd = k->fd;
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
	home = r->home && r->home != ino ? r->home : 0;
	{
		/* Every copy's users, counted against the share DB below. */
		if (k->nsh == k->csh) {
			size_t m = k->csh ? 2 * k->csh : 64;
			struct shref *v = realloc(k->sh, m * sizeof(*v));

			if (!v)
				return -ENOMEM;
			k->sh = v;
			k->csh = m;
		}
		k->sh[k->nsh++] = (struct shref){ home ? home : ino, r->slot,
			!!home, 0 };
	}
	rc = home ? 0 : objfs_slots_take(&k->slots, r->slot);
	if (rc == -EEXIST && objfs_meta_share_get(c->t, ino, r->slot, &n) == 0)
		rc = 0;		/* a shared copy of its own */
	if (rc == -EEXIST)
		problem(c, "inode %" PRIu64 " chunk %" PRIu64 ": slot %" PRIu64
			" is used by another chunk too", ino, idx, r->slot);
	if (r->has_alt && objfs_slots_take(&k->slots, r->alt) == -EEXIST)
		problem(c, "inode %" PRIu64 " chunk %" PRIu64 ": its second "
			"slot %" PRIu64 " is used by another chunk too", ino,
			idx, r->alt);
	if (r->home && r->home != ino) {
		fd = ck_open_backing(c->bdir, r->home);
		if (fd < 0) {
			problem(c, "inode %" PRIu64 " chunk %" PRIu64 ": the "
				"backing file of %" PRIu64 ", whose copy it "
				"shares, cannot be opened: %s", ino, idx,
				r->home, strerror(errno));
			return 0;
		}
	}
	if (fd < 0)
		return 0;
	if (r->shift && objfs_sums_csum(r->tab, r->len, r->shift) != r->csum)
		problem(c, "inode %" PRIu64 " chunk %" PRIu64 ": its sub-block "
			"sums do not match its checksum", ino, idx);
	rc = objfs_backing_read(fd, ino, idx, r->slot, objfs_rec_alt(r, &alt),
			c->chunk, k->buf, r->len, r->shift, r->csum);
	if (fd != k->fd)
		close(fd);
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

static int
shref_cmp(const void *a, const void *b)
{
	const struct shref *x = a, *y = b;

	if (x->home != y->home)
		return x->home < y->home ? -1 : 1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* One entry of the share DB against the shared records found (sorted):
 * the count must be theirs, and each is marked counted (home 0). */
static int
check_share(void *arg, uint64_t home, uint64_t slot, uint64_t n)
{
	struct chunks *k = arg;
	struct shref key = { home, slot, 0, 0 }, *p;
	uint64_t have = 0;

	if (n == 0) {
		problem(k->c, "the count of shared copy %" PRIu64 ":%" PRIu64
			" is damaged", home, slot);
		return 0;
	}
	p = k->nsh ? bsearch(&key, k->sh, k->nsh, sizeof(*p), shref_cmp) :
		NULL;
	while (p && p > k->sh && shref_cmp(p - 1, &key) == 0)
		p--;
	for (; p && p < k->sh + k->nsh && shref_cmp(p, &key) == 0; p++) {
		have++;
		p->counted = 1;
		k->shared += p->foreign;
	}
	if (have != n)
		problem(k->c, "shared copy %" PRIu64 ":%" PRIu64 " is counted "
			"%" PRIu64 " times but %" PRIu64 " records point at it",
			home, slot, n, have);
	return 0;
}

/* An entry of the content DB (dedup) names a copy some record points at:
 * one left behind would mean its copy was given back without it. */
static int
check_content(void *arg, uint64_t home, uint64_t slot, int ok)
{
	struct chunks *k = arg;
	struct shref key = { home, slot, 0, 0 };

	if (!ok)
		problem(k->c, "an entry of the content index is damaged");
	else if (!k->nsh || !bsearch(&key, k->sh, k->nsh, sizeof(key),
			shref_cmp))
		problem(k->c, "the content index names copy %" PRIu64 ":%"
			PRIu64 ", which no chunk record points at", home, slot);
	return 0;
}

/* Every record in another object's file is counted in the share DB, and
 * every count is that of the records of its copy. */
static int
check_shares(struct chunks *k)
{
	size_t foreign = 0;
	int rc;

	if (k->nsh)
		qsort(k->sh, k->nsh, sizeof(*k->sh), shref_cmp);
	k->shared = 0;
	rc = objfs_meta_share_all(k->c->t, check_share, k);
	if (rc == 0)
		rc = objfs_meta_content_all(k->c->t, check_content, k);
	for (size_t i = 0; i < k->nsh; i++)
		foreign += k->sh[i].foreign;
	if (rc == 0 && k->shared != foreign)
		problem(k->c, "%zu chunk record(s) point into another object's "
			"file, but only %" PRIu64 " are counted", foreign,
			k->shared);
	return rc;
}

/* ---- the backing directory ------------------------------------------- */

int
ck_list_backing(int bdir, int (*cb)(void *arg, uint64_t ino), void *arg)
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
	struct ino *x = ck_find(c, ino);
	int dead = objfs_meta_deleted_get(c->t, ino) == 0;

	if (!x && objfs_data_file_shared(c->t, ino) == 1)
		return 0;	/* a deleted object's, holding shared copies */
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

int
ck_open_dir(const char *data_dir, struct dir *d, FILE *out)
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
	rc = objfs_store_lock_dir(d->dirfd, &d->lockfd, &holder, NULL, 0);
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

void
ck_close_dir(struct dir *d)
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
void
ck_read_super(struct ck *c, const char *data_dir, int dirfd)
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
	if (schema == 2)
		note(c, "schema 2: the next mount marks it 3 (its chunk "
			"records stay as they are)");
	else if (schema != OBJFS_META_SCHEMA && schema != OBJFS_META_SCHEMA_V3 &&
		 schema != OBJFS_META_SCHEMA_SHARE)
		problem(c, "schema %" PRIu64 ", this objfs reads %u to %u",
			schema, OBJFS_META_SCHEMA_V3, OBJFS_META_SCHEMA_SHARE);
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
	return objfs_check_remote(data_dir, out, NULL);
}

int
objfs_check_remote(const char *data_dir, FILE *out,
		const struct objfs_check_pool *pool)
{
	struct objfs_meta_report rep;
	struct ck c = { .out = out, .bdir = -1, .pool = pool };
	struct chunks k = { .c = &c, .ino = UINT64_MAX, .fd = -1 };
	struct objfs_meta *m = NULL;
	int saved_log = objfs_log_max, rc;
	size_t files = 0;
	struct dir d;

	rc = ck_open_dir(data_dir, &d, out);
	if (rc < 0)
		return rc;
	c.bdir = d.bdir;
	(void)ck_list_backing(d.bdir, count_one, &files);
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
	ck_read_super(&c, data_dir, d.dirfd);
	if (!c.chunk)
		goto out;
	if (objfs_meta_super_get(c.t, "remote_tree", &c.pool_tree) < 0)
		c.pool_tree = 0;
	{
		uint64_t pos;

		/* One of many mounts' caches (-o shared) follows the pool's
		 * log: it knows only names, not who has what open. */
		c.shared = c.pool_tree && objfs_meta_super_get(c.t,
				"remote_pos", &pos) == 0;
	}
	if (c.pool_tree)
		fprintf(out, "  the cache of a pool's tree (%016" PRIx64 ")%s%s\n",
			c.pool_tree, pool ? ": " : "", pool ? pool->name : "");
	else if (pool)
		note(&c, "not mounted with remote=: %s is not its home",
			pool->name);
	if (c.pool_tree && pool && pool->tree)
		c.problems += pool->tree(pool->arg, out, c.pool_tree);
	k.buf = aligned_alloc(OBJFS_BACKING_ALIGN, c.chunk);
	if (!k.buf) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = objfs_meta_inode_all(c.t, ck_add_inode, &c)) < 0 ||
	    (rc = objfs_meta_dirent_all(c.t, add_dirent, &c)) < 0)
		goto out;
	if (c.npc)	/* an empty root has no names */
		qsort(c.pcv, c.npc, sizeof(*c.pcv), pc_cmp);
	if ((rc = objfs_meta_cookie_all(c.t, check_cookie, &c)) < 0 ||
	    (rc = objfs_meta_orphan_list(c.t, mark_orphan, &c)) < 0 ||
	    (rc = objfs_meta_deleted_list(c.t, mark_dead, &c)) < 0 ||
	    (rc = objfs_meta_owner_all(c.t, check_owner, &c)) < 0 ||
	    (rc = objfs_meta_chunk_all(c.t, check_chunk, &k)) < 0 ||
	    (!c.pool_tree && (rc = check_shares(&k)) < 0))
		goto out;
	chunks_done(&k);
	if (!ck_find(&c, OBJFS_ROOT_INO))
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
		if (x->ino != OBJFS_ROOT_INO && !x->names && !x->orphan &&
		    c.shared && x->a.nlink == 0)
			note(&c, "inode %" PRIu64 " has no name: another node "
				"had it open when it was unlinked, and removes "
				"it when it lets it go", x->ino);
		else if (x->ino != OBJFS_ROOT_INO && !x->names && !x->orphan)
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
	(void)ck_list_backing(d.bdir, check_file, &c);
	if (rep.damaged)
		note(&c, "%" PRIu64 " record(s) in all fail their checksum",
			rep.damaged);
	if (c.pool_tree) {
		if (k.unread)
			note(&c, "%" PRIu64 " chunk(s) are in the pool and were not "
				"read: objfsctl check %s --remote rados:POOL[/NS] "
				"(or s3://BUCKET[/PREFIX]) reads and verifies "
				"them", k.unread, data_dir);
		fprintf(out, "  %zu inodes, %zu names, %" PRIu64 " chunks (%"
			PRIu64 " bytes) verified against %s\n", c.ni,
			c.npc, k.verified, k.bytes, pool && pool->name ?
			pool->name : "the remote store's tree");
	} else {
		fprintf(out, "  %zu inodes, %zu names, %" PRIu64 " chunks (%"
			PRIu64 " bytes) verified against their backing files, "
			"%zu backing files\n", c.ni, c.npc, k.verified, k.bytes,
			files);
	}
	rc = 0;
out:
	objfs_log_max = saved_log;
	chunks_done(&k);
	free(k.buf);
	free(k.sh);
	if (c.t)
		objfs_meta_abort(c.t);
	if (m)
		objfs_meta_close(m);
	ck_close_dir(&d);
	free(c.iv);
	free(c.pcv);
	if (rc < 0)
		return rc;
	fprintf(out, "%d problem(s), %d note(s)\n", c.problems, c.notes);
	return c.problems;
}

