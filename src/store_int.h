/* SPDX-License-Identifier: MIT */
/*
 * store_int.h - what the store's modules share: inode.c (the inode
 * table), mount.c (open, close, maintenance; mount_adopt.c and mount_cleanup.c do
 * its adoption and recovery: mount_int.h), namespace.c,
 * file.c (attributes, open files), xattr.c, the file bytes (data.c,
 * writeout.c, read.c: data_int.h), the chunk store (copy.h;
 * the backing directory's files: local_int.h) and spiller_ops.c.  The
 * spiller (spiller.c) does not include it: it sees the arena and the
 * five calls of spiller_ops.c (spiller.h).  Not for the adapter.
 *
 * Locks, outermost first (a thread holding one may take only those
 * below it):
 *	(the tier's renew_mu and catch_mu, tier_int.h, are taken with
 *	none of these held, and take apply_lock under them)
 *	notify_send_mu	shared mode (notify.c): one sender of the kernel's
 *			cache notices at a time; taken with no lock held
 *			(the kernel may wait, to drop a name, for a request
 *			that waits for any of these), notify_mu under it.
 *	pub_mu		shared mode (publish.c): the queue of publishes that
 *			share one commit (group commit); taken with no lock
 *			held, and none is taken under it (its leader
 *			publishes with it released).
 *	apply_lock	shared mode only (publish.c): held shared by an
 *			operation that may change the shared tree, from its
 *			first read to its commit; exclusive while another
 *			mount's commit is applied.  The tier's catch_mu
 *			(tier_int.h) is taken without it, and takes it.
 *	give_mu		the give-back of deferred space (local_space.c),
 *			one at a time: taken with no other lock held (the
 *			maintenance thread, reclaim on ENOSPC, close), and
 *			takes inode locks, defer_lock and the index under
 *			it.  Two at once gave one slot back twice, the
 *			second after a write-out had taken it again.
 *	mk_mu		shared mode (create.c): the queue of creates that
 *			share one commit; taken with the apply lock (shared)
 *			alone, and none under it (its leader makes the group
 *			with it released).
 *	ns_lock		namespace changes (create, link, unlink, rename):
 *			held across their index reads and transaction, so
 *			that what they read cannot change before they write.
 *			next_ino and next_cookie.
 *	store->lock	the inode table and releasing list, lookup and
 *			reference counts.  Held briefly, for the table
 *			only: never across an index transaction, disk I/O
 *			or a wait for another thread's I/O.  Every request
 *			takes it to get and to put its inode.
 *	inode->lock	one inode's attributes, open counts, chunk map, slot
 *			map and read-ahead slots (ra->cv waits on it).  More
 *			than one is taken only under ns_lock (link, unlink,
 *			rename).  A new inode is loaded from the index under
 *			its own lock alone.
 *	spill_lock	the spiller's own (spiller.c): its state and the
 *			restore ring.  Taken under an inode lock (a writer
 *			wakes the spiller); held while taking the arena's
 *			lock (to read its use), never another, and never
 *			across a call into the file layer or I/O.
 *	defer_lock	the space waiting to be given back.
 *	sealed_lock	the per-object files of sealed objects (sealed.c):
 *			their list and byte counts; taken under an inode
 *			lock, and takes none.  (sealed_cv, a build of an
 *			inode's per-object file ended, waits with that
 *			inode's lock.)
 *	walk_mu		shared mode (walk.c): the threads an open answered
 *			ESTALE, and the applies under way; a leaf (an open
 *			may hold an inode's lock; the tier's catch_mu may
 *			be held).  walk_cv waits on it.
 *	todo_mu		shared mode (publish.c): what the follower does later
 *			(closes and destroys that failed); a leaf.
 *	notify_mu	shared mode (notify.c): the queue of the kernel's
 *			cache notices; a leaf.
 *	the remote tier's lock (tier_int.h): its shipping state; never
 *			held across a call into the index or the cluster.
 *	the arena's lock, the index's lock (meta.c): innermost but for
 *			the tier's lease_mu and deleg_mu (tier_int.h), which
 *			the commit hook takes under the index's lock, and
 *			which take none.  Every transaction, read or write, holds the
 *			index's lock until it ends: an inode's lock is never
 *			taken inside one (publish.c's publish took it so, and
 *			deadlocked against a part read: remote_pause.sh F1).  The
 *			arena's warmer thread (arena_warm.c) takes the
 *			arena's lock alone, and never across its fallocate
 *			or madvise; its condition variable waits on it.
 *	maint_lock	the maintenance thread's sleep only.
 *	the unmount's progress lock (mount.c, struct unmount_progress): its
 *			thread's sleep; under it, only the log's lock and a
 *			write of the lock file.
 * No function that takes store->lock or an inode's lock is called with an
 * inode lock held (objfs_inode_get() and _put() take both).
 * ThreadSanitizer runs every unit test, the threaded stress test among
 * them, and reports no order inversion (scripts/test).
 */
#ifndef OBJFS_STORE_INT_H
#define OBJFS_STORE_INT_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "src/memory/arena.h"
#include "src/base/clock.h"
#include "src/base/deadline.h"
#include "src/base/sync.h"
#include "src/memory/chunk.h"
#include "src/copy.h"
#include "src/base/metrics.h"
#include "src/memory/spiller.h"
#include "src/status.h"
#include "src/store.h"
#include "src/tier.h"

