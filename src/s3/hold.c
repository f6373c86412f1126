/* SPDX-License-Identifier: MIT */
/*
 * hold.c - the namespace's hold on S3 (src/remote.h's hold, renew,
 * release, holder and break), without locks: an object whose body names
 * its holder and how long the hold lasts unrenewed,
 *
 *	objfs-hold 1
 *	holder HOST/MACHINE:DIR#pid N
 *	seconds S
 *	write W
 *
 * (or "free" in place of the holder and seconds, once given back).  It is
 * made with If-None-Match: *, and replaced (renewed, taken over, given
 * back) only with If-Match on the ETag just read, so of two mounts that
 * race, one wins and the other is told who holds it.  W is drawn anew
 * for every write: S3's ETag is the MD5 of the body, and a holder that
 * wrote the same bytes again (its renewal, or its retake of a lapsed
 * hold) would keep the ETag, so that a successor's If-Match on the ETag
 * it read before that write would still succeed, and both would hold
 * the namespace (issue 47's defect 4; the simulator's S3, seed 176).  A hold has lapsed when
 * the service's clock says so: the Date of the answer that read it, less
 * its Last-Modified, is more than its seconds (and one more: both are in
 * whole seconds).  This machine's clock is never read, so a skewed clock
 * can neither take a live hold nor keep a lapsed one.  What a skew cannot
 * do, a pause can: a holder stopped for longer than its hold keeps
 * writing when it resumes until its next renewal finds the hold gone.
 * What it writes then is fenced elsewhere: a log record is made only if
 * absent, and the head only at the version it read (store.c).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/log.h"
#include "src/base/rand.h"
#include "src/s3/s3.h"

#ifdef HAVE_S3
#include "src/s3/s3_int.h"

#define HOLD_MAGIC	"objfs-hold 1\n"

struct hold {
	int exists, free, lapsed;
	char holder[256];
	unsigned seconds;
	char etag[S3_ETAG_MAX];
};

/* Read hold @name into @h: 0 (h->exists 0 when there is none), -errno. */
static int
hold_read(struct s3 *s, const char *name, struct hold *h)
{
	char body[512];
	struct s3_req q = { .method = "GET", .name = name, .out = body,
		.cap = sizeof(body) - 1 };
	const char *p;
	long age;
	int rc;

	memset(h, 0, sizeof(*h));
	rc = s3_do(s, &q);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	body[q.len] = '\0';
	h->exists = 1;
	snprintf(h->etag, sizeof(h->etag), "%s", q.etag);
	if (strncmp(body, HOLD_MAGIC, sizeof(HOLD_MAGIC) - 1) != 0)
		return -EPROTO;
	p = body + sizeof(HOLD_MAGIC) - 1;
	if (strncmp(p, "free\n", 5) == 0) {
		h->free = 1;
		return 0;
	}
	if (sscanf(p, "holder %255[^\n]\nseconds %u\n", h->holder,
			&h->seconds) != 2)
		return -EPROTO;
	/* Without both times (a header missing, or one that cannot be
	 * read) its age is unknown: never lapsed, so that a live hold is
	 * never taken; the mount that wants it is refused, and says so. */
	if (q.date <= 0 || q.last_modified <= 0) {
		objfs_log(OBJFS_LOG_WARNING, "s3: %s: the answer has no %s "
			"that can be read: the hold's age is unknown, and it is "
			"taken as live", name, q.date <= 0 ? "Date" :
			"Last-Modified");
		return 0;
	}
	age = (long)(q.date - q.last_modified);
	h->lapsed = age > (long)h->seconds + 1;
	return 0;
}

/* Write hold @name (@holder, or free with NULL) where @h was read:
 * created if it was not there, else at its ETag.  -EEXIST when another
 * changed it first. */
