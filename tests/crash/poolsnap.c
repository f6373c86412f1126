/* SPDX-License-Identifier: MIT */
/*
 * poolsnap - crash images of a Ceph pool, for the crash simulator with
 * remote= (sim.py remote).  Test-only code.
 *
 *   poolsnap snaps CONF POOL PREFIX MS STOP
 *       take a pool snapshot (PREFIX1, PREFIX2, ...) every MS
 *       milliseconds until the file STOP exists, then one more; print
 *       "NAME T0 T1" for each, T0 and T1
 *       read from CLOCK_MONOTONIC (the workload's clock) just before the
 *       snapshot was asked for and just after it was made.  Whatever
 *       RADOS applied before T0 is in the snapshot, nothing begun after
 *       T1 is: each is what a machine lost in between leaves in the pool.
 *   poolsnap copy CONF POOL NS SNAP DPOOL DNS
 *       copy every object of POOL/NS as it was at SNAP, with its xattrs,
 *       into DPOOL/DNS (which must be empty), the objects' own holds
 *       left out (objfs.hold: the lost machine's hold has lapsed);
 *       print "objects N bytes B".
 *   poolsnap wipe CONF POOL NS [PREFIX]
 *       remove every object of POOL/NS (whose name begins with PREFIX).
 *
 * Exit status 0, or 1 with the reason on stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rados/librados.h>

static rados_t cl;

static int die(const char *what, int rc)
{
	fprintf(stderr, "poolsnap: %s: %s\n", what, strerror(-rc));
	if (cl)
		rados_shutdown(cl);
	exit(1);
}

static rados_ioctx_t pool_open(const char *conf, const char *pool)
{
	rados_ioctx_t io;
	int rc;

	if (!cl) {
		rc = rados_create2(&cl, "ceph", "client.admin", 0);
		if (rc < 0)
			die("rados_create2", rc);
		rc = rados_conf_read_file(cl, conf);
		if (rc < 0)
			die(conf, rc);
		rados_conf_set(cl, "rados_osd_op_timeout", "60");
		rados_conf_set(cl, "rados_mon_op_timeout", "60");
		rc = rados_connect(cl);
		if (rc < 0)
			die("connect", rc);
	}
	rc = rados_ioctx_create(cl, pool, &io);
	if (rc < 0)
		die(pool, rc);
	return io;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int snaps(rados_ioctx_t io, const char *prefix, long ms,
		 const char *stop)
{
	char name[96];
	int last = 0;

	for (unsigned i = 1; !last; i++) {
		uint64_t t0, t1;
		int rc;

		last = access(stop, F_OK) == 0;
		snprintf(name, sizeof(name), "%.80s%u", prefix, i);
		t0 = now_ns();
		rc = rados_ioctx_snap_create(io, name);
		t1 = now_ns();
		if (rc < 0)
			die("snapshot", rc);
		printf("%s %" PRIu64 " %" PRIu64 "\n", name, t0, t1);
		fflush(stdout);
		if (!last)
			usleep((useconds_t)ms * 1000);
	}
	return 0;
}

/* One object as it was at the snapshot @io reads, into @out. */
static int copy_one(rados_ioctx_t io, rados_ioctx_t out, const char *oid,
		    uint64_t *bytes)
{
	rados_xattrs_iter_t it;
	rados_write_op_t op;
	uint64_t size;
	time_t mt;
	char *buf;
	int rc;

	rc = rados_stat(io, oid, &size, &mt);
	if (rc == -ENOENT)
		return 0;	/* made after the snapshot, or removed before */
	if (rc < 0)
		die(oid, rc);
	buf = malloc(size ? size : 1);
	if (!buf)
		die("malloc", -ENOMEM);
	for (uint64_t got = 0; got < size;) {
		size_t n = size - got > (64u << 20) ? 64u << 20 : size - got;

		rc = rados_read(io, oid, buf + got, n, got);
		if (rc <= 0)
			die(oid, rc < 0 ? rc : -EIO);
		got += (uint64_t)rc;
	}
	op = rados_create_write_op();
	rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	rados_write_op_write_full(op, buf, size);
	rc = rados_getxattrs(io, oid, &it);
	if (rc < 0)
		die(oid, rc);
	for (;;) {
		const char *name, *val;
		size_t len;

		rc = rados_getxattrs_next(it, &name, &val, &len);
		if (rc < 0)
			die(oid, rc);
		if (!name)
			break;
		rados_write_op_setxattr(op, name, val, len);
	}
	rc = rados_write_op_operate(op, out, oid, NULL, 0);
	rados_getxattrs_end(it);
	rados_release_write_op(op);
	free(buf);
	if (rc < 0)
		die(oid, rc);
	*bytes += size;
	return 1;
}

