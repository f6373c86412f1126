/* SPDX-License-Identifier: MIT */
/*
 * local_obj.c - the backing directory's state of one object, which the
 * local store's files build on (local_int.h): its backing file's fd, the
 * record of a copy, which file holds a copy, the slots read without the
 * inode's lock, and whether a deleted object's file must stay.  Below
 * local.c, local_dedup.c and local_space.c; above backing.c and the index.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/local/local_int.h"

int
local_has_copies(const struct objfs_inode *ip)
{
	/* An object spilled once and then cut to nothing still has one. */
	return S_ISREG(ip->attr.mode) && !ip->no_file;
}

int
local_backing_fd(struct objfs_store *s, struct objfs_inode *ip, int create,
		int *created)
{
	int fd, made = 0;

	if (created)
		*created = 0;
	if (ip->bfd >= 0)
		return ip->bfd;
	if (!create && ip->no_file)
		return -ENOENT;
	fd = objfs_backing_file(s->backing, ip->ino, create, &made);
	if (fd >= 0) {
		ip->bfd = fd;
		ip->no_file = 0;
		/* Its name is durable once the directory is synced: before
		 * any record points into it (write-out). */
		ip->bfile_new |= made;
		if (created)
			*created = made;
	}
	return fd;
}

int
local_chunk_rec(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, struct objfs_chunk_rec *r,
		unsigned char *tab, struct objfs_alt *alt)
{
	struct objfs_meta_txn *t;
	int rc = objfs_meta_begin(s->meta, 0, &t);

	if (rc < 0)
		return rc;
	rc = objfs_meta_chunk_get(t, ip->ino, idx, r, tab);
	objfs_meta_abort(t);
	if (rc == 0 && (r->slot != c->slot || r->len != c->disk_len ||
	    (r->home == ip->ino ? 0 : r->home) != c->home ||
	    r->csum != c->csum || r->shift != chunk_sub_shift(s, c) ||
	    !r->has_alt != !(c->flags & OBJFS_CHUNK_ALT) ||
	    (r->has_alt && r->alt != c->alt) ||
	    (r->shift && objfs_sums_csum(r->tab, r->len, r->shift) != c->csum)))
		rc = -ESTALE;
	if (rc < 0 && rc != -ESTALE)
		return rc;
	if (rc == -ESTALE || rc == -ENOENT) {
		objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 " chunk %" PRIu64
			": its record does not match the chunk in memory",
			ip->ino, idx);
		return -EIO;
	}
	if (alt)
		objfs_rec_alt(r, alt);
	return 0;
}

int
local_reading(const struct objfs_inode *ip, uint64_t slot)
{
	for (unsigned i = 0; i < ip->nreading; i++)
		if (ip->reading[i] == slot)
			return 1;
	return 0;
}

int
local_copy_fd(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_chunk *c, int *own)
{
	*own = 0;
	if (!c->home || c->home == ip->ino)
		return local_backing_fd(s, ip, 0, NULL);
	*own = 1;
	return objfs_backing_file(s->backing, c->home, 0, NULL);
}

void
local_copy_fd_done(int fd, int own)
{
	if (own && fd >= 0)
		close(fd);
}

static int
any_share(void *arg, uint64_t slot, uint64_t n)
{
	(void)slot;
	(void)n;
	*(int *)arg = 1;
	return 1;		/* stops the walk */
}

int
objfs_data_file_shared(struct objfs_meta_txn *t, uint64_t home)
{
	int found = 0, rc = objfs_meta_share_list(t, home, any_share, &found);

	return rc < 0 ? rc : found;
}

int
local_space(struct objfs_store *s, uint64_t *total, uint64_t *free,
		uint64_t *avail)
{
	return objfs_backing_free(s->backing, total, free, avail);
}
