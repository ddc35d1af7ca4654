// SPDX-License-Identifier: MIT
/*
 * attack_locks.c - scenario 25: a lock word of the library released by a
 * store while its owner is inside the critical section (class 2 of issue
 * 26). A corrupted lock word may serialise (deadlock) or abort, never
 * corrupt protected state: a lost rare_write_add(), one object handed out
 * twice.
 *
 * Deterministic, not a race: the attack child traces the victim thread of
 * a child of its own with a hardware watchpoint on the protected word the
 * critical section reads (the counter, the pool's slot bitmap). At the
 * n-th read made while the lock word is held (n = 1, 2, ...: every such
 * moment in turn, a fresh victim each), it stores zeroes over the lock
 * word (PTRACE_POKEDATA: the arbitrary-write primitive, at the worst
 * moment), lets a second thread of the victim make the same call, then
 * lets the victim go on. The second call waiting for good counts as held
 * (serialised), so does an abort.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"
#include "../src/pool_layout.h"

static uint64_t counter __wr_rare __attribute__((aligned(64)));

struct lock_case {
	const char *lock;	    /* the lock's symbol in the library */
	size_t (*lock_off)(void);   /* the lock word within it */
	void (*setup)(void);	    /* before the victim is forked */
	void (*call)(int who);	    /* 0: the victim, 1: the second thread */
	const void *(*watch)(void); /* the protected word read under lock */
	bool (*landed)(char *what, size_t cap); /* after both calls */
};

/* ---- 25a: rare_write_add() under add_lock ---- */

static void add_setup(void)
{
	rare_write(counter, (uint64_t)0);
}

static void add_call(int who)
{
	(void)who;
	rare_write_add(counter, 1);
}

static const void *add_watch(void)
{
	return &counter;
}

static bool add_landed(char *what, size_t cap)
{
	snprintf(what, cap, "two rare_write_add(1) left the counter at %lu",
		 (unsigned long)counter);
	return counter != 2;
}

/* ---- 25b: rare_alloc() under the pool's lock ---- */

static struct rare_pool *pool;
static void *objs[2];

static void alloc_setup(void)
{
	pool = rare_pool_create(16 * 4096);
	if (!pool || !rare_alloc(pool, 64)) /* page 0 is the 64-byte class */
		attack_report(ATTACK_ERROR, "pool setup failed");
}

static void alloc_call(int who)
{
	objs[who] = rare_alloc(pool, 64);
}

/* The slot bitmap of the pool's first page (src/pool_layout.h). */
static const void *alloc_watch(void)
{
	return &pool->meta[0].used_slots[0];
}

/* pool.c's pool_lock(): pools hash onto 16 locks by address. */
static size_t alloc_lock_off(void)
{
	return ((uintptr_t)pool >> 12) % 16 * sizeof(pthread_mutex_t);
}

static size_t no_off(void)
{
	return 0;
}

static bool alloc_landed(char *what, size_t cap)
{
	snprintf(what, cap, "two rare_alloc(64) returned %p and %p", objs[0],
		 objs[1]);
	return objs[0] == objs[1];
}

/* ---- the victim (a child of the attack child) ---- */

struct pipes {
	int tid[2], start[2], go[2], done[2], verdict[2];
};

static const struct lock_case *victim_case;
static struct pipes *victim_pipes;

static void put(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		_exit(3);
}

static void get(int fd, void *p, size_t n)
{
	while (read(fd, p, n) < 0 && errno == EINTR)
		;
}

static void *second(void *unused)
{
	char c;

	(void)unused;
	get(victim_pipes->go[0], &c, 1);
	victim_case->call(1);
	put(victim_pipes->done[1], "d", 1);
	return NULL;
}

static void victim(const struct lock_case *lc, struct pipes *p)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	char c, what[200];
	pthread_t t;
	bool landed;

	victim_case = lc;
	victim_pipes = p;
	if (pthread_create(&t, NULL, second, NULL))
		_exit(4);
	put(p->tid[1], &tid, sizeof(tid));
	get(p->start[0], &c, 1);
	lc->call(0);
	pthread_join(t, NULL);
	landed = lc->landed(what, sizeof(what));
	put(p->verdict[1], landed ? "L" : "H", 1);
	put(p->verdict[1], what, sizeof(what));
	_exit(0);
}

/* ---- the attacker (the attack child, tracing the victim) ---- */

static bool wait_fd(int fd, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, ms) == 1;
}

static void set_watch(pid_t tid, const void *addr)
{
	/* DR0 = addr; DR7: L0, break on read or write (11), 8 bytes (10). */
	unsigned long dr7 = addr ? 1UL | 3UL << 16 | 2UL << 18 : 0;

	if (addr && ptrace(PTRACE_POKEUSER, tid,
			   offsetof(struct user, u_debugreg[0]), addr))
		attack_report(ATTACK_ERROR, "DR0: %s", strerror(errno));
	if (ptrace(PTRACE_POKEUSER, tid, offsetof(struct user, u_debugreg[7]),
		   dr7))
		attack_report(ATTACK_ERROR, "DR7: %s", strerror(errno));
}

