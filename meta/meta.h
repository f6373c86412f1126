/* SPDX-License-Identifier: MIT */
/*
 * meta.h - the LMDB index: namespace, attributes, xattrs, chunk records.
 *
 * The only interface to LMDB in objfs; lmdb.h is included by meta.c alone.
 * All functions return 0 or a negative errno:
 *	-ENOENT		no such key (MDB_NOTFOUND)
 *	-EEXIST		key exists where it must not (MDB_KEYEXIST)
 *	-ENOSPC		index map full (MDB_MAP_FULL)
 *	-ENOMEM		allocation failed
 *	-EIO		anything else; logged with mdb_strerror()
 * Out-parameters are written only on success.
 *
 * Transactions: one write transaction at a time (LMDB serialises them),
 * any number of readers.  The environment is opened with MDB_NOTLS, so a
 * transaction may be used by whichever thread began it, and with
 * MDB_NOSYNC: a commit survives the daemon being killed; objfs_meta_sync()
 * makes everything committed survive a machine crash too.
 */
#ifndef OBJFS_META_H
#define OBJFS_META_H

#include <stddef.h>
#include <stdint.h>

#define OBJFS_NAME_MAX		255
#define OBJFS_XATTR_NAME_MAX	255
#define OBJFS_XATTR_SIZE_MAX	65536

struct objfs_meta;
struct objfs_meta_txn;

/* Attributes of one inode, as stored (host byte order). */
struct objfs_attr {
	uint64_t ino;
	uint64_t size;
	uint64_t parent;	/* directories: the containing directory */
	uint64_t rdev;
	int64_t atime_sec;
	int64_t mtime_sec;
	int64_t ctime_sec;
	uint32_t atime_nsec;
	uint32_t mtime_nsec;
	uint32_t ctime_nsec;
	uint32_t mode;
	uint32_t uid;
	uint32_t gid;
	uint32_t nlink;
	uint32_t pad;
};
_Static_assert(sizeof(struct objfs_attr) == 88, "index record layout");

struct objfs_dirent {
	uint64_t ino;
	uint64_t cookie;
	uint32_t type;		/* S_IFMT bits of the target */
	uint32_t namelen;
	char name[OBJFS_NAME_MAX + 1];
};

/* Open (creating if needed) the index in directory @dir. */
int objfs_meta_open(const char *dir, struct objfs_meta **out);
void objfs_meta_close(struct objfs_meta *m);
/* The size of the index's map now: 16 GiB with plain writes; with a
 * writable map, what it has grown to (see meta.c). */
uint64_t objfs_meta_map_size(struct objfs_meta *m);
/* Flush everything committed to stable storage. */
int objfs_meta_sync(struct objfs_meta *m);

/*
 * Begin a transaction: @write 0 reads, OBJFS_META_WRITE writes, and
 * OBJFS_META_ESSENTIAL writes what frees space or records bytes already
 * on disk (unlink, truncate, write-out).  On a full disk, plain writes
 * fail with -ENOSPC first; essential ones may still use the last part of
 * the disk blocks the index keeps reserved, so that deleting files always
 * works.
 */
#define OBJFS_META_WRITE	1
#define OBJFS_META_ESSENTIAL	2
int objfs_meta_begin(struct objfs_meta *m, int write,
		struct objfs_meta_txn **out);
/* Commit and free @t.  On failure @t is freed too (aborted). */
int objfs_meta_commit(struct objfs_meta_txn *t);
void objfs_meta_abort(struct objfs_meta_txn *t);

int objfs_meta_super_get(struct objfs_meta_txn *t, const char *key,
		uint64_t *val);
int objfs_meta_super_put(struct objfs_meta_txn *t, const char *key,
		uint64_t val);

int objfs_meta_inode_get(struct objfs_meta_txn *t, uint64_t ino,
		struct objfs_attr *a);
