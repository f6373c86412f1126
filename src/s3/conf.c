/* SPDX-License-Identifier: MIT */
/*
 * conf.c - an S3 remote's configuration (s3.h), resolved as the AWS tools
 * resolve theirs:
 *   credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with
 *     AWS_SESSION_TOKEN), else the profile (AWS_PROFILE, else "default")
 *     in the credentials file (AWS_SHARED_CREDENTIALS_FILE, else
 *     ~/.aws/credentials), else in the config file (AWS_CONFIG_FILE, else
 *     ~/.aws/config, where it is "[profile NAME]" but for "[default]");
 *   region: AWS_REGION, AWS_DEFAULT_REGION, the profile's, us-east-1;
 *   endpoint: -o remote_endpoint=, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL,
 *     the profile's "s3 = endpoint_url", its endpoint_url, else AWS's for
 *     the region;
 *   CAs: AWS_CA_BUNDLE, the profile's ca_bundle, else the system's;
 *   addressing: -o remote_addressing=, the profile's "s3 =
 *     addressing_style", else virtual-hosted on AWS (a bucket name
 *     without dots) and path-style elsewhere (a gateway on an address).
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/s3/s3.h"

int
objfs_s3_parse(const char *spec, char bucket[64], char prefix[512],
		char *err, size_t errsize)
{
	const char *p, *slash;
	size_t n;

	bucket[0] = prefix[0] = '\0';
	if (!spec || strncmp(spec, "s3://", 5) != 0) {
		snprintf(err, errsize, "remote=%s: expected s3://BUCKET or "
			"s3://BUCKET/PREFIX", spec ? spec : "");
		return -EINVAL;
	}
	p = spec + 5;
	slash = strchr(p, '/');
	n = slash ? (size_t)(slash - p) : strlen(p);
	/* S3's rules for a bucket's name: 3 to 63 of a-z, 0-9, '.', '-',
	 * beginning and ending with a letter or a digit. */
	if (n < 3 || n > 63) {
		snprintf(err, errsize, "remote=%s: a bucket's name is 3 to 63 "
			"characters", spec);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		int edge = i == 0 || i == n - 1;

		if (!(islower((unsigned char)c) || isdigit((unsigned char)c) ||
		      (!edge && (c == '.' || c == '-')))) {
			snprintf(err, errsize, "remote=%s: a bucket's name is "
				"lower-case letters, digits, '.' and '-'", spec);
			return -EINVAL;
		}
	}
	memcpy(bucket, p, n);
	bucket[n] = '\0';
	if (slash) {
		const char *q = slash + 1;

		n = strlen(q);
		while (n && q[n - 1] == '/')
			n--;
		if (n == 0 || n >= 512 || strstr(q, "//") || q[0] == '/') {
			snprintf(err, errsize, "remote=%s: the prefix is %s", spec,
				n == 0 ? "empty" : n >= 512 ? "too long" :
				"not a path (an empty part)");
			bucket[0] = '\0';
			return -EINVAL;
		}
		/* A part "." or "..": libcurl collapses them, so the objects
		 * would be elsewhere than the prefix says (s3://b/t/../o is
		 * o/). */
		for (size_t i = 0; i < n; i++) {
			size_t e = i;

			if (i && q[i - 1] != '/')
				continue;
			while (e < n && q[e] != '/')
				e++;
			if ((e - i == 1 && q[i] == '.') ||
			    (e - i == 2 && q[i] == '.' && q[i + 1] == '.')) {
				snprintf(err, errsize, "remote=%s: a part of "
					"the prefix is '.' or '..'", spec);
				bucket[0] = '\0';
				return -EINVAL;
			}
		}
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)q[i] < 0x20 || q[i] == 0x7f) {
				snprintf(err, errsize, "remote=%s: a control "
					"character in the prefix", spec);
				bucket[0] = '\0';
				return -EINVAL;
			}
		memcpy(prefix, q, n);
		prefix[n] = '\0';
	}
	return 0;
}

/* ---- the AWS files ------------------------------------------------------ */

struct profile {
	const char *want;	/* the section's name: "default", "profile x",
				 * or "x" in the credentials file */
	int found;
	char key_id[128], secret[256], token[4096];
	char region[64], endpoint[512], s3_endpoint[512], style[16];
	char ca_bundle[1024];
};

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static void
set(char *dst, size_t size, const char *v)
{
	snprintf(dst, size, "%s", v);
}