struct objfs_backing;		/* the backing directory (src/local/backing.h) */

enum { OBJFS_INODE_LOADING = 0, OBJFS_INODE_READY = 1 };

/* Reads of one object's copies without its lock at once (read-ahead). */
#define OBJFS_READING_MAX	8
/* Shared mode: threads walking a path again at one moment (walk.c). */
#define OBJFS_WALK_SLOTS	16

struct objfs_inode {
	uint64_t ino;
	struct objfs_inode *hnext;	/* protected by store->lock: the table
					 * chain or the releasing list */
	uint64_t nlookup;		/* protected by store->lock */
	uint32_t refs;			/* protected by store->lock */
	_Atomic int state;		/* LOADING, READY, or the -errno the
					 * load failed with; set under lock */

	struct objfs_mutex lock;	/* objfs_inode_lock() takes it */
	uint32_t nopen;			/* protected by lock, and changed only
					 * by a holder of a reference (so put,
					 * under store->lock, may read it when
					 * refs is 0) */
	uint32_t ndirect_w;		/* protected by lock: opens that write
					 * past the page cache */
	int cache_stale;		/* protected by lock: a direct writer
					 * may have made cached pages wrong */
	/* Shared mode, what the kernel holds of this inode (doc/design.md,
	 * "The kernel's caches on a shared mount"), protected by lock, each
	 * a value of s->remote_gen: when another node's record last changed
	 * the inode or took one of its names (change_gen); before the last
	 * lookup that gave the kernel its name and attributes (entry_gen);
	 * the change an open last answered ESTALE for (estale_change). */
	uint64_t change_gen, entry_gen, estale_change;
	struct objfs_attr attr;		/* protected by lock */
	int attr_dirty;			/* protected by lock: size/times not
					 * yet in the index */
	int gone;			/* protected by lock: unlinked and its
					 * records already out of the index */
	struct objfs_chunkmap chunks;	/* protected by lock */
	struct objfs_slotmap slots;	/* protected by lock: slots of the
					 * backing file that records point at,
					 * or that wait to be freed */
	int bfd;			/* protected by lock: backing file, -1 */
	int no_file;			/* protected by lock: created by this
					 * daemon and never given a backing
					 * file */
	int bfile_new;			/* protected by lock: its backing file
					 * was made and the directory not yet
					 * synced */
	uint64_t reading[OBJFS_READING_MAX]; /* protected by lock: slots
					 * read without it (local.c) */
	unsigned nreading;		/* protected by lock */
	struct objfs_rahead *ra;	/* protected by lock: chunks read
					 * straight from disk, or NULL */
	uint64_t rd_next;		/* protected by lock: one past the
					 * chunk read last (0: none yet) */
	uint64_t wr_end;		/* protected by lock: where the last
					 * write ended */
	int caps;			/* protected by lock: 0 not known, 1 no
					 * security.capability xattr, 2 one */
	uint32_t nwriters;		/* protected by lock: opens for writing
					 * (shared mode: the lease is held
					 * while there is one) */
	uint64_t pub_sum;		/* protected by lock: shared mode, the
					 * sum of what this node last published
					 * of it under its lease (0: nothing) */
	int detached;			/* protected by lock: shared mode,
					 * another mount changed it while it
					 * was open here; reloaded at the
					 * last close */
	int fenced;			/* protected by lock: shared mode,
					 * this node lost its write lease
					 * while writing it (another node
					 * broke it): its unpublished bytes
					 * were dropped, and writes, fsync
					 * and close answer EIO until its
					 * writers here close */
	struct objfs_sealed *so;	/* protected by lock: the per-object
					 * file of a sealed object (sealed.c),
					 * or NULL */
	uint64_t pinned;		/* protected by lock: bytes counted
					 * in pinned_bytes (objfsctl pin, in
					 * the arena), 0: not pinned there */
	const char *pt_why;		/* protected by lock: why its last open
					 * for reading was served by the daemon
					 * although sealed (static text), or
					 * NULL */
	int pin_so;			/* protected by lock: pinned in its
					 * per-object file (counted in
					 * sealed_bytes) */
	int so_building;		/* protected by lock: its per-object
					 * file is being filled (the lock is let
					 * go while a read-ahead is waited for):
					 * another open waits for it on
					 * store->sealed_cv */
};

/* An inode's lock, its holder recorded (base/sync.h), so that the
 * functions that need it (the data path's, and every one documented
 * "ip->lock held") can check that their caller holds it. */
#define objfs_inode_lock(ip)		objfs_mutex_lock(&(ip)->lock)
#define objfs_inode_unlock(ip)		objfs_mutex_unlock(&(ip)->lock)
#define objfs_inode_wait(ip, cv)	objfs_mutex_wait(&(ip)->lock, (cv))
#define objfs_inode_assert_locked(ip)	objfs_mutex_assert_held(&(ip)->lock)

/* attr.pad bits */
#define OBJFS_ATTR_DAMAGED	0x1u	/* some chunk records were lost: the
					 * chunks without one read as EIO */
#define OBJFS_ATTR_SEALED	0x2u	/* immutable (chattr +i): sealed.c */
/* The xattr record of a sealed object's checksum at its seal: a name
 * outside every namespace, so no user's (sealed.c). */
