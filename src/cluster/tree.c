/* SPDX-License-Identifier: MIT */
/*
 * tree.c - the tree's layout in the pool (tier.c's header has it):
 * the head, snapshot parts and log records, their formats and checks;
 * prepare() (is the data directory's index the pool's latest tree, or
 * built from it), and what a new epoch removes of the last one.
 *
 * A log record "objfs.log.<epoch>.<first>" is a header (magic "OLOG",
 * count, first, last, an xxh3 of the rest seeded with first ^ last) and
 * its commits in order, each be64 number, be64 length, journal payload.
 * A snapshot part "objfs.snap.<epoch>.<part>" is a header (magic
 * "OSNP", part, be64 length, be64 xxh3) and journal entries (puts).  The
 * head is text, each line a field, the last an xxh3 of the others.
 */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "src/base/clock.h"
#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/base/rand.h"
#include "meta/meta_keys.h"
#include "src/store_int.h"
#include "src/cluster/tier_int.h"

uint64_t
tier_random64(void)
{
	return objfs_random64();
}

/* ---- the head ------------------------------------------------------------ */

size_t
tier_head_text(const struct head *h, char *buf, size_t size)
{
	int n = snprintf(buf, size, "objfs head 2\ntree %016" PRIx64 "\nepoch %"
		PRIu64 "\nowner %016" PRIx64 "\nbase %" PRIu64 "\nparts %"
		PRIu64 "\nbytes %" PRIu64 "\nfloor %" PRIu64 "\nsnap %016"
		PRIx64 "\n", h->tree, h->epoch, h->owner, h->base, h->parts,
		h->bytes, h->floor, h->snap);

	n += snprintf(buf + n, size - (size_t)n, "sum %016" PRIx64 "\n",
		objfs_csum64(buf, (size_t)n));
	return (size_t)n;
}

int
tier_head_parse(const char *buf, size_t len, struct head *h)
{
	char text[TIER_HEAD_MAX + 1];
	const char *sum;
	uint64_t want;
	unsigned v;

	if (len > TIER_HEAD_MAX)
		return -EPROTO;
	memcpy(text, buf, len);
	text[len] = '\0';
	sum = strstr(text, "sum ");
	if (!sum || sscanf(sum, "sum %" SCNx64, &want) != 1 ||
	    objfs_csum64(text, (size_t)(sum - text)) != want ||
	    sscanf(text, "objfs head %u\ntree %" SCNx64 "\nepoch %" SCNu64
		"\nowner %" SCNx64 "\nbase %" SCNu64 "\nparts %" SCNu64
		"\nbytes %" SCNu64 "\n", &v, &h->tree, &h->epoch, &h->owner,
		&h->base, &h->parts, &h->bytes) != 7 || v < 1 || v > 2)
		return -EPROTO;
	h->version = v;
	h->floor = 0;
	h->snap = 0;
	if (v == 2) {
		const char *f = strstr(text, "\nfloor ");

		if (!f || sscanf(f, "\nfloor %" SCNu64 "\nsnap %" SCNx64,
				&h->floor, &h->snap) != 2)
			return -EPROTO;
	}
	return 0;
}

void
tier_snap_name(char name[64], const struct head *h, uint64_t part)
{
	if (h->version < 2)
		snprintf(name, 64, "objfs.snap.%016" PRIx64 ".%08" PRIx64,
			h->epoch, part);
	else
		snprintf(name, 64, "objfs.snap.%016" PRIx64 ".%016" PRIx64
			".%08" PRIx64, h->epoch, h->snap, part);
}

void
tier_log_name(char name[64], uint64_t epoch, uint64_t seq)
{
	snprintf(name, 64, "objfs.log.%016" PRIx64 ".%016" PRIx64, epoch, seq);
}

int
tier_head_read(struct objfs_tier *t, struct head *h, uint64_t *ver)
{
	char buf[TIER_HEAD_MAX];
	uint64_t v;
	size_t len;
	int rc = objfs_remote_head_get(t->r, buf, sizeof(buf), &len, &v);

	if (rc == 0)
		rc = tier_head_parse(buf, len, h);
	if (rc == 0 && ver)
		*ver = v;
	return rc;
}

/* ---- prepare: the index the pool's tree ---------------------------------- */

