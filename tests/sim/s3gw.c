/* SPDX-License-Identifier: MIT */
/*
 * s3gw.c - the simulator's S3: a bucket in memory with AWS's semantics,
 * served over the pool's network and faults (pool.c, simpool_ext_call),
 * in place of the S3 client's engine.  src/s3/http.c's s3_engine_start,
 * s3_engine_stop, s3_submit, s3_wait and s3_do are wrapped at link time
 * (Makefile.am), so the real store.c, hold.c, aio.c and xml.c run
 * against it.  What AWS does, and so this bucket:
 *
 *	ETag		the MD5 of a single PUT's body, quoted: two writes of
 *			the same bytes have the same ETag
 *	If-None-Match: *	a PUT where the key exists: 412
 *	If-Match	a PUT whose ETag differs: 412; where there is no
 *			object: 404 (the quoted and the bare ETag both match)
 *	GET, HEAD	404 where none; a range from past the end: 416; a
 *			range: 206, else 200
 *	DELETE		204, there or not
 *	ListObjectsV2	keys by prefix, in binary order, pages of 100 with a
 *			continuation token (AWS pages by 1000: a smaller page
 *			is what any service may return)
 *	Date, Last-Modified	the service's clock, whole seconds (the
 *			pool's: the driver's clock jumps move it)
 *	503 SlowDown, and 409 for a conditional PUT (AWS's
 *			ConditionalRequestConflict)	the fault "busy":
 *			nothing applied
 * The engine here does what http.c's does with an answer: a 409 to a
 * conditional write, a 429, a 5xx, or no answer while time is left, is
 * sent again after a pause drawn up to 50 ms * 2^tries (at most 2 s)
 * while a try still has 100 ms before the deadline (the connection's
 * timeout from the first try, or what the call has left); each try may
 * take what is left of it.  Requests run on four threads of the node per
 * connection, in the order they come; a request's callback runs on the
 * thread that finished it, as on http.c's engine thread.
 *
 * Test builds only: no user can mount it.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_S3
#include "src/base/clock.h"
#include "src/base/deadline.h"
#include "src/base/sync.h"
#include "src/s3/s3_int.h"
#include "tests/sim/pool.h"
#include "tests/sim/sched.h"
#include "tests/sim/sim.h"

/* ---- MD5 (RFC 1321) --------------------------------------------------------- */

struct md5 {
	uint32_t h[4];
	uint64_t n;
	unsigned char buf[64];
};

static const uint32_t md5_k[64] = {
	0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf,
	0x4787c62a, 0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af,
	0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e,
	0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa,
	0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6,
	0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8,
	0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122,
	0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
	0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039,
	0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244, 0x432aff97,
	0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d,
	0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
	0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};
static const unsigned char md5_r[64] = {
	7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
	5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
	4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
	6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};

static void
md5_block(struct md5 *m, const unsigned char *p)
{
	uint32_t w[16], a = m->h[0], b = m->h[1], c = m->h[2], d = m->h[3];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
			(uint32_t)p[4 * i + 2] << 16 |
			(uint32_t)p[4 * i + 3] << 24;
	for (int i = 0; i < 64; i++) {
		uint32_t f, t;
		int g;

		if (i < 16) {
			f = (b & c) | (~b & d);
			g = i;
		} else if (i < 32) {
			f = (d & b) | (~d & c);
			g = (5 * i + 1) % 16;
		} else if (i < 48) {
			f = b ^ c ^ d;
			g = (3 * i + 5) % 16;
		} else {
			f = c ^ (b | ~d);
			g = (7 * i) % 16;
		}
		t = d;
		d = c;
		c = b;
		f += a + md5_k[i] + w[g];
		b += f << md5_r[i] | f >> (32 - md5_r[i]);
		a = t;
	}
	m->h[0] += a;
	m->h[1] += b;
	m->h[2] += c;
	m->h[3] += d;
}