#define OBJFS_SEAL_RECORD	"objfs.sealed"

/*
 * Read-ahead of spilled chunks, outside the arena (read.c).  When the
 * arena is too full to restore into, a reader is served from verified
 * disk copies in these slots, and the restore thread fills the slots
 * ahead of a sequential reader while it copies out the current one.
 * A slot is valid for chunk idx while that chunk is spilled with this
 * checksum and length.  All fields are protected by the inode's lock,
 * except a LOADING slot's buf, which belongs to the restore thread until
 * it sets the state (readers wait on cv).
 */
enum { OBJFS_RA_EMPTY, OBJFS_RA_LOADING, OBJFS_RA_READY };

struct objfs_ra_slot {
	unsigned char *buf;
	uint64_t idx;
	uint64_t key;			/* which copy (copy.h, key) */
	uint64_t csum;
	uint64_t gen;			/* which request is loading it */
	uint32_t len;
	int state;
};

struct objfs_rahead {
	pthread_cond_t cv;		/* with the inode's lock */
	uint64_t last;			/* chunk of the last disk read */
	uint64_t next_gen;
	unsigned n;
	unsigned reading;		/* loads reading into a slot without
					 * the inode's lock, through its bfd:
					 * neither goes while this is not 0 */
	struct objfs_ra_slot slot[];
};

/* Restore and read-ahead threads (the spiller's): two keep two disk
 * reads in flight. */
#define OBJFS_RESTORE_THREADS	2

/*
 * Disk space that may be given back once a commit is durable: a slot an
 * old chunk record pointed at, or (slot OBJFS_WHOLE_FILE) the backing
 * file of a deleted object.  Until then a machine crash could bring that
 * record back, so the bytes must stay.
 */
#define OBJFS_WHOLE_FILE	UINT64_MAX
struct objfs_deferred {
	uint64_t ino;
	uint64_t slot;
	uint64_t seq;
};

/* At the top of each entry point a system call reaches (store.h): the
 * call answers within the remote tier's timeout, whatever it waits for.
 * objfsctl's commands on the status file (gc, catch-up, sync) run to
 * their end instead, each request still bounded by the timeout. */
#define OBJFS_CALL(s, ino)						\
	OBJFS_DEADLINE_SCOPE((ino) == OBJFS_STATUS_INO ? 0 : (s)->call_ns)
#define OBJFS_CALL_ANY(s)	OBJFS_DEADLINE_SCOPE((s)->call_ns)

struct objfs_store {
	struct objfs_meta *meta;
	struct objfs_arena *arena;
	const struct objfs_copy_ops *copy;	/* the chunk store (copy.h) */
	/* The remote tier (tier.h), or NULL. */
	const struct objfs_tier_ops *tier_ops;
	struct objfs_tier *tier;
	struct objfs_backing *backing;	/* the local one's directory */
	int lockfd;
	char *data_dir;			/* as given at open */
	int failed;			/* objfs_store_note_failure() */
	int keep_arena;			/* -o keep_arena */
	int adopted;			/* the arena is a dead daemon's */
	char arena_note[4096 + 256];		/* how the arena came to be (status) */
	struct objfs_latency lat[OBJFS_OP_NCLASS];	/* metrics.h */
	uint32_t chunk_size;
	unsigned chunk_shift;
	unsigned sub_shift;		/* sub-block sums (csum.h) */
	int meta_flags;			/* objfs_meta_open's (OUTBOX with a
					 * tier) */
	unsigned schema;		/* the index's (meta_keys.h); 5 once a
					 * disk copy was shared; changed
					 * under both inode locks of a copy
					 * and ns_lock */
	uint64_t max_size;		/* largest file: writes past it EFBIG */
	uint64_t restore_limit;		/* arena use above which reads are
					 * served from disk, not restored */
	uint64_t high_bytes;		/* the spiller's high watermark */

	pthread_mutex_t ns_lock;	/* namespace changes */
	uint64_t next_ino;		/* protected by ns_lock */
	uint64_t next_cookie;		/* protected by ns_lock */
	/* Shared mode: the ends of this node's ranges of inode numbers and
	 * cookies (ids.c; 0: not read yet), under ns_lock; the inode
	 * numbers it handed out since it last gave a directory back or put
	 * a name in one it does not hold, [own_lo, own_hi): no other node
	 * can reach them (ids.c raises own_hi; src/cluster/deleg.c moves
	 * own_lo up to it). */
	uint64_t ino_end, cookie_end;
	_Atomic uint64_t own_lo, own_hi;
	_Atomic uint64_t ninodes;	/* in the index */
	/* Shared mode: counts the records of other nodes applied here
	 * (an inode's change_gen, entry_gen). */
	_Atomic uint64_t remote_gen;
	/* Shared mode: the threads an open answered ESTALE (walk.c), whose
	 * walk again opens what it finds; and the applies of other nodes'
	 * records under way (walk_applying), which such a walk's lookup
	 * waits out, and which wait for its pin.  Protected by walk_mu. */
	struct objfs_walk {
		int32_t tid;		/* the kernel's caller; 0: a free slot */
		unsigned looked : 1;	/* its walk again began: it may pass */
		unsigned pin : 1;	/* read-only: no apply until it opens */
		uint64_t ns;		/* the ESTALE, then its last lookup */
	} walk[OBJFS_WALK_SLOTS];
	int walk_applying;
	pthread_mutex_t walk_mu;
	pthread_cond_t walk_cv;
	_Atomic uint64_t walk_passes, walk_waits;	/* status */
	/* Slots with a thread (written under walk_mu): none, and a
	 * lookup, an open or an unpin need not take walk_mu at all. */
	_Atomic unsigned walk_used;

