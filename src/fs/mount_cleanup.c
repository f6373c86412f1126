/* SPDX-License-Identifier: MIT */
/*
 * mount_cleanup.c - what a mount does after a daemon that did not stop
 * cleanly: objects unlinked while open are removed (orphans), backing
 * files of deleted objects (tombstones) are swept, and backing-file space
 * no record points at is given back; the index records whether the
 * daemon stopped cleanly.  A backing file the index knows nothing of is
 * never removed.  Called while the store is opened or closed
 * (mount_int.h).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/log.h"
#include "src/base/units.h"
#include "src/fs/mount_int.h"
#include "meta/meta_keys.h"

struct ino_vec {
	uint64_t *v;
	size_t n, cap;
};

static int
collect_ino(void *arg, uint64_t ino)
{
	struct ino_vec *iv = arg;

	if (iv->n == iv->cap) {
		size_t c = iv->cap ? 2 * iv->cap : 64;
		uint64_t *p = realloc(iv->v, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		iv->v = p;
		iv->cap = c;
	}
	iv->v[iv->n++] = ino;
	return 0;
}

/*
 * Backing files of objects that are gone: each has a tombstone in the
 * index (its deletion committed, the unlink of its file not yet done).
 * Remove those, then the tombstones.  A file the index knows nothing of
 * stays, with a warning.
 */
int
mount_sweep_backing(struct objfs_store *s)
{
	struct ino_vec files = { 0 }, tomb = { 0 };
	struct objfs_meta_txn *t;
	struct objfs_attr a;
	size_t removed = 0, unknown = 0;
	int rc;

	rc = objfs_backing_list(s->backing, collect_ino, &files);
	if (rc == 0)
		rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc == 0) {
		rc = objfs_meta_deleted_list(t, collect_ino, &tomb);
		for (size_t i = 0; rc == 0 && i < files.n; i++) {
			rc = objfs_meta_inode_get(t, files.v[i], &a);
			/* A deleted object's file that other objects'
			 * records still share is live too. */
			if (rc == -ENOENT)
				rc = objfs_data_file_shared(t, files.v[i]) == 1 ?
					0 : -ENOENT;
			if (rc == 0) {
				files.v[i] = 0;		/* live */
				continue;
			}
			if (rc != -ENOENT)
				break;
			rc = objfs_meta_deleted_get(t, files.v[i]);
			if (rc == -ENOENT) {
				unknown++;
				files.v[i] = 0;
				rc = 0;
			}
		}
		objfs_meta_abort(t);
	}
	for (size_t i = 0; rc == 0 && i < files.n; i++) {
		if (!files.v[i])
			continue;
		rc = objfs_backing_remove(s->backing, files.v[i]);
		removed++;
	}
	if (rc == 0 && tomb.n && (rc = objfs_meta_begin(s->meta,
			OBJFS_META_ESSENTIAL, &t)) == 0) {
		for (size_t i = 0; rc == 0 && i < tomb.n; i++)
			rc = objfs_meta_deleted_del(t, tomb.v[i]);
		rc = rc < 0 ? (objfs_meta_abort(t), rc) : objfs_meta_commit(t);
	}
	if (removed)
		objfs_log(OBJFS_LOG_INFO, "removed %zu backing file(s) of "
			"objects deleted earlier", removed);
	if (unknown)
		objfs_log(OBJFS_LOG_WARNING, "%zu file(s) in the backing "
			"directory belong to no object the index knows; left "
			"alone (objfsctl check lists them)", unknown);
	free(files.v);
	free(tomb.v);
	return rc;
}