static void
md5_add(struct md5 *m, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t have = (size_t)(m->n % 64);

	m->n += len;
	while (len) {
		size_t k = 64 - have < len ? 64 - have : len;

		memcpy(m->buf + have, p, k);
		have += k;
		p += k;
		len -= k;
		if (have == 64) {
			md5_block(m, m->buf);
			have = 0;
		}
	}
}

/* The quoted hex MD5 of @data, as S3's ETag of a single PUT. */
static void
md5_etag(const void *data, size_t len, char out[40])
{
	struct md5 m = { { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476 },
		0, { 0 } };
	unsigned char pad[72] = { 0x80 };
	uint64_t bits = m.n;
	size_t padlen;

	md5_add(&m, data, len);
	bits = m.n * 8;
	padlen = (m.n % 64 < 56 ? 56 : 120) - m.n % 64;
	for (int i = 0; i < 8; i++)
		pad[padlen + (size_t)i] = (unsigned char)(bits >> (8 * i));
	md5_add(&m, pad, padlen + 8);
	out[0] = '"';
	for (int i = 0; i < 16; i++)
		snprintf(out + 1 + 2 * i, 3, "%02x",
			(unsigned)(m.h[i / 4] >> (8 * (i % 4))) & 0xffu);
	out[33] = '"';
	out[34] = '\0';
}

/* ---- the bucket --------------------------------------------------------------- */

enum { GW_GET, GW_PUT, GW_HEAD, GW_DELETE, GW_LIST };

/* One try of a request, owned by the network until it is answered (or
 * by the pool, applied late). */
struct gw_try {
	int kind;
	char name[S3_NAME_MAX];
	char if_match[S3_ETAG_MAX];
	int has_match, if_none_match, ranged, busy;
	uint64_t lo, hi;
	unsigned char *body;
	size_t body_len;
	char meta[24];
	char prefix[S3_NAME_MAX], token[S3_NAME_MAX];
	/* the answer */
	long status;
	unsigned char *out;
	size_t outlen;
	uint64_t clen, total;
	int have_total;
	char etag[40], meta_got[24];
	time_t date, last_modified;
};

static void
gw_drop(void *arg)
{
	struct gw_try *g = arg;

	free(g->body);
	free(g->out);
	free(g);
}

static int
same_tag(const char *etag, const char *want)
{
	size_t n = strlen(want);

	if (strcmp(etag, want) == 0)
		return 1;
	/* Bare, as Ceph's gateway wants it: AWS takes either. */
	return n + 2 == strlen(etag) && strncmp(etag + 1, want, n) == 0;
}

struct list_page {
	const char *prefix, *after;
	char (*keys)[S3_NAME_MAX];
	uint64_t *sizes;
	size_t n, cap, more;
};

#define PAGE	100

static int
list_cb(void *arg, const char *name, const void *data, size_t len)
{
	struct list_page *l = arg;

	(void)data;
	/* A delimiter '/': keys below a deeper '/' are another listing's
	 * (none here: the simulator's namespace has no prefix). */
	if (strchr(name + strlen(l->prefix), '/'))
		return 0;
	if (l->after[0] && strcmp(name, l->after) <= 0)
		return 0;
	if (l->n == PAGE) {
		l->more = 1;
		return 0;
	}
	snprintf(l->keys[l->n], S3_NAME_MAX, "%s", name);
	l->sizes[l->n++] = len;
	return 0;
}

static void
xml_add(char **x, size_t *len, size_t *cap, const char *s, int esc)
{
	for (; *s; s++) {
		const char *e = NULL;
		char c[2] = { *s, 0 };

		if (esc && *s == '&')
			e = "&amp;";
		else if (esc && *s == '<')
			e = "&lt;";
		else if (esc && *s == '>')
			e = "&gt;";
		for (const char *t = e ? e : c; *t; t++) {
			if (*len + 2 > *cap) {
				*cap = *cap ? 2 * *cap : 4096;
				*x = realloc(*x, *cap);
				if (!*x)
					abort();
			}
			(*x)[(*len)++] = *t;
		}
	}
	(*x)[*len] = '\0';
}

