/* SPDX-License-Identifier: MIT */
/*
 * uring.c - FUSE over io_uring (kernel 6.14+), which libfuse 3.14 cannot
 * drive: one queue per possible CPU, each served by a thread pinned to
 * that CPU, so that a request is taken, served and answered on the CPU
 * of the process that made it, without the cross-CPU wake-ups of
 * /dev/fuse reads.
 *
 * The kernel's protocol (fs/fuse/dev_uring.c, <linux/fuse.h> 7.42): each
 * ring entry is two buffers given once with FUSE_IO_URING_CMD_REGISTER, a
 * header (the fuse_in_header, the opcode's own argument struct, and the
 * payload size) and a payload of max_write bytes (the remaining
 * arguments).  A completed command means a request is in the entry; the
 * answer goes back in the same buffers (fuse_out_header in the header,
 * the reply's arguments in the payload) with
 * FUSE_IO_URING_CMD_COMMIT_AND_FETCH, which also asks for the next one.
 * The kernel sends a request to the queue of the CPU its process runs
 * on, and uses io_uring only once every queue has an entry.  FORGET,
 * INTERRUPT and notifications still go through /dev/fuse, where
 * libfuse's own loop keeps reading.
 *
 * Each request is rebuilt as /dev/fuse would have delivered it (header,
 * opcode struct, payload, in one buffer: the entry's payload buffer has
 * room in front for the first two) and handed to libfuse, whose reply
 * comes back through session.c's writev hook: objfs_uring_capture()
 * copies a reply whose unique is the current request's into the entry.
 *
 * Rings are created before the INIT reply asks for io_uring, so that a
 * kernel or a sysctl that refuses io_uring leaves the mount on /dev/fuse
 * instead of without any transport.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/io_uring.h>
#include <fuse_lowlevel.h>

#include "src/base/log.h"
#include "src/base/metrics.h"
#include "src/store.h"
#include "fuse/ops_int.h"

/* <linux/fuse.h> 7.42; Debian 12's headers (7.38) predate them. */
#define K_URING_CMD_REGISTER		1u
#define K_URING_CMD_COMMIT_AND_FETCH	2u

struct k_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;
	uint32_t payload_sz;
	uint32_t padding;
	uint64_t reserved;
};

struct k_uring_req_header {
	char in_out[128];	/* fuse_in_header in, fuse_out_header out */
	char op_in[128];	/* the opcode's argument struct */
	struct k_uring_ent_in_out ent;
};

struct k_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

/* struct fuse_in_header and fuse_out_header */
struct k_in_header {
	uint32_t len;
	uint32_t opcode;
	uint64_t unique;
	uint64_t nodeid;
	uint32_t uid, gid, pid;
	uint16_t total_extlen;
	uint16_t padding;
};

struct k_out_header {
	uint32_t len;
	int32_t error;
	uint64_t unique;
};

_Static_assert(sizeof(struct k_in_header) == K_IN_HDR, "ABI");
_Static_assert(sizeof(struct k_out_header) == K_OUT_HDR, "ABI");
_Static_assert(sizeof(struct k_uring_ent_in_out) == 32, "ABI");
_Static_assert(sizeof(struct k_uring_req_header) == 288, "ABI");
_Static_assert(sizeof(struct k_uring_cmd_req) == 24, "ABI");

#define DEPTH		1	/* entries per ring (thread) */
#define MAX_PER_QUEUE	16	/* threads per queue */
#define FRONT		4096	/* room before the payload: header, op */
#define PAYLOAD		OBJFS_MAX_WRITE
#define STOP_TAG	UINT64_MAX
#define K_FSYNC		20	/* opcodes */
#define K_FSYNCDIR	30

struct uring_ent {
	struct k_uring_req_header hdr;
	struct iovec iov[2];
	char *buf;		/* FRONT + PAYLOAD bytes, mmap'ed */
	uint64_t unique;	/* of the request being served */
	int replied;
	int live;		/* registered, not failed */
};

