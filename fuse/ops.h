/* SPDX-License-Identifier: MIT */
/*
 * ops.h - the FUSE adapter's interface to main.c.  Nothing here mentions a
 * libfuse type, so main.c needs no fuse header.
 *
 * Sequence: objfs_fuse_new() (validates the mount options, before anything
 * is opened), objfs_fuse_mount(), objfs_fuse_loop() (returns on unmount or
 * SIGINT/SIGTERM/SIGHUP), objfs_fuse_destroy() (unmounts).  main.c
 * detaches from the terminal itself, before the store is opened.  One
 * session per process; not thread-safe itself.
 */
#ifndef OBJFS_FUSE_OPS_H
#define OBJFS_FUSE_OPS_H

struct objfs_fuse;
struct objfs_store;

/* Which opens of regular files bypass the kernel's page cache. */
enum objfs_direct_io {
	OBJFS_DIO_AUTO,		/* ALL where the kernel keeps shared mmap
				 * of such files working (6.6+), else
				 * WRITES (default) */
	OBJFS_DIO_WRITES,	/* write-only opens: writers cannot mmap,
				 * so nothing is lost */
	OBJFS_DIO_ALL,		/* every open: no page cache at all; on
				 * older kernels MAP_SHARED fails (ENODEV) */
	OBJFS_DIO_NONE,		/* none: everything through the cache */
};

struct objfs_fuse_opts {
	int debug;			/* trace every request */
	enum objfs_direct_io direct_io;
	unsigned readahead_kb;		/* the mount's read-ahead window */
	int kernel_perms;		/* mount with default_permissions;
					 * else only root can enter, and
					 * ACCESS is answered here */
	int uring;			/* FUSE over io_uring when the
					 * kernel offers it; 2: its threads
					 * wait as SCHED_IDLE */
	unsigned threads;		/* request threads, in all */
	int passthrough;		/* serve sealed objects by FUSE
					 * passthrough when the kernel and
					 * our capabilities allow */
};

/*
 * @mount_opts: comma-separated options for libfuse and the kernel (may be
 * empty); @fsname: the source shown in /proc/mounts.  Returns 0, -EINVAL
 * (libfuse has printed which option it refused) or -ENOMEM.
 */
int objfs_fuse_new(const char *mount_opts, const char *fsname,
		const struct objfs_fuse_opts *fo, struct objfs_fuse **out);
/* Attach @store and mount at @mountpoint, then set the mount's read-ahead
 * (needs root; otherwise the kernel's 128 KiB stays, and a note is
 * logged).  0 or a negative errno. */
int objfs_fuse_mount(struct objfs_fuse *f, struct objfs_store *store,
		const char *mountpoint);
/* Serve requests with up to @max_threads threads until unmounted. */
int objfs_fuse_loop(struct objfs_fuse *f, unsigned max_threads);
/* Unmount (if mounted) and free the session. */
void objfs_fuse_destroy(struct objfs_fuse *f);
/* Print libfuse's own option help to stdout. */
void objfs_fuse_print_help(void);
/* libfuse's version string. */
const char *objfs_fuse_version(void);

#endif
