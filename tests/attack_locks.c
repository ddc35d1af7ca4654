// SPDX-License-Identifier: MIT
/*
 * attack_locks.c - scenario 26: the library's lock words released by a
 * store while their owner is inside the critical section (class 2 of issue
 * 26). A corrupted lock word may serialise (deadlock) or abort, never
 * corrupt protected state: a lost rare_write_add(), one object handed out
 * twice.
 *
 * Deterministic, not a race: the attack child traces the victim thread of
 * a child of its own with a hardware watchpoint on the protected word the
 * critical section reads (the counter, the pool's slot bitmap). At the
 * n-th access to it during the call (n = 1, 2, ...: every such moment in
 * turn, a fresh victim each) it stores zeroes over every lock word of the
 * library that is held (each object whose name says lock: mutexes,
 * rwlocks and reglock.h's words, found in the library's symbol table;
 * PTRACE_POKEDATA is the arbitrary-write primitive, at the worst moment), lets
 * a second thread of the victim make the same call, then lets the victim go on.
 * The second call waiting for good counts as held (serialised), so does an
 * abort.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"
#include "../src/pool_layout.h"
#include "../src/table.h"

static uint64_t counter __wr_rare __attribute__((aligned(64)));

struct lock_case {
	void (*setup)(void);	    /* before the victims are forked */
	void (*call)(int who);	    /* 0: the victim, 1: the second thread */
	const void *(*watch)(void); /* the protected word the call reads */
	bool (*landed)(char *what, size_t cap); /* after both calls */
	unsigned accesses;			/* attacked at the first ones */
};

/* ---- 26a: rare_write_add() ---- */

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

/* ---- 26b: rare_alloc() ---- */

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

static bool alloc_landed(char *what, size_t cap)
{
	snprintf(what, cap, "two rare_alloc(64) returned %p and %p", objs[0],
		 objs[1]);
	return objs[0] == objs[1];
}

/* ---- 26c: rare_write_map()'s request, under maps_lock ---- */

/* Two words in two regions: the victim maps the section's, the second
 * thread the pool's, each writing its own value through its own map. */
static uint64_t map_word __wr_rare __attribute__((aligned(64)));
static uint64_t *map_target[2];
static const uint64_t map_value[2] = {0x1111111111111111ULL,
				      0x2222222222222222ULL};

static void map_setup(void)
{
	struct rare_pool *p = rare_pool_create(4096);
	uint64_t *o = p ? rare_alloc(p, 8) : NULL;

	if (!o)
		attack_report(ATTACK_ERROR, "pool setup failed");
	map_target[0] = &map_word;
	map_target[1] = o;
}

/* The second thread keeps its map open (a program writing through it for
 * a while) until the verdict: its request stays the last one put. */
static struct rare_write_mapping held_map;

static void map_call(int who)
{
	struct rare_write_mapping m = rare_write_map(map_target[who], 8);

	*(volatile uint64_t *)m.addr = map_value[who];
	if (who)
		held_map = m;
	else
		rare_write_unmap(m);
}

/* The map request in the core's table (src/table.h), which every step of
 * a map reads. */
static const void *map_watch(void)
{
	const struct rw_table *t = attack_lib_sym("rw_table");

	return t ? &t->map_request.addr : NULL;
}

static bool map_landed(char *what, size_t cap)
{
	if (held_map.addr)
		rare_write_unmap(held_map);
	snprintf(what, cap, "the two maps left %#llx and %#llx",
		 (unsigned long long)*map_target[0],
		 (unsigned long long)*map_target[1]);
	return *map_target[0] != map_value[0] || *map_target[1] != map_value[1];
}

/* ---- 26d: a shadow map's alias and fork() ---- */

/* The victim maps @word; the second thread forks, and its child stores
 * through every writable mapping of a region's memfd it inherited, at
 * @other's offset in the page (the alias maps the whole page): if the
 * parent's @other changes, the child wrote the parent's memfd. */
