/* SPDX-License-Identifier: MIT */
/*
 * ops_sealed.c - the requests of sealed objects (src/sealed/sealed.c): the seal
 * as the immutable flag (chattr, lsattr), and the OPEN reply that has the
 * kernel serve an open itself (FUSE passthrough).
 */
#include <config.h>

#include <errno.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <fuse_lowlevel.h>

#include "src/base/log.h"
#include "src/store.h"
#include "fuse/ops_int.h"

static struct objfs_store *
req_store(fuse_req_t req)
{
	return ((struct objfs_fuse *)fuse_req_userdata(req))->store;
}

/*
 * The OPEN reply of an open the kernel serves itself from the backing
 * file @bid (FUSE passthrough, Linux 6.9+): libfuse 3.14 cannot say so, so
 * the reply is written here, as <linux/fuse.h> lays it out: fuse_open_out
 * is fh, open_flags, backing_id.  No FOPEN_DIRECT_IO: read and mmap both
 * go to the backing file.
 */
#define K_FOPEN_NOFLUSH		(1u << 5)
#define K_FOPEN_PASSTHROUGH	(1u << 7)

void
objfs_reply_open_pt(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		uint64_t fh, int bypass, int32_t bid, int32_t tgid)
{
	/* The handle carries whose open it is, for its RELEASE. */
	struct {
		uint64_t fh;
		uint32_t open_flags;
		int32_t backing_id;
	} out = {
		fh | (uint64_t)(uint32_t)tgid << 32,
		K_FOPEN_PASSTHROUGH | K_FOPEN_NOFLUSH, bid,
	};

	if (fuse_reply_buf(req, (const char *)&out, sizeof(out)) == -ENOENT)
		/* The open was interrupted: the kernel sends no RELEASE. */
		objfs_store_release_pt(req_store(req), ino, fi->flags, bypass,
				1, tgid);
}

/* The process (thread group) of the thread that made @req: the kernel
 * gives the thread's id. */
int32_t
objfs_req_tgid(fuse_req_t req)
{
	pid_t tid = fuse_req_ctx(req)->pid;
	char path[64], line[128];
	int32_t tgid = (int32_t)tid;
	FILE *fp;

	if (tid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	fp = fopen(path, "re");
	if (!fp)
		return tgid;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(fp);
	return tgid;
}

/*
 * FS_IOC_GETFLAGS / FS_IOC_SETFLAGS and FS_IOC_FSGETXATTR / FSSETXATTR,
 * which the kernel sends for chattr and lsattr (fileattr_get/set, after
 * checking CAP_LINUX_IMMUTABLE and the owner itself; it reads both kinds
 * before a change): objfs keeps FS_IMMUTABLE_FL, the seal.  The flags are
 * an int in both directions, struct fsxattr the others.
 */
void
objfs_ll_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		size_t in_bufsz, size_t out_bufsz)
{
	unsigned v = 0;
	int rc;

	(void)arg;
	(void)fi;
	if (flags & FUSE_IOCTL_COMPAT) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	switch (cmd) {
	case FS_IOC_GETFLAGS:
		rc = objfs_store_get_flags(req_store(req), ino, &v);
		if (rc < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_ioctl(req, 0, &v, out_bufsz < sizeof(v) ?
					out_bufsz : sizeof(v));
		return;
	case FS_IOC_SETFLAGS:
		if (in_bufsz < sizeof(v)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		memcpy(&v, in_buf, sizeof(v));
		rc = objfs_store_set_flags(req_store(req), ino, v,
				objfs_req_tgid(req));
		if (rc < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	case FS_IOC_FSGETXATTR: {
		struct fsxattr x;

		rc = objfs_store_get_flags(req_store(req), ino, &v);
		memset(&x, 0, sizeof(x));
		if (v & FS_IMMUTABLE_FL)
			x.fsx_xflags = FS_XFLAG_IMMUTABLE;
		if (rc < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_ioctl(req, 0, &x, out_bufsz < sizeof(x) ?
					out_bufsz : sizeof(x));
		return;
	}
	case FS_IOC_FSSETXATTR: {
		struct fsxattr x;

		if (in_bufsz < sizeof(x)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		memcpy(&x, in_buf, sizeof(x));
		/* The seal only: no extent sizes or projects here. */
		if ((x.fsx_xflags & ~FS_XFLAG_IMMUTABLE) || x.fsx_extsize ||
		    x.fsx_projid || x.fsx_cowextsize) {
			fuse_reply_err(req, EOPNOTSUPP);
			return;
		}
		rc = objfs_store_set_flags(req_store(req), ino,
				(x.fsx_xflags & FS_XFLAG_IMMUTABLE) ?
				FS_IMMUTABLE_FL : 0, objfs_req_tgid(req));
		if (rc < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	}
	default:
		objfs_log(OBJFS_LOG_DEBUG, "ioctl %#x (in %zu, out %zu): not "
			"one of objfs's", cmd, in_bufsz, out_bufsz);
		fuse_reply_err(req, ENOTTY);
	}
}
