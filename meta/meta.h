/* SPDX-License-Identifier: MIT */
/*
 * meta.h - the LMDB index: namespace, attributes, xattrs, chunk records.
 *
 * The only interface to LMDB in objfs: lmdb.h is included by meta/'s own
 * files alone (meta_priv.h, and meta.c, open.c, records.c, verify.c and
 * salvage.c through it), never by the core or the adapter.
 * All functions return 0 or a negative errno:
 *	-ENOENT		no such key (MDB_NOTFOUND)
 *	-EEXIST		key exists where it must not (MDB_KEYEXIST)
 *	-ENOSPC		index map or disk full
 *	-ENOMEM		allocation failed
 *	-EIO		a damaged record, or anything else; logged
 * Out-parameters are written only on success.
 *
 * Durability (see meta.c for how): a committed write transaction survives
 * the daemon being killed as soon as objfs_meta_commit() returns; it
 * survives a machine crash once objfs_meta_sync() returns, or once the
 * next checkpoint (objfs_meta_tick(), at most a second later) is done.
 * No crash leaves the index unreadable.
 *
 * Transactions: one at a time in the process; objfs_meta_begin() waits
 * for the one in progress.  The thread that holds one may begin another
 * inside it (a read inside a write or a read, or a write inside a read),
 * never a write inside a write (-EDEADLK).  The index's lock is taken
 * last: never take another lock while holding a transaction.
 */
#ifndef OBJFS_META_H
#define OBJFS_META_H

#include <stddef.h>
#include <stdint.h>

#include "src/base/bits.h"

#define OBJFS_NAME_MAX		255

/* A name a directory entry may have, wherever it comes from (a user, the
 * index on disk, a pool's log or snapshot): 1 to OBJFS_NAME_MAX bytes, no
 * '/' and no NUL, not "." or "..".  Any other is a damaged record: never
 * used, never a path (objfsctl recover builds paths from these). */
