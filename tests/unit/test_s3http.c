/* SPDX-License-Identifier: MIT */
/*
 * test_s3http.c - the S3 engine's retries (src/s3/http.c) against a
 * server in this process that answers from a script: what is sent again
 * and what is final.  AWS answers a conditional write 409
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
			char method[8] = "", out[512];
			int st;
			const char *body;

			if (read_request(fd, method, sizeof(method)) < 0)
				break;
			memcpy(sv->methods[sv->seen & 7], method, 8);
			st = sv->script[sv->seen++];
			body = st == 409 ? "<?xml version=\"1.0\"?><Error><Code>"
				"ConditionalRequestConflict</Code></Error>" :
			       st == 412 ? "<?xml version=\"1.0\"?><Error><Code>"
				"PreconditionFailed</Code></Error>" : "";
			snprintf(out, sizeof(out), "HTTP/1.1 %d X\r\n"
				"ETag: \"0123\"\r\nContent-Length: %zu\r\n\r\n%s",
				st, strlen(body), body);
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
	struct objfs_remote_config cfg = { .spec = "s3://bkt/p" };
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(conflict_retried),
		cmocka_unit_test(conflict_retried_if_match),
		cmocka_unit_test(conflict_final_unconditional),
		cmocka_unit_test(conflict_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
