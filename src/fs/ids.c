/* SPDX-License-Identifier: MIT */
/*
 * ids.c - where new inode numbers and directory cookies come from: the
 * tree's counters (super records next_ino, next_cookie), or, in shared
 * mode, a range of this node's own reserved from them (doc/design.md,
 * "Delegations").  Called by namespace.c under ns_lock.
 */
#include <config.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

#include "meta/meta_keys.h"
#include "src/store_int.h"

/* Shared mode: a node hands out inode numbers and directory cookies from
 * a range of its own, reserved in the tree this many at a time (one
 * record), so that a change that makes a name touches no counter of the
 * tree, and may wait in this node's outbox (src/cluster/deleg.c). */
#define OBJFS_SHARED_IDS	4096

/*
 * Room in this node's ranges for @nino inode numbers and @nck cookies
 * (ns_lock held; shared mode only): the next of each, and the ends, are
 * this data directory's own super records; an empty range is reserved
 * from the tree's counters in a commit of its own, which goes to the log
 * at once (and moves what this node has handed out so far
 * to the range's start: s->own_lo, s->own_hi).
 */
int
objfs_ids_room(struct objfs_store *s, unsigned nino, unsigned nck)
{
	struct objfs_meta_txn *t;
	uint64_t ino = 0, ck = 0, ino_end = 0, ck_end = 0;
	int rc;

	if (!s->shared || (s->next_ino + nino <= s->ino_end &&
	    s->next_cookie + nck <= s->cookie_end))
		return 0;
	rc = objfs_store_begin_change(s, &t);
	if (rc < 0)
		return rc;
	if (!s->ino_end &&
	    objfs_meta_super_get(t, OBJFS_SUPER_IDS_INO, &ino) == 0 &&
	    objfs_meta_super_get(t, OBJFS_SUPER_IDS_INO_END, &ino_end) == 0 &&
	    objfs_meta_super_get(t, OBJFS_SUPER_IDS_CK, &ck) == 0 &&
	    objfs_meta_super_get(t, OBJFS_SUPER_IDS_CK_END, &ck_end) == 0 &&
	    ino + nino <= ino_end && ck + nck <= ck_end) {
		/* This data directory's range, from its last mount. */
		objfs_meta_abort(t);
		s->next_ino = ino;
		s->ino_end = ino_end;
		s->next_cookie = ck;
		s->cookie_end = ck_end;
		atomic_store(&s->own_lo, ino);
		atomic_store(&s->own_hi, ino);
		return 0;
	}
	if ((rc = objfs_meta_super_get(t, OBJFS_SUPER_NEXT_INO, &ino)) < 0 ||
	    (rc = objfs_meta_super_get(t, OBJFS_SUPER_NEXT_COOKIE, &ck)) < 0 ||
	    (rc = objfs_meta_super_put(t, OBJFS_SUPER_NEXT_INO,
				ino + OBJFS_SHARED_IDS)) < 0 ||
	    (rc = objfs_meta_super_put(t, OBJFS_SUPER_NEXT_COOKIE,
				ck + OBJFS_SHARED_IDS)) < 0 ||
	    (rc = objfs_meta_super_put(t, OBJFS_SUPER_IDS_INO, ino)) < 0 ||
	    (rc = objfs_meta_super_put(t, OBJFS_SUPER_IDS_INO_END,
				ino + OBJFS_SHARED_IDS)) < 0 ||
	    (rc = objfs_meta_super_put(t, OBJFS_SUPER_IDS_CK, ck)) < 0 ||
	    (rc = objfs_meta_super_put(t, OBJFS_SUPER_IDS_CK_END,
				ck + OBJFS_SHARED_IDS)) < 0) {
		objfs_meta_abort(t);
		return rc;
	}
	rc = objfs_meta_commit(t);
	if (rc < 0)
		return rc;
	s->next_ino = ino;
	s->ino_end = ino + OBJFS_SHARED_IDS;
	s->next_cookie = ck;
	s->cookie_end = ck + OBJFS_SHARED_IDS;
	atomic_store(&s->own_lo, ino);
	atomic_store(&s->own_hi, ino);
	return 0;
}

/* The counters after a change that hands out inode numbers below
 * @next_ino (0: none) and cookies below @next_ck: the tree's, or in
 * shared mode this node's range's (and the inodes it made since it last
 * shipped reach up to @next_ino). */
int
objfs_ids_put(struct objfs_store *s, struct objfs_meta_txn *t, uint64_t next_ino,
		uint64_t next_ck)
{
	int rc = 0;

	if (next_ino)
		rc = objfs_meta_super_put(t, s->shared ? OBJFS_SUPER_IDS_INO :
				OBJFS_SUPER_NEXT_INO, next_ino);
	if (rc == 0)
		rc = objfs_meta_super_put(t, s->shared ? OBJFS_SUPER_IDS_CK :
				OBJFS_SUPER_NEXT_COOKIE, next_ck);
	if (rc == 0 && s->shared && next_ino) {
		uint64_t hi = atomic_load(&s->own_hi);

		while (hi < next_ino &&
		       !atomic_compare_exchange_weak(&s->own_hi, &hi, next_ino))
			;
	}
	return rc;
}
