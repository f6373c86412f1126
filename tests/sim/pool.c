/* SPDX-License-Identifier: MIT */
/*
 * pool.c - the simulator's pool: src/remote.h's table over objects held
 * in memory, with the semantics of the RADOS calls src/rados/ makes
 * (exclusive creates, versions and assert_version, cls_lock's exclusive
 * and shared locks with their expiry on the OSD's clock and MUST_RENEW,
 * omap, watch and notify with answers), and the faults a network and an
 * OSD can show, each drawn from the pool's own seeded generator:
 *
 *	land_timeout	applied, answer lost: the caller gets ETIMEDOUT
 *	lost		never applied: ETIMEDOUT
 *	late		applied after the caller gave up (a request that
 *			sat on the wire, or in a stopped OSD's socket)
 *	slow		answered, late within the timeout
 *	partition	a node's requests dropped (applied after it heals
 *			if that is within their timeout), its watches lapse
 *	OSD paused	requests held and applied when it resumes, answered
 *			if that is within their timeout
 *	notifies	lost, delivered twice, or late
 *	clock		the OSD's clock jumps (locks expire by it)
 *
 * A request is applied whole at one virtual instant (the OSD applies an
 * operation atomically), inside an atomic section: no thread switch.
 * The caller sleeps in virtual time until its answer, or its timeout.
 * No pthread mutex guards the pool: one thread at a time runs (sched.c),
 * and pool code switches only at its sim_sleep/sim_wait calls, between
 * which no pointer into the pool is kept.
 *
 * Every call of a connection is bounded by its timeout, as librados's
 * rados_osd_op_timeout bounds it; a notify with answers by its own.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/csum.h"
#include "src/base/deadline.h"
#include <execinfo.h>
#include "tests/sim/pool.h"
#include "tests/sim/sched.h"

#define OHASH		8192
#define NAME_MAX_SIM	128
#define WATCHERS_MAX	64

struct kv {
	char *k;
	unsigned char *v;
	size_t vlen;
};

struct locker {
	char client[40];
	char cookie[256];
	uint64_t expires;		/* the OSD's clock; 0: never */
};

struct sobj {
	char name[NAME_MAX_SIM];
	unsigned char *data;
	size_t len;
	uint64_t ver;
	uint64_t mtime;			/* the OSD's clock */
	unsigned char *sums;		/* xattr objfs.sums */
	size_t sumslen;
	char etag[40];			/* S3 (s3gw.c): its ETag, and its */
	char meta[24];			/* x-amz-meta-objfs-sums */
	struct kv *omap;
	size_t nomap, capomap;
	struct locker *lk;
	size_t nlk, caplk;
	int lk_excl;
	char lk_tag[32];
	struct sobj *next;
};

/* A notify on its way to one watcher. */
struct note {
	uint64_t at, id;
	unsigned char *data;		/* NULL: no payload */
	size_t len;
	struct note *next;
};

struct sconn {
	struct objfs_remote base;
	struct sim_pool *p;
	int node;
	char client[40];
	unsigned timeout_s;
	int touch;
	int closed;
	/* The watch (one per connection, as src/rados/ keeps). */
	int watching;
	uint64_t cookie;
	char watch_name[NAME_MAX_SIM];
	void (*cb)(void *arg, uint64_t notify_id, uint64_t cookie,
			const void *data, size_t len);
	void *cb_arg;
	uint64_t watch_made;
	unsigned watch_to;
	int watch_lost;
	struct note *q;
	pthread_t cb_th;
	int cb_started, cb_stop;
	struct sconn *next;
};

/* A notify that waits for answers. */
struct ask {
	uint64_t id;
	unsigned n, acked;
	struct {
		uint64_t cookie;
		int done;
		unsigned char *data;
		size_t len;
	} w[WATCHERS_MAX];
	struct ask *next;
};

enum {
	R_PUT = 1, R_CREATE, R_GET, R_STAT, R_REMOVE, R_LOCK, R_UNLOCK,
	R_LOCKERS, R_BREAK, R_LIST, R_AGEVER, R_REMOVE_AT, R_OMAP_SET,
	R_OMAP_DEL_IF, R_OMAP_LIST, R_CHUNK_CREATE, R_CHUNK_SAME,
	R_CHUNK_TOUCH, R_CHUNK_GET, R_HEAD_PUT, R_HEAD_GET, R_NOTIFY,
	R_ACK, R_DF, R_WATCH, R_EXT,
};

#define LOCK_RENEW	1
#define LOCK_MUST_RENEW	2

struct req {
	int op;
	int node;
	char client[40];
	char name[NAME_MAX_SIM];
	unsigned char *in, *in2;
	size_t inlen, in2len;
	char key[256];
	char cookie[256];
	uint64_t off, len, ver, id;
	unsigned secs;
	int shared, flags, has_val;
	/* what it answers */
	int rc;
	unsigned char *out;
	size_t outlen;
	uint64_t out_ver, out_size, out_mtime;
	char who[256], out_client[40];
	struct kv *kvs;
	size_t nkv;
	char **names;
	size_t nnames;
	/* R_EXT: another protocol's request (simpool_ext_call) */
	int (*ext_apply)(struct sim_pool *p, void *arg);
	void (*ext_drop)(void *arg);
	void *ext_arg;
	/* the OSD's queue of late requests */
	uint64_t at;
	struct req *next;
};

struct sim_pool {
	uint64_t rng;
	struct sobj *obj[OHASH];
	uint64_t ver;
	int64_t clock_off;
	struct sim_faults f;
	uint64_t part_until[SIM_NODES + 1];
	struct {
		uint64_t from, until;
	} down[SIM_NODES + 1];
	uint64_t osd_until;
	struct req *late;
	struct sconn *conns;
	struct ask *asks;
	uint64_t next_client, next_id, next_cookie;
	struct sim_pool_counts n;
	void (*on_change)(void *arg, const char *name, int removed);
	void *change_arg;
	pthread_t osd_th;
	int osd_started;
};

static const struct objfs_remote_ops sim_ops;
FILE *simpool_trace;
static const char *const opnames[] = { "?", "put", "create", "get", "stat",
	"remove", "lock", "unlock", "lockers", "break", "list", "agever",
	"remove_at", "omap_set", "omap_del_if", "omap_list", "chunk_create",
	"chunk_same", "chunk_touch", "chunk_get", "head_put", "head_get",
	"notify", "ack", "df", "watch", "s3" };

