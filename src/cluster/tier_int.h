/* SPDX-License-Identifier: MIT */
/*
 * tier_int.h - what the remote tier's files share: tier.c (the hold, the
 * head, shipping the index), pool.c (the chunk store in the pool),
 * tree.c, gc.c, shared.c, follow.c, lease.c, pins.c, compact.c, node.c
 * and note.c (counters, the cluster's state), and objfsctl check --remote
 * (src/tools/check_pool.c).  Only they include it.
 *
 * Locks: t->lock guards the shipping state below; it is a leaf, taken
 * under an inode's lock at most (an fsync waits on t->cv with it), or
 * under the index's lock by the commit hook (it reads the deadline), and
 * never held across a call into the index or the cluster.  lease_mu
 * (the leases this node holds) and deleg_mu (the delegations' table,
 * deleg.c) are leaves too, taken under the index's lock by the hook.
 */
#ifndef OBJFS_TIER_INT_H
#define OBJFS_TIER_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/be.h"
#include "meta/meta.h"
#include "src/remote.h"
#include "src/tier.h"

/* What the pool's operations took, for the status file. */
struct tier_counter {
	_Atomic uint64_t n, bytes, ns;
};

/* Chunks fetched ahead at most (of 1 MiB: 32 MiB outside the arena), and
 * how far ahead of a sequential reader. */
#define TIER_PREFETCH_MAX	64
#define TIER_PREFETCH_AHEAD	32

/* Collections asking this node at once, at most (more are answered
 * with nothing, and defer). */
#define TIER_PINS_REQS	8
/* What a collector asks every node with (a notify's payload). */
#define TIER_PINS_ASK	"objfs-pins"
#define TIER_PINS_FMT	"objfs.pins.%016" PRIx64
#define TIER_PINS_MAGIC	0x4e49504fu	/* "OPIN" */

/* A data directory's earlier daemons' node names, remembered (a local
 * super record each, made before that daemon changed the tree). */
#define TIER_OWNED_MAX	16
#define TIER_OWNED_FMT	"own.%016" PRIx64

/* Recalls of this node's directories waiting for its follower, at most;
 * directories given back recently, remembered. */
#define TIER_RECALL_REQS	16
#define TIER_RECALLED		8

/* A chunk's object, by its name's parts (pool.c). */
struct gc_name {
	uint64_t hi, lo;
	uint32_t len;
	uint32_t used;
};

struct objfs_tier {
	struct objfs_remote *r;
	char spec[256];
	char holder[256];
	unsigned timeout_s;		/* each operation's bound */
	unsigned hold_s;		/* the hold's duration */
	struct objfs_store *s;
	struct objfs_meta *m;

	/* The head as read at open (have_head 0: the pool has no tree). */
	int have_head;
	uint64_t tree, head_epoch, head_base, head_parts, head_ver;
	uint64_t head_floor, head_snap;
	unsigned head_version;
	uint64_t epoch;			/* this mount's */
	uint64_t logs_end;		/* the first log number the old epoch
					 * does not have (prepare) */
	int built;			/* prepare built the index from the
					 * pool in this mount */
	uint64_t fenced;		/* the epoch whose log prepare fenced */

	pthread_mutex_t lock;
	pthread_cond_t cv;		/* shipped moved, or work for the
					 * shipper, or stop */
	uint64_t shipped;		/* every commit up to it is in the
					 * pool's log, acknowledged */
	uint64_t want;			/* an fsync waits for this one */
	uint64_t lease_ns;		/* the hold is ours until then
					 * (monotonic) */
	int lost;			/* another took the hold: nothing
					 * is acknowledged any more */
	int stop;
	int reachable;			/* the last operation answered */
	char why[160];			/* the last failure */
	uint64_t since_ns;		/* unreachable since */
	int full_err;			/* -ENOSPC (OSDs full) or -EDQUOT (the
					 * pool's quota): the pool refused a
					 * write for want of room, and has
					 * taken none since */
	uint64_t ship_tries;		/* log puts tried, and the last one's */
	int ship_err;			/* result (tier_sync) */
	pthread_t ship_th, renew_th;
	int threads;