	struct objfs_mutex lock;	/* objfs_store_lock() takes it */
	struct objfs_inode **table;	/* protected by lock */
	size_t nbuckets;		/* protected by lock */
	size_t count;			/* protected by lock */
	struct objfs_inode *releasing;	/* protected by lock: inodes that
					 * left the table and are being let
					 * go (objfs_inode_put()) */
	pthread_cond_t release_cv;	/* with lock: one of them went */

	_Atomic uint64_t written_out_chunks, written_out_bytes;
	_Atomic uint64_t restored_chunks, restored_bytes;
	_Atomic uint64_t direct_reads, part_reads, csum_failures;
	_Atomic uint64_t sub_writeouts;	/* chunks written as a few sub-blocks */
	_Atomic uint64_t evictions;
	_Atomic uint64_t shared_chunks;	/* chunks a copy shared, not copied */
	_Atomic uint64_t dedup_chunks;	/* chunks written as an equal copy */
	_Atomic uint64_t made_durable_bytes; /* written, or deduplicated */
	/* Shared mode: the files fenced here (objfs_share_fence()), and
	 * the last of them. */
	_Atomic uint64_t fenced_files, fenced_last;
	int dedup;			/* -o dedup=on: set at open */

	/* Space given back when durable (local_space.c), a leaf lock. */
	pthread_mutex_t give_mu;	/* local_give_back: one at a time */
	pthread_mutex_t defer_lock;
	struct objfs_deferred *defer;	/* protected by defer_lock */
	size_t ndefer, defer_cap;	/* protected by defer_lock */

	/* The maintenance thread (mount.c): checkpoints the index and
	 * gives deferred space back, once a second. */
	pthread_t maint_thread;
	int maint_started;
	pthread_mutex_t maint_lock;
	pthread_cond_t maint_cv;
	int maint_stop;			/* protected by maint_lock */

	/* The spiller and restore threads (spiller.c, opaque): NULL until
	 * started. */
	struct objfs_spiller *spiller;

	/* One call, one timeout (src/base/deadline.h): a system call on a
	 * mount with a remote tier answers within remote_timeout; 0 when
	 * there is none.  Set at open. */
	uint64_t call_ns;

	/* Shared mode (publish.c): one of many mounts of a namespace. */
	int shared;
	pthread_rwlock_t apply_lock;
	/* One sender at a time (objfs_store_notify_send), taken with no
	 * other lock held, notify_mu under it: a catch-up returns only once
	 * what the follower applied before it has reached the kernel. */
	pthread_mutex_t notify_send_mu;
	pthread_mutex_t notify_mu;	/* a leaf: what follows */
	struct objfs_notify {
		struct objfs_notify *next;
		uint64_t parent, ino;
		size_t len;
		char name[];
	} *notify_head, **notify_tail;
	/* Inodes whose kernel attributes the follower left to their
	 * timeout, for the next objfsctl catch-up (at most
	 * OBJFS_NOTIFY_KEEP; past that, keep_all: every inode in memory). */
	struct objfs_notify *keep_head;
	size_t nkeep;
	int keep_all;
	void (*notify_fn)(void *arg, uint64_t parent, const char *name,
			size_t len, uint64_t ino);
	void *notify_arg;
	/* What the log's follower does for this node (publish.c): files
	 * whose publish failed at their last close (their lease stays until
	 * they are published), inodes whose destroy failed (their records
	 * stay in the tree until it is done).  todo_mu is a leaf. */
	pthread_mutex_t todo_mu;
	/* Publishes waiting to share one commit (publish.c, group commit):
	 * pub_mu is taken with no other lock held, only to queue and to
	 * wait (pub_cv); the leader publishes with it released. */
	pthread_mutex_t pub_mu;
	pthread_cond_t pub_cv;
	struct objfs_pub_wait *pub_head, **pub_tail;
	int pub_busy;			/* a leader publishes */
	_Atomic uint64_t pub_groups, pub_grouped;
	/* Creates waiting to share one commit (create.c), the same way:
	 * mk_mu is taken with the apply lock (shared) alone, and none
	 * under it. */
	pthread_mutex_t mk_mu;
	pthread_cond_t mk_cv;
	struct mk_req *mk_head, **mk_tail;
	int mk_busy;
	_Atomic uint64_t mk_groups, mk_grouped;
	struct objfs_todo {
		uint64_t ino;
		int destroy;
	} *todo;
	size_t ntodo, captodo;

