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

#include "src/base/be.h"
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

struct seen {
	uint64_t ino, ck;	/* the highest of this node's range named */
	uint64_t ino_lo, ino_hi, ck_lo, ck_hi;
};

static int
seen_one(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct seen *sn = arg;
	uint64_t x;

	(void)v;
	(void)vlen;
	if (op != OBJFS_JOURNAL_PUT)
		return 0;
	if (db == OBJFS_MDB_INODE && klen == 8) {
		x = get_be64(k);
		if (x >= sn->ino_lo && x < sn->ino_hi && x >= sn->ino)
			sn->ino = x + 1;
	} else if (db == OBJFS_MDB_DIRCOOKIE && klen == 16) {
		x = get_be64(k + 8);
		if (x >= sn->ck_lo && x < sn->ck_hi && x >= sn->ck)
			sn->ck = x + 1;
	}
	return 0;
}

/*
 * A record of the pool's log (@p, @n bytes) is applied in @t (ns_lock
 * held): when it names inode numbers or cookies of this node's range at
 * or past the next it would hand out, it was this node's own, put by a
 * change whose caller got an error (its put did not answer, and landed):
 * the numbers are used, and the next ones move past them, here and in
 * the data directory's records, so that no number names two objects.
 */
int
objfs_ids_seen(struct objfs_store *s, struct objfs_meta_txn *t, const void *p,
		size_t n)
{
	struct seen sn = { 0 };
	int rc;

	if (!s->shared)
		return 0;
	if (!s->ino_end) {
		/* Not loaded since the mount: the data directory's. */
		uint64_t ino, ino_end, ck, ck_end;

		if (objfs_meta_super_get(t, OBJFS_SUPER_IDS_INO, &ino) < 0 ||
		    objfs_meta_super_get(t, OBJFS_SUPER_IDS_INO_END,
				&ino_end) < 0 ||
		    objfs_meta_super_get(t, OBJFS_SUPER_IDS_CK, &ck) < 0 ||
		    objfs_meta_super_get(t, OBJFS_SUPER_IDS_CK_END, &ck_end) < 0)
			return 0;	/* no range yet: nothing of it used */
		s->next_ino = ino;
		s->ino_end = ino_end;
		s->next_cookie = ck;
		s->cookie_end = ck_end;
		atomic_store(&s->own_lo, ino);
		atomic_store(&s->own_hi, ino);
	}
	sn.ino = s->next_ino;
	sn.ck = s->next_cookie;
	sn.ino_lo = s->next_ino;
	sn.ino_hi = s->ino_end;
	sn.ck_lo = s->next_cookie;
	sn.ck_hi = s->cookie_end;
	rc = objfs_meta_payload_walk(p, n, seen_one, &sn);
	if (rc < 0 || (sn.ino == s->next_ino && sn.ck == s->next_cookie))
		return rc;
	rc = objfs_ids_put(s, t, sn.ino, sn.ck);
	if (rc == 0) {
		s->next_ino = sn.ino;
		s->next_cookie = sn.ck;
	}
	return rc;
}
