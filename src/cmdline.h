/* SPDX-License-Identifier: MIT */
/*
 * cmdline.h - the daemon's command line (src/cmdline.c), for main.c: the
 * options as parsed, and the calls that refuse, detach and report to the
 * waiting parent.
 */
#ifndef OBJFS_CMDLINE_H
#define OBJFS_CMDLINE_H

#include <stdint.h>
#include <stddef.h>

#define MIN_ARENA	(16ull << 20)
#define MIN_CHUNK	(8u << 10)
#define MAX_CHUNK	(256u << 20)

struct opts {
	const char *mountpoint;
	char *mountpoint_abs;		/* mountpoint's own copy, absolute */
	const char *source;
	char *data_dir;
	uint64_t arena;
	uint32_t chunk;
	int foreground;
	int debug;
	int prefault;
	int keep_arena;			/* -o keep_arena */
	int no_dedup;			/* -o dedup=off */
	char *arena_dir;		/* -o arena_dir= */
	int direct_io;			/* enum objfs_direct_io */
	uint64_t readahead;
	unsigned spill_high;
	unsigned spill_low;
	unsigned max_threads;
	int uring;			/* -o io_uring: 0 off, 1 auto, 2 idle */
	int fuse_pt;			/* -o passthrough: 0 off, 1 auto */
	unsigned sealed_max;		/* -o sealed_max=PCT */
	int sealed_small;		/* -o sealed_pages=small */
	int kernel_perms;		/* -o default_permissions */
	int shared;			/* -o allow_other or allow_root */
	char *log;			/* -o log=: NULL auto, "syslog", a path */
	char *metrics_file;		/* -o metrics_file= */
	char *remote;			/* -o remote=rados:POOL[/NS] */
	char *remote_conf;		/* -o remote_conf= */
	char *remote_id;		/* -o remote_id= */
	char *remote_endpoint;		/* -o remote_endpoint= */
	char *remote_addressing;	/* -o remote_addressing= */
	int remote_insecure;		/* -o remote_insecure */
	unsigned remote_timeout;	/* -o remote_timeout=SECONDS */
	unsigned remote_hold;		/* -o remote_hold=SECONDS */
	int remote_shared;		/* -o shared */
	unsigned remote_lease;		/* -o remote_lease=SECONDS */
	long remote_compact;		/* -o remote_compact=RECORDS, -1: unset */
	long remote_batch;		/* -o remote_batch=MS, -1: unset */
	char *passthrough;	/* options for libfuse and the kernel */
	size_t passlen;
};

/* Parse argv into @o (defaults set by the caller), refusing what is wrong
 * (exit status 2) and printing --help and --version. */
void objfs_parse_args(struct opts *o, int argc, char **argv);
/* The arena's size (arena=, else what memory allows) and the data
 * directory (data=, else the default under HOME, made). */
void objfs_choose_arena(struct opts *o);
void objfs_choose_data_dir(struct opts *o);
/* One line on stderr ("objfs: ..."), the parent told, exit status 2. */
void objfs_refuse(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
/* Tell the parent, which still holds the terminal, how mounting went. */
void objfs_report_to_parent(int status);
/* Fork before anything is opened; the parent waits for the child's word
 * (objfs_report_to_parent) and exits with it. */
void objfs_detach(void);
/* Mounted: choose where to log, release the parent and the terminal. */
void objfs_detached(const struct opts *o);

#endif