/* Head @h is the one this mount follows. */
static void
follow_head(struct objfs_tier *t, const struct head *h)
{
	t->head_epoch = h->epoch;
	t->head_base = h->base;
	t->head_parts = h->parts;
	t->head_floor = h->floor;
	t->head_snap = h->snap;
	t->head_version = h->version;
}

/* Read the head: 0 (t->have_head 1 or 0), or -errno with @msg. */
static int
read_head(struct objfs_tier *t, struct head *h, char *msg, size_t msgsize)
{
	char buf[TIER_HEAD_MAX];
	size_t len;
	int rc;

	rc = objfs_remote_head_get(t->r, buf, sizeof(buf), &len, &t->head_ver);
	if (rc == -ENOENT) {
		t->have_head = 0;
		t->head_ver = 0;
		return 0;
	}
	if (rc == 0 && (rc = tier_head_parse(buf, len, h)) < 0)
		snprintf(msg, msgsize, "%s: objfs.head is not a head this objfs "
			"can read; refusing to mount (nothing was changed)",
			t->spec);
	else if (rc < 0)
		snprintf(msg, msgsize, "%s: cannot read objfs.head: %s", t->spec,
			strerror(-rc));
	if (rc < 0)
		return rc;
	t->have_head = 1;
	t->tree = h->tree;
	follow_head(t, h);
	return 0;
}

/* A log record's commits, checked: @cb(arg, seq, payload, len) each. */
int
tier_log_walk(const unsigned char *p, size_t len, uint64_t first, uint64_t *last,
		int (*cb)(void *arg, uint64_t seq, const void *pl, size_t n),
		void *arg)
{
	uint32_t magic, count;
	uint64_t f, l, sum;
	size_t off = TIER_LOG_HDR;

	if (len < TIER_LOG_HDR)
		return -EPROTO;
	memcpy(&magic, p, 4);
	memcpy(&count, p + 4, 4);
	f = get_be64(p + 8);
	l = get_be64(p + 16);
	sum = get_be64(p + 24);
	if (magic != TIER_LOG_MAGIC || f != first || l < f || l - f + 1 != count ||
	    objfs_csum64_seed(p + TIER_LOG_HDR, len - TIER_LOG_HDR, f ^ l) != sum)
		return -EPROTO;
	for (uint64_t seq = f; seq <= l; seq++) {
		uint64_t n;
		int rc;

		if (len - off < 16 || get_be64(p + off) != seq)
			return -EPROTO;
		n = get_be64(p + off + 8);
		if (n > len - off - 16)
			return -EPROTO;
		if (cb && (rc = cb(arg, seq, p + off + 16, (size_t)n)) < 0)
			return rc;
		off += 16 + (size_t)n;
	}
	if (off != len)
		return -EPROTO;
	*last = l;
	return 0;
}

int
tier_snap_check(const unsigned char *p, size_t len, uint64_t k)
{
	uint32_t magic, part;

	if (len < TIER_SNAP_HDR)
		return -EPROTO;
	memcpy(&magic, p, 4);
	memcpy(&part, p + 4, 4);
	if (magic != TIER_SNAP_MAGIC || part != k ||
	    get_be64(p + 8) != len - TIER_SNAP_HDR ||
	    objfs_csum64(p + TIER_SNAP_HDR, len - TIER_SNAP_HDR) !=
		get_be64(p + 16))
		return -EPROTO;
	return 0;
}

#define FENCE_LEN	32

int
tier_log_is_fence(const unsigned char *p, size_t len)
{
	uint32_t magic;

	if (len != FENCE_LEN)
		return 0;
	memcpy(&magic, p, 4);
	return magic == TIER_FENCE_MAGIC &&
		objfs_csum64(p, 24) == get_be64(p + 24);
}

/*
 * Reading an epoch's log in order.  A record's name is the number of its
 * first commit, so the next name is known only once a record is read:
 * one request after another, which on S3 (tens of milliseconds each)
 * made a mount of a few hundred records take seconds.  Where the store
 * lists names cheaply, the records from @seq on are listed once and
 * fetched LOG_AHEAD at a time, many at once (tier_fan).  The list is
 * only a guess at what to fetch: each record is still taken by the
 * number the walk wants, one not listed (created since) is read on its
 * own, and a listed one the walk passes over is dropped.  Records are
 * never rewritten (created only where none is), so a copy fetched ahead
 * is the record.
 */
#define LOG_AHEAD	32

