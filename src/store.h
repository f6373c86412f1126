/* SPDX-License-Identifier: MIT */
/*
 * store.h - the object store facade: everything the FUSE adapter calls.
 *
 * Objects are identified by their inode number (1 is the root directory),
 * stable across remounts and never reused.  Every function returns 0 or a
 * negative errno, the one a local filesystem would give; out-parameters
 * are written only on success.  All functions are thread-safe.
 *
 * Lookup counts follow the kernel's: lookup, mknod, mkdir, symlink, link,
 * create and each entry of a readdirplus add one; forget removes n.  An
 * unlinked object lives until its last lookup is forgotten and its last
 * open is released.
 */
#ifndef OBJFS_STORE_H
#define OBJFS_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <sys/types.h>

#include "meta/meta.h"

#define OBJFS_ROOT_INO		1
#define OBJFS_DEFAULT_CHUNK	(1u << 20)
/* The largest file: 2^22 chunks (4 TiB with 1 MiB chunks), 16 TiB at
 * most.  Writes and truncates past it fail with EFBIG. */
#define OBJFS_MAX_CHUNKS_SHIFT	22
#define OBJFS_MAX_FILE_SIZE	(1ull << 44)

struct objfs_store;

struct objfs_tier_ops;

struct objfs_store_config {
	const char *data_dir;	/* holds index/, backing/ and lock */
	uint64_t arena_size;	/* bytes */
	uint32_t chunk_size;	/* 0: the data directory's, or the default */
	int prefault;		/* fault the arena in at open */
	int keep_arena;		/* close: leave the arena for the next mount */
	const char *arena_dir;	/* NULL: /dev/shm */
	unsigned spill_high;	/* % of the arena: start spilling (0: 90) */
	unsigned spill_low;	/* % of the arena: stop spilling (0: 70) */
	unsigned sealed_max;	/* % of the arena that per-object files of
				 * sealed objects and pins may take (0: 50) */
	int sealed_small;	/* their pages: memfds, not the private
				 * tmpfs of 2 MiB pages (sealed.c) */
	int no_dedup;		/* write equal chunks twice (-o dedup=off) */
	/* The remote tier (tier.h), or NULL: a local tree. */
	const struct objfs_tier_ops *tier_ops;
	const char *remote;	/* rados:POOL[/NAMESPACE] */
	const char *remote_conf;	/* NULL: /etc/ceph/ceph.conf */
	const char *remote_id;	/* the cephx user; NULL: admin */
	const char *remote_endpoint;	/* S3: the service's URL, or NULL */
	const char *remote_addressing;	/* S3: path, virtual, NULL: auto */
	int remote_insecure;		/* S3: http:// accepted */
	unsigned remote_timeout;	/* s; 0: 30 */
	unsigned remote_hold;	/* s; 0: 30 */
	int remote_shared;	/* -o shared: one of many mounts */
	unsigned remote_lease;	/* s; 0: remote_hold */
	long remote_batch_ms;	/* shared: changes in a held directory wait
				 * up to this long (0: no directory held) */
	long remote_compact;	/* shared: compact after this many log
				 * records (0 never, < 0 the default) */
};

struct objfs_cred {
	uint32_t uid;
	uint32_t gid;
};

/* setattr: which fields of struct objfs_setattr apply */
#define OBJFS_SET_MODE		0x01u
#define OBJFS_SET_UID		0x02u
#define OBJFS_SET_GID		0x04u
#define OBJFS_SET_SIZE		0x08u
#define OBJFS_SET_ATIME		0x10u
#define OBJFS_SET_MTIME		0x20u
#define OBJFS_SET_ATIME_NOW	0x40u
#define OBJFS_SET_MTIME_NOW	0x80u
#define OBJFS_SET_CTIME		0x100u

struct objfs_setattr {
	unsigned valid;
	uint32_t mode, uid, gid;
	uint64_t size;
	int64_t atime_sec, mtime_sec, ctime_sec;
	uint32_t atime_nsec, mtime_nsec, ctime_nsec;
	int32_t pid;		/* the caller (CAP_FSETID on truncate), or 0 */
};

struct objfs_statfs {
	uint64_t bsize;
	uint64_t blocks, bfree, bavail;
	uint64_t files, ffree;
	uint64_t namemax;
};

