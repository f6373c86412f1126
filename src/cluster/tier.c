/* SPDX-License-Identifier: MIT */
/*
 * tier.c - a Ceph pool as objfs's durable home (tier.h): the hold, the
 * head, the snapshot, and shipping the index's commits to the pool's log.
 * The chunks are pool.c's.  doc/design.md, "The pool as the durable
 * home", says why it is built this way; in short:
 *
 * The pool (one namespace of it) holds
 *	objfs.hold			the hold: a lock with a duration that
 *					the mount renews (one mount at a time)
 *	objfs.head			tree, epoch, owner, base, parts: the
 *					tree's latest snapshot, replaced only
 *					by compare-and-swap
 *	objfs.snap.<epoch>.<part>	the snapshot: the whole index at commit
 *					<base>, as journal entries, in parts
 *	objfs.log.<epoch>.<first>	commits <first>..<last> (after the
 *					snapshot), each as its journal payload;
 *					the next record is <last + 1>
 *	c.<hash>-<length>		the chunks (pool.c)
 *	objfs.gc.<node>			written by a garbage collection to
 *					read the pool's clock (gc.c)
 * The tree is the snapshot with the logs of its epoch replayed in order,
 * up to the first that is missing.
 *
 * Each mount is a new epoch, begun by start(): the index as it is (the
 * local one, or one built from the pool by prepare()) is uploaded as a
 * snapshot, and the head is swapped to it; from then on every commit
 * (the index's outbox, meta/ship.c) is put in the log by the shipper
 * thread, within about SHIP_POLL_MS, and at once for an fsync, which
 * returns only when the log record is in the pool.  A log record is
 * created only where none is, and is acknowledged only while this mount
 * still has the hold (its lease, from the renewer's last success) or the
 * head still names this mount's epoch: a mount that lost its hold can
 * never have an fsync acknowledged that its successor does not replay.
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/base/clock.h"
#include "src/base/deadline.h"
#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/base/sync.h"
#include "meta/meta_keys.h"
#include "src/store_int.h"
#include "src/cluster/tier_int.h"

#define SHIP_POLL_MS	100		/* the shipper looks this often */
#define LOG_MAX_BYTES	(8u << 20)	/* a log record's commits, at most */
#define LOG_MAX_COMMITS	4096
#define SNAP_PART	(32u << 20)	/* a snapshot part */
#define LEASE_MARGIN_NS	(2ull * 1000000000u)

/* ---- open: connect and hold ------------------------------------------- */

/* This machine's id, 12 hex digits of /etc/machine-id (or of the boot's
 * id, or "0"): what tells apart two machines of one host name. */
static void
machine_id(char out[13])
{
	static const char *const from[] = { "/etc/machine-id",
		"/var/lib/dbus/machine-id", "/proc/sys/kernel/random/boot_id" };
	char buf[64];

	snprintf(out, 13, "0");
	for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++) {
		FILE *f = fopen(from[i], "r");
		size_t n = 0;

		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f))
			for (const char *p = buf; *p && n < 12; p++)
				if (isxdigit((unsigned char)*p))
					out[n++] = *p;
		fclose(f);
		if (n == 12) {
			out[12] = '\0';
			return;
		}
		snprintf(out, 13, "0");
	}
}