static uint64_t
prand(struct sim_pool *p)
{
	uint64_t z = (p->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int
chance(struct sim_pool *p, unsigned pm)
{
	return pm && prand(p) % 1000000u < pm;
}

/* A delay in [lo, hi) nanoseconds. */
static uint64_t
delay(struct sim_pool *p, uint64_t lo, uint64_t hi)
{
	return lo + (hi > lo ? prand(p) % (hi - lo) : 0);
}

uint64_t
simpool_clock(struct sim_pool *p)
{
	return (uint64_t)((int64_t)(SIM_REAL_BASE + sim_now()) + p->clock_off);
}

/* ---- objects ------------------------------------------------------------ */

static unsigned
nhash(const char *s)
{
	return (unsigned)(objfs_csum64(s, strlen(s)) & (OHASH - 1));
}

static struct sobj *
find(struct sim_pool *p, const char *name)
{
	for (struct sobj *o = p->obj[nhash(name)]; o; o = o->next)
		if (strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

uint64_t
simpool_log_end(struct sim_pool *p)
{
	uint64_t end = 0, epoch = 0;

	/* The head's epoch's: the records of a dead epoch are not read. */
	{
		struct sobj *h = find(p, "objfs.head");
		const char *e = h ? strstr((const char *)h->data, "\nepoch ") :
			NULL;

		if (e && h->len < 512)
			epoch = strtoull(e + 7, NULL, 10);
	}
	for (unsigned k = 0; k < OHASH; k++) {
		for (struct sobj *o = p->obj[k]; o; o = o->next) {
			uint64_t e, s;

			if (sscanf(o->name, "objfs.log.%" SCNx64 ".%" SCNx64, &e,
					&s) == 2 && e == epoch && s > end)
				end = s;
		}
	}
	return end;
}

static struct sobj *
make(struct sim_pool *p, const char *name)
{
	struct sobj *o = find(p, name);
	unsigned h;

	if (o)
		return o;
	o = calloc(1, sizeof(*o));
	if (!o)
		abort();
	snprintf(o->name, sizeof(o->name), "%s", name);
	o->ver = ++p->ver;
	o->mtime = simpool_clock(p);
	h = nhash(name);
	o->next = p->obj[h];
	p->obj[h] = o;
	return o;
}

static void
touched(struct sim_pool *p, struct sobj *o)
{
	o->ver = ++p->ver;
	o->mtime = simpool_clock(p);
	if (p->on_change)
		p->on_change(p->change_arg, o->name, 0);
}

static void
drop(struct sim_pool *p, const char *name)
{
	unsigned h = nhash(name);

	for (struct sobj **pp = &p->obj[h]; *pp; pp = &(*pp)->next) {
		struct sobj *o = *pp;

		if (strcmp(o->name, name))
			continue;
		*pp = o->next;
		free(o->data);
		free(o->sums);
		for (size_t i = 0; i < o->nomap; i++) {
			free(o->omap[i].k);
			free(o->omap[i].v);
		}
		free(o->omap);
		free(o->lk);
		free(o);
		p->ver++;
		if (p->on_change)
			p->on_change(p->change_arg, name, 1);
		return;
	}
}

static void
set_data(struct sobj *o, const void *buf, size_t len)
{
	unsigned char *d = malloc(len ? len : 1);

	if (!d)
		abort();
	memcpy(d, buf, len);
	free(o->data);
	o->data = d;
	o->len = len;
}

static unsigned char *
dup_bytes(const void *p, size_t n)
{
	unsigned char *d = malloc(n ? n : 1);

	if (!d)
		abort();
	if (n)
		memcpy(d, p, n);
	return d;
}

/* cls_lock: lockers whose time ran out are gone before anything else. */
static void
lk_expire(struct sim_pool *p, struct sobj *o)
{
	uint64_t now = simpool_clock(p);

	for (size_t i = 0; i < o->nlk; i++) {
		if (o->lk[i].expires && o->lk[i].expires < now) {
			o->lk[i] = o->lk[--o->nlk];
			i--;
		}
	}
}

static struct locker *
lk_find(struct sobj *o, const char *client, const char *cookie)
{
	for (size_t i = 0; i < o->nlk; i++)
		if (!strcmp(o->lk[i].client, client) &&
		    !strcmp(o->lk[i].cookie, cookie))
			return &o->lk[i];
	return NULL;
}

static struct kv *
omap_find(struct sobj *o, const char *k)
{
	for (size_t i = 0; i < o->nomap; i++)
		if (!strcmp(o->omap[i].k, k))
			return &o->omap[i];
	return NULL;
}

static int
kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct kv *)a)->k, ((const struct kv *)b)->k);
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static struct sconn *
watchers(struct sim_pool *p, const char *name, struct sconn **out, size_t max,
		size_t *n);
static void deliver(struct sim_pool *p, struct sconn *c, uint64_t id,
		const void *data, size_t len, int faults);

/* Apply @r now, at the OSD, whole. */
static void
exec(struct sim_pool *p, struct req *r)
{
	struct sobj *o = r->name[0] ? find(p, r->name) : NULL;
	struct locker *l;

	r->rc = 0;
	switch (r->op) {
	case R_PUT:
		o = make(p, r->name);
		set_data(o, r->in, r->inlen);
		touched(p, o);
		break;
	case R_CREATE:
	case R_CHUNK_CREATE:
		if (o) {
			r->rc = -EEXIST;
			break;
		}
		o = make(p, r->name);
		set_data(o, r->in, r->inlen);
		if (r->op == R_CHUNK_CREATE)
			o->sums = dup_bytes(r->in2, o->sumslen = r->in2len);
		touched(p, o);
		break;
	case R_GET:
		if (!o) {
			r->rc = -ENOENT;
			break;
		}
		r->outlen = r->off >= o->len ? 0 :
			(o->len - r->off < r->len ? o->len - r->off : r->len);
		r->out = dup_bytes(o->data + (r->outlen ? r->off : 0),
				r->outlen);
		r->out_size = o->len;
		r->out_ver = o->ver;
		break;
	case R_STAT:
	case R_AGEVER:
		if (!o) {
			r->rc = -ENOENT;
			break;
		}
		r->out_size = o->len;
		r->out_mtime = o->mtime;
		r->out_ver = o->ver;
		break;
	case R_REMOVE:
		if (!o)
			r->rc = -ENOENT;
		else
			drop(p, r->name);
		break;
	case R_REMOVE_AT:
		if (!o)
			r->rc = -ENOENT;
		else if (o->ver != r->ver)
			r->rc = -ECANCELED;
		else
			drop(p, r->name);
		break;
	case R_LOCK:
		o = make(p, r->name);
		lk_expire(p, o);
		l = lk_find(o, r->client, r->cookie);
		if (l) {
			if (!(r->flags & (LOCK_RENEW | LOCK_MUST_RENEW))) {
				r->rc = -EEXIST;
				break;
			}
			*l = o->lk[--o->nlk];
		} else if (r->flags & LOCK_MUST_RENEW) {
			r->rc = -ENOENT;
			break;
		}
		if (o->nlk && (!r->shared || o->lk_excl ||
		    strcmp(o->lk_tag, "objfs-shared"))) {
			r->rc = -EBUSY;
			if (o->nlk)
				snprintf(r->who, sizeof(r->who), "%s",
					o->lk[0].cookie);
			break;
		}
		if (o->nlk == o->caplk) {
			o->caplk = o->caplk ? 2 * o->caplk : 4;
			o->lk = realloc(o->lk, o->caplk * sizeof(*o->lk));
			if (!o->lk)
				abort();
		}
		l = &o->lk[o->nlk++];
		snprintf(l->client, sizeof(l->client), "%s", r->client);
		snprintf(l->cookie, sizeof(l->cookie), "%s", r->cookie);
		l->expires = r->secs ? simpool_clock(p) +
			(uint64_t)r->secs * SIM_NS : 0;
		o->lk_excl = !r->shared;
		snprintf(o->lk_tag, sizeof(o->lk_tag), "%s", r->shared ?
			"objfs-shared" : "");
		touched(p, o);
		break;
	case R_UNLOCK:
	case R_BREAK:
		if (!o) {
			r->rc = -ENOENT;
			break;
		}
		lk_expire(p, o);
		l = lk_find(o, r->op == R_UNLOCK ? r->client : r->key,
				r->cookie);
		if (!l) {
			r->rc = -ENOENT;
			break;
		}
		*l = o->lk[--o->nlk];
		touched(p, o);
		break;
	case R_LOCKERS:
		if (!o) {
			r->rc = -ENOENT;
			break;
		}
		lk_expire(p, o);
		if (!o->nlk) {
			r->rc = -ENOENT;
			break;
		}
		snprintf(r->out_client, sizeof(r->out_client), "%s",
			o->lk[0].client);
		snprintf(r->who, sizeof(r->who), "%s", o->lk[0].cookie);
		break;
	case R_LIST: {
		size_t n = 0, cap = 64;

		r->names = malloc(cap * sizeof(char *));
		for (unsigned h = 0; r->names && h < OHASH; h++) {
			for (o = p->obj[h]; o; o = o->next) {
				if (n == cap) {
					cap *= 2;
					r->names = realloc(r->names,
						cap * sizeof(char *));
					if (!r->names)
						abort();
				}
				r->names[n++] = strdup(o->name);
			}
		}
		if (!r->names)
			abort();
		qsort(r->names, n, sizeof(char *), name_cmp);
		r->nnames = n;
		break;
	}
	case R_OMAP_SET:
		if (!r->has_val) {
			struct kv *e;

			if (!o) {
				r->rc = 0;
				break;
			}
			e = omap_find(o, r->key);
			if (e) {
				free(e->k);
				free(e->v);
				*e = o->omap[--o->nomap];
				touched(p, o);
			}
			break;
		}
		o = make(p, r->name);
		{
			struct kv *e = omap_find(o, r->key);

			if (!e) {
				if (o->nomap == o->capomap) {
					o->capomap = o->capomap ?
						2 * o->capomap : 8;
					o->omap = realloc(o->omap, o->capomap *
						sizeof(*o->omap));
					if (!o->omap)
						abort();
				}
				e = &o->omap[o->nomap++];
				e->k = strdup(r->key);
				e->v = NULL;
			}
			free(e->v);
			e->v = dup_bytes(r->in, e->vlen = r->inlen);
		}
		touched(p, o);
		break;
	case R_OMAP_DEL_IF: {
		struct kv *e;

		if (!o) {
			r->rc = 0;
			break;
		}
		e = omap_find(o, r->key);
		if (!e || e->vlen != r->inlen ||
		    memcmp(e->v, r->in, r->inlen)) {
			r->rc = 1;
			break;
		}
		free(e->k);
		free(e->v);
		*e = o->omap[--o->nomap];
		touched(p, o);
		break;
	}
	case R_OMAP_LIST:
		if (!o) {
			r->rc = -ENOENT;
			break;
		}
		r->kvs = calloc(o->nomap ? o->nomap : 1, sizeof(*r->kvs));
		if (!r->kvs)
			abort();
		for (size_t i = 0; i < o->nomap; i++) {
			r->kvs[i].k = strdup(o->omap[i].k);
			r->kvs[i].v = dup_bytes(o->omap[i].v, o->omap[i].vlen);
			r->kvs[i].vlen = o->omap[i].vlen;
		}
		r->nkv = o->nomap;
		qsort(r->kvs, r->nkv, sizeof(*r->kvs), kv_cmp);
		break;
	case R_CHUNK_SAME:
		/* Its size and sums (stat and getxattr). */
		if (!o) {
			r->rc = -ENOENT;
			break;
		}
		r->rc = o->len == r->len && o->sums && o->sumslen == r->in2len &&
			memcmp(o->sums, r->in2, r->in2len) == 0;
		break;
	case R_CHUNK_TOUCH:
		if (!o) {
			r->rc = -ENOENT;
			break;
		}
		if (!o->sums || o->sumslen != r->in2len ||
		    memcmp(o->sums, r->in2, r->in2len)) {
			r->rc = -ECANCELED;
			break;
		}
		touched(p, o);
		break;
	case R_CHUNK_GET:
		if (!o) {
			r->rc = -ENOENT;
			break;
		}
		r->out_size = o->len;
		r->outlen = o->len < r->len ? o->len : r->len;
		r->out = dup_bytes(o->data, r->outlen);
		break;
	case R_HEAD_PUT:
		if (r->ver == 0 ? o != NULL : (!o || o->ver != r->ver)) {
			r->rc = -ECANCELED;
			break;
		}
		o = make(p, r->name);
		set_data(o, r->in, r->inlen);
		touched(p, o);
		r->out_ver = o->ver;
		break;
	case R_HEAD_GET:
		if (!o) {
			r->rc = -ENOENT;
			break;
		}
		r->outlen = o->len < r->len ? o->len : r->len;
		r->out = dup_bytes(o->data, r->outlen);
		r->out_ver = o->ver;
		break;
	case R_NOTIFY: {
		struct sconn *w[WATCHERS_MAX];
		size_t n = 0;

		(void)watchers(p, r->name, w, WATCHERS_MAX, &n);
		for (size_t i = 0; i < n; i++)
			deliver(p, w[i], r->id, r->in, r->inlen, r->flags);
		break;
	}
	case R_ACK:
		for (struct ask *a = p->asks; a; a = a->next) {
			if (a->id != r->id)
				continue;
			for (unsigned i = 0; i < a->n; i++) {
				if (a->w[i].cookie != r->ver || a->w[i].done)
					continue;
				a->w[i].done = 1;
				a->w[i].data = dup_bytes(r->in, r->inlen);
				a->w[i].len = r->inlen;
				a->acked++;
			}
		}
		break;
	case R_DF:
	case R_WATCH:
		break;
	case R_EXT:
		r->rc = r->ext_apply(p, r->ext_arg);	/* its status */
		break;
	default:
		abort();
	}
}

static void
req_free(struct req *r)
{
	if (!r)
		return;
	free(r->in);
	free(r->in2);
	free(r->out);
	for (size_t i = 0; i < r->nkv; i++) {
		free(r->kvs[i].k);
		free(r->kvs[i].v);
	}
	free(r->kvs);
	for (size_t i = 0; i < r->nnames; i++)
		free(r->names[i]);
	free(r->names);
	if (r->ext_drop)
		r->ext_drop(r->ext_arg);
	free(r);
}

static struct req *
req_new(struct sconn *c, int op, const char *name)
{
	struct req *r = calloc(1, sizeof(*r));

	if (!r)
		abort();
	r->op = op;
	r->node = c->node;
	snprintf(r->client, sizeof(r->client), "%s", c->client);
	if (name)
		snprintf(r->name, sizeof(r->name), "%s", name);
	return r;
}

/* The OSD applies what arrives after its caller gave up. */
static void
queue_late(struct sim_pool *p, struct req *r, uint64_t at)
{
	struct req **pp = &p->late;

	r->at = at;
	while (*pp && (*pp)->at <= at)
		pp = &(*pp)->next;
	r->next = *pp;
	*pp = r;
	sim_wake(&p->late);
}

static void *
osd_main(void *arg)
{
	struct sim_pool *p = arg;

	for (;;) {
		struct req *r = p->late;

		if (!r) {
			(void)sim_wait(&p->late, 0);
			continue;
		}
		if (r->at > sim_now()) {
			(void)sim_wait(&p->late, r->at);
			continue;
		}
		p->late = r->next;
		sim_atomic_begin();
		exec(p, r);
		sim_atomic_end();
		if (simpool_trace && r->op != R_NOTIFY)
			fprintf(simpool_trace, "%.6f   osd: node%d %s %s -> %d "
				"(late)\n", (double)sim_now() / 1e9, r->node,
				opnames[r->op], r->name, r->rc);
		req_free(r);
	}
	return NULL;
}

/*
 * Send @r and wait for its answer: its result, or -ETIMEDOUT (then it may
 * have been applied, now or later, or never).  @r is the caller's to
 * free, unless it was left to the OSD (*@kept).
 */
static int
rpc_until(struct sconn *c, struct req *r, uint64_t deadline, int *kept)
{
	struct sim_pool *p = c->p;
	uint64_t t0 = sim_now();
	uint64_t apply = t0 + delay(p, 20000, 400000);
	uint64_t answer;
	int applied_ok = 1, answered = 1;
	uint64_t part = p->part_until[c->node + 1];

	*kept = 0;
	p->n.requests++;
	if (simpool_trace && objfs_deadline())
		fprintf(simpool_trace, "%.6f   osd: node%d %s %s sent by a "
			"call, %.3f s before its answer is given up\n",
			(double)t0 / 1e9, c->node, opnames[r->op], r->name,
			(double)(deadline - t0) / 1e9);
	if (simpool_trace && objfs_deadline() && getenv("OBJFS_SIM_BT")) {
		void *bt[16];
		int nb = backtrace(bt, 16);
		char **sym = backtrace_symbols(bt, nb);
		for (int i = 2; sym && i < nb; i++)
			fprintf(simpool_trace, "      %s\n", sym[i]);
		free(sym);
	}
	sim_yield();
	if (part > t0) {
		/* Sent into a partition: it gets through once it heals,
		 * if the client has not given up by then. */
		p->n.partitioned++;
		apply = part + delay(p, 20000, 400000);
		if (apply >= deadline)
			applied_ok = answered = 0;
	} else if (chance(p, p->f.lost)) {
		p->n.lost++;
		applied_ok = answered = 0;
	} else if (chance(p, p->f.land_timeout)) {
		p->n.land_timeout++;
		answered = 0;
	} else if (chance(p, p->f.late)) {
		p->n.late++;
		apply = deadline + delay(p, 1000000, 5 * SIM_NS);
		answered = 0;
	} else if (chance(p, p->f.slow)) {
		p->n.slow++;
		apply = t0 + delay(p, 1000000, deadline - t0);
	}
	if (applied_ok && p->osd_until > apply) {
		p->n.osd_paused++;
		apply = p->osd_until + delay(p, 1000, 100000);
		if (apply >= deadline)
			answered = 0;
	}
	answer = apply + delay(p, 20000, 400000);
	if (answer >= deadline)
		answered = 0;
	if (applied_ok && apply >= deadline) {
		/* The OSD gets it after the client gave up. */
		struct req *copy = calloc(1, sizeof(*copy));

		if (!copy)
			abort();
		*copy = *r;
		r->in = r->in2 = NULL;
		r->ext_drop = NULL;	/* the late copy's now */
		*kept = r->op == R_EXT;
		queue_late(p, copy, apply);
		sim_sleep_until(deadline);
		return -ETIMEDOUT;
	}
	if (applied_ok) {
		sim_sleep_until(apply);
		/* A node paused meanwhile sent it before it stopped; the
		 * OSD applies it whatever the node does since. */
		sim_atomic_begin();
		exec(p, r);
		sim_atomic_end();
		if (simpool_trace)
			fprintf(simpool_trace, "%.6f   osd: node%d %s %s%s%s "
				"-> %d%s\n", (double)sim_now() / 1e9, c->node,
				opnames[r->op], r->name, r->key[0] ? " " : "",
				r->key, r->rc, answered ? "" : " (answer lost)");
	} else if (simpool_trace) {
		fprintf(simpool_trace, "%.6f   osd: node%d %s %s: lost\n",
			(double)sim_now() / 1e9, c->node, opnames[r->op],
			r->name);
	}
	if (!answered) {
		sim_sleep_until(deadline);
		return -ETIMEDOUT;
	}
	sim_sleep_until(answer);
	return r->rc;
}

static int
rpc(struct sconn *c, struct req *r, int *kept)
{
	uint64_t t = (uint64_t)c->timeout_s * SIM_NS;

	/* librados's op timeout; a request of a system call's thread ends
	 * at the call's deadline (remote.c cancels it, remote_lock.c
	 * leaves a blocking one to its thread: either may land after
	 * all), except the listing and the watch's and notify's calls,
	 * which no system call waits for: those take the whole timeout. */
	switch (r->op) {
	case R_LIST: case R_WATCH: case R_ACK: case R_NOTIFY:
		break;
	default:
		t = objfs_deadline_cap_ns(t, 0);
	}
	return rpc_until(c, r, sim_now() + t, kept);
}

/* rpc, for a request whose results the caller reads: 0 or -errno. */
static int
call(struct sconn *c, struct req *r)
{
	int kept, rc = rpc(c, r, &kept);

	(void)kept;
	return rc;
}

/* ---- the table ------------------------------------------------------------ */

#define C(base) ((struct sconn *)(base))

static void
sim_close(struct objfs_remote *base)
{
	struct sconn *c = C(base);

	if (c->cb_started) {
		c->cb_stop = 1;
		sim_wake(c);
		pthread_join(c->cb_th, NULL);
	}
	while (c->q) {
		struct note *n = c->q;

		c->q = n->next;
		free(n->data);
		free(n);
	}
	for (struct sconn **pp = &c->p->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	free(c);
}

static int
sim_put(struct objfs_remote *base, const char *name, const void *buf,
		size_t len)
{
	struct req *r = req_new(C(base), R_PUT, name);
	int rc;

	r->in = dup_bytes(buf, r->inlen = len);
	rc = call(C(base), r);
	req_free(r);
	return rc;
}

static int
sim_create(struct objfs_remote *base, const char *name, const void *buf,
		size_t len)
{
	struct req *r = req_new(C(base), R_CREATE, name);
	int rc;

	r->in = dup_bytes(buf, r->inlen = len);
	rc = call(C(base), r);
	req_free(r);
	return rc;
}

static int
sim_get(struct objfs_remote *base, const char *name, uint64_t off, void *buf,
		size_t len, size_t *got)
{
	struct req *r = req_new(C(base), R_GET, name);
	int rc;

	r->off = off;
	r->len = len;
	rc = call(C(base), r);
	*got = 0;
	if (rc == 0) {
		memcpy(buf, r->out, r->outlen);
		*got = r->outlen;
	}
	req_free(r);
	return rc;
}

static int
sim_stat(struct objfs_remote *base, const char *name, uint64_t *size)
{
	struct req *r = req_new(C(base), R_STAT, name);
	int rc = call(C(base), r);

	if (rc == 0)
		*size = r->out_size;
	req_free(r);
	return rc;
}

static int
sim_remove(struct objfs_remote *base, const char *name)
{
	struct req *r = req_new(C(base), R_REMOVE, name);
	int rc = call(C(base), r);

	req_free(r);
	return rc == -ENOENT ? 0 : rc;
}

static int
lock_req(struct sconn *c, const char *name, const char *holder,
		unsigned seconds, int shared, int flags, char *who,
		size_t whosize)
{
	struct req *r = req_new(c, R_LOCK, name);
	int rc;

	snprintf(r->cookie, sizeof(r->cookie), "%s", holder);
	r->secs = seconds;
	r->shared = shared;
	r->flags = flags;
	rc = call(c, r);
	if (rc == -EBUSY && who && whosize)
		snprintf(who, whosize, "%s", r->who);
	req_free(r);
	return rc;
}

static int
sim_hold(struct objfs_remote *base, const char *name, const char *holder,
		unsigned seconds, char *who, size_t whosize)
{
	int rc = lock_req(C(base), name, holder, seconds, 0, LOCK_RENEW, who,
			whosize);

	return rc == -EEXIST ? -EBUSY : rc;
}

static int
sim_hold_shared(struct objfs_remote *base, const char *name,
		const char *holder, unsigned seconds, char *who, size_t whosize)
{
	int rc = lock_req(C(base), name, holder, seconds, 1, LOCK_RENEW, who,
			whosize);

	return rc == -EEXIST ? -EBUSY : rc;
}

static int
sim_hold_renew(struct objfs_remote *base, const char *name,
		const char *holder, unsigned seconds, int shared)
{
	int rc = lock_req(C(base), name, holder, seconds, shared,
			LOCK_MUST_RENEW, NULL, 0);

	return rc == -EBUSY || rc == -EEXIST ? -ENOENT : rc;
}

static int
sim_release(struct objfs_remote *base, const char *name, const char *holder)
{
	struct req *r = req_new(C(base), R_UNLOCK, name);
	int rc;

	snprintf(r->cookie, sizeof(r->cookie), "%s", holder);
	rc = call(C(base), r);
	req_free(r);
	return rc == -ENOENT ? 0 : rc;
}

static int
sim_holder(struct objfs_remote *base, const char *name, char *client,
		size_t clen, char *cookie, size_t klen)
{
	struct req *r = req_new(C(base), R_LOCKERS, name);
	int rc = call(C(base), r);

	if (rc == 0) {
		snprintf(client, clen, "%s", r->out_client);
		snprintf(cookie, klen, "%s", r->who);
	}
	req_free(r);
	return rc;
}

static int
sim_break(struct objfs_remote *base, const char *name, const char *client,
		const char *cookie)
{
	struct req *r = req_new(C(base), R_BREAK, name);
	int rc;

	snprintf(r->key, sizeof(r->key), "%s", client);
	snprintf(r->cookie, sizeof(r->cookie), "%s", cookie);
	rc = call(C(base), r);
	req_free(r);
	return rc == -ENOENT ? 0 : rc;
}

static int
sim_list(struct objfs_remote *base, int (*cb)(void *arg, const char *name),
		void *arg)
{
	struct req *r = req_new(C(base), R_LIST, NULL);
	int rc = call(C(base), r);

	for (size_t i = 0; rc == 0 && i < r->nnames; i++)
		rc = cb(arg, r->names[i]);
	req_free(r);
	return rc;
}

static void
sim_set_touch(struct objfs_remote *base, int on)
{
	C(base)->touch = on;
}

static int
sim_age_ver(struct objfs_remote *base, const char *name, uint64_t *size,
		int64_t *mtime, uint64_t *ver)
{
	struct req *r = req_new(C(base), R_AGEVER, name);
	int rc = call(C(base), r);

	if (rc == 0) {
		*size = r->out_size;
		*mtime = (int64_t)(r->out_mtime / SIM_NS);
		*ver = r->out_ver;
	}
	req_free(r);
	return rc;
}

static int
sim_remove_at(struct objfs_remote *base, const char *name, uint64_t ver)
{
	struct req *r = req_new(C(base), R_REMOVE_AT, name);
	int rc;

	r->ver = ver;
	rc = call(C(base), r);
	req_free(r);
	return rc;
}

/* ---- watch and notify ------------------------------------------------------ */

/* Has @c's watch lapsed (its node silent past the watch's timeout)? */
static int
watch_check(struct sim_pool *p, struct sconn *c)
{
	uint64_t from = p->down[c->node + 1].from, until, now = sim_now();

	if (!c->watching)
		return 0;
	until = p->down[c->node + 1].until;
	if (until > now)
		until = now;
	if (from >= c->watch_made && from < now &&
	    until - from > (uint64_t)c->watch_to * SIM_NS) {
		c->watching = 0;
		if (until < UINT64_MAX && !sim_node_dead(c->node))
			c->watch_lost = 1;
		p->n.watches_dropped++;
		return 0;
	}
	return 1;
}

static struct sconn *
watchers(struct sim_pool *p, const char *name, struct sconn **out, size_t max,
		size_t *n)
{
	*n = 0;
	for (struct sconn *c = p->conns; c; c = c->next) {
		if (c->closed || !watch_check(p, c) ||
		    strcmp(c->watch_name, name))
			continue;
		if (*n < max)
			out[(*n)++] = c;
	}
	return *n ? out[0] : NULL;
}

static void
enqueue(struct sconn *c, uint64_t at, uint64_t id, const void *data,
		size_t len)
{
	struct note *n = calloc(1, sizeof(*n)), **pp = &c->q;

	if (!n)
		abort();
	n->at = at;
	n->id = id;
	if (data) {
		n->data = dup_bytes(data, len);
		n->len = len;
	}
	while (*pp && (*pp)->at <= at)
		pp = &(*pp)->next;
	n->next = *pp;
	*pp = n;
	sim_wake(c);
}

/* A notify reaches watcher @c (with the notify faults when @faults). */
static void
deliver(struct sim_pool *p, struct sconn *c, uint64_t id, const void *data,
		size_t len, int faults)
{
	uint64_t at = sim_now() + delay(p, 20000, 300000);

	p->n.notifies++;
	if (faults && chance(p, p->f.notify_lost)) {
		p->n.notify_lost++;
		return;
	}
	if (faults && chance(p, p->f.notify_late)) {
		p->n.notify_late++;
		at += delay(p, SIM_NS / 10, 3 * SIM_NS);
	}
	enqueue(c, at, id, data, len);
	if (faults && chance(p, p->f.notify_dup)) {
		p->n.notify_dup++;
		enqueue(c, at + delay(p, 1000, SIM_NS), id, data, len);
	}
}

static void *
cb_main(void *arg)
{
	struct sconn *c = arg;

	while (!c->cb_stop) {
		struct note *n = c->q;

		if (!n) {
			(void)sim_wait(c, 0);
			continue;
		}
		if (n->at > sim_now()) {
			(void)sim_wait(c, n->at);
			continue;
		}
		c->q = n->next;
		if (c->watching && c->cb)
			c->cb(c->cb_arg, n->id, c->cookie, n->data, n->len);
		free(n->data);
		free(n);
	}
	return NULL;
}

static int
sim_watch(struct objfs_remote *base, const char *name, unsigned timeout_s,
		void (*cb)(void *arg, uint64_t notify_id, uint64_t cookie,
			const void *data, size_t len),
		void *arg, uint64_t *cookie)
{
	struct sconn *c = C(base);
	struct req *r = req_new(c, R_WATCH, name);
	int rc = call(c, r);

	req_free(r);
	if (rc < 0)
		return rc;
	snprintf(c->watch_name, sizeof(c->watch_name), "%s", name);
	c->cb = cb;
	c->cb_arg = arg;
	c->cookie = ++c->p->next_cookie;
	c->watch_made = sim_now();
	c->watch_to = timeout_s < 5 ? 5 : timeout_s;
	c->watch_lost = 0;
	c->watching = 1;
	if (!c->cb_started) {
		c->cb_stop = 0;
		if (pthread_create(&c->cb_th, NULL, cb_main, c) != 0)
			return -EAGAIN;
		c->cb_started = 1;
	}
	*cookie = c->cookie;
	return 0;
}

static void
sim_unwatch(struct objfs_remote *base, uint64_t cookie)
{
	struct sconn *c = C(base);

	(void)cookie;
	c->watching = 0;
	c->cb = NULL;
	while (c->q) {
		struct note *n = c->q;

		c->q = n->next;
		free(n->data);
		free(n);
	}
}

static int
sim_watch_lost(struct objfs_remote *base)
{
	struct sconn *c = C(base);

	(void)watch_check(c->p, c);
	return c->watch_lost;
}

static int
sim_notify_ack(struct objfs_remote *base, uint64_t notify_id, uint64_t cookie,
		const void *buf, size_t len)
{
	struct req *r = req_new(C(base), R_ACK, NULL);
	int kept, rc;

	r->id = notify_id;
	r->ver = cookie;
	r->in = dup_bytes(buf, r->inlen = len);
	rc = rpc(C(base), r, &kept);
	req_free(r);
	return rc;
}

static int
sim_notify(struct objfs_remote *base, const char *name)
{
	struct sconn *c = C(base);
	struct sim_pool *p = c->p;
	struct req *r;

	/* Sent without waiting (librados's aio_notify): the OSD passes it
	 * on once it arrives; a partitioned node's is lost. */
	sim_yield();
	p->n.requests++;
	if (p->part_until[c->node + 1] > sim_now()) {
		p->n.partitioned++;
		return 0;
	}
	r = req_new(c, R_NOTIFY, name);
	r->id = ++p->next_id;
	r->flags = 1;
	queue_late(p, r, (p->osd_until > sim_now() ? p->osd_until :
		sim_now()) + delay(p, 20000, 400000));
	return 0;
}

static int
sim_ask(struct objfs_remote *base, const char *name, const void *buf,
		size_t len, unsigned timeout_ms,
		void (*cb)(void *arg, const void *data, size_t len), void *arg)
{
	struct sconn *c = C(base);
	struct sim_pool *p = c->p;
	struct sconn *w[WATCHERS_MAX];
	struct ask *a = calloc(1, sizeof(*a));
	uint64_t deadline = sim_now() + (uint64_t)timeout_ms * 1000000u;
	struct req *r;
	size_t n = 0;
	int kept, rc;

	if (!a)
		return -ENOMEM;
	a->id = ++p->next_id;
	/* The watchers the OSD knows when the notify reaches it (a notify:
	 * rados_notify2 blocks for its own timeout, @timeout_ms). */
	r = req_new(c, R_DF, name);
	rc = rpc_until(c, r, sim_now() + (uint64_t)c->timeout_s * SIM_NS,
			&kept);
	req_free(r);
	if (rc < 0) {
		free(a);
		return rc;
	}
	(void)watchers(p, name, w, WATCHERS_MAX, &n);
	for (size_t i = 0; i < n; i++) {
		a->w[a->n++].cookie = w[i]->cookie;
		deliver(p, w[i], a->id, buf, len, 0);
	}
	a->next = p->asks;
	p->asks = a;
	while (a->acked < a->n && sim_now() < deadline)
		(void)sim_wait(a, deadline);
	for (struct ask **pp = &p->asks; *pp; pp = &(*pp)->next) {
		if (*pp == a) {
			*pp = a->next;
			break;
		}
	}
	rc = a->acked < a->n ? -ETIMEDOUT : 0;
	for (unsigned i = 0; i < a->n; i++) {
		if (a->w[i].done && cb)
			cb(arg, a->w[i].data, a->w[i].len);
		free(a->w[i].data);
	}
	free(a);
	return rc;
}

static int
sim_omap_set(struct objfs_remote *base, const char *name, const char *key,
		const void *val, size_t len)
{
	struct req *r = req_new(C(base), R_OMAP_SET, name);
	int rc;

	snprintf(r->key, sizeof(r->key), "%s", key);
	if (val) {
		r->has_val = 1;
		r->in = dup_bytes(val, r->inlen = len);
	}
	rc = call(C(base), r);
	req_free(r);
	return rc;
}

static int
sim_omap_del_if(struct objfs_remote *base, const char *name, const char *key,
		const void *val, size_t len)
{
	struct req *r = req_new(C(base), R_OMAP_DEL_IF, name);
	int rc;

	snprintf(r->key, sizeof(r->key), "%s", key);
	r->in = dup_bytes(val, r->inlen = len);
	rc = call(C(base), r);
	req_free(r);
	return rc;
}

static int
sim_omap_list(struct objfs_remote *base, const char *name,
		int (*cb)(void *arg, const char *key, const void *val,
			size_t len),
		void *arg)
{
	struct req *r = req_new(C(base), R_OMAP_LIST, name);
	int rc = call(C(base), r);

	for (size_t i = 0; rc == 0 && i < r->nkv; i++)
		rc = cb(arg, r->kvs[i].k, r->kvs[i].v, r->kvs[i].vlen);
	req_free(r);
	return rc;
}

static int
sim_df(struct objfs_remote *base, uint64_t *total, uint64_t *avail)
{
	struct req *r = req_new(C(base), R_DF, NULL);
	int rc = call(C(base), r);

	req_free(r);
	if (rc == 0) {
		*total = 100ull << 30;
		*avail = 90ull << 30;
	}
	return rc;
}

static int
sim_get_all(struct objfs_remote *base, const char *name, void **buf,
		size_t *len)
{
	struct req *r = req_new(C(base), R_GET, name);
	int rc;

	r->off = 0;
	r->len = SIZE_MAX;
	rc = call(C(base), r);
	if (rc == 0) {
		*buf = r->out;
		*len = r->outlen;
		r->out = NULL;
	}
	req_free(r);
	return rc;
}

/* The chunk's xattr: its shift byte, then its sums. */
static unsigned char *
sums_x(uint32_t len, unsigned shift, const unsigned char *tab, size_t *n)
{
	unsigned char *x;

	*n = 1 + 4 * (size_t)objfs_nsums(len, shift);
	x = malloc(*n);
	if (!x)
		abort();
	x[0] = (unsigned char)shift;
	memcpy(x + 1, tab, *n - 1);
	return x;
}

/* As src/rados/remote.c's pool_chunk_put: an exclusive create with its
 * sums; one found there is compared (and, shared, touched). */
static int
sim_chunk_put(struct objfs_remote *base, const char *name, const void *buf,
		uint32_t len, unsigned shift, const unsigned char *tab)
{
	struct sconn *c = C(base);
	int rc, tries = 0;
	size_t xn;

again:
	{
		struct req *r = req_new(c, R_CHUNK_CREATE, name);

		r->in = dup_bytes(buf, r->inlen = len);
		r->in2 = sums_x(len, shift, tab, &r->in2len);
		rc = call(c, r);
		req_free(r);
	}
	if (rc == 0)
		return 1;
	if (rc != -EEXIST)
		return rc;
	{
		struct req *r = req_new(c, R_CHUNK_SAME, name);

		r->len = len;
		r->in2 = sums_x(len, shift, tab, &xn);
		r->in2len = xn;
		rc = call(c, r);
		req_free(r);
	}
	if (rc == 1 && c->touch) {
		struct req *r = req_new(c, R_CHUNK_TOUCH, name);

		r->in2 = sums_x(len, shift, tab, &xn);
		r->in2len = xn;
		rc = call(c, r);
		req_free(r);
		rc = rc == 0 ? 1 : rc == -ECANCELED ? 0 : rc;
	}
	if (rc == -ENOENT && tries++ < 3)
		goto again;
	if (rc < 0)
		return rc;
	if (!rc) {
		objfs_log(OBJFS_LOG_ERR, "remote: chunk %s in the pool does not "
			"hold the bytes its name says", name);
		return -EIO;
	}
	return 0;
}

static int
sim_chunk_get(struct objfs_remote *base, const char *name, void *buf,
		uint32_t len, unsigned shift, uint64_t csum)
{
	struct req *r = req_new(C(base), R_CHUNK_GET, name);
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	int rc;

	r->len = (uint64_t)len + 1;
	rc = call(C(base), r);
	if (rc == 0) {
		if (r->out_size == len && r->outlen == len) {
			memcpy(buf, r->out, len);
			if (objfs_chunk_csum(buf, len, shift, tab) != csum)
				rc = -EIO;
		} else {
			rc = -EIO;
		}
		if (rc)
			objfs_log(OBJFS_LOG_ERR, "remote: chunk %s: its bytes do "
				"not match their checksum, refusing to return "
				"them", name);
	}
	req_free(r);
	return rc;
}

/* ---- puts and fetches in flight --------------------------------------------- */

struct sim_puts {
	struct objfs_remote_puts base;
	struct sconn *c;
	struct {
		char name[OBJFS_REMOTE_CHUNK_NAME];
		const void *buf;
		uint32_t len;
		unsigned shift;
		unsigned char *tab;
		int result;
	} *it;
	size_t n, cap;
};

static int
sim_puts_new(struct objfs_remote *base, unsigned window,
		struct objfs_remote_puts **out)
{
	struct sim_puts *p = calloc(1, sizeof(*p));

	(void)window;
	if (!p)
		return -ENOMEM;
	p->base.ops = &sim_ops;
	p->c = C(base);
	*out = &p->base;
	return 0;
}

static int
sim_puts_add(struct objfs_remote_puts *base, const char *name, const void *buf,
		uint32_t len, unsigned shift, const unsigned char *tab, int look)
{
	struct sim_puts *p = (struct sim_puts *)base;
	size_t tn = 4 * (size_t)objfs_nsums(len, shift);

	(void)look;
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 16;
		p->it = realloc(p->it, p->cap * sizeof(*p->it));
		if (!p->it)
			abort();
	}
	snprintf(p->it[p->n].name, sizeof(p->it[p->n].name), "%s", name);
	p->it[p->n].buf = buf;
	p->it[p->n].len = len;
	p->it[p->n].shift = shift;
	p->it[p->n].tab = dup_bytes(tab, tn);
	p->it[p->n].result = -EINPROGRESS;
	p->n++;
	return 0;
}

static int
sim_puts_wait(struct objfs_remote_puts *base)
{
	struct sim_puts *p = (struct sim_puts *)base;
	int err = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (p->it[i].result != -EINPROGRESS)
			continue;
		/* After one failed, no more are sent (remote_aio.c). */
		p->it[i].result = err ? err : sim_chunk_put(&p->c->base,
			p->it[i].name, p->it[i].buf, p->it[i].len,
			p->it[i].shift, p->it[i].tab);
		if (p->it[i].result >= 0)
			objfs_deadline_progress();	/* as remote_aio.c */
		if (p->it[i].result < 0 && !err)
			err = p->it[i].result;
	}
	return err;
}