	/* Cached cluster space (statfs), refreshed by the renewer. */
	_Atomic uint64_t space_total, space_avail;

	struct tier_counter up, down, logs, dedup;

	/* The collector (gc.c).  gc_mu guards what follows; it is
	 * taken under an inode's lock (a put), held by the collector across
	 * one remove at most, and nothing is taken under it. */
	pthread_mutex_t gc_mu;
	pthread_cond_t gc_cv;
	uint64_t gc_gen;		/* batches begun count in inflight[gen & 1] */
	uint64_t inflight[2];
	_Atomic int gc_active;		/* puts are noted in @recent */
	struct gc_name *recent;		/* open addressing, gc_cap slots */
	size_t gc_n, gc_cap;
	int gc_running;
	char gc_last[256];		/* the last collection, for people */
	_Atomic uint64_t gc_runs, gc_removed, gc_removed_bytes;
	pthread_t gc_th;
	uint64_t gc_next_ns;		/* (t->lock) the next collection */

	/* Chunks fetched ahead of a sequential reader (pool.c): pf_mu
	 * guards the table, a leaf taken under an inode's lock, never
	 * held across a wait for the cluster. */
	pthread_mutex_t pf_mu;
	/* (pf_* below) */
	struct tier_prefetch {
		uint64_t hi, lo;
		uint32_t len;
		uint64_t t_ns;
		struct objfs_remote_fetch *f;
	} pf[TIER_PREFETCH_MAX];
	unsigned pf_n;
	_Atomic uint64_t pf_hits, pf_started;

