/* SPDX-License-Identifier: MIT */
/*
 * dir.c - reading the namespace: a symlink's target and a directory's
 * entries (readdir, and readdirplus, which looks each entry's inode up
 * as a lookup would).  Changing it is namespace.c's.
 *
 * A directory is listed from the index in batches of READDIR_BATCH, each
 * in a read transaction of its own, resumed at the last entry's cookie:
 * no transaction is held while the adapter fills the kernel's buffer.
 * Locking: see store_int.h.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/store_int.h"

int
objfs_store_readlink(struct objfs_store *s, uint64_t ino, char *buf,
		size_t size, size_t *len_out)
{
	OBJFS_CALL(s, ino);
	struct objfs_meta_txn *t;
	struct objfs_attr a;
	int rc;

	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_inode_get(t, ino, &a);
	if (rc == 0 && !S_ISLNK(a.mode))
		rc = -EINVAL;
	if (rc == 0)
		rc = objfs_meta_symlink_get(t, ino, buf, size, len_out);
	objfs_meta_abort(t);
	return rc;
}

/* ---- directories ------------------------------------------------------ */

#define READDIR_BATCH	128

struct dir_batch {
	struct objfs_dirent *v;
	int n;
};

static int
batch_add(void *arg, const struct objfs_dirent *d)
{
	struct dir_batch *b = arg;

	b->v[b->n++] = *d;
	return b->n == READDIR_BATCH;
}

int
objfs_store_readdir(struct objfs_store *s, uint64_t ino, uint64_t off,
		int plus,
		int (*cb)(void *arg, const char *name,
			const struct objfs_attr *a, uint64_t next_off),
		void *arg)
{
	OBJFS_CALL(s, ino);
	struct objfs_meta_txn *t;
	struct objfs_inode *dp, *ip;
	struct dir_batch b;
	struct objfs_attr a;
	uint64_t parent;
	int rc, full = 0;

	/* Shared mode: a directory another node holds is recalled before
	 * its first entries are read (what it made there is listed), also
	 * where it took the directory in a record put before this listing
	 * began and not yet applied here (the log is read up to its end
	 * first, unless this node holds the directory). */
	if (off == 0) {
		rc = objfs_share_dir_read(s, ino);
		if (rc == 0 && s->shared &&
		    (rc = s->tier_ops->view(s->tier)) == 0)
			rc = objfs_share_dir_read(s, ino);
		if (rc < 0)
			return rc;
	}
	rc = objfs_inode_get(s, ino, &dp);
	if (rc < 0)
		return rc;
	objfs_inode_lock(dp);
	a = dp->attr;
	objfs_inode_unlock(dp);
	if (!S_ISDIR(a.mode)) {
		objfs_inode_put(s, dp);
		return -ENOTDIR;
	}
	parent = a.parent ? a.parent : ino;
	if (off == 0) {
		if (cb(arg, ".", &a, 1))
			goto out;
		off = 1;
	}
	if (off == 1) {
		memset(&a, 0, sizeof(a));
		a.mode = S_IFDIR;
		a.ino = parent;
		if (cb(arg, "..", &a, 2))
			goto out;
		off = 2;
	}
	b.v = malloc(READDIR_BATCH * sizeof(*b.v));
	if (!b.v) {
		rc = -ENOMEM;
		goto out;
	}
	while (!full) {
		b.n = 0;
		rc = objfs_meta_begin(s->meta, 0, &t);
		if (rc < 0)
			break;
		rc = objfs_meta_dir_list(t, ino, off, batch_add, &b);
		objfs_meta_abort(t);
		if (rc < 0 || b.n == 0)
			break;
		for (int i = 0; i < b.n && !full; i++) {
			memset(&a, 0, sizeof(a));
			a.ino = b.v[i].ino;
			a.mode = b.v[i].type;
			if (plus) {
				if (objfs_inode_get(s, b.v[i].ino, &ip) < 0) {
					/* removed meanwhile: skip it */
					off = b.v[i].cookie;
					continue;
				}
				objfs_inode_lock(ip);
				a = objfs_inode_attr_out(ip);
				objfs_inode_unlock(ip);
				if (a.nlink == 0) {
					objfs_inode_put(s, ip);
					off = b.v[i].cookie;
					continue;
				}
				objfs_inode_add_lookups(s, ip, 1);
				objfs_inode_put(s, ip);
			}
			full = cb(arg, b.v[i].name, &a, b.v[i].cookie);
			if (full && plus)
				objfs_store_forget(s, b.v[i].ino, 1);
			if (!full)
				off = b.v[i].cookie;
		}
		if (b.n < READDIR_BATCH)
			break;
	}
	free(b.v);
out:
	objfs_inode_put(s, dp);
	return rc;
}
