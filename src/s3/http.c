/* SPDX-License-Identifier: MIT */
/*
 * http.c - the S3 client's engine (s3_int.h): every request goes through
 * one curl multi handle, driven by a thread of its own, so that many are
 * in flight over connections that are kept and reused.  libcurl signs
 * each with SigV4 (CURLOPT_AWS_SIGV4; the payload is not hashed,
 * "UNSIGNED-PAYLOAD": the chunks carry their own sums, checked on every
 * read).
 *
 * A request that got no answer, or 429 or 5xx (503 SlowDown: the service
 * asks for less), or a conditional write answered 409 (AWS's
 * ConditionalRequestConflict: another conditional write of the same key
 * was under way, as two equal chunks put at once are; AWS says to send
 * it again, and the second try is answered by the condition), is sent
 * again after a pause drawn at random up to
 * 50 ms * 2^tries (at most 2 s: "full jitter"), while a try still has
 * 100 ms before the deadline (the connection's timeout from the first
 * try, or what the system call has left: src/base/deadline.h); each try
 * is given what is left; then it fails with -ETIMEDOUT.  A request
 * is never sent again after any other answer.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "src/base/clock.h"
#include "src/base/deadline.h"
#include "src/base/log.h"
#include "src/base/sync.h"
#include "src/s3/s3_int.h"

#define BACKOFF_BASE_MS	50u
#define BACKOFF_MAX_MS	2000u
#define POLL_MS		100
#define TRY_MIN_MS	100u		/* the least a try is given */

/* ---- building a request ------------------------------------------------- */

/* @s RFC 3986-encoded onto @out (its unreserved characters and, with
 * @slash, '/' as they are): what SigV4's canonical URI wants. */
static int
enc(char *out, size_t size, const char *s, int slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(out);

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9') || c == '-' || c == '_' ||
			c == '.' || c == '~' || (slash && c == '/');

		if (n + 4 >= size)
			return -ENAMETOOLONG;
		if (keep) {
			out[n++] = (char)c;
		} else {
			out[n++] = '%';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		}
	}
	out[n] = '\0';
	return 0;
}

static int
req_url(struct s3 *s, const struct s3_req *q, char *url, size_t size)
{
	const char *host = strstr(s->c.endpoint, "://") + 3;
	int rc = 0;

	if (s->c.path_style)
		snprintf(url, size, "%s/%s/", s->c.endpoint, s->c.bucket);
	else
		snprintf(url, size, "%.*s%s.%s/", (int)(host - s->c.endpoint),
			s->c.endpoint, s->c.bucket, host);
	if (q->name && s->c.prefix[0]) {
		rc = enc(url, size, s->c.prefix, 1);
		if (rc == 0)
			rc = enc(url, size, "/", 1);
	}
	if (rc == 0 && q->name)
		rc = enc(url, size, q->name, 1);
	if (rc == 0 && q->query && q->query[0]) {
		if (strlen(url) + strlen(q->query) + 2 > size)
			return -ENAMETOOLONG;
		strcat(url, "?");
		strcat(url, q->query);
	}
	return rc;
}

static size_t
on_body(char *p, size_t sz, size_t n, void *arg)
{
	struct s3_req *q = arg;
	size_t len = sz * n;
	long status = 0;

	curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 300) {
		/* An error's XML, not the object's bytes. */
		size_t k = len < sizeof(q->errxml) - 1 - q->errlen ? len :
			sizeof(q->errxml) - 1 - q->errlen;

		memcpy(q->errxml + q->errlen, p, k);
		q->errlen += k;
		q->errxml[q->errlen] = '\0';
		return len;
	}
	if (q->grow) {
		if (q->len + len > q->cap) {
			size_t cap = q->cap ? q->cap : 4096;
			void *m;

			while (cap < q->len + len)
				cap *= 2;
			m = realloc(q->out, cap);
			if (!m)
				return 0;	/* fails the transfer */
			q->out = m;
			q->cap = cap;
		}
		memcpy((char *)q->out + q->len, p, len);
		q->len += len;
		return len;
	}
	if (q->len < q->cap) {
		size_t k = len < q->cap - q->len ? len : q->cap - q->len;

		memcpy((char *)q->out + q->len, p, k);
		q->len += k;
		q->over += len - k;
	} else {
		q->over += len;
	}
	return len;
}