int objfs_meta_inode_put(struct objfs_meta_txn *t, const struct objfs_attr *a);
/* Delete the inode and everything keyed by it: xattrs, symlink, chunks. */
int objfs_meta_inode_del(struct objfs_meta_txn *t, uint64_t ino);
/* How many inodes the index holds (kept by LMDB: no scan). */
int objfs_meta_inode_count(struct objfs_meta_txn *t, uint64_t *n);

int objfs_meta_dirent_get(struct objfs_meta_txn *t, uint64_t parent,
		const char *name, size_t len, struct objfs_dirent *out);
/* Add an entry; -EEXIST if the name exists.  @cookie must be fresh. */
int objfs_meta_dirent_add(struct objfs_meta_txn *t, uint64_t parent,
		const char *name, size_t len, uint64_t ino, uint32_t type,
		uint64_t cookie);
int objfs_meta_dirent_del(struct objfs_meta_txn *t, uint64_t parent,
		const char *name, size_t len);
/* 0 if @parent has no entries, -ENOTEMPTY otherwise. */
int objfs_meta_dir_empty(struct objfs_meta_txn *t, uint64_t parent);
/*
 * Call @cb for each entry of @parent with cookie > @after, in cookie
 * order, until @cb returns non-zero.  Returns 0 or a negative errno.
 */
int objfs_meta_dir_list(struct objfs_meta_txn *t, uint64_t parent,
		uint64_t after,
		int (*cb)(void *arg, const struct objfs_dirent *d), void *arg);

/* Extended attributes.  get: -ENODATA if absent, -ERANGE if @size short
 * (size 0 asks for the length only). */
int objfs_meta_xattr_get(struct objfs_meta_txn *t, uint64_t ino,
		const char *name, void *buf, size_t size, size_t *len_out);
/* flags: XATTR_CREATE / XATTR_REPLACE semantics. */
int objfs_meta_xattr_set(struct objfs_meta_txn *t, uint64_t ino,
		const char *name, const void *val, size_t len, int flags);
int objfs_meta_xattr_del(struct objfs_meta_txn *t, uint64_t ino,
		const char *name);
/* NUL-separated names into @buf; -ERANGE if @size short, 0 = length. */
int objfs_meta_xattr_list(struct objfs_meta_txn *t, uint64_t ino,
		char *buf, size_t size, size_t *len_out);

int objfs_meta_symlink_put(struct objfs_meta_txn *t, uint64_t ino,
		const char *target, size_t len);
/* Copies at most @size bytes of the target; writes its full length. */
int objfs_meta_symlink_get(struct objfs_meta_txn *t, uint64_t ino,
		char *buf, size_t size, size_t *len_out);

/* Chunk records: the persisted copy of chunk @idx has @len bytes and
 * checksum @csum. */
int objfs_meta_chunk_put(struct objfs_meta_txn *t, uint64_t ino, uint64_t idx,
		uint64_t csum, uint32_t len);
int objfs_meta_chunk_del(struct objfs_meta_txn *t, uint64_t ino, uint64_t idx);
/* Delete every record of @ino with index >= @first. */
int objfs_meta_chunk_del_from(struct objfs_meta_txn *t, uint64_t ino,
		uint64_t first);
int objfs_meta_chunk_list(struct objfs_meta_txn *t, uint64_t ino,
		int (*cb)(void *arg, uint64_t idx, uint64_t csum, uint32_t len),
		void *arg);

/* Every chunk record of every object (for totals). */
int objfs_meta_chunk_total(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t idx, uint64_t csum, uint32_t len),
		void *arg);

/* Orphans: inodes with no name that were still open. */
int objfs_meta_orphan_add(struct objfs_meta_txn *t, uint64_t ino);
int objfs_meta_orphan_del(struct objfs_meta_txn *t, uint64_t ino);
int objfs_meta_orphan_list(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t ino), void *arg);

/* Bytes the index file takes on disk. */
int objfs_meta_size(struct objfs_meta *m, uint64_t *bytes);

#endif