static void
gw_list(struct sim_pool *p, struct gw_try *g)
{
	static char keys[PAGE][S3_NAME_MAX];
	static uint64_t sizes[PAGE];
	struct list_page l = { g->prefix, g->token, keys, sizes, 0, PAGE, 0 };
	char *x = NULL, num[32];
	size_t len = 0, cap = 0;

	(void)simpool_each(p, g->prefix, list_cb, &l);
	xml_add(&x, &len, &cap, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
		"<ListBucketResult><Name>sim</Name><Prefix>", 0);
	xml_add(&x, &len, &cap, g->prefix, 1);
	snprintf(num, sizeof(num), "%zu", l.n);
	xml_add(&x, &len, &cap, "</Prefix><KeyCount>", 0);
	xml_add(&x, &len, &cap, num, 0);
	xml_add(&x, &len, &cap, "</KeyCount><MaxKeys>100</MaxKeys>"
		"<IsTruncated>", 0);
	xml_add(&x, &len, &cap, l.more ? "true" : "false", 0);
	xml_add(&x, &len, &cap, "</IsTruncated>", 0);
	if (l.more) {
		xml_add(&x, &len, &cap, "<NextContinuationToken>", 0);
		xml_add(&x, &len, &cap, keys[l.n - 1], 1);
		xml_add(&x, &len, &cap, "</NextContinuationToken>", 0);
	}
	for (size_t i = 0; i < l.n; i++) {
		xml_add(&x, &len, &cap, "<Contents><Key>", 0);
		xml_add(&x, &len, &cap, keys[i], 1);
		snprintf(num, sizeof(num), "%" PRIu64, sizes[i]);
		xml_add(&x, &len, &cap, "</Key><Size>", 0);
		xml_add(&x, &len, &cap, num, 0);
		xml_add(&x, &len, &cap, "</Size></Contents>", 0);
	}
	xml_add(&x, &len, &cap, "</ListBucketResult>", 0);
	g->out = (unsigned char *)x;
	g->outlen = len;
	g->status = 200;
}

/* The service applies @arg (one instant, no switch): its status. */
static int
gw_apply(struct sim_pool *p, void *arg)
{
	struct gw_try *g = arg;
	const void *data;
	const char *etag, *meta;
	size_t len;
	uint64_t mtime;
	int have;

	g->date = (time_t)(simpool_clock(p) / SIM_NS);
	if (g->busy) {
		/* Too many requests, or a conditional write of this key
		 * under way: nothing done, sent again. */
		g->status = g->kind == GW_PUT && (g->has_match ||
			g->if_none_match) ? 409 : 503;
		return (int)g->status;
	}
	if (g->kind == GW_LIST) {
		gw_list(p, g);
		return (int)g->status;
	}
	have = simpool_s3_obj(p, g->name, &data, &len, &mtime, &etag,
			&meta) == 0;
	switch (g->kind) {
	case GW_PUT:
		if (g->if_none_match && have) {
			g->status = 412;
			break;
		}
		if (g->has_match && !have) {
			g->status = 404;
			break;
		}
		if (g->has_match && !same_tag(etag, g->if_match)) {
			g->status = 412;
			break;
		}
		md5_etag(g->body, g->body_len, g->etag);
		simpool_s3_put(p, g->name, g->body, g->body_len, g->etag,
			g->meta);
		g->last_modified = g->date;
		g->status = 200;
		break;
	case GW_DELETE:
		if (have)
			simpool_s3_del(p, g->name);
		g->status = 204;
		break;
	case GW_GET:
	case GW_HEAD:
		if (!have) {
			g->status = 404;
			break;
		}
		snprintf(g->etag, sizeof(g->etag), "%s", etag);
		snprintf(g->meta_got, sizeof(g->meta_got), "%s", meta);
		g->last_modified = (time_t)(mtime / SIM_NS);
		if (g->kind == GW_HEAD) {
			g->clen = len;
			g->status = 200;
			break;
		}
		if (g->ranged) {
			uint64_t hi = g->hi < len ? g->hi : len - 1;

			if (g->lo >= len) {
				g->status = 416;
				break;
			}
			g->outlen = (size_t)(hi - g->lo + 1);
			g->total = len;
			g->have_total = 1;
			g->status = 206;
		} else {
			g->outlen = len;
			g->status = 200;
		}
		g->out = malloc(g->outlen ? g->outlen : 1);
		if (!g->out)
			abort();
		memcpy(g->out, (const unsigned char *)data + (g->ranged ?
			g->lo : 0), g->outlen);
		g->clen = g->outlen;
		break;
	}
	return (int)g->status;
}

