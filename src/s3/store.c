/* SPDX-License-Identifier: MIT */
/*
 * store.c - an S3 bucket behind src/remote.h's table (s3.h): connect and
 * the calls one at a time.  Every object is PREFIX/NAME in the bucket.
 *
 *   chunks: PUT with If-None-Match: * and their sums' hash in
 *     x-amz-meta-objfs-sums; one that is there already (412) is compared
 *     by its size and that hash (HEAD), never written twice;
 *   the log's records: PUT with If-None-Match: * (a stale writer cannot
 *     replace what its successor wrote);
 *   the head: PUT with If-Match on the ETag last read (or If-None-Match:
 *     * for the first); its version is a hash of that ETag;
 *   the hold: hold.c.
 * A put retried after an answer that never came may find its own write
 * done (412): a chunk compares equal, a log record is compared by the
 * tier, and the head is read back and compared here.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/s3/s3.h"

#ifdef HAVE_S3
#include "src/s3/s3_int.h"

#define HEAD_NAME	"objfs.head"
#define S3(base)	((struct s3 *)(base))

static const struct objfs_remote_ops s3_ops;

/* The ETag @etag as an If-Match wants it on this service. */
static const char *
match_tag(const struct s3 *s, const char *etag, char *buf, size_t size)
{
	size_t n = strlen(etag);

	if (!s->etag_bare || n < 2 || etag[0] != '"')
		return etag;
	snprintf(buf, size, "%.*s", (int)(n - 2), etag + 1);
	return buf;
}

static uint64_t
tag_ver(const char *etag)
{
	uint64_t v = objfs_csum64(etag, strlen(etag));

	return v ? v : 1;
}

static int
put_obj(struct s3 *s, const char *name, const void *buf, size_t len,
		int excl)
{
	struct s3_req q = { .method = "PUT", .name = name, .body = buf,
		.body_len = len, .if_none_match = excl };

	return s3_do(s, &q);
}

static int
s3_put(struct objfs_remote *base, const char *name, const void *buf,
		size_t len)
{
	return put_obj(S3(base), name, buf, len, 0);
}

static int
s3_create(struct objfs_remote *base, const char *name, const void *buf,
		size_t len)
{
	return put_obj(S3(base), name, buf, len, 1);
}

static int
s3_get(struct objfs_remote *base, const char *name, uint64_t off, void *buf,
		size_t len, size_t *got)
{
	struct s3_req q = { .method = "GET", .name = name, .ranged = 1,
		.lo = off, .hi = off + len - 1, .out = buf, .cap = len };
	int rc;

	*got = 0;
	if (len == 0)
		return 0;
	rc = s3_do(S3(base), &q);
	if (rc == -EINVAL && q.status == 416)
		return 0;	/* from at or past its end: nothing */
	if (rc == 0 && q.status != 206 && off != 0) {
		/* The whole object, the range ignored: not these bytes. */
		objfs_log(OBJFS_LOG_ERR, "s3: GET %s: the service ignored the "
			"byte range (HTTP %ld)", name, q.status);
		return -EPROTO;
	}
	if (rc == 0)
		*got = q.len;
	return rc;
}

static int
s3_stat(struct objfs_remote *base, const char *name, uint64_t *size)
{
	struct s3_req q = { .method = "HEAD", .name = name };
	int rc = s3_do(S3(base), &q);

	if (rc == 0)
		*size = q.clen;
	return rc;
}

static int
s3_remove(struct objfs_remote *base, const char *name)
{
	struct s3_req q = { .method = "DELETE", .name = name };
	int rc = s3_do(S3(base), &q);

	return rc == -ENOENT ? 0 : rc;
}

/* Only one mount writes an S3 namespace (no shared mode): nobody else
 * can have put the chunk again since the collector read its version. */
static int
s3_remove_at(struct objfs_remote *base, const char *name, uint64_t ver)
{
	(void)ver;
	return s3_remove(base, name);
}

struct list_arg {
	int (*cb)(void *arg, const char *name);
	void *arg;
	size_t skip;			/* the prefix and its '/' */
};

static int
list_one(void *arg, const char *key, uint64_t size)
{
	struct list_arg *l = arg;

	(void)size;
	if (strlen(key) <= l->skip)
		return 0;
	return l->cb(l->arg, key + l->skip);
}