	/* Shared mode (-o shared, shared.c): many mounts of one
	 * namespace, each commit a record of the head's epoch's log. */
	int shared;
	uint64_t node;			/* this mount's number (random) */
	unsigned lease_s;		/* a write lease outlives its node's
					 * last renewal by this */
	unsigned deadline_s;		/* this node acknowledges for this long
					 * after a renewal began (less a margin):
					 * the shorter of its lock's and the
					 * shared hold's (shared mode), the
					 * hold's (exclusive) */
	_Atomic uint64_t pos;		/* the log applied up to here */
	/* renew_mu: one renewal of this node's lock at a time, so that a
	 * renewal that finds the lock held again (another thread just took
	 * it back after a lapse) returns only once that lapse is handled:
	 * every lease broken meanwhile is fenced (lapsed()).  The outermost
	 * of the tier's locks: taken with no store lock held; catch_mu and
	 * everything a catch-up takes are taken under it. */
	pthread_mutex_t renew_mu;
	/* A lapse of the shared hold, or of this node's lock, not yet
	 * handled whole (renew_mu): a retake whose answer was lost leaves
	 * the lock held, and the renewal that then finds it held must still
	 * read the head (simulator, seed 42 of 250 actions). */
	int hold_lapsed, lock_lapsed;
	/* catch_mu: one catch-up at a time; taken with no store lock held,
	 * it takes the store's apply lock (store_int.h) under it. */
	pthread_mutex_t catch_mu;
	pthread_t follow_th;
	int follow_started;
	_Atomic uint64_t sh_appended, sh_applied, sh_conflicts,
		sh_refused, sh_broken;
	/* Records of this node's own the follower found already committed
	 * here when it came to apply them (follow.c, apply_commit). */
	_Atomic uint64_t sh_own_skipped;
	int attached;			/* tier_share_attach done */
	int follow_stop;		/* (lock) the follower stops */
	int kicked;			/* (lock) a notify came: look now */
	uint64_t watch;			/* the watch of TIER_WATCH */
	int watching;
	int quiesced;			/* tier_share_quiesce done */
	int store_gone;			/* catch_mu: from the end of the
					 * quiesce on, nothing is applied to
					 * the store (its inodes and locks go
					 * before the tier stops; a renewal
					 * that finds the lock lapsed would
					 * apply into them: seed 142) */
	int took_over;			/* ... and took this data directory's
					 * killed daemon's leases over */
	/* The node names of this data directory's earlier daemons, whose
	 * leases and directories are this mount's (attach; the local
	 * records TIER_OWNED_FMT, and SUPER_OWNER). */
	uint64_t owned[TIER_OWNED_MAX];
	size_t nowned;
	/* The write leases this node holds, each with its grant: lease_mu
	 * guards held[] (open addressing by inode, ino 0 free).  A leaf:
	 * taken under the index's lock (the commit hook), and no other
	 * lock is taken under it. */
	pthread_mutex_t lease_mu;
	struct tier_lease {
		uint64_t ino;
		uint64_t tok;		/* the log position that granted it */
		int fenced;		/* found lost: never published */
	} *held;
	size_t held_n, held_cap;
	_Atomic uint64_t sh_fenced, sh_lapses;
	_Atomic uint64_t sh_late;	/* records that landed past the
					 * deadline: in doubt, not acknowledged */
	_Atomic uint64_t view_ns;	/* the last catch-up that reached the
					 * log's end began then (monotonic) */
	/* Compaction (compact.c). */
	char dir[PATH_MAX];		/* the data directory */
	uint64_t compact_min;		/* records, 0: never */
	pthread_t compact_th;
	int compact_started;
	_Atomic uint64_t compactions, compact_removed;
	/* This node's registrations in objfs.nodes, counted: each value
	 * differs, so a compactor removes a gone node's entry only if the
	 * node did not register again since it was read (compact.c). */
	_Atomic uint64_t reg_count;
	/* A collector's requests for this node's pins (t->lock), answered
	 * by the follower: notify ids and watch cookies. */
	struct { uint64_t id, cookie; } pins_req[TIER_PINS_REQS];
	unsigned pins_n;
	/* Directory delegations (deleg.c).  deleg_mu guards dl[] (every
	 * delegation of the tree as this node applied the log: its
	 * directory, holder, token; this node's with their last use and
	 * whether lost), dl_held (how many are this node's) and the
	 * recently given back; a leaf, taken under the index's lock by the
	 * hook. */
	pthread_mutex_t deleg_mu;
	struct tier_deleg {
		uint64_t dir, node, tok, used_ns;
		int lost;
	} *dl;
	size_t dl_n, dl_cap, dl_held;
	/* dl[]'s index by directory: linear probing, a slot holds an index
	 * of dl[] plus 1 (0: empty); dl_nslot a power of 2, at least twice
	 * dl_cap. */
	uint32_t *dl_slot;
	size_t dl_nslot;
	struct { uint64_t dir, ns; } recalled[TIER_RECALLED];
	unsigned recalled_i;
	unsigned batch_ms;		/* remote_batch: what waits ships
					 * after this long (0: nothing held) */
	int diverged;			/* (lock) a delegation with commits
					 * waiting was taken away: writes
					 * nothing more */
	/* Commits waiting in the outbox, since when; counters. */
	_Atomic uint64_t dl_waiting, dl_waiting_ns;
	_Atomic uint64_t dl_deferred, dl_batches, dl_granted, dl_released,
		dl_recalls, dl_answered, dl_broken;
	/* Records of waiting commits whose put did not answer; of those,
	 * found in the log (their commits shipped, not put again). */
	_Atomic uint64_t dl_unsure, dl_unsure_landed;
	/* Records of this node's whose outcome it does not know (t->lock):
	 * each put that did not answer, or whose local commit failed after
	 * it, until the follower finds what the log holds at its position
	 * (lease.c, tier_doubt_settle). */
	struct tier_doubt {
		uint64_t pos;
		unsigned char *rec;
		size_t len;
		size_t obn, count;	/* the waiting commits it carries:
					 * their bytes first, how many */
		int unsure;		/* its put did not answer (else it
					 * landed, and the local commit that
					 * followed may yet fail) */
		struct tier_doubt *next;
	} *doubt;
	size_t ndoubt;
	/* Recalls of other nodes, answered by the follower (t->lock). */
	struct { uint64_t id, cookie, dir; } recall_req[TIER_RECALL_REQS];
	unsigned recall_n;
};

