/* SPDX-License-Identifier: MIT */
/*
 * mount.c - opening and closing the store: the data directory and its
 * lock, the remote tier, and the maintenance thread; the index (made,
 * built from the pool, checked, refused, tied to the directory's id) is
 * mount_index.c's, the arena's adoption mount_adopt.c's, the recovery after a
 * daemon that did not stop cleanly mount_cleanup.c's (mount_int.h).
 *
 * Data directory layout (all 0700/0600):
 *	lock		flock()ed by the daemon serving it; holds its pid
 *	id		the data directory's id, also in the index
 *	index/		the LMDB environment and its journal (meta/)
 *	backing/	one file per object that has bytes on disk (backing.c)
 * The lock and id files are reached relative to the directory's fd;
 * index/ and backing/ by their paths (LMDB takes a path), which must fit
 * in PATH_MAX.
 *
 * A mount removes only backing files that have a tombstone: one that the
 * index knows nothing of is left alone, and an index that is missing,
 * empty or not objfs's while backing files exist refuses to mount.  The
 * maintenance thread checkpoints the index once a second (which bounds
 * what a machine crash can take of namespace changes) and gives back the
 * disk space that durable commits freed (local_space.c).
 *
 * Locking: see store_int.h.
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
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/base/sync.h"
#include "src/base/units.h"
#include "src/status.h"
#include "src/fs/mount_int.h"
#include "meta/meta_keys.h"

#define MAINT_INTERVAL_MS	1000

/* ---- open / close ---------------------------------------------------- */

static int
open_dir_at(int dirfd, const char *name, int *out)
{
	int fd;

	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*out = fd;
	return 0;
}

int
objfs_store_lock_dir(int dirfd, int *lockfd_out, long *holder, char *state,
		size_t state_size)
{
	char buf[256];
	ssize_t n;
	int fd, rc;

	fd = openat(dirfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (holder && n > 0) {
			buf[n] = '\0';
			*holder = strtol(buf, NULL, 10);
			if (state && strchr(buf, '\n'))
				snprintf(state, state_size, "%s",
						strchr(buf, '\n') + 1);
		}
		close(fd);
		return rc;
	}
	*lockfd_out = fd;
	return 0;
}

/* The lock file holds the serving daemon's pid and, from unmount on,
 * what it is doing: "unmounting: L of N left to write out" (L updated
 * twice a second while it writes out), then
 * "unmounted: exit N: all data written" or "unmounted: exit 1: writing
 * out failed: ...", N the daemon's exit status,
 * which a mount refused meanwhile and objfsctl umount read. */
static void
note_lock(struct objfs_store *s, const char *state)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "%ld\n%s%s", (long)getpid(),
			state ? state : "", state ? "\n" : "");

	if (ftruncate(s->lockfd, 0) < 0 ||
	    pwrite(s->lockfd, buf, (size_t)n, 0) != n)
		objfs_log(OBJFS_LOG_WARNING, "cannot write the lock file: %m");
}

void
objfs_store_note_pid(struct objfs_store *s)
{
	note_lock(s, NULL);
}

/* ---- the maintenance thread ------------------------------------------ */


static void *
maint_main(void *arg)
{
	struct objfs_store *s = arg;

	pthread_mutex_lock(&s->maint_lock);
	while (!s->maint_stop) {
		objfs_cond_wait_ms(&s->maint_cv, &s->maint_lock,
				MAINT_INTERVAL_MS);
		if (s->maint_stop)
			break;
		pthread_mutex_unlock(&s->maint_lock);
		/* A checkpoint of everything committed: a machine crash
		 * then takes at most about a second of changes. */
		(void)objfs_meta_tick(s->meta, 0);
		s->copy->give_back(s, 0);
		pthread_mutex_lock(&s->maint_lock);
	}
	pthread_mutex_unlock(&s->maint_lock);
	return NULL;
}

