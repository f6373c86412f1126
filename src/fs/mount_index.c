/* SPDX-License-Identifier: MIT */
/*
 * mount_index.c - the index of a data directory at mount (mount_int.h):
 * opened, or made when there is none (never over backing files it does
 * not know), built from the pool with the remote tier (tier.h), checked
 * (schema, chunk and sub-block sizes) and tied to the data directory by
 * its id.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/base/rand.h"
#include "src/fs/mount_int.h"
#include "meta/meta_keys.h"

/* A new data directory's number, to tell its index from another's. */
static uint64_t
new_dir_id(void)
{
	return objfs_random64();
}

static int
count_file(void *arg, uint64_t ino)
{
	(*(size_t *)arg)++;
	return 0;
}

/* How many object files the backing directory holds, in *@n.  An index
 * is made anew only when this says none: a directory that cannot be read
 * is an error, never "empty". */
static int
backing_objects(struct objfs_store *s, size_t *n)
{
	*n = 0;
	return objfs_backing_list(s->backing, count_file, n);
}

int
mount_init_or_check_index(struct objfs_store *s, int created, uint32_t want_chunk,
		uint64_t *id, const char **msg)
{
	struct objfs_meta_txn *t;
	struct objfs_attr root;
	uint64_t schema, chunk, ninodes, sub;
	size_t objects;
	int rc;

	/* Reading, unless there is something to write: a mount on a full
	 * disk must still work. */
	rc = objfs_meta_begin(s->meta, created ? OBJFS_META_ESSENTIAL : 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_super_get(t, OBJFS_SUPER_SCHEMA, &schema);
	if (rc == -ENOENT && !created && !objfs_meta_empty(t)) {
		*msg = "the index is an LMDB file but not an objfs index";
		rc = -EMEDIUMTYPE;
		goto err_abort;
	}
	if (rc == -ENOENT && !created) {
		int r = backing_objects(s, &objects);

		if (r < 0 || objects) {
			*msg = r < 0 ? "the index is empty and the backing "
				"directory cannot be read; refusing to mount "
				"(nothing was changed)" :
				"the index is empty, but backing/ holds object "
				"files; refusing to mount (nothing was "
				"changed): restore index/ from a copy, or run "
				"'objfsctl recover' to save the objects";
			rc = r < 0 ? r : -EUCLEAN;
			goto err_abort;
		}
	}
	if (rc == -ENOENT && !created) {
		/* Made by a first mount that did not get to fill it. */
		objfs_log(OBJFS_LOG_INFO, "the index was left empty by a first "
			"mount cut short; making it now");
		objfs_meta_abort(t);
		return mount_init_or_check_index(s, 1, want_chunk, id, msg);
	}
	if (rc == -ENOENT) {
		/* A new data directory. */
		chunk = want_chunk ? want_chunk : OBJFS_DEFAULT_CHUNK;
		memset(&root, 0, sizeof(root));
		root.ino = OBJFS_ROOT_INO;
		root.parent = OBJFS_ROOT_INO;
		root.mode = S_IFDIR | 0755;
		root.uid = (uint32_t)getuid();
		root.gid = (uint32_t)getgid();
		root.nlink = 2;
		objfs_attr_touch_mc(&root);
		root.atime_sec = root.mtime_sec;
		root.atime_nsec = root.mtime_nsec;
		if ((rc = objfs_meta_super_put(t, OBJFS_SUPER_SCHEMA,
					OBJFS_META_SCHEMA)) < 0 ||
		    (rc = objfs_meta_super_put(t, OBJFS_SUPER_CHUNK, chunk)) < 0 ||
		    (rc = objfs_meta_super_put(t, OBJFS_SUPER_SUB_SHIFT,
				objfs_sub_shift((uint32_t)chunk,
					OBJFS_SUMS_MAX))) < 0 ||
		    (rc = objfs_meta_super_put(t, OBJFS_SUPER_NEXT_INO, 2)) < 0 ||
		    (rc = objfs_meta_super_put(t, OBJFS_SUPER_NEXT_COOKIE,
					FIRST_COOKIE)) < 0 ||
		    (rc = objfs_meta_super_put(t, OBJFS_SUPER_ID,
					new_dir_id())) < 0 ||
		    (rc = objfs_meta_inode_put(t, &root)) < 0)
			goto err_abort;
		rc = objfs_meta_commit(t);
		/* Durable before the data directory's id file is made. */
		if (rc == 0)
			rc = objfs_meta_sync(s->meta);
		if (rc < 0)
			return rc;
		return mount_init_or_check_index(s, 0, 0, id, msg);
	}
	if (rc < 0)
		goto err_abort;
	if (schema == 2) {
		/* Schema 2 has the same records without sub-block sums: they
		 * are read whole, and every chunk written from now on gets
		 * sums.  Marked 3, so that an objfs that would take the new
		 * records for damaged ones refuses the index instead. */
		objfs_meta_abort(t);
		rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
		if (rc < 0)
			return rc;
		rc = objfs_meta_super_put(t, OBJFS_SUPER_SCHEMA,
				OBJFS_META_SCHEMA_V3);
		if (rc < 0)
			goto err_abort;
		objfs_log(OBJFS_LOG_INFO, "index: schema 2 taken up as 3 "
			"(chunks written from now on carry sub-block "
			"checksums)");
	} else if (schema != OBJFS_META_SCHEMA &&
		   schema != OBJFS_META_SCHEMA_V3 &&
		   schema != OBJFS_META_SCHEMA_SHARE) {
		*msg = "the index was written by an incompatible objfs version";
		rc = -EPROTO;
		goto err_abort;
	}
	/* A pool's cache names chunks in the pool, not slots of backing/:
	 * only a mount with that pool can read it (tier.c). */
	if (!s->tier) {
		uint64_t tree;

		rc = objfs_meta_super_get(t, "remote_tree", &tree);
		if (rc == 0) {
			*msg = "this data directory is the cache of a tree in a "
				"Ceph pool (it was mounted with remote=): mount "
				"it with the same remote= option";
			rc = -EXDEV;
			goto err_abort;
		}
		if (rc != -ENOENT)
			goto err_abort;
	}
	rc = objfs_meta_super_get(t, OBJFS_SUPER_ID, id);
	if (rc == -ENOENT) {
		/* Converted from schema 1, which had none: one now. */
		objfs_meta_abort(t);
		rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
		if (rc < 0)
			return rc;
		*id = new_dir_id();
		rc = objfs_meta_super_put(t, OBJFS_SUPER_ID, *id);
	}
	if (rc < 0 ||
	    (rc = objfs_meta_super_get(t, OBJFS_SUPER_CHUNK, &chunk)) < 0 ||
	    (rc = objfs_meta_super_get(t, OBJFS_SUPER_NEXT_INO,
				&s->next_ino)) < 0 ||
	    (rc = objfs_meta_super_get(t, OBJFS_SUPER_NEXT_COOKIE,
				&s->next_cookie)) < 0 ||
	    (rc = objfs_meta_inode_count(t, &ninodes)) < 0)
		goto err_abort;
	/* Made before schema 4: a 128th of a chunk.  (A schema 4 index
	 * whose record went, in a salvage say, had the one size schema 4
	 * makes.) */
	rc = objfs_meta_super_get(t, OBJFS_SUPER_SUB_SHIFT, &sub);
	if (rc == -ENOENT)
		sub = objfs_sub_shift((uint32_t)chunk,
				schema >= OBJFS_META_SCHEMA ?
				OBJFS_SUMS_MAX : OBJFS_SUMS_V3);
	else if (rc < 0)
		goto err_abort;
	atomic_store(&s->ninodes, ninodes);
	s->schema = (unsigned)(schema == 2 ? OBJFS_META_SCHEMA_V3 : schema);
	rc = objfs_meta_commit(t);
	if (rc < 0)
		return rc;
	if (sub < OBJFS_SUMS_MIN_SHIFT || sub > 30 || chunk > (1u << 30) ||
	    objfs_nsums((uint32_t)chunk, (unsigned)sub) > OBJFS_SUMS_MAX) {
		*msg = "the index's sub-block size is not one objfs makes";
		return -EPROTO;
	}
	s->sub_shift = (unsigned)sub;
	if (want_chunk && want_chunk != chunk) {
		static _Thread_local char why[160];

		snprintf(why, sizeof(why), "chunk size %" PRIu64 " KiB differs "
			"from the %" PRIu64 " KiB this data directory was "
			"created with (leave chunk= out to use it)",
			(uint64_t)want_chunk >> 10, chunk >> 10);
		*msg = why;
		return -EINVAL;
	}
	s->chunk_size = (uint32_t)chunk;
	return 0;

err_abort:
	objfs_meta_abort(t);
	return rc;
}

/* The id the backing directory was made for, in backing/id: the index
 * must carry the same one.  Written when missing (a new directory, or
 * one converted from schema 1). */
int
mount_check_dir_id(struct objfs_store *s, int dirfd, uint64_t id,
		const char **msg)
{
	char buf[64], want[32];
	ssize_t n;
	int fd, rc = 0;

	snprintf(want, sizeof(want), "%016" PRIx64 "\n", id);
	fd = openat(dirfd, "id", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n >= 0) {
			buf[n] = '\0';
			if (strcmp(buf, want) == 0)
				return 0;
		}
		*msg = "the index belongs to another data directory (backing/id "
			"differs); refusing to use one with the other's files";
		return -EXDEV;
	}
	if (errno != ENOENT)
		return -errno;
	fd = openat(dirfd, "id.new", O_WRONLY | O_CREAT | O_TRUNC |
			O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, want, strlen(want)) != (ssize_t)strlen(want) ||
	    fsync(fd) < 0)
		rc = errno ? -errno : -EIO;
	close(fd);
	if (rc == 0 && renameat(dirfd, "id.new", dirfd, "id") < 0)
		rc = -errno;
	if (rc == 0)
		rc = objfs_backing_sync_dir(s->backing);
	return rc;
}

