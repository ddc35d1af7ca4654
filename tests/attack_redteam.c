// SPDX-License-Identifier: MIT
/*
 * attack_redteam.c - scenarios 14: what a red-team review found in state
 * the earlier rows did not reach.
 *
 * 14a points the process backend's socket number at a socket whose peer is
 * the attacker's process before a pool is created (its memfd, still
 * writable, would go there). 14b shrinks the process backend's data limit
 * per message so that an 8-byte write goes out in pieces while a reader
 * looks for a torn value. 14c has a child made by a raw fork() create a pool
 * through the API (its record would land in the parent's table and redirect the
 * parent's next write). 14d races the region pointer of a validated segment to
 * a fake region whose backend is the attacker's. 14e stores a fake backend into
 * the table before the first seal. 14f forges the mprotect backend's record of
 * the forking thread so that the fork child keeps windows open.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"
#include "../src/internal.h"

static uint64_t rvictim[2] __wr_rare __attribute__((aligned(16)));

static bool on(const char *name)
{
	return !strcmp(rare_write_backend(), name);
}

/* Store the 32-bit @v at @addr (4-aligned) with a 64-bit store that keeps
 * the other half: whether it went through. */
static bool try_store32(void *addr, uint32_t v)
{
	uintptr_t a = (uintptr_t)addr, w = a & ~(uintptr_t)7;
	uint64_t old = attack_load64((void *)w);
	unsigned shift = (unsigned)(a - w) * 8;
	uint64_t mask = 0xffffffffULL << shift;

	return attack_try_store64((void *)w,
				  (old & ~mask) | ((uint64_t)v << shift));
}

/* 14a ------------------------------------------------------------------ */

/* The helper's socket: the program's only SOCK_SEQPACKET one. */
static int helper_socket(void)
{
	for (int fd = 0; fd < 1024; fd++) {
		struct stat st;
		int type;
		socklen_t l = sizeof(type);

		if (!fstat(fd, &st) && S_ISSOCK(st.st_mode) &&
		    !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) &&
		    type == SOCK_SEQPACKET)
			return fd;
	}
	return -1;
}

struct redirect {
	int from, to;
	unsigned tried;
};

/* Every int of the library that holds the socket number, or a word of its
 * (read-only) table that holds it plus one, gets the attacker's socket. */
static void redirect_socket(const char *name, void *addr, size_t size, bool tls,
			    bool ours, void *arg)
{
	struct redirect *r = arg;

	(void)name;
	if (tls || !ours)
		return;
	if (size == sizeof(int) && !((uintptr_t)addr % 4) &&
	    *(int *)addr == r->from) {
		try_store32(addr, (uint32_t)r->to);
		r->tried++;
		return;
	}
	for (size_t off = 0; off + 8 <= size; off += 8) {
		uint64_t *w = (uint64_t *)((char *)addr + off);

		if (!((uintptr_t)w % 8) &&
		    attack_load64(w) == (uint64_t)r->from + 1) {
			attack_try_store64(w, (uint64_t)r->to + 1);
			r->tried++;
		}
	}
}

/* The attacker's process: answers like the helper, and says on @report
 * whether a memfd came that it could map writable. */
static __attribute__((noreturn)) void evil_peer(int s, int report,
						pid_t program)
{
	static unsigned char buf[1 << 18];
	char got = 0;

	for (;;) {
		union {
			char b[CMSG_SPACE(sizeof(int))];
			struct cmsghdr a;
		} c;
		struct iovec iov = {buf, sizeof(buf)};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = c.b,
				    .msg_controllen = sizeof(c.b)};
		struct {
			uint64_t seq;
			int32_t pid, err;
			uint32_t cpu, pad;
		} reply = {0};
		ssize_t n = recvmsg(s, &mh, 0);

		if (n < 24)
			break;
		if (mh.msg_controllen &&
		    CMSG_FIRSTHDR(&mh)->cmsg_type == SCM_RIGHTS) {
			int fd;
			uint64_t len;

			memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(fd));
			memcpy(&len, buf + 32, sizeof(len));
			if (mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
				 fd, 0) != MAP_FAILED)
				got = 1;
			if (write(report, &got, 1) != 1)
				break;
		}
		memcpy(&reply.seq, buf + 8, sizeof(reply.seq));
		reply.pid = program;
		if (send(s, &reply, sizeof(reply), MSG_NOSIGNAL) < 0)
			break;
	}
	_exit(0);
}

