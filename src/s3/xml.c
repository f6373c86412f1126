/* SPDX-License-Identifier: MIT */
/*
 * xml.c - the S3 answers that are XML (s3_int.h), read with expat: a
 * ListObjectsV2 page's keys and sizes, and its continuation token.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_S3
#include <expat.h>

#include "src/s3/s3_int.h"

struct list_parse {
	int (*cb)(void *arg, const char *key, uint64_t size);
	void *arg;
	int depth, in_contents, rc, truncated;
	char el[32];			/* the element whose text is read */
	char text[1100];
	size_t tlen;
	char key[1100];
	uint64_t size;
	char *next;
	size_t nextsize;
};

static void
on_start(void *arg, const char *el, const char **attr)
{
	struct list_parse *p = arg;

	(void)attr;
	p->depth++;
	if (p->depth == 2 && strcmp(el, "Contents") == 0) {
		p->in_contents = 1;
		p->key[0] = '\0';
		p->size = 0;
	}
	snprintf(p->el, sizeof(p->el), "%s", el);
	p->tlen = 0;
	p->text[0] = '\0';
}

static void
on_text(void *arg, const char *s, int len)
{
	struct list_parse *p = arg;
	size_t k = (size_t)len;

	if (p->tlen + k >= sizeof(p->text))
		k = sizeof(p->text) - 1 - p->tlen;
	memcpy(p->text + p->tlen, s, k);
	p->tlen += k;
	p->text[p->tlen] = '\0';
}

static void
on_end(void *arg, const char *el)
{
	struct list_parse *p = arg;

	if (p->depth == 3 && p->in_contents && strcmp(el, "Key") == 0)
		snprintf(p->key, sizeof(p->key), "%s", p->text);
	else if (p->depth == 3 && p->in_contents && strcmp(el, "Size") == 0)
		p->size = strtoull(p->text, NULL, 10);
	else if (p->depth == 2 && strcmp(el, "Contents") == 0) {
		p->in_contents = 0;
		if (p->rc == 0 && p->key[0])
			p->rc = p->cb(p->arg, p->key, p->size);
	} else if (p->depth == 2 && strcmp(el, "IsTruncated") == 0) {
		p->truncated = strcmp(p->text, "true") == 0;
	} else if (p->depth == 2 && strcmp(el, "NextContinuationToken") == 0) {
		snprintf(p->next, p->nextsize, "%s", p->text);
	}
	p->depth--;
	p->tlen = 0;
	p->text[0] = '\0';
}

int
s3_xml_list(const char *xml, size_t len,
		int (*cb)(void *arg, const char *key, uint64_t size),
		void *arg, char *next, size_t nextsize)
{
	struct list_parse p = { .cb = cb, .arg = arg, .next = next,
		.nextsize = nextsize };
	XML_Parser x = XML_ParserCreate(NULL);
	int ok;

	if (!x)
		return -ENOMEM;
	next[0] = '\0';
	XML_SetUserData(x, &p);
	XML_SetElementHandler(x, on_start, on_end);
	XML_SetCharacterDataHandler(x, on_text);
	ok = XML_Parse(x, xml, (int)len, 1) == XML_STATUS_OK;
	XML_ParserFree(x);
	if (!ok)
		return -EPROTO;
	if (p.rc)
		return p.rc;
	if (p.truncated && !next[0])
		return -EPROTO;	/* more, and no way to ask for it */
	if (!p.truncated)
		next[0] = '\0';
	return 0;
}

#endif	/* HAVE_S3 */
