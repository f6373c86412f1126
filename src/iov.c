/* SPDX-License-Identifier: MIT */
/*
 * iov.c - the list of pieces a read is served from (struct objfs_iov,
 * store.h): arena blocks, read-ahead slots, buffers of its own and a
 * static zero page.  Below data.c and readahead.c, which both add to it.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>

#include "data_int.h"

static const unsigned char zeros[65536];

/* Add @n bytes at @p to the iovec list (zeros when @p is NULL, in
 * pieces of the static zero page). */
void
data_iov_add(struct objfs_iov *v, const void *p, size_t n)
{
	while (n) {
		size_t k = p ? n : n < sizeof(zeros) ? n : sizeof(zeros);

		v->iov[v->n].iov_base = (void *)(p ? p : zeros);
		v->iov[v->n].iov_len = k;
		v->n++;
		n -= k;
	}
}

/* Bytes [co, co+n) of a chunk whose valid bytes are src[0..have). */
void
data_iov_add_chunk(struct objfs_iov *v, const unsigned char *src, uint32_t have,
		uint32_t co, uint32_t n)
{
	uint32_t k = 0;

	if (co < have) {
		k = have - co < n ? have - co : n;
		data_iov_add(v, src + co, k);
	}
	data_iov_add(v, NULL, n - k);
}

size_t
objfs_data_iov_max(struct objfs_store *s, size_t len)
{
	/* Per chunk touched: one piece of data and zeros after it; zeros
	 * come in pieces of sizeof(zeros). */
	return 2 * (len / s->chunk_size + 2) + len / sizeof(zeros) + 2;
}

void
objfs_iov_release(struct objfs_iov *v)
{
	for (size_t i = 0; i < v->nbounce; i++)
		free(v->bounce[i]);
	free(v->bounce);
	v->bounce = NULL;
	v->nbounce = 0;
}

/*
 * Bytes [@off, @off + @len) of @ip as a read gets them (ip->lock held),
 * handed to @fn as one list of pieces and then let go: how the daemon
 * reads an object for itself (its checksum, a sealed object's own file).
 * -EIO when fewer than @len bytes came (the size said there were more).
 */
int
objfs_data_read_to(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t off, uint32_t len,
		int (*fn)(void *arg, struct iovec *iov, size_t n), void *arg)
{
	struct objfs_iov v = { 0 };
	size_t got = 0;
	int rc;

	v.iov = malloc(objfs_data_iov_max(s, len) * sizeof(v.iov[0]));
	if (!v.iov)
		return -ENOMEM;
	rc = objfs_data_read_iov(s, ip, off, len, &v);
	for (size_t i = 0; rc == 0 && i < v.n; i++)
		got += v.iov[i].iov_len;
	if (rc == 0 && got != len)
		rc = -EIO;
	if (rc == 0)
		rc = fn(arg, v.iov, v.n);
	objfs_iov_release(&v);
	free(v.iov);
	return rc;
}