static inline int
objfs_name_ok(const char *name, size_t len)
{
	if (len == 0 || len > OBJFS_NAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (name[i] == '/' || name[i] == '\0')
			return 0;
	return !(name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')));
}
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
	uint64_t nrec;		/* regular files: chunk records in the index */
	/* Not in the record (in memory only): the bytes objfs holds for a
	 * regular file, in the arena or on disk (st_blocks); the store sets
	 * it in the attributes it returns, the index reads it as 0. */
	uint64_t held;
};
/* The record: every field up to held. */
#define OBJFS_ATTR_RECORD	96
_Static_assert(offsetof(struct objfs_attr, held) == OBJFS_ATTR_RECORD,
	"index record layout");

struct objfs_dirent {
	uint64_t ino;
	uint64_t cookie;
	uint32_t type;		/* S_IFMT bits of the target */
	uint32_t namelen;
	char name[OBJFS_NAME_MAX + 1];
};

/* Where the disk copy of one chunk is, and what it holds (csum.h). */
struct objfs_chunk_rec {
	uint64_t csum;		/* checksum of its @len bytes */
	uint64_t slot;		/* at byte slot * chunk size of the file */
	uint32_t len;
	uint32_t shift;		/* sub-blocks of 1 << shift bytes; 0: none
				 * (a record from before schema 3) */
	const unsigned char *tab;	/* their sums, objfs_nsums() of them
				 * (shift != 0); valid during the call */
	int has_alt;		/* some sub-blocks may be in slot @alt */
	uint64_t alt;		/* the chunk's second slot (has_alt) */
	uint64_t map[OBJFS_BITS_WORDS];	/* bit i: sub-block i is at its place in
				 * slot @alt, not in slot @slot */
	uint64_t home;		/* 0: @slot is in this object's backing
				 * file; else (schema 5) in object @home's,
				 * a copy shared with it.  Whether a copy is
				 * shared is the share DB's to say (it counts
				 * the records pointing at it).  A record
				 * with a home has sums and no @alt. */
};

/*
 * Open the index in directory @dir.  Its structure is walked first, in a
 * child process (a damaged LMDB file can crash the reader), and the
 * journal is replayed.  @flags: OBJFS_META_CREATE makes a new index when
 * there is none; OBJFS_META_RDONLY changes nothing on disk (the journal
 * is replayed in memory; write transactions are -EROFS).  Errors:
 *	-ENOENT		no index file (and no OBJFS_META_CREATE)
 *	-ENODATA	the index file never got its first commit (empty,
 *			or cut short when it was made): nothing in it
 *	-EPROTO		not an LMDB file, or one this objfs cannot read
 *	-EMEDIUMTYPE	an LMDB file without objfs's DBs (left unchanged)
 *	-EUCLEAN	structurally damaged (objfsctl check says where)
 * and -EACCES, -EROFS, -ENOSPC, -EIO.  *@created says whether this call
 * made a new, empty index.
 */
/* Is there an index in @dir?  0 yes (perhaps damaged), -ENOENT none,
 * -ENODATA a file that never got its first commit; or -errno. */
int objfs_meta_exists(const char *dir);
#define OBJFS_META_CREATE	1
#define OBJFS_META_RDONLY	2
#define OBJFS_META_OUTBOX	4	/* keep every commit for the remote
					 * tier (objfs_meta_outbox_next) */
int objfs_meta_open(const char *dir, int flags, struct objfs_meta **out,
		int *created);
/* Checkpoint and close.  Returns the checkpoint's error: then what was
 * committed is still in the journal, and the next open replays it. */
int objfs_meta_close(struct objfs_meta *m);
/* Make everything committed so far survive a machine crash. */
int objfs_meta_sync(struct objfs_meta *m);
/* Checkpoint when the oldest change not yet checkpointed is @interval_ms
 * old (0: now, if there is anything); called about once a second. */
int objfs_meta_tick(struct objfs_meta *m, unsigned interval_ms);
/* Commits are numbered; everything up to this number would survive a
 * machine crash now. */
uint64_t objfs_meta_durable_seq(struct objfs_meta *m);
/* Bytes the index takes on disk (data file and journal). */
int objfs_meta_size(struct objfs_meta *m, uint64_t *bytes);

/*
 * Begin a transaction: @write 0 reads, OBJFS_META_WRITE writes, and
 * OBJFS_META_ESSENTIAL writes what frees space or records bytes already
 * on disk (unlink, truncate, write-out).  When the disk is too full for
 * the index to checkpoint, plain writes fail with -ENOSPC first;
 * essential ones go on from the disk blocks the index keeps in reserve,
 * so that deleting files keeps working.
 */
#define OBJFS_META_WRITE	1
#define OBJFS_META_ESSENTIAL	2
int objfs_meta_begin(struct objfs_meta *m, int write,
		struct objfs_meta_txn **out);
/* Commit and free @t.  On failure @t is freed too and nothing it did
 * remains.  objfs_meta_commit_seq() also gives the commit's number (for
 * objfs_meta_durable_seq()); a transaction that changed nothing gets the
 * number of the last commit before it. */
int objfs_meta_commit(struct objfs_meta_txn *t);
int objfs_meta_commit_seq(struct objfs_meta_txn *t, uint64_t *seq);
void objfs_meta_abort(struct objfs_meta_txn *t);

int objfs_meta_super_get(struct objfs_meta_txn *t, const char *key,
		uint64_t *val);
int objfs_meta_super_put(struct objfs_meta_txn *t, const char *key,
		uint64_t val);
/* Each super record whose name starts with @prefix, in name order, until
 * @cb returns non-zero (given back). */
int objfs_meta_super_list(struct objfs_meta_txn *t, const char *prefix,
		int (*cb)(void *arg, const char *key, uint64_t val), void *arg);
/* (A key this objfs no longer writes; the tests make older indexes.) */
int objfs_meta_super_del(struct objfs_meta_txn *t, const char *key);

int objfs_meta_inode_get(struct objfs_meta_txn *t, uint64_t ino,
		struct objfs_attr *a);
int objfs_meta_inode_put(struct objfs_meta_txn *t, const struct objfs_attr *a);
/* Delete the inode and everything keyed by it: xattrs, symlink, chunks. */
int objfs_meta_inode_del(struct objfs_meta_txn *t, uint64_t ino);
/* 1 when the index holds no record at all (made, never filled). */
int objfs_meta_empty(struct objfs_meta_txn *t);
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

/* Chunk records: where the persisted copy of chunk @idx is. */
int objfs_meta_chunk_put(struct objfs_meta_txn *t, uint64_t ino, uint64_t idx,
		const struct objfs_chunk_rec *r);
int objfs_meta_chunk_del(struct objfs_meta_txn *t, uint64_t ino, uint64_t idx);
/* The record of chunk @idx, its table of sums copied into @tab (room for
 * OBJFS_SUMS_MAX); -ENOENT when there is none, -EIO when it is damaged. */
int objfs_meta_chunk_get(struct objfs_meta_txn *t, uint64_t ino, uint64_t idx,
		struct objfs_chunk_rec *r, unsigned char *tab);
/* Delete every record of @ino with index >= @first. */
int objfs_meta_chunk_del_from(struct objfs_meta_txn *t, uint64_t ino,
		uint64_t first);
/* Call @cb for each record of @ino in index order; a damaged record
 * comes with @r NULL (its index then cannot be trusted either). */
int objfs_meta_chunk_list(struct objfs_meta_txn *t, uint64_t ino,
		int (*cb)(void *arg, uint64_t idx,
			const struct objfs_chunk_rec *r), void *arg);

/*
 * Shared disk copies (schema 5): slot @slot of object @home's backing
 * file, pointed at by @n chunk records (every one with home == @home).
 * The count changes in the commit that adds or removes such a record,
 * so a crash never leaves it different from the records.  _get: -ENOENT
 * when the copy is not shared; _put with @n 0 deletes the entry.
 */
int objfs_meta_share_get(struct objfs_meta_txn *t, uint64_t home,
		uint64_t slot, uint64_t *n);
int objfs_meta_share_put(struct objfs_meta_txn *t, uint64_t home,
		uint64_t slot, uint64_t n);
/* Each shared copy in @home's backing file, in slot order. */
int objfs_meta_share_list(struct objfs_meta_txn *t, uint64_t home,
		int (*cb)(void *arg, uint64_t slot, uint64_t n), void *arg);
/* Each shared copy of every object; a damaged entry is logged and
 * comes with @n 0. */
int objfs_meta_share_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t home, uint64_t slot, uint64_t n),
		void *arg);