static int
take_hold(struct objfs_tier *t, char *msg, size_t msgsize)
{
	char who[256] = "", client[128], cookie[256];
	char host[HOST_NAME_MAX + 1] = "?";
	int rc;

	uint64_t t0 = objfs_mono_ns();

	(void)gethostname(host, sizeof(host));
	for (int tries = 0; tries < 2; tries++) {
		rc = objfs_remote_hold(t->r, TIER_HOLD, t->holder, t->hold_s, who,
				sizeof(who));
		if (rc != -EBUSY)
			break;
		/* A daemon of this data directory on this machine that was
		 * killed: it held the data directory's lock, which is ours
		 * now, so it is gone; its hold goes too. */
		if (objfs_remote_holder(t->r, TIER_HOLD, client, sizeof(client),
				cookie, sizeof(cookie)) == 0 &&
		    strncmp(cookie, t->holder, strcspn(t->holder, "#")) == 0 &&
		    strncmp(cookie, t->holder, strcspn(cookie, "#")) == 0) {
			objfs_log(OBJFS_LOG_INFO, "remote: %s: taking over the "
				"hold of a daemon of this data directory that "
				"did not stop cleanly (%s)", t->spec, cookie);
			rc = objfs_remote_break(t->r, TIER_HOLD, client, cookie);
			if (rc < 0)
				break;
			continue;
		}
		break;
	}
	if (rc == -EBUSY) {
		snprintf(msg, msgsize, "%s is mounted by another objfs (%s); one "
			"mount per namespace at a time: unmount it there, or "
			"wait until its hold expires (remote_hold, %u s after "
			"it stops renewing it)", t->spec, who[0] ? who :
			"holder unknown", t->hold_s);
		return rc;
	}
	if (rc == -ENOSPC || rc == -EDQUOT) {
		snprintf(msg, msgsize, "%s: cannot take the namespace's hold: "
			"the pool is full (%s), and a mount writes to it; give "
			"it room (its quota: ceph osd pool set-quota; or more "
			"OSD space) and mount again: nothing in it is lost",
			t->spec, rc == -EDQUOT ? "its quota is reached" :
			"its OSDs are full");
		return rc;
	}
	if (rc < 0) {
		snprintf(msg, msgsize, "%s: cannot take the namespace's hold: %s",
			t->spec, strerror(-rc));
		return rc;
	}
	/* From before the hold was asked for: it was granted after. */
	t->lease_ns = t0 + (uint64_t)t->hold_s * 1000000000u;
	return 0;
}

static int
tier_open(const struct objfs_store_config *cfg, struct objfs_tier **out,
		char *msg, size_t msgsize)
{
	struct objfs_remote_config rc_cfg = {
		.spec = cfg->remote, .conf = cfg->remote_conf,
		.id = cfg->remote_id, .endpoint = cfg->remote_endpoint,
		.addressing = cfg->remote_addressing,
		.insecure = cfg->remote_insecure,
		.timeout_s = cfg->remote_timeout,
	};
	char host[HOST_NAME_MAX + 1] = "?", dir[PATH_MAX], mid[13];
	struct objfs_tier *t = calloc(1, sizeof(*t));
	char err[256];
	int rc;

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	if (objfs_cond_init(&t->cv) != 0) {
		pthread_mutex_destroy(&t->lock);
		free(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->pf_mu, NULL);
	if (tier_gc_init(t) < 0) {
		pthread_cond_destroy(&t->cv);
		pthread_mutex_destroy(&t->lock);
		free(t);
		return -ENOMEM;
	}
	t->reachable = 1;
	t->deadline_s = cfg->remote_hold ? cfg->remote_hold : OBJFS_REMOTE_HOLD;
	t->timeout_s = cfg->remote_timeout ? cfg->remote_timeout :
		OBJFS_REMOTE_TIMEOUT;
	t->hold_s = cfg->remote_hold ? cfg->remote_hold : OBJFS_REMOTE_HOLD;
	snprintf(t->spec, sizeof(t->spec), "%s", cfg->remote);
	(void)gethostname(host, sizeof(host));
	machine_id(mid);
	if (!realpath(cfg->data_dir, dir))
		snprintf(dir, sizeof(dir), "%s", cfg->data_dir);
	/* Who holds it, for whoever is refused; the part before '#' names
	 * the data directory, on this machine (take_hold): two machines of
	 * one host name and one data path are told apart by their machine
	 * ids (on 67f5056 each took the other's live hold for its own
	 * killed daemon's, and broke it). */
	if (strlen(host) + strlen(dir) + 48 > sizeof(t->holder)) {
		/* A long path: its hash names it as well. */
		snprintf(dir, sizeof(dir), "dir-%016" PRIx64,
			objfs_csum64(dir, strlen(dir)));
	}
	snprintf(t->holder, sizeof(t->holder), "%.64s/%s:%.150s#pid %ld", host,
		mid, dir, (long)getpid());
	rc = objfs_tier_remote_connect(&rc_cfg, &t->r, err, sizeof(err));
	if (rc < 0) {
		snprintf(msg, msgsize, "%s", err);
		goto err;
	}
	if (cfg->remote_shared) {
		t->shared = 1;
		t->lease_s = cfg->remote_lease ? cfg->remote_lease : t->hold_s;
		/* Either lapsing ends what it may acknowledge: its lock
		 * (other nodes break its leases) or its share of the hold
		 * (an exclusive mount takes the namespace over). */
		t->deadline_s = t->lease_s < t->hold_s ? t->lease_s :
			t->hold_s;
		t->batch_ms = cfg->remote_batch_ms > 0 ?
			(unsigned)cfg->remote_batch_ms : 0u;
		t->compact_min = cfg->remote_compact < 0 ? 1000u :
			(uint64_t)cfg->remote_compact;
		snprintf(t->dir, sizeof(t->dir), "%s", dir);
		rc = tier_share_open(t, msg, msgsize);
	} else {
		rc = take_hold(t, msg, msgsize);
	}
	if (rc < 0)
		goto err;
	*out = t;
	return 0;
err:
	objfs_remote_close(t->r);
	tier_gc_fini(t);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->lock);
	free(t);
	return rc;
}