/* Status of the whole store (also served as text by objfs_store_status). */
struct objfs_store_stats {
	uint64_t arena_capacity, arena_used;
	uint64_t resident_bytes;	/* in the arena (== arena_used) */
	uint64_t chunk_size;
	uint64_t written_out_chunks, written_out_bytes;
	uint64_t restored_chunks, restored_bytes;
	uint64_t direct_reads;	/* chunks read from disk without restoring */
	uint64_t part_reads;	/* parts of chunks read from disk alone */
	uint64_t dirty_bytes;	/* in the arena, not yet on disk */
	uint64_t sub_writeouts;	/* chunks written out as a few sub-blocks */
	uint64_t shared_chunks;	/* chunks copies shared instead of copying */
	uint64_t made_durable_bytes;	/* write-out: written, or found on
					 * disk already (dedup) */
	uint64_t dedup_chunks;	/* chunks written out as a copy on disk
				 * already held (dedup) */
	uint64_t csum_failures;
	uint64_t evictions;	/* eviction batches that wrote chunks out */
	uint64_t dropped_bytes;	/* arena bytes freed by the spiller */
	uint64_t write_waits;	/* times a writer waited for room */
	uint64_t spill_high, spill_low;	/* watermarks, bytes */
	uint64_t inodes_cached;
};

/*
 * Open the data directory (creating it 0700 if needed), lock it against a
 * second daemon (-EBUSY, with the holder's pid in *holder when known),
 * open the index, create the arena.  On error *msg (if non-NULL) points to
 * a static text naming what failed.  A shared mount whose last daemon's
 * unshipped changes were refused is opened twice: the second builds the
 * index anew from the pool.
 */
int objfs_store_open(const struct objfs_store_config *cfg,
		struct objfs_store **out, const char **msg, long *holder);
/* Record the calling process's pid in the data directory's lock file
 * (after daemonizing, so that a refused second mount names the daemon). */
void objfs_store_note_pid(struct objfs_store *s);
/* Write every object's bytes out, commit, sync and free everything. */
int objfs_store_close(struct objfs_store *s);
/* Something outside the store failed (the request loop): the daemon will
 * exit 1, and the lock file says so at close. */
void objfs_store_note_failure(struct objfs_store *s);
/* Write every dirty chunk and attribute out and make it durable. */
int objfs_store_sync_all(struct objfs_store *s);
/* The status file's text, NUL-terminated (OBJFS_STATUS_MAX bytes hold
 * it); its length without the NUL in *@len. */
#define OBJFS_STATUS_MAX	(16384 + 4096)
int objfs_store_status_text(struct objfs_store *s, char *text, size_t size,
		size_t *len);
struct objfs_iov;
/* The status file's text as a reader sees it: with @owner 0 (a reader
 * who is neither the mount's owner nor root), without the lines that name
 * places and processes (pid, data, log, arena, remote, the S3 endpoint).
 * Otherwise as objfs_store_read_reply. */
int objfs_store_read_status(struct objfs_store *s, uint64_t off, size_t len,
		int owner, void (*reply)(void *arg, const struct objfs_iov *v),
		void *arg);
/* The request latency histograms (metrics.h), OBJFS_OP_NCLASS of them,
 * for the adapter to add to; they last as long as the store. */
struct objfs_latency *objfs_store_latency(struct objfs_store *s);

/* Shared mode (-o shared): how the store tells the kernel that another
 * mount changed a name (@name of @parent, @ino 0) or an inode (@ino, @name
 * NULL); called from the store's threads with no lock held. */
void objfs_store_set_notify(struct objfs_store *s,
		void (*fn)(void *arg, uint64_t parent, const char *name,
			size_t len, uint64_t ino),
		void *arg);
/* 1 when this mount shares its namespace with others (-o shared). */
int objfs_store_is_shared(const struct objfs_store *s);
/* What one system call may wait for the cluster (remote_timeout, in ns;
 * 0 without a remote tier): src/base/deadline.h. */
uint64_t objfs_store_call_ns(const struct objfs_store *s);

int objfs_store_lookup(struct objfs_store *s, uint64_t parent,
		const char *name, struct objfs_attr *out);
/* The same for the kernel's thread @tid (its request's caller): on a
 * shared mount, the walk again after an open's ESTALE (src/fs/walk.c). */
int objfs_store_lookup_by(struct objfs_store *s, uint64_t parent,
		const char *name, int32_t tid, struct objfs_attr *out);
void objfs_store_forget(struct objfs_store *s, uint64_t ino, uint64_t n);
int objfs_store_getattr(struct objfs_store *s, uint64_t ino,
		struct objfs_attr *out);
