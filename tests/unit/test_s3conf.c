/* SPDX-License-Identifier: MIT */
/*
 * test_s3conf.c - an S3 remote's settings, resolved as the AWS tools do
 * (src/s3/conf.c): the spec's bucket and prefix; credentials from the
 * environment before the credentials file before the config file; a
 * profile by AWS_PROFILE; the region and the endpoint by their order;
 * path-style or virtual-hosted addressing; and each bad setting refused
 * with a message naming it.  And a ListObjectsV2 page read (xml.c).
 */
#include <config.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/s3/s3.h"
#ifdef HAVE_S3
#include "src/s3/s3_int.h"
#endif

static char dir[64];

static const char *vars[] = {
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
	"AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE",
	"AWS_CONFIG_FILE", "AWS_CA_BUNDLE",
};

static void
put_file(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/.aws/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int
setup(void **state)
{
	char aws[96];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/objfs-s3conf.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(aws, sizeof(aws), "%s/.aws", dir);
	assert_int_equal(mkdir(aws, 0700), 0);
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	setenv("HOME", dir, 1);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static int load_insecure = 1;	/* -o remote_insecure */

static int
load(const char *spec, const char *endpoint, const char *addressing,
		struct objfs_s3_config *c, char *err)
{
	struct objfs_remote_config cfg = { .spec = spec, .endpoint = endpoint,
		.addressing = addressing, .insecure = load_insecure };

	err[0] = '\0';
	return objfs_s3_config_load(&cfg, c, err, 512);
}

static void
test_spec(void **state)
{
	char b[64], p[512], err[512];

	(void)state;
	assert_int_equal(objfs_s3_parse("s3://bkt", b, p, err, sizeof(err)), 0);
	assert_string_equal(b, "bkt");
	assert_string_equal(p, "");
	assert_int_equal(objfs_s3_parse("s3://my.bkt-1/a/b/", b, p, err,
		sizeof(err)), 0);
	assert_string_equal(b, "my.bkt-1");
	assert_string_equal(p, "a/b");
	assert_int_equal(objfs_s3_parse("s3://ab", b, p, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "3 to 63"));
	assert_int_equal(objfs_s3_parse("s3://Bkt", b, p, err, sizeof(err)),
		-EINVAL);
	assert_int_equal(objfs_s3_parse("s3://-bkt", b, p, err, sizeof(err)),
		-EINVAL);
	assert_int_equal(objfs_s3_parse("s3://bkt/a//b", b, p, err,
		sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "empty part"));
	assert_int_equal(objfs_s3_parse("s3://bkt/", b, p, err, sizeof(err)),
		-EINVAL);
	/* Issue 48: libcurl collapses "." and ".." parts of a URL's path, so
	 * s3://b/t/../o would work in o/: refused, each place they may be. */
	static const char *const dots[] = { "s3://bkt/t/../o", "s3://bkt/..",
		"s3://bkt/../o", "s3://bkt/t/..", "s3://bkt/./t", "s3://bkt/t/.",
		"s3://bkt/.", "s3://bkt/t/./o/" };
	for (size_t i = 0; i < sizeof(dots) / sizeof(dots[0]); i++) {
		assert_int_equal(objfs_s3_parse(dots[i], b, p, err,
			sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "'.' or '..'"));
	}
	assert_int_equal(objfs_s3_parse("s3://bkt/t.d/..o/o..", b, p, err,
		sizeof(err)), 0);
	assert_string_equal(p, "t.d/..o/o..");
	assert_int_equal(objfs_s3_parse("rados:p", b, p, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "expected s3://BUCKET"));
}

static void
test_environment_first(void **state)
{
	struct objfs_s3_config c;
	char err[512];

	(void)state;
	put_file("credentials", "[default]\naws_access_key_id = FILEKEY\n"
		"aws_secret_access_key = FILESECRET\n");
	setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "ENVSECRET", 1);
	setenv("AWS_SESSION_TOKEN", "TOKEN", 1);
	assert_int_equal(load("s3://bkt/p", NULL, NULL, &c, err), 0);
	assert_string_equal(c.key_id, "ENVKEY");
	assert_string_equal(c.secret, "ENVSECRET");
	assert_string_equal(c.token, "TOKEN");
	assert_string_equal(c.source, "the environment");
	/* A key without its secret is no credential: the file's. */
	unsetenv("AWS_SECRET_ACCESS_KEY");
	assert_int_equal(load("s3://bkt/p", NULL, NULL, &c, err), 0);
	assert_string_equal(c.key_id, "FILEKEY");
	assert_string_equal(c.token, "");
	/* On AWS by default: its endpoint for the region, virtual-hosted. */
	assert_string_equal(c.region, "us-east-1");
	assert_string_equal(c.endpoint, "https://s3.us-east-1.amazonaws.com");
	assert_int_equal(c.path_style, 0);
}

static void
test_profile(void **state)
{
	struct objfs_s3_config c;
	char err[512];

	(void)state;
	put_file("credentials", "[default]\naws_access_key_id = D\n"
		"aws_secret_access_key = DS\n\n[work]\n"
		"aws_access_key_id = W\naws_secret_access_key = WS\n");
	put_file("config", "[default]\nregion = eu-west-1\n\n"
		"[profile work]\nregion = eu-central-1\n"
		"s3 =\n  addressing_style = path\n"
		"  endpoint_url = http://127.0.0.1:7480/\n"
		"endpoint_url = http://elsewhere:1\n");
	assert_int_equal(load("s3://bkt", NULL, NULL, &c, err), 0);
	assert_string_equal(c.key_id, "D");
	assert_string_equal(c.region, "eu-west-1");
	setenv("AWS_PROFILE", "work", 1);
	assert_int_equal(load("s3://bkt", NULL, NULL, &c, err), 0);
	assert_string_equal(c.key_id, "W");
	assert_string_equal(c.region, "eu-central-1");
	/* The s3 section's endpoint before the profile's, slash dropped. */
	assert_string_equal(c.endpoint, "http://127.0.0.1:7480");
	assert_int_equal(c.path_style, 1);
	assert_string_equal(c.ca_bundle, "");
	setenv("AWS_CA_BUNDLE", "/etc/my-cas.pem", 1);
	assert_int_equal(load("s3://bkt", NULL, NULL, &c, err), 0);
	assert_string_equal(c.ca_bundle, "/etc/my-cas.pem");
	/* The environment's region and endpoint before the file's; the
	 * option before all. */
	setenv("AWS_REGION", "ap-south-1", 1);
	setenv("AWS_ENDPOINT_URL", "http://10.0.0.1:9000", 1);
	assert_int_equal(load("s3://bkt", NULL, NULL, &c, err), 0);
	assert_string_equal(c.region, "ap-south-1");
	assert_string_equal(c.endpoint, "http://10.0.0.1:9000");
	assert_int_equal(load("s3://bkt", "https://gw.example:443", "virtual",
		&c, err), 0);
	assert_string_equal(c.endpoint, "https://gw.example:443");
	assert_int_equal(c.path_style, 0);
	/* A profile nobody has. */
	setenv("AWS_PROFILE", "nobody", 1);
	assert_int_equal(load("s3://bkt", NULL, NULL, &c, err), -ENOENT);
	assert_non_null(strstr(err, "AWS_PROFILE=nobody"));
}


/* The payload hash of the tree's records (sha256.c): FIPS 180-4's
 * examples, the padding's edges (55, 56, 63, 64, 65, 119, 120 bytes) and
 * a million 'a's, against Python's hashlib. */
static void
test_sha256(void **state)
{
	static const struct { size_t n; const char *hex; } as[] = {
		{ 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
		{ 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
		{ 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
		{ 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
		{ 65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0" },
		{ 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb" },
		{ 120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c" },
		{ 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
	};
	char hex[65], *a = malloc(1000000);

	(void)state;
	assert_non_null(a);
	memset(a, 'a', 1000000);
	s3_sha256_hex("", 0, hex);
	assert_string_equal(hex,
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	s3_sha256_hex("abc", 3, hex);
	assert_string_equal(hex,
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	s3_sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		56, hex);
	assert_string_equal(hex,
		"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	for (size_t i = 0; i < sizeof(as) / sizeof(as[0]); i++) {
		s3_sha256_hex(a, as[i].n, hex);
		assert_string_equal(hex, as[i].hex);
	}
	free(a);
}

static void
test_refused(void **state)
{
	struct objfs_s3_config c;
	char err[512];

	(void)state;
	assert_int_equal(load("s3://bkt", NULL, NULL, &c, err), -EINVAL);
	assert_non_null(strstr(err, "no credentials"));
	setenv("AWS_ACCESS_KEY_ID", "K", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S", 1);
	assert_int_equal(load("s3://bkt", "ftp://x", NULL, &c, err), -EINVAL);
	assert_non_null(strstr(err, "remote_endpoint=ftp://x"));
	assert_int_equal(load("s3://bkt", "http://h/path", NULL, &c, err),
		-EINVAL);
	assert_int_equal(load("s3://bkt", NULL, "sideways", &c, err), -EINVAL);
	assert_non_null(strstr(err, "path, virtual or auto"));
	setenv("AWS_REGION", "us east", 1);
	assert_int_equal(load("s3://bkt", NULL, NULL, &c, err), -EINVAL);
	assert_non_null(strstr(err, "not a region"));
	unsetenv("AWS_REGION");
	/* auto: path-style off AWS, and for a bucket with dots on AWS. */
	assert_int_equal(load("s3://bkt", "http://127.0.0.1:1", NULL, &c, err),
		0);
	assert_int_equal(c.path_style, 1);
	assert_int_equal(load("s3://a.b.c", NULL, NULL, &c, err), 0);
	assert_int_equal(c.path_style, 1);
	/* Issue 48: http:// only with -o remote_insecure, wherever the
	 * endpoint comes from (on 67f5056 accepted silently). */
	load_insecure = 0;
	assert_int_equal(load("s3://bkt", "http://127.0.0.1:1", NULL, &c, err),
		-EINVAL);
	assert_non_null(strstr(err, "remote_insecure"));
	setenv("AWS_ENDPOINT_URL", "http://10.0.0.1:9000", 1);
	assert_int_equal(load("s3://bkt", NULL, NULL, &c, err), -EINVAL);
	unsetenv("AWS_ENDPOINT_URL");
	assert_int_equal(load("s3://bkt", "https://127.0.0.1:1", NULL, &c, err),
		0);
	load_insecure = 1;
}

#ifdef HAVE_S3
struct keys {
	char seen[8][64];
	uint64_t size[8];
	int n, stop_at;
};

static int
one_key(void *arg, const char *key, uint64_t size)
{
	struct keys *k = arg;

	if (k->n == k->stop_at)
		return -EINTR;
	snprintf(k->seen[k->n], sizeof(k->seen[0]), "%s", key);
	k->size[k->n++] = size;
	return 0;
}

/* A ListObjectsV2 page: its keys and sizes in order, its continuation
 * token when truncated (a truncated page without one is refused), a
 * callback's stop, and XML that is not XML. */
static void
test_list_xml(void **state)
{
	static const char page[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
		"<ListBucketResult><Name>b</Name><Prefix>ns/</Prefix>"
		"<KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>"
		"<NextContinuationToken>a+b/c=</NextContinuationToken>"
		"<Contents><Key>ns/c.01-10</Key><Size>16</Size></Contents>"
		"<Contents><Key>ns/objfs.head</Key><Size>230</Size></Contents>"
		"<CommonPrefixes><Prefix>ns/deeper/</Prefix></CommonPrefixes>"
		"</ListBucketResult>";
	static const char last[] =
		"<ListBucketResult><IsTruncated>false</IsTruncated>"
		"<Contents><Key>ns/x&amp;y</Key><Size>1</Size></Contents>"
		"</ListBucketResult>";
	static const char lying[] =
		"<ListBucketResult><IsTruncated>true</IsTruncated>"
		"</ListBucketResult>";
	struct keys k = { .stop_at = -1 };
	char next[64];

	(void)state;
	assert_int_equal(s3_xml_list(page, sizeof(page) - 1, one_key, &k,
		next, sizeof(next)), 0);
	assert_int_equal(k.n, 2);
	assert_string_equal(k.seen[0], "ns/c.01-10");
	assert_int_equal(k.size[0], 16);
	assert_string_equal(k.seen[1], "ns/objfs.head");
	assert_string_equal(next, "a+b/c=");
	k.n = 0;
	assert_int_equal(s3_xml_list(last, sizeof(last) - 1, one_key, &k, next,
		sizeof(next)), 0);
	assert_int_equal(k.n, 1);
	assert_string_equal(k.seen[0], "ns/x&y");
	assert_string_equal(next, "");
	assert_int_equal(s3_xml_list(lying, sizeof(lying) - 1, one_key, &k,
		next, sizeof(next)), -EPROTO);
	assert_int_equal(s3_xml_list("<ListBucketResult><Contents>", 28,
		one_key, &k, next, sizeof(next)), -EPROTO);
	k.n = 0;
	k.stop_at = 1;
	assert_int_equal(s3_xml_list(page, sizeof(page) - 1, one_key, &k,
		next, sizeof(next)), -EINTR);
	assert_int_equal(k.n, 1);
}
#endif

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_spec),
		cmocka_unit_test_setup_teardown(test_environment_first, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
#ifdef HAVE_S3
		cmocka_unit_test(test_list_xml),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