static int
maint_start(struct objfs_store *s)
{
	int rc;

	rc = pthread_mutex_init(&s->maint_lock, NULL);
	if (rc)
		return -rc;
	rc = objfs_cond_init(&s->maint_cv);
	if (rc == 0) {
		rc = pthread_create(&s->maint_thread, NULL, maint_main, s);
		if (rc)
			pthread_cond_destroy(&s->maint_cv);
	}
	if (rc) {
		pthread_mutex_destroy(&s->maint_lock);
		return -rc;
	}
	s->maint_started = 1;
	return 0;
}

static void
maint_stop(struct objfs_store *s)
{
	if (!s->maint_started)
		return;
	pthread_mutex_lock(&s->maint_lock);
	s->maint_stop = 1;
	pthread_cond_broadcast(&s->maint_cv);
	pthread_mutex_unlock(&s->maint_lock);
	pthread_join(s->maint_thread, NULL);
	s->maint_started = 0;
	pthread_cond_destroy(&s->maint_cv);
	pthread_mutex_destroy(&s->maint_lock);
}

/* ---- opening the store ------------------------------------------------ */

/* Let every inode go from memory, and the table (no thread is left that
 * could use them). */
static void
free_table(struct objfs_store *s)
{
	for (size_t b = 0; b < s->nbuckets; b++) {
		while (s->table[b]) {
			struct objfs_inode *ip = s->table[b];

			s->table[b] = ip->hnext;
			objfs_inode_lock(ip);
			objfs_data_unload(s, ip);
			objfs_inode_unlock(ip);
			objfs_inode_free(ip);
		}
	}
	free(s->table);
}

static void
destroy_locks(struct objfs_store *s)
{
	pthread_cond_destroy(&s->release_cv);
	objfs_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->ns_lock);
	pthread_rwlock_destroy(&s->apply_lock);
	s->notify_fn = NULL;		/* what is queued is freed, not sent */
	objfs_store_notify_send(s, 1);
	pthread_mutex_destroy(&s->notify_mu);
	pthread_mutex_destroy(&s->notify_send_mu);
	pthread_mutex_destroy(&s->todo_mu);
	objfs_walk_destroy(s);
	pthread_mutex_destroy(&s->pub_mu);
	pthread_cond_destroy(&s->pub_cv);
	pthread_mutex_destroy(&s->mk_mu);
	pthread_cond_destroy(&s->mk_cv);
	free(s->todo);
}

/*
 * Open the index in @path, refusing one that is missing, empty or not
 * objfs's while the backing directory holds objects.
 */
/* A filesystem of the kernel's own (proc, sysfs, ...) cannot hold a data
 * directory: say so, rather than how its first file failed. */
static const char *
pseudo_fs(int dirfd)
{
	static const struct { unsigned long magic; const char *what; } fs[] = {
		{ 0x9fa0, "/proc" }, { 0x62656572, "sysfs" },
		{ 0x27e0eb, "cgroup" }, { 0x63677270, "cgroup2" },
		{ 0x64626720, "debugfs" }, { 0x74726163, "tracefs" },
		{ 0x73636673, "securityfs" }, { 0x1cd1, "devpts" },
		{ 0xcafe4a11, "bpffs" }, { 0x6165676c, "pstore" },
		{ 0x62656570, "configfs" }, { 0x65735543, "fusectl" },
		{ 0xde5e81e4, "efivarfs" },
	};
	static _Thread_local char why[160];
	struct statfs sf;

	if (fstatfs(dirfd, &sf) < 0)
		return NULL;	/* the next steps say what is wrong */
	for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
		if ((unsigned long)sf.f_type == fs[i].magic) {
			snprintf(why, sizeof(why), "on %s, a filesystem of the "
				"kernel's own: the data directory must be on a "
				"disk filesystem (ext4, xfs, btrfs, ...)",
				fs[i].what);
			return why;
		}
	return NULL;
}

static int
store_open_once(const struct objfs_store_config *cfg,
		struct objfs_store **out, const char **msg, long *holder)
{
	struct objfs_inode *root;
	struct objfs_store *s;
	const char *dummy;
	char path[PATH_MAX], state[256] = "";
	uint64_t id = 0, low_bytes = 0;
	int dirfd, sub = -1, rc, created = 0;
	struct mount_adoption ad = { 0 };