static int
sim_puts_result(const struct objfs_remote_puts *base, size_t k)
{
	const struct sim_puts *p = (const struct sim_puts *)base;

	return k < p->n ? p->it[k].result : -EINVAL;
}

static void
sim_puts_counts(const struct objfs_remote_puts *base, size_t *looks,
		size_t *at_once)
{
	(void)base;
	*looks = 0;
	*at_once = 0;
}

static void
sim_puts_free(struct objfs_remote_puts *base)
{
	struct sim_puts *p = (struct sim_puts *)base;

	for (size_t i = 0; i < p->n; i++)
		free(p->it[i].tab);
	free(p->it);
	free(p);
}

struct sim_fetch {
	struct objfs_remote_fetch base;
	struct sconn *c;
	char name[OBJFS_REMOTE_CHUNK_NAME];
	uint32_t len;
};

static int
sim_fetch_start(struct objfs_remote *base, const char *name, uint32_t len,
		struct objfs_remote_fetch **out)
{
	struct sim_fetch *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->base.ops = &sim_ops;
	f->c = C(base);
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->len = len;
	*out = &f->base;
	return 0;
}

static int
sim_fetch_done(const struct objfs_remote_fetch *f)
{
	(void)f;
	return 1;
}

static int
sim_fetch_take(struct objfs_remote_fetch *base, void *buf, unsigned shift,
		uint64_t csum)
{
	struct sim_fetch *f = (struct sim_fetch *)base;

	return sim_chunk_get(&f->c->base, f->name, buf, f->len, shift, csum);
}

