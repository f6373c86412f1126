/* SPDX-License-Identifier: MIT */
/*
 * recover.c - objfsctl recover (see check.h): every object whose chunks
 * verify, saved under lost+found by inode number, and the names rebuilt
 * from the directory entries that survive.
 *
 * Offline, like check.c, whose inode table and data-directory opening it
 * shares (check_int.h).  When the index cannot be opened it rebuilds a
 * copy from the records that still verify (objfs_meta_rebuild) and works
 * from the copy; nothing in the data directory changes.
 *
 * Chunk bytes are read with objfs_backing_read, which verifies each chunk's
 * checksum; the core's own log lines are silenced meanwhile, since every
 * finding is printed here.
 *
 * Everything it writes stays beneath DEST, whatever the index says (it may
 * come from whoever could write the data directory, or the pool): DEST is
 * opened without following a link planted at its last component and made
 * 0700; every file is created with O_EXCL|O_NOFOLLOW; names are the index's
 * only if they could be names (objfs_name_ok: no '/', not "." or ".."; the
 * index reads any other as damaged), and the tree/ they rebuild is walked
 * one directory at a time with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS),
 * so no link it made itself (a symlink the index names) is ever followed.
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
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "src/tools/check.h"
#include "src/tools/check_int.h"
#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/local/backing.h"
#include "src/store_int.h"
#include "meta/meta_keys.h"

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

	if (!d || !objfs_name_ok(d->name, d->namelen))
		return 0;	/* damaged: the index says so (check lists it) */
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
	uint64_t ino;
	unsigned char *buf;
	uint64_t found, bad;
};

