/* SPDX-License-Identifier: MIT */
/*
 * test_s3http.c - the S3 engine's retries (src/s3/http.c) against a
 * server in this process that answers from a script: what is sent again
 * and what is final; and how old a hold is (src/s3/hold.c), from the
 * service's Date and Last-Modified, read or not.  AWS answers a conditional write 409
 * (ConditionalRequestConflict) while another conditional write of the
 * same key is under way (two equal chunks put at once), and says to send
 * it again; Ceph's gateway never does, so only a scripted server shows
 * it.
 */
#include <config.h>

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "src/s3/s3_int.h"

/* The server: each request read whole (headers, then Content-Length
 * bytes) and answered with the next status of @script, on connections
 * kept open. */
struct server {
	int lfd, port;
	const int *script;
	/* Per answer, when set: headers to add (each ending in \r\n), and
	 * the body of a 2xx. */
	const char *const *headers, *const *bodies;
	int n, seen;
	char methods[8][8];
	pthread_t th;
};

static int
read_request(int fd, char *method, size_t msize)
{
	char buf[8192];
	size_t len = 0;
	char *end, *cl;
	long body;

	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (r <= 0)
			return -1;
		len += (size_t)r;
		buf[len] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) != NULL)
			break;
	}
	sscanf(buf, "%7s", method);
	(void)msize;
	cl = strcasestr(buf, "\r\ncontent-length:");
	body = cl ? strtol(cl + 17, NULL, 10) : 0;
	body -= (long)(len - (size_t)(end + 4 - buf));
	while (body > 0) {
		ssize_t r = read(fd, buf, sizeof(buf));

		if (r <= 0)
			return -1;
		body -= r;
	}
	return 0;
}

static void *
serve(void *arg)
{
	struct server *sv = arg;

	while (sv->seen < sv->n) {
		int fd = accept(sv->lfd, NULL, NULL);

		if (fd < 0)
			return NULL;
		while (sv->seen < sv->n) {
			char method[8] = "", out[1024];
			int st, k;
			const char *body;

			if (read_request(fd, method, sizeof(method)) < 0)
				break;
			memcpy(sv->methods[sv->seen & 7], method, 8);
			k = sv->seen;
			st = sv->script[sv->seen++];
			body = st == 409 ? "<?xml version=\"1.0\"?><Error><Code>"
				"ConditionalRequestConflict</Code></Error>" :
			       st == 412 ? "<?xml version=\"1.0\"?><Error><Code>"
				"PreconditionFailed</Code></Error>" :
			       sv->bodies ? sv->bodies[k] : "";
			snprintf(out, sizeof(out), "HTTP/1.1 %d X\r\n"
				"ETag: \"0123\"\r\n%sContent-Length: %zu\r\n\r\n%s",
				st, sv->headers ? sv->headers[k] : "",
				strlen(body), body);
			if (write(fd, out, strlen(out)) < 0)
				break;
		}
		close(fd);
	}
	return NULL;
}

static void
server_start(struct server *sv, const int *script, int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);

	memset(sv, 0, sizeof(*sv));
	sv->script = script;
	sv->n = n;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sv->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(sv->lfd >= 0);
	assert_int_equal(bind(sv->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(sv->lfd, 8), 0);
	assert_int_equal(getsockname(sv->lfd, (struct sockaddr *)&a, &alen), 0);
	sv->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&sv->th, NULL, serve, sv), 0);
}

static void
server_stop(struct server *sv)
{
	shutdown(sv->lfd, SHUT_RDWR);
	close(sv->lfd);
	pthread_join(sv->th, NULL);
}

/* A client of that server, as objfs_s3_connect makes one (no probe). */
static struct s3 *
client(int port, unsigned timeout_s)
{
	struct objfs_remote_config cfg = { .spec = "s3://bkt/p", .insecure = 1 };
	struct s3 *s = calloc(1, sizeof(*s));
	char url[64], err[256];

	assert_non_null(s);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	cfg.endpoint = url;
	setenv("AWS_ACCESS_KEY_ID", "k", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "s", 1);
	setenv("AWS_REGION", "us-east-1", 1);
	assert_int_equal(objfs_s3_config_load(&cfg, &s->c, err, sizeof(err)), 0);
	s->timeout_s = timeout_s;
	snprintf(s->userpwd, sizeof(s->userpwd), "k:s");
	snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:us-east-1:s3");
	assert_int_equal(s3_engine_start(s, err, sizeof(err)), 0);
	return s;
}

static void
client_free(struct s3 *s)
{
	s3_engine_stop(s);
	free(s);
}

/* 409 on a conditional write: sent again, and the second answer (412:
 * the key is there now) is the result. */
static void
conflict_retried(void **state)
{
	static const int script[] = { 409, 412 };
	struct server sv;
	struct s3 *s;
	struct s3_req q = { .method = "PUT", .name = "c.x", .body = "abc",
		.body_len = 3, .if_none_match = 1 };

	(void)state;
	server_start(&sv, script, 2);
	s = client(sv.port, 10);
	assert_int_equal(s3_do(s, &q), -EEXIST);
	assert_int_equal(atomic_load(&s->retries), 1);
	client_free(s);
	server_stop(&sv);	/* joined: what it saw can be read */
	assert_int_equal(sv.seen, 2);
	assert_string_equal(sv.methods[1], "PUT");
}