struct log_ahead {
	uint64_t seq;
	void *buf;
	size_t len;
	int rc;
};

struct log_reader {
	struct objfs_tier *t;
	uint64_t epoch, from;
	struct log_ahead *a;
	size_t n, cap, next, fetched;
	char prefix[64];
};

static int
log_listed(void *arg, const char *name)
{
	struct log_reader *lr = arg;
	const char *p = name + strlen(lr->prefix);
	char *end;
	uint64_t seq;

	if (strlen(p) != 16)
		return 0;
	seq = strtoull(p, &end, 16);
	if (*end || seq < lr->from)
		return 0;
	if (lr->n == lr->cap) {
		size_t cap = lr->cap ? 2 * lr->cap : 256;
		struct log_ahead *v = realloc(lr->a, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		lr->a = v;
		lr->cap = cap;
	}
	lr->a[lr->n++] = (struct log_ahead){ .seq = seq };
	return 0;
}

static void
log_open(struct log_reader *lr, struct objfs_tier *t, uint64_t epoch,
		uint64_t from)
{
	memset(lr, 0, sizeof(*lr));
	lr->t = t;
	lr->epoch = epoch;
	lr->from = from;
	snprintf(lr->prefix, sizeof(lr->prefix), "objfs.log.%016" PRIx64 ".",
		epoch);
	if (objfs_remote_list_prefix(t->r, lr->prefix, log_listed, lr) < 0)
		lr->n = 0;	/* no list: one by one */
}

static void
log_fetch_one(void *arg, size_t i)
{
	struct log_reader *lr = arg;
	struct log_ahead *a = &lr->a[lr->fetched + i];
	char name[64];

	tier_log_name(name, lr->epoch, a->seq);
	a->rc = objfs_remote_get_all(lr->t->r, name, &a->buf, &a->len);
}

/* Record @seq as objfs_remote_get_all gives it (*@buf the caller's). */
static int
log_get(struct log_reader *lr, uint64_t seq, void **buf, size_t *len)
{
	char name[64];

	while (lr->next < lr->n && lr->a[lr->next].seq < seq) {
		if (lr->next < lr->fetched)
			free(lr->a[lr->next].buf);
		lr->next++;
	}
	if (lr->next < lr->n && lr->a[lr->next].seq == seq) {
		struct log_ahead *a;

		if (lr->next == lr->fetched) {
			size_t k = lr->n - lr->fetched < LOG_AHEAD ?
				lr->n - lr->fetched : LOG_AHEAD;

			tier_fan(k, 16, log_fetch_one, lr);
			lr->fetched += k;
		}
		a = &lr->a[lr->next++];
		*buf = a->buf;
		*len = a->len;
		return a->rc;
	}
	tier_log_name(name, lr->epoch, seq);
	return objfs_remote_get_all(lr->t->r, name, buf, len);
}

static void
log_close(struct log_reader *lr)
{
	for (size_t i = lr->next; i < lr->fetched; i++)
		free(lr->a[i].buf);
	free(lr->a);
}

/*
 * A mount taking the namespace over (exclusive) fences the head's epoch
 * before it reads that epoch's log: a record "fence" is created at the
 * first number the log does not have.  Log records are created only
 * where none is, one number after another, so a mount of that epoch that
 * stopped (a pause, a partition) and comes back can never add one after
 * it: its next put finds the fence and it knows it lost the namespace.
 * Every record it put before is one this mount replays.  A put that
 * lands first moves the fence one further.
 */
int
tier_fence_epoch(struct objfs_tier *t, uint64_t epoch, uint64_t base,
		uint64_t *end)
{
	unsigned char f[FENCE_LEN];
	uint32_t magic = TIER_FENCE_MAGIC, zero = 0;
	uint64_t seq = base + 1, last;
	struct log_reader lr;
	int rc = -EAGAIN;

	log_open(&lr, t, epoch, seq);
	for (int tries = 0; tries < 1000000; tries++) {
		void *buf;
		size_t len;

		rc = log_get(&lr, seq, &buf, &len);
		if (rc == 0) {
			if (tier_log_is_fence(buf, len)) {
				free(buf);
				*end = seq;	/* fenced already */
				break;
			}
			rc = tier_log_walk(buf, len, seq, &last, NULL, NULL);
			free(buf);
			if (rc < 0) {
				/* Damaged: the tree ends before it (as a
				 * build sees it); it stays as it is. */
				*end = seq;
				rc = 0;
				break;
			}
			seq = last + 1;
			continue;
		}
		if (rc != -ENOENT)
			break;
		memcpy(f, &magic, 4);
		memcpy(f + 4, &zero, 4);
		put_be64(f + 8, seq);
		put_be64(f + 16, tier_random64());
		put_be64(f + 24, objfs_csum64(f, 24));
		rc = objfs_remote_log_put(t->r, epoch, seq, f, sizeof(f));
		if (rc == 0) {
			objfs_log(OBJFS_LOG_INFO, "remote: %s: epoch %" PRIu64
				"'s log fenced at record %" PRIu64 ": a mount "
				"of it that is still running can add nothing",
				t->spec, epoch, seq);
			*end = seq;
			break;
		}
		if (rc != -EEXIST)
			break;
		/* A record landed just now: it is in the log; look again. */
		rc = -EAGAIN;
	}
	log_close(&lr);
	return rc;
}

static int
import_commit(void *arg, uint64_t seq, const void *p, size_t n)
{
	(void)seq;
	return objfs_meta_import(arg, p, n, NULL);
}

/*
 * Walk the logs of epoch @epoch from @seq on (to the first number that
 * has none, or a fence), applying them to @m when it is not NULL; *@end
 * gets the first number none has.
 */
static int
walk_logs(struct objfs_tier *t, uint64_t epoch, uint64_t seq,
		struct objfs_meta *m, uint64_t *end, uint64_t *records)
{
	struct log_reader lr;
	uint64_t last;
	char name[64];
	int rc = 0;

	*records = 0;
	log_open(&lr, t, epoch, seq);
	for (;;) {
		void *buf;
		size_t len;

		tier_log_name(name, epoch, seq);
		rc = log_get(&lr, seq, &buf, &len);
		if (rc == -ENOENT) {
			rc = 0;
			break;
		}
		if (rc < 0)
			break;
		if (tier_log_is_fence(buf, len)) {
			free(buf);
			break;		/* the log ends there */
		}
		rc = tier_log_walk(buf, len, seq, &last, m ? import_commit : NULL, m);
		free(buf);
		if (rc == -EPROTO) {
			objfs_log(OBJFS_LOG_ERR, "remote: %s: log record %s is "
				"damaged; the tree ends before it", t->spec,
				name);
			rc = 0;
			break;
		}
		if (rc < 0)
			break;
		(*records)++;
		seq = last + 1;
	}
	log_close(&lr);
	*end = seq;
	return rc;
}

/* Every file of directory @dir removed (an index to build again). */
int
tier_clear_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && unlinkat(dirfd(d), e->d_name, 0) < 0 &&
		    errno != ENOENT)
			rc = -errno;
	closedir(d);
	return rc;
}