static struct {
	uint64_t word, other;
} fork_words __wr_rare __attribute__((aligned(64)));

static void fork_call(int who)
{
	if (!who) {
		struct rare_write_mapping m =
			rare_write_map(&fork_words.word, 8);

		*(volatile uint64_t *)m.addr = map_value[0];
		rare_write_unmap(m);
		return;
	}
	pid_t pid = fork();

	if (!pid) {
		FILE *f = fopen("/proc/self/maps", "r");
		char line[512];

		while (f && fgets(line, sizeof(line), f)) {
			const char *q = line;
			uintptr_t lo = rw_parse_hex(&q);

			if (strstr(line, " rw-s ") &&
			    strstr(line, "memfd:rarewrite (deleted)"))
				*(volatile uint64_t
					  *)(lo +
					     ((uintptr_t)&fork_words.other &
					      4095)) = 0x4141414141414141ULL;
		}
		_exit(0);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

static void fork_setup(void)
{
	if (strcmp(rare_write_backend(), "shadow"))
		attack_report(ATTACK_NA,
			      "no writable alias of a map to inherit "
			      "(shadow's only)");
}

static bool fork_landed(char *what, size_t cap)
{
	snprintf(what, cap, "the word next to the mapped one holds %#llx",
		 (unsigned long long)fork_words.other);
	return fork_words.other != 0;
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

static void on_returned(int sig)
{
	(void)sig;
}

static void victim(const struct lock_case *lc, struct pipes *p)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	char c, what[200];
	pthread_t t;
	bool landed;

	prctl(PR_SET_PDEATHSIG, SIGKILL); /* no victim outlives its attacker */
	signal(SIGUSR2, on_returned);
	victim_case = lc;
	victim_pipes = p;
	if (pthread_create(&t, NULL, second, NULL))
		_exit(4);
	put(p->tid[1], &tid, sizeof(tid));
	get(p->start[0], &c, 1);
	lc->call(0);
	/* Tell the tracer the call returned: a signal stops a traced thread
	 * (it waits for no more accesses then). */
	syscall(SYS_tgkill, getpid(), tid, SIGUSR2);
	pthread_join(t, NULL);
	landed = lc->landed(what, sizeof(what));
	put(p->verdict[1], landed ? "L" : "H", 1);
	put(p->verdict[1], what, sizeof(what));
	_exit(0);
}

/* ---- the attacker (the attack child, tracing the victim) ---- */

/* The library's lock objects: mutexes (40 bytes each), rwlocks (56) and
 * lock words (4, src/reglock.h), named so; their addresses are the same
 * in the victims (forks). */
struct lock_obj {
	char name[32];
	uintptr_t addr;
	size_t size, each;
};
static struct lock_obj locks[32];
static unsigned nr_locks;

static void find_lock(const char *name, void *addr, size_t size, bool tls,
		      bool ours, void *arg)
{
	size_t each = size == sizeof(uint32_t) ? sizeof(uint32_t)
		      : size % sizeof(pthread_rwlock_t) == 0
			      ? sizeof(pthread_rwlock_t)
		      : size % sizeof(pthread_mutex_t) == 0
			      ? sizeof(pthread_mutex_t)
			      : 0;

	(void)arg;
	if (tls || !ours || !each || !strstr(name, "lock") ||
	    nr_locks == sizeof(locks) / sizeof(locks[0]))
		return;
	locks[nr_locks] = (struct lock_obj){
		.addr = (uintptr_t)addr, .size = size, .each = each};
	snprintf(locks[nr_locks].name, sizeof(locks[0].name), "%s", name);
	nr_locks++;
}

/* Store zeroes over every held lock of the library in the stopped
 * victim: a mutex's lock and owner words, an rwlock's readers, writers,
 * futexes and current writer. Says which into @what. */
static void release_locks(pid_t tid, char *what, size_t cap)
{
	size_t n = 0;

	what[0] = 0;
	for (unsigned i = 0; i < nr_locks; i++)
		for (size_t off = 0; off < locks[i].size;
		     off += locks[i].each) {
			uintptr_t at = locks[i].addr + off;

			if (getenv("ATTACK_LOCKS_DEBUG"))
				fprintf(stderr, "%s+%zu at %#lx: %#lx %#lx\n",
					locks[i].name, off, (unsigned long)at,
					ptrace(PTRACE_PEEKDATA, tid, at, 0),
					ptrace(PTRACE_PEEKDATA, tid, at + 8,
					       0));

			if (locks[i].each == sizeof(uint32_t)) {
				/* A lock word: its 4 bytes only. */
				unsigned long w = (unsigned long)ptrace(
					PTRACE_PEEKDATA, tid, at, 0);

				if (!(uint32_t)w)
					continue;
				ptrace(PTRACE_POKEDATA, tid, at,
				       w & ~0xffffffffUL);
			} else if (!ptrace(PTRACE_PEEKDATA, tid, at, 0) &&
				   !ptrace(PTRACE_PEEKDATA, tid, at + 8, 0)) {
				continue;
			} else {
				ptrace(PTRACE_POKEDATA, tid, at, 0L);
				ptrace(PTRACE_POKEDATA, tid, at + 8, 0L);
				if (locks[i].each == sizeof(pthread_rwlock_t))
					ptrace(PTRACE_POKEDATA, tid, at + 24,
					       0L);
			}
			n += (size_t)snprintf(what + n, n < cap ? cap - n : 0,
					      "%s%s", n ? ", " : "",
					      locks[i].name);
		}
	if (!n)
		snprintf(what, cap, "none held");
}

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

/*
 * Whether a watchpoint stops a thread here: some hypervisors (seen on an
 * AMD EPYC guest) accept DR0 and DR7 through ptrace and never raise the
 * debug exception, and every round would then find no moment to attack.
 * A child reads a watched word; it must stop with TRAP_HWBKPT.
 */
static bool watch_fires(void)
{
	static volatile long word;
	siginfo_t si;
	bool fired;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork: %s", strerror(errno));
	if (!pid) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		(void)word;
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
		attack_report(ATTACK_ERROR,
			      "the watchpoint probe did not stop");
	set_watch(pid, (const void *)&word);
	ptrace(PTRACE_CONT, pid, 0, 0);
	fired = waitpid(pid, &status, 0) == pid && WIFSTOPPED(status) &&
		WSTOPSIG(status) == SIGTRAP &&
		!ptrace(PTRACE_GETSIGINFO, pid, 0, &si) &&
		si.si_code == 4 /* TRAP_HWBKPT */;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return fired;
}

enum round { ROUND_LANDED, ROUND_HELD, ROUND_NO_MOMENT };

/* One victim, attacked at its @nth access to the watched word; what was
 * released and what came of it in @what. */
static enum round attack_round(const struct lock_case *lc, unsigned nth,
			       char *what, size_t cap)
{
	char released[160] = "", result[200] = "";
	struct pipes p;
	unsigned seen = 0;
	bool attacked = false;
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
	/* The victim's ends only: a victim that aborted is seen at once (the
	 * pipes' end of file), not after the waits below. */
	close(p.done[1]);
	close(p.verdict[1]);
	p.done[1] = p.verdict[1] = -1;
	get(p.tid[0], &tid, sizeof(tid));
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) ||
	    ptrace(PTRACE_INTERRUPT, tid, 0, 0) ||
	    waitpid(tid, &status, __WALL) != tid)
		attack_report(ATTACK_ERROR, "ptrace: %s", strerror(errno));
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
			if (++seen == nth) {
				attack_begin();
				release_locks(tid, released, sizeof(released));
				attacked = true;
				put(p.go[1], "g", 1);
				/* The second call done, or waiting
				 * (serialised): 2 s either way. */
				wait_fd(p.done[0], 2000);
				set_watch(tid, NULL);
				ptrace(PTRACE_DETACH, tid, 0, 0);
				break;
			}
		} else if (WSTOPSIG(status) == SIGUSR2) {
			break; /* the call returned: no access left */
		} else if (!(status >> 16)) {
			sig = WSTOPSIG(status);
		}
		ptrace(PTRACE_CONT, tid, 0, sig);
	}
	if (!attacked) {
		set_watch(tid, NULL);
		ptrace(PTRACE_DETACH, tid, 0, 0);
		put(p.go[1], "g", 1);
	}
	if (wait_fd(p.verdict[0], (int)(attack_budget(5.0) * 1000))) {
		get(p.verdict[0], &v, 1);
		get(p.verdict[0], result, sizeof(result));
	} else {
		kill(pid, SIGKILL);
		snprintf(result, sizeof(result),
			 "the calls waited for good (serialised)");
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)
		snprintf(result, sizeof(result), "the library aborted");
	for (int *fd = &p.tid[0]; fd <= &p.verdict[1]; fd++)
		if (*fd >= 0)
			close(*fd);
	snprintf(what, cap, "at access %u, released %s: %s", nth, released,
		 result);
	fprintf(stderr, "attack_locks: %s\n", what);
	if (!attacked)
		return ROUND_NO_MOMENT;
	return v == 'L' ? ROUND_LANDED : ROUND_HELD;
}