struct uring_queue {
	struct objfs_uring *u;
	unsigned qid;
	int ring;
	pthread_t thread;
	int started;
	/* the ring's mapping (one, IORING_FEAT_SINGLE_MMAP: both queues) */
	void *sq_map;
	size_t sq_len;
	struct io_uring_sqe *sqes;	/* 128-byte entries (SQE128) */
	size_t sqes_len;
	_Atomic unsigned *sq_tail, *cq_head;
	_Atomic unsigned *cq_tail;
	unsigned sq_mask, cq_mask;
	unsigned *sq_array;
	struct io_uring_cqe *cqes;
	unsigned pending;	/* SQEs written, not yet submitted */
	cpu_set_t cpu;		/* the queue's CPU */
	/* The thread's priority (see watch_thread) */
	_Atomic pid_t tid;
	int statfd;		/* its /proc schedstat, or -1 */
	unsigned long long delay;	/* ns it has waited to run, so far */
	_Atomic unsigned long done;	/* requests it answered */
	unsigned long done_seen;
	long long normal_until;	/* ms: SCHED_OTHER till then; 0: idle */
	struct uring_ent ent[DEPTH];
};

struct objfs_uring {
	struct objfs_fuse *f;
	int devfd;
	int stopfd;		/* eventfd: polled by every ring */
	unsigned nq;		/* the kernel's queues: possible CPUs */
	unsigned per;		/* threads (rings) per queue */
	unsigned nr;		/* nq * per */
	_Atomic int stopping;
	cpu_set_t all;		/* the daemon's CPUs */
	int idle;		/* the threads wait as SCHED_IDLE */
	pthread_t watch;
	int watch_started;
	_Atomic unsigned boosts;	/* times a queue had to be raised */
	struct uring_queue *q;
};

static _Thread_local struct uring_ent *cur;

static void reply_error(struct uring_ent *e, int err);
static void fall_back(struct uring_queue *q);

static int
sys_setup(unsigned entries, struct io_uring_params *p)
{
	return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int
sys_enter(int fd, unsigned submit, unsigned wait, unsigned flags)
{
	return (int)syscall(__NR_io_uring_enter, fd, submit, wait, flags,
			NULL, 0);
}

/* The number of possible CPUs: the kernel makes that many queues. */
static unsigned
possible_cpus(void)
{
	char line[256];
	unsigned n = 0;
	FILE *fp = fopen("/sys/devices/system/cpu/possible", "r");
	char *p;

	if (!fp)
		return 0;
	if (!fgets(line, sizeof(line), fp)) {
		fclose(fp);
		return 0;
	}
	fclose(fp);
	/* "0-63" or "0,2-5": the highest CPU number plus one */
	for (p = line; *p;) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p)
			break;
		if (v + 1 > n)
			n = (unsigned)v + 1;
		p = end;
		if (*p == '-' || *p == ',')
			p++;
		else
			break;
	}
	return n;
}

static void
queue_unmap(struct uring_queue *q)
{
	unsigned i;

	for (i = 0; i < DEPTH; i++)
		if (q->ent[i].buf)
			munmap(q->ent[i].buf, FRONT + PAYLOAD);
	if (q->sqes)
		munmap(q->sqes, q->sqes_len);
	if (q->sq_map)
		munmap(q->sq_map, q->sq_len);
	if (q->ring >= 0)
		close(q->ring);
	q->ring = -1;
	if (q->statfd >= 0)
		close(q->statfd);
	q->statfd = -1;
}

