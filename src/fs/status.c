/* SPDX-License-Identifier: MIT */
/*
 * status.c - introspection that any language can read.
 *
 *   MOUNT/.objfs-status	a read-only text file, one "key: value" line
 *				per figure (see doc/objfs.1); not listed by
 *				readdir, so copies of the tree never take it
 *   user.objfs.* xattrs	per file: resident, dirty, disk, spilled
 *				bytes, chunk size and chunk counts; answered
 *				by getxattr but never listed, so cp -a and
 *				rsync -X do not copy them; setting one is EPERM
 *
 * Values are decimal ASCII.  The store's figures are gathered here
 * (objfs_store_get_figures, from the arena, the spiller and the chunk
 * store's counters) and formatted, and a file's user.objfs.* figures
 * computed from its chunk map (caller holds its lock).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/log.h"
#include "src/status.h"
#include "src/bytes/data_int.h"
#include "src/store_int.h"

int
objfs_status_format(const struct objfs_status_figures *f, char *buf,
		size_t size, size_t *len_out)
{
	const struct objfs_store_stats *st = &f->st;
	int n;

	n = snprintf(buf, size,
		"arena_capacity_bytes: %" PRIu64 "\n"
		"arena_used_bytes: %" PRIu64 "\n"
		"arena_high_watermark_bytes: %" PRIu64 "\n"
		"arena_low_watermark_bytes: %" PRIu64 "\n"
		"chunk_size_bytes: %" PRIu64 "\n"
		"resident_bytes: %" PRIu64 "\n"
		"dirty_bytes: %" PRIu64 "\n"
		"disk_bytes: %" PRIu64 "\n"
		"disk_chunks: %" PRIu64 "\n"
		"disk_stored_bytes: %" PRIu64 "\n"
		"backing_fs_bytes: %" PRIu64 "\n"
		"backing_fs_avail_bytes: %" PRIu64 "\n"
		"written_out_chunks_total: %" PRIu64 "\n"
		"written_out_bytes_total: %" PRIu64 "\n"
		"restored_chunks: %" PRIu64 "\n"
		"restored_bytes: %" PRIu64 "\n"
		"direct_read_chunks: %" PRIu64 "\n"
		"part_reads: %" PRIu64 "\n"
		"subblock_writeouts: %" PRIu64 "\n"
		"shared_chunks: %" PRIu64 "\n"
		"shared_chunks_total: %" PRIu64 "\n"
		"dedup_chunks_total: %" PRIu64 "\n"
		"made_durable_bytes_total: %" PRIu64 "\n"
		"evicted_bytes: %" PRIu64 "\n"
		"writer_waits: %" PRIu64 "\n"
		"checksum_failures: %" PRIu64 "\n"
		"cached_inodes: %" PRIu64 "\n"
		"pid: %ld\n"
		"data: %s\n"
		"log: %s\n"
		"arena: %s\n",
		st->arena_capacity, st->arena_used, st->spill_high,
		st->spill_low, st->chunk_size, st->resident_bytes,
		st->dirty_bytes,
		f->disk_bytes, f->disk_chunks, f->disk_stored, f->fs_bytes,
		f->fs_avail,
		st->written_out_chunks, st->written_out_bytes,
		st->restored_chunks, st->restored_bytes, st->direct_reads,
		st->part_reads, st->sub_writeouts, f->shared_now,
		st->shared_chunks, st->dedup_chunks, st->made_durable_bytes,
		st->dropped_bytes, st->write_waits, st->csum_failures,
		st->inodes_cached, f->pid, f->data_dir, objfs_log_where(),
		f->arena_note);
	if (n < 0)
		return -EIO;
	*len_out = (size_t)n < size ? (size_t)n : size - 1;
	return 0;
}

int
objfs_status_xattr(struct objfs_store *s, struct objfs_inode *ip,
		const char *name, char *buf, size_t size, size_t *len_out)
{
	uint64_t resident = 0, dirty = 0, disk = 0, spilled = 0, shared = 0;
	/* An index read per chunk on disk: only when asked. */
	int want_shared = strcmp(name, OBJFS_XATTR_PREFIX "shared") == 0;
	uint64_t nres = 0, nspill = 0, nhole = 0, nchunks, v, i;
	const struct objfs_chunk *c;
	char tmp[32];
	int n;

	OBJFS_CHUNKMAP_EACH(&ip->chunks, 0, i, c) {
		resident += c->cap;
		if (c->cap && (c->flags & OBJFS_CHUNK_DIRTY))
			dirty += c->cap;
		if ((c->flags & OBJFS_CHUNK_ONDISK) &&
		    !(c->flags & OBJFS_CHUNK_DIRTY))
			disk += c->disk_len;
		/* A disk copy other records point at too (local_dedup.c), and
		 * still this chunk's: counted once on disk, whoever's.  A
		 * copy whose count is down to this record is not shared. */
		if ((c->flags & OBJFS_CHUNK_ONDISK) &&
		    !(c->flags & OBJFS_CHUNK_DIRTY) && want_shared) {
			uint64_t users;

			if (s->copy->users(s, ip, c, &users) < 0 || users > 1)
				shared += c->disk_len;
		}
		switch (objfs_chunk_state(c)) {
		case OBJFS_CHUNK_SPILLED:
			spilled += c->disk_len;
			nspill++;
			break;
		case OBJFS_CHUNK_HOLE:
			break;
		default:
			nres++;
		}
	}
	/* The file's other chunks, with an entry or not, are holes. */
	nchunks = (ip->attr.size + s->chunk_size - 1) / s->chunk_size;
	if (nchunks > nres + nspill)
		nhole = nchunks - nres - nspill;
	if (strcmp(name, OBJFS_XATTR_PREFIX "resident") == 0)
		v = resident;
	else if (strcmp(name, OBJFS_XATTR_PREFIX "dirty") == 0)
		v = dirty;
	else if (strcmp(name, OBJFS_XATTR_PREFIX "disk") == 0)
		v = disk;
	else if (strcmp(name, OBJFS_XATTR_PREFIX "spilled") == 0)
		v = spilled;
	else if (strcmp(name, OBJFS_XATTR_PREFIX "chunk_size") == 0)
		v = s->chunk_size;
	else if (strcmp(name, OBJFS_XATTR_PREFIX "chunks_resident") == 0)
		v = nres;
	else if (strcmp(name, OBJFS_XATTR_PREFIX "chunks_spilled") == 0)
		v = nspill;
	else if (strcmp(name, OBJFS_XATTR_PREFIX "chunks_hole") == 0)
		v = nhole;
	else if (strcmp(name, OBJFS_XATTR_PREFIX "shared") == 0)
		v = shared;
	else
		return -ENODATA;
	n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
	if (size) {
		if (size < (size_t)n)
			return -ERANGE;
		memcpy(buf, tmp, (size_t)n);
	}
	*len_out = (size_t)n;
	return 0;
}

