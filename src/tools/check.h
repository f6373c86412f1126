/* SPDX-License-Identifier: MIT */
/*
 * check.h - offline checking and recovery of a data directory
 * (objfsctl check, objfsctl recover).
 *
 * Both take the data directory's lock, so they refuse to run while a
 * daemon serves it, and neither changes the index or a backing file.
 */
#ifndef OBJFS_CHECK_H
#define OBJFS_CHECK_H

#include <stdio.h>

/*
 * Verify everything: the index's structure and every record's checksum,
 * the namespace (every name points to an inode of its type, link counts,
 * readdir cookies, no inode without a name unless it is an orphan, parent
 * pointers), every chunk record against its backing file and checksum,
 * the count of records per file, and the backing files that belong to no
 * object.  Prints what it finds to @out.  Returns the number of problems
 * (0: none), or a negative errno when it could not check at all
 * (-EBUSY: a daemon serves the directory).
 */
int objfs_check(const char *data_dir, FILE *out);

/*
 * A data directory mounted with remote= is the cache of a pool's tree:
 * its chunk records name objects in the pool, not slots of backing files.
 * Without a way to the pool, check verifies the index and the namespace
 * and says how many chunks it could not read; with @pool, @pool->verify
 * reads each chunk from the pool and checks it against the record's
 * checksum (0, -ENOENT when the pool has no such object, -EBADMSG when
 * its bytes do not match, -errno), and @pool->tree checks the pool's own
 * head, snapshot and log (printing to @out; the number of problems).
 */
struct objfs_chunk_rec;
struct objfs_check_pool {
	const char *name;	/* rados:POOL/NS, for people */
	int (*verify)(void *arg, const struct objfs_chunk_rec *r, void *buf);
	int (*tree)(void *arg, FILE *out, uint64_t tree);
	void *arg;
};
int objfs_check_remote(const char *data_dir, FILE *out,
		const struct objfs_check_pool *pool);

/*
 * Save every object whose bytes can still be read and verified into
 * @dest (made if missing; data_dir/lost+found by default): each regular
 * file as dest/INO with its size, mode and times, ".damaged" appended
 * when some of its chunks failed; backing files no record describes as
 * dest/INO.unverified (copied as they are); dest/NAMES lists every name
 * found (inode, path), and dest/tree/ rebuilds the paths it can, with
 * hard links to the objects.  Works from a damaged index: it is rebuilt
 * from what can be found (objfs_meta_rebuild) into dest/.index.
 * Returns the number of objects that could not be saved whole, or a
 * negative errno.
 */
int objfs_recover(const char *data_dir, const char *dest, FILE *out);

#endif