/* The inode a tree's super key "<letter><16 hex digits>" names (a lease,
 * its grant, a delegation, its token) when its letter is in @letters:
 * *@which gets the letter; 0 for any other key. */
static inline uint64_t
tier_key_ino(const unsigned char *k, size_t klen, const char *letters,
		char *which)
{
	char hex[17];
	char *end;
	uint64_t ino;

	if (klen != 17 || !k[0] || !strchr(letters, k[0]))
		return 0;
	memcpy(hex, k + 1, 16);
	hex[16] = '\0';
	ino = strtoull(hex, &end, 16);
	*which = (char)k[0];
	return *end ? 0 : ino;
}

/* A super record of the tree, 0 when it is absent. */
static inline int
tier_super_or_0(struct objfs_meta_txn *tx, const char *k, uint64_t *v)
{
	int rc = objfs_meta_super_get(tx, k, v);

	if (rc == -ENOENT) {
		*v = 0;
		rc = 0;
	}
	return rc;
}

/* ---- connect.c: the store behind the tier, by its spec's kind ---- */
/* rados:POOL[/NS] or s3://BUCKET[/PREFIX] (src/remote.h's table): 0, or
 * -errno with what went wrong in @err (-EINVAL: neither). */
int objfs_tier_remote_connect(const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize);

/* ---- shared.c: shared mode ---- */

#define TIER_NODE_FMT	"objfs.node.%016" PRIx64
#define TIER_LEASE_FMT	"w%016" PRIx64	/* a super key: the writer's node */
#define TIER_GRANT_FMT	"g%016" PRIx64	/* ... and the log position at which
					 * the lease was granted (its token) */
/* How often a node looks for records it has not applied (it is also told
 * at once by a notify). */
#define TIER_FOLLOW_MS	100u
/* What mounts watch and an appender notifies: the head. */
#define TIER_WATCH	"objfs.head"

/* A mount's open, attach, start, quiesce, stop and close; status lines. */
int tier_share_open(struct objfs_tier *t, char *msg, size_t msgsize);
int tier_share_attach(struct objfs_tier *t, struct objfs_store *s, char *msg,
		size_t msgsize);
int tier_share_start(struct objfs_tier *t, char *msg, size_t msgsize);
void tier_share_quiesce(struct objfs_tier *t);
void tier_share_stop(struct objfs_tier *t);
void tier_share_close(struct objfs_tier *t);
size_t tier_share_status(struct objfs_tier *t, char *buf, size_t size);

/* ---- follow.c: following the log, the node's lock ---- */

/* Renew this node's lock (a lapse found is repaired: the lock retaken,
 * the node registered, the log applied). */
int tier_share_renew(struct objfs_tier *t);
/* tier.h's catch_up, fresh and view for shared mode. */
int tier_share_catch_up(struct objfs_tier *t);
int tier_share_fresh(struct objfs_tier *t);
int tier_share_view(struct objfs_tier *t);
/* The follower looks now (a notify came; an open applied records). */
void tier_share_kick(void *arg);
/* The log record this thread's commit applies (0: none; follow.c
 * sets it around each record it applies), and whether it is this node's
 * own, found in the log after its put was in doubt (*@count: the waiting
 * commits it carried). */
uint64_t tier_applying(void);
int tier_applying_own(size_t *count);
/* Where this index is in the pool's log (its last applied record). */
int tier_index_pos(struct objfs_tier *t, uint64_t *pos);

/* ---- node.c: a node as the others see it ---- */