/* Shared mode's figures of the store: the files fencing took from this
 * node, and the last (what an operator looks for after "fenced" in the
 * log); the publishes and creates group commit shared (publish.c,
 * create.c); the opens a walk again let through, and the applies that
 * waited for one (walk.c).  Returns what it wrote (at most @size - 1). */
size_t
objfs_status_shared(struct objfs_store *s, char *buf, size_t size)
{
	int n = snprintf(buf, size,
		"fenced_files_total: %" PRIu64 "\n"
		"fenced_last_inode: %" PRIu64 "\n"
		"remote_publish_groups: %" PRIu64 "\n"
		"remote_publishes_grouped: %" PRIu64 "\n"
		"remote_create_groups: %" PRIu64 "\n"
		"remote_creates_grouped: %" PRIu64 "\n"
		"remote_walk_passes: %" PRIu64 "\n"
		"remote_walk_waits: %" PRIu64 "\n",
		(uint64_t)atomic_load(&s->fenced_files),
		(uint64_t)atomic_load(&s->fenced_last),
		(uint64_t)atomic_load(&s->pub_groups),
		(uint64_t)atomic_load(&s->pub_grouped),
		(uint64_t)atomic_load(&s->mk_groups),
		(uint64_t)atomic_load(&s->mk_grouped),
		(uint64_t)atomic_load(&s->walk_passes),
		(uint64_t)atomic_load(&s->walk_waits));

	if (n <= 0 || size == 0)
		return 0;
	return (size_t)n < size ? (size_t)n : size - 1;
}

/* ---- the figures, gathered ------------------------------------------ */

void
objfs_store_get_stats(struct objfs_store *s, struct objfs_store_stats *st)
{
	struct objfs_arena_stats as;
	struct objfs_spiller_stats ss;

	memset(st, 0, sizeof(*st));
	objfs_arena_get_stats(s->arena, &as);
	st->arena_capacity = as.capacity;
	st->arena_used = as.used;
	st->chunk_size = s->chunk_size;
	/* Every arena block belongs to a resident chunk (data.c allocates
	 * nothing else there), so the arena's count is the resident bytes:
	 * no walk over the inodes and their chunks. */
	st->resident_bytes = as.used;
	st->dirty_bytes = objfs_arena_dirty(s->arena);
	objfs_store_lock(s);
	st->inodes_cached = s->count;
	objfs_store_unlock(s);
	st->written_out_chunks = s->written_out_chunks;
	st->written_out_bytes = s->written_out_bytes;
	st->restored_chunks = s->restored_chunks;
	st->restored_bytes = s->restored_bytes;
	st->direct_reads = s->direct_reads;
	st->part_reads = s->part_reads;
	st->sub_writeouts = s->sub_writeouts;
	st->shared_chunks = s->shared_chunks;
	st->dedup_chunks = s->dedup_chunks;
	st->made_durable_bytes = s->made_durable_bytes;
	st->csum_failures = s->csum_failures;
	st->evictions = s->evictions;
	objfs_spiller_get_stats(s->spiller, &ss);
	st->dropped_bytes = ss.dropped_bytes;
	st->write_waits = ss.write_waits;
	st->spill_high = ss.high_bytes;
	st->spill_low = ss.low_bytes;
}

struct objfs_latency *
objfs_store_latency(struct objfs_store *s)
{
	return s->lat;
}

int
objfs_store_get_figures(struct objfs_store *s, struct objfs_status_figures *f)
{
	memset(f, 0, sizeof(*f));
	objfs_store_get_stats(s, &f->st);
	f->pid = (long)getpid();
	f->data_dir = s->data_dir;
	f->arena_note = s->arena_note;
	/* Figures that cannot be had make the read fail, never zeros. */
	return s->copy->figures(s, f);
}
