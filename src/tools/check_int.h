/* SPDX-License-Identifier: MIT */
/*
 * check_int.h - what check.c (objfsctl check) and recover.c (objfsctl
 * recover) share: the table of inodes read from the index, and opening
 * the data directory under its lock.
 */
#ifndef OBJFS_CHECK_INT_H
#define OBJFS_CHECK_INT_H

#include <stdint.h>
#include <stdio.h>

#include "meta/meta.h"

struct ino {
	uint64_t ino;
	struct objfs_attr a;
	int ok;			/* its record is intact */
	uint32_t names;		/* dirents pointing at it */
	uint32_t subdirs;	/* directories among its entries */
	uint64_t recs;		/* chunk records */
	uint64_t parent;	/* a directory's parent by its name */
	int orphan;
	int dead;		/* has a tombstone */
};

struct ck {
	FILE *out;
	int problems;
	int notes;
	uint32_t chunk;
	struct objfs_meta_txn *t;
	int bdir;		/* backing/, or -1 */
	size_t files;		/* in backing/ */
	struct ino *iv;
	size_t ni, cap;
	/* dirent (parent, cookie) pairs, sorted, for the cookie check */
	struct pc {
		uint64_t parent, cookie;
	} *pcv;
	size_t npc, pccap;
	uint64_t pool_tree;	/* a pool's cache (remote_tree), else 0 */
	int shared;		/* ... of a shared mount (remote_pos) */
	const struct objfs_check_pool *pool;	/* its way to the pool */
};

struct dir {
	int dirfd, lockfd, bdir;
	char index[4200];
};

/* The inode with number @ino among those read, or NULL. */
struct ino *ck_find(struct ck *c, uint64_t ino);
/* An objfs_meta_inode_walk() callback: records come in key order, so the
 * array stays sorted.  @a NULL: the record is damaged. */
int ck_add_inode(void *arg, uint64_t ino, const struct objfs_attr *a);
/* The backing file of @ino, read-only, or -ENOENT. */
int ck_open_backing(int bdir, uint64_t ino);
/* Call @cb for each backing file's inode number. */
int ck_list_backing(int bdir, int (*cb)(void *arg, uint64_t ino), void *arg);
/* Open @data_dir and take its lock (what went wrong is printed to @out). */
int ck_open_dir(const char *data_dir, struct dir *d, FILE *out);
void ck_close_dir(struct dir *d);
/* The superblock's figures into @c; chunk size 0 when unreadable. */
void ck_read_super(struct ck *c, const char *data_dir, int dirfd);

#endif