	/* What an inode's unload lets go of above the file bytes: its
	 * sealed state (objfs_sealed_unload, set at open).  A callback:
	 * data.c is below sealed.c, which calls it. */
	void (*unload_above)(struct objfs_store *s, struct objfs_inode *ip);
	/* The inode table, for the local store's space reclaim (local_space.c
	 * gives a live object's slots back under its lock): objfs_inode_get
	 * and objfs_inode_put, set at open.  Callbacks: the chunk stores are
	 * below the inode table. */
	int (*inode_get)(struct objfs_store *s, uint64_t ino,
			struct objfs_inode **out);
	void (*inode_put)(struct objfs_store *s, struct objfs_inode *ip);
	/* Sealed objects (sealed.c).  How the adapter registers a backing
	 * file with the kernel (FUSE passthrough), or NULL, and why not. */
	int (*pt_open)(void *arg, int fd);
	void (*pt_close)(void *arg, int id);
	void *pt_arg;
	const char *pt_off_why;
	unsigned sealed_max_pct;	/* -o sealed_max */
	int sealed_mnt;			/* sealed_lock: the private tmpfs of
					 * per-object files, -1 none (memfds:
					 * sealed_pages=small, or it failed),
					 * -2 not made yet (sealed.c) */
	pthread_cond_t sealed_cv;	/* with an inode's lock: a build of
					 * its per-object file ended */
	pthread_mutex_t sealed_lock;	/* a leaf: what follows */
	struct objfs_sealed *sealed_head;
	uint64_t sealed_files, sealed_bytes, pinned_bytes;
	_Atomic uint64_t pt_opens, sealed_builds, sealed_sheds;
	_Atomic uint64_t sealed_daemon_reads;	/* READs of sealed objects */
};

/* ---- sealed.c: sealed objects ------------------------------------------ */

struct objfs_sealed;
int objfs_sealed_is(const struct objfs_inode *ip);
/* An open of sealed @ip for reading, counted (ip->lock held): *bid the
 * backing id when passthrough serves it, else 0 and *why. */
void objfs_sealed_open(struct objfs_store *s, struct objfs_inode *ip,
		int32_t tgid, int32_t *bid, const char **why);
void objfs_sealed_close(struct objfs_store *s, struct objfs_inode *ip,
		int32_t tgid);
/* Before @ip's bytes may change: its per-object file let go, waiting a
 * moment for closes; -ETXTBSY while still open (ip->lock held). */
int objfs_sealed_settle(struct objfs_store *s, struct objfs_inode *ip);
/* Drop the per-object file unless in use (-EBUSY); _free even so. */
int objfs_sealed_drop(struct objfs_store *s, struct objfs_inode *ip);
void objfs_sealed_free(struct objfs_store *s, struct objfs_inode *ip);
/* @ip leaves memory (ip->lock held): its per-object file and its pin go
 * (the store's unload_above). */
void objfs_sealed_unload(struct objfs_store *s, struct objfs_inode *ip);
int objfs_sealed_sum(struct objfs_store *s, struct objfs_inode *ip,
		char hex[33]);
const char *objfs_sealed_served(struct objfs_store *s,
		const struct objfs_inode *ip);
int objfs_sealed_pin(struct objfs_store *s, struct objfs_inode *ip, int on);
uint64_t objfs_sealed_shed(struct objfs_store *s, uint64_t want);
void objfs_sealed_figures(struct objfs_store *s, uint64_t *files,
		uint64_t *bytes, uint64_t *pinned);
/* The status file's lines of sealed objects, at @buf: their length. */
size_t objfs_sealed_status(struct objfs_store *s, char *buf, size_t size);
/* status.c: shared mode's store figures, as objfs_sealed_status. */
size_t objfs_status_shared(struct objfs_store *s, char *buf, size_t size);
/* user.objfs.request set on @ino: "pin", "unpin" or "evict". */
int objfs_store_request(struct objfs_store *s, uint64_t ino,
		const void *val, size_t len);

/* ---- publish.c: shared mode -------------------------------------------- */

/* An operation that may change the shared tree: @expr tried again while
 * the pool's log moved on under it (-ERESTART: it applies what it missed
 * first), or while a lease it met belonged to a node that is gone. */
int objfs_share_begin(struct objfs_store *s);	/* 0, -ETIMEDOUT */
void objfs_share_end(struct objfs_store *s);
int objfs_share_retry(struct objfs_store *s, int *rc, unsigned tries);
#define OBJFS_SHARED(s, rc, expr) do {					\
	unsigned tries_ = 0;						\
	do {								\
		(rc) = objfs_share_begin(s);				\
		if ((rc) == 0) {					\
			(rc) = (expr);					\
			objfs_share_end(s);				\
		}							\
	} while (objfs_share_retry((s), &(rc), tries_++));		\
} while (0)
/* Another mount's commit (a payload of the pool's log), applied to the
 * index and to the inodes in memory (the tier's catch-up; no lock held). */
int objfs_store_apply_remote(struct objfs_store *s, const void *pl,
		size_t n);
/* Apply what other mounts put in the pool's log so far and tell the
 * kernel (objfsctl catch-up; no lock held): 0, -ENOTSUP when not shared. */
