/* SPDX-License-Identifier: MIT */
/*
 * ops_int.h - what the request handlers (ops.c) and the session
 * (session.c) share: the adapter's state, given to libfuse as userdata,
 * and the operations table.
 */
#ifndef OBJFS_OPS_INT_H
#define OBJFS_OPS_INT_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <fuse_lowlevel.h>

#include "src/base/clock.h"	/* objfs_mono_ns: request latencies */
#include "fuse/ops.h"

#define OBJFS_MAX_WRITE		(1u << 20)
/* The kernel's ABI (<linux/fuse.h>) */
#define K_IN_HDR		40		/* struct fuse_in_header */
#define K_OUT_HDR		16		/* struct fuse_out_header */

struct objfs_fuse {
	struct fuse_session *se;
	struct objfs_store *store;
	int mounted;
	struct objfs_fuse_opts o;
	/* INIT, as seen on /dev/fuse (see io_read).  Written while INIT is
	 * handled, before any other request can arrive; atomics, because
	 * every worker thread reads them afterwards. */
	uint64_t init_unique;
	_Atomic int init_seen;	/* 0, 1: INIT read, 2: INIT replied */
	_Atomic int mmap_ok;	/* direct_io files may still be mmapped */
	/* Kernel INIT flags to add to libfuse's reply (set by the INIT
	 * handler, which runs before the reply is written). */
	uint32_t init_add_flags;
	/* The kernel takes ENOSYS to OPENDIR as "no opendir needed" and
	 * sends no more OPENDIR and RELEASEDIR (set at INIT). */
	int no_opendir;
	/* FUSE over io_uring (uring.c): offered in INIT, and the rings,
	 * once asked for in the INIT reply. */
	_Atomic int uring_offered;
	_Atomic int pt_offered;		/* FUSE passthrough offered in INIT */
	struct objfs_uring *uring;
	/* Once the rings serve the requests, /dev/fuse carries only FORGET
	 * and INTERRUPT: its readers then poll it instead of sleeping in
	 * read(2), so that the kernel has no reader to wake on the other
	 * CPU for each forget (io_read). */
	_Atomic int reader_poll;
};


/* uring.c */
int objfs_uring_prepare(struct objfs_fuse *f);
void objfs_uring_start(struct objfs_fuse *f);
void objfs_uring_stop(struct objfs_fuse *f);
/* The reply in @iov, if it answers the request this thread is serving
 * from a ring: copied into its entry, and its length returned; else -1. */
ssize_t objfs_uring_capture(const struct iovec *iov, int count);

/* ops_sealed.c */
/* The OPEN reply of an open the kernel serves from backing file @bid
 * (handle @fh, for process @tgid). */
void objfs_reply_open_pt(fuse_req_t req, fuse_ino_t ino,
		struct fuse_file_info *fi, uint64_t fh, int bypass, int32_t bid,
		int32_t tgid);
/* The process (thread group) that made @req. */
int32_t objfs_req_tgid(fuse_req_t req);
/* ops.c: the request is the mount's owner's or root's (control actions). */
int objfs_req_controls(fuse_req_t req);
/* FS_IOC_GETFLAGS/SETFLAGS, FS_IOC_FSGETXATTR/FSSETXATTR: the seal. */
void objfs_ll_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		void *arg, struct fuse_file_info *fi, unsigned flags,
		const void *in_buf, size_t in_bufsz, size_t out_bufsz);

extern const struct fuse_lowlevel_ops objfs_ll_ops;

#endif