static void
sim_fetch_free(struct objfs_remote_fetch *base)
{
	free(base);
}

/* ---- the log and the head ------------------------------------------------ */

static void
log_name(char name[64], uint64_t epoch, uint64_t seq)
{
	snprintf(name, 64, "objfs.log.%016" PRIx64 ".%016" PRIx64, epoch, seq);
}

static int
sim_log_put(struct objfs_remote *base, uint64_t epoch, uint64_t seq,
		const void *buf, size_t len)
{
	char name[64];

	log_name(name, epoch, seq);
	return sim_create(base, name, buf, len);
}

static int
sim_log_get(struct objfs_remote *base, uint64_t epoch, uint64_t seq, void *buf,
		size_t cap, size_t *len)
{
	struct req *r;
	char name[64];
	int rc;

	log_name(name, epoch, seq);
	r = req_new(C(base), R_GET, name);
	r->off = 0;
	r->len = cap;
	rc = call(C(base), r);
	if (rc == 0) {
		memcpy(buf, r->out, r->outlen);
		*len = r->outlen;
		if (r->out_size > cap)
			rc = -EFBIG;
	}
	req_free(r);
	return rc;
}

static int
sim_head_get(struct objfs_remote *base, void *buf, size_t cap, size_t *len,
		uint64_t *ver)
{
	struct req *r = req_new(C(base), R_HEAD_GET, "objfs.head");
	int rc;

	r->len = cap;
	rc = call(C(base), r);
	*len = 0;
	*ver = 0;
	if (rc == 0) {
		memcpy(buf, r->out, r->outlen);
		*len = r->outlen;
		*ver = r->out_ver;
	}
	req_free(r);
	return rc;
}