int objfs_store_setattr(struct objfs_store *s, uint64_t ino,
		const struct objfs_setattr *sa, struct objfs_attr *out);

int objfs_store_mknod(struct objfs_store *s, uint64_t parent,
		const char *name, uint32_t mode, uint64_t rdev,
		const struct objfs_cred *cr, struct objfs_attr *out);
int objfs_store_mkdir(struct objfs_store *s, uint64_t parent,
		const char *name, uint32_t mode, const struct objfs_cred *cr,
		struct objfs_attr *out);
int objfs_store_symlink(struct objfs_store *s, uint64_t parent,
		const char *name, const char *target,
		const struct objfs_cred *cr, struct objfs_attr *out);
int objfs_store_link(struct objfs_store *s, uint64_t ino, uint64_t newparent,
		const char *newname, struct objfs_attr *out);
int objfs_store_unlink(struct objfs_store *s, uint64_t parent,
		const char *name);
int objfs_store_rmdir(struct objfs_store *s, uint64_t parent,
		const char *name);
/* flags: RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT (linux/fs.h
 * values); @cr owns the whiteout RENAME_WHITEOUT leaves at the old name. */
int objfs_store_rename(struct objfs_store *s, uint64_t parent,
		const char *name, uint64_t newparent, const char *newname,
		unsigned flags, const struct objfs_cred *cr);
int objfs_store_readlink(struct objfs_store *s, uint64_t ino, char *buf,
		size_t size, size_t *len_out);

/*
 * How an open file meets the kernel's page cache.  The adapter asks for
 * BYPASS (direct I/O) by policy; the store answers for cached opens:
 * KEEP when the pages the kernel may hold are still right, DROP when a
 * direct writer may have changed the file since they were read.
 */
enum objfs_cache {
	OBJFS_CACHE_KEEP = 0,
	OBJFS_CACHE_DROP = 1,
	OBJFS_CACHE_BYPASS = 2,
};

/* Open an existing object (O_TRUNC truncates); create = mknod + open.
 * @bypass: the caller will do direct I/O on this open.  *cache says how
 * the open meets the page cache (always BYPASS for the status file, whose
 * size is not known in advance).  Pass @bypass again to release. */
int objfs_store_open_file(struct objfs_store *s, uint64_t ino, int flags,
		int bypass, enum objfs_cache *cache);
/* The same for an adapter that can have the kernel serve a sealed object
 * itself (FUSE passthrough, objfs_store_set_passthrough): *bid is the
 * backing id to answer with, or 0 (served by the daemon as usual).  Pass
 * @bid != 0 again to release.  @tid, @tgid: the caller's thread and
 * process, as the kernel names them (0: unknown). */
int objfs_store_open_pt(struct objfs_store *s, uint64_t ino, int flags,
		int bypass, int32_t tid, int32_t tgid, enum objfs_cache *cache,
		int32_t *bid);
int objfs_store_create(struct objfs_store *s, uint64_t parent,
		const char *name, uint32_t mode, int flags, int bypass,
		const struct objfs_cred *cr, struct objfs_attr *out);
int objfs_store_release(struct objfs_store *s, uint64_t ino, int flags,
		int bypass);
/* @pt: the open was served by passthrough, for process @tgid. */
int objfs_store_release_pt(struct objfs_store *s, uint64_t ino, int flags,
		int bypass, int pt, int32_t tgid);

/*
 * Sealed objects (sealed.c).  The flags of FS_IOC_GETFLAGS/SETFLAGS:
 * objfs keeps FS_IMMUTABLE_FL only, the seal (-EOPNOTSUPP for others).
 * Sealing writes the object out, records its checksum and is durable when
 * it returns; -EBUSY while it is open for writing.  Unsealing: -EBUSY
 * while the kernel serves it from its per-object file (open or mapped).
 */
int objfs_store_get_flags(struct objfs_store *s, uint64_t ino,
		unsigned *flags);
/* @tgid: the caller, whose own opens do not keep it from unsealing. */
int objfs_store_set_flags(struct objfs_store *s, uint64_t ino,
		unsigned flags, int32_t tgid);
/* How the adapter has the kernel serve an open from a file of the
 * daemon's (FUSE passthrough): @open registers @fd and returns its id
 * (> 0) or -errno, @close lets an id go.  NULL @open: no passthrough,
 * and @why_off says why (status file, objfsctl stat). */
