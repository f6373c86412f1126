/* SPDX-License-Identifier: MIT */
/*
 * mount_adopt.c - the arena that outlives its daemon (design.md, "Adoption"):
 * DATA/arena names it; a mount adopts it when it is this data
 * directory's, of this boot, private and unlocked (arena.c checks), or
 * makes a new one; the adopted blocks then go back to their chunks, and
 * the truncations and zeroings in progress are finished.  Called while
 * the store is opened or closed (mount_int.h).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/log.h"
#include "src/base/units.h"
#include "src/fs/mount_int.h"
#include "meta/meta_keys.h"

/* DATA/arena names the shared arena file (a line), or is absent. */
static int
read_arena_pointer(int dirfd, char *path, size_t size)
{
	int fd = openat(dirfd, "arena", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, path, size - 1);
	close(fd);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	path[strcspn(path, "\n")] = '\0';
	return path[0] == '/';
}

/* Written whole or not at all (rename); a daemon killed later leaves it
 * in the page cache, which is all it is for: after a restart the arena
 * it names is gone anyway. */
static int
write_arena_pointer(int dirfd, const char *path)
{
	int fd = openat(dirfd, "arena.new", O_WRONLY | O_CREAT | O_TRUNC |
			O_NOFOLLOW | O_CLOEXEC, 0600), rc = 0;
	size_t n = strlen(path);

	if (fd < 0)
		return -errno;
	if (write(fd, path, n) != (ssize_t)n || write(fd, "\n", 1) != 1)
		rc = errno ? -errno : -EIO;
	close(fd);
	if (rc == 0 && renameat(dirfd, "arena.new", dirfd, "arena") < 0)
		rc = -errno;
	return rc;
}

void
mount_remove_arena_pointer(struct objfs_store *s)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/arena", s->data_dir);
	(void)unlink(path);
}

/*
 * Adopt the arena a daemon that died left (DATA/arena names it), or make
 * a new one in a private directory of /dev/shm (or -o arena_dir), or,
 * when that cannot be, a memfd that dies with this daemon.
 */
int
mount_open_arena(struct objfs_store *s, const struct objfs_store_config *cfg,
		int dirfd, uint64_t id, struct mount_adoption *ad, const char **msg)
{
	char old[PATH_MAX], path[PATH_MAX], h[32];
	const char *why = NULL;
	int rc;

	if (read_arena_pointer(dirfd, old, sizeof(old))) {
		rc = objfs_arena_adopt(old, s->chunk_size, id, &s->arena,
				&ad->found, &ad->n, ad->redo, &ad->nredo, &why);
		if (rc == 0) {
			struct objfs_arena_stats st;

			objfs_arena_get_stats(s->arena, &st);
			s->adopted = 1;
			snprintf(s->arena_note, sizeof(s->arena_note),
				"adopted %s", old);
			if (cfg->arena_size && cfg->arena_size / s->chunk_size !=
					(st.capacity + 4096) / s->chunk_size)
				objfs_log(OBJFS_LOG_INFO, "the arena adopted "
					"holds %s; the size asked for applies "
					"after an unmount", objfs_format_size(
					st.capacity, h, sizeof(h)));
			return 0;
		}
		if (rc != -ENOENT) {
			*msg = "cannot adopt the previous daemon's arena";
			return rc;
		}
		objfs_log(OBJFS_LOG_WARNING, "started without an arena to "
			"adopt: %s: %s; what the last daemon had not written "
			"out is not in it", old, why);
		snprintf(s->arena_note, sizeof(s->arena_note), "new (none "
			"to adopt: %s)", why);
	} else {
		snprintf(s->arena_note, sizeof(s->arena_note), "new");
	}
	rc = objfs_arena_create_shared(cfg->arena_dir ? cfg->arena_dir :
			"/dev/shm", cfg->arena_size, s->chunk_size, id, path,
			sizeof(path), &s->arena);
	if (rc == -EINVAL) {
		*msg = "the arena must hold at least two chunks";
		return rc;
	}
	if (rc == 0) {
		rc = write_arena_pointer(dirfd, path);
		if (rc == 0)
			return 0;
		objfs_arena_remove(s->arena);
		objfs_arena_destroy(s->arena);
		s->arena = NULL;
		(void)unlinkat(dirfd, "arena.new", 0);
		if (rc != -ENOSPC && rc != -EDQUOT) {
			*msg = "cannot write DATA/arena";
			return rc;
		}
		/* A full disk must not keep the data out of reach: mount
		 * with an arena that dies with this daemon (nothing could
		 * name a shared one for adoption). */
		objfs_log(OBJFS_LOG_WARNING, "cannot write DATA/arena (%s): "
			"the arena is private memory instead, and what a killed "
			"daemon had not written out is lost; delete files to "
			"make room", strerror(-rc));
		(void)unlinkat(dirfd, "arena", 0);
		snprintf(s->arena_note, sizeof(s->arena_note), "memfd (dies "
			"with the daemon: DATA/arena: %s)", strerror(-rc));
		rc = objfs_arena_create(cfg->arena_size, s->chunk_size,
				&s->arena);
		if (rc < 0)
			*msg = "cannot create the arena";
		return rc;
	}
	if (cfg->arena_dir) {
		*msg = "cannot make the arena in arena_dir";
		return rc;
	}
	objfs_log(OBJFS_LOG_WARNING, "cannot make the arena in /dev/shm (%s): "
		"it is private memory instead, and what a killed daemon had "
		"not written out is lost", strerror(-rc));
	(void)unlinkat(dirfd, "arena", 0);
	snprintf(s->arena_note, sizeof(s->arena_note), "memfd (dies with the "
		"daemon: /dev/shm: %s)", strerror(-rc));
	rc = objfs_arena_create(cfg->arena_size, s->chunk_size, &s->arena);
	if (rc < 0)
		*msg = "cannot create the shared-memory arena";
	return rc;
}