/*
 * What the disk copies hold, for dedup: slot @slot of @home's backing
 * file holds bytes whose chunk checksum is @csum, written for chunk @idx
 * of @home.  An entry is put when a copy is written whole and deleted
 * when its bytes change or it is given back, in the same commit.
 * _set replaces the entry of (home, slot); _del deletes it (0 when there
 * is none); _get: -ENOENT when none; _find calls @cb for each copy with
 * checksum @csum (stop with a positive return).
 */
int objfs_meta_content_set(struct objfs_meta_txn *t, uint64_t home,
		uint64_t slot, uint64_t csum, uint64_t idx);
int objfs_meta_content_del(struct objfs_meta_txn *t, uint64_t home,
		uint64_t slot);
int objfs_meta_content_get(struct objfs_meta_txn *t, uint64_t home,
		uint64_t slot, uint64_t *csum, uint64_t *idx);
int objfs_meta_content_find(struct objfs_meta_txn *t, uint64_t csum,
		int (*cb)(void *arg, uint64_t home, uint64_t slot), void *arg);
/* Every entry (home, slot), for objfsctl check; @ok 0 for a damaged one. */
int objfs_meta_content_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t home, uint64_t slot, int ok),
		void *arg);

/* Orphans: inodes with no name that were still open. */
int objfs_meta_orphan_add(struct objfs_meta_txn *t, uint64_t ino);
int objfs_meta_orphan_del(struct objfs_meta_txn *t, uint64_t ino);
/* 1 when @ino is an orphan of this index (unlinked while open here), 0
 * when not, or -errno. */
int objfs_meta_orphan_has(struct objfs_meta_txn *t, uint64_t ino);
int objfs_meta_orphan_list(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t ino), void *arg);

/* Deleted objects whose backing file may still exist: the positive
 * record that lets a mount remove such a file. */
int objfs_meta_deleted_add(struct objfs_meta_txn *t, uint64_t ino);
int objfs_meta_deleted_del(struct objfs_meta_txn *t, uint64_t ino);
int objfs_meta_deleted_get(struct objfs_meta_txn *t, uint64_t ino);
int objfs_meta_deleted_list(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t ino), void *arg);