static int
hold_write(struct s3 *s, const char *name, const struct hold *h,
		const char *holder, unsigned seconds)
{
	char body[512], bare[S3_ETAG_MAX];
	struct s3_req q = { .method = "PUT", .name = name, .body = body };
	uint64_t w = objfs_random64();
	int n;

	if (holder)
		n = snprintf(body, sizeof(body), HOLD_MAGIC "holder %s\n"
			"seconds %u\nwrite %016" PRIx64 "\n", holder, seconds,
			w);
	else
		n = snprintf(body, sizeof(body), HOLD_MAGIC "free\nwrite %016"
			PRIx64 "\n", w);
	if (n < 0 || (size_t)n >= sizeof(body))
		return -ENAMETOOLONG;
	q.body_len = (size_t)n;
	if (h->exists) {
		size_t k = strlen(h->etag);

		q.if_match = h->etag;
		if (s->etag_bare && k >= 2 && h->etag[0] == '"') {
			snprintf(bare, sizeof(bare), "%.*s", (int)(k - 2),
				h->etag + 1);
			q.if_match = bare;
		}
	} else {
		q.if_none_match = 1;
	}
	return s3_do(s, &q);
}

int
objfs_s3_hold(struct objfs_remote *base, const char *name, const char *holder,
		unsigned seconds, char *who, size_t whosize)
{
	struct s3 *s = (struct s3 *)base;
	struct hold h;
	int rc = -EBUSY;

	/* A race lost is read again: the winner is named, or it was this
	 * mount's own first try whose answer was lost. */
	for (int tries = 0; tries < 4; tries++) {
		rc = hold_read(s, name, &h);
		if (rc < 0)
			return rc;
		if (h.exists && !h.free && !h.lapsed &&
		    strcmp(h.holder, holder) != 0) {
			if (who)
				snprintf(who, whosize, "%s", h.holder);
			return -EBUSY;
		}
		rc = hold_write(s, name, &h, holder, seconds);
		if (rc != -EEXIST)
			return rc;
		rc = -EBUSY;
	}
	return rc;
}

int
objfs_s3_hold_renew(struct objfs_remote *base, const char *name,
		const char *holder, unsigned seconds, int shared)
{
	struct s3 *s = (struct s3 *)base;
	struct hold h;
	int rc;

	if (shared)
		return -ENOTSUP;
	rc = hold_read(s, name, &h);
	if (rc < 0)
		return rc;
	/* Gone, given back, another's, or lapsed (whether or not another
	 * took it since): never hidden by taking it again here. */
	if (!h.exists || h.free || h.lapsed || strcmp(h.holder, holder) != 0)
		return -ENOENT;
	rc = hold_write(s, name, &h, holder, seconds);
	return rc == -EEXIST ? -ENOENT : rc;
}

int
objfs_s3_release(struct objfs_remote *base, const char *name,
		const char *holder)
{
	struct s3 *s = (struct s3 *)base;
	struct hold h;
	int rc = hold_read(s, name, &h);

	if (rc < 0)
		return rc;
	if (!h.exists || h.free || strcmp(h.holder, holder) != 0)
		return 0;
	rc = hold_write(s, name, &h, NULL, 0);
	return rc == -EEXIST ? 0 : rc;
}

int
objfs_s3_holder(struct objfs_remote *base, const char *name, char *client,
		size_t clen, char *cookie, size_t klen)
{
	struct hold h;
	int rc = hold_read((struct s3 *)base, name, &h);

	if (rc < 0)
		return rc;
	if (!h.exists || h.free || h.lapsed)
		return -ENOENT;
	snprintf(client, clen, "s3");
	snprintf(cookie, klen, "%s", h.holder);
	return 0;
}

int
objfs_s3_break(struct objfs_remote *base, const char *name,
		const char *client, const char *cookie)
{
	struct s3 *s = (struct s3 *)base;
	struct hold h;
	int rc = hold_read(s, name, &h);

	(void)client;
	if (rc < 0)
		return rc;
	if (!h.exists || h.free)
		return 0;
	if (strcmp(h.holder, cookie) != 0)
		return -ENOENT;
	rc = hold_write(s, name, &h, NULL, 0);
	return rc == -EEXIST ? -EBUSY : rc;
}

#endif	/* HAVE_S3 */