static void *ship_main(void *arg);
static void *renew_main(void *arg);

static int
tier_start(struct objfs_tier *t, struct objfs_store *s, char *msg,
		size_t msgsize)
{
	struct snap_up u = { 0 };
	struct head h, old;
	char text[TIER_HEAD_MAX];
	uint64_t seq, owner = tier_random64(), t0 = objfs_mono_ns();
	int rc, had = t->have_head;

	u.t = t;
	u.h.version = 2;
	u.h.epoch = t->have_head ? t->head_epoch + 1 : 1;
	u.h.snap = tier_random64();

	t->s = s;
	t->m = s->meta;
	if (t->shared && t->attached) {
		/* One of many: the tree goes on in the head's epoch. */
		rc = tier_share_start(t, msg, msgsize);
		if (rc < 0)
			return rc;
		goto threads;
	}
	if (!t->have_head && !t->tree)
		t->tree = tier_random64();
	old = (struct head){ .epoch = t->head_epoch, .base = t->head_base,
		.parts = t->head_parts, .snap = t->head_snap,
		.version = t->head_version };
	/* The snapshot: the index as it is, in parts. */
	rc = objfs_meta_dump(t->m, SNAP_PART, tier_snap_part, &u, &seq);
	if (rc < 0) {
		snprintf(msg, msgsize, "%s: cannot upload the index's snapshot: "
			"%s", t->spec, strerror(-rc));
		return rc;
	}
	h = u.h;
	h.tree = t->tree;
	h.owner = owner;
	h.base = seq;
	h.parts = u.parts;
	h.bytes = u.bytes;
	rc = objfs_remote_head_put(t->r, text, tier_head_text(&h, text,
			sizeof(text)), &t->head_ver);
	if (rc < 0) {
		snprintf(msg, msgsize, "%s: cannot write objfs.head: %s", t->spec,
			rc == -ECANCELED ? "another mount changed it meanwhile" :
			strerror(-rc));
		/* Its parts go only if the head surely does not name them:
		 * a put that got no answer may land yet (S3 or RADOS apply
		 * a request after its client gave up), and then names them
		 * (simulator, S3, seed 8: the tree could not be read).  Left,
		 * they are garbage the collector removes. */
		if (rc == -ECANCELED)
			tier_remove_epoch(t, &h);
		return rc;
	}
	t->have_head = 1;
	t->epoch = h.epoch;
	t->head_epoch = h.epoch;
	t->head_base = seq;
	t->head_parts = u.parts;
	t->head_snap = h.snap;
	t->head_floor = 0;
	t->head_version = 2;
	/* Everything up to @seq is in the snapshot. */
	t->shipped = seq;
	(void)objfs_meta_outbox_done(t->m, seq);
	/* The cache's name for what it caches (its first commit shipped:
	 * harmless, a build takes them from the head). */
	rc = tier_set_supers(t->m, t->tree, h.epoch, owner);
	if (rc < 0) {
		snprintf(msg, msgsize, "cannot write to the index: %s",
			strerror(-rc));
		return rc;
	}
	if (had)
		tier_remove_epoch(t, &old);
	if (t->shared) {
		/* The first of many: the log goes on after the snapshot. */
		struct objfs_meta_txn *tx;

		rc = objfs_meta_begin(t->m, OBJFS_META_ESSENTIAL, &tx);
		if (rc == 0)
			rc = objfs_commit_or_abort(tx, objfs_meta_super_put(tx,
				OBJFS_SUPER_REMOTE_POS, seq), NULL);
		if (rc == 0)
			rc = tier_share_start(t, msg, msgsize);
		if (rc < 0) {
			if (!msg[0])
				snprintf(msg, msgsize, "cannot write to the "
					"index: %s", strerror(-rc));
			return rc;
		}
	}
	objfs_log(OBJFS_LOG_INFO, "remote: %s: epoch %" PRIu64 " begun, snapshot "
		"of commit %" PRIu64 " (%" PRIu64 " bytes in %" PRIu64
		" part(s)) in %.1f s", t->spec, h.epoch, seq, u.bytes, u.parts,
		(double)(objfs_mono_ns() - t0) / 1e9);
	{
		uint64_t total, avail;

		if (objfs_remote_df(t->r, &total, &avail) == 0) {
			atomic_store(&t->space_total, total);
			atomic_store(&t->space_avail, avail);
		}
	}
threads:
	t->gc_next_ns = objfs_mono_ns() +
		(uint64_t)OBJFS_GC_INTERVAL_S * 1000000000u;
	/* Shared mode ships in the commits (and deleg.c's): the shipper has
	 * nothing to do but wait for the stop. */
	rc = pthread_create(&t->ship_th, NULL, ship_main, t);
	if (rc == 0) {
		rc = pthread_create(&t->renew_th, NULL, renew_main, t);
		if (rc == 0 && (rc = pthread_create(&t->gc_th, NULL,
				tier_gc_main, t)) != 0) {
			pthread_mutex_lock(&t->lock);
			t->stop = 1;
			pthread_cond_broadcast(&t->cv);
			pthread_mutex_unlock(&t->lock);
			pthread_join(t->renew_th, NULL);
		}
		if (rc) {
			pthread_mutex_lock(&t->lock);
			t->stop = 1;
			pthread_cond_broadcast(&t->cv);
			pthread_mutex_unlock(&t->lock);
			pthread_join(t->ship_th, NULL);
		}
	}
	if (rc) {
		snprintf(msg, msgsize, "cannot start the remote tier's threads");
		if (t->shared)
			tier_share_quiesce(t);	/* the follower stops */
		return -rc;
	}
	t->threads = 1;
	return 0;
}