int
tier_tree_build(struct objfs_tier *t, struct objfs_meta *m, struct head *h,
		uint64_t *end, uint64_t *entries, uint64_t *records)
{
	{
		struct head now;
		int rc = 0, gone = 0;

		*entries = 0;
		for (uint64_t k = 0; rc == 0 && k < h->parts; k++) {
			char name[64];
			unsigned char *p;
			size_t len;

			tier_snap_name(name, h, k);
			rc = objfs_remote_get_all(t->r, name, (void **)&p, &len);
			if (rc == -ENOENT) {
				gone = 1;	/* compacted meanwhile? */
				break;
			}
			if (rc < 0)
				break;
			if (tier_snap_check(p, len, k) < 0) {
				objfs_log(OBJFS_LOG_ERR, "remote: %s: snapshot "
					"part %s is damaged", t->spec, name);
				rc = -EIO;
			} else {
				rc = objfs_meta_import(m, p + TIER_SNAP_HDR,
						len - TIER_SNAP_HDR, entries);
			}
			free(p);
		}
		if (rc == 0 && !gone)
			rc = walk_logs(t, h->epoch, h->base + 1, m, end, records);
		if (rc < 0)
			return rc;
		/* The log's end, or records compacted away while this read
		 * them (a newer head's floor past where this began)? */
		rc = tier_head_read(t, &now, NULL);
		if (rc < 0)
			return rc;
		if (!gone && (now.epoch != h->epoch || now.floor <= h->base))
			return 0;
		if (now.epoch == h->epoch && now.base == h->base &&
		    now.parts == h->parts && gone) {
			objfs_log(OBJFS_LOG_ERR, "remote: %s: a snapshot part "
				"the head names is missing", t->spec);
			return -EIO;
		}
		objfs_log(OBJFS_LOG_INFO, "remote: %s: the tree was compacted "
			"while it was read: reading it again from the snapshot "
			"of commit %" PRIu64, t->spec, now.base);
		*h = now;
		return -EAGAIN;
	}
}