static int
sim_head_put(struct objfs_remote *base, const void *buf, size_t len,
		uint64_t *ver)
{
	struct req *r = req_new(C(base), R_HEAD_PUT, "objfs.head");
	int rc;

	r->in = dup_bytes(buf, r->inlen = len);
	r->ver = *ver;
	rc = call(C(base), r);
	if (rc == 0)
		*ver = r->out_ver;
	req_free(r);
	return rc;
}

static const struct objfs_remote_ops sim_ops = {
	.kind = "rados",
	.close = sim_close,
	.put = sim_put,
	.create = sim_create,
	.get = sim_get,
	.stat = sim_stat,
	.remove = sim_remove,
	.hold = sim_hold,
	.hold_shared = sim_hold_shared,
	.hold_renew = sim_hold_renew,
	.release = sim_release,
	.holder = sim_holder,
	.break_ = sim_break,
	.list = sim_list,
	.set_touch = sim_set_touch,
	.age_ver = sim_age_ver,
	.remove_at = sim_remove_at,
	.watch = sim_watch,
	.unwatch = sim_unwatch,
	.watch_lost = sim_watch_lost,
	.notify_ack = sim_notify_ack,
	.omap_set = sim_omap_set,
	.omap_del_if = sim_omap_del_if,
	.omap_list = sim_omap_list,
	.notify = sim_notify,
	.ask = sim_ask,
	.df = sim_df,
	.get_all = sim_get_all,
	.chunk_put = sim_chunk_put,
	.chunk_get = sim_chunk_get,
	.log_put = sim_log_put,
	.log_get = sim_log_get,
	.head_get = sim_head_get,
	.head_put = sim_head_put,
	.puts_new = sim_puts_new,
	.puts_add = sim_puts_add,
	.puts_wait = sim_puts_wait,
	.puts_result = sim_puts_result,
	.puts_counts = sim_puts_counts,
	.puts_free = sim_puts_free,
	.fetch_start = sim_fetch_start,
	.fetch_done = sim_fetch_done,
	.fetch_take = sim_fetch_take,
	.fetch_free = sim_fetch_free,
};