ATTACK("14a", process_socket,
       "point the process backend's socket number at the attacker's socket "
       "before a pool is created (its memfd goes out still writable)")
{
	struct redirect r = {0};
	int sv[2], rep[2];
	char got = 0;
	pid_t peer;

	if (!on("process"))
		attack_report(ATTACK_NA, "no helper");
	r.from = helper_socket();
	if (r.from < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) ||
	    pipe(rep))
		attack_report(ATTACK_ERROR, "setup failed");
	peer = fork();
	if (!peer) {
		close(sv[0]);
		evil_peer(sv[1], rep[1], getppid());
	}
	close(sv[1]);
	close(rep[1]);
	r.to = sv[0];
	attack_begin();
	attack_lib_each_object(redirect_socket, &r);
	if (!r.tried)
		attack_report(ATTACK_ERROR, "found no copy of socket %d",
			      r.from);
	rare_pool_create(1 << 13);
	close(sv[0]);
	if (read(rep[0], &got, 1) != 1)
		got = 0;
	kill(peer, SIGKILL);
	waitpid(peer, NULL, 0);
	attack_verdict(got, "a pool's memfd mapped writable by the attacker");
}

/* 14b ------------------------------------------------------------------ */

struct torn {
	volatile int stop;
	volatile bool seen;
};

/* rvictim[0] holds one of the two values the program writes. (Words inside
 * a large rare_write_memcpy() are not promised whole: memmove() may cover
 * one with two stores.) */
static void *torn_reader(void *p)
{
	struct torn *t = p;

	while (!t->stop) {
		uint64_t v = __atomic_load_n(&rvictim[0], __ATOMIC_RELAXED);

		if (v != 0x1111111111111111ULL && v != 0x2222222222222222ULL)
			t->seen = true;
	}
	return NULL;
}

/* Small values into every word of the library that holds a plausible data
 * limit of the process backend (a page to PRW_MAX_DATA, a multiple of 8). */
static void shrink_limit(const char *name, void *addr, size_t size, bool tls,
			 bool ours, void *arg)
{
	(void)arg;
	if (tls || !ours || (uintptr_t)addr % 8)
		return;
	if (!strcmp(name, "max_data") && size == 8) {
		attack_try_store64(addr, 1);
		return;
	}
	if (strcmp(name, "rw_table"))
		return;
	for (size_t off = 0; off + 8 <= size; off += 8) {
		uint64_t *w = (uint64_t *)((char *)addr + off);
		uint64_t v = attack_load64(w);

		if (v >= 4096 && v <= (128u << 10) && !(v % 8))
			attack_try_store64(w, 1);
	}
}

ATTACK("14b", process_torn,
       "shrink the process backend's data limit per message, then make "
       "aligned 8-byte writes while a reader looks for a torn value")
{
	struct torn t = {0};
	pthread_t th;

	if (!on("process"))
		attack_report(ATTACK_NA, "no helper");
	rare_write(rvictim[0], 0x1111111111111111ULL);
	attack_begin();
	attack_lib_each_object(shrink_limit, NULL);
	pthread_create(&th, NULL, torn_reader, &t);
	for (int i = 0; i < 2000 && !t.seen; i++)
		rare_write(rvictim[0], i & 1 ? 0x1111111111111111ULL
					     : 0x2222222222222222ULL);
	t.stop = 1;
	pthread_join(th, NULL);
	attack_verdict(t.seen, "a torn aligned word seen by a reader");
}

/* 14c ------------------------------------------------------------------ */