/* The same for a head swap (If-Match): 409, then 200. */
static void
conflict_retried_if_match(void **state)
{
	static const int script[] = { 409, 409, 200 };
	struct server sv;
	struct s3 *s;
	struct s3_req q = { .method = "PUT", .name = "objfs.head",
		.body = "h", .body_len = 1, .if_match = "\"0123\"" };

	(void)state;
	server_start(&sv, script, 3);
	s = client(sv.port, 10);
	assert_int_equal(s3_do(s, &q), 0);
	assert_int_equal(atomic_load(&s->retries), 2);
	client_free(s);
	server_stop(&sv);
	assert_int_equal(sv.seen, 3);
}

/* 409 on a plain write is the service's final word: not sent again. */
static void
conflict_final_unconditional(void **state)
{
	static const int script[] = { 409, 200 };
	struct server sv;
	struct s3 *s;
	struct s3_req q = { .method = "PUT", .name = "x", .body = "abc",
		.body_len = 3 };

	(void)state;
	server_start(&sv, script, 2);
	s = client(sv.port, 10);
	assert_int_equal(s3_do(s, &q), -EINVAL);
	assert_int_equal(atomic_load(&s->retries), 0);
	client_free(s);		/* the server waits for no second request */
	server_stop(&sv);
	assert_int_equal(sv.seen, 1);
}

/* A conflict that never settles ends with ETIMEDOUT at the deadline. */
static void
conflict_bounded(void **state)
{
	static const int script[64] = {
		409, 409, 409, 409, 409, 409, 409, 409, 409, 409, 409, 409,
		409, 409, 409, 409, 409, 409, 409, 409, 409, 409, 409, 409,
		409, 409, 409, 409, 409, 409, 409, 409, 409, 409, 409, 409,
		409, 409, 409, 409, 409, 409, 409, 409, 409, 409, 409, 409,
		409, 409, 409, 409, 409, 409, 409, 409, 409, 409, 409, 409,
		409, 409, 409, 409,
	};
	struct server sv;
	struct s3 *s;
	struct s3_req q = { .method = "PUT", .name = "c.y", .body = "abc",
		.body_len = 3, .if_none_match = 1 };

	(void)state;
	server_start(&sv, script, 64);
	s = client(sv.port, 1);
	assert_int_equal(s3_do(s, &q), -ETIMEDOUT);
	client_free(s);
	server_stop(&sv);
	assert_true(sv.seen >= 2 && sv.seen < 64);
}

#define HOLD_BODY	"objfs-hold 1\nholder h:/d#pid 7\nseconds 30\nwrite 1\n"

/* The holder as a hold read with @headers (its Date, Last-Modified)
 * says: 0 and @who when live, -ENOENT when lapsed. */
static int
holder_with(const char *headers, char *who, size_t size)
{
	static const int script[] = { 200 };
	const char *hdrs[] = { headers }, *bodies[] = { HOLD_BODY };
	struct server sv;
	struct s3 *s;
	char client_id[16];
	int rc;

	server_start(&sv, script, 1);
	sv.headers = hdrs;
	sv.bodies = bodies;
	s = client(sv.port, 10);
	rc = objfs_s3_holder(&s->base, "objfs.hold", client_id,
		sizeof(client_id), who, size);
	client_free(s);
	server_stop(&sv);
	return rc;
}

/* A hold's age is the service's Date less its Last-Modified: 10 s of a
 * 30 s hold is live, 60 s has lapsed. */
static void
hold_age_from_service(void **state)
{
	char who[256];

	(void)state;
	assert_int_equal(holder_with("Date: Mon, 07 Dec 2026 10:00:10 GMT\r\n"
		"Last-Modified: Mon, 07 Dec 2026 10:00:00 GMT\r\n", who,
		sizeof(who)), 0);
	assert_string_equal(who, "h:/d#pid 7");
	assert_int_equal(holder_with("Date: Mon, 07 Dec 2026 10:01:00 GMT\r\n"
		"Last-Modified: Mon, 07 Dec 2026 10:00:00 GMT\r\n", who,
		sizeof(who)), -ENOENT);
}

/* A Last-Modified (or Date) that cannot be read leaves the age unknown:
 * the hold is live, never taken (issue 47: curl_getdate's -1 made every
 * such hold look lapsed). */
static void
hold_age_unreadable(void **state)
{
	char who[256];

	(void)state;
	assert_int_equal(holder_with("Date: Mon, 07 Dec 2026 10:00:10 GMT\r\n"
		"Last-Modified: yesterday-ish\r\n", who, sizeof(who)), 0);
	assert_string_equal(who, "h:/d#pid 7");
	assert_int_equal(holder_with("Date: soon\r\n"
		"Last-Modified: Mon, 07 Dec 2026 10:00:00 GMT\r\n", who,
		sizeof(who)), 0);
	assert_int_equal(holder_with("", who, sizeof(who)), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(conflict_retried),
		cmocka_unit_test(conflict_retried_if_match),
		cmocka_unit_test(conflict_final_unconditional),
		cmocka_unit_test(conflict_bounded),
		cmocka_unit_test(hold_age_from_service),
		cmocka_unit_test(hold_age_unreadable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