int
tier_set_supers(struct objfs_meta *m, uint64_t tree, uint64_t epoch,
		uint64_t owner)
{
	struct objfs_meta_txn *tx;
	int rc = objfs_meta_begin(m, OBJFS_META_ESSENTIAL, &tx);

	if (rc < 0)
		return rc;
	if ((rc = objfs_meta_super_put(tx, SUPER_TREE, tree)) < 0 ||
	    (rc = objfs_meta_super_put(tx, SUPER_EPOCH, epoch)) < 0 ||
	    (rc = objfs_meta_super_put(tx, SUPER_OWNER, owner)) < 0) {
		objfs_meta_abort(tx);
		return rc;
	}
	return objfs_meta_commit(tx);
}

/* Build the pool's tree into the empty index directory @dir. */
static int
build(struct objfs_tier *t, const char *dir, struct head *h, char *msg,
		size_t msgsize)
{
	struct objfs_meta *m;
	uint64_t entries = 0, records = 0, t0 = objfs_mono_ns();
	int rc;

	for (int tries = 0;; tries++) {
		rc = objfs_meta_open(dir, OBJFS_META_CREATE, &m, NULL);
		if (rc < 0) {
			snprintf(msg, msgsize, "cannot create the index: %s",
				strerror(-rc));
			return rc;
		}
		rc = tier_tree_build(t, m, h, &t->logs_end, &entries,
				&records);
		if (rc != -EAGAIN || tries == 16)
			break;
		/* Compacted while it read: again, from the new head. */
		(void)objfs_meta_close(m);
		rc = tier_clear_dir(dir);
		if (rc < 0)
			return rc;
	}
	if (rc < 0)
		snprintf(msg, msgsize, "%s: cannot build the tree from the "
			"pool: %s", t->spec, strerror(-rc));
	if (rc == 0)
		follow_head(t, h);	/* the head the build read */
	if (rc == 0)
		rc = objfs_meta_checkpoint_now(m);
	if (rc == 0)
		rc = tier_set_supers(m, h->tree, h->epoch, h->owner);
	if (rc == 0) {
		/* The position in the log (shared mode follows it from
		 * here). */
		struct objfs_meta_txn *tx;

		rc = objfs_meta_begin(m, OBJFS_META_ESSENTIAL, &tx);
		if (rc == 0)
			rc = objfs_commit_or_abort(tx, objfs_meta_super_put(tx,
				OBJFS_SUPER_REMOTE_POS, t->logs_end - 1),
				NULL);
	}
	if (rc == 0)
		rc = objfs_meta_close(m);
	else
		(void)objfs_meta_close(m);
	if (rc == 0)
		objfs_log(OBJFS_LOG_INFO, "remote: %s: the tree built from the "
			"pool (snapshot of commit %" PRIu64 " in %" PRIu64
			" part(s), %" PRIu64 " record(s), then %" PRIu64
			" log record(s)) in %.1f s", t->spec, h->base,
			h->parts, entries, records,
			(double)(objfs_mono_ns() - t0) / 1e9);
	else if (!msg[0])
		snprintf(msg, msgsize, "cannot build the index from the pool: %s",
			strerror(-rc));
	return rc;
}

static int
local_super(struct objfs_meta *m, const char *key, uint64_t *v)
{
	struct objfs_meta_txn *tx;
	int rc = objfs_meta_begin(m, 0, &tx);

	if (rc < 0)
		return rc;
	rc = objfs_meta_super_get(tx, key, v);
	objfs_meta_abort(tx);
	return rc;
}