	if (!msg)
		msg = &dummy;
	*msg = NULL;
	/* Every path made from it must fit, the longest being the index's
	 * data file: a path cut short would name another file. */
	if (strlen(cfg->data_dir) + sizeof("/index/data.mdb") > sizeof(path)) {
		*msg = "the data directory's path is too long";
		return -ENAMETOOLONG;
	}
	if (mkdir(cfg->data_dir, 0700) < 0 && errno != EEXIST) {
		*msg = "cannot create the data directory";
		return -errno;
	}
	dirfd = open(cfg->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		*msg = "cannot open the data directory";
		return -errno;
	}
	if ((*msg = pseudo_fs(dirfd)) != NULL) {
		rc = -EINVAL;
		goto err_dirfd;
	}
	if (faccessat(dirfd, ".", W_OK, AT_EACCESS) < 0) {
		rc = -errno;
		*msg = "the data directory is not writable";
		goto err_dirfd;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = -ENOMEM;
		goto err_dirfd;
	}
	s->lockfd = -1;
	s->unload_above = objfs_sealed_unload;
	s->inode_get = objfs_inode_get;
	s->inode_put = objfs_inode_put;
	pthread_mutex_init(&s->defer_lock, NULL);
	pthread_mutex_init(&s->give_mu, NULL);
	pthread_mutex_init(&s->sealed_lock, NULL);
	if (objfs_cond_init(&s->sealed_cv) != 0) {
		rc = -ENOMEM;
		pthread_mutex_destroy(&s->sealed_lock);
		pthread_mutex_destroy(&s->give_mu);
		pthread_mutex_destroy(&s->defer_lock);
		free(s);
		goto err_dirfd;
	}
	s->sealed_max_pct = cfg->sealed_max ? cfg->sealed_max : 50;
	s->sealed_mnt = cfg->sealed_small ? -1 : -2;
	s->pt_off_why = "daemon: no passthrough in this adapter";
	rc = objfs_store_lock_dir(dirfd, &s->lockfd, holder, state,
			sizeof(state));
	if (rc < 0) {
		static _Thread_local char why[320];

		*msg = rc == -EBUSY ?
			"the data directory is already served by another objfs" :
			"cannot lock the data directory";
		state[strcspn(state, "\n")] = '\0';
		if (rc == -EBUSY && strncmp(state, "unmounting", 10) == 0) {
			snprintf(why, sizeof(why), "the objfs that served the "
				"data directory is still writing it out (%s); "
				"mount again when it has exited", state);
			*msg = why;
		}
		goto err_free;
	}
	objfs_store_note_pid(s);
	s->data_dir = strdup(cfg->data_dir);
	if (!s->data_dir) {
		rc = -ENOMEM;
		goto err_lock;
	}
	if ((rc = open_dir_at(dirfd, "index", &sub)) < 0) {
		*msg = "cannot create the index directory";
		goto err_lock;
	}
	close(sub);
	/* The chunk store: the backing directory (copy.h), or the pool of
	 * the remote tier (tier.h), whose hold is taken first. */
	s->copy = &objfs_copy_local;
	if (cfg->tier_ops) {
		static _Thread_local char why[400];

		rc = cfg->tier_ops->open(cfg, &s->tier, why, sizeof(why));
		if (rc < 0) {
			*msg = why;
			goto err_lock;
		}
		s->tier_ops = cfg->tier_ops;
		s->copy = cfg->tier_ops->copy;
		s->call_ns = (uint64_t)cfg->tier_ops->timeout_s(s->tier) *
			1000000000u;
		s->shared = cfg->tier_ops->shared(s->tier);
		/* Shared mode puts each commit in the pool's log itself. */
		s->meta_flags = s->shared ? 0 : OBJFS_META_OUTBOX;
	}
	snprintf(path, sizeof(path), "%s/backing", cfg->data_dir);
	rc = objfs_backing_open(path, &s->backing);
	if (rc < 0) {
		*msg = "cannot open the backing directory";
		goto err_lock;
	}
	/* The new subdirectories' names, before anything is put in them. */
	if (fsync(dirfd) < 0) {
		rc = -errno;
		*msg = "cannot sync the data directory";
		goto err_backing;
	}
	snprintf(path, sizeof(path), "%s/index", cfg->data_dir);
	rc = mount_open_index(s, path, &created, msg);
	if (rc < 0)
		goto err_backing;
	rc = mount_init_or_check_index(s, created, cfg->chunk_size, &id, msg);
	if (rc < 0) {
		if (!*msg)
			*msg = "cannot read the index";
		goto err_meta;
	}
	rc = mount_check_dir_id(s, dirfd, id, msg);
	if (rc < 0) {
		if (!*msg)
			*msg = "cannot record the data directory's id";
		goto err_meta;
	}
	for (s->chunk_shift = 0; (1u << s->chunk_shift) < s->chunk_size;
	     s->chunk_shift++)
		;
	/* The largest file is a number of chunks: what the chunk map and
	 * the index's chunk keys hold. */
	_Static_assert(OBJFS_MAX_CHUNKS_SHIFT <= OBJFS_CHUNKMAP_BITS,
			"the chunk map holds every chunk of the largest file");
	s->max_size = (uint64_t)s->chunk_size << OBJFS_MAX_CHUNKS_SHIFT;
	if (s->max_size > OBJFS_MAX_FILE_SIZE)
		s->max_size = OBJFS_MAX_FILE_SIZE;
	/* And what the backing filesystem can hold: copy-on-write may put
	 * a chunk in a slot past the file's last (as far again for a file
	 * rewritten whole within a commit interval), so the largest file is
	 * half the largest backing file, in whole chunks.  Else a write it
	 * took could never be written out (ext4 stops short of 16 TiB). */
	{
		uint64_t fsmax;

		rc = objfs_backing_max_size(s->backing, 2 * s->max_size,
				&fsmax);
		if (rc < 0) {
			*msg = "cannot probe the backing filesystem's largest file";
			goto err_meta;
		}
		if (fsmax / 2 < s->max_size) {
			s->max_size = fsmax / 2 & ~(uint64_t)(s->chunk_size - 1);
			objfs_log(OBJFS_LOG_INFO, "the backing filesystem holds "
				"files up to %" PRIu64 " bytes: the largest object "
				"is %" PRIu64 " bytes", fsmax, s->max_size);
		}
		if (s->max_size == 0) {
			*msg = "the backing filesystem cannot hold two chunks in a file";
			rc = -EFBIG;
			goto err_meta;
		}
	}
	s->keep_arena = cfg->keep_arena;
	s->dedup = !cfg->no_dedup;
	rc = mount_open_arena(s, cfg, dirfd, id, &ad, msg);
	if (rc < 0)
		goto err_meta;
	if (cfg->prefault)
		objfs_arena_prefault(s->arena);
	else if ((rc = objfs_arena_warm_start(s->arena)) < 0)
		objfs_log(OBJFS_LOG_WARNING, "the arena's warmer did not "
			"start (%s): first touches of its pages are paid by "
			"the reads and writes that make them", strerror(-rc));
	{
		struct objfs_arena_stats st;
		unsigned hi = cfg->spill_high ? cfg->spill_high : 90;
		unsigned lo = cfg->spill_low ? cfg->spill_low : 70;

		if (lo >= hi || hi > 100) {
			*msg = "spill_low must be below spill_high, both at most 100";
			rc = -EINVAL;
			objfs_arena_destroy(s->arena);
			goto err_meta;
		}
		objfs_arena_get_stats(s->arena, &st);
		s->high_bytes = st.capacity / 100 * hi;
		low_bytes = st.capacity / 100 * lo;
		/* Restores stop at the low watermark: the room above it is
		 * for writers and the spiller.  (Letting them go up to the
		 * high one was measured: more restore/drop churn, reads of
		 * 16 GiB through a 1 GiB arena 39 s against 28 s.) */
		s->restore_limit = low_bytes;
	}
	pthread_mutex_init(&s->ns_lock, NULL);
	objfs_mutex_init(&s->lock);
	pthread_cond_init(&s->release_cv, NULL);
	{
		pthread_rwlockattr_t ra;

		/* Applying another mount's commit is not starved by a
		 * stream of operations. */
		pthread_rwlockattr_init(&ra);
		pthread_rwlockattr_setkind_np(&ra,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&s->apply_lock, &ra);
		pthread_rwlockattr_destroy(&ra);
	}
	pthread_mutex_init(&s->notify_mu, NULL);
	pthread_mutex_init(&s->notify_send_mu, NULL);
	pthread_mutex_init(&s->todo_mu, NULL);
	objfs_walk_init(s);
	pthread_mutex_init(&s->pub_mu, NULL);
	pthread_cond_init(&s->pub_cv, NULL);
	s->pub_tail = &s->pub_head;
	pthread_mutex_init(&s->mk_mu, NULL);
	(void)objfs_cond_init(&s->mk_cv);	/* waits end at deadlines */
	s->mk_tail = &s->mk_head;
	s->notify_tail = &s->notify_head;
	s->nbuckets = 1024;
	s->table = calloc(s->nbuckets, sizeof(*s->table));
	if (!s->table) {
		rc = -ENOMEM;
		goto err_arena;
	}
	rc = objfs_inode_get(s, OBJFS_ROOT_INO, &root);	/* pinned for good */
	if (rc < 0) {
		*msg = "the index has no root directory";
		goto err_table;
	}
	if (s->tier) {
		static _Thread_local char why[400];

		rc = s->tier_ops->attach(s->tier, s, why, sizeof(why));
		if (rc < 0) {
			*msg = why;
			goto err_table;
		}
	}
	rc = mount_reap_orphans(s);
	if (rc == 0)
		rc = mount_sweep_backing(s);
	if (rc < 0) {
		*msg = "cannot remove unlinked objects";
		goto err_table;
	}
	rc = mount_mark_unclean(s);
	if (rc < 0) {
		*msg = "cannot write to the index";
		goto err_table;
	}
	if (s->adopted)
		mount_adopt_blocks(s, &ad);
	{
		const struct objfs_spiller_config sc = {
			.arena = s->arena, .chunk_size = s->chunk_size,
			.high_bytes = s->high_bytes, .low_bytes = low_bytes,
			.restore_threads = OBJFS_RESTORE_THREADS,
			.ops = &objfs_store_spiller_ops, .ctx = s,
		};

		rc = objfs_spiller_start(&sc, &s->spiller);
	}
	if (rc == 0)
		rc = maint_start(s);
	if (rc < 0) {
		*msg = "cannot start the spiller and maintenance threads";
		objfs_spiller_stop(s->spiller);
		s->spiller = NULL;
		goto err_table;
	}
	/* A new epoch in the pool: its snapshot, its head, and shipping. */
	if (s->tier) {
		static _Thread_local char why[400];

		rc = s->tier_ops->start(s->tier, s, why, sizeof(why));
		if (rc < 0) {
			*msg = why;
			maint_stop(s);
			objfs_spiller_stop(s->spiller);
			s->spiller = NULL;
			goto err_table;
		}
	}
	close(dirfd);
	*out = s;
	return 0;

err_table:
	/* An adopted arena stays for the next try: freeing its blocks
	 * would forget them. */
	if (s->adopted)
		objfs_arena_keep(s->arena);
	free_table(s);
err_arena:
	free(ad.found);
	destroy_locks(s);
	if (!s->adopted) {
		objfs_arena_remove(s->arena);
		mount_remove_arena_pointer(s);
	}
	objfs_arena_destroy(s->arena);
err_meta:
	if (s->meta)
		objfs_meta_close(s->meta);
err_backing:
	objfs_backing_close(s->backing);
err_lock:
	if (s->tier)
		s->tier_ops->close(s->tier);
	close(s->lockfd);
err_free:
	free(s->data_dir);
	free(s->defer);
	pthread_mutex_destroy(&s->defer_lock);
	pthread_mutex_destroy(&s->give_mu);
	pthread_mutex_destroy(&s->sealed_lock);
	pthread_cond_destroy(&s->sealed_cv);
	free(s);
err_dirfd:
	close(dirfd);
	return rc;
}