/* Read @path's section @p->want into @p: 0 (found or not), -ENOENT when
 * the file is not there, -errno. */
static int
read_ini(const char *path, struct profile *p)
{
	char line[4608];
	int in = 0, nested = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		int indented = line[0] == ' ' || line[0] == '\t';
		char *s = trim(line), *eq, *k, *v;

		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *e = strchr(s, ']');

			if (e)
				*e = '\0';
			in = strcmp(trim(s + 1), p->want) == 0;
			p->found |= in;
			nested = 0;
			continue;
		}
		if (!in || !(eq = strchr(s, '=')))
			continue;
		*eq = '\0';
		k = trim(s);
		v = trim(eq + 1);
		if (!indented)
			nested = 0;
		if (!indented && strcmp(k, "s3") == 0 && !*v) {
			nested = 1;	/* "s3 =" and its indented settings */
			continue;
		}
		if (nested) {
			if (strcmp(k, "addressing_style") == 0)
				set(p->style, sizeof(p->style), v);
			else if (strcmp(k, "endpoint_url") == 0)
				set(p->s3_endpoint, sizeof(p->s3_endpoint), v);
		} else if (strcmp(k, "aws_access_key_id") == 0) {
			set(p->key_id, sizeof(p->key_id), v);
		} else if (strcmp(k, "aws_secret_access_key") == 0) {
			set(p->secret, sizeof(p->secret), v);
		} else if (strcmp(k, "aws_session_token") == 0) {
			set(p->token, sizeof(p->token), v);
		} else if (strcmp(k, "region") == 0) {
			set(p->region, sizeof(p->region), v);
		} else if (strcmp(k, "endpoint_url") == 0) {
			set(p->endpoint, sizeof(p->endpoint), v);
		} else if (strcmp(k, "ca_bundle") == 0) {
			set(p->ca_bundle, sizeof(p->ca_bundle), v);
		}
	}
	fclose(f);
	return 0;
}

static const char *
env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* @out = $@var, else ~/@rel. */
static void
aws_file(char *out, size_t size, const char *var, const char *rel)
{
	const char *v = env(var), *home = env("HOME");

	if (v)
		snprintf(out, size, "%s", v);
	else
		snprintf(out, size, "%s/%s", home ? home : "/root", rel);
}

/* The endpoint @url checked and kept without a slash at its end. */
static int
take_endpoint(struct objfs_s3_config *c, const char *url, const char *from,
		char *err, size_t errsize)
{
	size_t n = strlen(url);

	while (n && url[n - 1] == '/')
		n--;
	if ((strncmp(url, "http://", 7) != 0 &&
	     strncmp(url, "https://", 8) != 0) || n >= sizeof(c->endpoint) ||
	    n <= 8 || memchr(url + 8, '/', n - 8) || strchr(url, '?')) {
		snprintf(err, errsize, "%s=%s: an S3 endpoint is http://HOST"
			"[:PORT] or https://HOST[:PORT]", from, url);
		return -EINVAL;
	}
	memcpy(c->endpoint, url, n);
	c->endpoint[n] = '\0';
	return 0;
}

int
objfs_s3_config_load(const struct objfs_remote_config *cfg,
		struct objfs_s3_config *c, char *err, size_t errsize)
{
	char cred_path[1024], conf_path[1024], section[256];
	const char *name = env("AWS_PROFILE"), *v, *style;
	struct profile cred = { 0 }, conf = { 0 };
	int rc_cred, rc_conf, rc;

	memset(c, 0, sizeof(*c));
	rc = objfs_s3_parse(cfg->spec, c->bucket, c->prefix, err, errsize);
	if (rc < 0)
		return rc;
	aws_file(cred_path, sizeof(cred_path), "AWS_SHARED_CREDENTIALS_FILE",
		".aws/credentials");
	aws_file(conf_path, sizeof(conf_path), "AWS_CONFIG_FILE",
		".aws/config");
	cred.want = name ? name : "default";
	if (!name || strcmp(name, "default") == 0)
		snprintf(section, sizeof(section), "default");
	else
		snprintf(section, sizeof(section), "profile %s", name);
	conf.want = section;
	rc_cred = read_ini(cred_path, &cred);
	rc_conf = read_ini(conf_path, &conf);
	if (name && !cred.found && !conf.found) {
		snprintf(err, errsize, "AWS_PROFILE=%s: no such profile in %s or "
			"%s", name, cred_path, conf_path);
		return -ENOENT;
	}
	(void)rc_cred;
	(void)rc_conf;