static size_t
on_header(char *p, size_t sz, size_t n, void *arg)
{
	struct s3_req *q = arg;
	size_t len = sz * n;
	char line[512], *v;

	if (len >= sizeof(line))
		return len;
	memcpy(line, p, len);
	line[len] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	v = strchr(line, ':');
	if (!v)
		return len;
	*v++ = '\0';
	while (*v == ' ')
		v++;
	if (strcasecmp(line, "ETag") == 0) {
		snprintf(q->etag, sizeof(q->etag), "%s", v);
	} else if (strcasecmp(line, "Content-Length") == 0) {
		q->clen = strtoull(v, NULL, 10);
		q->have_clen = 1;
	} else if (strcasecmp(line, "Content-Range") == 0) {
		char *slash = strchr(v, '/');

		if (slash && slash[1] != '*') {
			q->total = strtoull(slash + 1, NULL, 10);
			q->have_total = 1;
		}
	} else if (strcasecmp(line, "Last-Modified") == 0) {
		/* curl_getdate says -1 for what it cannot read: 0, unknown
		 * (an age of -1 would make every hold look lapsed). */
		time_t t = curl_getdate(v, NULL);

		q->last_modified = t > 0 ? t : 0;
	} else if (strcasecmp(line, "Date") == 0) {
		time_t t = curl_getdate(v, NULL);

		q->date = t > 0 ? t : 0;
	} else if (strcasecmp(line, "x-amz-meta-objfs-sums") == 0) {
		snprintf(q->meta_got, sizeof(q->meta_got), "%s", v);
	}
	return len;
}

static size_t
on_send(char *p, size_t sz, size_t n, void *arg)
{
	struct s3_req *q = arg;
	size_t k = q->body_len - q->sent;

	if (k > sz * n)
		k = sz * n;
	memcpy(p, (const char *)q->body + q->sent, k);
	q->sent += k;
	return k;
}

/* Add header @name (with @v, its value; NULL: @name is the whole line). */
static int
hdr(struct s3_req *q, const char *name, const char *v)
{
	char line[4300];
	struct curl_slist *l;

	if (v)
		snprintf(line, sizeof(line), "%s: %s", name, v);
	else
		snprintf(line, sizeof(line), "%s", name);
	l = curl_slist_append(q->hdrs, line);
	if (!l)
		return -ENOMEM;
	q->hdrs = l;
	return 0;
}