/* ---- another protocol over this network (s3gw.c) ---------------------------- */

int
simpool_ext_call(struct objfs_remote *conn, const char *what,
		int (*apply)(struct sim_pool *p, void *arg),
		void (*dropper)(void *arg), void *arg, uint64_t deadline,
		int *kept)
{
	struct sconn *c = C(conn);
	struct req *r = req_new(c, R_EXT, what);
	int rc;

	r->ext_apply = apply;
	r->ext_drop = dropper;
	r->ext_arg = arg;
	rc = rpc_until(c, r, deadline, kept);
	r->ext_drop = NULL;	/* the caller's (or the late copy's) */
	req_free(r);
	return rc < 0 ? rc : 0;
}

int
simpool_chance(struct sim_pool *p, int kind)
{
	if (!chance(p, kind == SIM_FAULT_BUSY ? p->f.busy : 0))
		return 0;
	p->n.s3_busy++;
	return 1;
}

int
simpool_s3_obj(struct sim_pool *p, const char *name, const void **data,
		size_t *len, uint64_t *mtime, const char **etag,
		const char **meta)
{
	struct sobj *o = find(p, name);

	if (!o)
		return -ENOENT;
	*data = o->data;
	*len = o->len;
	*mtime = o->mtime;
	*etag = o->etag;
	*meta = o->meta;
	return 0;
}