static int
queue_setup(struct uring_queue *q)
{
	struct io_uring_params p;
	unsigned i;
	char *sq;

	/* The queue's thread is the ring's only user: with DEFER_TASKRUN
	 * the kernel queues the work of handing it a request for the
	 * moment it waits for completions, instead of interrupting it.
	 * Made here, disabled, and enabled by that thread, which the
	 * kernel then takes for the ring's one submitter. */
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE |
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
		IORING_SETUP_R_DISABLED;
	p.cq_entries = 2 * (DEPTH + 1);
	q->ring = sys_setup(DEPTH + 1, &p);
	if (q->ring < 0 && errno == EINVAL) {
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE |
			IORING_SETUP_R_DISABLED;
		p.cq_entries = 2 * (DEPTH + 1);
		q->ring = sys_setup(DEPTH + 1, &p);
	}
	if (q->ring < 0)
		return -errno;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP))
		return -EOPNOTSUPP;
	q->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	if (p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe) >
	    q->sq_len)
		q->sq_len = p.cq_off.cqes +
			p.cq_entries * sizeof(struct io_uring_cqe);
	q->sq_map = mmap(NULL, q->sq_len, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_POPULATE, q->ring, IORING_OFF_SQ_RING);
	if (q->sq_map == MAP_FAILED) {
		q->sq_map = NULL;
		return -errno;
	}
	q->sqes_len = p.sq_entries * 2 * sizeof(struct io_uring_sqe);
	q->sqes = mmap(NULL, q->sqes_len, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_POPULATE, q->ring, IORING_OFF_SQES);
	if (q->sqes == MAP_FAILED) {
		q->sqes = NULL;
		return -errno;
	}
	sq = q->sq_map;
	q->sq_tail = (_Atomic unsigned *)(sq + p.sq_off.tail);
	q->sq_mask = *(unsigned *)(sq + p.sq_off.ring_mask);
	q->sq_array = (unsigned *)(sq + p.sq_off.array);
	q->cq_head = (_Atomic unsigned *)(sq + p.cq_off.head);
	q->cq_tail = (_Atomic unsigned *)(sq + p.cq_off.tail);
	q->cq_mask = *(unsigned *)(sq + p.cq_off.ring_mask);
	q->cqes = (struct io_uring_cqe *)(sq + p.cq_off.cqes);
	for (i = 0; i < DEPTH; i++) {
		struct uring_ent *e = &q->ent[i];

		e->buf = mmap(NULL, FRONT + PAYLOAD, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (e->buf == MAP_FAILED) {
			e->buf = NULL;
			return -ENOMEM;
		}
		e->iov[0].iov_base = &e->hdr;
		e->iov[0].iov_len = sizeof(e->hdr);
		e->iov[1].iov_base = e->buf + FRONT;
		e->iov[1].iov_len = PAYLOAD;
	}
	return 0;
}

/* The next SQE (128 bytes with SQE128), zeroed and queued. */
static struct io_uring_sqe *
queue_sqe(struct uring_queue *q)
{
	unsigned tail = atomic_load_explicit(q->sq_tail, memory_order_relaxed);
	unsigned idx = (tail + q->pending) & q->sq_mask;
	struct io_uring_sqe *sqe = (struct io_uring_sqe *)
		((char *)q->sqes + (size_t)idx * 2 * sizeof(*sqe));

	memset(sqe, 0, 2 * sizeof(*sqe));
	q->sq_array[idx] = idx;
	q->pending++;
	return sqe;
}

static void
queue_cmd(struct uring_queue *q, unsigned i, unsigned op)
{
	struct io_uring_sqe *sqe = queue_sqe(q);
	struct k_uring_cmd_req *cmd = (struct k_uring_cmd_req *)sqe->cmd;

	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->u->devfd;
	sqe->cmd_op = op;
	sqe->addr = (uint64_t)(uintptr_t)q->ent[i].iov;
	sqe->len = 2;
	sqe->user_data = i;
	cmd->qid = (uint16_t)q->qid;
	cmd->commit_id = q->ent[i].hdr.ent.commit_id;
}

