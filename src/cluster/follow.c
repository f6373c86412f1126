/* SPDX-License-Identifier: MIT */
/*
 * follow.c - a shared node's view of the pool's log (doc/design.md,
 * "Many nodes on one namespace"): catch-up (apply every record this node
 * has not, one pass shared by concurrent callers), the open's view of the
 * log (close-to-open), and the node's lock: its renewal, its local
 * deadline, and a lapse noticed and repaired (the lock taken again, the
 * node registered again, the log applied: a lease another node broke
 * meanwhile is fenced as its record is applied).
 *
 * Below the commit hook and the leases (lease.c) and the collector's
 * pins (pins.c), which call it; it calls only compaction's register
 * (compact.c) and the node's names (node.c).  The record a
 * thread applies is kept here (tier_applying), and the hook reads it;
 * so are the records of this node's own whose put is in doubt, settled
 * as the log is read (tier_doubt_*, the hook notes them).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/clock.h"
#include "src/base/deadline.h"
#include "src/base/csum.h"
#include "src/base/log.h"
#include "meta/meta_keys.h"
#include "src/store_int.h"
#include "src/cluster/tier_int.h"

/* The log record this thread's commit applies (0: none): the hook puts
   it in the log no more (lease.c); whether it is this node's own, found
   in the log after its put was in doubt, and how many waiting commits it
   carried. */
static _Thread_local uint64_t tl_applying;
static _Thread_local int tl_own;
static _Thread_local size_t tl_own_count;

uint64_t
tier_applying(void)
{
	return tl_applying;
}

int
tier_applying_own(size_t *count)
{
	*count = tl_own ? tl_own_count : 0;
	return tl_own;
}

/* ---- records in doubt ------------------------------------------------- */

/*
 * A record this node put whose outcome it does not know: the put did not
 * answer (it may have landed, now or later), or it landed and the local
 * commit that follows failed.  Either way the local commit was rolled
 * back, and the record, if it is in the log, is this node's: what it
 * consumed here (inode numbers and cookies, a lease or a directory it
 * granted, the waiting commits it carried) must be taken from it when
 * the follower finds it, never assumed undone.  A record can only be at
 * its own position: once the log holds another there, it never will be.
 * So every record is noted here before its put (t->doubt, under t->lock)
 * and forgotten when the log's record at its position is settled
 * (tier_doubt_settle), or when its put was refused outright.
 */
#define DOUBT_MAX	256

