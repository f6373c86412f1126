/* SPDX-License-Identifier: MIT */
/*
 * mount_int.h - what opening and closing the store (mount.c) shares with
 * mount_index.c (the index) and the two files that do its recovery: mount_adopt.c (the arena a daemon that
 * died left: found, adopted, its blocks given back to their chunks) and
 * mount_cleanup.c (after a daemon that did not stop cleanly: orphans reaped,
 * deleted objects' backing files swept, space no record points at given
 * back, and the index's record of a clean stop).  Called only while the
 * store is being opened or closed: no request runs, so no lock is held
 * but those the calls take themselves (store_int.h).
 */
#ifndef OBJFS_MOUNT_INT_H
#define OBJFS_MOUNT_INT_H

#include "src/store_int.h"
#include "src/local/backing.h"

/* mount_index.c: open the index in @path (index/), or make it, or, with
 * the remote tier, build it from the pool; *@created when it was made
 * empty.  0, or -errno with *@msg saying why. */
int mount_open_index(struct objfs_store *s, const char *path, int *created,
		const char **msg);
/* Fill a new index (@created), or check an existing one: schema, chunk
 * size (@want_chunk, 0: any), sub-blocks; its id in *@id. */
int mount_init_or_check_index(struct objfs_store *s, int created,
		uint32_t want_chunk, uint64_t *id, const char **msg);
/* The backing directory's id file (at @dirfd) must name @id: written
 * when missing, -EXDEV when it names another. */
int mount_check_dir_id(struct objfs_store *s, int dirfd, uint64_t id,
		const char **msg);

/* What objfs_arena_adopt() found, until mount_adopt_blocks() takes it. */
struct mount_adoption {
	struct objfs_arena_found *found;
	size_t n;
	struct objfs_arena_redo redo[OBJFS_ARENA_INTENTS];
	int nredo;
};

/* Adopt the arena DATA/arena names, or make a new one (a shared file in
 * a private directory of /dev/shm or -o arena_dir; a memfd when that
 * cannot be, or when the disk is too full to name it).  0, or -errno
 * with *@msg saying what could not be done. */
int mount_open_arena(struct objfs_store *s,
		const struct objfs_store_config *cfg, int dirfd, uint64_t id,
		struct mount_adoption *ad, const char **msg);
/* Give the adopted blocks back to their chunks (the index is open and
 * its journal replayed); frees ad->found. */
void mount_adopt_blocks(struct objfs_store *s, struct mount_adoption *ad);
/* Remove DATA/arena (the arena's bytes are all on disk, or it is gone). */
void mount_remove_arena_pointer(struct objfs_store *s);

/* Remove the objects left unlinked while open (orphans). */
int mount_reap_orphans(struct objfs_store *s);
/* At close: the objects unlinked while open that the kernel never let go
 * of (its references end with the session), removed now. */
void mount_close_orphans(struct objfs_store *s);
/* Remove the backing files whose objects the index says were deleted
 * (tombstones); never one the index knows nothing of. */
int mount_sweep_backing(struct objfs_store *s);
/* Record whether the daemon stopped cleanly. */
int mount_set_clean(struct objfs_store *s, uint64_t clean);
/* After an unclean stop, give back the backing-file space no record
 * points at; from now on the index says "not clean" until the close. */
int mount_mark_unclean(struct objfs_store *s);

#endif