/* ---- the engine ------------------------------------------------------------- */

#define ENG_THREADS	4
#define TRY_MIN		(100ull * 1000000u)	/* http.c's TRY_MIN_MS */

struct eng {
	struct s3 *s;
	struct objfs_remote *conn;
	pthread_cond_t work;		/* under s->mu */
	pthread_t th[ENG_THREADS];
	int nth;
	uint64_t rng;
};

#define ENG(s)	((struct eng *)(void *)(s)->multi)

/* A query's parameter @key, %-decoded (the engine's own encoding). */
static void
query_param(const char *query, const char *key, char *out, size_t size)
{
	size_t k = strlen(key), n = 0;
	const char *p = query;

	out[0] = '\0';
	while (p && *p) {
		if (strncmp(p, key, k) == 0 && p[k] == '=') {
			for (p += k + 1; *p && *p != '&' && n + 1 < size; p++) {
				unsigned v;

				if (*p == '%' && sscanf(p + 1, "%2x", &v) == 1) {
					out[n++] = (char)v;
					p += 2;
				} else {
					out[n++] = *p;
				}
			}
			out[n] = '\0';
			return;
		}
		p = strchr(p, '&');
		p = p ? p + 1 : NULL;
	}
}

static struct gw_try *
try_of(struct s3_req *q)
{
	struct gw_try *g = calloc(1, sizeof(*g));

	if (!g)
		abort();
	if (strcmp(q->method, "PUT") == 0)
		g->kind = GW_PUT;
	else if (strcmp(q->method, "HEAD") == 0)
		g->kind = GW_HEAD;
	else if (strcmp(q->method, "DELETE") == 0)
		g->kind = GW_DELETE;
	else if (!q->name && q->query && strstr(q->query, "list-type=2"))
		g->kind = GW_LIST;
	else
		g->kind = GW_GET;
	snprintf(g->name, sizeof(g->name), "%s", q->name ? q->name : "");
	if (q->if_match) {
		g->has_match = 1;
		snprintf(g->if_match, sizeof(g->if_match), "%s", q->if_match);
	}
	g->if_none_match = q->if_none_match;
	g->ranged = q->ranged;
	g->lo = q->lo;
	g->hi = q->hi;
	if (g->kind == GW_PUT) {
		g->body = malloc(q->body_len ? q->body_len : 1);
		if (!g->body)
			abort();
		memcpy(g->body, q->body, q->body_len);
		g->body_len = q->body_len;
		snprintf(g->meta, sizeof(g->meta), "%s", q->meta ? q->meta :
			"");
	}
	if (g->kind == GW_LIST) {
		query_param(q->query, "prefix", g->prefix, sizeof(g->prefix));
		query_param(q->query, "continuation-token", g->token,
			sizeof(g->token));
	}
	return g;
}

