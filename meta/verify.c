/* SPDX-License-Identifier: MIT */
/*
 * verify.c - the walk of the whole index, in a child process before it is
 * opened (objfs_meta_verify): every DB, LMDB's free list included, every
 * record's checksum.  See meta.h.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "src/base/csum.h"
#include "src/base/log.h"
#include "meta/meta.h"
#include "meta/meta_int.h"
#include "meta/meta_keys.h"
#include "meta/meta_priv.h"

/* ---- the structural walk (objfs_meta_verify) --------------------------- */

struct verify_ctx {
	struct objfs_meta_report *r;
	int db;
};

static int
count_rec(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct verify_ctx *c = arg;

	c->r->records++;
	if (c->db >= 0 && !ok)
		c->r->damaged++;
	return 0;
}

/* In the child: everything LMDB can be asked to read. */
static void
verify_walk(const char *dir, struct objfs_meta_report *r)
{
	struct objfs_meta m = { 0 };
	struct objfs_meta_txn t = { &m, NULL, 0 };
	struct verify_ctx c = { r, -1 };
	MDB_envinfo info;
	struct stat fs;
	char path[4200];
	uint64_t ckpt = 0;
	int rc;

	rc = meta_env_open(&m, dir, 1);
	if (rc) {
		r->status = meta_open_err(rc);
		snprintf(r->what, sizeof(r->what), "%s", rc == MDB_INVALID ?
			"not an LMDB file" : mdb_strerror(rc));
		return;
	}
	/* The file may end before the last page LMDB numbered: a page that a
	 * transaction took and gave back ("loose") is never written, and
	 * when it is the last one the file stops short of it.  Such a page
	 * is free, never read.  A page in use past the end is found by the
	 * walk below, whose read of it raises SIGBUS in this child. */
	if (mdb_env_info(m.env, &info) == 0)
		r->pages = info.me_last_pgno + 1;
	rc = mdb_txn_begin(m.env, NULL, MDB_RDONLY, &t.txn);
	for (int db = 0; rc == 0 && db < 2; db++) {
		/* LMDB's own: the free list and the table of DBs */
		m.dbi[0] = (MDB_dbi)db;
		c.db = -1;
		rc = meta_walk_db(&t, 0, count_rec, &c) < 0 ? MDB_CORRUPTED : 0;
	}
	for (int db = 0; rc == 0 && db < OBJFS_META_NDBS; db++) {
		rc = mdb_dbi_open(t.txn, db_names[db], 0, &m.dbi[db]);
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			m.dbi[db] = 0;
			continue;
		}
		c.db = db;
		if (rc == 0 && meta_walk_db(&t, db, count_rec, &c) < 0)
			rc = MDB_CORRUPTED;
	}
	r->schema = OBJFS_META_SCHEMA;
	if (rc == 0 && m.dbi[DB_SUPER] && meta_legacy_schema(&m, t.txn))
		r->schema = 1;
	else if (rc == 0 && m.dbi[DB_SUPER])
		rc = meta_super_get_raw(&m, t.txn, OBJFS_SUPER_JOURNAL, &ckpt);
	if (rc == MDB_NOTFOUND)
		rc = 0;
	if (rc) {
		r->status = -EUCLEAN;
		snprintf(r->what, sizeof(r->what), "its structure is damaged (%s)",
			mdb_strerror(rc));
	} else {
		unsigned char *buf = NULL;
		size_t cap = 0, len;
		uint64_t off = 0;
		int fd;

		snprintf(path, sizeof(path), "%s/journal", dir);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && fstat(fd, &fs) == 0) {
			while ((len = objfs_meta_journal_read(fd, (uint64_t)fs.st_size, off,
					ckpt + r->journal_records + 1, &buf,
					&cap)) > 0) {
				off += JHDR + len;
				r->journal_records++;
			}
		}
		if (fd >= 0)
			close(fd);
		free(buf);
	}
	if (t.txn)
		mdb_txn_abort(t.txn);
	mdb_env_close(m.env);
}

int
objfs_meta_verify(const char *dir, struct objfs_meta_report *r)
{
	struct objfs_meta_report rep;
	int pfd[2], status;
	ssize_t n;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (pipe(pfd) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		/* A page past the end of the file or a wild pointer must end
		 * this child, whatever handler the process had set. */
		signal(SIGBUS, SIG_DFL);
		signal(SIGSEGV, SIG_DFL);
		close(pfd[0]);
		memset(&rep, 0, sizeof(rep));
		verify_walk(dir, &rep);
		_exit(write(pfd[1], &rep, sizeof(rep)) == sizeof(rep) ? 0 : 1);
	}
	close(pfd[1]);
	do {
		n = read(pfd[0], &rep, sizeof(rep));
	} while (n < 0 && errno == EINTR);
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* The child writes its report once the walk is done: that is the
	 * verdict (a tool such as valgrind may change its exit status). */
	if (n == sizeof(rep)) {
		*r = rep;
		return 0;
	}
	r->status = -EUCLEAN;
	if (WIFSIGNALED(status))
		snprintf(r->what, sizeof(r->what), "reading it crashed (%s): its "
			"pages are damaged", strsignal(WTERMSIG(status)));
	else
		snprintf(r->what, sizeof(r->what), "reading it failed");
	return 0;
}
