/* SPDX-License-Identifier: MIT */
/*
 * tier.h - the remote tier as the store sees it: a Ceph pool as the
 * durable home of the tree and its chunks (-o remote=rados:POOL[/NS];
 * doc/design.md, "The pool as the durable home").
 *
 * The store knows the tier only through this table, which main.c passes
 * in its configuration (objfs_tier_rados, in libremote: the core and its
 * unit tests do not load librados).  With a tier, the chunk store is the
 * pool (@copy), the index keeps each commit for the pool's log
 * (OBJFS_META_OUTBOX), and an fsync returns once the commits up to it are
 * in the pool.
 */
#ifndef OBJFS_TIER_H
#define OBJFS_TIER_H

#include <stddef.h>
#include <stdint.h>

struct objfs_store;
struct objfs_store_config;
struct objfs_meta;
struct objfs_copy_ops;
struct objfs_tier;

/* The collector runs this often, with this grace, unless asked sooner
 * (objfsctl gc). */
#define OBJFS_GC_INTERVAL_S	3600u
#define OBJFS_GC_GRACE_S	600u

struct objfs_tier_ops {
	/* The chunk store in the pool (copy.h). */
	const struct objfs_copy_ops *copy;
	/* Connect and take the namespace's hold (refused, naming its
	 * holder, while another mount has it).  The data directory is
	 * locked already. */
	int (*open)(const struct objfs_store_config *cfg,
			struct objfs_tier **out, char *msg, size_t msgsize);
	/* Make the index in @index_dir the pool's tree before the store
	 * opens it.  @m is the index there (NULL: none): when it is not
	 * this pool's latest state, *@stale is set and the store closes it,
	 * moves it aside and calls again with NULL; with NULL, the pool's
	 * tree (if it has one) is built there. */
	int (*prepare)(struct objfs_tier *t, const char *index_dir,
			struct objfs_meta *m, int *stale, char *msg,
			size_t msgsize);
	/* The store is open (index, root, recovery): begin a new epoch in
	 * the pool (a snapshot of the index and a new head) and start
	 * shipping commits and renewing the hold. */
	int (*start)(struct objfs_tier *t, struct objfs_store *s, char *msg,
			size_t msgsize);
	/* Every commit up to @seq is in the pool's log (fsync; shared mode:
	 * every commit waiting in the outbox, @seq unused; no store lock
	 * held): 0, or
	 * -ETIMEDOUT when the cluster did not take it within the timeout,
	 * -EIO when this mount lost its hold (logged). */
	int (*sync)(struct objfs_tier *t, uint64_t seq);
	/* Unmount, everything written out, the inodes still in memory: a
	 * shared mount stops following the log and publishes what it was
	 * writing (nothing for one that is not). */
	void (*quiesce)(struct objfs_tier *t);
	/* Unmount, the index still open: ship what is left, stop. */
	int (*stop)(struct objfs_tier *t);
	/* After the index closed: give the hold back, disconnect. */
	void (*close)(struct objfs_tier *t);
	/* Collect the pool's garbage now: chunks no file names, older than
	 * @grace_s seconds; a line for people in @report. */
	int (*gc)(struct objfs_tier *t, unsigned grace_s, char *report,
			size_t size);
	/* Lines for the status file ("remote_...: value\n"). */
	size_t (*status)(struct objfs_tier *t, char *buf, size_t size);