/* @g's answer into @q, as http.c's callbacks fill it. */
static void
answer(struct s3_req *q, const struct gw_try *g)
{
	q->status = g->status;
	snprintf(q->etag, sizeof(q->etag), "%s", g->etag);
	snprintf(q->meta_got, sizeof(q->meta_got), "%s", g->meta_got);
	q->date = g->date;
	q->last_modified = g->last_modified;
	q->clen = g->clen;
	q->have_clen = 1;
	q->total = g->total;
	q->have_total = g->have_total;
	if (g->status >= 300) {
		snprintf(q->code, sizeof(q->code), "%s", g->status == 404 ?
			"NoSuchKey" : g->status == 412 ? "PreconditionFailed" :
			g->status == 409 ? "ConditionalRequestConflict" :
			g->status == 503 ? "SlowDown" : "InvalidRange");
		return;
	}
	if (!g->outlen)
		return;
	if (q->grow) {
		q->out = malloc(g->outlen + 1);
		if (!q->out)
			abort();
		memcpy(q->out, g->out, g->outlen);
		((char *)q->out)[g->outlen] = '\0';
		q->len = g->outlen;
		q->cap = g->outlen;
	} else {
		size_t k = g->outlen < q->cap ? g->outlen : q->cap;

		memcpy(q->out, g->out, k);
		q->len = k;
		q->over = g->outlen - k;
	}
}

static int
retryable(const struct s3_req *q)
{
	return q->status == 0 || q->status == 429 || q->status >= 500 ||
		(q->status == 409 && (q->if_none_match || q->if_match));
}

