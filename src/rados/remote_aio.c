/* SPDX-License-Identifier: MIT */
/*
 * remote_aio.c - chunk puts and fetches in flight (remote.h).
 *
 * Puts: each chunk of 64 KiB or more that may be there already is first
 * looked for (its size and its sums compared in the OSD, one round trip),
 * and written only when the pool lacks it; the write is sent as soon as
 * its look answers, so that @window requests stay in flight.  A smaller
 * chunk is written at once (an exclusive create that fails costs little).
 * Looks pay when they find: after LOOK_MISSES of them in a row found
 * nothing (new bytes, as in a first upload), chunks are written at once,
 * an exclusive create, until one is found there (EEXIST, its bytes
 * compared): then looking starts again.  What that costs at most is the
 * bytes of the writes in flight when the data turns to chunks the pool
 * has, one window.  librados writes a read's results into the put they
 * belong to, so a put never moves.
 *
 * Fetches: a chunk read ahead into a buffer of its own (one byte more than
 * its length asked for: an object longer than its name says reads longer),
 * checked against the reader's checksum when it is taken.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/csum.h"
#include "src/base/deadline.h"
#include "src/base/log.h"
#include "src/rados/remote.h"

#ifdef HAVE_RADOS
#include "src/rados/remote_int.h"

#define PUT_CHECK_MIN	(64u << 10)
#define LOOK_MISSES	8
#define WINDOW_MAX	64

struct put_item {
	char name[OBJFS_REMOTE_CHUNK_NAME];
	const void *buf;
	uint32_t len;
	unsigned shift;
	unsigned char *x;		/* shift byte and sums: the xattr */
	size_t xlen;
	int state;			/* below */
	int result;			/* 1 written, 0 there already, -errno */
	rados_completion_t c;
	rados_read_op_t rop;
	rados_write_op_t wop;
	uint64_t size;
	time_t mtime;
	int rv;
	char stamp[32];			/* a touching look's (remote_int.h) */
	unsigned tries;			/* writes again after the chunk went
					 * between a find and its use */
};

enum { P_CHECK = 1, P_WRITE, P_DONE };

struct rados_puts {
	struct objfs_remote_puts base;
	struct rados_remote *r;
	unsigned window;
	struct put_item *q[WINDOW_MAX];	/* in flight, oldest first */
	unsigned qh, qn;
	size_t n, cap;
	struct put_item **it;		/* each its own allocation */
	int err;			/* the first put that failed: no more
					 * are sent (a cluster that does not
					 * answer fails the batch within one
					 * timeout, not one per window) */
	unsigned misses;		/* looks in a row that found nothing */
	size_t looks, writes_at_once;	/* objfs_remote_puts_counts */
};

int
objfs_rados_puts_new(struct objfs_remote *base, unsigned window,
		struct objfs_remote_puts **out)
{
	struct rados_remote *r = (struct rados_remote *)base;
	struct rados_puts *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->r = r;
	p->window = window ? window : 16;
	if (p->window > WINDOW_MAX)
		p->window = WINDOW_MAX;
	p->base.ops = base->ops;
	*out = &p->base;
	return 0;
}

/* Item @x's operation answered: what it says (a look that finds nothing
 * leaves @x to be written). */
static void
put_finish(struct rados_puts *p, struct put_item *x)
{
	int rc;

	/* Past the call's deadline, cancelled: -ETIMEDOUT. */
	rc = objfs_rados_wait(p->r, x->c);
	rados_aio_release(x->c);
	x->c = NULL;
	if (x->state == P_CHECK) {
		if (x->rop)
			rados_release_read_op(x->rop);
		else	/* a touching look: no size, the sums say */
			rados_release_write_op(x->wop);
		if (!x->rop)
			x->size = x->len;
		x->rop = NULL;
		x->wop = NULL;
		x->state = P_DONE;
		if (rc == 0 && x->rv == 0 && x->size == x->len) {
			x->result = 0;		/* the same bytes are there */
			p->misses = 0;
		} else if (rc == -ENOENT) {
			x->state = P_WRITE;	/* to be written */
			p->misses++;
		} else if (rc == -ECANCELED || rc == -ENODATA ||
			   (rc == 0 && x->size != x->len)) {
			objfs_log(OBJFS_LOG_ERR, "remote: chunk %s in the pool "
				"does not hold the bytes its name says",
				x->name);
			x->result = -EIO;
		} else {
			x->result = rc < 0 ? rc : x->rv;
		}
		return;
	}
	rados_release_write_op(x->wop);
	x->wop = NULL;
	x->state = P_DONE;
	if (rc == 0) {
		x->result = 1;
		return;
	}
	if (rc != -EEXIST) {
		x->result = rc;
		return;
	}
	/* Made meanwhile, by another writer of the same bytes (or it holds
	 * others: the name is 128 bits of a hash and a length). */
	rc = objfs_rados_chunk_same(p->r, x->name, x->len, x->shift, x->x + 1);
	if (rc == 1 && p->r->touch) {
		rados_write_op_t op = rados_create_write_op();

		if (!op) {
			rc = -ENOMEM;
		} else {
			objfs_rados_touch_op(op, x->x, x->xlen, x->stamp);
			rc = objfs_rados_write(p->r, op, x->name, NULL);
			rados_release_write_op(op);
			rc = rc == 0 ? 1 : rc == -ECANCELED ? 0 : rc;
		}
	}
	if (rc == -ENOENT && x->tries++ < 3) {
		x->state = P_WRITE;	/* collected in between: again */
		return;
	}
	if (rc == 1) {
		x->result = 0;
		p->misses = 0;		/* the pool has these: look again */
	} else if (rc == 0) {
		objfs_log(OBJFS_LOG_ERR, "remote: chunk %s in the pool does not "
			"hold the bytes its name says", x->name);
		x->result = -EIO;
	} else {
		x->result = rc;
	}
}