/* Submit what is queued and wait for at least one completion. */
static int
queue_enter(struct uring_queue *q)
{
	unsigned n = q->pending;
	int rc;

	atomic_store_explicit(q->sq_tail,
		atomic_load_explicit(q->sq_tail, memory_order_relaxed) + n,
		memory_order_release);
	q->pending = 0;
	do
		rc = sys_enter(q->ring, n, 1, IORING_ENTER_GETEVENTS);
	while (rc < 0 && errno == EINTR && (n = 0, 1));
	return rc < 0 ? -errno : 0;
}

/* Serve the request in @e: rebuild it as /dev/fuse delivers it and let
 * libfuse dispatch it; the reply lands in @e through the writev hook. */
static void
serve(struct uring_queue *q, struct uring_ent *e)
{
	struct k_in_header ih;
	uint32_t psz = e->hdr.ent.payload_sz;
	size_t op;
	char *start;
	struct fuse_buf fb;
	uint64_t t0;
	int cls;

	memcpy(&ih, e->hdr.in_out, sizeof(ih));
	e->unique = ih.unique;
	e->replied = 0;
	if (ih.len < K_IN_HDR + (uint64_t)psz || psz > PAYLOAD ||
	    (op = ih.len - K_IN_HDR - psz) > sizeof(e->hdr.op_in)) {
		objfs_log(OBJFS_LOG_ERR, "io_uring: request %llu (opcode %u) "
			"of %u bytes does not fit its entry (payload %u)",
			(unsigned long long)ih.unique, ih.opcode, ih.len, psz);
		reply_error(e, EIO);
		return;
	}
	start = e->buf + FRONT - op - K_IN_HDR;
	memcpy(start, &ih, K_IN_HDR);
	memcpy(start + K_IN_HDR, e->hdr.op_in, op);
	memset(&fb, 0, sizeof(fb));
	fb.mem = start;
	fb.size = ih.len;
	cur = e;
	t0 = objfs_mono_ns();
	if (ih.opcode == K_FSYNC || ih.opcode == K_FSYNCDIR) {
		/* Waits for the disk twice: let the wake-up after each
		 * flush run this thread on whichever CPU is free. */
		sched_setaffinity(0, sizeof(q->u->all), &q->u->all);
		fuse_session_process_buf(q->u->f->se, &fb);
		sched_setaffinity(0, sizeof(q->cpu), &q->cpu);
	} else {
		fuse_session_process_buf(q->u->f->se, &fb);
	}
	cur = NULL;
	if ((cls = objfs_op_class(ih.opcode)) >= 0)
		objfs_latency_observe(&objfs_store_latency(q->u->f->store)[cls],
				objfs_mono_ns() - t0);
	if (!e->replied) {
		objfs_log(OBJFS_LOG_ERR, "io_uring: request %llu (opcode %u) "
			"got no reply", (unsigned long long)ih.unique,
			ih.opcode);
		reply_error(e, EIO);
	}
}

static void
reply_error(struct uring_ent *e, int err)
{
	struct k_out_header oh = {
		.len = K_OUT_HDR, .error = -err, .unique = e->unique,
	};

	memcpy(e->hdr.in_out, &oh, sizeof(oh));
	e->hdr.ent.payload_sz = 0;
	e->replied = 1;
}

ssize_t
objfs_uring_capture(const struct iovec *iov, int count)
{
	struct uring_ent *e = cur;
	struct k_out_header oh;
	size_t total = 0, len = 0;
	char *dst;
	int i;

	if (!e || e->replied || count < 1 || iov[0].iov_len < K_OUT_HDR)
		return -1;
	memcpy(&oh, iov[0].iov_base, sizeof(oh));
	if (oh.unique != e->unique)
		return -1;	/* a notification: /dev/fuse takes it */
	for (i = 0; i < count; i++)
		total += iov[i].iov_len;
	if (total - K_OUT_HDR > PAYLOAD) {
		objfs_log(OBJFS_LOG_ERR, "io_uring: a reply of %zu bytes "
			"exceeds the entry's %u", total, PAYLOAD);
		reply_error(e, EIO);
		return (ssize_t)total;
	}
	memcpy(e->hdr.in_out, &oh, sizeof(oh));
	dst = e->buf + FRONT;
	for (i = 0; i < count; i++) {
		const char *src = iov[i].iov_base;
		size_t n = iov[i].iov_len;

		if (i == 0) {
			src += K_OUT_HDR;
			n -= K_OUT_HDR;
		}
		memmove(dst + len, src, n);
		len += n;
	}
	e->hdr.ent.payload_sz = (uint32_t)len;
	e->replied = 1;
	return (ssize_t)total;
}