static void lock_attack(const struct lock_case *lc)
{
	char what[400] = "", last[400] = "";
	unsigned nth;

	/* "cannot run: " makes the runner skip it, saying why. */
	if (!watch_fires())
		attack_report(ATTACK_ERROR,
			      "cannot run: a hardware watchpoint set through "
			      "ptrace never stops a thread on this machine");
	attack_lib_each_object(find_lock, NULL);
	if (!nr_locks)
		attack_report(ATTACK_ERROR, "no lock object in the library");
	lc->setup(); /* the victims are forks: the same addresses */
	for (nth = 1; nth <= lc->accesses; nth++) {
		enum round r = attack_round(lc, nth, what, sizeof(what));

		if (r == ROUND_LANDED)
			attack_report(ATTACK_OPEN, "%s", what);
		if (r == ROUND_NO_MOMENT)
			break;
		memcpy(last, what, sizeof(last));
	}
	if (nth == 1)
		attack_report(ATTACK_ERROR, "the call never read the watched "
					    "word");
	attack_report(ATTACK_BLOCKED, "attacked at each of %u accesses; %s",
		      nth - 1, last);
}

ATTACK("26a", lock_add,
       "release every held lock word by a store while `rare_write_add` is "
       "inside (at each access to its integer); a second thread adds "
       "meanwhile")
{
	static const struct lock_case lc = {add_setup, add_call, add_watch,
					    add_landed, 8};

	lock_attack(&lc);
}

ATTACK("26b", lock_pool,
       "release every held lock word by a store while `rare_alloc` is "
       "inside (at each access to the slot bitmap); a second thread "
       "allocates meanwhile")
{
	static const struct lock_case lc = {alloc_setup, alloc_call,
					    alloc_watch, alloc_landed, 8};

	lock_attack(&lc);
}

ATTACK("26c", lock_maps,
       "release every held lock word by a store while `rare_write_map` is "
       "inside (at each read of its request in the table); a second thread "
       "maps another region meanwhile: each map must write only its own "
       "target")
{
	static const struct lock_case lc = {map_setup, map_call, map_watch,
					    map_landed, 12};

	lock_attack(&lc);
}

ATTACK("26d", lock_views,
       "release every held lock word by a store while a `shadow` map holds "
       "its writable alias (at each read of the map's request); a second "
       "thread forks, and the child stores through every writable memfd "
       "mapping it inherited")
{
	/* The alias lives from about the 10th read of the request on. */
	static const struct lock_case lc = {fork_setup, fork_call, map_watch,
					    fork_landed, 16};

	lock_attack(&lc);
}