static uint64_t
eng_rand(struct eng *e)
{
	uint64_t z = (e->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Send @q until it is answered for good or its time is up. */
static void
run_req(struct eng *e, struct s3_req *q)
{
	struct s3 *s = e->s;
	uint64_t deadline = q->deadline;	/* set by the caller's submit */
	char what[S3_NAME_MAX + 16];

	snprintf(what, sizeof(what), "%s %s", q->method, q->name ? q->name :
		"(list)");
	for (;;) {
		struct gw_try *g = try_of(q);
		uint64_t left = deadline > sim_now() ? deadline - sim_now() : 0;
		int kept = 0, rc;

		g->busy = simpool_chance(W->pool, SIM_FAULT_BUSY);
		/* A try may take what is left of the timeout, at least
		 * 100 ms (CURLOPT_TIMEOUT_MS, http.c's TRY_MIN_MS). */
		rc = simpool_ext_call(e->conn, what, gw_apply, gw_drop, g,
			sim_now() + (left > TRY_MIN ? left : TRY_MIN), &kept);
		if (rc == 0)
			answer(q, g);
		if (!kept)
			gw_drop(g);
		atomic_fetch_add(&s->nreq[strcmp(q->method, "PUT") == 0 ?
			S3_PUT : strcmp(q->method, "HEAD") == 0 ? S3_HEAD :
			strcmp(q->method, "DELETE") == 0 ? S3_DELETE :
			q->name ? S3_GET : S3_LIST], 1);
		if (!retryable(q) || sim_now() + TRY_MIN > deadline)
			break;
		/* Full jitter, as http.c, no later than a try's least time
		 * before the deadline. */
		{
			uint64_t cap = 50ull << (q->tries < 6 ? q->tries : 6);
			uint64_t pause;

			if (cap > 2000)
				cap = 2000;
			pause = (eng_rand(e) % (cap + 1)) * 1000000ull;
			if (sim_now() + pause + TRY_MIN > deadline)
				pause = deadline - TRY_MIN - sim_now();
			q->tries++;
			atomic_fetch_add(&s->retries, 1);
			if (q->grow) {
				free(q->out);
				q->out = NULL;
				q->cap = 0;
			}
			s3_req_reset(q);
			sim_sleep(pause);
		}
	}
	if (retryable(q))
		atomic_fetch_add(&s->failures, 1);
}

static void *
eng_main(void *arg)
{
	struct eng *e = arg;
	struct s3 *s = e->s;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct s3_req *q, **pp;

		if (s->stop && !s->waiting)
			break;
		if (!s->waiting) {
			pthread_cond_wait(&e->work, &s->mu);
			continue;
		}
		/* The oldest first. */
		for (pp = &s->waiting; (*pp)->next; pp = &(*pp)->next)
			;
		q = *pp;
		*pp = NULL;
		s->active++;
		pthread_mutex_unlock(&s->mu);
		run_req(e, q);
		if (q->done)
			q->done(q, q->done_arg);
		pthread_mutex_lock(&s->mu);
		s->active--;
		q->finished = 1;
		pthread_cond_broadcast(&s->done_cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int __wrap_s3_engine_start(struct s3 *s, char *err, size_t errsize);
void __wrap_s3_engine_stop(struct s3 *s);
void __wrap_s3_submit(struct s3 *s, struct s3_req *q);
int __wrap_s3_wait(struct s3 *s, struct s3_req *q);
int __wrap_s3_do(struct s3 *s, struct s3_req *q);

int
__wrap_s3_engine_start(struct s3 *s, char *err, size_t errsize)
{
	struct eng *e = calloc(1, sizeof(*e));

	if (!e) {
		snprintf(err, errsize, "s3: out of memory");
		return -ENOMEM;
	}
	e->s = s;
	e->conn = simpool_connect(W->pool, sim_self_node(), s->timeout_s);
	e->rng = sim_sched_rand();
	pthread_mutex_init(&s->mu, NULL);
	(void)objfs_cond_init(&s->done_cv);	/* monotonic, as http.c's */
	pthread_cond_init(&e->work, NULL);
	s->multi = (CURLM *)(void *)e;
	for (; e->nth < ENG_THREADS; e->nth++)
		if (pthread_create(&e->th[e->nth], NULL, eng_main, e) != 0)
			break;
	s->started = 1;
	return 0;
}

void
__wrap_s3_engine_stop(struct s3 *s)
{
	struct eng *e = ENG(s);

	if (!e)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&e->work);
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < e->nth; i++)
		pthread_join(e->th[i], NULL);
	objfs_remote_close(e->conn);
	pthread_cond_destroy(&e->work);
	pthread_cond_destroy(&s->done_cv);
	pthread_mutex_destroy(&s->mu);
	free(e);
	s->multi = NULL;
	s->started = 0;
}

void
__wrap_s3_submit(struct s3 *s, struct s3_req *q)
{
	s3_req_reset(q);
	q->tries = 0;
	/* As http.c: the timeout, or what the caller's system call has
	 * left of it (on the caller's thread), at least a second. */
	q->deadline = sim_now() + objfs_deadline_cap_ns((uint64_t)s->timeout_s *
		SIM_NS, SIM_NS);
	if (q->not_after) {
		/* On the engine's clock (the node's monotonic one). */
		uint64_t mono = objfs_mono_ns();
		uint64_t left = q->not_after > mono ? q->not_after - mono : 0;

		if (sim_now() + left < q->deadline)
			q->deadline = sim_now() + left;
	}
	if (q->grow) {
		q->out = NULL;
		q->cap = 0;
	}
	pthread_mutex_lock(&s->mu);
	q->finished = 0;
	q->next = s->waiting;
	s->waiting = q;
	pthread_cond_signal(&ENG(s)->work);
	pthread_mutex_unlock(&s->mu);
}

int
__wrap_s3_wait(struct s3 *s, struct s3_req *q)
{
	pthread_mutex_lock(&s->mu);
	while (!q->finished)
		pthread_cond_wait(&s->done_cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	return s3_errno(q);
}

int
__wrap_s3_do(struct s3 *s, struct s3_req *q)
{
	__wrap_s3_submit(s, q);
	return __wrap_s3_wait(s, q);
}

#endif	/* HAVE_S3 */
