/* SPDX-License-Identifier: MIT */
/*
 * s3_int.h - what the S3 client's files share: the connection (store.c,
 * the table's calls; aio.c, the puts and fetches in flight; hold.c, the
 * hold on conditional writes) and its requests (http.c, the engine: one
 * curl multi handle and the thread that drives it; xml.c, the answers
 * that are XML).  Only they include it, and only where libcurl is
 * (HAVE_S3).
 */
#ifndef OBJFS_S3_INT_H
#define OBJFS_S3_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <curl/curl.h>

#include "src/s3/s3.h"

#define S3_NAME_MAX	128	/* an object's name under the prefix */
#define S3_ETAG_MAX	96

/* The request counters of the status file (remote_s3_*). */
enum { S3_GET, S3_PUT, S3_HEAD, S3_DELETE, S3_LIST, S3_POST, S3_KINDS };

struct s3 {
	struct objfs_remote base;	/* its table: store.c's s3_ops */
	struct objfs_s3_config c;
	unsigned timeout_s;
	char userpwd[400];		/* KEY:SECRET for libcurl */
	char sigv4[100];		/* aws:amz:REGION:s3 */
	char token_hdr[4200];		/* x-amz-security-token: ..., or "" */
	/* If-Match wants the ETag unquoted (Ceph's gateway), found at
	 * connect (store.c, probe). */
	int etag_bare;

	/* The engine (http.c), under mu: requests waiting for the thread
	 * (a retry until its time), and the count in the multi handle.
	 * done_cv: a request finished (s3_wait). */
	CURLM *multi;
	pthread_t thread;
	int started, stop;
	pthread_mutex_t mu;
	pthread_cond_t done_cv;
	struct s3_req *waiting;
	unsigned active;

	/* The head's ETag as last read or written (store.c), under
	 * head_mu: the version the table hands out is its hash. */
	pthread_mutex_t head_mu;
	char head_etag[S3_ETAG_MAX];
	uint64_t head_ver;

	_Atomic uint64_t nreq[S3_KINDS], retries, failures;
	_Atomic uint64_t bytes_up, bytes_down;
};

/* One request and its answer. */
struct s3_req {
	/* Asked: the method, the object (NULL: the bucket itself), the
	 * query (its parameters sorted by name, encoded), conditions, a
	 * range [lo, hi] of bytes, the body to send. */
	const char *method;		/* GET PUT HEAD DELETE POST */
	const char *name;
	const char *query;
	const char *if_match;		/* an ETag as the service gave it */
	int if_none_match;		/* If-None-Match: * */
	int ranged;
	uint64_t lo, hi;
	const void *body;
	size_t body_len;
	const char *meta;		/* x-amz-meta-objfs-sums, or NULL */
	/* A chunk's body goes UNSIGNED-PAYLOAD (named by its content,
	 * verified by its sums when read); any other body is signed with
	 * its SHA-256 (@sha, made by s3_submit). */
	int chunk;
	char sha[65];
	/* Answered by then at the latest (monotonic ns, 0: the timeout):
	 * a request a callback sends on for a system call (aio.c) keeps
	 * that call's deadline, which the engine's thread does not know. */
	uint64_t not_after;
	/* Where the answer's body goes: @out, @cap bytes (more is counted
	 * in @over, not kept), or with @grow a buffer of its own (@out,
	 * malloc'd: the caller frees it). */
	void *out;
	size_t cap;
	int grow;

	/* The answer. */
	long status;			/* HTTP status, 0: none came */
	CURLcode cerr;
	size_t len;			/* body bytes kept */
	size_t over;			/* body bytes beyond @cap */
	char etag[S3_ETAG_MAX];
	uint64_t clen, total;		/* Content-Length; a range's total */
	int have_clen, have_total;
	time_t last_modified, date;
	char meta_got[80];		/* x-amz-meta-objfs-sums */
	char code[64];			/* an error's <Code> */
	char errbuf[CURL_ERROR_SIZE];

	/* The engine's. */
	void (*done)(struct s3_req *q, void *arg);	/* in the engine */
	void *done_arg;
	CURL *easy;
	struct curl_slist *hdrs;
	size_t sent;
	char errxml[512];
	size_t errlen;
	uint64_t deadline, not_before;
	unsigned tries;
	int finished;
	struct s3_req *next;
};

/* http.c */
int s3_engine_start(struct s3 *s, char *err, size_t errsize);
void s3_engine_stop(struct s3 *s);
/* Send @q (its answer fields cleared), tried again on a transport error,
 * 429 or 5xx with backoff and jitter until the connection's timeout;
 * @q->done (may be NULL) runs in the engine's thread when it finished. */
void s3_submit(struct s3 *s, struct s3_req *q);
/* sha256.c: the SHA-256 of @len bytes of @buf, in lower-case hex. */
void s3_sha256_hex(const void *buf, size_t len, char hex[65]);
/* Wait for @q: its errno (s3_errno). */
int s3_wait(struct s3 *s, struct s3_req *q);
int s3_do(struct s3 *s, struct s3_req *q);
/* 0 for 2xx; -ENOENT 404, -EEXIST 412 (the caller says what a failed
 * condition means), -EACCES 401/403, -ETIMEDOUT for what was tried until
 * the timeout, -EINVAL other 4xx, -EIO else. */
int s3_errno(const struct s3_req *q);
/* Undo what an answer filled in, for a request sent again. */
void s3_req_reset(struct s3_req *q);

/* xml.c: the names (and sizes) of a ListObjectsV2 answer: @cb for each
 * key; *@next the continuation token ("" when this was the last page).
 * -EPROTO when it is not one. */
int s3_xml_list(const char *xml, size_t len,
		int (*cb)(void *arg, const char *key, uint64_t size),
		void *arg, char *next, size_t nextsize);

/* hold.c: the hold (src/remote.h says what each does). */
int objfs_s3_hold(struct objfs_remote *base, const char *name,
		const char *holder, unsigned seconds, char *who, size_t whosize);
int objfs_s3_hold_renew(struct objfs_remote *base, const char *name,
		const char *holder, unsigned seconds, int shared);
int objfs_s3_release(struct objfs_remote *base, const char *name,
		const char *holder);
int objfs_s3_holder(struct objfs_remote *base, const char *name,
		char *client, size_t clen, char *cookie, size_t klen);
int objfs_s3_break(struct objfs_remote *base, const char *name,
		const char *client, const char *cookie);

/* aio.c: the puts and fetches in flight. */
int objfs_s3_puts_new(struct objfs_remote *base, unsigned window,
		struct objfs_remote_puts **out);
int objfs_s3_puts_add(struct objfs_remote_puts *base, const char *name,
		const void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab, int look);
int objfs_s3_puts_wait(struct objfs_remote_puts *base);
int objfs_s3_puts_result(const struct objfs_remote_puts *base, size_t k);
void objfs_s3_puts_counts(const struct objfs_remote_puts *base,
		size_t *looks, size_t *at_once);
void objfs_s3_puts_free(struct objfs_remote_puts *base);
int objfs_s3_fetch_start(struct objfs_remote *base, const char *name,
		uint32_t len, struct objfs_remote_fetch **out);
int objfs_s3_fetch_done(const struct objfs_remote_fetch *base);
int objfs_s3_fetch_take(struct objfs_remote_fetch *base, void *buf,
		unsigned shift, uint64_t csum);
void objfs_s3_fetch_free(struct objfs_remote_fetch *base);

#endif