int
tier_doubt_add(struct objfs_tier *t, uint64_t pos, const unsigned char *rec,
		size_t len, size_t obn, size_t count)
{
	struct tier_doubt *d;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	if (t->ndoubt == DOUBT_MAX) {
		rc = -EAGAIN;
	} else if (!(d = calloc(1, sizeof(*d))) || !(d->rec = malloc(len))) {
		free(d);
		rc = -ENOMEM;
	} else {
		memcpy(d->rec, rec, len);
		d->pos = pos;
		d->len = len;
		d->obn = obn;
		d->count = count;
		d->next = t->doubt;
		t->doubt = d;
		t->ndoubt++;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/* The put of @rec at @pos was refused (@drop: it is not in the log, and
 * never will be), or did not answer. */
void
tier_doubt_put(struct objfs_tier *t, uint64_t pos, const unsigned char *rec,
		size_t len, int drop)
{
	pthread_mutex_lock(&t->lock);
	for (struct tier_doubt **pp = &t->doubt; *pp; pp = &(*pp)->next) {
		struct tier_doubt *d = *pp;

		if (d->pos != pos || d->len != len || memcmp(d->rec, rec, len))
			continue;
		if (!drop) {
			d->unsure = 1;
			break;
		}
		*pp = d->next;
		free(d->rec);
		free(d);
		t->ndoubt--;
		break;
	}
	pthread_mutex_unlock(&t->lock);
}

int
tier_doubt_settle(struct objfs_tier *t, uint64_t pos, const void *rec,
		size_t len, size_t *obn, size_t *count)
{
	int own = 0;

	pthread_mutex_lock(&t->lock);
	for (struct tier_doubt *d = t->doubt; d && !own; d = d->next) {
		if (d->pos == pos && d->len == len && !memcmp(d->rec, rec,
				len)) {
			own = 1;
			*obn = d->obn;
			*count = d->count;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return own;
}

void
tier_doubt_forget(struct objfs_tier *t, uint64_t upto)
{
	pthread_mutex_lock(&t->lock);
	for (struct tier_doubt **pp = &t->doubt; *pp;) {
		struct tier_doubt *d = *pp;

		if (d->pos > upto) {
			pp = &d->next;
			continue;
		}
		*pp = d->next;
		free(d->rec);
		free(d);
		t->ndoubt--;
	}
	pthread_mutex_unlock(&t->lock);
}

/* Does a record in doubt carry waiting commits?  Then nothing more waits
 * until it is settled: the next commit carries them (again), and only
 * one of the two can be in the log. */
int
tier_doubt_carrying(struct objfs_tier *t)
{
	int carrying = 0;

	pthread_mutex_lock(&t->lock);
	for (struct tier_doubt *d = t->doubt; d; d = d->next)
		if (d->count && d->unsure)
			carrying = 1;
	pthread_mutex_unlock(&t->lock);
	return carrying;
}

void
tier_doubt_free(struct objfs_tier *t)
{
	while (t->doubt) {
		struct tier_doubt *d = t->doubt;

		t->doubt = d->next;
		free(d->rec);
		free(d);
	}
	t->ndoubt = 0;
}

/* ---- following the log ------------------------------------------------ */

int
tier_index_pos(struct objfs_tier *t, uint64_t *pos)
{
	struct objfs_meta_txn *tx;
	int rc = objfs_meta_begin(t->m, 0, &tx);

	if (rc < 0)
		return rc;
	rc = objfs_meta_super_get(tx, OBJFS_SUPER_REMOTE_POS, pos);
	objfs_meta_abort(tx);
	return rc;
}

struct applying {
	struct objfs_tier *t;
	int own;		/* this node's record, in doubt until now */
	size_t obn, count;	/* ... the waiting commits it carried */
};

static int
apply_commit(void *arg, uint64_t seq, const void *pl, size_t n)
{
	struct applying *ap = arg;
	struct objfs_tier *t = ap->t;
	int rc;

	if (ap->own) {
		/* This node's own: the waiting commits it carried are in
		 * this index already (the hook takes them out of the
		 * outbox); the rest, rolled back here when its put did not
		 * answer, is applied now. */
		if (ap->obn > n)
			return -EPROTO;
		pl = (const unsigned char *)pl + ap->obn;
		n -= ap->obn;
	}
	tl_applying = seq;
	tl_own = ap->own;
	tl_own_count = ap->count;
	rc = objfs_store_apply_remote(t->s, pl, n);
	tl_applying = 0;
	tl_own = 0;
	tl_own_count = 0;
	if (rc == -EALREADY) {
		/* This node's own, committed here while this waited for the
		 * apply lock (the hook found the index past it). */
		atomic_fetch_add(&t->sh_own_skipped, 1);
		return 0;
	}
	if (rc == 0) {
		atomic_store(&t->pos, seq);
		atomic_fetch_add(&t->sh_applied, 1);
	}
	return rc;
}

static void
fenced_out(struct objfs_tier *t, uint64_t seq)
{
	pthread_mutex_lock(&t->lock);
	if (!t->lost)
		objfs_log(OBJFS_LOG_ERR, "remote: %s: the log of epoch %" PRIu64
			" was fenced at record %" PRIu64 " by a mount that took "
			"the namespace over while this node's hold had lapsed: "
			"nothing more is written here (EIO); unmount, and mount "
			"again", t->spec, t->epoch, seq);
	t->lost = 1;
	pthread_mutex_unlock(&t->lock);
}

/*
 * Apply the log up to its end.  With @since (a monotonic time), a pass
 * begun after it that reached the end is enough: concurrent callers
 * share one pass (an open waits for at most the pass under way and one
 * more).  *@applied: how many commits were applied.
 */
static int
catch_up(struct objfs_tier *t, uint64_t since, uint64_t *applied)
{
	static const size_t first_cap = 64 << 10;
	unsigned char *buf;
	uint64_t start, before = atomic_load(&t->sh_applied);
	int rc = 0;

	if (since && atomic_load(&t->view_ns) > since)
		return 0;
	buf = malloc(first_cap);
	if (!buf)
		return -ENOMEM;
	/* A pass under way may wait on the pool: no longer than the call's
	 * deadline (deadline.h). */
	if (objfs_lock_until(&t->catch_mu) < 0) {
		free(buf);
		return -ETIMEDOUT;
	}
	start = objfs_mono_ns();
	if (since && atomic_load(&t->view_ns) > since) {
		pthread_mutex_unlock(&t->catch_mu);
		free(buf);
		return 0;
	}
	if (t->store_gone) {	/* unmounting: its inodes are going */
		pthread_mutex_unlock(&t->catch_mu);
		free(buf);
		return -ESHUTDOWN;
	}
	for (;;) {
		uint64_t pos, last;
		struct applying ap;
		void *big = NULL;
		unsigned char *p = buf;
		size_t len = 0;

		rc = tier_index_pos(t, &pos);
		if (rc < 0)
			break;
		rc = objfs_remote_log_get(t->r, t->epoch, pos + 1, buf, first_cap,
				&len);
		if (rc == -EFBIG) {
			char name[64];

			tier_log_name(name, t->epoch, pos + 1);
			rc = objfs_remote_get_all(t->r, name, &big, &len);
			p = big;
		}
		if (rc == -ENOENT) {
			/* The end: every record put before @start is applied,
			 * and this node's own up to here are settled. */
			tier_doubt_forget(t, pos);
			atomic_store(&t->view_ns, start);
			rc = 0;
			break;
		}
		objfs_tier_note(t, rc, "reading the pool's log");
		if (rc < 0)
			break;
		if (tier_log_is_fence(p, len)) {
			/* An exclusive mount took the namespace over while
			 * this node's shared hold had lapsed: this epoch's log
			 * ends here, and this node can add nothing to it. */
			free(big);
			fenced_out(t, pos + 1);
			rc = -ESTALE;
			break;
		}
		ap.t = t;
		ap.obn = ap.count = 0;
		ap.own = tier_doubt_settle(t, pos + 1, p, len, &ap.obn,
				&ap.count);
		rc = tier_log_walk(p, len, pos + 1, &last, apply_commit, &ap);
		if (rc == 0)
			tier_doubt_forget(t, last);
		free(big);
		if (rc == -EPROTO)
			objfs_log(OBJFS_LOG_ERR, "remote: %s: log record %" PRIu64
				" is damaged: this mount stops following the "
				"pool's log", t->spec, pos + 1);
		if (rc < 0)
			break;
	}
	pthread_mutex_unlock(&t->catch_mu);
	free(buf);
	if (applied)
		*applied = atomic_load(&t->sh_applied) - before;
	return rc;
}

int
tier_share_catch_up(struct objfs_tier *t)
{
	return catch_up(t, 0, NULL);
}

/* A notify came (another mount appended): the follower looks now. */
void
tier_share_kick(void *arg)
{
	struct objfs_tier *t = arg;

	pthread_mutex_lock(&t->lock);
	t->kicked = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
}

int
tier_share_view(struct objfs_tier *t)
{
	uint64_t applied = 0;
	int rc;

	/* A node past its deadline (it stopped) proves its lock first: the
	 * log may have been compacted past what it read (lapsed()). */
	rc = tier_share_fresh(t);
	if (rc == 0) {
		pthread_mutex_lock(&t->lock);
		rc = t->lost ? -EIO : 0;
		pthread_mutex_unlock(&t->lock);
	}
	if (rc == 0)
		rc = catch_up(t, objfs_mono_ns(), &applied);

	/* The kernel's caches are told by the follower: a request must not
	 * wait for the kernel to drop a name its own caller may hold the
	 * directory of. */
	if (applied)
		tier_share_kick(t);
	return rc;
}

static int
lapsed(struct objfs_tier *t, const char *name)
{
	int rc;

	struct head h;

	if (!t->lock_lapsed) {
		atomic_fetch_add(&t->sh_lapses, 1);
		objfs_log(OBJFS_LOG_WARNING, "remote: %s: this node's lock "
			"(%s) had lapsed: taking it again, and checking its "
			"write leases against the log (a lease another node "
			"broke meanwhile is lost: its writers here get EIO)",
			t->spec, name);
	}
	t->lock_lapsed = 1;
	rc = objfs_remote_hold(t->r, name, t->holder, t->lease_s, NULL, 0);
	/* Registered again before the head is read: a compaction that did
	 * not see this node removed no record past the head's floor. */
	if (rc == 0)
		rc = tier_compact_register(t, atomic_load(&t->pos));
	if (rc == 0)
		rc = tier_head_read(t, &h, NULL);
	if (rc == 0 && (h.epoch != t->epoch || atomic_load(&t->pos) < h.floor)) {
		pthread_mutex_lock(&t->lock);
		if (!t->lost)
			objfs_log(OBJFS_LOG_ERR, "remote: %s: while this node "
				"was stopped the log was compacted past where "
				"it had read it (record %" PRIu64 ", the floor "
				"is %" PRIu64 "): nothing more is written here "
				"(EIO); unmount, and mount again", t->spec,
				(uint64_t)atomic_load(&t->pos), h.floor);
		t->lost = 1;
		pthread_mutex_unlock(&t->lock);
		return -EIO;
	}
	if (rc == 0)
		rc = tier_share_catch_up(t);
	if (rc == 0)
		t->lock_lapsed = 0;
	return rc;
}

int
tier_share_renew(struct objfs_tier *t)
{
	char name[64];
	int rc;

	/* A renewal that finds the lock held because another thread took
	 * it back after a lapse must not return before that thread applied
	 * the log (the breaks of this node's leases): one at a time. */
	if (objfs_lock_until(&t->renew_mu) < 0)
		return -ETIMEDOUT;	/* another's renewal outlasts this call */
	rc = objfs_remote_hold_renew(t->r, TIER_HOLD, t->holder, t->hold_s, 1);

	/* The shared hold keeps exclusive mounts out.  It lapsed: one may
	 * have taken the namespace over meanwhile, begun an epoch of its
	 * own and removed this one's log, fence and all (so the next
	 * append here would land in a log nobody reads).  Taken again, and
	 * the head read: an epoch other than this node's ends its
	 * writing. */
	if (rc == -ENOENT) {
		if (!t->hold_lapsed)
			atomic_fetch_add(&t->sh_lapses, 1);
		t->hold_lapsed = 1;
		rc = objfs_remote_hold_shared(t->r, TIER_HOLD, t->holder,
				t->hold_s, NULL, 0);
	}
	/* Checked until a check succeeds: the retake that answered nothing
	 * may have landed. */
	if (rc == 0 && t->hold_lapsed) {
		rc = tier_epoch_check(t);
		if (rc == 0)
			t->hold_lapsed = 0;
	}
	tier_node_name(name, t->node);
	if (rc == 0) {
		rc = objfs_remote_hold_renew(t->r, name, t->holder, t->lease_s,
				0);
		if (rc == -ENOENT || (rc == 0 && t->lock_lapsed))
			rc = lapsed(t, name);
	}
	/* Where this node is in the log: what compaction may remove. */
	if (rc == 0 && t->attached)
		rc = tier_compact_register(t, atomic_load(&t->pos));
	pthread_mutex_unlock(&t->renew_mu);
	return rc;
}


int
tier_share_fresh(struct objfs_tier *t)
{
	uint64_t t0 = objfs_mono_ns(), lease;
	int rc;

	pthread_mutex_lock(&t->lock);
	lease = t->lease_ns;
	pthread_mutex_unlock(&t->lock);
	if (t0 + tier_node_margin_ns(t) < lease)
		return 0;
	/* Past the local deadline (this node stopped, or could not renew):
	 * nothing is acknowledged before the lock is proved held, or found
	 * lapsed and the leases checked. */
	rc = tier_share_renew(t);
	objfs_tier_note(t, rc, "renewing the hold");
	if (rc == 0) {
		pthread_mutex_lock(&t->lock);
		if (t->lease_ns < t0 + (uint64_t)t->deadline_s * 1000000000u)
			t->lease_ns = t0 + (uint64_t)t->deadline_s *
				1000000000u;
		pthread_mutex_unlock(&t->lock);
	}
	return rc;
}

/* Inodes with bytes the killed daemon wrote (adopted from the arena) to a
 * file whose lease it lost: another node published the file since, and
 * that version stands; the bytes go, said in the log. */