/* ---- the shipper ------------------------------------------------------ */

struct batch {
	unsigned char *p;
	size_t len, cap;
	uint64_t first, last;
	uint32_t count;
};

static int
batch_add(struct batch *b, uint64_t seq, const void *pl, size_t n)
{
	if (b->len + 16 + n > b->cap) {
		size_t cap = b->cap ? b->cap : 1u << 16;
		unsigned char *p;

		while (cap < b->len + 16 + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	if (b->len == 0)
		b->len = TIER_LOG_HDR;
	put_be64(b->p + b->len, seq);
	put_be64(b->p + b->len + 8, n);
	memcpy(b->p + b->len + 16, pl, n);
	b->len += 16 + n;
	if (!b->count)
		b->first = seq;
	b->last = seq;
	b->count++;
	return 0;
}

/* The outbox's commits after @after, as one log record. */
static int
gather(struct objfs_tier *t, uint64_t after, struct batch *b)
{
	uint32_t magic = TIER_LOG_MAGIC;

	b->len = 0;
	b->count = 0;
	while (b->count < LOG_MAX_COMMITS && b->len < LOG_MAX_BYTES) {
		uint64_t seq;
		void *pl;
		size_t n;
		int rc = objfs_meta_outbox_next(t->m, after, &seq, &pl, &n);

		if (rc == -ENOENT)
			break;
		if (rc < 0)
			return rc;
		if (seq != after + 1) {
			free(pl);
			objfs_log(OBJFS_LOG_ERR, "remote: %s: commit %" PRIu64
				" is missing from the outbox (next is %" PRIu64
				"); shipping stops", t->spec, after + 1, seq);
			return -EIO;
		}
		rc = batch_add(b, seq, pl, n);
		free(pl);
		if (rc < 0)
			return rc;
		after = seq;
	}
	if (!b->count)
		return 0;
	memcpy(b->p, &magic, 4);
	memcpy(b->p + 4, &b->count, 4);
	put_be64(b->p + 8, b->first);
	put_be64(b->p + 16, b->last);
	put_be64(b->p + 24, objfs_csum64_seed(b->p + TIER_LOG_HDR,
			b->len - TIER_LOG_HDR, b->first ^ b->last));
	return 1;
}

/* Put log record @b; 0 when it is in the pool and acknowledged. */
static int
ship_one(struct objfs_tier *t, struct batch *b)
{
	uint64_t t0 = objfs_mono_ns(), lease;
	int rc = objfs_remote_log_put(t->r, t->epoch, b->first, b->p, b->len);
	char name[64];

	if (rc == -EEXIST) {
		/* Only this mount writes its epoch's logs: the record is an
		 * earlier try of ours whose answer did not come (a timeout
		 * after the write landed).  It may hold fewer commits than
		 * this try, or more; whatever it holds came from the outbox
		 * and is shipped, and the next record starts after its last
		 * (a replay follows that chain). */
		void *have;
		size_t len;
		uint64_t last;

		tier_log_name(name, t->epoch, b->first);
		rc = objfs_remote_get_all(t->r, name, &have, &len);
		if (rc == 0) {
			/* A fence: another mount took the namespace over
			 * and reads the log up to here (tier_fence_epoch). */
			rc = tier_log_is_fence(have, len) ? -ESTALE :
				tier_log_walk(have, len, b->first, &last,
					NULL, NULL) == 0 ? 0 : -ESTALE;
			free(have);
		}
		if (rc == 0)
			b->last = last;
	}
	objfs_tier_note(t, rc, "writing the log");
	if (rc < 0)
		return rc;
	objfs_tier_count(&t->logs, b->len, t0);
	/* Acknowledged only while no other mount can have taken over: the
	 * hold was ours until after the put answered, or the head still
	 * names this epoch (a successor replays every log of it). */
	pthread_mutex_lock(&t->lock);
	lease = t->lease_ns;
	pthread_mutex_unlock(&t->lock);
	if (objfs_mono_ns() + LEASE_MARGIN_NS < lease)
		return 0;
	rc = tier_head_ours(t);
	objfs_tier_note(t, rc < 0 ? rc : 0, "reading the head");
	return rc < 0 ? rc : rc ? 0 : -ESTALE;
}

static void
lose(struct objfs_tier *t, const char *why)
{
	pthread_mutex_lock(&t->lock);
	if (!t->lost)
		objfs_log(OBJFS_LOG_ERR, "remote: %s: %s; nothing more is "
			"acknowledged as durable in the pool (fsync fails with "
			"EIO): unmount, and mount again", t->spec, why);
	t->lost = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
}

static void *
ship_main(void *arg)
{
	struct objfs_tier *t = arg;
	struct batch b = { 0 };
	uint64_t after;

	pthread_mutex_lock(&t->lock);
	after = t->shipped;
	/* Shared mode ships in the commits themselves, and its outbox holds
	 * the commits that wait for the next one (deleg.c): none of it is
	 * this thread's. */
	while (t->shared && !t->stop)
		pthread_cond_wait(&t->cv, &t->lock);
	while (!t->stop && !t->lost) {
		int rc;

		pthread_mutex_unlock(&t->lock);
		rc = gather(t, after, &b);
		if (rc > 0) {
			rc = ship_one(t, &b);
			if (rc == -ESTALE)
				lose(t, "another mount took the namespace over");
		}
		pthread_mutex_lock(&t->lock);
		if (b.count) {
			t->ship_tries++;
			t->ship_err = rc;
			pthread_cond_broadcast(&t->cv);
		}
		if (rc == 0 && b.count) {
			after = b.last;
			t->shipped = after;
			pthread_cond_broadcast(&t->cv);
			pthread_mutex_unlock(&t->lock);
			(void)objfs_meta_outbox_done(t->m, after);
			pthread_mutex_lock(&t->lock);
			continue;	/* more may wait */
		}
		if (rc == -EIO && !b.count)
			break;		/* the outbox is broken */
		/* Nothing to send, or the cluster did not take it: look
		 * again soon (an fsync wakes us), or after a pause. */
		if (!t->stop && t->want <= t->shipped)
			objfs_cond_wait_ms(&t->cv, &t->lock, SHIP_POLL_MS);
		else if (rc < 0 && !t->stop)
			objfs_cond_wait_ms(&t->cv, &t->lock, 1000);
	}
	pthread_mutex_unlock(&t->lock);
	free(b.p);
	return NULL;
}

/* ---- the renewer ------------------------------------------------------ */

static void *
renew_main(void *arg)
{
	struct objfs_tier *t = arg;
	unsigned every_ms = t->deadline_s * 1000 / 3;

	if (every_ms < 500)
		every_ms = 500;
	pthread_mutex_lock(&t->lock);
	while (!t->stop && !t->lost) {
		uint64_t t0, total, avail, lease;
		char who[256] = "";
		int rc;

		objfs_cond_wait_ms(&t->cv, &t->lock, every_ms);
		if (t->stop || t->lost)
			break;
		lease = t->lease_ns;
		pthread_mutex_unlock(&t->lock);
		t0 = objfs_mono_ns();
		if (t->shared) {
			rc = tier_share_renew(t);
			objfs_tier_note(t, rc, "renewing the hold");
			goto renewed;
		}
		/* A lapse is noticed, never hidden by a renewal that takes
		 * the hold again: then it is taken again only if nobody has
		 * it, and kept only if nobody had it meanwhile (the head). */
		rc = objfs_remote_hold_renew(t->r, TIER_HOLD, t->holder,
				t->hold_s, 0);
		if (rc == -ENOENT) {
			objfs_log(OBJFS_LOG_WARNING, "remote: %s: the hold had "
				"lapsed; taking it again if nobody has it",
				t->spec);
			rc = objfs_remote_hold(t->r, TIER_HOLD, t->holder,
					t->hold_s, who, sizeof(who));
			lease = 0;	/* lapsed: the head says the rest */
		}
		objfs_tier_note(t, rc == -EBUSY ? 0 : rc, "renewing the hold");
		/* Taken again after it had lapsed: another mount may have had
		 * it meanwhile, and then the head says so. */
		if (rc == 0 && t0 >= lease) {
			int ours = tier_head_ours(t);

			if (ours == 0)
				lose(t, "another mount took the namespace over "
					"while the hold had lapsed");
			else if (ours < 0)
				rc = ours;
		}
		if (rc == -EBUSY)
			lose(t, who[0] ? "the hold was taken by another mount" :
				"the hold was taken by another mount");
renewed:
		if (objfs_remote_df(t->r, &total, &avail) == 0) {
			atomic_store(&t->space_total, total);
			atomic_store(&t->space_avail, avail);
		}
		pthread_mutex_lock(&t->lock);
		if (rc == 0 && !t->lost)
			t->lease_ns = t0 + (uint64_t)t->deadline_s *
				1000000000u;
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* ---- fsync, stop, close ----------------------------------------------- */

static int
tier_sync(struct objfs_tier *t, uint64_t seq)
{
	/* The timeout, or what the system call has left of it. */
	uint64_t deadline = objfs_mono_ns() + objfs_deadline_cap_ns(
		(uint64_t)t->timeout_s * 1000000000u, 0);
	uint64_t tries;
	int rc = 0;

	/* Shared mode: a commit is in the pool's log when it returns, but
	 * those that wait in the outbox (deleg.c). */
	if (t->shared)
		return tier_deleg_flush(t);
	pthread_mutex_lock(&t->lock);
	if (t->want < seq)
		t->want = seq;
	tries = t->ship_tries;
	pthread_cond_broadcast(&t->cv);
	while (t->shipped < seq && !t->lost) {
		uint64_t now = objfs_mono_ns();

		if (now >= deadline || !t->threads) {
			rc = -ETIMEDOUT;
			break;
		}
		/* A put of the log tried since, refused for want of room:
		 * that is the answer (the pool said so at once). */
		if (t->ship_tries > tries && (t->ship_err == -ENOSPC ||
		    t->ship_err == -EDQUOT)) {
			rc = t->ship_err;
			break;
		}
		objfs_cond_wait_ms(&t->cv, &t->lock,
			(unsigned)((deadline - now) / 1000000u) + 1);
	}
	if (t->lost && t->shipped < seq)
		rc = -EIO;
	pthread_mutex_unlock(&t->lock);
	if (rc == -ETIMEDOUT)
		objfs_log(OBJFS_LOG_ERR, "remote: %s: commit %" PRIu64 " is not "
			"in the pool after %u s (remote_timeout): fsync fails "
			"with ETIMEDOUT; it stays queued, and is sent when the "
			"cluster answers", t->spec, seq, t->timeout_s);
	return rc;
}

static int
tier_stop(struct objfs_tier *t)
{
	uint64_t last = objfs_meta_last_seq(t->m);
	int rc = t->threads ? tier_sync(t, last) : 0;

	if (t->shared)
		tier_share_stop(t);

	pthread_mutex_lock(&t->lock);
	t->stop = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
	if (t->threads) {
		pthread_join(t->ship_th, NULL);
		pthread_join(t->renew_th, NULL);
		pthread_join(t->gc_th, NULL);
		t->threads = 0;
	}
	if (rc < 0)
		objfs_log(OBJFS_LOG_WARNING, "remote: %s: unmounting with commits "
			"%" PRIu64 "..%" PRIu64 " not in the pool; they stay in "
			"this data directory's index, and its next mount sends "
			"them", t->spec, t->shipped + 1, last);
	return rc;
}

static void
tier_close(struct objfs_tier *t)
{
	if (!t)
		return;
	if (t->threads)
		(void)tier_stop(t);
	tier_prefetch_clear(t);
	if (t->shared)
		tier_share_close(t);
	else
		(void)objfs_remote_release(t->r, TIER_HOLD, t->holder);
	objfs_remote_close(t->r);
	pthread_mutex_destroy(&t->pf_mu);
	tier_gc_fini(t);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* ---- the status file -------------------------------------------------- */

static uint64_t
avg_ms(struct tier_counter *c)
{
	uint64_t n = atomic_load(&c->n);

	return n ? atomic_load(&c->ns) / n / 1000000u : 0;
}

static size_t
tier_status(struct objfs_tier *t, char *buf, size_t size)
{
	uint64_t last = t->m ? objfs_meta_last_seq(t->m) : 0, shipped, since;
	int reachable, lost, full;
	char why[160], gc_last[256];
	int n;

	pthread_mutex_lock(&t->lock);
	shipped = t->shipped;
	reachable = t->reachable;
	lost = t->lost;
	full = t->full_err != 0;
	since = reachable ? 0 : (objfs_mono_ns() - t->since_ns) / 1000000000u;
	snprintf(why, sizeof(why), "%s", t->why);
	snprintf(gc_last, sizeof(gc_last), "%s", t->gc_last[0] ? t->gc_last :
		"none yet");
	pthread_mutex_unlock(&t->lock);
	n = snprintf(buf, size,
		"remote: %s\n"
		"remote_state: %s%s%s\n"
		"remote_reachable: %d\n"
		"remote_unreachable_s: %" PRIu64 "\n"
		"remote_pool_full: %d\n"
		"remote_epoch: %" PRIu64 "\n"
		"remote_commits_waiting: %" PRIu64 "\n"
		"remote_log_records: %" PRIu64 "\n"
		"remote_log_bytes: %" PRIu64 "\n"
		"remote_log_ms_avg: %" PRIu64 "\n"
		"remote_upload_batches: %" PRIu64 "\n"
		"remote_upload_bytes: %" PRIu64 "\n"
		"remote_upload_ms_avg: %" PRIu64 "\n"
		"remote_dedup_chunks: %" PRIu64 "\n"
		"remote_fetch_chunks: %" PRIu64 "\n"
		"remote_fetch_bytes: %" PRIu64 "\n"
		"remote_fetch_ms_avg: %" PRIu64 "\n"
		"remote_fetch_ahead_chunks: %" PRIu64 "\n"
		"remote_fetch_ahead_used: %" PRIu64 "\n"
		"remote_gc_runs: %" PRIu64 "\n"
		"remote_gc_removed_chunks: %" PRIu64 "\n"
		"remote_gc_removed_bytes: %" PRIu64 "\n"
		"remote_gc_last: %s\n",
		t->spec, lost ? "lost-hold" : reachable ? "reachable" :
		"unreachable", reachable ? "" : ": ", reachable ? "" : why,
		reachable && !lost, since, full, t->epoch, last > shipped ? last - shipped : 0,
		atomic_load(&t->logs.n), atomic_load(&t->logs.bytes),
		avg_ms(&t->logs), atomic_load(&t->up.n),
		atomic_load(&t->up.bytes), avg_ms(&t->up),
		atomic_load(&t->dedup.n), atomic_load(&t->down.n),
		atomic_load(&t->down.bytes), avg_ms(&t->down),
		atomic_load(&t->pf_started), atomic_load(&t->pf_hits),
		atomic_load(&t->gc_runs), atomic_load(&t->gc_removed),
		atomic_load(&t->gc_removed_bytes), gc_last);
	if (n < 0)
		return 0;
	if ((size_t)n >= size)
		return size - 1;
	if (t->shared)
		n += (int)tier_share_status(t, buf + n, size - (size_t)n);
	if ((size_t)n < size)
		n += (int)objfs_remote_status(t->r, buf + n, size - (size_t)n);
	return (size_t)n;
}

static int
tier_shared(struct objfs_tier *t)
{
	return t->shared;
}

static unsigned
tier_timeout_s(struct objfs_tier *t)
{
	return t->timeout_s;
}

static void
tier_quiesce(struct objfs_tier *t)
{
	if (t->shared)
		tier_share_quiesce(t);
}

static int
tier_attach(struct objfs_tier *t, struct objfs_store *s, char *msg,
		size_t msgsize)
{
	return t->shared ? tier_share_attach(t, s, msg, msgsize) : 0;
}

const struct objfs_tier_ops objfs_tier_rados = {
	.copy = &objfs_copy_pool,
	.open = tier_open,
	.prepare = tier_prepare,
	.start = tier_start,
	.sync = tier_sync,
	.stop = tier_stop,
	.close = tier_close,
	.gc = tier_gc,
	.status = tier_status,
	.shared = tier_shared,
	.timeout_s = tier_timeout_s,
	.dir_use = tier_deleg_use,
	.dir_read = tier_deleg_read,
	.recall_all = tier_deleg_recall_all,
	.attach = tier_attach,
	.quiesce = tier_quiesce,
	.catch_up = tier_share_catch_up,
	.view = tier_share_view,
	.lease = tier_share_lease,
	.unblock = tier_share_unblock,
	.publishing = tier_share_publishing,
	.fresh = tier_share_fresh,
	.lease_state = tier_share_lease_state,
	.forget = tier_share_forget,
};