enum round { ROUND_LANDED, ROUND_HELD, ROUND_NO_MOMENT };

/* One victim; the lock word is released at its @nth read of the watched
 * word under the lock. */
static enum round attack_round(const struct lock_case *lc, uintptr_t lock,
			       unsigned nth, char *what, size_t cap)
{
	struct pipes p;
	unsigned seen = 0;
	bool released = false;
	int status;
	pid_t pid, tid;
	char v = 0;

	if (pipe(p.tid) || pipe(p.start) || pipe(p.go) || pipe(p.done) ||
	    pipe(p.verdict))
		attack_report(ATTACK_ERROR, "pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork: %s", strerror(errno));
	if (!pid)
		victim(lc, &p);
	get(p.tid[0], &tid, sizeof(tid));
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) ||
	    ptrace(PTRACE_INTERRUPT, tid, 0, 0) ||
	    waitpid(tid, &status, __WALL) != tid)
		attack_report(ATTACK_ERROR, "ptrace: %s", strerror(errno));
	/* The watched word's address is the same in the victim (a fork). */
	set_watch(tid, lc->watch());
	ptrace(PTRACE_CONT, tid, 0, 0);
	put(p.start[1], "s", 1);
	for (;;) {
		siginfo_t si;
		int sig = 0;

		if (waitpid(tid, &status, __WALL) != tid || !WIFSTOPPED(status))
			break; /* the victim ended */
		if (WSTOPSIG(status) == SIGTRAP &&
		    !ptrace(PTRACE_GETSIGINFO, tid, 0, &si) &&
		    si.si_code == 4 /* TRAP_HWBKPT */) {
			long word = ptrace(PTRACE_PEEKDATA, tid, lock, 0);

			if (word != 0 && ++seen == nth) {
				attack_begin();
				/* The lock word and its owner: free. */
				ptrace(PTRACE_POKEDATA, tid, lock, 0L);
				ptrace(PTRACE_POKEDATA, tid, lock + 8, 0L);
				released = true;
				put(p.go[1], "g", 1);
				/* The second call done, or waiting on some
				 * other lock (serialised): 2 s either way. */
				wait_fd(p.done[0], 2000);
				set_watch(tid, NULL);
				ptrace(PTRACE_DETACH, tid, 0, 0);
				break;
			}
		} else if (!(status >> 16)) {
			sig = WSTOPSIG(status);
		}
		ptrace(PTRACE_CONT, tid, 0, sig);
	}
	if (!released) {
		set_watch(tid, NULL);
		ptrace(PTRACE_DETACH, tid, 0, 0);
		put(p.go[1], "g", 1);
	}
	if (wait_fd(p.verdict[0], 5000)) {
		get(p.verdict[0], &v, 1);
		get(p.verdict[0], what, cap);
	} else {
		kill(pid, SIGKILL);
		snprintf(what, cap, "the calls waited for good (serialised)");
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)
		snprintf(what, cap, "the library aborted");
	for (int *fd = &p.tid[0]; fd <= &p.verdict[1]; fd++)
		close(*fd);
	if (!released)
		return ROUND_NO_MOMENT;
	return v == 'L' ? ROUND_LANDED : ROUND_HELD;
}

static void lock_attack(const struct lock_case *lc)
{
	char *lock = attack_lib_sym(lc->lock), what[200] = "";

	if (!lock)
		attack_report(ATTACK_ERROR, "no symbol '%s'", lc->lock);
	lc->setup(); /* the victims are forks: the same addresses */
	if (!lc->watch())
		attack_report(ATTACK_ERROR, "no word to watch");
	for (unsigned nth = 1; nth <= 8; nth++) {
		enum round r =
			attack_round(lc, (uintptr_t)lock + lc->lock_off(), nth,
				     what, sizeof(what));

		if (r == ROUND_LANDED)
			attack_report(ATTACK_OPEN, "%s released at read %u: %s",
				      lc->lock, nth, what);
		if (r == ROUND_NO_MOMENT) {
			if (nth == 1)
				attack_report(ATTACK_ERROR,
					      "the watched word was never "
					      "read with %s held",
					      lc->lock);
			break;
		}
	}
	attack_report(ATTACK_BLOCKED, "%s released at every read under it: %s",
		      lc->lock, what);
}

ATTACK("25a", lock_add,
       "release `rare_write_add`'s lock by a store while its owner is "
       "inside (after its read); a second thread adds meanwhile")
{
	static const struct lock_case lc = {"add_lock", no_off,	   add_setup,
					    add_call,	add_watch, add_landed};

	lock_attack(&lc);
}

ATTACK("25b", lock_pool,
       "release a pool's allocation lock by a store while its owner is "
       "inside (after its read of the slot bitmap); a second thread "
       "allocates meanwhile")
{
	static const struct lock_case lc = {"pool_locks", alloc_lock_off,
					    alloc_setup,  alloc_call,
					    alloc_watch,  alloc_landed};

	lock_attack(&lc);
}