int
tier_prepare(struct objfs_tier *t, const char *dir, struct objfs_meta *m,
		int *stale, char *msg, size_t msgsize)
{
	struct head h;
	uint64_t tree = 0, epoch = 0, owner = 0, end, records, ninodes = 0;
	int rc;

	*stale = 0;
	msg[0] = '\0';
	rc = read_head(t, &h, msg, msgsize);
	if (rc < 0)
		return rc;
	/* An exclusive mount has the namespace now: whatever mount had the
	 * head's epoch before can add nothing to its log from here on
	 * (stopped, not dead, it may come back), so that every record it
	 * acknowledged is in what this mount reads. */
	if (!t->shared && t->have_head && t->fenced != h.epoch) {
		rc = tier_fence_epoch(t, h.epoch, h.base, &end);
		if (rc < 0) {
			snprintf(msg, msgsize, "%s: cannot fence the log of epoch "
				"%" PRIu64 ": %s", t->spec, h.epoch,
				strerror(-rc));
			return rc;
		}
		t->fenced = h.epoch;
	}
	if (!m) {
		if (!t->have_head)
			return 0;
		rc = build(t, dir, &h, msg, msgsize);
		t->built = rc == 0;
		return rc;
	}
	if (t->built)
		return 0;	/* the pool's, as it is now */
	rc = local_super(m, SUPER_TREE, &tree);
	if (rc == -ENOENT) {
		struct objfs_meta_txn *tx;

		if (objfs_meta_begin(m, 0, &tx) == 0) {
			(void)objfs_meta_inode_count(tx, &ninodes);
			objfs_meta_abort(tx);
		}
		/* Made by a first mount that stopped before its head. */
		if (ninodes <= 1) {
			*stale = t->have_head;
			return 0;
		}
		snprintf(msg, msgsize, "the data directory holds a tree of its "
			"own (its chunks in backing/), not a cache of %s: "
			"mount it without remote=, and give remote= an empty "
			"data directory", t->spec);
		return -EXDEV;
	}
	if (rc == 0)
		rc = local_super(m, SUPER_EPOCH, &epoch);
	if (rc == 0)
		rc = local_super(m, SUPER_OWNER, &owner);
	if (rc < 0) {
		snprintf(msg, msgsize, "cannot read the index: %s",
			strerror(-rc));
		return rc;
	}
	if (!t->have_head) {
		objfs_log(OBJFS_LOG_WARNING, "remote: %s has no tree; this data "
			"directory's (tree %016" PRIx64 ") becomes it", t->spec,
			tree);
		t->tree = tree;
		return 0;
	}
	if (tree != h.tree) {
		snprintf(msg, msgsize, "the data directory caches another tree "
			"(%016" PRIx64 ") than %s's (%016" PRIx64 "); give "
			"remote= an empty data directory", tree, t->spec,
			h.tree);
		return -EXDEV;
	}
	if (t->shared && epoch == h.epoch) {
		uint64_t pos;
		char mark[PATH_MAX + 32];

		/* Its last mount held commits that the tree refused (a
		 * directory taken from it while they waited: deleg.c): its
		 * index is ahead of the tree for good. */
		snprintf(mark, sizeof(mark), "%s/%s", t->dir,
			TIER_DELEG_REFUSED);
		if (access(mark, F_OK) == 0) {
			objfs_log(OBJFS_LOG_WARNING, "remote: %s: this data "
				"directory's last mount held changes the tree "
				"refused (another node took their directory, "
				"or the epoch was fenced): building its index "
				"anew from the pool", t->spec);
			(void)unlink(mark);
			*stale = 1;
			return 0;
		}

		/* One of many mounts: the log is applied from the index's
		 * position on (start), unless records after it may have
		 * been compacted away since (the head's floor). */
		if (local_super(m, OBJFS_SUPER_REMOTE_POS, &pos) == 0 &&
		    pos >= h.floor)
			return 0;
		if (pos < h.floor) {
			objfs_log(OBJFS_LOG_INFO, "remote: %s: the log was "
				"compacted past this data directory's index "
				"(record %" PRIu64 ", the floor is %" PRIu64
				"): building it anew from the pool", t->spec,
				pos, h.floor);
			*stale = 1;
			return 0;
		}
		objfs_log(OBJFS_LOG_INFO, "remote: %s: this data directory's "
			"index has no position in the pool's log: building it "
			"anew from the pool", t->spec);
		*stale = 1;
		return 0;
	}
	if (epoch != h.epoch || owner != h.owner) {
		objfs_log(OBJFS_LOG_INFO, "remote: %s was mounted elsewhere since "
			"this data directory's index was its cache (epoch %"
			PRIu64 ", now %" PRIu64 "): building it anew from the "
			"pool", t->spec, epoch, h.epoch);
		*stale = 1;
		return 0;
	}
	/* This data directory's mount was the last: the pool has its
	 * commits up to some number, the index at least as many unless a
	 * machine crash took the last ones from it. */
	rc = walk_logs(t, t->head_epoch, t->head_base + 1, NULL, &end, &records);
	if (rc < 0) {
		snprintf(msg, msgsize, "%s: cannot read the pool's log: %s",
			t->spec, strerror(-rc));
		return rc;
	}
	t->logs_end = end;
	if (objfs_meta_last_seq(m) + 1 < end) {
		objfs_log(OBJFS_LOG_WARNING, "remote: %s holds commits up to %"
			PRIu64 ", the index only up to %" PRIu64 " (a machine "
			"crash took the rest from it): building it anew from "
			"the pool", t->spec, end - 1, objfs_meta_last_seq(m));
		*stale = 1;
	}
	return 0;
}

