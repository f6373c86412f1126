/* SPDX-License-Identifier: MIT */
/*
 * pins.c - shared mode's pins (doc/design.md, "Garbage"; invariant
 * 5): the collector keeps the chunks of every version open on a live
 * node.  After its mark, the collector asks every node watching the head
 * (a notify with the payload "objfs-pins"); each node's follower applies
 * the log to its end, writes the chunk names of the versions open on it
 * to objfs.pins.<node>, and answers with its number.  A node that holds
 * its lock and did not answer defers the collection.
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
#include "src/base/csum.h"
#include "src/base/log.h"
#include "meta/meta_keys.h"
#include "src/store_int.h"
#include "src/cluster/tier_int.h"

/* The watch: a notify of an append (no payload) wakes the follower; a
 * collector's request for this node's pins is answered by it. */
void
tier_share_watched(void *arg, uint64_t notify_id, uint64_t cookie, const void *data,
		size_t len)
{
	struct objfs_tier *t = arg;
	int queued = 0;

	if (data && len > strlen(TIER_RECALL_ASK) &&
	    memcmp(data, TIER_RECALL_ASK, strlen(TIER_RECALL_ASK)) == 0) {
		tier_deleg_watched(t, notify_id, cookie, data, len);
		return;
	}
	if (data && len == strlen(TIER_PINS_ASK) &&
	    memcmp(data, TIER_PINS_ASK, len) == 0) {
		pthread_mutex_lock(&t->lock);
		if (t->pins_n < TIER_PINS_REQS) {
			t->pins_req[t->pins_n].id = notify_id;
			t->pins_req[t->pins_n].cookie = cookie;
			t->pins_n++;
			queued = 1;
		}
		pthread_mutex_unlock(&t->lock);
	}
	if (data && !queued)	/* not ours, or too many: no answer given */
		(void)objfs_remote_notify_ack(t->r, notify_id, cookie, NULL, 0);
	tier_share_kick(t);
}

struct pins {
	unsigned char *p;
	size_t len, cap;
	uint64_t count;
};

static int
pins_add(struct pins *pn, uint64_t hi, uint64_t lo, uint32_t len)
{
	if (pn->len + 20 > pn->cap) {
		size_t cap = pn->cap ? 2 * pn->cap : 4096;
		unsigned char *v = realloc(pn->p, cap);

		if (!v)
			return -ENOMEM;
		pn->p = v;
		pn->cap = cap;
	}
	put_be64(pn->p + pn->len, hi);
	put_be64(pn->p + pn->len + 8, lo);
	put_be32(pn->p + pn->len + 16, len);
	pn->len += 20;
	pn->count++;
	return 0;
}

/*
 * Answer the collectors that asked: the log applied to its end (so that
 * every version another node replaced before they marked is detached
 * here, and still open if it is), then the chunks of every version open
 * here written to objfs.pins.<node>, then the answer: this node's number.
 * A version opened after this is at least as new as the collector's mark,
 * so its chunks are marked, or were put or found since (kept by the
 * sweep's own rules).
 */
void
tier_share_answer_pins(struct objfs_tier *t)
{
	struct pins pn = { 0 };
	struct objfs_inode **all;
	unsigned char nodebuf[8];
	uint32_t magic = TIER_PINS_MAGIC;
	char name[64];
	size_t k = 0;
	unsigned n;
	int rc;

	pthread_mutex_lock(&t->lock);
	n = t->pins_n;
	pthread_mutex_unlock(&t->lock);
	if (!n)
		return;
	rc = tier_share_catch_up(t);
	if (rc == 0 && pins_add(&pn, 0, 0, 0) == 0) {	/* the header's room */
		pn.len = 24;
		pn.count = 0;
	} else if (rc == 0) {
		rc = -ENOMEM;
	}
	if (rc == 0 && (rc = objfs_inode_snapshot(t->s, &all, &k)) == 0) {
		for (size_t i = 0; i < k; i++) {
			struct objfs_inode *ip = all[i];
			struct objfs_chunk *c;
			uint64_t idx;

			objfs_inode_lock(ip);
			if (S_ISREG(ip->attr.mode) && ip->nopen)
				OBJFS_CHUNKMAP_EACH(&ip->chunks, 0, idx, c)
					if ((c->flags & OBJFS_CHUNK_ONDISK) &&
					    rc == 0)
						rc = pins_add(&pn, c->slot,
							c->home, c->disk_len);
			objfs_inode_unlock(ip);
		}
		objfs_inode_put_all(t->s, all, k);
	}
	if (rc == 0) {
		put_be32(pn.p, magic);
		put_be32(pn.p + 4, 0);
		put_be64(pn.p + 8, pn.count);
		put_be64(pn.p + 16, objfs_csum64(pn.p + 24, pn.len - 24));
		snprintf(name, sizeof(name), TIER_PINS_FMT, t->node);
		rc = objfs_remote_put(t->r, name, pn.p, pn.len);
		objfs_tier_note(t, rc, "writing this node's pins");
	}
	free(pn.p);
	put_be64(nodebuf, t->node);
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->pins_n; i++)
		(void)objfs_remote_notify_ack(t->r, t->pins_req[i].id,
			t->pins_req[i].cookie, rc == 0 ? nodebuf : NULL,
			rc == 0 ? 8 : 0);
	t->pins_n = 0;
	pthread_mutex_unlock(&t->lock);
	if (rc < 0)
		objfs_log(OBJFS_LOG_WARNING, "remote: %s: cannot name the chunks "
			"open here to a collector: %s (it defers)", t->spec,
			strerror(-rc));
}