/* The name of node @node's lock in the pool. */
void tier_node_name(char name[64], uint64_t node);
/* 1 when node @node holds its lock (it lives), 0 when not, or -errno. */
int tier_node_alive(struct objfs_tier *t, uint64_t node);
/* The head names an epoch other than this node's (an exclusive mount took
 * the namespace over): the node is lost (nothing more is written, EIO),
 * -EIO; 0 when it is this node's; -errno when it cannot be read. */
int tier_epoch_check(struct objfs_tier *t);
/* 1 when node @node was one of this data directory's daemons (shared.c
 * notes them: their leases and directories are this mount's). */
int tier_owned(const struct objfs_tier *t, uint64_t node);
/* The local deadline's margin: min(remote_lease / 4, 2 s). */
uint64_t tier_node_margin_ns(const struct objfs_tier *t);
/* -ETIME past this node's local deadline (it may have stopped, and
 * been given up by the others): nothing is appended, nor kept to be,
 * nor trusted as held (node.c). */
int tier_past_deadline(struct objfs_tier *t);

/* ---- lease.c: leases and the commit hook ---- */

/* tier.h's lease, unblock, publishing, lease_state and forget. */
int tier_share_lease(struct objfs_tier *t, struct objfs_meta_txn *tx,
		uint64_t ino, int take);
int tier_share_unblock(struct objfs_tier *t);
void tier_share_publishing(struct objfs_tier *t, uint64_t ino);
int tier_share_lease_state(struct objfs_tier *t, uint64_t ino);
void tier_share_forget(struct objfs_tier *t, uint64_t ino);

/* Record @pos of the log is @rec: 1 when it is one of this node's own
 * whose put was in doubt (*@obn, *@count: the bytes and number of the
 * waiting commits it carries, first in its payload), else 0.  Once the
 * index applied the log up to @upto, the records in doubt at or below it
 * are settled (committed here, or their place taken): forgotten.
 * tier_doubt_free at close. */
int tier_doubt_settle(struct objfs_tier *t, uint64_t pos, const void *rec,
		size_t len, size_t *obn, size_t *count);
void tier_doubt_forget(struct objfs_tier *t, uint64_t upto);
void tier_doubt_free(struct objfs_tier *t);
/* The hook's side (follow.c keeps the list): a record noted before its
 * put (@obn bytes of @count waiting commits first in it); its put refused
 * (@drop: never in the log) or not answered; whether one in doubt carries
 * waiting commits. */
int tier_doubt_add(struct objfs_tier *t, uint64_t pos, const unsigned char *rec,
		size_t len, size_t obn, size_t count);
void tier_doubt_put(struct objfs_tier *t, uint64_t pos,
		const unsigned char *rec, size_t len, int drop);
int tier_doubt_carrying(struct objfs_tier *t);
/* The commit hook (objfs_meta_set_hook) of a shared mount. */
int tier_share_hook(void *arg, struct objfs_meta_txn *tx, const void *pl,
		size_t n, uint64_t *pos);
/* The node that holds @ino's lease in @tx's tree (0: none). */
int tier_lease_node(struct objfs_meta_txn *tx, uint64_t ino, uint64_t *node);
/* The inode a lease super key names, or 0. */
uint64_t tier_lease_ino(const unsigned char *k, size_t klen);
/* The leases node @owner holds (of @only, when not 0), in one commit:
 * @publish gives them back, each file put whole as this index has it,
 * else they become this node's; *@count how many. */
int tier_share_rewrite_leases(struct objfs_tier *t, uint64_t owner,
		uint64_t only, int publish, size_t *count);

/* ---- deleg.c: directory delegations, deferred commits ---- */

#define TIER_DELEG_FMT	"D%016" PRIx64	/* a super key: the node that holds
					 * the directory */
#define TIER_DTOK_FMT	"T%016" PRIx64	/* ... and the log position that
					 * granted it (its token) */
#define TIER_RECALL_ASK	"objfs-recall"	/* + directory + holder, 8 bytes each */
/* In the data directory: its index holds commits the tree refused. */
#define TIER_DELEG_REFUSED	"deleg.refused"