void
simpool_s3_put(struct sim_pool *p, const char *name, const void *data,
		size_t len, const char *etag, const char *meta)
{
	struct sobj *o = make(p, name);

	set_data(o, data, len);
	snprintf(o->etag, sizeof(o->etag), "%s", etag);
	snprintf(o->meta, sizeof(o->meta), "%s", meta ? meta : "");
	touched(p, o);
}

void
simpool_s3_del(struct sim_pool *p, const char *name)
{
	drop(p, name);
}

/* ---- the driver's and the checker's side ----------------------------------- */

struct sim_pool *
simpool_new(uint64_t seed)
{
	struct sim_pool *p = calloc(1, sizeof(*p));

	if (!p)
		abort();
	p->rng = seed ^ 0x9001900190019001ull;
	return p;
}

struct objfs_remote *
simpool_connect(struct sim_pool *p, int node, unsigned timeout_s)
{
	struct sconn *c = calloc(1, sizeof(*c));

	if (!c)
		abort();
	c->base.ops = &sim_ops;
	/* As librados: a request takes its whole timeout (src/remote.h). */
	c->base.whole_ns = (uint64_t)(timeout_s ? timeout_s :
		OBJFS_REMOTE_TIMEOUT) * SIM_NS;
	c->p = p;
	c->node = node;
	c->timeout_s = timeout_s ? timeout_s : OBJFS_REMOTE_TIMEOUT;
	snprintf(c->client, sizeof(c->client), "client.%" PRIu64,
		4100 + ++p->next_client);
	c->next = p->conns;
	p->conns = c;
	return &c->base;
}