/* @q's easy handle, ready for the multi handle: 0 or -errno. */
static int
req_easy(struct s3 *s, struct s3_req *q, uint64_t now)
{
	char url[2048], range[64];
	uint64_t left_ms = q->deadline > now ?
		(q->deadline - now) / 1000000u : 0;
	CURL *e = curl_easy_init();
	int rc = 0;

	if (!e)
		return -ENOMEM;
	q->easy = e;
	q->hdrs = NULL;
	q->sent = 0;
	rc = req_url(s, q, url, sizeof(url));
	if (rc < 0)
		return rc;
	if ((rc = hdr(q, "x-amz-content-sha256", q->sha[0] ? q->sha :
			"UNSIGNED-PAYLOAD")) < 0 ||
	    (s->token_hdr[0] && (rc = hdr(q, s->token_hdr, NULL)) < 0) ||
	    (q->if_match && (rc = hdr(q, "If-Match", q->if_match)) < 0) ||
	    (q->if_none_match && (rc = hdr(q, "If-None-Match", "*")) < 0) ||
	    (q->meta && (rc = hdr(q, "x-amz-meta-objfs-sums", q->meta)) < 0))
		return rc;
	if (q->ranged) {
		snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64,
			q->lo, q->hi);
		if ((rc = hdr(q, "Range", range)) < 0)
			return rc;
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, q);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(e, CURLOPT_USERPWD, s->userpwd);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, q->hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, q);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, q);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, q->errbuf);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(left_ms > TRY_MIN_MS ?
		left_ms : TRY_MIN_MS));
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(left_ms >
		TRY_MIN_MS ? (left_ms < 10000 ? left_ms : 10000) : TRY_MIN_MS));
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	if (s->c.ca_bundle[0])
		curl_easy_setopt(e, CURLOPT_CAINFO, s->c.ca_bundle);
	/* A body goes at once, not after a 100 Continue (an "Expect:" to
	 * remove the header would be signed, empty, and break SigV4). */
	curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
	if (strcmp(q->method, "HEAD") == 0) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (strcmp(q->method, "PUT") == 0) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE,
			(curl_off_t)q->body_len);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, on_send);
		curl_easy_setopt(e, CURLOPT_READDATA, q);
	} else if (strcmp(q->method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, q->body ? q->body : "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
			(curl_off_t)q->body_len);
	} else if (strcmp(q->method, "GET") != 0) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, q->method);
	}
	return 0;
}

static void
req_drop_easy(struct s3_req *q)
{
	if (q->easy)
		curl_easy_cleanup(q->easy);
	curl_slist_free_all(q->hdrs);
	q->easy = NULL;
	q->hdrs = NULL;
}

void
s3_req_reset(struct s3_req *q)
{
	q->status = 0;
	q->cerr = CURLE_OK;
	q->len = q->over = 0;
	q->etag[0] = q->meta_got[0] = q->code[0] = q->errbuf[0] = '\0';
	q->clen = q->total = 0;
	q->have_clen = q->have_total = 0;
	q->last_modified = q->date = 0;
	q->errxml[0] = '\0';
	q->errlen = 0;
}

/* ---- the engine --------------------------------------------------------- */

static int
kind_of(const struct s3_req *q)
{
	if (strcmp(q->method, "PUT") == 0)
		return S3_PUT;
	if (strcmp(q->method, "HEAD") == 0)
		return S3_HEAD;
	if (strcmp(q->method, "DELETE") == 0)
		return S3_DELETE;
	if (strcmp(q->method, "POST") == 0)
		return S3_POST;
	return q->query && strstr(q->query, "list-type=") ? S3_LIST : S3_GET;
}

static int
retryable(const struct s3_req *q)
{
	if (q->cerr != CURLE_OK)
		return q->cerr != CURLE_WRITE_ERROR &&
			q->cerr != CURLE_OUT_OF_MEMORY &&
			q->cerr != CURLE_URL_MALFORMAT;
	return q->status == 429 || q->status >= 500 ||
		(q->status == 409 && (q->if_none_match || q->if_match));
}

static uint64_t
jitter_ms(unsigned tries)
{
	uint64_t cap = BACKOFF_BASE_MS << (tries < 6 ? tries : 6);

	if (cap > BACKOFF_MAX_MS)
		cap = BACKOFF_MAX_MS;
	return (uint64_t)random() % (cap + 1);
}