/*
 * Give the adopted blocks back to their chunks: each block of a file the
 * index still has, dirty ones as they were, clean ones if the disk copy
 * they equal is still the record; sizes and times from the tags; then
 * the truncations and zeroings that were in progress, finished.
 */
void
mount_adopt_blocks(struct objfs_store *s, struct mount_adoption *ad)
{
	struct objfs_arena_found *v = ad->found;
	uint64_t dirty = 0, clean = 0, dropped = 0;
	size_t files = 0, i, j;
	char h1[32], h2[32], h3[32];

	for (i = 0; i < ad->n; i = j) {
		struct objfs_inode *ip = NULL;
		uint64_t size;
		int64_t mt;

		for (j = i; j < ad->n && v[j].ino == v[i].ino; j++)
			;
		if (objfs_inode_get(s, v[i].ino, &ip) == 0) {
			objfs_inode_lock(ip);
			if (!S_ISREG(ip->attr.mode) || ip->attr.nlink == 0) {
				objfs_inode_unlock(ip);
				objfs_inode_put(s, ip);
				ip = NULL;
			}
		}
		if (!ip) {	/* deleted before the daemon died */
			for (size_t k = i; k < j; k++) {
				objfs_arena_free(s->arena, v[k].off, v[k].cap);
				dropped += v[k].cap;
			}
			continue;
		}
		size = ip->attr.size;
		mt = data_mtime_ns(ip);
		for (size_t k = i; k < j; k++) {
			/* Shared mode: the index may be newer than the dead
			 * daemon's blocks (other nodes' records applied since,
			 * a truncation among them); only bytes it never wrote
			 * out say more than the index. */
			if (s->shared && !(v[k].flags & OBJFS_ARENA_TAG_DIRTY))
				continue;
			if (v[k].size > size && v[k].size <= s->max_size)
				size = v[k].size;
			if ((v[k].flags & OBJFS_ARENA_TAG_DIRTY) &&
			    v[k].mtime_ns > mt)
				mt = v[k].mtime_ns;
		}
		if (size != ip->attr.size || mt != data_mtime_ns(ip)) {
			ip->attr.size = size;
			ip->attr.mtime_sec = mt / 1000000000ll;
			ip->attr.mtime_nsec = (uint32_t)(mt % 1000000000ll);
			ip->attr.ctime_sec = ip->attr.mtime_sec;
			ip->attr.ctime_nsec = ip->attr.mtime_nsec;
			ip->attr_dirty = 1;
		}
		for (size_t k = i; k < j; k++) {
			int r = objfs_data_adopt(s, ip, &v[k]);

			if (r == 0) {
				objfs_arena_free(s->arena, v[k].off, v[k].cap);
				dropped += v[k].cap;
			} else if (r == 1) {
				dirty += v[k].cap;
			} else {
				clean += v[k].cap;
			}
		}
		files++;
		objfs_inode_unlock(ip);
		objfs_inode_put(s, ip);
	}
	free(ad->found);
	ad->found = NULL;
	for (int k = 0; k < ad->nredo; k++) {
		const struct objfs_arena_redo *r = &ad->redo[k];
		struct objfs_inode *ip;
		int rc;

		if (objfs_inode_get(s, r->ino, &ip) < 0)
			continue;
		objfs_inode_lock(ip);
		rc = 0;
		if (S_ISREG(ip->attr.mode) && ip->attr.nlink > 0) {
			struct objfs_attr a = ip->attr;

			if (r->kind == OBJFS_INTENT_TRUNCATE)
				rc = objfs_data_truncate(s, ip, r->a, &a);
			else if (r->a < ip->attr.size)
				rc = objfs_data_fallocate(s, ip,
					FALLOC_FL_PUNCH_HOLE |
					FALLOC_FL_KEEP_SIZE, r->a, r->b);
		}
		objfs_inode_unlock(ip);
		objfs_inode_put(s, ip);
		if (rc < 0)
			objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 ": finishing "
				"the %s the last daemon was making: %s", r->ino,
				r->kind == OBJFS_INTENT_TRUNCATE ? "truncation" :
				"zeroing", strerror(-rc));
	}
	objfs_arena_clear_intents(s->arena);
	if (objfs_arena_damaged_tags(s->arena))
		objfs_log(OBJFS_LOG_WARNING, "not adopted: %" PRIu64 " blocks "
			"of the arena the last daemon left, whose tags are "
			"damaged (their files keep what was written out)",
			objfs_arena_damaged_tags(s->arena));
	objfs_log(OBJFS_LOG_INFO, "adopted the arena the last daemon left: "
		"%zu files, %s not yet written out, %s clean; %s dropped "
		"(deleted files, stale copies); %d changes finished", files,
		objfs_format_size(dirty, h1, sizeof(h1)),
		objfs_format_size(clean, h2, sizeof(h2)),
		objfs_format_size(dropped, h3, sizeof(h3)), ad->nredo);
	{
		size_t l = strlen(s->arena_note);

		snprintf(s->arena_note + l, sizeof(s->arena_note) - l,
			": %zu files, %s not yet written out", files, h1);
	}
}