int objfs_share_catch_up(struct objfs_store *s);
/* walk.c, shared mode: the kernel's walk again after an open's ESTALE.
 * @tid is the kernel's id of the caller's thread (0, unknown: no pass).
 *   objfs_walk_estale: an open with @flags answered ESTALE to @tid.
 *   objfs_walk_lookup: a lookup by @tid begins: 1 when it is such a walk
 *     (then pinned, if its open reads only: applies wait), and
 *     objfs_walk_lookup_end gets its answer; objfs_walk_unpin lets the
 *     lookup apply the log (it pins again with objfs_walk_lookup).
 *   objfs_walk_take: may an open by @tid go through (1: then
 *     objfs_walk_done once it opened, or failed)?
 *   objfs_walk_apply_begin/_end: around another node's record applied.
 * objfs_walk_open: an open by @tid with @flags of @ip (locked), which it
 * may unlock a moment: -ENOENT when @ip is gone; on a shared mount
 * -ESTALE when the kernel may have come through a name another node
 * took away, or with an old size (@by_inode: the kernel's own open;
 * @pass: objfs_walk_take's answer).
 * walk_mu is a leaf; none of these is called with it held. */
void objfs_walk_init(struct objfs_store *s);
void objfs_walk_destroy(struct objfs_store *s);
void objfs_walk_estale(struct objfs_store *s, int32_t tid, int flags);
int objfs_walk_lookup(struct objfs_store *s, int32_t tid);
void objfs_walk_unpin(struct objfs_store *s, int32_t tid);
void objfs_walk_lookup_end(struct objfs_store *s, int32_t tid, int rc);
int objfs_walk_take(struct objfs_store *s, int32_t tid);
void objfs_walk_done(struct objfs_store *s, int32_t tid);
void objfs_walk_apply_begin(struct objfs_store *s);
void objfs_walk_apply_end(struct objfs_store *s);
int objfs_walk_open(struct objfs_store *s, struct objfs_inode *ip, int flags,
		int32_t tid, int by_inode, int pass);
/* Send the kernel the cache drops the applied commits queued (no lock
 * held: the kernel may wait for requests that wait for locks): the names
 * always; the inodes only with @inodes (objfsctl catch-up).  The
 * follower leaves the kernel's attributes to their timeout and to the
 * opens (open_file): dropping them bumps the kernel's attribute version,
 * and a lookup under way then brings a size the kernel throws away. */
void objfs_store_notify_send(struct objfs_store *s, int inodes);
/* Queue a notice for the kernel (notify.c): a name in parent, or with
 * len 0 the inode ino's attributes. */
void objfs_store_notify_add(struct objfs_store *s, uint64_t parent,
		const char *name, size_t len, uint64_t ino);
/* inode.c: @parent as a directory, referenced (-ENOTDIR, -ENOENT when
 * removed); called with ns_lock held and no inode's lock. */
int objfs_inode_get_dir(struct objfs_store *s, uint64_t parent,
		struct objfs_inode **out);
/* ids.c (ns_lock held): room for @nino inode numbers and @nck cookies
 * (shared mode: in this node's range, reserved in a commit of its own);
 * the counters after a change that hands out numbers below @next_ino
 * (0: none) and cookies below @next_ck, in @t. */
int objfs_ids_room(struct objfs_store *s, unsigned nino, unsigned nck);
/* A record of the pool's log applied in @t: numbers of this node's range
 * it names are used (a change of this node's that timed out and landed):
 * the next ones move past them. */
int objfs_ids_seen(struct objfs_store *s, struct objfs_meta_txn *t,
		const void *p, size_t n);
int objfs_ids_put(struct objfs_store *s, struct objfs_meta_txn *t,
		uint64_t next_ino, uint64_t next_ck);
/* Shared mode (0 otherwise): a namespace change in @dir is about to be
 * made (apply lock held: OBJFS_SHARED), or a lookup or readdir of it (no
 * lock held; 1: this node holds it): src/cluster/deleg.c. */
int objfs_share_dir_use(struct objfs_store *s, uint64_t dir);
int objfs_share_dir_read(struct objfs_store *s, uint64_t dir);
/* Take this node's write lease of @ino (its own commit): -EBUSY while
 * another live node holds it. */
int objfs_share_lease(struct objfs_store *s, uint64_t ino);
/* @ip was just created leased to this node (ip->lock held): the commit
 * that made it put it in the log as it is, so a publish of it as it is
 * sends nothing (a create and close cost two records, not three). */
void objfs_share_created(struct objfs_store *s, struct objfs_inode *ip);
/* Give this node's lease of @ino back, publishing nothing (a file
 * unlinked while open for writing). */
int objfs_share_unlease(struct objfs_store *s, uint64_t ino);
/* Publish @ip whole (no lock held), unless it is as this node last
 * published it; @release: and give its lease back. */
int objfs_share_publish(struct objfs_store *s, struct objfs_inode *ip,
		int release);
/* @ino's publish at its last close failed (the cluster did not answer,
 * the pool was full): the follower publishes it and gives its lease back
 * later (it tries once a second); or, with @destroy, its destroy failed
 * (the log moved on meanwhile): the follower removes its records. */
void objfs_share_defer(struct objfs_store *s, uint64_t ino, int destroy);	/* inode.c */
/* The follower: what was deferred, tried again (no lock held). */
void objfs_share_todo(struct objfs_store *s);
/* Publish every file open for writing here (sync of everything). */
int objfs_share_publish_all(struct objfs_store *s);
/* @ip's last open closed (ip->lock held): load what another mount
 * published meanwhile. */
