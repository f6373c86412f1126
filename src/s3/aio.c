/* SPDX-License-Identifier: MIT */
/*
 * aio.c - an S3 bucket's chunk puts and fetches in flight (src/remote.h).
 *
 * Puts: at most @window chunks at once, each a chain of requests that the
 * engine's thread moves on as they answer.  A chunk of 64 KiB or more
 * that may be there already is looked for first (HEAD: its size and its
 * sums' hash, store.c), and sent only when the bucket lacks it, so that
 * bytes the bucket has are not uploaded again; after LOOK_MISSES looks in
 * a row found nothing (a first upload), chunks are sent at once until one
 * is found there.  Every put is made only if absent (If-None-Match: *);
 * one that finds the name taken compares what is there (HEAD).
 *
 * Fetches: a chunk read ahead into a buffer of its own, one byte more
 * than its length asked for (a longer object reads longer), checked
 * against the reader's checksum when it is taken.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/clock.h"
#include "src/base/csum.h"
#include "src/base/deadline.h"
#include "src/base/log.h"
#include "src/base/sync.h"
#include "src/s3/s3.h"

#ifdef HAVE_S3
#include "src/s3/s3_int.h"

#define LOOK_MIN	(64u << 10)
#define LOOK_MISSES	8
#define WINDOW_MAX	64

enum { P_LOOK = 1, P_WRITE, P_VERIFY };

struct put_item {
	struct s3_puts *p;
	char name[OBJFS_REMOTE_CHUNK_NAME];
	char tag[20];			/* its sums' hash (store.c) */
	uint32_t len;
	int result;			/* 1 written, 0 there already, -errno */
	/* One request a step: the engine still reads a request's fields
	 * after its callback returned. */
	struct s3_req look, write, verify;
	int nsent;			/* requests submitted, under s->mu */
};

struct s3_puts {
	struct objfs_remote_puts base;
	struct s3 *s;
	unsigned window;
	/* Under s->mu: the chunks not yet answered, the first error (no
	 * more are sent after it), the looks in a row that found nothing. */
	unsigned inflight;
	int err;
	unsigned misses;
	size_t looks, at_once;
	struct put_item **it;
	size_t n, cap;
};

/* A chunk's answer is in (s->mu not held). */
static void
item_end(struct put_item *x, int result)
{
	struct s3_puts *p = x->p;

	pthread_mutex_lock(&p->s->mu);
	x->result = result;
	if (result < 0 && !p->err)
		p->err = result;
	p->inflight--;
	pthread_mutex_unlock(&p->s->mu);
}

static void on_step(struct s3_req *q, void *arg);

static void
send_step(struct put_item *x, struct s3_req *q)
{
	q->done = on_step;
	q->done_arg = x;
	pthread_mutex_lock(&x->p->s->mu);
	x->nsent++;
	pthread_mutex_unlock(&x->p->s->mu);
	s3_submit(x->p->s, q);
}

/* What a HEAD of @x's name found: 0 the same chunk, -EIO another. */
static int
same(const struct put_item *x, const struct s3_req *h)
{
	if (h->clen == x->len && strcmp(h->meta_got, x->tag) == 0)
		return 0;
	objfs_log(OBJFS_LOG_ERR, "s3: chunk %s: an object of that name holds "
		"other bytes (%" PRIu64 " bytes, sums %s); refusing to use it",
		x->name, h->clen, h->meta_got[0] ? h->meta_got : "none");
	return -EIO;
}

/* The engine's thread: a step of @arg's chain answered. */
static void
on_step(struct s3_req *q, void *arg)
{
	struct put_item *x = arg;
	struct s3_puts *p = x->p;
	int rc = s3_errno(q);

	if (q == &x->look) {
		pthread_mutex_lock(&p->s->mu);
		p->misses = rc == -ENOENT ? p->misses + 1 : 0;
		pthread_mutex_unlock(&p->s->mu);
		if (rc == -ENOENT)
			send_step(x, &x->write);
		else
			item_end(x, rc < 0 ? rc : same(x, q));
	} else if (q == &x->write) {
		if (rc == -EEXIST)
			send_step(x, &x->verify);
		else
			item_end(x, rc < 0 ? rc : 1);
	} else {
		item_end(x, rc < 0 ? rc : same(x, q));
	}
}

int
objfs_s3_puts_new(struct objfs_remote *base, unsigned window,
		struct objfs_remote_puts **out)
{
	struct s3_puts *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->base.ops = base->ops;
	p->s = (struct s3 *)base;
	p->window = window ? window : 16;
	if (p->window > WINDOW_MAX)
		p->window = WINDOW_MAX;
	*out = &p->base;
	return 0;
}