/* ---- shipping, for the remote tier (ship.c) ---------------------------- */

/*
 * With OBJFS_META_OUTBOX, each commit's changes (its journal payload,
 * meta_keys.h) stay in the outbox until objfs_meta_outbox_done() takes
 * them: a commit and its outbox entry are durable together.  _next: the
 * first entry numbered above @after, copied into *@buf (malloc'd, the
 * caller frees it); -ENOENT when there is none.
 */
int objfs_meta_outbox_next(struct objfs_meta *m, uint64_t after,
		uint64_t *seq, void **buf, size_t *len);
/* Take the entries numbered up to @upto out (no journal record: after a
 * kill before the next checkpoint they are there again). */
int objfs_meta_outbox_done(struct objfs_meta *m, uint64_t upto);
/* The number of the last commit. */
uint64_t objfs_meta_last_seq(struct objfs_meta *m);
/*
 * The whole index as journal entries (puts), in pieces of about @part
 * bytes, each given to @cb (which returns 0 or -errno to stop), all from
 * one state: the commit it holds in *@seq.  The outbox and the data
 * directory's own super records (id, clean, journal_seq) are left out.
 */
int objfs_meta_dump(struct objfs_meta *m, size_t part,
		int (*cb)(void *arg, const void *p, size_t len), void *arg,
		uint64_t *seq);
/* Apply journal entries (a dump, or a commit's payload) to the index, as
 * they are: every put must carry its record checksum.  Not journaled:
 * durable at the next checkpoint (objfs_meta_checkpoint_now).  On error
 * the index is unusable (-EIO from then on): import into a new index
 * only.  *@entries counts the entries applied. */
int objfs_meta_import(struct objfs_meta *m, const void *p, size_t len,
		uint64_t *entries);
int objfs_meta_checkpoint_now(struct objfs_meta *m);

/*
 * The remote tier's shared mode (src/cluster/shared.c): many mounts of one
 * pool, each commit a record of the pool's one log.  The hook is called
 * in every write commit that changed something, with the index's lock
 * held, before the commit is journaled: @payload is its changes (journal
 * entries), @t the transaction (readable).  It returns 0 to let the
 * commit go on, or a negative errno: the commit then fails whole and
 * nothing of it stays.  When it sets *@pos, the commit also records the
 * super "remote_pos" = *@pos (a key of this data directory's: never in a
 * dump or an import).  NULL removes it.
 */
typedef int (*objfs_meta_hook_fn)(void *arg, struct objfs_meta_txn *t,
		const void *payload, size_t len, uint64_t *pos);
void objfs_meta_set_hook(struct objfs_meta *m, objfs_meta_hook_fn fn,
		void *arg);
/*
 * Shared mode's deferred commits (src/cluster/deleg.c): from inside the
 * hook only, each journaled with the commit that calls it, so a commit
 * and what it puts in or takes out of the outbox reach LMDB together.
 * _defer keeps @p (a commit's entries for the tree) as the outbox's next
 * entry; _take gives every entry, in order, as one run of entries
 * (malloc'd; *@count of them) and takes them out.  Neither may be
 * called before the hook is done with its payload (the journal's buffer
 * it points into may move).  _count: how many wait, in any transaction.
 * _peek gives what _take would, and takes nothing out.
 */
int objfs_meta_hook_defer(struct objfs_meta_txn *t, const void *p,
		size_t len);
int objfs_meta_hook_peek(struct objfs_meta_txn *t, void **buf, size_t *len,
		size_t *count);
int objfs_meta_hook_take(struct objfs_meta_txn *t, void **buf, size_t *len,
		size_t *count);
int objfs_meta_outbox_count(struct objfs_meta_txn *t, size_t *count);
/* Apply journal entries (another mount's commit, as the pool's log has
 * it; every put carries its record checksum) in write transaction @t,
 * as its own changes: journaled with it, all or nothing at its commit.
 * -EIO when an entry is damaged (then abort @t). */
int objfs_meta_apply(struct objfs_meta_txn *t, const void *p, size_t len);
/* Everything of @ino (its inode, chunk, xattr and symlink records) as
 * journal entries that first delete what an index holds of it: applied
 * anywhere, they make @ino exactly this.  *@buf is malloc'd. */