static void
arm_stop(struct uring_queue *q)
{
	struct io_uring_sqe *sqe = queue_sqe(q);

	sqe->opcode = IORING_OP_POLL_ADD;
	sqe->fd = q->u->stopfd;
	sqe->poll32_events = POLLIN;
	sqe->user_data = STOP_TAG;
}

static void *
queue_thread(void *arg)
{
	struct uring_queue *q = arg;
	struct objfs_uring *u = q->u;
	cpu_set_t set;
	unsigned i, live = 0, again = 0;
	sigset_t all;
	char name[32];

	snprintf(name, sizeof(name), "objfs-q%u.%u", q->qid,
		(unsigned)(q - u->q) % u->per);
	name[15] = '\0';	/* the kernel keeps 15 */
	pthread_setname_np(pthread_self(), name);
	/* Signals are libfuse's loop's to take. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	CPU_ZERO(&set);
	CPU_SET(q->qid, &set);
	q->cpu = set;
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		objfs_log(OBJFS_LOG_DEBUG, "io_uring queue %u: cannot pin "
			"to its CPU: %s", q->qid, strerror(errno));
	if (syscall(__NR_io_uring_register, q->ring,
			IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0) {
		objfs_log(OBJFS_LOG_ERR, "io_uring queue %u: cannot enable "
			"its ring: %s", q->qid, strerror(errno));
		fall_back(q);
		return NULL;
	}
	if (u->idle) {
		struct sched_param sp = { 0 };

		if (sched_setscheduler(0, SCHED_IDLE, &sp) != 0)
			objfs_log(OBJFS_LOG_DEBUG, "io_uring queue %u: "
				"SCHED_IDLE: %s", q->qid, strerror(errno));
	}
	atomic_store(&q->tid, (pid_t)syscall(SYS_gettid));
	arm_stop(q);
	for (i = 0; i < DEPTH; i++)
		queue_cmd(q, i, K_URING_CMD_REGISTER);
	live = DEPTH;
	while (live && !atomic_load(&u->stopping)) {
		unsigned head, tail;
		int rc = queue_enter(q);

		if (rc < 0) {
			objfs_log(OBJFS_LOG_ERR, "io_uring queue %u: %s",
				q->qid, strerror(-rc));
			break;
		}
		head = atomic_load_explicit(q->cq_head, memory_order_relaxed);
		tail = atomic_load_explicit(q->cq_tail, memory_order_acquire);
		for (; head != tail; head++) {
			struct io_uring_cqe *cqe = &q->cqes[head & q->cq_mask];
			uint64_t tag = cqe->user_data;
			int res = cqe->res;
			struct uring_ent *e;

			if (tag == STOP_TAG)
				continue;	/* the loop sees stopping */
			if (tag >= DEPTH)
				continue;
			e = &q->ent[tag];
			if (res == -EAGAIN && again++ < 1000) {
				/* INIT is not processed yet */
				usleep(1000);
				queue_cmd(q, (unsigned)tag,
					K_URING_CMD_REGISTER);
				continue;
			}
			if (res == -ENOTCONN || res == -ECANCELED) {
				/* the mount is gone */
				live--;
				continue;
			}
			if (res < 0 && !e->live) {
				/* a REGISTER refused: the kernel falls back
				 * to /dev/fuse, whose readers must block */
				atomic_store(&u->f->reader_poll, 0);
				objfs_log(OBJFS_LOG_ERR, "io_uring queue %u: "
					"the kernel refused an entry (%s): "
					"requests stay on /dev/fuse", q->qid,
					strerror(-res));
				live--;
				continue;
			}
			if (res < 0) {
				/* A COMMIT_AND_FETCH the kernel refused (the
				 * request no longer known to it): the kernel's
				 * entry is lost to it, but its buffers are
				 * ours; register them as a new one, or the
				 * queue would lose a thread. */
				objfs_log(OBJFS_LOG_ERR, "io_uring queue %u: an "
					"answer was refused (%s); the entry "
					"registers again", q->qid,
					strerror(-res));
				e->live = 0;
				queue_cmd(q, (unsigned)tag,
					K_URING_CMD_REGISTER);
				continue;
			}
			e->live = 1;
			serve(q, e);
			/* its own counter, summed at the end: no line
			 * shared by both CPUs on the way */
			atomic_store_explicit(&q->done, atomic_load_explicit(
				&q->done, memory_order_relaxed) + 1,
				memory_order_relaxed);
			queue_cmd(q, (unsigned)tag,
				K_URING_CMD_COMMIT_AND_FETCH);
		}
		atomic_store_explicit(q->cq_head, head, memory_order_release);
	}
	return NULL;
}