	/* Credentials: the environment, the credentials file, the config
	 * file; a key without its secret is no credential. */
	if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
		set(c->key_id, sizeof(c->key_id), env("AWS_ACCESS_KEY_ID"));
		set(c->secret, sizeof(c->secret), env("AWS_SECRET_ACCESS_KEY"));
		if ((v = env("AWS_SESSION_TOKEN")))
			set(c->token, sizeof(c->token), v);
		set(c->source, sizeof(c->source), "the environment");
	} else if (cred.key_id[0] && cred.secret[0]) {
		set(c->key_id, sizeof(c->key_id), cred.key_id);
		set(c->secret, sizeof(c->secret), cred.secret);
		set(c->token, sizeof(c->token), cred.token);
		snprintf(c->source, sizeof(c->source), "%.120s [%.30s]",
			cred_path, cred.want);
	} else if (conf.key_id[0] && conf.secret[0]) {
		set(c->key_id, sizeof(c->key_id), conf.key_id);
		set(c->secret, sizeof(c->secret), conf.secret);
		set(c->token, sizeof(c->token), conf.token);
		snprintf(c->source, sizeof(c->source), "%.120s [%.30s]",
			conf_path, conf.want);
	} else {
		snprintf(err, errsize, "remote=%s: no credentials: set "
			"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or put "
			"them in profile %s of %s", cfg->spec, cred.want,
			cred_path);
		return -EINVAL;
	}

	if ((v = env("AWS_REGION")) || (v = env("AWS_DEFAULT_REGION")))
		set(c->region, sizeof(c->region), v);
	else if (conf.region[0])
		set(c->region, sizeof(c->region), conf.region);
	else
		set(c->region, sizeof(c->region), "us-east-1");
	for (const char *s = c->region; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-') {
			snprintf(err, errsize, "region %s: not a region's name",
				c->region);
			return -EINVAL;
		}

	if (cfg->endpoint)
		rc = take_endpoint(c, cfg->endpoint, "remote_endpoint", err,
			errsize);
	else if ((v = env("AWS_ENDPOINT_URL_S3")))
		rc = take_endpoint(c, v, "AWS_ENDPOINT_URL_S3", err, errsize);
	else if ((v = env("AWS_ENDPOINT_URL")))
		rc = take_endpoint(c, v, "AWS_ENDPOINT_URL", err, errsize);
	else if (conf.s3_endpoint[0])
		rc = take_endpoint(c, conf.s3_endpoint, "endpoint_url", err,
			errsize);
	else if (conf.endpoint[0])
		rc = take_endpoint(c, conf.endpoint, "endpoint_url", err,
			errsize);
	else
		snprintf(c->endpoint, sizeof(c->endpoint),
			"https://s3.%s.amazonaws.com", c->region);
	if (rc < 0)
		return rc;
	/* In clear, the requests (their signatures cover no body) and the
	 * answers can be changed on the way, and the session token read:
	 * only when asked (issue 48). */
	if (strncmp(c->endpoint, "http://", 7) == 0 && !cfg->insecure) {
		snprintf(err, errsize, "%s: an http:// endpoint sends every "
			"request, its credentials' token and the tree's records "
			"in clear, open to change on the way: use https://, or "
			"-o remote_insecure to accept that (a test's gateway on "
			"127.0.0.1)", c->endpoint);
		return -EINVAL;
	}

	if ((v = env("AWS_CA_BUNDLE")))
		set(c->ca_bundle, sizeof(c->ca_bundle), v);
	else if (conf.ca_bundle[0])
		set(c->ca_bundle, sizeof(c->ca_bundle), conf.ca_bundle);

	style = cfg->addressing ? cfg->addressing :
		conf.style[0] ? conf.style : "auto";
	if (strcmp(style, "path") == 0) {
		c->path_style = 1;
	} else if (strcmp(style, "virtual") == 0) {
		c->path_style = 0;
	} else if (strcmp(style, "auto") == 0) {
		const char *host = strstr(c->endpoint, "://") + 3;
		size_t n = strcspn(host, ":");
		static const char aws[] = ".amazonaws.com";

		c->path_style = !(n > sizeof(aws) - 1 &&
			strncmp(host + n - (sizeof(aws) - 1), aws,
				sizeof(aws) - 1) == 0 &&
			!strchr(c->bucket, '.'));
	} else {
		snprintf(err, errsize, "remote_addressing=%s: path, virtual or "
			"auto", style);
		return -EINVAL;
	}
	return 0;
}