int objfs_meta_inode_entries(struct objfs_meta_txn *t, uint64_t ino,
		void **buf, size_t *len);
/* The DBs as a payload's entries number them, and a walk of a payload:
 * @cb gets each entry (OBJFS_JOURNAL_* op, DB, key, value) and stops it
 * with a non-zero return (given back); -EIO when it is malformed. */
enum { OBJFS_MDB_SUPER, OBJFS_MDB_INODE, OBJFS_MDB_DIRENT,
	OBJFS_MDB_DIRCOOKIE, OBJFS_MDB_XATTR, OBJFS_MDB_SYMLINK,
	OBJFS_MDB_CHUNK, OBJFS_MDB_ORPHAN, OBJFS_MDB_DELETED };
/* Write one entry (OBJFS_JOURNAL_* @op, @db, key, value) at @p, which
 * has room for 8 + @klen + @vlen bytes: that many. */
size_t objfs_meta_entry_put(unsigned char *p, int op, int db, const void *k,
		size_t klen, const void *v, size_t vlen);
int objfs_meta_payload_walk(const void *p, size_t len,
		int (*cb)(void *arg, int op, int db, const unsigned char *k,
			size_t klen, const unsigned char *v, size_t vlen),
		void *arg);

/* ---- whole-index walks, for totals and for objfsctl check ------------- */

/* Every record of every object, damaged ones with @r NULL. */
int objfs_meta_chunk_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t ino, uint64_t idx,
			const struct objfs_chunk_rec *r), void *arg);
/* Every inode; a damaged record comes with @a NULL and @ino from its
 * (untrusted) key. */
int objfs_meta_inode_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t ino, const struct objfs_attr *a),
		void *arg);
/* Every directory entry, from the dirent DB; @d NULL when damaged. */
int objfs_meta_dirent_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t parent,
			const struct objfs_dirent *d), void *arg);
/* Every readdir cookie, with the name it lists; @name NULL if damaged. */
int objfs_meta_cookie_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t parent, uint64_t cookie,
			const char *name, size_t len), void *arg);
/* Owners of every xattr and symlink record; @ok 0 for damaged ones. */
int objfs_meta_owner_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, const char *db, uint64_t ino, int ok),
		void *arg);

/* What a structural walk of an index found (objfs_meta_verify). */
struct objfs_meta_report {
	int status;		/* 0, or the error objfs_meta_open gives */
	char what[160];		/* what was wrong, for people */
	uint64_t records;	/* records walked */
	uint64_t damaged;	/* records whose checksum does not match */
	uint64_t pages;		/* pages the data file has in use */
	uint64_t journal_records; /* records the journal would replay */
	unsigned schema;	/* 1: written before records had checksums
				 * (opening converts it), else 2 */
};
/* Walk the index in @dir without changing it, in a child process.  0
 * when the walk could run (the verdict is in @r), or -errno. */
int objfs_meta_verify(const char *dir, struct objfs_meta_report *r);

/* What objfs_meta_rebuild found. */
struct objfs_meta_salvage_report {
	uint64_t pages;		/* pages of the data file */
	uint64_t live;		/* records found in the live trees */
	uint64_t stray;		/* records found in pages no tree reached */
	uint64_t freed;		/* stale ones from freed pages, used for keys
				 * found nowhere else */
	uint64_t damaged;	/* records in the live trees that fail their
				 * checksum (not used) */
	uint64_t journal;	/* journal records applied on top */
	int whole;		/* the live trees were whole, so only their
				 * records were taken (stray and freed 0) */
};
/*
 * Rebuild the index in @from, however damaged, into a new index in @to
 * (an existing empty directory), without trusting LMDB's pages: every
 * record of the live trees whose checksum holds, and, only when those
 * trees are cut (a page lost or damaged), every record found elsewhere
 * for a key they lack, stray pages' before the free list's stale copies;
 * the journal's records since the last checkpoint on top.  Changes nothing in @from.  0 or -errno.
 */
int objfs_meta_rebuild(const char *from, const char *to,
		struct objfs_meta_salvage_report *r);

#endif
