/* SPDX-License-Identifier: MIT */
/*
 * check_pool.c - objfsctl check of a pool's cache with --remote: the way
 * to the pool that check.c uses (check.h, struct objfs_check_pool).
 *	verify	each chunk record's object read from the pool, its size and
 *		bytes checked against the record's checksum;
 *	tree	the pool's head (its checksum, and that it names the tree the
 *		data directory caches), every snapshot part and every log
 *		record of its epoch checked, and the chunk objects counted.
 * Read-only: nothing in the pool is changed, and no hold is taken (a
 * mount elsewhere may change the pool meanwhile: its findings are then
 * for the moment each object was read).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/tools/check.h"
#include "meta/meta.h"
#include "src/cluster/tier_int.h"

struct pool_check {
	struct objfs_remote *r;
	char name[300];
	uint64_t objects, chunks;
};

static int
verify(void *arg, const struct objfs_chunk_rec *rec, void *buf)
{
	struct pool_check *p = arg;
	char name[OBJFS_REMOTE_CHUNK_NAME];
	int rc;

	snprintf(name, sizeof(name), "c.%016" PRIx64 "%016" PRIx64 "-%" PRIx32,
		rec->slot, rec->home, rec->len);
	rc = objfs_remote_chunk_get(p->r, name, buf, rec->len, rec->shift,
			rec->csum);
	return rc == -EIO ? -EBADMSG : rc;
}

static int
count_object(void *arg, const char *name)
{
	struct pool_check *p = arg;

	p->objects++;
	p->chunks += strncmp(name, "c.", 2) == 0;
	return 0;
}

static int
tree(void *arg, FILE *out, uint64_t want)
{
	struct pool_check *p = arg;
	char buf[TIER_HEAD_MAX], name[64];
	uint64_t ver, seq, last, logs = 0, commits = 0;
	struct head h;
	size_t len;
	int rc, problems = 0;

	rc = objfs_remote_head_get(p->r, buf, sizeof(buf), &len, &ver);
	if (rc == 0)
		rc = tier_head_parse(buf, len, &h);
	if (rc < 0) {
		fprintf(out, "  problem: %s: its head cannot be read: %s\n",
			p->name, rc == -ENOENT ? "there is none" :
			rc == -EPROTO ? "damaged" : strerror(-rc));
		return 1;
	}
	if (h.tree != want) {
		fprintf(out, "  problem: %s holds tree %016" PRIx64 ", not the "
			"one this data directory caches\n", p->name, h.tree);
		return 1;
	}
	for (uint64_t k = 0; k < h.parts; k++) {
		void *b;

		tier_snap_name(name, &h, k);
		rc = objfs_remote_get_all(p->r, name, &b, &len);
		if (rc == 0) {
			rc = tier_snap_check(b, len, k);
			free(b);
		}
		if (rc < 0) {
			fprintf(out, "  problem: snapshot part %s: %s\n", name,
				rc == -EPROTO ? "damaged" : strerror(-rc));
			problems++;
		}
	}
	for (seq = h.base + 1;; seq = last + 1) {
		void *b;

		tier_log_name(name, h.epoch, seq);
		rc = objfs_remote_get_all(p->r, name, &b, &len);
		if (rc == -ENOENT)
			break;
		if (rc == 0 && tier_log_is_fence(b, len)) {
			free(b);
			break;		/* the epoch's log ends there */
		}
		if (rc == 0) {
			rc = tier_log_walk(b, len, seq, &last, NULL, NULL);
			free(b);
		}
		if (rc < 0) {
			fprintf(out, "  problem: log record %s: %s (the tree "
				"ends before it)\n", name, rc == -EPROTO ?
				"damaged" : strerror(-rc));
			problems++;
			break;
		}
		logs++;
		commits += last - seq + 1;
	}
	rc = objfs_remote_list(p->r, count_object, p);
	fprintf(out, "  the pool's tree: epoch %" PRIu64 ", a snapshot of commit "
		"%" PRIu64 " in %" PRIu64 " part(s) (%" PRIu64 " bytes), %"
		PRIu64 " log record(s) of %" PRIu64 " commit(s) after it; %"
		PRIu64 " objects, %" PRIu64 " of them chunks\n", h.epoch, h.base,
		h.parts, h.bytes, logs, commits, p->objects, p->chunks);
	if (rc < 0) {
		fprintf(out, "  problem: %s cannot be listed: %s\n", p->name,
			strerror(-rc));
		problems++;
	}
	return problems;
}

int
objfs_tier_check_open(const struct objfs_remote_config *cfg,
		struct objfs_check_pool *out, char *err, size_t errsize)
{
	struct pool_check *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	rc = objfs_tier_remote_connect(cfg, &p->r, err, errsize);
	if (rc < 0) {
		free(p);
		return rc;
	}
	snprintf(p->name, sizeof(p->name), "%s", cfg->spec);
	out->name = p->name;
	out->verify = verify;
	out->tree = tree;
	out->arg = p;
	return 0;
}

void
objfs_tier_check_close(struct objfs_check_pool *c)
{
	struct pool_check *p = c->arg;

	if (!p)
		return;
	objfs_remote_close(p->r);
	free(p);
	c->arg = NULL;
}