/* This data directory's index is ahead of the tree (changes the tree
 * refused, or never saw): its next open builds it anew from the pool. */
void tier_mark_rebuild(struct objfs_tier *t);
/* The directory a delegation key names (*@tok: the token's key), or 0. */
uint64_t tier_deleg_key(const unsigned char *k, size_t klen, int *tok);
/* The hook: may the commit whose entries for the tree are @p wait in the
 * outbox (*@defer)?  -EBUSY when it touches a directory another node
 * holds (tier_deleg_blocked says which). */
int tier_deleg_classify(struct objfs_tier *t, const void *p, size_t n,
		int *defer);
/* This thread's commit ships what waits (a flush, a giving back). */
int tier_deleg_flushing(void);
/* A delegation this node held was taken away (then nothing waiting may
 * ship). */
int tier_deleg_lost_any(struct objfs_tier *t);
/* The hook kept a commit in the outbox; shipped @count of them. */
void tier_deleg_deferred(struct objfs_tier *t);
void tier_deleg_shipped(struct objfs_tier *t, size_t count);
/* Every inode this node made so far is within other nodes' reach (a
 * directory given back or lost, a name put elsewhere). */
void tier_deleg_disown(struct objfs_tier *t);
/* A delegation key a record puts or deletes (@own: this node's). */
void tier_deleg_moved(struct objfs_tier *t, int own, int op,
		const unsigned char *k, size_t klen, const unsigned char *v,
		size_t vlen);
/* tier.h's dir_use, dir_read and flush. */
int tier_deleg_use(struct objfs_tier *t, uint64_t dir);
int tier_deleg_read(struct objfs_tier *t, uint64_t dir);
/* deleg_table.c, deleg_mu held: @dir's entry of dl[] (NULL: none); added
 * if missing (NULL: no memory); taken out (another entry may move into
 * its place: pointers into dl[] do not outlive a tier_dl_del). */
struct tier_deleg *tier_dl_find(struct objfs_tier *t, uint64_t dir);
struct tier_deleg *tier_dl_add(struct objfs_tier *t, uint64_t dir);
void tier_dl_del(struct objfs_tier *t, uint64_t dir);
int tier_deleg_recall_all(struct objfs_tier *t);
int tier_deleg_flush(struct objfs_tier *t);
/* The watch's recall requests; the follower's pass. */
void tier_deleg_watched(struct objfs_tier *t, uint64_t notify_id,
		uint64_t cookie, const unsigned char *p, size_t len);
void tier_deleg_tick(struct objfs_tier *t);
/* Unmount: every directory given back, what waits shipped. */
int tier_deleg_release_all(struct objfs_tier *t);
/* The directory (and holder) that refused this thread's last commit. */
int tier_deleg_blocked(uint64_t *dir, uint64_t *node);
/* Get @dir back from @node (asked, or broken once its lock lapsed). */
int tier_deleg_recall(struct objfs_tier *t, uint64_t dir, uint64_t node);
/* A mount: the tree's delegations read (the last daemon's, @prev, are
 * this mount's), before the log is applied; after it, made this mount's
 * in the tree (-ESTALE when one was taken away with commits waiting). */
int tier_deleg_attach(struct objfs_tier *t, uint64_t prev);
int tier_deleg_take_over(struct objfs_tier *t, uint64_t prev);
/* In @tx: the delegations of node @prev this mount took over at attach
 * become its own in the tree (tier_share_rewrite_leases). */
int tier_deleg_rewrite(struct objfs_tier *t, struct objfs_meta_txn *tx,
		uint64_t prev);
size_t tier_deleg_status(struct objfs_tier *t, char *buf, size_t size);

/* ---- pins.c: the collector's pins ---- */

/* The collector's side of pins (doc/design.md, "Garbage"): every node
 * watching the head is asked to apply the log and name the chunks of the
 * versions open on it (its object objfs.pins.<node>); @add gets each of
 * them, *@nodes (malloc'd, *@n of them) the nodes that answered.  -EBUSY
 * (why in @why) when one did not answer in time. */