/* Destroy objects that were unlinked but open when the daemon last died. */
static int
reap_once(struct objfs_store *s, size_t *left)
{
	struct ino_vec o = { 0 };
	struct objfs_meta_txn *t;
	int rc;

	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_orphan_list(t, collect_ino, &o);
	objfs_meta_abort(t);
	for (size_t i = 0; rc == 0 && i < o.n; i++) {
		struct objfs_inode *ip;

		rc = objfs_inode_get(s, o.v[i], &ip);
		if (rc == 0) {
			objfs_inode_lock(ip);
			ip->attr.nlink = 0;
			objfs_inode_unlock(ip);
			objfs_inode_put(s, ip);
		} else if (rc == -ENOENT) {
			rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
			if (rc == 0) {
				rc = objfs_meta_orphan_del(t, o.v[i]);
				rc = rc < 0 ? (objfs_meta_abort(t), rc) :
					objfs_meta_commit(t);
			}
		}
	}
	if (rc == 0 && o.n)
		objfs_log(OBJFS_LOG_INFO, "removed %zu unlinked object(s) left "
			"by an earlier run", o.n);
	*left = o.n;
	free(o.v);
	return rc;
}

void
mount_close_orphans(struct objfs_store *s)
{
	struct objfs_inode **v;
	size_t n, k = 0;

	/* The kernel drops the FORGETs (and RELEASEs) still queued when its
	 * connection ends, so an object unlinked while open can end the
	 * session with lookups or opens nobody will ever give back: its
	 * records and backing file stayed until the next mount (issue 46:
	 * every file deleted and unmounted, and blocks left).  Nothing can
	 * reach it any more: its references go, and the last put removes
	 * it as a FORGET would have. */
	if (objfs_inode_snapshot(s, &v, &n) < 0)
		return;		/* the next mount removes them */
	for (size_t i = 0; i < n; i++) {
		struct objfs_inode *ip = v[i];
		int orphan;

		objfs_inode_lock(ip);
		orphan = ip->attr.nlink == 0 && !ip->gone &&
			ip->ino != OBJFS_ROOT_INO;
		if (orphan)
			ip->nopen = 0;
		objfs_inode_unlock(ip);
		if (!orphan)
			continue;
		objfs_store_lock(s);
		ip->nlookup = 0;
		objfs_store_unlock(s);
		k++;
	}
	objfs_inode_put_all(s, v, n);
	if (k)
		objfs_log(OBJFS_LOG_INFO, "unmounting: %zu unlinked object(s) "
			"the kernel still held removed", k);
}

int
mount_reap_orphans(struct objfs_store *s)
{
	size_t left = 0;
	int rc = reap_once(s, &left);

	/* Shared mode: a removal that another mount's commit came before
	 * (-ERESTART, logged) is tried again once this one caught up. */
	for (int round = 0; rc == 0 && left && s->shared && round < 8;
	     round++) {
		rc = s->tier_ops->catch_up(s->tier);
		if (rc == 0)
			rc = reap_once(s, &left);
	}
	return rc;
}

/* Record in the index whether the daemon stopped cleanly. */
int
mount_set_clean(struct objfs_store *s, uint64_t clean)
{
	struct objfs_meta_txn *t;
	int rc;

	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_super_put(t, OBJFS_SUPER_CLEAN, clean);
	return rc < 0 ? (objfs_meta_abort(t), rc) : objfs_meta_commit(t);
}

/*
 * The index says whether the last daemon stopped cleanly; from now on it
 * says no, until objfs_store_close.  After an unclean stop, give back the
 * backing-file space no record points at.
 */
int
mount_mark_unclean(struct objfs_store *s)
{
	struct objfs_meta_txn *t;
	uint64_t clean = 0, freed;
	int rc;

	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_super_get(t, OBJFS_SUPER_CLEAN, &clean);
	objfs_meta_abort(t);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (!clean) {
		freed = s->copy->trim(s);
		if (freed)
			objfs_log(OBJFS_LOG_INFO, "gave back %" PRIu64 " MiB of "
				"backing files that no record points at (left by "
				"a daemon that did not stop cleanly)",
				freed >> 20);
	}
	return mount_set_clean(s, 0);
}