static int
open_index(struct objfs_store *s, const char *path, int *created,
		const char **msg)
{
	static char why[256];
	size_t objects = 0;
	char file[4200];
	int rc, r;

	rc = objfs_meta_open(path, s->meta_flags, &s->meta, created);
	if (rc == 0)
		return 0;
	if (rc != -ENOENT && rc != -ENODATA) {
		*msg = rc == -EPROTO ? "index/data.mdb is not an index this objfs "
			"can read; refusing to mount (nothing was changed; if it "
			"was one, 'objfsctl recover' saves the objects)" :
			rc == -EMEDIUMTYPE ? "index/data.mdb is an LMDB file but not "
			"an objfs index; refusing to mount (nothing was changed)" :
			rc == -EUCLEAN ? "the index is damaged; refusing to mount "
			"(nothing was changed): run 'objfsctl check' on the data "
			"directory, and 'objfsctl recover' to save the objects" :
			"cannot open the index";
		return rc;
	}
	r = backing_objects(s, &objects);
	if (r < 0) {
		snprintf(why, sizeof(why), "the index is %s and the backing "
			"directory cannot be read; refusing to mount (nothing "
			"was changed)", rc == -ENOENT ? "missing" : "empty");
		*msg = why;
		return r;
	}
	if (objects) {
		snprintf(why, sizeof(why), "the index is %s, but backing/ holds "
			"%zu object file(s); refusing to mount (nothing was "
			"changed): restore index/ from a copy, or run 'objfsctl "
			"recover' to save the objects", rc == -ENOENT ?
			"missing" : "empty", objects);
		*msg = why;
		return -EUCLEAN;
	}
	if (rc == -ENODATA) {
		/* An empty file and no objects: a first mount cut short. */
		snprintf(file, sizeof(file), "%s/data.mdb", path);
		if (unlink(file) < 0)
			return -errno;
	}
	rc = objfs_meta_open(path, OBJFS_META_CREATE | s->meta_flags, &s->meta,
			created);
	if (rc < 0)
		*msg = "cannot create the index";
	return rc;
}