/* The objects of the namespace whose names begin with @start: the keys
 * right below the prefix (a '/' delimits: another namespace below this
 * one is not this one's), in the service's order (UTF-8 binary). */
static int
list_under(struct objfs_remote *base, const char *start,
		int (*cb)(void *arg, const char *name), void *arg)
{
	struct s3 *s = S3(base);
	struct list_arg l = { cb, arg, s->c.prefix[0] ?
		strlen(s->c.prefix) + 1 : 0 };
	char token[1100] = "", query[2600], pfx[1100];
	int rc;

	if ((size_t)snprintf(pfx, sizeof(pfx), "%s%s%s", s->c.prefix,
			s->c.prefix[0] ? "/" : "", start) >= sizeof(pfx))
		return -ENAMETOOLONG;
	do {
		struct s3_req q = { .method = "GET", .grow = 1 };
		char t[1100] = "", p[1600] = "";

		/* Parameters sorted by name (SigV4's canonical query). */
		for (const char *c = token; *c; c++)
			snprintf(t + strlen(t), sizeof(t) - strlen(t),
				(*c >= 'a' && *c <= 'z') || (*c >= 'A' &&
				*c <= 'Z') || (*c >= '0' && *c <= '9') ||
				*c == '-' || *c == '_' || *c == '.' ||
				*c == '~' ? "%c" : "%%%02X", (unsigned char)*c);
		for (const char *c = pfx; *c; c++)
			snprintf(p + strlen(p), sizeof(p) - strlen(p),
				(*c >= 'a' && *c <= 'z') || (*c >= 'A' &&
				*c <= 'Z') || (*c >= '0' && *c <= '9') ||
				*c == '-' || *c == '_' || *c == '.' ||
				*c == '~' ? "%c" : "%%%02X", (unsigned char)*c);
		snprintf(query, sizeof(query), "%s%s%sdelimiter=%%2F&"
			"list-type=2&prefix=%s", token[0] ?
			"continuation-token=" : "", t, token[0] ? "&" : "", p);
		q.query = query;
		rc = s3_do(s, &q);
		if (rc == 0)
			rc = s3_xml_list(q.out, q.len, list_one, &l, token,
				sizeof(token));
		free(q.out);
	} while (rc == 0 && token[0]);
	return rc;
}

static int
s3_list(struct objfs_remote *base, int (*cb)(void *arg, const char *name),
		void *arg)
{
	return list_under(base, "", cb, arg);
}

/* An object's size, when it was written on this machine's clock (the
 * service's Last-Modified moved by how far its Date is from ours: a
 * skewed clock does not age chunks), and its version. */
static int
s3_age_ver(struct objfs_remote *base, const char *name, uint64_t *size,
		int64_t *mtime, uint64_t *ver)
{
	struct s3_req q = { .method = "HEAD", .name = name };
	int rc = s3_do(S3(base), &q);

	if (rc < 0)
		return rc;
	*size = q.clen;
	/* Unknown (a time missing or unreadable): young, kept. */
	*mtime = (int64_t)time(NULL) - (q.date > 0 && q.last_modified > 0 ?
		(int64_t)(q.date - q.last_modified) : 0);
	*ver = tag_ver(q.etag);
	return 0;
}

static int
s3_get_all(struct objfs_remote *base, const char *name, void **buf,
		size_t *len)
{
	struct s3_req q = { .method = "GET", .name = name, .grow = 1 };
	int rc = s3_do(S3(base), &q);

	if (rc < 0) {
		free(q.out);
		return rc;
	}
	if (!q.out && !(q.out = malloc(1))) {
		return -ENOMEM;
	}
	*buf = q.out;
	*len = q.len;
	return 0;
}

/* ---- chunks ------------------------------------------------------------- */

/* What a chunk's metadata says of its sums: their hash, in hex. */
static void
sums_tag(unsigned shift, const unsigned char *tab, uint32_t len,
		char out[20])
{
	unsigned n = (unsigned)(((uint64_t)len + (1u << shift) - 1) >> shift);
	uint64_t h = objfs_csum64_seed(tab, (size_t)n * 4, shift);

	snprintf(out, 20, "%016" PRIx64, h);
}