int
objfs_store_open(const struct objfs_store_config *cfg,
		struct objfs_store **out, const char **msg, long *holder)
{
	const char *dummy;
	int rc;

	if (!msg)
		msg = &dummy;
	rc = store_open_once(cfg, out, msg, holder);
	/* Shared mode: another node took a directory this data directory's
	 * last daemon held while changes of it had not reached the pool.
	 * They are refused (the tier marked the data directory): opened
	 * again, its index is built anew from the pool. */
	if (rc == -ESTALE && cfg->remote_shared) {
		objfs_log(OBJFS_LOG_WARNING, "%s: %s; opening it again",
			cfg->data_dir, *msg ? *msg : "refused");
		rc = store_open_once(cfg, out, msg, holder);
	}
	return rc;
}

/* Write out every inode in memory, each under its own lock only. */
static int
flush_all(struct objfs_store *s)
{
	struct objfs_inode **v;
	size_t n;
	int rc, r;

	rc = objfs_inode_snapshot(s, &v, &n);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		struct objfs_inode *ip = v[i];

		objfs_inode_lock(ip);
		if (S_ISREG(ip->attr.mode) && ip->attr.nlink > 0)
			r = objfs_data_flush(s, ip);
		else
			r = ip->attr_dirty ? objfs_inode_persist_attr(s, ip) : 0;
		if (r == -ENOLCK) {
			/* Shared: a file whose lease this node lost.  Its
			 * bytes go (the fence says so in the log; its writers
			 * got, or get, EIO): nothing is left to write. */
			objfs_share_fence(s, ip);
			if (!ip->nwriters)
				objfs_share_unfence(s, ip);
			r = 0;
		}
		objfs_inode_unlock(ip);
		if (r < 0 && rc == 0)
			rc = r;
	}
	objfs_inode_put_all(s, v, n);
	return rc;
}