/* @q's transfer ended (s->mu not held). */
static void
req_ended(struct s3 *s, struct s3_req *q, CURLcode res)
{
	uint64_t now = objfs_mono_ns();
	char *c;

	q->cerr = res;
	curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->status);
	curl_multi_remove_handle(s->multi, q->easy);
	req_drop_easy(q);
	atomic_fetch_add(&s->nreq[kind_of(q)], 1);
	if (res == CURLE_OK && q->status < 300) {
		if (strcmp(q->method, "PUT") == 0 ||
		    strcmp(q->method, "POST") == 0)
			atomic_fetch_add(&s->bytes_up, q->body_len);
		else
			atomic_fetch_add(&s->bytes_down, q->len);
	}
	if ((c = strstr(q->errxml, "<Code>")) != NULL)
		snprintf(q->code, sizeof(q->code), "%.*s",
			(int)strcspn(c + 6, "<"), c + 6);
	/* Sent again only if the try after the pause still has TRY_MIN_MS
	 * before the deadline (its CURLOPT_TIMEOUT_MS is what is left, at
	 * least that): no try runs past it (issue 47: retries, each given
	 * at least a second, ran up to 3 s past). */
	if (retryable(q) && now + TRY_MIN_MS * 1000000u <= q->deadline) {
		uint64_t pause = jitter_ms(q->tries++) * 1000000u;

		if (now + pause + TRY_MIN_MS * 1000000u > q->deadline)
			pause = q->deadline - TRY_MIN_MS * 1000000u - now;

		atomic_fetch_add(&s->retries, 1);
		if (q->tries == 3 || q->tries % 20 == 0)
			objfs_log(OBJFS_LOG_WARNING, "s3: %s %s: %s; trying "
				"again (%u tries so far)", q->method,
				q->name ? q->name : "(bucket)",
				res != CURLE_OK ? (q->errbuf[0] ? q->errbuf :
				curl_easy_strerror(res)) : q->code[0] ? q->code :
				"a server error", q->tries);
		if (q->grow) {
			free(q->out);
			q->out = NULL;
			q->cap = 0;
		}
		s3_req_reset(q);
		q->not_before = now + pause;
		pthread_mutex_lock(&s->mu);
		s->active--;
		q->next = s->waiting;
		s->waiting = q;
		pthread_mutex_unlock(&s->mu);
		return;
	}
	if (res != CURLE_OK || retryable(q))
		atomic_fetch_add(&s->failures, 1);
	if (q->done)
		q->done(q, q->done_arg);
	pthread_mutex_lock(&s->mu);
	s->active--;
	q->finished = 1;
	pthread_cond_broadcast(&s->done_cv);
	pthread_mutex_unlock(&s->mu);
}

/* Requests whose time came, into the multi handle (s->mu held); the
 * time until the next one's, in ms. */
static long
admit(struct s3 *s)
{
	uint64_t now = objfs_mono_ns(), next = 0;
	struct s3_req **pp = &s->waiting;
	long wait_ms = POLL_MS;

	while (*pp) {
		struct s3_req *q = *pp;
		int rc;

		if (q->not_before > now) {
			if (!next || q->not_before < next)
				next = q->not_before;
			pp = &q->next;
			continue;
		}
		*pp = q->next;
		s->active++;
		rc = req_easy(s, q, now);
		if (rc == 0 && curl_multi_add_handle(s->multi, q->easy) ==
		    CURLM_OK)
			continue;
		/* Cannot be sent at all: it fails now, as if answered. */
		req_drop_easy(q);
		q->cerr = CURLE_OUT_OF_MEMORY;
		snprintf(q->errbuf, sizeof(q->errbuf), "%s", rc == -ENAMETOOLONG ?
			"the URL is too long" : "out of memory");
		if (q->done) {
			pthread_mutex_unlock(&s->mu);
			q->done(q, q->done_arg);
			pthread_mutex_lock(&s->mu);
		}
		s->active--;
		q->finished = 1;
		pthread_cond_broadcast(&s->done_cv);
	}
	if (next) {
		long ms = (long)((next - now) / 1000000u) + 1;

		if (ms < wait_ms)
			wait_ms = ms;
	}
	return wait_ms;
}

static void *
engine_main(void *arg)
{
	struct s3 *s = arg;

	for (;;) {
		CURLMsg *m;
		int running, left;
		long wait_ms;

		pthread_mutex_lock(&s->mu);
		if (s->stop && !s->waiting && !s->active) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		wait_ms = admit(s);
		pthread_mutex_unlock(&s->mu);
		curl_multi_perform(s->multi, &running);
		while ((m = curl_multi_info_read(s->multi, &left)) != NULL) {
			struct s3_req *q = NULL;

			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
				(char **)&q);
			req_ended(s, q, m->data.result);
		}
		curl_multi_poll(s->multi, NULL, 0, (int)wait_ms, NULL);
	}
	return NULL;
}