int tier_share_pins(struct objfs_tier *t,
		int (*add)(void *arg, uint64_t hi, uint64_t lo, uint32_t len),
		void *arg, uint64_t **nodes, size_t *n, char *why,
		size_t whysize);
/* Node @node has a lock object in the pool and did not answer: 0 when it
 * is gone (its objects are removed), -EBUSY (why in @why) when it lives,
 * or -errno. */
int tier_share_unanswered(struct objfs_tier *t, uint64_t node, char *why,
		size_t whysize);

/* The watch's callback (objfs_remote_watch). */
void tier_share_watched(void *arg, uint64_t notify_id, uint64_t cookie,
		const void *data, size_t len);
/* The follower answers the collectors that asked for this node's pins. */
void tier_share_answer_pins(struct objfs_tier *t);

/* ---- compact.c: bounded history ---- */

/* This node needs the log from @pos on (objfs.nodes). */
int tier_compact_register(struct objfs_tier *t, uint64_t pos);
void tier_compact_unregister(struct objfs_tier *t);
/* The compactor's thread (none with remote_compact=0); it stops with the
 * follower (follow_stop). */
int tier_compact_start(struct objfs_tier *t);
void tier_compact_stop(struct objfs_tier *t);

/* ---- tree.c: the tree's layout in the pool ---- */

/* Super records that say which tree, epoch and mount a data directory's
 * index is the cache of (never shipped: meta/ship.c leaves them out). */
#define SUPER_TREE	"remote_tree"
#define SUPER_EPOCH	"remote_epoch"
#define SUPER_OWNER	"remote_owner"

#define TIER_HOLD	"objfs.hold"
#define TIER_GC		"objfs.gc."	/* + node: the pool's time */
#define TIER_HEAD_MAX	512
#define TIER_LOG_MAGIC	0x474f4c4fu	/* "OLOG" */
#define TIER_FENCE_MAGIC 0x434e464fu	/* "OFNC": the epoch's log ends here */
#define TIER_SNAP_MAGIC	0x504e534fu	/* "OSNP" */
#define TIER_LOG_HDR	32
#define TIER_SNAP_HDR	24

/* The head (objfs.head).  Version 2 adds @floor (log records up to it
 * may be gone: a node whose index is behind it builds it anew) and names
 * snapshot parts by a number of the snapshot's own too (a shared tree is
 * compacted into snapshots within one epoch); version 1 heads name them
 * by epoch alone. */
struct head {
	uint64_t tree, epoch, owner, base, parts, bytes;
	uint64_t floor;
	uint64_t snap;		/* version 2: the snapshot's own number */
	unsigned version;
};

uint64_t tier_random64(void);
int tier_head_parse(const char *buf, size_t len, struct head *h);
/* Log record @p (numbered @first) checked: -EPROTO when damaged; @cb
 * (may be NULL) gets each commit; *@last its last number. */
int tier_log_walk(const unsigned char *p, size_t len, uint64_t first,
		uint64_t *last,
		int (*cb)(void *arg, uint64_t seq, const void *pl, size_t n),
		void *arg);
/* Is log record @p (@len bytes) a fence: the end of its epoch's log,
 * put by a mount that took the namespace over? */
int tier_log_is_fence(const unsigned char *p, size_t len);
/* Fence epoch @epoch's log after its last record (from @base + 1 on):
 * no mount of it can add a record any more.  *@end: the fence's number
 * (every record before it is the log). */
int tier_fence_epoch(struct objfs_tier *t, uint64_t epoch, uint64_t base,
		uint64_t *end);
/* Snapshot part @k checked: 0 or -EPROTO. */
int tier_snap_check(const unsigned char *p, size_t len, uint64_t k);
size_t tier_head_text(const struct head *h, char *buf, size_t size);
void tier_snap_name(char name[64], const struct head *h, uint64_t part);
/* Read and parse objfs.head (-ENOENT: none; -EPROTO: damaged); its
 * RADOS version in *@ver (may be NULL). */
