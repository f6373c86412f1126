/* SPDX-License-Identifier: MIT */
/*
 * crashcheck DATA OUT - open a crash image (a data directory) as a mount
 * would, without FUSE, and copy every file, directory and symlink it
 * holds into OUT, with "user.*" xattrs in OUT/.xattrs and the paths of
 * sealed files in OUT/.sealed.  For the crash
 * simulator (sim.py), which then compares OUT with what was acknowledged.
 *
 * Before the store is opened, and again after it is closed, the image
 * must pass objfsctl check (objfs_check): the crash must have left it
 * consistent, and the mount must leave it so.
 *
 * Exit status: 0 when the image passed both checks, the store opened and
 * every object read back; 1 when it refused to open (the reason on
 * stderr); 2 when some object could not be read (each named on stderr);
 * 4 when a check found problems (its report on stderr).  Test-only code.
 */
#include <config.h>

#include <errno.h>
#include <linux/fs.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/tools/check.h"
#include "src/store.h"

struct ent {
	char name[OBJFS_NAME_MAX + 1];
	struct objfs_attr a;
};

struct list {
	struct ent *v;
	size_t n, cap;
};

static struct objfs_store *st;
static FILE *xattrs, *sealed;
static int bad;

static int
add(void *arg, const char *name, const struct objfs_attr *a, uint64_t next)
{
	struct list *l = arg;

	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			exit(3);
	}
	snprintf(l->v[l->n].name, sizeof(l->v[l->n].name), "%s", name);
	l->v[l->n].a = *a;
	l->n++;
	return 0;
}

static void
fail(const char *path, const char *what, int rc)
{
	fprintf(stderr, "crashcheck: %s: %s: %s\n", path, what, strerror(-rc));
	bad = 1;
}

static void
copy_file(uint64_t ino, const char *rel, const char *out, uint64_t size)
{
	static char buf[1 << 20];
	uint64_t off = 0;
	size_t n;
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), rc;

	if (fd < 0) {
		perror(out);
		exit(3);
	}
	while (off < size) {
		rc = objfs_store_read(st, ino, off, buf, sizeof(buf), &n);
		if (rc < 0) {
			fail(rel, "read", rc);
			break;
		}
		if (n == 0)
			break;
		if (write(fd, buf, n) != (ssize_t)n)
			exit(3);
		off += n;
	}
	close(fd);
}

static void
walk(uint64_t dir, const char *rel, const char *out)
{
	struct list l = { 0 };
	char p[4096], o[4096], target[4097], val[4096];
	size_t len;
	int rc;

	rc = objfs_store_readdir(st, dir, 0, 1, add, &l);
	if (rc < 0) {
		fail(rel, "readdir", rc);
		return;
	}
	for (size_t i = 0; i < l.n; i++) {
		struct objfs_attr a;

		snprintf(p, sizeof(p), "%s%s%s", rel, *rel ? "/" : "",
				l.v[i].name);
		snprintf(o, sizeof(o), "%s/%s", out, l.v[i].name);
		rc = objfs_store_lookup(st, dir, l.v[i].name, &a);
		if (rc < 0) {
			fail(p, "lookup", rc);
			continue;
		}
		rc = objfs_store_getxattr(st, a.ino, "user.tag", val,
				sizeof(val) - 1, &len);
		if (rc == 0) {
			val[len] = '\0';
			fprintf(xattrs, "%s\t%s\n", p, val);
		} else if (rc != -ENODATA) {
			fail(p, "getxattr", rc);
		}
		if (S_ISDIR(a.mode)) {
			if (mkdir(o, 0700) < 0)
				exit(3);
			walk(a.ino, p, o);
		} else if (S_ISREG(a.mode)) {
			unsigned flags = 0;

			rc = objfs_store_get_flags(st, a.ino, &flags);
			if (rc < 0)
				fail(p, "get_flags", rc);
			else if (flags & FS_IMMUTABLE_FL)
				fprintf(sealed, "%s\n", p);
			copy_file(a.ino, p, o, a.size);
		} else if (S_ISLNK(a.mode)) {
			rc = objfs_store_readlink(st, a.ino, target,
					sizeof(target) - 1, &len);
			if (rc < 0) {
				fail(p, "readlink", rc);
				continue;
			}
			target[len] = '\0';
			if (symlink(target, o) < 0)
				exit(3);
		}
		objfs_store_forget(st, a.ino, 2);	/* lookup, readdirplus */
	}
	free(l.v);
}

/* objfsctl check on @dir; its report goes to stderr if it finds
 * anything wrong. */
static int
check(const char *dir, const char *when)
{
	FILE *f = tmpfile();
	char line[1024];
	int rc;

	if (!f)
		exit(3);
	rc = objfs_check(dir, f);
	if (rc != 0) {
		fprintf(stderr, "crashcheck: %s: objfsctl check %s: %s\n", dir,
			when, rc < 0 ? strerror(-rc) : "problems found");
		rewind(f);
		while (fgets(line, sizeof(line), f))
			fputs(line, stderr);
	}
	fclose(f);
	return rc;
}

int
main(int argc, char **argv)
{
	struct objfs_store_config cfg;
	const char *msg = NULL;
	char path[4096];
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: crashcheck DATA OUT\n");
		return 3;
	}
	if (check(argv[1], "of the image as the crash left it"))
		return 4;
	memset(&cfg, 0, sizeof(cfg));
	cfg.data_dir = argv[1];
	cfg.arena_size = 16u << 20;
	rc = objfs_store_open(&cfg, &st, &msg, NULL);
	if (rc < 0) {
		fprintf(stderr, "crashcheck: %s: %s: %s\n", argv[1],
			msg ? msg : "cannot open", strerror(-rc));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/.xattrs", argv[2]);
	xattrs = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/.sealed", argv[2]);
	sealed = fopen(path, "w");
	if (!xattrs || !sealed)
		return 3;
	walk(OBJFS_ROOT_INO, "", argv[2]);
	fclose(xattrs);
	fclose(sealed);
	rc = objfs_store_close(st);
	if (rc < 0)
		fail(argv[1], "close", rc);
	if (bad)
		return 2;
	return check(argv[1], "after the mount") ? 4 : 0;
}