ATTACK("14c", raw_fork_api,
       "a child made by raw `syscall(SYS_fork)` creates a pool through the "
       "API; the parent then writes one of its own pools")
{
	struct rare_pool *q0 = rare_pool_create(1 << 16), *q1;
	uint64_t *o0 = q0 ? rare_alloc(q0, 64) : NULL, *o1;
	int status;
	pid_t pid;

	if (!o0)
		attack_report(ATTACK_ERROR, "pool setup failed");
	rare_free(q0, o0);
	rare_pool_destroy(q0); /* a free slot before q1's */
	q1 = rare_pool_create(1 << 18);
	o1 = q1 ? rare_alloc(q1, 64) : NULL;
	if (!o1)
		attack_report(ATTACK_ERROR, "pool setup failed");
	attack_begin();
	pid = (pid_t)syscall(SYS_fork);
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork failed");
	if (!pid) {
		/* Its own pools, in the table it shares with the parent. */
		for (int i = 0; i < 4; i++)
			rare_pool_create(1 << 17);
		rare_write(*o1, 7UL); /* its own copy (or the parent's) */
		_exit(0);
	}
	waitpid(pid, &status, 0);
	if (attack_load64(o1) == 7)
		attack_report(ATTACK_OPEN, "the raw child's write landed");
	rare_write(*o1, ATTACK_MARKER);
	attack_verdict(attack_load64(o1) != ATTACK_MARKER,
		       "the parent's write redirected");
}

/* 14d ------------------------------------------------------------------ */

static struct {
	char *volatile stack;
	volatile int stop;
	volatile int hijacked;
	volatile unsigned stores;
	struct rw_backend fake;
	struct rw_region region;
} race14d;

static void hijack(const struct rw_seg *seg)
{
	(void)seg;
	race14d.hijacked = 1;
}

static void *legit_writer(void *p)
{
	char here;

	(void)p;
	race14d.stack = &here;
	/* A fill: an aligned copy of 8 bytes builds no segment in memory any
	 * more on pwrite, shadow and mprotect (its values stay in registers,
	 * scribbler 15a); a fill still does on pwrite only (shadow's built
	 * write stores its arguments; pkey's, mprotect's and the process
	 * backend's keep them in registers: 27b, 27i). */
	while (!race14d.stop)
		rare_write_memset(&rvictim[0], 0x42, 8);
	return NULL;
}

/* Rewrite the region of every segment of rvictim[0] found on the writer's
 * stack to a fake region: the real record with the attacker's backend.
 * Another thread's stack, redzones and all: not for AddressSanitizer. */
__attribute__((no_sanitize_address)) static void *region_racer(void *p)
{
	uintptr_t want = (uintptr_t)&rvictim[0], t = (uintptr_t)p;
	uint64_t *lo, *hi;

	while (!race14d.stack && !race14d.stop)
		;
	lo = (uint64_t *)(((uintptr_t)race14d.stack - 16384) & ~(uintptr_t)7);
	hi = (uint64_t *)((uintptr_t)race14d.stack & ~(uintptr_t)7);
	while (!race14d.stop && !race14d.hijacked)
		for (volatile uint64_t *w = lo + 1; w + 3 < hi; w++)
			if (w[0] == want && w[2] == 8 && w[-1] >= t &&
			    w[-1] < t + (64u << 10)) {
				w[-1] = (uint64_t)(uintptr_t)&race14d.region;
				race14d.stores++;
			}
	return NULL;
}