void objfs_share_reload(struct objfs_store *s, struct objfs_inode *ip);
/* @ip (locked) is a file whose write lease this node held and lost (a
 * commit answered -ENOLCK): fenced, what was written here and never
 * published dropped (said in the log), and the version the tree has
 * loaded in its place. */
void objfs_share_fence(struct objfs_store *s, struct objfs_inode *ip);
/* The last writer here of fenced @ip (locked) closed: it may be written
 * again (a new lease). */
void objfs_share_unfence(struct objfs_store *s, struct objfs_inode *ip);

/* data.c: all called with ip->lock held. */
int objfs_data_load(struct objfs_store *s, struct objfs_inode *ip);
/* Room for objfs_data_read_iov()'s list, for a read of @len bytes. */
size_t objfs_data_iov_max(struct objfs_store *s, size_t len);
/* Describe the bytes of a read, without copying them, by pieces of the
 * arena, of read-ahead slots and of a static zero page: valid while
 * ip->lock stays held.  v->iov must have objfs_data_iov_max() entries. */
int objfs_data_read_iov(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t off, size_t len, struct objfs_iov *v);
/* Bytes [@off, @off + @len) of @ip, as a read gets them (ip->lock held),
 * handed to @fn in one list (objsum.c); -EIO when fewer came. */
int objfs_data_read_to(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t off, uint32_t len,
		int (*fn)(void *arg, struct iovec *iov, size_t n), void *arg);
/* Free what a read's list holds besides the iovecs themselves. */
void objfs_iov_release(struct objfs_iov *v);
int objfs_data_write(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t off, const void *buf, size_t len, size_t *n_out);
/* Set the size to @size and the other attributes to @a (whose size and
 * nrec are set here), in one index commit: all or nothing. */
struct objfs_arena_found;
int objfs_data_adopt(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_arena_found *f);
int objfs_data_truncate(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t size, struct objfs_attr *a);
/* Write the dirty chunks and the attributes out: copy-on-write, the
 * bytes flushed to disk before the index points at them.  Durable for a
 * machine crash after objfs_meta_sync(). */
int objfs_data_flush(struct objfs_store *s, struct objfs_inode *ip);
int objfs_data_fallocate(struct objfs_store *s, struct objfs_inode *ip,
		int mode, uint64_t off, uint64_t len);
int objfs_data_seek(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t off, int whence, uint64_t *out);
/* Free the read-ahead slots unless a load is in flight (last close). */
void objfs_data_ra_release(struct objfs_inode *ip);
/* Free the arena blocks and the chunk store's state of the object (its
 * copies stay). */
void objfs_data_unload(struct objfs_store *s, struct objfs_inode *ip);
/* Remove the object's index records, and its backing file once that is
 * durable. */
int objfs_data_destroy(struct objfs_store *s, struct objfs_inode *ip);
/* objsum.c: the whole-object checksum (csum.h), 32 hex digits. */
int objfs_data_object_sum(struct objfs_store *s, struct objfs_inode *ip,
		char hex[33]);
/* Deleting an object (data.c, through the chunk store's doom and gone:
 * copy.h).  In @t, which deletes @ip's records: drop its references to
 * copies, and say what it gives back (*@d).  0 or -errno (@t is then to
 * be aborted).  Once @t committed as @seq, objfs_data_gone() lets go of
 * @ip's chunks and gives that back when the commit is durable; if @t
 * was not, objfs_data_doomed_free(). */
int objfs_data_doom(struct objfs_store *s, struct objfs_meta_txn *t,
		struct objfs_inode *ip, struct objfs_copy_doomed **d);
void objfs_data_gone(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t seq, struct objfs_copy_doomed *d);
void objfs_data_doomed_free(struct objfs_store *s,
		struct objfs_copy_doomed *d);
/* Do records of other objects (or of a deleted @ino) point into @ino's
 * backing file?  1, 0 or -errno (local_dedup.c; the local store's, for the
 * checker and recovery, which know its files). */
int objfs_data_file_shared(struct objfs_meta_txn *t, uint64_t ino);

/* store->lock, its holder recorded, so that every function named
 * *_locked that needs it can check that its caller holds it. */
#define objfs_store_lock(s)		objfs_mutex_lock(&(s)->lock)
#define objfs_store_unlock(s)		objfs_mutex_unlock(&(s)->lock)
#define objfs_store_wait(s, cv)		objfs_mutex_wait(&(s)->lock, (cv))
#define objfs_store_assert_locked(s)	objfs_mutex_assert_held(&(s)->lock)

/* The spiller's batch: victims it evicts at a time. */
#define OBJFS_EVICT_MAX		OBJFS_SPILLER_BATCH

/* Cookies 1 and 2 are "." and ".."; at most this many inodes. */
#define FIRST_COOKIE		3
#define MAX_INODES		(1ull << 40)
#define XATTR_CAPS		"security.capability"

/* Set mtime and ctime (objfs_attr_touch_c: ctime) to now. */
static inline void
objfs_attr_touch_mc(struct objfs_attr *a)
{
	objfs_time_now(&a->mtime_sec, &a->mtime_nsec);
	a->ctime_sec = a->mtime_sec;
	a->ctime_nsec = a->mtime_nsec;
}

static inline void
objfs_attr_touch_c(struct objfs_attr *a)
{
	objfs_time_now(&a->ctime_sec, &a->ctime_nsec);
}

