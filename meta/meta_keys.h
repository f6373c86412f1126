/* SPDX-License-Identifier: MIT */
/*
 * meta_keys.h - names and key encodings of the LMDB index.
 *
 * All integers in keys are big-endian so that LMDB's memcmp order is
 * numeric order: the entries of one directory, the chunks of one object
 * and the xattrs of one inode are each one contiguous key range.
 *
 *	DB		key				value
 *	super		ascii name			u64 (host order)
 *	inode		ino				struct objfs_attr
 *	dirent		parent . name			struct dirent_val
 *	dircookie	parent . cookie			name
 *	xattr		ino . name			value bytes
 *	symlink		ino				target bytes
 *	chunk		ino . index			csum (canonical BE) . u32 length
 *	orphan		ino				(empty): unlinked, still open
 *
 * A readdir offset is the entry's cookie: a number from a counter that
 * only grows, so an entry added while a directory is being listed comes
 * after every cookie handed out so far and no entry is ever repeated.
 */
#ifndef OBJFS_META_KEYS_H
#define OBJFS_META_KEYS_H

#define OBJFS_META_SCHEMA	1u

#define OBJFS_DB_SUPER		"super"
#define OBJFS_DB_INODE		"inode"
#define OBJFS_DB_DIRENT		"dirent"
#define OBJFS_DB_DIRCOOKIE	"dircookie"
#define OBJFS_DB_XATTR		"xattr"
#define OBJFS_DB_SYMLINK	"symlink"
#define OBJFS_DB_CHUNK		"chunk"
#define OBJFS_DB_ORPHAN		"orphan"
#define OBJFS_META_NDBS		8

#define OBJFS_SUPER_SCHEMA	"schema"
#define OBJFS_SUPER_CHUNK	"chunk_size"
#define OBJFS_SUPER_NEXT_INO	"next_ino"
#define OBJFS_SUPER_NEXT_COOKIE	"next_cookie"

#endif