/* ---- start: a new epoch ---------------------------------------------- */

int
tier_snap_part(void *arg, const void *p, size_t len)
{
	struct snap_up *u = arg;
	unsigned char *buf = malloc(TIER_SNAP_HDR + len);
	uint32_t magic = TIER_SNAP_MAGIC, part = (uint32_t)u->parts;
	char name[64];
	int rc;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, &magic, 4);
	memcpy(buf + 4, &part, 4);
	put_be64(buf + 8, len);
	put_be64(buf + 16, objfs_csum64(p, len));
	memcpy(buf + TIER_SNAP_HDR, p, len);
	tier_snap_name(name, &u->h, u->parts);
	rc = objfs_remote_put(u->t->r, name, buf, TIER_SNAP_HDR + len);
	free(buf);
	if (rc < 0)
		return rc;
	u->parts++;
	u->bytes += len;
	return 0;
}

/* Remove what the previous epoch left: its snapshot and its logs. */
void
tier_remove_snapshot(struct objfs_tier *t, const struct head *h)
{
	char name[64];

	for (uint64_t k = 0; k < h->parts; k++) {
		tier_snap_name(name, h, k);
		(void)objfs_remote_remove(t->r, name);
	}
}

struct epoch_gone {
	struct objfs_tier *t;
	uint64_t epoch, *seqs;
	size_t n, cap;
};

static void
remove_record(void *arg, size_t i)
{
	struct epoch_gone *g = arg;
	char name[64];

	tier_log_name(name, g->epoch, g->seqs[i]);
	(void)objfs_remote_remove(g->t->r, name);
}

/* The old epoch's records, read in order to learn their names (a fence
 * or a damaged one ends the chain; it goes too), then removed many at
 * once.  What a crash leaves of them the collector removes. */
void
tier_remove_epoch(struct objfs_tier *t, const struct head *old)
{
	struct epoch_gone g = { .t = t, .epoch = old->epoch };
	uint64_t seq = old->base + 1, last;
	struct log_reader lr;

	tier_remove_snapshot(t, old);
	log_open(&lr, t, old->epoch, seq);
	for (;;) {
		void *buf;
		size_t len;
		int rc;

		if (log_get(&lr, seq, &buf, &len) < 0)
			break;
		rc = tier_log_walk(buf, len, seq, &last, NULL, NULL);
		free(buf);
		if (g.n == g.cap) {
			size_t cap = g.cap ? 2 * g.cap : 256;
			uint64_t *v = realloc(g.seqs, cap * sizeof(*v));

			if (!v)
				break;
			g.seqs = v;
			g.cap = cap;
		}
		g.seqs[g.n++] = seq;
		if (rc < 0)
			break;
		seq = last + 1;
	}
	log_close(&lr);
	tier_fan(g.n, 16, remove_record, &g);
	free(g.seqs);
}

/* Does the head still name this mount's epoch? */
int
tier_head_ours(struct objfs_tier *t)
{
	char buf[TIER_HEAD_MAX];
	size_t len;
	uint64_t ver;
	struct head h;
	int rc = objfs_remote_head_get(t->r, buf, sizeof(buf), &len, &ver);

	if (rc == 0)
		rc = tier_head_parse(buf, len, &h);
	if (rc < 0)
		return rc;
	return h.epoch == t->epoch && h.tree == t->tree;
}
