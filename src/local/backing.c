/* SPDX-License-Identifier: MIT */
/*
 * backing.c - backing-directory I/O (see backing.h).
 */
#include <config.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/local/backing.h"

struct objfs_backing {
	int dirfd;
	_Atomic int no_direct;	/* the filesystem refused O_DIRECT */
};

int
objfs_backing_open(const char *path, struct objfs_backing **out)
{
	struct objfs_backing *b;
	int rc;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (b->dirfd < 0) {
		rc = -errno;
		free(b);
		return rc;
	}
	*out = b;
	return 0;
}

void
objfs_backing_close(struct objfs_backing *b)
{
	if (!b)
		return;
	close(b->dirfd);
	free(b);
}

static void
file_name(char name[17], uint64_t ino)
{
	snprintf(name, 17, "%016" PRIx64, ino);
}

static int
open_file(struct objfs_backing *b, const char *name, int flags)
{
	int fd;

	if (!atomic_load(&b->no_direct)) {
		fd = openat(b->dirfd, name, flags | O_DIRECT, 0600);
		if (fd >= 0 || errno != EINVAL)
			return fd < 0 ? -errno : fd;
		objfs_log(OBJFS_LOG_INFO, "backing filesystem refuses O_DIRECT; "
			"using buffered I/O");
		atomic_store(&b->no_direct, 1);
	}
	fd = openat(b->dirfd, name, flags, 0600);
	return fd < 0 ? -errno : fd;
}

int
objfs_backing_file(struct objfs_backing *b, uint64_t ino, int create,
		int *created)
{
	const int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC;
	char name[17];
	int fd;

	file_name(name, ino);
	if (created)
		*created = 0;
	fd = open_file(b, name, flags);
	if (fd != -ENOENT || !create)
		return fd;
	fd = open_file(b, name, flags | O_CREAT | O_EXCL);
	if (fd >= 0 && created)
		*created = 1;
	if (fd == -EEXIST)	/* made meanwhile (cannot happen: one owner) */
		fd = open_file(b, name, flags);
	return fd;
}