/* @ip's mtime in nanoseconds (data.c). */
int64_t data_mtime_ns(const struct objfs_inode *ip);

/* inode.c */
/* A transaction for a plain change: -ENOSPC at once on a tight index,
 * after waking the maintenance thread to make room. */
int objfs_store_begin_change(struct objfs_store *s,
		struct objfs_meta_txn **t);
/* The status file's node: its inode number, its name in the root, and
 * its attributes. */
int objfs_is_status_ino(uint64_t ino);
int objfs_is_reserved_name(uint64_t parent, const char *name);
void objfs_status_node_attr(struct objfs_attr *a);
/* With store->lock held: the inode in the table or NULL (perhaps still
 * loading: see state). */
struct objfs_inode *objfs_inode_find_locked(struct objfs_store *s,
		uint64_t ino);
/* With no lock held: the inode, loaded from the index if need be, with a
 * reference taken; a reference dropped (the last one destroys the inode
 * or lets it go from memory, writing to the index). */
int objfs_inode_get(struct objfs_store *s, uint64_t ino,
		struct objfs_inode **out);
void objfs_inode_put(struct objfs_store *s, struct objfs_inode *ip);
/* Count @n more kernel lookups of @ip (a reference held). */
void objfs_inode_add_lookups(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t n);
/* A reference to every inode in the table (an array to give to
 * objfs_inode_put_all()), for walks that take inode locks or do I/O. */
int objfs_inode_snapshot(struct objfs_store *s, struct objfs_inode ***v,
		size_t *n);
void objfs_inode_put_all(struct objfs_store *s, struct objfs_inode **v,
		size_t n);
/* Tests only: called by the give-back (local_space.c) between its copy
 * of the deferred list and its use, when the copy is not empty. */
extern void (*objfs_test_give_back_copied)(struct objfs_store *s);
/* Write the attributes to the index (ip->lock held). */
int objfs_inode_persist_attr(struct objfs_store *s, struct objfs_inode *ip);
/* The attributes to hand out (ip->lock held): held filled in. */
struct objfs_attr objfs_inode_attr_out(const struct objfs_inode *ip);
void objfs_inode_free(struct objfs_inode *ip);
/* Count an open and a close (ip->lock held, a reference held); the open
 * says how it meets the page cache. */
enum objfs_cache objfs_inode_open_locked(struct objfs_inode *ip, int flags,
		int bypass);
void objfs_inode_close_locked(struct objfs_inode *ip, int flags,
		int bypass);
/* Find @ino among the inodes in memory and take a reference, or -ENOENT
 * (never loads from the index).  objfs_store_iput() drops it. */
int objfs_store_iget_cached(struct objfs_store *s, uint64_t ino,
		struct objfs_inode **out);
void objfs_store_iput(struct objfs_store *s, struct objfs_inode *ip);
/* The same, waiting for an inode being loaded (whose load may have read
 * the index before a change that must now be brought to it). */
int objfs_store_iget_loaded(struct objfs_store *s, uint64_t ino,
		struct objfs_inode **out);

/* file.c: the figures the status file shows (no lock held). */
struct objfs_status_figures;
int objfs_store_get_figures(struct objfs_store *s,
		struct objfs_status_figures *f);

/* Commit @t when @rc is 0 (the commit's number in *@seq, which may be
 * NULL), else abort it; the result. */
static inline int
objfs_commit_or_abort(struct objfs_meta_txn *t, int rc, uint64_t *seq)
{
	if (rc < 0) {
		objfs_meta_abort(t);
		return rc;
	}
	return objfs_meta_commit_seq(t, seq);
}

/* Everything committed so far durable (fsync): the journal flushed; with
 * the remote tier, every commit in the pool's log instead (the pool is
 * the durable home: a machine crash that takes the journal's tail finds
 * the index behind the pool's log, and the next mount builds it anew from
 * the pool, tier.c). */
static inline int
objfs_store_sync_index(struct objfs_store *s)
{
	if (s->tier)
		return s->tier_ops->sync(s->tier, objfs_meta_last_seq(s->meta));
	return objfs_meta_sync(s->meta);
}

/* mount.c */
/* Take the lock of the data directory open at @dirfd (its "lock" file):
 * the fd in *@lockfd_out, or -EBUSY with the pid of the daemon that holds
 * it in *@holder (when known) and what it is doing in @state (its lock
 * file's second line: "unmounting: ..." while it writes out; may be
 * NULL). */
int objfs_store_lock_dir(int dirfd, int *lockfd_out, long *holder,
		char *state, size_t state_size);

/* spiller_ops.c: how the spiller's threads reach the objects
 * (spiller.h): each call finds the inode in memory, takes its lock, does
 * the work (writeout.c, read.c, the chunk store) and lets it go. */
extern const struct objfs_spiller_ops objfs_store_spiller_ops;

/* ---- helpers every layer of the core uses ---- */

static inline uint64_t
min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t
max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* The sub-block size (log2) of the disk copy of @c; 0: checked whole. */
static inline unsigned
chunk_sub_shift(const struct objfs_store *s, const struct objfs_chunk *c)
{
	return (c->flags & OBJFS_CHUNK_SUMS) ? s->sub_shift : 0;
}

#endif