	/* Shared mode (-o shared: many mounts of one namespace; doc/design.md,
	 * "Many nodes on one namespace").  1 when this mount is one. */
	int (*shared)(struct objfs_tier *t);
	/* remote_timeout, seconds: what one system call may wait for the
	 * pool or bucket in all (src/base/deadline.h). */
	unsigned (*timeout_s)(struct objfs_tier *t);
	/* The store's index and inode table are up, nothing else yet (no
	 * orphan removed, no arena block adopted): a shared mount follows
	 * the pool's log from here on, and takes over what this data
	 * directory's killed daemon held.  -ESTALE: what it held was
	 * refused (the data directory is marked; opened again, its index
	 * is built anew from the pool). */
	int (*attach)(struct objfs_tier *t, struct objfs_store *s, char *msg,
			size_t msgsize);
	/* Apply every record of the pool's log that this mount has not
	 * (objfs_store_apply_remote each), with no store lock held. */
	int (*catch_up)(struct objfs_tier *t);
	/* The same for an open or a lookup (close-to-open): every record
	 * put before this call began is applied when it returns; concurrent
	 * calls share one reading of the log.  The kernel's caches are told
	 * by the follower, not by the caller. */
	int (*view)(struct objfs_tier *t);
	/* In @tx: take (@take 1) or give back (0) this node's write lease
	 * of @ino.  Taking: -EBUSY while another node holds it (noted for
	 * unblock()). */
	int (*lease)(struct objfs_tier *t, struct objfs_meta_txn *tx,
			uint64_t ino, int take);
	/* After -EBUSY from a commit or a lease of this thread: 0 when the
	 * node that held the lease is gone and the lease was broken (try
	 * again), else -EBUSY. */
	int (*unblock)(struct objfs_tier *t);
	/* This thread's next commit publishes @ino whole, with the others
	 * named since the last call with 0 (0: none; at most 64). */
	void (*publishing)(struct objfs_tier *t, uint64_t ino);
	/*
	 * Fencing (doc/design.md, "Many nodes", invariants 2 and 3).  A
	 * commit that touches a file whose lease this node held and lost
	 * (another node broke it after this node's lock lapsed) fails with
	 * -ENOLCK and changes nothing; so does taking or giving back such a
	 * lease.  The store answers EIO for it, and the file stays fenced
	 * until its writers here close it.
	 */
	/* Before an acknowledgement that rests on this node's leases (a
	 * publish): 0 while its lock is surely held (its last renewal plus
	 * remote_lease, less a margin, is ahead), else after a renewal that
	 * proves it, or finds it lapsed (then every lease is checked
	 * against the log, and the lost ones fenced); -errno when the
	 * cluster does not answer. */
	int (*fresh)(struct objfs_tier *t);
	/* 0 when this node holds @ino's lease, or does not think it does;
	 * -ENOLCK when it held it and lost it. */
	int (*lease_state)(struct objfs_tier *t, uint64_t ino);
	/* This node forgets what it held of @ino's lease (its last fenced
	 * writer closed, or the inode is destroyed). */
	void (*forget)(struct objfs_tier *t, uint64_t ino);
	/*
	 * Delegations (doc/design.md, "Delegations").  A namespace change
	 * in directory @dir is about to be made here (the store's apply
	 * lock held): the directory is taken if nobody holds it (one
	 * record), so that its changes may wait in the outbox; 0, or
	 * -errno (-ERESTART: the log moved; the operation is tried again).
	 */
	int (*dir_use)(struct objfs_tier *t, uint64_t dir);
	/* A lookup or readdir of @dir (no store lock held): when another
	 * node holds it, it is recalled first, and what it made applied
	 * here before this returns.  1 when this node holds it (a name not
	 * in this index is in no other: the log need not be read), else 0
	 * or -errno. */
	int (*dir_read)(struct objfs_tier *t, uint64_t dir);
	/* objfsctl catch-up: every directory another node holds recalled
	 * (what it made there is in the log), before the log is applied. */
	int (*recall_all)(struct objfs_tier *t);
};

/* objfsctl check --remote: the way to the pool that check.c reads
 * chunks and the pool's tree through (check_pool.c). */
struct objfs_remote_config;
struct objfs_check_pool;
int objfs_tier_check_open(const struct objfs_remote_config *cfg,
		struct objfs_check_pool *out, char *err, size_t errsize);
void objfs_tier_check_close(struct objfs_check_pool *c);

/* The remote tier (tier.c, pool.c; a Ceph pool, an S3 bucket: built
 * where librados or libcurl is, HAVE_REMOTE). */
extern const struct objfs_tier_ops objfs_tier_rados;

#endif