/* @fn for every object of @io's namespace (its reading snapshot set). */
static void each_object(rados_ioctx_t io, void (*fn)(const char *, void *),
			void *arg)
{
	rados_list_ctx_t ls;
	int rc;

	rc = rados_nobjects_list_open(io, &ls);
	if (rc < 0)
		die("list", rc);
	for (;;) {
		const char *oid;

		rc = rados_nobjects_list_next(ls, &oid, NULL, NULL);
		if (rc == -ENOENT)
			break;
		if (rc < 0)
			die("list", rc);
		fn(oid, arg);
	}
	rados_nobjects_list_close(ls);
}

struct copying {
	rados_ioctx_t io, out;
	uint64_t objs, bytes;
};

static void copy_obj(const char *oid, void *arg)
{
	struct copying *c = arg;

	if (strcmp(oid, "objfs.hold") != 0)
		c->objs += (uint64_t)copy_one(c->io, c->out, oid, &c->bytes);
}

static int copy(rados_ioctx_t io, const char *ns, const char *snap,
		rados_ioctx_t out, const char *dns)
{
	struct copying c = { io, out, 0, 0 };
	rados_snap_t id;
	int rc;

	rc = rados_ioctx_snap_lookup(io, snap, &id);
	if (rc < 0)
		die(snap, rc);
	rados_ioctx_set_namespace(io, ns);
	rados_ioctx_set_namespace(out, dns);
	rados_ioctx_snap_set_read(io, id);
	each_object(io, copy_obj, &c);
	printf("objects %" PRIu64 " bytes %" PRIu64 "\n", c.objs, c.bytes);
	return 0;
}

struct wiping {
	rados_ioctx_t io;
	const char *prefix;
};

static void wipe_obj(const char *oid, void *arg)
{
	struct wiping *w = arg;
	int rc;

	if (strncmp(oid, w->prefix, strlen(w->prefix)) != 0)
		return;
	rc = rados_remove(w->io, oid);
	if (rc < 0 && rc != -ENOENT)
		die(oid, rc);
}

static int wipe(rados_ioctx_t io, const char *ns, const char *prefix)
{
	struct wiping w = { io, prefix };

	rados_ioctx_set_namespace(io, ns);
	each_object(io, wipe_obj, &w);
	return 0;
}

int main(int argc, char **argv)
{
	rados_ioctx_t io, out;
	int rc = 2;

	if (argc == 7 && strcmp(argv[1], "snaps") == 0) {
		io = pool_open(argv[2], argv[3]);
		rc = snaps(io, argv[4], atol(argv[5]), argv[6]);
	} else if (argc == 8 && strcmp(argv[1], "copy") == 0) {
		io = pool_open(argv[2], argv[3]);
		out = pool_open(argv[2], argv[6]);
		rc = copy(io, argv[4], argv[5], out, argv[7]);
		rados_ioctx_destroy(out);
	} else if ((argc == 5 || argc == 6) && strcmp(argv[1], "wipe") == 0) {
		io = pool_open(argv[2], argv[3]);
		rc = wipe(io, argv[4], argc == 6 ? argv[5] : "");
	} else {
		fprintf(stderr, "usage: poolsnap snaps CONF POOL PREFIX MS STOP | "
			"copy CONF POOL NS SNAP DPOOL DNS | "
			"wipe CONF POOL NS [PREFIX]\n");
		return 2;
	}
	rados_ioctx_destroy(io);
	rados_shutdown(cl);
	return rc;
}