void objfs_store_set_passthrough(struct objfs_store *s,
		int (*open)(void *arg, int fd), void (*close)(void *arg, int id),
		void *arg, const char *why_off);


/* A read's bytes, in place (see objfs_store_read_reply). */
struct objfs_iov {
	struct iovec *iov;
	size_t n;		/* entries used */
	size_t len;		/* bytes they hold */
	void **bounce;		/* buffers of this read alone, freed with */
	size_t nbounce;		/* it (when read-ahead slots ran out) */
};

/*
 * Read up to @len bytes at @off without copying them: @reply gets them as
 * pieces of the store's memory, which stay valid only until it returns,
 * so it must send them at once.  It runs with the object's lock held and
 * must not call back into the store.  Returns 0 once @reply has been
 * called (its result is ignored), or a negative errno (then it was not).
 */
int objfs_store_read_reply(struct objfs_store *s, uint64_t ino, uint64_t off,
		size_t len, void (*reply)(void *arg, const struct objfs_iov *v),
		void *arg);
/* Read up to @len bytes at @off into @buf; *n_out is 0 at end of file. */
int objfs_store_read(struct objfs_store *s, uint64_t ino, uint64_t off,
		void *buf, size_t len, size_t *n_out);
/* Who writes, for clearing setuid, setgid and file capabilities as a
 * local filesystem does: the writing process (0 when not known), whose
 * CAP_FSETID decides about setuid and setgid. */
struct objfs_writer {
	int32_t pid;
};

/* Write; a short count means the arena filled part-way (then retrying
 * the rest gives -ENOSPC).  Bytes already written are never lost.  As
 * file_remove_privs() does for a local filesystem, a write clears setuid
 * (and setgid with group execute) unless @w holds CAP_FSETID, and
 * security.capability always.  *@changed: 1 when it cleared something
 * (the kernel's cached attributes are then stale). */
int objfs_store_write(struct objfs_store *s, uint64_t ino, uint64_t off,
		const void *buf, size_t len, const struct objfs_writer *w,
		int *changed, size_t *n_out);
/* copy_file_range: up to @len bytes from one object to another (or the
 * same one, ranges not overlapping), like a read and then a write; stops
 * early at the source's end.  @w and *@changed as for objfs_store_write. */
int objfs_store_copy_range(struct objfs_store *s, uint64_t ino_in,
		uint64_t off_in, uint64_t ino_out, uint64_t off_out, size_t len,
		const struct objfs_writer *w, int *changed, size_t *n_out);
/* @datasync OBJFS_FSYNC_CLOSE: a writer's close (FLUSH) of a shared
 * mount, which publishes the file as an fsync does but does not wait for
 * what waits in the outbox (another node's open recalls the directory). */
#define OBJFS_FSYNC_CLOSE	(-1)
int objfs_store_fsync(struct objfs_store *s, uint64_t ino, int datasync);
int objfs_store_fallocate(struct objfs_store *s, uint64_t ino, int mode,
		uint64_t off, uint64_t len);
int objfs_store_lseek(struct objfs_store *s, uint64_t ino, uint64_t off,
		int whence, uint64_t *out);

/*
 * List directory @ino from offset @off.  For each entry @cb gets its name,
 * attributes (with @plus; otherwise only ino and mode are set) and the
 * offset of the entry after it; @cb returns non-zero when it has no room,
 * and then that entry is not counted as looked up.
 */
int objfs_store_readdir(struct objfs_store *s, uint64_t ino, uint64_t off,
		int plus,
		int (*cb)(void *arg, const char *name,
			const struct objfs_attr *a, uint64_t next_off),
		void *arg);

int objfs_store_getxattr(struct objfs_store *s, uint64_t ino,
		const char *name, void *buf, size_t size, size_t *len_out);
int objfs_store_setxattr(struct objfs_store *s, uint64_t ino,
		const char *name, const void *val, size_t len, int flags);
int objfs_store_listxattr(struct objfs_store *s, uint64_t ino, char *buf,
		size_t size, size_t *len_out);
int objfs_store_removexattr(struct objfs_store *s, uint64_t ino,
		const char *name);

int objfs_store_statfs(struct objfs_store *s, struct objfs_statfs *st);
void objfs_store_get_stats(struct objfs_store *s,
		struct objfs_store_stats *st);
uint32_t objfs_store_chunk_size(const struct objfs_store *s);

#endif