const char *
simpool_client(struct objfs_remote *r)
{
	return C(r)->client;
}

int
simpool_start(struct sim_pool *p)
{
	sim_set_node(SIM_NONE);
	if (pthread_create(&p->osd_th, NULL, osd_main, p) != 0)
		return -EAGAIN;
	p->osd_started = 1;
	return 0;
}

void
simpool_set_faults(struct sim_pool *p, const struct sim_faults *f)
{
	p->f = *f;
}

void
simpool_partition(struct sim_pool *p, int node, uint64_t until)
{
	p->part_until[node + 1] = until;
}

void
simpool_node_down(struct sim_pool *p, int node, uint64_t from, uint64_t until)
{
	/* Each connection's watch is checked against the outage before
	 * the next one replaces it. */
	for (struct sconn *c = p->conns; c; c = c->next)
		if (c->node == node)
			(void)watch_check(p, c);
	p->down[node + 1].from = from;
	p->down[node + 1].until = until;
}

void
simpool_osd_pause(struct sim_pool *p, uint64_t until)
{
	p->osd_until = until;
}

void
simpool_clock_jump(struct sim_pool *p, int64_t ns)
{
	p->clock_off += ns;
}

void
simpool_counts(struct sim_pool *p, struct sim_pool_counts *c)
{
	*c = p->n;
}

int
simpool_peek(struct sim_pool *p, const char *name, const void **data,
		size_t *len, uint64_t *ver)
{
	struct sobj *o = find(p, name);

	if (!o)
		return -ENOENT;
	*data = o->data;
	*len = o->len;
	if (ver)
		*ver = o->ver;
	return 0;
}

int
simpool_each(struct sim_pool *p, const char *prefix,
		int (*cb)(void *arg, const char *name, const void *data,
			size_t len),
		void *arg)
{
	struct sobj **v = NULL;
	size_t n = 0, cap = 0, pl = strlen(prefix);
	int rc = 0;

	for (unsigned h = 0; h < OHASH; h++) {
		for (struct sobj *o = p->obj[h]; o; o = o->next) {
			if (strncmp(o->name, prefix, pl))
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 64;
				v = realloc(v, cap * sizeof(*v));
				if (!v)
					abort();
			}
			v[n++] = o;
		}
	}
	for (size_t i = 0; i + 1 < n; i++)	/* few: insertion order */
		for (size_t j = i + 1; j > 0 && strcmp(v[j - 1]->name,
				v[j]->name) > 0; j--) {
			struct sobj *x = v[j];

			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = cb(arg, v[i]->name, v[i]->data, v[i]->len);
	free(v);
	return rc;
}

int
simpool_lockers(struct sim_pool *p, const char *name,
		void (*cb)(void *arg, const char *client, const char *cookie,
			int exclusive, uint64_t expires),
		void *arg)
{
	struct sobj *o = find(p, name);

	if (!o)
		return -ENOENT;
	lk_expire(p, o);
	for (size_t i = 0; i < o->nlk; i++)
		cb(arg, o->lk[i].client, o->lk[i].cookie, o->lk_excl,
			o->lk[i].expires);
	return 0;
}

void
simpool_on_change(struct sim_pool *p,
		void (*fn)(void *arg, const char *name, int removed), void *arg)
{
	p->on_change = fn;
	p->change_arg = arg;
}