/* Called while the INIT reply is built: make every queue's ring, or
 * none.  0 when io_uring can be asked for. */
int
objfs_uring_prepare(struct objfs_fuse *f)
{
	struct objfs_uring *u;
	unsigned i, n = possible_cpus();
	int rc = -ENOMEM;

	if (n == 0 || n > 4096)
		return -EOPNOTSUPP;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->f = f;
	u->devfd = fuse_session_fd(f->se);
	if (sched_getaffinity(0, sizeof(u->all), &u->all) != 0) {
		CPU_ZERO(&u->all);
		for (i = 0; i < n && i < CPU_SETSIZE; i++)
			CPU_SET(i, &u->all);
	}
	u->nq = n;
	u->per = f->o.threads / n;
	if (u->per < 1)
		u->per = 1;
	if (u->per > MAX_PER_QUEUE)
		u->per = MAX_PER_QUEUE;
	u->nr = n * u->per;
	u->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	u->q = calloc(u->nr, sizeof(*u->q));
	if (u->stopfd < 0 || !u->q)
		goto err;
	for (i = 0; i < u->nr; i++) {
		u->q[i].u = u;
		u->q[i].qid = i / u->per;
		u->q[i].ring = -1;
		u->q[i].statfd = -1;
	}
	for (i = 0; i < u->nr; i++) {
		rc = queue_setup(&u->q[i]);
		if (rc < 0)
			goto err;
	}
	f->uring = u;
	return 0;

err:
	objfs_log(OBJFS_LOG_INFO, "io_uring: cannot set up %u queues (%s): "
		"requests stay on /dev/fuse", n, strerror(-rc));
	for (i = 0; u->q && i < u->nr; i++)
		queue_unmap(&u->q[i]);
	free(u->q);
	if (u->stopfd >= 0)
		close(u->stopfd);
	free(u);
	return rc;
}

/* The kernel holds every request until each queue has an entry; a
 * REGISTER it refuses makes it go back to /dev/fuse.  Sent on the ring of
 * a queue whose thread did not start. */
static void
fall_back(struct uring_queue *q)
{
	struct io_uring_sqe *sqe = queue_sqe(q);
	struct k_uring_cmd_req *cmd = (struct k_uring_cmd_req *)sqe->cmd;

	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->u->devfd;
	sqe->cmd_op = K_URING_CMD_REGISTER;
	sqe->addr = (uint64_t)(uintptr_t)q->ent[0].iov;
	sqe->len = 1;		/* the kernel wants 2: EINVAL */
	cmd->qid = (uint16_t)q->qid;
	if (queue_enter(q) < 0)
		objfs_log(OBJFS_LOG_ERR, "io_uring: cannot fall back to "
			"/dev/fuse; requests will wait");
	else
		objfs_log(OBJFS_LOG_INFO, "io_uring: requests stay on "
			"/dev/fuse");
}