ATTACK("14d", segment_region_race,
       "another thread rewrites the region of a validated segment on the "
       "writer's stack to a fake region whose backend is the attacker's")
{
	uintptr_t page = (uintptr_t)&rvictim[0] & ~(uintptr_t)4095;
	char *table = attack_lib_sym("rw_table");
	pthread_t w, a;

	if (!table)
		attack_report(ATTACK_ERROR,
			      "no symbol 'rw_table' in the library");
	for (size_t off = 0; off < (64u << 10); off += 8) {
		const struct rw_region *r = (const void *)(table + off);

		if (r->kind == RW_REGION_SECTION && r->start <= page &&
		    page - r->start < r->len && r->backend) {
			race14d.region = *r;
			break;
		}
	}
	if (!race14d.region.start)
		attack_report(ATTACK_ERROR, "no region record of the section");
	race14d.fake = *race14d.region.backend;
	race14d.fake.write = hijack;
	race14d.region.backend = &race14d.fake;
	attack_begin();
	pthread_create(&w, NULL, legit_writer, NULL);
	pthread_create(&a, NULL, region_racer, table);
	for (int i = 0; i < 40 && !race14d.hijacked; i++)
		usleep(50000);
	race14d.stop = 1;
	pthread_join(w, NULL);
	pthread_join(a, NULL);
	if (race14d.hijacked)
		attack_report(ATTACK_OPEN, "the fake backend's write ran");
	if (!race14d.stores && strcmp(rare_write_backend(), "pwrite"))
		attack_report(ATTACK_BLOCKED,
			      "no segment of the write in memory to rewrite");
	if (!race14d.stores)
		attack_report(ATTACK_ERROR, "never found a segment to rewrite");
	attack_report(ATTACK_BLOCKED, "%u rewrites, no fake call",
		      race14d.stores);
}

/* 14f ------------------------------------------------------------------ */

#define MAX_TID_COPIES 16

struct tid_copies {
	int32_t tid;
	unsigned n;
	int32_t *at[MAX_TID_COPIES];
};

/* Writable ints of the library that hold @tid (the last forker). */
static void find_tid(const char *name, void *addr, size_t size, bool tls,
		     bool ours, void *arg)
{
	struct tid_copies *c = arg;

	(void)name;
	if (tls || !ours)
		return;
	for (size_t off = 0; off + 4 <= size; off += 4) {
		int32_t *w = (int32_t *)((char *)addr + off);

		if ((uintptr_t)w % 4 || *w != c->tid || c->n == MAX_TID_COPIES)
			continue;
		if (try_store32(w, (uint32_t)c->tid))
			c->at[c->n++] = w;
	}
}

static struct {
	volatile int32_t holder; /* a thread that holds a window */
	volatile int stop;
	struct tid_copies c;
} fork14f;

static void *window_holder(void *p)
{
	(void)p;
	rare_write_begin();
	fork14f.holder = (int32_t)syscall(SYS_gettid);
	while (!fork14f.stop)
		usleep(1000);
	rare_write_end();
	return NULL;
}

static void *tid_racer(void *p)
{
	(void)p;
	while (!fork14f.stop)
		for (unsigned i = 0; i < fork14f.c.n; i++)
			*(volatile int32_t *)fork14f.c.at[i] = fork14f.holder;
	return NULL;
}

ATTACK("14f", fork_child_windows,
       "while the program forks, another thread points the record of the "
       "forking thread at a thread that holds a window; the child stores")
{
	pthread_t h, r;
	int status, open = 0;
	pid_t pid;

	if (!(rare_write_caps() & RARE_WRITE_CAP_BEGIN_END))
		attack_report(ATTACK_NA, "no begin/end windows");
	pid = fork(); /* a first fork leaves our tid wherever it is kept */
	if (!pid)
		_exit(0);
	waitpid(pid, &status, 0);
	fork14f.c.tid = (int32_t)syscall(SYS_gettid);
	attack_lib_each_object(find_tid, &fork14f.c);
	pthread_create(&h, NULL, window_holder, NULL);
	while (!fork14f.holder)
		usleep(1000);
	attack_begin();
	pthread_create(&r, NULL, tid_racer, NULL);
	for (int i = 0; i < 50 && !open; i++) {
		pid = fork();
		if (!pid)
			_exit(attack_try_store64(&rvictim[1], ATTACK_MARKER) &&
					      attack_load64(&rvictim[1]) ==
						      ATTACK_MARKER
				      ? 42
				      : 0);
		waitpid(pid, &status, 0);
		open = WIFEXITED(status) && WEXITSTATUS(status) == 42;
	}
	fork14f.stop = 1;
	pthread_join(r, NULL);
	pthread_join(h, NULL);
	attack_report(open ? ATTACK_OPEN : ATTACK_BLOCKED,
		      "%u writable copies of the forker's id; %s", fork14f.c.n,
		      open ? "a child wrote protected data"
			   : "no child could write");
}