/*
 * With the remote tier, the index is the pool's tree: built from the
 * pool when the data directory has none, and built anew when the one it
 * has is stale (another mount had the namespace since), the old one kept
 * beside it as index.stale.<time>.
 */
static int
open_tier_index(struct objfs_store *s, const char *path, int *created,
		const char **msg)
{
	static _Thread_local char why[400];
	char aside[4200];
	int rc, stale = 0;

	why[0] = '\0';
	if (objfs_meta_exists(path) != 0) {
		rc = s->tier_ops->prepare(s->tier, path, NULL, &stale, why,
				sizeof(why));
		if (rc < 0)
			goto fail;
	}
	rc = open_index(s, path, created, msg);
	if (rc < 0)
		return rc;
	rc = s->tier_ops->prepare(s->tier, path, s->meta, &stale, why,
			sizeof(why));
	if (rc < 0 || !stale)
		goto fail;
	objfs_meta_close(s->meta);
	s->meta = NULL;
	snprintf(aside, sizeof(aside), "%s.stale.%ld", path, (long)time(NULL));
	if (rename(path, aside) < 0 || mkdir(path, 0700) < 0) {
		rc = -errno;
		snprintf(why, sizeof(why), "cannot move the stale index aside "
			"(index.stale.*): %s", strerror(-rc));
		goto fail;
	}
	objfs_log(OBJFS_LOG_INFO, "remote: the stale index is kept as %s", aside);
	/* The new index gets a new id: the data directory's goes. */
	snprintf(aside, sizeof(aside), "%s/id", s->data_dir);
	if (unlink(aside) < 0 && errno != ENOENT) {
		rc = -errno;
		goto fail;
	}
	rc = s->tier_ops->prepare(s->tier, path, NULL, &stale, why,
			sizeof(why));
	if (rc == 0)
		return open_index(s, path, created, msg);
fail:
	if (rc < 0 && why[0])
		*msg = why;
	if (rc < 0 && s->meta) {
		objfs_meta_close(s->meta);
		s->meta = NULL;
	}
	return rc;
}


int
mount_open_index(struct objfs_store *s, const char *path, int *created,
		const char **msg)
{
	return s->tier ? open_tier_index(s, path, created, msg) :
		open_index(s, path, created, msg);
}