/*
 * -o io_uring=idle: why SCHED_IDLE.  A request's reply wakes its caller
 * while the queue thread is still on the CPU (in io_uring_enter), so the
 * scheduler, which takes a CPU running a normal task for busy, moves the
 * caller to the other, idle CPU; its next request goes to that CPU's
 * queue, and the caller and the daemon swap CPUs at every request.  A
 * CPU whose only task is SCHED_IDLE counts as idle: the caller stays, and
 * preempts the thread at once.  Measured, /usr/include: tar -x 0.54-0.90
 * -> 0.40-0.49 s, rm -rf 0.12-0.15 -> 0.09-0.10 s, as with tar pinned.
 *
 * The risk is starvation: a SCHED_IDLE thread gets almost no CPU beside a
 * busy normal task.  So this thread adds up, every 10 ms, the time each
 * queue's threads waited to run (/proc schedstat) and the requests they
 * answered, and makes the queue's threads SCHED_OTHER for 5 s when they
 * waited more than 2 ms, and more than 0.5 ms per answer.  It is not the
 * default: requests the caller does not wait for (read-ahead, write-back)
 * wait behind the caller's own computing, and whether the watch catches
 * that is not shown; the benchmark's mapped reads were 0.52-1.21 s with
 * it, 0.57-0.82 s without, the same day (doc/benchmarks.md).
 */
#define WATCH_NS	(10 * 1000 * 1000)
#define STARVED_NS	(2ull * 1000 * 1000)
#define PER_REQUEST_NS	(500ull * 1000)
#define NORMAL_MS	5000

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
read_delay(struct uring_queue *q, unsigned long long *delay)
{
	char buf[128];
	unsigned long long run, wait;
	ssize_t n;
	pid_t tid = atomic_load(&q->tid);

	if (!tid)
		return -1;
	if (q->statfd < 0) {
		snprintf(buf, sizeof(buf), "/proc/self/task/%d/schedstat",
			(int)tid);
		q->statfd = open(buf, O_RDONLY | O_CLOEXEC);
		if (q->statfd < 0)
			return -1;
	}
	n = pread(q->statfd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
		return -1;
	*delay = wait;
	return 0;
}

static void
set_policy(struct objfs_uring *u, unsigned qid, int policy, long long until)
{
	struct sched_param sp = { 0 };

	for (unsigned i = qid * u->per; i < (qid + 1) * u->per; i++) {
		struct uring_queue *q = &u->q[i];
		pid_t tid = atomic_load(&q->tid);

		if (tid && sched_setscheduler(tid, policy, &sp) == 0)
			q->normal_until = until;
	}
}

static void *
watch_thread(void *arg)
{
	struct objfs_uring *u = arg;
	const struct timespec ts = { 0, WATCH_NS };
	sigset_t all;

	pthread_setname_np(pthread_self(), "objfs-qwatch");
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!atomic_load(&u->stopping)) {
		long long now;

		nanosleep(&ts, NULL);
		now = now_ms();
		for (unsigned qid = 0; qid < u->nq; qid++) {
			unsigned long long waited = 0, answered = 0;
			struct uring_queue *first = &u->q[qid * u->per];
			int known = 1;

			for (unsigned i = qid * u->per; i < (qid + 1) * u->per;
			     i++) {
				struct uring_queue *q = &u->q[i];
				unsigned long long d, was = q->delay;
				unsigned long done = atomic_load_explicit(
					&q->done, memory_order_relaxed);

				answered += done - q->done_seen;
				q->done_seen = done;
				if (read_delay(q, &d) < 0) {
					known = 0;
					continue;
				}
				q->delay = d;
				if (!was)
					known = 0;
				waited += d - was;
			}
			if (!known)
				continue;
			/* Waiting to run while answering requests quickly is
			 * the client taking the CPU back, which is the point;
			 * waiting long for each answer is starving. */
			if (!first->normal_until && waited > STARVED_NS &&
			    waited > PER_REQUEST_NS * answered) {
				set_policy(u, qid, SCHED_OTHER, now + NORMAL_MS);
				atomic_fetch_add(&u->boosts, 1);
			} else if (first->normal_until &&
				   now > first->normal_until) {
				set_policy(u, qid, SCHED_IDLE, 0);
			}
		}
	}
	return NULL;
}