static int
s3_chunk_put(struct objfs_remote *base, const char *name, const void *buf,
		uint32_t len, unsigned shift, const unsigned char *tab)
{
	struct s3 *s = S3(base);
	char tag[20];
	struct s3_req q = { .method = "PUT", .name = name, .body = buf,
		.body_len = len, .if_none_match = 1, .meta = tag };
	struct s3_req h = { .method = "HEAD", .name = name };
	int rc;

	sums_tag(shift, tab, len, tag);
	rc = s3_do(s, &q);
	if (rc != -EEXIST)
		return rc == 0 ? 1 : rc;
	/* There already (or this put's own first try, whose answer was
	 * lost): the same bytes if the same size and sums. */
	rc = s3_do(s, &h);
	if (rc < 0)
		return rc;
	if (h.clen == len && strcmp(h.meta_got, tag) == 0)
		return 0;
	objfs_log(OBJFS_LOG_ERR, "s3: chunk %s: an object of that name holds "
		"other bytes (%" PRIu64 " bytes, sums %s); refusing to use it",
		name, h.clen, h.meta_got[0] ? h.meta_got : "none");
	return -EIO;
}

static int
s3_chunk_get(struct objfs_remote *base, const char *name, void *buf,
		uint32_t len, unsigned shift, uint64_t csum)
{
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	/* One byte more than the chunk: a longer object reads longer. */
	struct s3_req q = { .method = "GET", .name = name, .ranged = 1,
		.lo = 0, .hi = len, .out = buf, .cap = len };
	int rc = s3_do(S3(base), &q);

	if (rc < 0)
		return rc;
	if (q.len == len && q.over == 0 &&
	    objfs_chunk_csum(buf, len, shift, tab) == csum)
		return 0;
	objfs_log(OBJFS_LOG_ERR, "s3: chunk %s: its bytes do not match their "
		"checksum, refusing to return them", name);
	return -EIO;
}

/* ---- the log and the head ----------------------------------------------- */

static void
log_name(char name[64], uint64_t epoch, uint64_t seq)
{
	snprintf(name, 64, "objfs.log.%016" PRIx64 ".%016" PRIx64, epoch, seq);
}

static int
s3_log_put(struct objfs_remote *base, uint64_t epoch, uint64_t seq,
		const void *buf, size_t len)
{
	char name[64];

	log_name(name, epoch, seq);
	return put_obj(S3(base), name, buf, len, 1);
}

static int
s3_log_get(struct objfs_remote *base, uint64_t epoch, uint64_t seq,
		void *buf, size_t cap, size_t *len)
{
	char name[64];
	struct s3_req q = { .method = "GET", .out = buf, .cap = cap };
	int rc;

	log_name(name, epoch, seq);
	q.name = name;
	rc = s3_do(S3(base), &q);
	if (rc < 0)
		return rc;
	if (q.over)
		return -EFBIG;
	*len = q.len;
	return 0;
}

static int
s3_head_get(struct objfs_remote *base, void *buf, size_t cap, size_t *len,
		uint64_t *ver)
{
	struct s3 *s = S3(base);
	struct s3_req q = { .method = "GET", .name = HEAD_NAME, .out = buf,
		.cap = cap };
	int rc = s3_do(s, &q);

	if (rc < 0)
		return rc;
	if (q.over)
		return -EFBIG;
	*len = q.len;
	pthread_mutex_lock(&s->head_mu);
	snprintf(s->head_etag, sizeof(s->head_etag), "%s", q.etag);
	s->head_ver = *ver = tag_ver(q.etag);
	pthread_mutex_unlock(&s->head_mu);
	return 0;
}

