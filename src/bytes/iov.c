/* SPDX-License-Identifier: MIT */
/*
 * iov.c - the list of pieces a read is served from (struct objfs_iov,
 * store.h): arena blocks, read-ahead slots, buffers of its own and a
 * static zero page.  Below data.c and readahead.c, which both add to it.
 */
#include <config.h>

#include <stdlib.h>

#include "src/bytes/data_int.h"

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
