/* SPDX-License-Identifier: MIT */
/*
 * meta_keys.h - names, key encodings and record formats of the LMDB index.
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
 *							. u64 slot
 *	orphan		ino				(empty): unlinked, still open
 *	deleted		ino				(empty): gone from the index;
 *							its backing file may remain
 *	share		home . slot			u64 count (big-endian): the
 *							chunk records that point at
 *							slot @slot of @home's
 *							backing file (schema 5)
 *	content		home . slot			csum (BE) . u64 index (BE):
 *							what a written copy holds,
 *							and the chunk it was written
 *							for (dedup)
 *	bycsum		csum . home . slot		(empty): the same, found by
 *							checksum
 *	outbox		seq				a commit's journal payload,
 *							until the remote tier has
 *							put it in the pool's log
 *							(OBJFS_META_OUTBOX only;
 *							written by meta.c itself,
 *							never journaled)
 *
 * Every value ends with an 8-byte trailer: the xxh3 (canonical BE) of the
 * DB's number, the key and the value, so a damaged record is detected and
 * a record found anywhere names its own DB and key (objfsctl recover).
 *
 * A readdir offset is the entry's cookie: a number from a counter that
 * only grows, so an entry added while a directory is being listed comes
 * after every cookie handed out so far and no entry is ever repeated.
 *
 * The journal (index/journal, see meta.c) holds records of the form
 *	u32 magic, u32 payload length, u64 sequence, u64 xxh3 of all three
 *	and the payload, then the payload: entries
 *	u8 op (1 put, 2 del, 3 del range), u8 DB, u16 key length,
 *	u32 value length, key, value (the stored value, trailer included;
 *	for a range, the key is be64(id) . start).
 */
#ifndef OBJFS_META_KEYS_H
#define OBJFS_META_KEYS_H

/* Schema 4: sub-blocks of a 256th of a chunk (4 KiB for 1 MiB chunks),
 * named by the super record "sub_shift", and chunk records with more
 * than 128 sums (their map of the second slot 32 bytes).  An index of
 * schema 3 has no "sub_shift": its sub-blocks are a 128th of a chunk,
 * and it stays 3 (an objfs of schema 3 can still read it). */
#define OBJFS_META_SCHEMA	4u
#define OBJFS_META_SCHEMA_V3	3u
/* Schema 5: some chunk records share a disk copy (a copy made by
 * copy_file_range, or equal content): such a record ends with the inode
 * whose backing file holds it, and the share DB counts the records of
 * each such copy.  An index is marked 5 by the commit that first shares
 * a copy, so that an objfs that knows nothing of sharing (and would give
 * a shared slot back while another file still needs it) refuses it; one
 * that never shared stays 4 (or 3). */
#define OBJFS_META_SCHEMA_SHARE	5u

#define OBJFS_DB_SUPER		"super"
#define OBJFS_DB_INODE		"inode"
#define OBJFS_DB_DIRENT		"dirent"
#define OBJFS_DB_DIRCOOKIE	"dircookie"
#define OBJFS_DB_XATTR		"xattr"
#define OBJFS_DB_SYMLINK	"symlink"
#define OBJFS_DB_CHUNK		"chunk"
#define OBJFS_DB_ORPHAN		"orphan"
#define OBJFS_DB_DELETED	"deleted"
#define OBJFS_DB_SHARE		"share"
#define OBJFS_DB_CONTENT	"content"
#define OBJFS_DB_BYCSUM		"bycsum"
#define OBJFS_DB_OUTBOX		"outbox"
#define OBJFS_META_NDBS		13

#define OBJFS_SUPER_SCHEMA	"schema"
#define OBJFS_SUPER_CHUNK	"chunk_size"
#define OBJFS_SUPER_NEXT_INO	"next_ino"
#define OBJFS_SUPER_NEXT_COOKIE	"next_cookie"
#define OBJFS_SUPER_ID		"id"		/* this data directory's */
#define OBJFS_SUPER_SUB_SHIFT	"sub_shift"	/* log2 of the sub-block
						 * size (schema 4) */
#define OBJFS_SUPER_JOURNAL	"journal_seq"	/* last record checkpointed */
#define OBJFS_SUPER_REMOTE_POS	"remote_pos"	/* the pool's shared log:
						 * the last record applied */
/* Shared mode: this node's range of inode numbers and directory cookies
 * (src/fs/namespace.c), each the next to hand out and the range's end;
 * this data directory's own, never shipped, never in a snapshot. */
#define OBJFS_SUPER_IDS_INO	"ids_ino"
#define OBJFS_SUPER_IDS_INO_END	"ids_ino_end"
#define OBJFS_SUPER_IDS_CK	"ids_cookie"
#define OBJFS_SUPER_IDS_CK_END	"ids_cookie_end"
/* Shared mode: how many times this node shipped its waiting commits. */
#define OBJFS_SUPER_SHIPPED	"deleg_shipped"
#define OBJFS_SUPER_CLEAN	"clean"		/* 1: the last daemon stopped
						 * cleanly */

#define OBJFS_JOURNAL_MAGIC	0x4c4e4a4fu	/* "OJNL" */
#define OBJFS_JOURNAL_PUT	1
#define OBJFS_JOURNAL_DEL	2
#define OBJFS_JOURNAL_DELRANGE	3

#endif