static int
s3_head_put(struct objfs_remote *base, const void *buf, size_t len,
		uint64_t *ver)
{
	struct s3 *s = S3(base);
	char etag[S3_ETAG_MAX], bare[S3_ETAG_MAX];
	struct s3_req q = { .method = "PUT", .name = HEAD_NAME, .body = buf,
		.body_len = len };
	int rc;

	pthread_mutex_lock(&s->head_mu);
	snprintf(etag, sizeof(etag), "%s", s->head_etag);
	rc = *ver && *ver != s->head_ver ? -ECANCELED : 0;
	pthread_mutex_unlock(&s->head_mu);
	if (rc < 0)
		return rc;	/* a version this mount never read */
	if (*ver)
		q.if_match = match_tag(s, etag, bare, sizeof(bare));
	else
		q.if_none_match = 1;
	rc = s3_do(s, &q);
	if (rc == -EEXIST && q.tries) {
		/* Tried again after an answer that did not come: the first
		 * try may have written it.  Ours if it holds our bytes. */
		char have[1024];
		size_t n = 0;
		uint64_t v;

		if (len <= sizeof(have) &&
		    s3_head_get(base, have, sizeof(have), &n, &v) == 0 &&
		    n == len && memcmp(have, buf, len) == 0) {
			*ver = v;
			return 0;
		}
	}
	if (rc == -EEXIST || rc == -ENOENT)
		return -ECANCELED;
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->head_mu);
	snprintf(s->head_etag, sizeof(s->head_etag), "%s", q.etag);
	s->head_ver = *ver = tag_ver(q.etag);
	pthread_mutex_unlock(&s->head_mu);
	return 0;
}

/* ---- status ------------------------------------------------------------- */

static size_t
s3_status(struct objfs_remote *base, char *buf, size_t size)
{
	struct s3 *s = S3(base);
	int n = snprintf(buf, size,
		"remote_s3_endpoint: %s\n"
		"remote_s3_requests_get: %" PRIu64 "\n"
		"remote_s3_requests_put: %" PRIu64 "\n"
		"remote_s3_requests_head: %" PRIu64 "\n"
		"remote_s3_requests_delete: %" PRIu64 "\n"
		"remote_s3_requests_list: %" PRIu64 "\n"
		"remote_s3_requests_post: %" PRIu64 "\n"
		"remote_s3_retries: %" PRIu64 "\n"
		"remote_s3_failures: %" PRIu64 "\n"
		"remote_s3_bytes_up: %" PRIu64 "\n"
		"remote_s3_bytes_down: %" PRIu64 "\n",
		s->c.endpoint,
		(uint64_t)atomic_load(&s->nreq[S3_GET]),
		(uint64_t)atomic_load(&s->nreq[S3_PUT]),
		(uint64_t)atomic_load(&s->nreq[S3_HEAD]),
		(uint64_t)atomic_load(&s->nreq[S3_DELETE]),
		(uint64_t)atomic_load(&s->nreq[S3_LIST]),
		(uint64_t)atomic_load(&s->nreq[S3_POST]),
		(uint64_t)atomic_load(&s->retries),
		(uint64_t)atomic_load(&s->failures),
		(uint64_t)atomic_load(&s->bytes_up),
		(uint64_t)atomic_load(&s->bytes_down));

	if (n <= 0 || size == 0)
		return 0;
	return (size_t)n < size ? (size_t)n : size - 1;
}

/* ---- connect ------------------------------------------------------------ */

/* The bucket answers, and honours both conditions (else no fencing):
 * If-None-Match: * refuses a second create, and If-Match takes the
 * current ETag (quoted as HTTP says, or bare as Ceph's gateway wants:
 * s->etag_bare). */
static int
probe(struct s3 *s, char *err, size_t errsize)
{
	char name[64], bare[S3_ETAG_MAX];
	struct s3_req a = { .method = "PUT", .body = "1", .body_len = 1,
		.if_none_match = 1 };
	struct s3_req b = a, c = { .method = "PUT", .body = "2",
		.body_len = 1 };
	int rc;

	snprintf(name, sizeof(name), "objfs.probe.%016" PRIx64,
		objfs_csum64_seed(s->c.key_id, strlen(s->c.key_id),
			(uint64_t)time(NULL) ^ (uint64_t)getpid() << 32 ^
			(uint64_t)random()));
	a.name = b.name = c.name = name;
	rc = s3_do(s, &a);
	if (rc < 0) {
		snprintf(err, errsize, "remote=s3://%s%s%s: %s: %s%s%s",
			s->c.bucket, s->c.prefix[0] ? "/" : "", s->c.prefix,
			s->c.endpoint,
			a.code[0] ? a.code : rc == -ETIMEDOUT ?
			"no answer within remote_timeout" : strerror(-rc),
			a.errbuf[0] ? ": " : "", a.errbuf);
		return rc;
	}
	rc = s3_do(s, &b);
	if (rc != -EEXIST) {
		(void)s3_remove(&s->base, name);
		snprintf(err, errsize, "remote=s3://%s: %s does not refuse a "
			"second PUT with If-None-Match: * (HTTP %ld): objfs "
			"cannot fence a stale writer without it", s->c.bucket,
			s->c.endpoint, b.status);
		return rc < 0 ? rc : -ENOTSUP;
	}
	c.if_match = a.etag;
	rc = s3_do(s, &c);
	if (rc == -EEXIST) {
		s->etag_bare = 1;
		c.if_match = match_tag(s, a.etag, bare, sizeof(bare));
		rc = s3_do(s, &c);
	}
	(void)s3_remove(&s->base, name);
	if (rc < 0) {
		snprintf(err, errsize, "remote=s3://%s: %s does not take "
			"If-Match on an object's current ETag (HTTP %ld): objfs "
			"cannot swap its head safely without it", s->c.bucket,
			s->c.endpoint, c.status);
		return rc == -EEXIST ? -ENOTSUP : rc;
	}
	return 0;
}