int tier_head_read(struct objfs_tier *t, struct head *h, uint64_t *ver);
/* Build the tree of head @h into the index @m (empty): its snapshot,
 * then its epoch's log to the end; *@end: one past the last record
 * applied.  Compaction racing the build (a snapshot part or log record
 * gone meanwhile) makes it start again from the new head, which it puts
 * in *@h.  *@entries, *@records: what it read. */
int tier_tree_build(struct objfs_tier *t, struct objfs_meta *m, struct head *h,
		uint64_t *end, uint64_t *entries, uint64_t *records);
/* Every file of directory @dir removed. */
int tier_clear_dir(const char *dir);
void tier_log_name(char name[64], uint64_t epoch, uint64_t seq);
/* @fn(@arg, i) for every i in [0, @n), up to @width (at most 16) at once
 * on threads of their own (fan.c); each keeps its own result. */
void tier_fan(size_t n, unsigned width, void (*fn)(void *arg, size_t i),
		void *arg);
/* The index's record of what it caches: tree, epoch, owner (a mount). */
int tier_set_supers(struct objfs_meta *m, uint64_t tree, uint64_t epoch,
		uint64_t owner);
/* A snapshot part upload (objfs_meta_dump's callback). */
struct snap_up {
	struct objfs_tier *t;
	struct head h;			/* epoch, snap (version 2): the names */
	uint64_t parts, bytes;
	int rc;
};
int tier_snap_part(void *arg, const void *p, size_t len);
/* Remove the snapshot parts of head @old and its epoch's logs after its
 * base. */
void tier_remove_epoch(struct objfs_tier *t, const struct head *old);
/* Remove the snapshot parts of head @h. */
void tier_remove_snapshot(struct objfs_tier *t, const struct head *h);
/* 1 when the head still names this mount's epoch, 0 not, or -errno. */
int tier_head_ours(struct objfs_tier *t);
int tier_prepare(struct objfs_tier *t, const char *dir, struct objfs_meta *m,
		int *stale, char *msg, size_t msgsize);

/* ---- gc.c: the collector ---- */

/* A batch (or a truncation's new copy) begins putting chunks and ends
 * after its commit: a collection waits for those begun before it. */
unsigned tier_gc_enter(struct objfs_tier *t);
void tier_gc_leave(struct objfs_tier *t, unsigned g);
/* A chunk is about to be put or found: a collection under way keeps it. */
void tier_gc_touch(struct objfs_tier *t, uint64_t hi, uint64_t lo,
		uint32_t len);
/* Remove the chunks no record names that are older than @grace_s, and
 * what earlier epochs left; a line for people in @report. */
int tier_gc(struct objfs_tier *t, unsigned grace_s, char *report,
		size_t size);
int tier_gc_init(struct objfs_tier *t);
/* Order of chunk names (qsort, bsearch). */
int tier_name_cmp(const void *a, const void *b);
void tier_gc_fini(struct objfs_tier *t);
/* The collector's thread: one collection every OBJFS_GC_INTERVAL. */
void *tier_gc_main(void *arg);

/* note.c.  A pool operation finished with @rc: the cluster answered
 * (0, or an error of its own), or did not (-ETIMEDOUT and the like: logged once,
 * with @what, and shown in the status until one answers again). */
void objfs_tier_note(struct objfs_tier *t, int rc, const char *what);
/* @bytes moved by an operation begun at @t0 (objfs_mono_ns). */
void objfs_tier_count(struct tier_counter *c, uint64_t bytes, uint64_t t0);
/* The chunk store in the pool (pool.c). */
extern const struct objfs_copy_ops objfs_copy_pool;
/* Let go of every chunk fetched ahead (before the connection closes). */
void tier_prefetch_clear(struct objfs_tier *t);

#endif