/* Send @x's look or write (room in the window made by the caller). */
static int
put_issue(struct rados_puts *p, struct put_item *x, int state)
{
	int rc = objfs_rados_completion(p->r, &x->c);

	if (rc < 0)
		return rc;
	if (state == P_CHECK && p->r->touch) {
		/* Shared mode: a look that finds the chunk writes to it. */
		x->wop = rados_create_write_op();
		if (!x->wop) {
			rc = -ENOMEM;
			goto fail;
		}
		objfs_rados_touch_op(x->wop, x->x, x->xlen, x->stamp);
		x->rv = 0;
		rc = rados_aio_write_op_operate(x->wop, p->r->io, x->c,
				x->name, NULL, 0);
	} else if (state == P_CHECK) {
		x->rop = rados_create_read_op();
		if (!x->rop) {
			rc = -ENOMEM;
			goto fail;
		}
		rados_read_op_stat(x->rop, &x->size, &x->mtime, &x->rv);
		rados_read_op_cmpxattr(x->rop, SUMS_XATTR,
				LIBRADOS_CMPXATTR_OP_EQ, (const char *)x->x,
				x->xlen);
		rc = rados_aio_read_op_operate(x->rop, p->r->io, x->c, x->name,
				0);
	} else {
		x->wop = rados_create_write_op();
		if (!x->wop) {
			rc = -ENOMEM;
			goto fail;
		}
		rados_write_op_create(x->wop, LIBRADOS_CREATE_EXCLUSIVE, NULL);
		rados_write_op_write_full(x->wop, x->buf, x->len);
		rados_write_op_setxattr(x->wop, SUMS_XATTR, (const char *)x->x,
				x->xlen);
		rc = rados_aio_write_op_operate(x->wop, p->r->io, x->c,
				x->name, NULL, 0);
	}
	if (rc < 0)
		goto fail;
	x->state = state;
	p->q[(p->qh + p->qn++) % WINDOW_MAX] = x;
	return 0;
fail:
	if (x->rop)
		rados_release_read_op(x->rop);
	if (x->wop)
		rados_release_write_op(x->wop);
	x->rop = NULL;
	x->wop = NULL;
	rados_aio_release(x->c);
	x->c = NULL;
	return rc;
}

/* The oldest in flight answered; a look that found nothing becomes a
 * write at once. */
static void
put_one(struct rados_puts *p)
{
	struct put_item *x = p->q[p->qh];
	int rc;

	p->qh = (p->qh + 1) % WINDOW_MAX;
	p->qn--;
	put_finish(p, x);
	/* An answer: a system call whose chunks go on being written goes
	 * on (src/base/deadline.h). */
	if (x->result >= 0 || x->state == P_WRITE)
		objfs_deadline_progress();
	if (x->state == P_WRITE && p->err) {
		x->state = P_DONE;	/* not sent: the batch fails */
		x->result = p->err;
	} else if (x->state == P_WRITE &&
		   (rc = put_issue(p, x, P_WRITE)) < 0) {
		x->state = P_DONE;
		x->result = rc;
	}
	if (x->result < 0 && !p->err)
		p->err = x->result;
}

int
objfs_rados_puts_add(struct objfs_remote_puts *base, const char *name,
		const void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab, int look)
{
	struct rados_puts *p = (struct rados_puts *)base;
	struct put_item *x;
	int rc;

	if (p->err)
		return p->err;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		struct put_item **it = realloc(p->it, cap * sizeof(*it));

		if (!it)
			return -ENOMEM;
		p->it = it;
		p->cap = cap;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	snprintf(x->name, sizeof(x->name), "%s", name);
	x->buf = buf;
	x->len = len;
	x->shift = shift;
	x->xlen = 1 + 4 * (size_t)objfs_nsums(len, shift);
	x->x = malloc(x->xlen);
	if (!x->x) {
		free(x);
		return -ENOMEM;
	}
	x->x[0] = (unsigned char)shift;
	memcpy(x->x + 1, tab, x->xlen - 1);
	p->it[p->n++] = x;
	while (p->qn >= p->window)
		put_one(p);
	if (p->err) {
		x->state = P_DONE;
		x->result = p->err;
		return p->err;
	}
	look = look && len >= PUT_CHECK_MIN;
	if (look && p->misses >= LOOK_MISSES) {
		look = 0;
		p->writes_at_once++;
	}
	p->looks += look != 0;
	rc = put_issue(p, x, look ? P_CHECK : P_WRITE);
	if (rc < 0) {
		x->state = P_DONE;
		x->result = rc;
	}
	return 0;
}