static void
s3_close(struct objfs_remote *base)
{
	struct s3 *s = S3(base);

	s3_engine_stop(s);
	pthread_mutex_destroy(&s->head_mu);
	free(s);
}

int
objfs_s3_connect(const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize)
{
	struct s3 *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->base.ops = &s3_ops;
	rc = objfs_s3_config_load(cfg, &s->c, err, errsize);
	if (rc < 0) {
		free(s);
		return rc;
	}
	s->timeout_s = cfg->timeout_s ? cfg->timeout_s : OBJFS_REMOTE_TIMEOUT;
	snprintf(s->userpwd, sizeof(s->userpwd), "%s:%s", s->c.key_id,
		s->c.secret);
	snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:%s:s3", s->c.region);
	if (s->c.token[0])
		snprintf(s->token_hdr, sizeof(s->token_hdr),
			"x-amz-security-token: %s", s->c.token);
	pthread_mutex_init(&s->head_mu, NULL);
	srandom((unsigned)time(NULL) ^ (unsigned)getpid());
	rc = s3_engine_start(s, err, errsize);
	if (rc == 0)
		rc = probe(s, err, errsize);
	if (rc < 0) {
		s3_close(&s->base);
		return rc;
	}
	objfs_log(OBJFS_LOG_INFO, "s3: s3://%s%s%s at %s (%s-style, region %s, "
		"credentials from %s)", s->c.bucket, s->c.prefix[0] ? "/" : "",
		s->c.prefix, s->c.endpoint, s->c.path_style ? "path" :
		"virtual-hosted", s->c.region, s->c.source);
	*out = &s->base;
	return 0;
}

static const struct objfs_remote_ops s3_ops = {
	.kind = "s3",
	.close = s3_close,
	.status = s3_status,
	.put = s3_put,
	.create = s3_create,
	.get = s3_get,
	.stat = s3_stat,
	.remove = s3_remove,
	.hold = objfs_s3_hold,
	.hold_renew = objfs_s3_hold_renew,
	.release = objfs_s3_release,
	.holder = objfs_s3_holder,
	.break_ = objfs_s3_break,
	.list = s3_list,
	.list_prefix = list_under,
	.age_ver = s3_age_ver,
	.remove_at = s3_remove_at,
	.get_all = s3_get_all,
	.chunk_put = s3_chunk_put,
	.chunk_get = s3_chunk_get,
	.log_put = s3_log_put,
	.log_get = s3_log_get,
	.head_get = s3_head_get,
	.head_put = s3_head_put,
	.puts_new = objfs_s3_puts_new,
	.puts_add = objfs_s3_puts_add,
	.puts_wait = objfs_s3_puts_wait,
	.puts_result = objfs_s3_puts_result,
	.puts_counts = objfs_s3_puts_counts,
	.puts_free = objfs_s3_puts_free,
	.fetch_start = objfs_s3_fetch_start,
	.fetch_done = objfs_s3_fetch_done,
	.fetch_take = objfs_s3_fetch_take,
	.fetch_free = objfs_s3_fetch_free,
};

#else	/* !HAVE_S3 */

int
objfs_s3_connect(const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize)
{
	*out = NULL;
	snprintf(err, errsize, "remote=%s: this objfs was built without "
		"libcurl (install libcurl4-openssl-dev and libexpat1-dev, "
		"configure and build again)", cfg->spec);
	return -ENOTSUP;
}

#endif