int
objfs_backing_remove(struct objfs_backing *b, uint64_t ino)
{
	char name[17];

	file_name(name, ino);
	if (unlinkat(b->dirfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int
objfs_backing_list(struct objfs_backing *b,
		int (*cb)(void *arg, uint64_t ino), void *arg)
{
	struct dirent *e;
	DIR *d;
	int fd, rc = 0;

	fd = openat(b->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	errno = 0;
	while (rc == 0 && (e = readdir(d))) {
		uint64_t ino = 0;
		size_t i;

		for (i = 0; i < 16 && isxdigit((unsigned char)e->d_name[i]) &&
		     !isupper((unsigned char)e->d_name[i]); i++)
			ino = ino << 4 | (uint64_t)(isdigit((unsigned char)
				e->d_name[i]) ? e->d_name[i] - '0' :
				e->d_name[i] - 'a' + 10);
		if (i == 16 && e->d_name[16] == '\0')
			rc = cb(arg, ino);
		errno = 0;
	}
	if (rc == 0 && errno)
		rc = -errno;
	closedir(d);
	return rc;
}

int
objfs_backing_max_size(struct objfs_backing *b, uint64_t want, uint64_t *out)
{
	uint64_t lo = 0, hi;
	int fd, rc = 0;

	/* An unnamed file where the filesystem makes one (nothing to leave
	 * behind on a crash), else a name no object has, removed at once. */
	fd = openat(b->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		fd = openat(b->dirfd, "size-probe", O_RDWR | O_CREAT | O_EXCL |
				O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno == EEXIST &&
		    unlinkat(b->dirfd, "size-probe", 0) == 0)
			fd = openat(b->dirfd, "size-probe", O_RDWR | O_CREAT |
					O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		(void)unlinkat(b->dirfd, "size-probe", 0);
	}
	/* A sparse size costs no space.  The answer is a multiple of 4 KiB:
	 * the largest size that ftruncate accepts, up to @want. */
	if (ftruncate(fd, (off_t)want) == 0) {
		*out = want;
		goto out;
	}
	if (errno != EFBIG && errno != EINVAL) {
		rc = -errno;
		goto out;
	}
	hi = want;			/* refused */
	while (hi - lo > 4096) {
		uint64_t mid = (lo + (hi - lo) / 2) & ~4095ull;

		if (mid <= lo)
			break;
		if (ftruncate(fd, (off_t)mid) == 0)
			lo = mid;
		else if (errno == EFBIG || errno == EINVAL)
			hi = mid;
		else {
			rc = -errno;
			goto out;
		}
	}
	*out = lo;
out:
	close(fd);
	return rc;
}

int
objfs_backing_sync_dir(struct objfs_backing *b)
{
	return fsync(b->dirfd) < 0 ? -errno : 0;
}

int
objfs_backing_free(struct objfs_backing *b, uint64_t *total, uint64_t *free,
		uint64_t *avail)
{
	struct statvfs sv;

	if (fstatvfs(b->dirfd, &sv) < 0)
		return -errno;
	*total = (uint64_t)sv.f_blocks * sv.f_frsize;
	if (free)
		*free = (uint64_t)sv.f_bfree * sv.f_frsize;
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}

static int write_range(int fd, uint64_t slot, uint32_t chunk_size,
		const char *buf, uint32_t from, uint32_t to);

int
objfs_backing_write(int fd, uint64_t slot, uint32_t chunk_size, const void *buf,
		uint32_t len, unsigned shift, unsigned char *tab,
		uint64_t *csum_out)
{
	return objfs_backing_write_tail(fd, slot, chunk_size, buf, 0, len,
			shift, tab, csum_out);
}

int
objfs_backing_write_raw(int fd, uint64_t slot, uint32_t chunk_size,
		const void *buf, uint32_t len)
{
	static const char zero[OBJFS_BACKING_ALIGN];
	const char *b = buf;
	off_t pos = (off_t)(slot * chunk_size);
	uint32_t span = objfs_backing_span(len), lo, hi;
	int rc = 0, punched = 0;
	struct stat st;

	/* Runs of aligned blocks, written or, when all zero, punched (the
	 * slot is free: whatever it held before must read as zeros). */
	for (lo = 0; rc == 0 && lo < span; lo = hi) {
		int z = memcmp(b + lo, zero, OBJFS_BACKING_ALIGN) == 0;

		for (hi = lo + OBJFS_BACKING_ALIGN; hi < span &&
		     (memcmp(b + hi, zero, OBJFS_BACKING_ALIGN) == 0) == z;
		     hi += OBJFS_BACKING_ALIGN)
			;
		if (!z) {
			rc = write_range(fd, slot, chunk_size, b, lo, hi);
			punched = 0;
		} else if (fallocate(fd, FALLOC_FL_PUNCH_HOLE |
				FALLOC_FL_KEEP_SIZE, pos + lo, hi - lo) == 0) {
			punched = 1;
		} else if (errno == EOPNOTSUPP) {
			rc = write_range(fd, slot, chunk_size, b, lo, hi);
			punched = 0;
		} else {
			rc = -errno;
		}
	}
	/* A copy that ends in a hole still ends inside the file. */
	if (rc == 0 && punched && (fstat(fd, &st) < 0 ||
	    (st.st_size < pos + (off_t)len &&
	     ftruncate(fd, pos + (off_t)len) < 0)))
		rc = -errno;
	return rc;
}

int
objfs_backing_write_tail(int fd, uint64_t slot, uint32_t chunk_size,
		const void *buf, uint32_t from, uint32_t len, unsigned shift,
		unsigned char *tab, uint64_t *csum_out)
{
	int rc = write_range(fd, slot, chunk_size, buf, from, len);

	if (rc < 0)
		return rc;
	*csum_out = objfs_chunk_csum(buf, len, shift, tab);
	return 0;
}

/* Read bytes [@from, @to) of slot @slot into @p (the file may end inside
 * the last aligned block, but not before @to). */
static int
read_range(int fd, uint64_t ino, uint64_t idx, uint64_t slot,
		uint32_t chunk_size, char *p, uint32_t from, uint32_t to)
{
	off_t pos = (off_t)(slot * chunk_size) + from;
	uint32_t done = 0, want = to - from,
		 span = objfs_backing_span(to) - from;
	ssize_t n;

	while (done < want) {
		n = pread(fd, p + done, span - done, pos + done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			objfs_log(OBJFS_LOG_ERR,
				"inode %" PRIu64 " chunk %" PRIu64 ": read: %m",
				ino, idx);
			return -EIO;
		}
		if (n == 0) {
			objfs_log(OBJFS_LOG_ERR,
				"inode %" PRIu64 " chunk %" PRIu64
				": backing file is short (%u of %u bytes)",
				ino, idx, from + done, to);
			return -EIO;
		}
		done += (uint32_t)n;
	}
	return 0;
}

static int
mismatch(uint64_t ino, uint64_t idx)
{
	objfs_log(OBJFS_LOG_ERR,
		"inode %" PRIu64 " chunk %" PRIu64
		": checksum mismatch in backing file, refusing to return it",
		ino, idx);
	return -EBADMSG;
}

/* Read sub-blocks @first..@last of a copy whose bytes end at @end into
 * @p (which starts at sub-block @first): one read per run of them that
 * sit in the same slot. */
static int
read_subs(int fd, uint64_t ino, uint64_t idx, uint64_t slot,
		const struct objfs_alt *alt, uint32_t chunk_size, char *p,
		uint32_t first, uint32_t last, uint32_t end, unsigned shift)
{
	uint32_t i = first, j;
	int rc;

	while (i <= last) {
		int in_alt = objfs_alt_has(alt, i);
		uint32_t from = i << shift, to;

		for (j = i + 1; j <= last && objfs_alt_has(alt, j) == in_alt; j++)
			;
		to = (uint32_t)((uint64_t)j << shift) < end ? j << shift : end;
		rc = read_range(fd, ino, idx, in_alt ? alt->slot : slot,
				chunk_size, p + ((size_t)(i - first) << shift),
				from, to);
		if (rc < 0)
			return rc;
		i = j;
	}
	return 0;
}

int
objfs_backing_read(int fd, uint64_t ino, uint64_t idx, uint64_t slot,
		const struct objfs_alt *alt, uint32_t chunk_size, void *buf,
		uint32_t len, unsigned shift, uint64_t csum)
{
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	int rc;

	if (shift == 0 || len == 0)
		rc = read_range(fd, ino, idx, slot, chunk_size, buf, 0, len);
	else
		rc = read_subs(fd, ino, idx, slot, alt, chunk_size, buf, 0,
				objfs_nsums(len, shift) - 1, len, shift);
	if (rc < 0)
		return rc;
	if (objfs_chunk_csum(buf, len, shift, tab) != csum)
		return mismatch(ino, idx);
	return 0;
}

int
objfs_backing_read_part(int fd, uint64_t ino, uint64_t idx, uint64_t slot,
		const struct objfs_alt *alt, uint32_t chunk_size, void *buf,
		uint32_t lo, uint32_t hi, uint32_t len, unsigned shift,
		const unsigned char *tab)
{
	uint32_t first = lo >> shift, last = (hi - 1) >> shift, end;
	int rc;

	end = (uint32_t)((uint64_t)(last + 1) << shift) < len ?
		(last + 1) << shift : len;
	rc = read_subs(fd, ino, idx, slot, alt, chunk_size, buf, first, last,
			end, shift);
	if (rc < 0)
		return rc;
	if (!objfs_subs_match(buf, first, last, end, shift, tab))
		return mismatch(ino, idx);
	return 0;
}

/* Write bytes [@from, @to) of @buf (a chunk) at their place in slot @slot;
 * the last block is written whole (the bytes past @to are the block's). */
static int
write_range(int fd, uint64_t slot, uint32_t chunk_size, const char *buf,
		uint32_t from, uint32_t to)
{
	off_t pos = (off_t)(slot * chunk_size);
	uint32_t done = from, span = objfs_backing_span(to);
	ssize_t n;

	while (done < span) {
		n = pwrite(fd, buf + done, span - done, pos + done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;	/* a zero-length write sets no errno */
		done += (uint32_t)n;
	}
	return 0;
}

int
objfs_backing_write_subs(int fd, uint64_t slot, struct objfs_alt *alt,
		uint32_t chunk_size, const void *buf, uint32_t len,
		unsigned shift, const uint64_t *dirty,
		const unsigned char *old_tab, unsigned char *tab,
		uint64_t *csum_out)
{
	uint32_t n = objfs_nsums(len, shift);
	int rc;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t from = i << shift, to;

		if (!objfs_bits_has(dirty, i))
			continue;
		to = (uint32_t)((uint64_t)(i + 1) << shift) < len ?
			(i + 1) << shift : len;
		/* The place its current version is not at. */
		rc = write_range(fd, objfs_alt_has(alt, i) ? slot : alt->slot,
				chunk_size, buf, from, to);
		if (rc < 0)
			return rc;
	}
	objfs_bits_xor(alt->map, dirty);
	objfs_bits_keep(alt->map, n);	/* no bits past the copy */
	memcpy(tab, old_tab, 4 * (size_t)n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t from = i << shift, l, h;

		if (!objfs_bits_has(dirty, i))
			continue;
		l = len - from < (1u << shift) ? len - from : 1u << shift;
		h = objfs_sub_sum((const char *)buf + from, l, i);
		tab[4 * i] = (unsigned char)(h >> 24);
		tab[4 * i + 1] = (unsigned char)(h >> 16);
		tab[4 * i + 2] = (unsigned char)(h >> 8);
		tab[4 * i + 3] = (unsigned char)h;
	}
	*csum_out = objfs_sums_csum(tab, len, shift);
	return 0;
}

int
objfs_backing_punch(int fd, uint64_t slot, uint32_t chunk_size)
{
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)(slot * chunk_size), (off_t)chunk_size) < 0)
		return -errno;
	return 0;
}