struct answers {
	uint64_t *v;
	size_t n, cap;
	int bad;
};

static void
answered(void *arg, const void *data, size_t len)
{
	struct answers *a = arg;

	if (len != 8) {
		a->bad = 1;	/* a node that could not name its pins */
		return;
	}
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		uint64_t *v = realloc(a->v, cap * sizeof(*v));

		if (!v) {
			a->bad = 1;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = get_be64(data);
}

int
tier_share_pins(struct objfs_tier *t,
		int (*add)(void *arg, uint64_t hi, uint64_t lo, uint32_t len),
		void *arg, uint64_t **nodes, size_t *n, char *why,
		size_t whysize)
{
	struct answers a = { 0 };
	int rc;

	*nodes = NULL;
	*n = 0;
	/* A watcher that does not answer in time may be a node that died
	 * (its watch outlives it by the watch's timeout): whether a live
	 * node is missing is told by the locks (tier_share_unanswered). */
	rc = objfs_remote_ask(t->r, TIER_WATCH, TIER_PINS_ASK,
			strlen(TIER_PINS_ASK), t->timeout_s * 1000u, answered,
			&a);
	if (rc == -ETIMEDOUT)
		rc = 0;
	if (rc == 0 && a.bad) {
		snprintf(why, whysize, "deferred: a node could not name the "
			"chunks of the versions open on it (its log says why)");
		rc = -EBUSY;
	}
	for (size_t i = 0; rc == 0 && i < a.n; i++) {
		char name[64];
		unsigned char *p;
		size_t len;

		snprintf(name, sizeof(name), TIER_PINS_FMT, a.v[i]);
		rc = objfs_remote_get_all(t->r, name, (void **)&p, &len);
		if (rc < 0) {
			snprintf(why, whysize, "stopped: cannot read %s: %s",
				name, strerror(-rc));
			break;
		}
		if (len < 24 || get_be32(p) != TIER_PINS_MAGIC ||
		    (len - 24) / 20 != get_be64(p + 8) ||
		    (len - 24) % 20 ||
		    objfs_csum64(p + 24, len - 24) != get_be64(p + 16)) {
			snprintf(why, whysize, "stopped: %s is damaged", name);
			rc = -EIO;
		}
		for (size_t off = 24; rc == 0 && off < len; off += 20)
			rc = add(arg, get_be64(p + off), get_be64(p + off + 8),
					get_be32(p + off + 16));
		free(p);
	}
	if (rc < 0) {
		free(a.v);
		return rc;
	}
	*nodes = a.v;
	*n = a.n;
	return 0;
}

int
tier_share_unanswered(struct objfs_tier *t, uint64_t node, char *why,
		size_t whysize)
{
	char name[64];
	int rc = tier_node_alive(t, node);

	if (rc < 0)
		return rc;
	if (rc) {
		snprintf(why, whysize, "deferred: node %016" PRIx64 " lives "
			"and did not answer (not watching the head yet?)", node);
		return -EBUSY;
	}
	/* Gone: what it left goes (its pins, its lock's object). */
	snprintf(name, sizeof(name), TIER_PINS_FMT, node);
	(void)objfs_remote_remove(t->r, name);
	tier_node_name(name, node);
	(void)objfs_remote_remove(t->r, name);
	return 0;
}