int
objfs_s3_puts_add(struct objfs_remote_puts *base, const char *name,
		const void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab, int look)
{
	struct s3_puts *p = (struct s3_puts *)base;
	struct s3 *s = p->s;
	struct put_item *x;
	unsigned n = (unsigned)(((uint64_t)len + (1u << shift) - 1) >> shift);
	int rc;

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
	x->p = p;
	x->len = len;
	snprintf(x->name, sizeof(x->name), "%s", name);
	snprintf(x->tag, sizeof(x->tag), "%016" PRIx64,
		objfs_csum64_seed(tab, (size_t)n * 4, shift));
	x->look = (struct s3_req){ .method = "HEAD", .name = x->name };
	x->write = (struct s3_req){ .method = "PUT", .name = x->name,
		.body = buf, .body_len = len, .if_none_match = 1,
		.meta = x->tag, .chunk = 1 };
	x->verify = x->look;
	/* The steps after the first are sent from the engine's thread:
	 * they keep the deadline of the call that added the chunk. */
	x->look.not_after = x->write.not_after = x->verify.not_after =
		objfs_deadline() ? objfs_mono_ns() + objfs_deadline_cap_ns(
			(uint64_t)s->timeout_s * 1000000000u, 1000000000u) : 0;

	pthread_mutex_lock(&s->mu);
	rc = 0;
	while (p->inflight >= p->window && !p->err) {
		/* Until a chunk in flight is answered (and the system call
		 * goes on), or the call's deadline. */
		if (objfs_cond_wait_until(&s->done_cv, &s->mu) == ETIMEDOUT) {
			rc = -ETIMEDOUT;
			break;
		}
		if (p->inflight < p->window && !p->err)
			objfs_deadline_progress();
	}
	if (rc == 0)
		rc = p->err;
	if (rc == 0) {
		p->inflight++;
		look = look && len >= LOOK_MIN && p->misses < LOOK_MISSES;
		if (look)
			p->looks++;
		else
			p->at_once++;
	}
	pthread_mutex_unlock(&s->mu);
	if (rc < 0) {
		free(x);
		return rc;
	}
	p->it[p->n++] = x;
	send_step(x, look ? &x->look : &x->write);
	return 0;
}

/* Every request of every chunk finished: the engine is done with them
 * (a chain's next request is counted before its last one finishes). */
static void
puts_drain(struct s3_puts *p)
{
	struct s3 *s = p->s;

	pthread_mutex_lock(&s->mu);
	for (size_t k = 0; k < p->n; k++) {
		struct put_item *x = p->it[k];

		while (x->look.finished + x->write.finished +
		       x->verify.finished < x->nsent)
			pthread_cond_wait(&s->done_cv, &s->mu);
	}
	pthread_mutex_unlock(&s->mu);
}

int
objfs_s3_puts_wait(struct objfs_remote_puts *base)
{
	struct s3_puts *p = (struct s3_puts *)base;

	puts_drain(p);
	return p->err;
}

int
objfs_s3_puts_result(const struct objfs_remote_puts *base, size_t k)
{
	const struct s3_puts *p = (const struct s3_puts *)base;

	return k < p->n ? p->it[k]->result : -EINVAL;
}

void
objfs_s3_puts_counts(const struct objfs_remote_puts *base, size_t *looks,
		size_t *at_once)
{
	const struct s3_puts *p = (const struct s3_puts *)base;

	*looks = p->looks;
	*at_once = p->at_once;
}

void
objfs_s3_puts_free(struct objfs_remote_puts *base)
{
	struct s3_puts *p = (struct s3_puts *)base;

	if (!p)
		return;
	puts_drain(p);
	for (size_t k = 0; k < p->n; k++)
		free(p->it[k]);
	free(p->it);
	free(p);
}

/* ---- fetches ahead ------------------------------------------------------ */

struct s3_fetch {
	struct objfs_remote_fetch base;
	struct s3 *s;
	struct s3_req q;
	char name[OBJFS_REMOTE_CHUNK_NAME];
	void *buf;
	uint32_t len;
};

int
objfs_s3_fetch_start(struct objfs_remote *base, const char *name,
		uint32_t len, struct objfs_remote_fetch **out)
{
	struct s3_fetch *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->buf = malloc((size_t)len + 1);
	if (!f->buf) {
		free(f);
		return -ENOMEM;
	}
	f->base.ops = base->ops;
	f->s = (struct s3 *)base;
	f->len = len;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->q = (struct s3_req){ .method = "GET", .name = f->name,
		.ranged = 1, .lo = 0, .hi = len, .out = f->buf,
		.cap = (size_t)len + 1 };
	s3_submit(f->s, &f->q);
	*out = &f->base;
	return 0;
}

int
objfs_s3_fetch_done(const struct objfs_remote_fetch *base)
{
	const struct s3_fetch *f = (const struct s3_fetch *)base;
	int done;

	pthread_mutex_lock(&f->s->mu);
	done = f->q.finished;
	pthread_mutex_unlock(&f->s->mu);
	return done;
}

int
objfs_s3_fetch_take(struct objfs_remote_fetch *base, void *buf,
		unsigned shift, uint64_t csum)
{
	struct s3_fetch *f = (struct s3_fetch *)base;
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	int rc = s3_wait(f->s, &f->q);

	if (rc < 0)
		return rc;
	if (f->q.len == f->len && f->q.over == 0 &&
	    objfs_chunk_csum(f->buf, f->len, shift, tab) == csum) {
		memcpy(buf, f->buf, f->len);
		return 0;
	}
	objfs_log(OBJFS_LOG_ERR, "s3: chunk %s: its bytes do not match their "
		"checksum, refusing to return them", f->name);
	return -EIO;
}

void
objfs_s3_fetch_free(struct objfs_remote_fetch *base)
{
	struct s3_fetch *f = (struct s3_fetch *)base;

	if (!f)
		return;
	(void)s3_wait(f->s, &f->q);
	free(f->buf);
	free(f);
}

#endif	/* HAVE_S3 */