int
objfs_rados_puts_wait(struct objfs_remote_puts *base)
{
	struct rados_puts *p = (struct rados_puts *)base;
	int rc = 0;

	while (p->qn)
		put_one(p);
	for (size_t k = 0; k < p->n; k++)
		if (p->it[k]->result < 0 && rc == 0)
			rc = p->it[k]->result;
	return rc;
}

int
objfs_rados_puts_result(const struct objfs_remote_puts *base, size_t k)
{
	const struct rados_puts *p = (const struct rados_puts *)base;

	return p->it[k]->result;
}

void
objfs_rados_puts_counts(const struct objfs_remote_puts *base, size_t *looks,
		size_t *at_once)
{
	const struct rados_puts *p = (const struct rados_puts *)base;

	*looks = p->looks;
	*at_once = p->writes_at_once;
}

void
objfs_rados_puts_free(struct objfs_remote_puts *base)
{
	struct rados_puts *p = (struct rados_puts *)base;

	if (!p)
		return;
	/* Nothing may be left in flight: librados would write into it. */
	while (p->qn) {
		struct put_item *x = p->q[p->qh];

		p->qh = (p->qh + 1) % WINDOW_MAX;
		p->qn--;
		put_finish(p, x);
	}
	for (size_t k = 0; k < p->n; k++) {
		free(p->it[k]->x);
		free(p->it[k]);
	}
	free(p->it);
	free(p);
}

/* ---- fetches ahead ---------------------------------------------------- */

struct rados_fetch {
	struct objfs_remote_fetch base;
	struct rados_remote *r;
	char name[OBJFS_REMOTE_CHUNK_NAME];
	rados_completion_t c;
	rados_read_op_t op;
	void *buf;
	uint32_t len;
	size_t got;
	int rv;
};

int
objfs_rados_fetch_start(struct objfs_remote *base, const char *name,
		uint32_t len, struct objfs_remote_fetch **out)
{
	struct rados_remote *r = (struct rados_remote *)base;
	struct rados_fetch *f = calloc(1, sizeof(*f));
	int rc;

	if (!f)
		return -ENOMEM;
	/* One byte more than the chunk: an object longer than its name
	 * says reads longer (no stat needed to tell). */
	f->buf = malloc((size_t)len + 1);
	f->op = rados_create_read_op();
	if (!f->buf || !f->op) {
		rc = -ENOMEM;
		goto fail;
	}
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->len = len;
	f->r = r;
	rc = objfs_rados_completion(r, &f->c);
	if (rc < 0)
		goto fail;
	rados_read_op_read(f->op, 0, (size_t)len + 1, f->buf, &f->got,
			&f->rv);
	rc = rados_aio_read_op_operate(f->op, r->io, f->c, name, 0);
	if (rc < 0) {
		rados_aio_release(f->c);
		goto fail;
	}
	f->base.ops = base->ops;
	*out = &f->base;
	return 0;
fail:
	if (f->op)
		rados_release_read_op(f->op);
	free(f->buf);
	free(f);
	return rc;
}

int
objfs_rados_fetch_done(const struct objfs_remote_fetch *base)
{
	const struct rados_fetch *f = (const struct rados_fetch *)base;

	return rados_aio_is_complete(f->c);
}

int
objfs_rados_fetch_take(struct objfs_remote_fetch *base, void *buf,
		unsigned shift, uint64_t csum)
{
	struct rados_fetch *f = (struct rados_fetch *)base;
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	int rc;

	rc = objfs_rados_wait(f->r, f->c);
	if (rc == 0)
		rc = f->rv < 0 ? f->rv : 0;
	if (rc < 0)
		return rc;
	if (f->got == f->len &&
	    objfs_chunk_csum(f->buf, f->len, shift, tab) == csum) {
		memcpy(buf, f->buf, f->len);
		return 0;
	}
	objfs_log(OBJFS_LOG_ERR, "remote: chunk %s: its bytes do not match "
		"their checksum, refusing to return them", f->name);
	return -EIO;
}

void
objfs_rados_fetch_free(struct objfs_remote_fetch *base)
{
	struct rados_fetch *f = (struct rados_fetch *)base;

	if (!f)
		return;
	(void)objfs_rados_wait(f->r, f->c);	/* cancelled past the deadline */
	rados_aio_release(f->c);
	rados_release_read_op(f->op);
	free(f->buf);
	free(f);
}

#endif	/* HAVE_RADOS */