static int
copy_chunk(void *arg, uint64_t idx, const struct objfs_chunk_rec *rec)
{
	struct copy *k = arg;
	struct rv *r = k->r;
	uint32_t c = r->c.chunk;
	struct objfs_alt alt;
	int in = k->in, rc;

	/* A shared copy is in its home's file (local_dedup.c). */
	if (rec && rec->home && rec->home != k->ino)
		in = ck_open_backing(r->c.bdir, rec->home);
	if (!rec || rec->len > c || in < 0) {
		k->bad++;
		return 0;
	}
	k->found++;
	rc = objfs_backing_read(in, 0, idx, rec->slot, objfs_rec_alt(rec, &alt),
			c, k->buf, rec->len, rec->shift, rec->csum);
	if (in != k->in)
		close(in);
	if (rc < 0) {
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
	struct copy k = { .r = r, .in = -1, .ino = x->ino };
	struct timespec ts[2];
	char tmp[64], name[64];
	int rc;

	snprintf(tmp, sizeof(tmp), "%" PRIu64 ".part", x->ino);
	k.out = openat(r->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			O_CLOEXEC, 0600);
	if (k.out < 0)
		return -errno;
	k.buf = aligned_alloc(OBJFS_BACKING_ALIGN, r->c.chunk);
	if (!k.buf) {
		close(k.out);
		return -ENOMEM;
	}
	k.in = ck_open_backing(r->c.bdir, x->ino);
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
	struct ino *x = ck_find(&r->c, ino);
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
	in = ck_open_backing(r->c.bdir, ino);
	if (in < 0)
		return 0;
	snprintf(name, sizeof(name), "%" PRIu64 ".unverified", ino);
	out = openat(r->dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			O_CLOEXEC, 0600);
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

/* Directory @name in @dfd, made if missing, opened without following a
 * link and without leaving what @dfd is beneath: an fd, or -errno. */
static int
dir_at(int dfd, const char *name)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	long fd;

	if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = syscall(SYS_openat2, dfd, name, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)	/* before Linux 5.6: one component */
		fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW |
				O_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

/* The directory that holds the last component of @path (made, one
 * component at a time, beneath @dfd), and that component in *@last: an
 * fd, or -errno.  @path is modified. */
static int
parent_at(int dfd, char *path, const char **last)
{
	char *p = path, *s;
	int cur = dup(dfd);

	if (cur < 0)
		return -errno;
	while ((s = strchr(p, '/'))) {
		int next;

		*s = '\0';
		next = dir_at(cur, p);
		close(cur);
		if (next < 0)
			return next;
		cur = next;
		p = s + 1;
	}
	*last = p;
	return cur;
}

static void
rebuild_names(struct rv *r)
{
	FILE *names;
	char path[8192], tree[8300], obj[64], tgt[4097];
	const char *last = NULL;
	size_t len;
	int fd = openat(r->dfd, "NAMES", O_WRONLY | O_CREAT | O_EXCL |
			O_NOFOLLOW | O_CLOEXEC, 0600);

	names = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!names)
		return;
	for (size_t i = 0; i < r->nn; i++) {
		struct name *n = &r->nv[i];
		int ok = path_of(r, i, path, sizeof(path), 0), pfd;

		fprintf(names, "%" PRIu64 "\t%s%s\n", n->ino, ok ? "/" :
			"?/", ok ? path : n->name);
		if (!ok)
			continue;
		snprintf(tree, sizeof(tree), "tree/%s", path);
		pfd = parent_at(r->dfd, tree, &last);
		if (pfd < 0) {
			fprintf(r->report, "tree/%s: not made: %s\n", path,
				strerror(-pfd));
			continue;
		}
		if (S_ISDIR(n->type)) {
			int d = dir_at(pfd, last);

			if (d >= 0)
				close(d);
		} else if (S_ISREG(n->type)) {
			snprintf(obj, sizeof(obj), "%" PRIu64, n->ino);
			if (linkat(r->dfd, obj, pfd, last, 0) < 0) {
				snprintf(obj, sizeof(obj), "%" PRIu64 ".damaged",
					n->ino);
				(void)linkat(r->dfd, obj, pfd, last, 0);
			}
		} else if (S_ISLNK(n->type) && objfs_meta_symlink_get(r->c.t,
				n->ino, tgt, sizeof(tgt) - 1, &len) == 0) {
			/* Made, never followed (dir_at). */
			tgt[len < sizeof(tgt) - 1 ? len : sizeof(tgt) - 1] = '\0';
			(void)symlinkat(tgt, pfd, last);
		}
		close(pfd);
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

	rc = ck_open_dir(data_dir, &d, out);
	if (rc < 0)
		return rc;
	r.c.bdir = d.bdir;
	snprintf(dest, sizeof(dest), "%s", dest_arg ? dest_arg : "");
	if (!dest_arg)
		snprintf(dest, sizeof(dest), "%s/lost+found", data_dir);
	/* The default, in the data directory, made there and never a link
	 * (whoever can write the data directory could plant one); a DEST
	 * named by the caller is the caller's path, but not a link at its
	 * end either.  Either is made 0700: it will hold every file's bytes. */
	if ((dest_arg ? mkdir(dest, 0700) : mkdirat(d.dirfd, "lost+found",
			0700)) < 0 && errno != EEXIST) {
		rc = -errno;
		fprintf(out, "%s: %s\n", dest, strerror(-rc));
		goto out;
	}
	r.dfd = dest_arg ? open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			O_CLOEXEC) : openat(d.dirfd, "lost+found", O_RDONLY |
			O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (r.dfd < 0 || fchmod(r.dfd, 0700) < 0) {
		rc = -errno;
		fprintf(out, "%s: %s\n", dest, rc == -ELOOP || rc == -ENOTDIR ?
			"not a directory (a symbolic link is not followed)" :
			strerror(-rc));
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
		snprintf(idx, sizeof(idx), "/proc/self/fd/%d/.index", r.dfd);
		rc = mkdirat(r.dfd, ".index", 0700) < 0 ? -errno :
			objfs_meta_rebuild(d.index, idx, &sr);
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
		ck_read_super(&r.c, data_dir, d.dirfd);
		if (!r.c.chunk) {
			r.c.chunk = OBJFS_DEFAULT_CHUNK;
			fprintf(out, "  the chunk size is lost: taking %u\n",
				r.c.chunk);
		}
		rc = objfs_meta_inode_all(r.c.t, ck_add_inode, &r.c);
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
	rc = ck_list_backing(d.bdir, save_unverified, &r);
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
	ck_close_dir(&d);
	for (size_t i = 0; i < r.nn; i++)
		free(r.nv[i].name);
	free(r.nv);
	free(r.c.iv);
	if (rc < 0)
		return rc;
	return (int)(r.damaged + r.unverified);
}