int
s3_engine_start(struct s3 *s, char *err, size_t errsize)
{
	int rc;

	pthread_mutex_init(&s->mu, NULL);
	(void)objfs_cond_init(&s->done_cv);
	s->multi = curl_multi_init();
	if (!s->multi) {
		snprintf(err, errsize, "s3: cannot make a curl multi handle");
		return -ENOMEM;
	}
	/* Connections stay open for the next requests; as many at once as
	 * there are requests in flight. */
	curl_multi_setopt(s->multi, CURLMOPT_MAXCONNECTS, 256L);
	rc = pthread_create(&s->thread, NULL, engine_main, s);
	if (rc != 0) {
		curl_multi_cleanup(s->multi);
		s->multi = NULL;
		snprintf(err, errsize, "s3: cannot start its thread: %s",
			strerror(rc));
		return -rc;
	}
	s->started = 1;
	return 0;
}

void
s3_engine_stop(struct s3 *s)
{
	if (s->started) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_mutex_unlock(&s->mu);
		curl_multi_wakeup(s->multi);
		pthread_join(s->thread, NULL);
		s->started = 0;
	}
	if (s->multi)
		curl_multi_cleanup(s->multi);
	s->multi = NULL;
	pthread_cond_destroy(&s->done_cv);
	pthread_mutex_destroy(&s->mu);
}

void
s3_submit(struct s3 *s, struct s3_req *q)
{
	s3_req_reset(q);
	/* The tree's records (head, hold, log, snapshot parts) signed with
	 * their bodies: changed on the way, the service refuses them (issue
	 * 48: every body went UNSIGNED-PAYLOAD, and their own sums are
	 * unkeyed). */
	q->sha[0] = '\0';
	if (q->body && !q->chunk)
		s3_sha256_hex(q->body, q->body_len, q->sha);
	q->tries = 0;
	q->easy = NULL;
	q->hdrs = NULL;
	q->not_before = 0;
	/* The connection's timeout, or what is left of the system call's
	 * (deadline.h: on the caller's thread, here), at least a second
	 * for a request sent just before it. */
	q->deadline = objfs_mono_ns() + objfs_deadline_cap_ns(
		(uint64_t)s->timeout_s * 1000000000u, 1000000000u);
	if (q->not_after && q->not_after < q->deadline)
		q->deadline = q->not_after;
	if (q->grow) {
		q->out = NULL;
		q->cap = 0;
	}
	pthread_mutex_lock(&s->mu);
	q->finished = 0;
	q->next = s->waiting;
	s->waiting = q;
	pthread_mutex_unlock(&s->mu);
	curl_multi_wakeup(s->multi);
}

int
s3_errno(const struct s3_req *q)
{
	if (q->cerr != CURLE_OK || q->status == 0)
		return q->cerr == CURLE_OUT_OF_MEMORY ? -ENOMEM : -ETIMEDOUT;
	if (q->status < 300)
		return 0;
	switch (q->status) {
	case 404:
		return -ENOENT;
	case 412:
		return -EEXIST;
	case 401:
	case 403:
		return -EACCES;
	case 429:
		return -ETIMEDOUT;
	case 409:	/* a conditional write that never settled */
		return q->if_none_match || q->if_match ? -ETIMEDOUT : -EINVAL;
	default:
		return q->status >= 500 ? -ETIMEDOUT : q->status >= 400 ?
			-EINVAL : -EIO;
	}
}

int
s3_wait(struct s3 *s, struct s3_req *q)
{
	pthread_mutex_lock(&s->mu);
	while (!q->finished)
		pthread_cond_wait(&s->done_cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	return s3_errno(q);
}

int
s3_do(struct s3 *s, struct s3_req *q)
{
	s3_submit(s, q);
	return s3_wait(s, q);
}