/* Can a thread that made itself SCHED_IDLE go back (CAP_SYS_NICE, or an
 * RLIMIT_NICE that allows nice 0)?  Tried on a thread of its own. */
static void *
probe_idle(void *arg)
{
	struct sched_param sp = { 0 };
	int *ok = arg;

	*ok = sched_setscheduler(0, SCHED_IDLE, &sp) == 0 &&
		sched_setscheduler(0, SCHED_OTHER, &sp) == 0;
	return NULL;
}

static int
idle_possible(void)
{
	pthread_t t;
	int ok = 0;

	if (pthread_create(&t, NULL, probe_idle, &ok) != 0)
		return 0;
	pthread_join(t, NULL);
	return ok;
}

/* Called once the INIT reply (asking for io_uring) is written. */
void
objfs_uring_start(struct objfs_fuse *f)
{
	struct objfs_uring *u = f->uring;
	unsigned i;

	u->idle = f->o.uring == 2 && idle_possible();
	if (f->o.uring == 2 && !u->idle)
		objfs_log(OBJFS_LOG_INFO, "io_uring=idle: a thread cannot go "
			"back from SCHED_IDLE here (CAP_SYS_NICE or "
			"RLIMIT_NICE): the queues' threads stay normal");
	if (u->idle && pthread_create(&u->watch, NULL, watch_thread, u) == 0)
		u->watch_started = 1;
	else
		u->idle = 0;
	for (i = 0; i < u->nr; i++) {
		int rc = pthread_create(&u->q[i].thread, NULL, queue_thread,
				&u->q[i]);

		if (rc != 0) {
			objfs_log(OBJFS_LOG_ERR, "io_uring: cannot start queue "
				"%u: %s", i, strerror(rc));
			fall_back(&u->q[i]);
			return;
		}
		u->q[i].started = 1;
	}
	atomic_store(&f->reader_poll, 1);
	objfs_log(OBJFS_LOG_INFO, "requests through io_uring: %u queues "
		"of %u threads%s", u->nq, u->per, u->idle ? ", waiting as "
		"SCHED_IDLE" : "");
}

void
objfs_uring_stop(struct objfs_fuse *f)
{
	struct objfs_uring *u = f->uring;
	unsigned long long served = 0;
	uint64_t one = 1;
	unsigned i;

	if (!u)
		return;
	atomic_store(&u->stopping, 1);
	if (write(u->stopfd, &one, sizeof(one)) < 0)
		objfs_log(OBJFS_LOG_ERR, "io_uring: cannot stop the queues: "
			"%s", strerror(errno));
	for (i = 0; i < u->nr; i++)
		if (u->q[i].started)
			pthread_join(u->q[i].thread, NULL);
	if (u->watch_started)
		pthread_join(u->watch, NULL);
	for (i = 0; i < u->nr; i++)
		queue_unmap(&u->q[i]);
	for (i = 0; i < u->nr; i++)
		served += atomic_load(&u->q[i].done);
	objfs_log(OBJFS_LOG_INFO, "io_uring: %llu requests served; a queue "
		"raised from SCHED_IDLE %u times",
		served,
		atomic_load(&u->boosts));
	free(u->q);
	close(u->stopfd);
	free(u);
	f->uring = NULL;
}
