/* SPDX-License-Identifier: MIT */
/*
 * s3.h - objfs's client of an S3 service (AWS, Ceph's gateway, others): a
 * store behind the table of src/remote.h (-o remote=s3://BUCKET[/PREFIX]).
 *
 * Requests are signed with SigV4 by libcurl (CURLOPT_AWS_SIGV4) and sent
 * many at once over reused connections (one curl multi handle, driven by
 * a thread of its own).  What needs atomicity uses S3's conditional
 * writes: a log record, a chunk or a hold made only if absent
 * (If-None-Match: *), the head and a hold replaced only at the version
 * read (If-Match on its ETag).  A hold's age is the service's own clock
 * (its Date against the hold's Last-Modified), never this machine's.
 * S3 has no watch, notify or omap: shared mode stays on the pool.
 *
 * Built only where libcurl and expat are (configure: HAVE_S3); without
 * them, objfs_s3_connect() says so.
 */
#ifndef OBJFS_S3_H
#define OBJFS_S3_H

#include <stddef.h>

#include "src/remote.h"

/* What -o remote=s3://... and the environment say, resolved the way the
 * AWS tools do (doc/design.md, "An S3 bucket as the durable home"). */
struct objfs_s3_config {
	char bucket[64];
	char prefix[512];	/* "" or "a/b" (no slash at either end) */
	char endpoint[512];	/* scheme://host[:port], no slash at the end */
	char region[64];
	char key_id[128];
	char secret[256];
	char token[4096];	/* a session token, or "" */
	int path_style;		/* 1: endpoint/bucket/key; 0: bucket.host/key */
	char ca_bundle[1024];	/* AWS_CA_BUNDLE or the profile's ca_bundle:
				 * the CAs to check HTTPS with ("": the
				 * system's) */
	char source[160];	/* where the credentials came from */
};

/* Split @spec ("s3://BUCKET[/PREFIX]"): 0, or -EINVAL with a message in
 * @err. */
int objfs_s3_parse(const char *spec, char bucket[64], char prefix[512],
		char *err, size_t errsize);

/* Fill @c from @cfg (spec, endpoint, addressing), the environment
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
 * AWS_REGION, AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL,
 * AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE,
 * AWS_CA_BUNDLE) and the
 * files (~/.aws/credentials, ~/.aws/config): 0, or -errno with what is
 * missing or wrong in @err. */
int objfs_s3_config_load(const struct objfs_remote_config *cfg,
		struct objfs_s3_config *c, char *err, size_t errsize);

/* Connect: resolve the configuration, check that the bucket answers and
 * that its conditional writes work (refused otherwise: no fencing
 * without them).  0, or -errno with what went wrong in @err. */
int objfs_s3_connect(const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize);

#endif