/* While the unmount writes out: what is left, in the lock file, twice a
 * second, for a mount refused meanwhile to say. */
struct unmount_progress {
	struct objfs_store *s;
	char total[32];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;			/* protected by mu */
	pthread_t th;
};

static void *
progress_main(void *arg)
{
	struct unmount_progress *p = arg;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		objfs_cond_wait_ms(&p->cv, &p->mu, 500);
		if (!p->stop) {
			char what[128], h[32];

			snprintf(what, sizeof(what), "unmounting: %s of %s left "
				"to write out", objfs_format_size(
				objfs_arena_dirty(p->s->arena), h, sizeof(h)),
				p->total);
			note_lock(p->s, what);
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* objfs_store_sync_all() with the progress in the lock file. */
static int
sync_all_noting(struct objfs_store *s, const char *total)
{
	struct unmount_progress p = { .s = s, .stop = 0 };
	int started, rc;

	snprintf(p.total, sizeof(p.total), "%s", total);
	started = pthread_mutex_init(&p.mu, NULL) == 0;
	if (started && objfs_cond_init(&p.cv) != 0) {
		pthread_mutex_destroy(&p.mu);
		started = 0;
	}
	if (started && pthread_create(&p.th, NULL, progress_main, &p) != 0) {
		pthread_cond_destroy(&p.cv);
		pthread_mutex_destroy(&p.mu);
		started = 0;
	}
	rc = objfs_store_sync_all(s);
	if (started) {
		pthread_mutex_lock(&p.mu);
		p.stop = 1;
		pthread_cond_signal(&p.cv);
		pthread_mutex_unlock(&p.mu);
		pthread_join(p.th, NULL);
		pthread_cond_destroy(&p.cv);
		pthread_mutex_destroy(&p.mu);
	}
	return rc;
}

int
objfs_store_sync_all(struct objfs_store *s)
{
	int rc = flush_all(s), r;

	r = s->shared ? objfs_share_publish_all(s) : 0;
	if (r == 0)
		r = objfs_store_sync_index(s);	/* shared: what waits */
	return rc ? rc : r;
}

void
objfs_store_note_failure(struct objfs_store *s)
{
	s->failed = 1;
}

int
objfs_store_close(struct objfs_store *s)
{
	int rc, r, shared, kept = 0;
	uint64_t dirty = 0;
	char h[32] = "";

	if (!s)
		return 0;
	maint_stop(s);
	objfs_spiller_stop(s->spiller);
	s->spiller = NULL;
	/* Space that deletes freed first: the write-out may need it. */
	(void)s->copy->reclaim(s);
	{
		char what[96];

		objfs_format_size(s->keep_arena ? 0 :
			objfs_arena_dirty(s->arena), h, sizeof(h));
		snprintf(what, sizeof(what), "unmounting: %s of %s left to "
			"write out", h, h);
		note_lock(s, what);
	}
	mount_close_orphans(s);
	shared = objfs_arena_path(s->arena) != NULL;
	if (s->keep_arena && shared) {
		/* Left for the next mount: only the index is made durable. */
		dirty = objfs_arena_dirty(s->arena);
		rc = objfs_meta_sync(s->meta);
		objfs_arena_keep(s->arena);
		kept = 1;
		objfs_log(OBJFS_LOG_INFO, "unmounting with the arena kept "
			"(%s): %s not written out, for the next mount; lost if "
			"the machine restarts first", objfs_arena_path(s->arena),
			objfs_format_size(dirty, h, sizeof(h)));
	} else {
		rc = sync_all_noting(s, h);
		if (rc < 0 && shared) {
			objfs_arena_keep(s->arena);
			kept = 1;
			objfs_log(OBJFS_LOG_ERR, "writing objects out at "
				"unmount: %s; what was not written is kept in "
				"the arena (%s) for the next mount", strerror(-rc),
				objfs_arena_path(s->arena));
		} else if (rc < 0) {
			objfs_log(OBJFS_LOG_ERR, "writing objects out at "
				"unmount: %s; what was not written is lost",
				strerror(-rc));
		}
	}
	/* Shared mode: the files written here published, before the inodes
	 * go. */
	if (s->tier)
		s->tier_ops->quiesce(s->tier);
	/* Everything committed is durable now: the space it freed can go
	 * (the tombstones' removal is checkpointed at close). */
	s->copy->give_back(s, 0);
	if (rc == 0 && !kept)
		(void)mount_set_clean(s, 1);
	free_table(s);
	destroy_locks(s);
	if (!kept) {
		objfs_arena_remove(s->arena);
		mount_remove_arena_pointer(s);
	}
	objfs_arena_destroy(s->arena);
	objfs_backing_close(s->backing);
	/* What the index committed, into the pool's log (the rest, if the
	 * cluster does not answer, is sent by the next mount). */
	if (s->tier)
		(void)s->tier_ops->stop(s->tier);
	r = objfs_meta_close(s->meta);
	if (s->tier)
		s->tier_ops->close(s->tier);
	if (r < 0) {
		objfs_log(OBJFS_LOG_ERR, "index: the last checkpoint failed: %s; "
			"the journal holds the changes and the next mount "
			"replays it", strerror(-r));
		if (rc == 0)
			rc = r;
	}
	{
		char what[160];

		/* The daemon's exit status, for objfsctl umount. */
		if (rc == 0 && kept)
			snprintf(what, sizeof(what), "unmounted: exit %d: "
				"arena kept, %s not written out",
				s->failed ? 1 : 0, h);
		else if (rc < 0)
			snprintf(what, sizeof(what), "unmounted: exit 1: "
				"writing out failed: %s", strerror(-rc));
		else
			snprintf(what, sizeof(what), "unmounted: exit %d: all "
				"data written", s->failed ? 1 : 0);
		note_lock(s, what);
	}
	close(s->lockfd);
	free(s->data_dir);
	free(s->defer);
	pthread_mutex_destroy(&s->defer_lock);
	pthread_mutex_destroy(&s->give_mu);
	if (s->sealed_mnt >= 0)
		close(s->sealed_mnt);
	pthread_mutex_destroy(&s->sealed_lock);
	pthread_cond_destroy(&s->sealed_cv);
	free(s);
	return rc;
}

uint32_t
objfs_store_chunk_size(const struct objfs_store *s)
{
	return s->chunk_size;
}
