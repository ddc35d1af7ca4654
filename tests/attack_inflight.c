// SPDX-License-Identifier: MIT
/*
 * attack_inflight.c - scenarios 27a-27c: records a call builds in its own
 * stack frame and a backend reads after a blocking point (a lock wait, a
 * system call), rewritten there by another thread. From an outside review
 * of the pool and of shadow's alias (its proofs of concept, made cases).
 *
 * Each runs a victim thread on a stack whose range the attacker knows (it
 * could read it from the thread's descriptor) and an attacker thread that
 * only loads and stores, scanning the top of that stack for the record and
 * rewriting it; trials are repeated for a few seconds or until one lands.
 * An abort by the library counts as blocked.
 *
 * 27a: rare_alloc() built the page's new record (its new slot's bit set)
 * on the stack and handed it to the backend; the attacker clears that bit
 * (a record of a fresh page: used_slots {2^k - 1, 0, 0, 0}, state 1,
 * nr_used k): the record goes in with the slot free, and a later
 * rare_alloc() hands the same object out again.
 *
 * 27b: rare_free() built its segments, {region, object, NULL, size}, on
 * the stack after the pool lock; the backend checks only that a segment
 * lies in a live region. The attacker points the object's at another live
 * object of the pool (the program's handler table), which is zeroed.
 *
 * 27c (shadow): a write of another size than an aligned 1, 2, 4 or 8 bytes
 * kept its alias {base, len, at} in its frame from mmap(2) to munmap(2);
 * the attacker rewrites the base to an address where nothing is mapped,
 * munmap() unmaps nothing, and the writable alias of the memfd stays
 * mapped for later plain stores.
 *
 * From a second outside review (review5), 27d-27g run each trial in a
 * forked child (a trial that lands leaves a window open behind it, and an
 * abort or a crash ends only that trial) after a control trial without
 * the attacker, which must hold:
 *
 * 27d (mprotect): rare_write_begin() built the new count of open windows
 * and threads, {1, 1}, on the stack (set_record(), then the vault's copy
 * buffer) before pwrite(2) took it to the vault; the attacker makes it
 * {2, 1}. The matching rare_write_end() then counts one window still
 * open and never flips the pages back: the section stays writable for
 * every thread after the program closed all its windows.
 *
 * 27e (mprotect): the same count, reached through rare_write_map() and
 * rare_write_unmap() (on mprotect a map is a window).
 *
 * 27f: the core's record of nested windows, {tid, extra}, built on the
 * stack by nested_set() on its way to the table; the attacker makes a
 * nested begin record 2^30 levels, so that no later rare_write_end() is
 * the outermost: the window never closes (mprotect: the pages stay
 * writable for every thread; pkey: the thread keeps write access).
 *
 * 27g (mprotect): a multi-segment write (the list helpers: rare_list_add()
 * and rare_list_del() write four links) flips each segment's pages
 * writable, stores, then reads each segment from the caller's stack again
 * to flip its pages back, one mprotect(2) after another; the attacker
 * sees the list head's link change and moves that segment's dst to
 * another page of the pool before its close: the head's page, with the
 * program's other objects on it, stays writable after the call returns.
 *
 * 27h (pkey): the thread's record of what it holds open, {tid, nest,
 * window, maps[]}, built on the stack by the backend's update_holds() and
 * copied to the records' page after the records lock; the attacker makes
 * one window two, the outermost end leaves the thread's keys open (the
 * pkey cousin of 27d, found reading the code after 27d).
 *
 * 27i (every backend): a copy of another size than an aligned 1, 2, 4 or
 * 8 bytes goes to the backend as a segment {region, dst, src, len, fill}
 * on the stack, which the backend reads again after its lock and its
 * system calls (mprotect: the open flip); the attacker makes a 3-byte
 * copy 16 bytes long meanwhile, and the 13 bytes after the source land in
 * the protected object next to the destination. Open on pkey, shadow,
 * mprotect and process before (pwrite's path keeps the length in
 * registers); blocked on every backend since.
 *
 * 27j (every backend): rare_pool_set_name() writes the name into the
 * pool's head through a segment {region, name, copy, 32} on the stack,
 * which the backend checks only against the pool's region; the attacker
 * points it at a live object of the pool, which the name overwrites.
 *
 * 27k (every backend): rare_pool_create() writes the new pool's head
 * {magic, name, nr_pages, objects, ...} from its stack; the attacker makes
 * its object pages another pool's, whose objects the new pool then hands
 * out.
 *
 * 27l (every backend): rare_realloc() copied the old object into the
 * grown one through a segment {region, new, old, 16} on its stack; the
 * attacker points the new object's place at another live object.
 *
 * 27m (every backend): rare_pool_create_with() on the pool's own backend
 * (opts.backend, here the name of the one in force) carried that choice,
 * an ops table's address, from its lookup to the record it commits, past
 * registry_lock's wait and the backend's create() and their system calls,
 * in callee-saved registers their callees save on the stack; the attacker
 * rewrites every word of the victim's stack equal to the backend's ops
 * table to another backend's (mprotect's, pwrite's on mprotect), and the
 * new pool is made and recorded on that one (a downgrade). Half the calls
 * name no backend (the default, read from the table at each use).
 *
 * 27n (every backend): rare_pool_create() carried the new slot (a region
 * record's address) and its start from the table to the head it writes,
 * through its callees' saved registers and a segment on its stack; the
 * attacker rewrites every word of the victim's stack equal to them to the
 * program's section's record and start: the pool's head is written over
 * the section. The call aborts right after (the head is not where its
 * region says), but the protected bytes were written first, in sight of
 * every other thread: here that counts as landed (the trial's SIGABRT
 * handler compares the section with its snapshot), unlike the
 * scribbler's rule, where an abort holds.
 *
 * 27o (every backend): rare_pool_destroy() found its slot before
 * registry_lock and carried it past the wait in a register the callee
 * saves; the attacker rewrites it to another live pool's record, which
 * is then destroyed in its stead (it leaves the table, or its pages are
 * unmapped under its record).
 *
 * 27r (every backend): the list helpers hand their links to the backend
 * as segments; shadow and pwrite copied each to their stack, checked the
 * copy and read it again for the store; the attacker points the copy of
 * the segment that writes the head's link (alone, deeper than the
 * helper's own array of four) at another live object of the pool, which
 * the link then overwrites.
 *
 * 27t (every backend, what kept 15d open): rare_pool_create() got the new
 * mapping's start from the backend's create() in the record it filled on
 * the stack, and checked it only against the other regions before the
 * table took it; the attacker rewrites every word of the victim's stack
 * equal to that start, while a creation runs, to a page of the program's
 * plain memory outside every region (.bss here; .data, RELRO or libc's
 * data alike): the pool is recorded there and its head written there
 * (mprotect and pkey change that memory's protection, process maps the
 * pool's memfd over it). A table that names that memory, or a write
 * there, counts as landed, aborted or not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rarewrite/list.h>

#include "attack.h"
#include "../src/table.h"

#define IF_STACK (256u << 10)
#define IF_SCAN (16u << 10) /* the top of the victim's stack it scans */
/* Each row's trials, attack_budget() of it (RAREWRITE_TEST_RACE_SCALE). */
#define IF_BUDGET_S 4.0

static struct {
	char *stack;
	volatile uint64_t *lo, *hi;
	volatile int done;
	volatile unsigned long stores;
} ifl;

static double if_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *if_stack_top(void *arg)
{
	(void)arg;
	return __builtin_frame_address(0);
}

/*
 * The victim's stack, and the part the attackers scan: the top IF_SCAN
 * bytes of the stack proper. glibc keeps a thread's descriptor and static
 * TLS at the top of a stack the program gives it; a thread started there
 * first shows where the stack proper begins. The descriptor is not these
 * rows' target: their generic patterns ({1, 1} for 27d) rewrote glibc's
 * and the library's thread state there, and a trial ended in a way
 * neither landed nor held (27d: exit status 127 after its store was
 * caught, 3 of 5 runs).
 */
static void if_stack(void)
{
	pthread_attr_t attr;
	pthread_t t;
	void *top = NULL;

	ifl.stack = mmap(NULL, IF_STACK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ifl.stack == MAP_FAILED)
		attack_report(ATTACK_ERROR,
			      "mmap of the victim's stack failed");
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, ifl.stack, IF_STACK);
	if (pthread_create(&t, &attr, if_stack_top, NULL) ||
	    pthread_join(t, &top) || (char *)top < ifl.stack + 2 * IF_SCAN ||
	    (char *)top > ifl.stack + IF_STACK)
		attack_report(ATTACK_ERROR, "no stack top for the victim");
	pthread_attr_destroy(&attr);
	ifl.hi = (volatile uint64_t *)((uintptr_t)top & ~(uintptr_t)15);
	ifl.lo = ifl.hi - IF_SCAN / sizeof(uint64_t);
}

/* Run @victim on the known stack and @attacker beside it; the victim's
 * result. */
static void *if_race(void *(*victim)(void *), void *(*attacker)(void *),
		     void *arg)
{
	pthread_attr_t attr;
	pthread_t v, a;
	void *ret = NULL;

	ifl.done = 0;
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, ifl.stack, IF_STACK);
	if (pthread_create(&a, NULL, attacker, arg) ||
	    pthread_create(&v, &attr, victim, arg))
		attack_report(ATTACK_ERROR, "pthread_create failed");
	pthread_join(v, &ret);
	ifl.done = 1;
	pthread_join(a, NULL);
	pthread_attr_destroy(&attr);
	return ret;
}

/* ---- 27a: rare_alloc() ---- */

#define IF_NOBJ 48

static void *alloc_victim(void *arg)
{
	struct rare_pool *pool = arg;
	void *obj[IF_NOBJ];

	for (int round = 0; round < 400; round++) {
		for (int i = 0; i < IF_NOBJ; i++) {
			obj[i] = rare_alloc(pool, 16);
			for (int j = 0; j < i; j++)
				if (obj[i] && obj[j] == obj[i])
					return (void *)1;
		}
		for (int i = 0; i < IF_NOBJ; i++)
			rare_free(pool, obj[i]);
	}
	return NULL;
}

/* struct page_meta of a fresh class-0 page after k allocations:
 * used_slots {2^k - 1, 0, 0, 0}, then state 1 and nr_used k. */
__attribute__((no_sanitize_address)) static void *alloc_attacker(void *arg)
{
	(void)arg;
	while (!ifl.done)
		for (volatile uint64_t *p = ifl.lo; p + 4 < ifl.hi; p++) {
			uint64_t w = p[0];

			if (w < 3 || (w & (w + 1)) || p[1] || p[2] || p[3] ||
			    p[4] != (1 |
				     ((uint64_t)__builtin_popcountll(w) << 16)))
				continue;
			p[0] = w >> 1; /* the new slot looks free again */
			ifl.stores++;
		}
	return NULL;
}

ATTACK("27a", inflight_alloc,
       "clear the new slot's bit in the page record `rare_alloc` built on "
       "its stack while the backend writes it (one object handed out "
       "twice)")
{
	double end = if_now() + attack_budget(IF_BUDGET_S);
	unsigned trials = 0;

	if_stack();
	attack_begin();
	while (if_now() < end) {
		struct rare_pool *pool = rare_pool_create(1 << 20);

		if (!pool)
			attack_report(ATTACK_ERROR, "rare_pool_create failed");
		trials++;
		if (if_race(alloc_victim, alloc_attacker, pool))
			attack_report(ATTACK_OPEN,
				      "rare_alloc() handed out a live object "
				      "twice (trial %u, %lu stores)",
				      trials, ifl.stores);
		rare_pool_destroy(pool);
	}
	if (!ifl.stores)
		attack_report(ATTACK_ERROR,
			      "the attacker found no page record in %u trials",
			      trials);
	attack_report(ATTACK_BLOCKED,
		      "no object handed out twice in %u trials (%lu stores)",
		      trials, ifl.stores);
}

/* ---- 27b: rare_free() ---- */

#define IF_MAGIC 0x1234567887654321ULL

struct if_handler {
	uint64_t magic;
	uint64_t value;
};

static struct {
	struct if_handler *table; /* live, never freed */
	void *volatile cur;	  /* the object being freed */
	volatile int in_free;
	volatile int storing;	  /* the attacker is between check and store */
	volatile uint64_t *frame; /* below it: the library's frames */
	double end;		  /* the row's budget: a trial stops there */
} iff;

static __attribute__((always_inline)) inline volatile uint64_t *
if_stack_pointer(void)
{
#if defined(__x86_64__)
	volatile uint64_t *sp;

	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	return sp - 1; /* the return address a call pushes */
#else
	return (volatile uint64_t *)__builtin_frame_address(0) - 64;
#endif
}

static void *free_victim(void *arg)
{
	struct rare_pool *pool = arg;
	const struct if_handler h = {0x5a5a5a5a5a5a5a5aULL, 1};

	/* The program's own frame is not scanned: what it passes is its
	 * own (a store there frees another object, as the program asked).
	 * Below its stack pointer: the library's frames. rare_free() is
	 * bound first: the first call of a lazily bound function saves its
	 * argument registers in the dynamic linker's frame below the
	 * program's, where a store changes what the program passes before
	 * the library is entered (a program not linked with -z now; the
	 * library is): the object pointer moved there landed at trial 1. */
	rare_free(pool, NULL);
	iff.frame = if_stack_pointer();
	for (int i = 0; i < 20000; i++) {
		struct if_handler *o;

		/* Under TCG 20,000 frees on shadow outlast the attack
		 * child's 60 s alarm (check-vm): stop at the budget. */
		if (!(i % 256) && if_now() > iff.end)
			break;
		o = rare_alloc(pool, sizeof(*o));

		if (!o)
			return NULL;
		rare_write(*o, h); /* a freed object is zeroed: written */
		iff.cur = o;
		__atomic_store_n(&iff.in_free, 1, __ATOMIC_SEQ_CST);
		rare_free(pool, o);
		__atomic_store_n(&iff.in_free, 0, __ATOMIC_SEQ_CST);
		/* No store of the attacker's lands after the call (in the
		 * program's next one): wait out one between its check of
		 * in_free and its store (both sequentially consistent). */
		while (__atomic_load_n(&iff.storing, __ATOMIC_SEQ_CST))
			;
		if (iff.table->magic != IF_MAGIC)
			return (void *)1;
	}
	return NULL;
}

/* A segment or argument list {object, ..., size} of the free: its object
 * moved to the table (only while the victim is inside rare_free(), not
 * its own rare_write()). */
__attribute__((no_sanitize_address)) static void *free_attacker(void *arg)
{
	(void)arg;
	while (!ifl.done) {
		uint64_t o = (uint64_t)iff.cur;

		if (!o || !__atomic_load_n(&iff.in_free, __ATOMIC_SEQ_CST))
			continue;
		for (volatile uint64_t *p = ifl.lo; p + 2 < iff.frame; p++) {
			if (p[0] != o || (p[1] != sizeof(struct if_handler) &&
					  p[2] != sizeof(struct if_handler)))
				continue;
			__atomic_store_n(&iff.storing, 1, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&iff.in_free, __ATOMIC_SEQ_CST)) {
				p[0] = (uint64_t)iff.table;
				ifl.stores++;
			}
			__atomic_store_n(&iff.storing, 0, __ATOMIC_SEQ_CST);
		}
	}
	return NULL;
}

ATTACK("27b", inflight_free,
       "point the object `rare_free` zeroes (a segment on its stack) at "
       "another live object of the pool")
{
	const struct if_handler h = {IF_MAGIC, 42};
	double end = if_now() + attack_budget(IF_BUDGET_S);
	unsigned trials = 0;

	iff.end = end;
	if_stack();
	attack_begin();
	while (if_now() < end) {
		struct rare_pool *pool = rare_pool_create(1 << 20);

		if (!pool)
			attack_report(ATTACK_ERROR, "rare_pool_create failed");
		iff.table = rare_alloc(pool, sizeof(*iff.table));
		if (!iff.table)
			attack_report(ATTACK_ERROR, "rare_alloc failed");
		rare_write(*iff.table, h);
		iff.cur = NULL;
		iff.frame = ifl.lo; /* nothing, until the victim says */
		trials++;
		if (if_race(free_victim, free_attacker, pool) ||
		    iff.table->magic != IF_MAGIC)
			attack_report(ATTACK_OPEN,
				      "rare_free() zeroed another live object "
				      "(now %#llx %#llx; trial %u, %lu stores)",
				      (unsigned long long)iff.table->magic,
				      (unsigned long long)iff.table->value,
				      trials, ifl.stores);
		rare_pool_destroy(pool);
	}
	attack_report(ATTACK_BLOCKED,
		      "no other object zeroed in %u trials (%lu stores)",
		      trials, ifl.stores);
}

/* ---- 27c: shadow's alias ---- */

struct if_policy {
	uint64_t allow;
	uint64_t level;
	char name[48];
};

static struct if_policy if_pol __wr_rare __attribute__((aligned(64)));
static volatile uint64_t if_leaked_at;

static void *alias_victim(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < 20000 && !ifl.done; i++) {
		struct if_policy p = {.allow = 0, .level = i};

		rare_write(if_pol, p); /* 64 bytes: not a single store */
	}
	return NULL;
}

__attribute__((no_sanitize_address)) static bool
alias_like(volatile uint64_t *p)
{
	uint64_t base = p[0], len = p[1], at = p[2];

	return base && !(base & 4095) && len == 4096 && at - base < 4096 &&
	       ((at - base) & 4095) == ((uintptr_t)&if_pol & 4095);
}

__attribute__((no_sanitize_address)) static void *alias_attacker(void *arg)
{
	volatile uint64_t *hot = NULL;

	(void)arg;
	/* Where the frame keeps the alias record (arbitrary read). */
	while (!ifl.done && !hot)
		for (volatile uint64_t *p = ifl.lo; p + 2 < ifl.hi; p++)
			if (alias_like(p)) {
				hot = p;
				break;
			}
	while (!ifl.done && hot)
		if (alias_like(hot)) {
			if_leaked_at = hot[2];
			hot[0] = 0x10000; /* nothing mapped there */
			ifl.stores++;
		}
	return NULL;
}

/* A writable shared mapping of a memfd (an alias of protected memory). */
static bool writable_memfd_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool found = false;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, " rw-s ") && strstr(line, "memfd:"))
			found = true;
	if (f)
		fclose(f);
	return found;
}

ATTACK("27c", inflight_alias,
       "rewrite the base of shadow's alias in the frame of a 64-byte "
       "write so that munmap misses it: the writable alias stays mapped")
{
	double end = if_now() + attack_budget(IF_BUDGET_S);
	unsigned trials = 0;

	if (strcmp(rare_write_backend(), "shadow"))
		attack_report(ATTACK_NA, "no writable alias (shadow only)");
	if_stack();
	attack_begin();
	while (if_now() < end) {
		trials++;
		if_race(alias_victim, alias_attacker, NULL);
		if (writable_memfd_mapped()) {
			volatile uint64_t *at = (uint64_t *)if_leaked_at;

			attack_landed("a writable alias of the memfd stayed "
				      "mapped after the write");
			if (at)
				*at = ATTACK_MARKER; /* a plain store, later */
			attack_report(ATTACK_OPEN,
				      "a writable alias stayed mapped (trial "
				      "%u, %lu stores)%s",
				      trials, ifl.stores,
				      if_pol.allow == ATTACK_MARKER
					      ? "; a plain store through it "
						"changed the protected data"
					      : "");
		}
	}
	attack_report(ATTACK_BLOCKED,
		      "no writable alias left mapped in %u trials (%lu stores)",
		      trials, ifl.stores);
}

/* ---- 27d-27g: one forked child per trial ---- */

#define IF_CALLS 3000 /* windows, or list calls, per trial */
#define IF_TRIAL_S 30 /* a trial still running then is an error */
#define IF_LANDED 10  /* a trial child's exit statuses */
#define IF_HELD 11
#define IF_BROKEN 12
#define IF_EXITED 1000 /* + the status of a trial that exited otherwise */

static struct {
	bool control;	       /* this trial runs no attacker */
	unsigned long *stores; /* shared: the attacker's, every trial */
	double end;	       /* a victim's calls stop here */
} ift;

/*
 * A victim's loop of IF_CALLS calls stops at half of IF_TRIAL_S: under
 * TCG (check-vm) on a loaded machine 3,000 calls on shadow or process
 * outlast the trial's alarm (27l on shadow, SIGALRM in trial 1). Fewer
 * calls make a trial less likely to land, never a landing less real.
 */
static bool if_trial_over(long i)
{
	return !(i % 64) && if_now() > ift.end;
}

static void *if_idle(void *arg)
{
	(void)arg;
	return NULL;
}

typedef void *(*if_thread)(void *);

/* @attacker, or none in the control trial. */
static if_thread if_attacker(if_thread attacker)
{
	return ift.control ? if_idle : attacker;
}

/* Run @trial(@arg) in a forked child: IF_LANDED, IF_HELD or IF_BROKEN,
 * or minus the signal that ended it. */
static int if_trial_child(int (*trial)(void *), void *arg, bool control)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork failed");
	if (!pid) {
		int r;

		alarm(IF_TRIAL_S);
		ift.end = if_now() + IF_TRIAL_S / 2.0;
		ift.control = control;
		ifl.stores = 0;
		r = trial(arg);
		__atomic_add_fetch(ift.stores, ifl.stores, __ATOMIC_SEQ_CST);
		_exit(r);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status))
		return -WTERMSIG(status);
	if (WIFEXITED(status) && (WEXITSTATUS(status) == IF_LANDED ||
				  WEXITSTATUS(status) == IF_HELD))
		return WEXITSTATUS(status);
	if (WIFEXITED(status))
		return IF_EXITED + WEXITSTATUS(status);
	return IF_BROKEN;
}

/*
 * A control trial without the attacker (it must hold), then trials until
 * one lands or IF_BUDGET_S pass. A trial the library aborts, or that a
 * store of the attacker's crashes, is blocked; one that runs past
 * IF_TRIAL_S or fails to set up is an error.
 */
static void if_trials(int (*trial)(void *), void *arg, const char *landed,
		      const char *held)
{
	unsigned trials = 0, killed = 0, exited = 0, hung = 0;
	int r, last_exit = 0;
	double end;

	ift.stores = mmap(NULL, sizeof(*ift.stores), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ift.stores == MAP_FAILED)
		attack_report(ATTACK_ERROR, "mmap failed");
	if_stack();
	r = if_trial_child(trial, arg, true);
	if (r != IF_HELD)
		attack_report(ATTACK_ERROR,
			      "the control trial (no attacker) %s",
			      r == IF_LANDED ? "landed" : "failed");
	attack_begin();
	end = if_now() + attack_budget(IF_BUDGET_S);
	while (if_now() < end) {
		trials++;
		r = if_trial_child(trial, arg, false);
		if (r == IF_LANDED)
			attack_report(ATTACK_OPEN, "%s (trial %u, %lu stores)",
				      landed, trials, *ift.stores);
		if (r == -SIGABRT || r == -SIGSEGV || r == -SIGBUS ||
		    r == -SIGILL)
			killed++;
		else if (r == -SIGALRM)
			/* Ran past IF_TRIAL_S with the attacker's stores in
			 * it: a lock word they forged may serialise for good
			 * (SECURITY.md, "The rule"), a denial of service,
			 * not a landing. The control trial may not hang. */
			hung++;
		else if (r >= IF_EXITED) {
			/* The attacker's generic stores (27d's {1, 1}) hit
			 * the victim's own state and the trial exited, some
			 * 1 in 1,000 trials, status 127 on mprotect: like a
			 * crash, not a landing, which needs the plain store
			 * to land after the windows. */
			exited++;
			last_exit = r - IF_EXITED;
		} else if (r != IF_HELD)
			attack_report(ATTACK_ERROR, "trial %u ended with %s %d",
				      trials, r < 0 ? "signal" : "status",
				      r < 0 ? -r : r);
	}
	if (exited || hung)
		attack_report(ATTACK_BLOCKED,
			      "%s in %u trials (%u aborted, %u hung, %u exited "
			      "with status %d, %lu stores)",
			      held, trials, killed, hung, exited, last_exit,
			      *ift.stores);
	attack_report(ATTACK_BLOCKED,
		      "%s in %u trials (%u aborted, %lu stores)", held, trials,
		      killed, *ift.stores);
}

/* ---- 27d, 27e: mprotect's count of open windows ---- */

static long if_count[8] __wr_rare __attribute__((aligned(64)));

static void *count_victim(void *map)
{
	for (long i = 0; i < IF_CALLS && !if_trial_over(i); i++) {
		if (map) {
			struct rare_write_mapping m =
				rare_write_map(&if_count[0], sizeof(long));

			*(long *)m.addr = i;
			rare_write_unmap(m);
		} else {
			rare_write_begin();
			if_count[0] = i;
			rare_write_end();
		}
	}
	return NULL;
}

#define IF_HOT 16 /* places on the stack where the pair was seen */

/* {one window open, one thread holding windows} becomes two windows: a
 * pass over the whole scan now and then, to learn where the pair appears,
 * and in between only those places (a pass takes longer than the record
 * waits for pwrite(2)). */
__attribute__((no_sanitize_address)) static void *count_attacker(void *arg)
{
	volatile uint64_t *hot[IF_HOT];
	unsigned nr_hot = 0;

	(void)arg;
	while (!ifl.done) {
		for (volatile uint64_t *p = ifl.lo; p + 1 < ifl.hi; p++) {
			unsigned i = 0;

			if (p[0] != 1 || p[1] != 1)
				continue;
			p[0] = 2;
			ifl.stores++;
			while (i < nr_hot && hot[i] != p)
				i++;
			if (i == nr_hot && nr_hot < IF_HOT)
				hot[nr_hot++] = p;
		}
		for (unsigned k = 0; k < 10000 && !ifl.done; k++)
			for (unsigned i = 0; i < nr_hot; i++)
				if (hot[i][0] == 1 && hot[i][1] == 1) {
					hot[i][0] = 2;
					ifl.stores++;
				}
	}
	return NULL;
}

/* Every window of the program closed: a plain store must fault. */
static int count_trial(void *map)
{
	if_race(count_victim, if_attacker(count_attacker), map);
	if (attack_try_store64(&if_count[1], ATTACK_MARKER) &&
	    attack_load64(&if_count[1]) == ATTACK_MARKER)
		return IF_LANDED;
	return IF_HELD;
}

ATTACK("27d", inflight_window_count,
       "raise mprotect's count of open windows on its way to the vault "
       "(begin/end): the section stays writable after every window closed")
{
	if (strcmp(rare_write_backend(), "mprotect"))
		attack_report(ATTACK_NA,
			      "no process-wide count of windows (mprotect "
			      "only)");
	if_trials(count_trial, NULL,
		  "a plain store landed after every window closed",
		  "the section read-only after the windows");
}

ATTACK("27e", inflight_map_count,
       "raise mprotect's count of open windows on its way to the vault "
       "(map/unmap): the section stays writable after every unmap")
{
	if (strcmp(rare_write_backend(), "mprotect"))
		attack_report(ATTACK_NA,
			      "a map is no window of a process-wide count "
			      "(mprotect only)");
	if_trials(count_trial, (void *)1,
		  "a plain store landed after every map was unmapped",
		  "the section read-only after the maps");
}

/* ---- 27f: the core's record of nested windows ---- */

static long if_nest[8] __wr_rare __attribute__((aligned(64)));
static volatile int32_t if_nest_tid;

/* Windows nested two deep, then a plain store of this thread's (pkey's
 * windows are a thread's own): it lands only if a window stayed open. */
static void *nested_victim(void *arg)
{
	(void)arg;
	if_nest_tid = (int32_t)syscall(SYS_gettid);
	for (long i = 0; i < IF_CALLS && !if_trial_over(i); i++) {
		rare_write_begin();
		rare_write_begin(); /* a helper that opens its own window */
		if_nest[0] = i;
		rare_write_end();
		rare_write_end();
	}
	return (void *)(uintptr_t)(attack_try_store64(&if_nest[1],
						      ATTACK_MARKER) &&
				   attack_load64(&if_nest[1]) == ATTACK_MARKER);
}

/* {victim's tid, 1 level} becomes {tid, 2^30 levels}. */
__attribute__((no_sanitize_address)) static void *nested_attacker(void *arg)
{
	uint64_t want, forged;

	(void)arg;
	while (!if_nest_tid && !ifl.done)
		;
	want = (uint32_t)if_nest_tid | (1ULL << 32);
	forged = (uint32_t)if_nest_tid | (0x40000000ULL << 32);
	while (!ifl.done)
		for (volatile uint64_t *p = ifl.lo; p < ifl.hi; p++)
			if (*p == want) {
				*p = forged;
				ifl.stores++;
			}
	return NULL;
}

static int nested_trial(void *arg)
{
	(void)arg;
	if_nest_tid = 0;
	return if_race(nested_victim, if_attacker(nested_attacker), NULL)
		       ? IF_LANDED
		       : IF_HELD;
}

ATTACK("27f", inflight_nested,
       "make the core's record of a nested window on its way to the table "
       "say 2^30 levels: the outermost `rare_write_end` does not close")
{
	if (!(rare_write_caps() & RARE_WRITE_CAP_BEGIN_END))
		attack_report(ATTACK_NA, "no begin/end windows");
	if_trials(nested_trial, NULL,
		  "a plain store landed after the outermost end",
		  "the window closed at the outermost end");
}

/* ---- 27g: mprotect's multi-segment write ---- */

static struct {
	struct rare_pool *pool;
	struct rare_list_head *head, *entry;
	uint64_t *table; /* another object on the head's page */
} ifg;

/* Whether the kernel may write at @p: getcpu(2) stores through the same
 * page tables as a plain store would, and fails with EFAULT instead of
 * faulting (the victim's probe, after each call; not the attacker's). */
static bool if_writable(void *p)
{
	return syscall(SYS_getcpu, p, NULL, NULL) == 0;
}

static void *list_victim(void *arg)
{
	(void)arg;
	for (int i = 0; i < IF_CALLS && !if_trial_over(i); i++) {
		if (i & 1)
			rare_list_del(ifg.entry);
		else
			rare_list_add(ifg.entry, ifg.head);
		/* The call returned: the head's page is read-only again,
		 * unless its close flip went elsewhere. */
		if (if_writable(&ifg.table[1]))
			return (void *)(uintptr_t)(attack_try_store64(
							   &ifg.table[0],
							   ATTACK_MARKER) &&
						   attack_load64(
							   &ifg.table[0]) ==
							   ATTACK_MARKER);
	}
	return NULL;
}

/* @p: a segment {region, dst, src, len, fill} whose dst is the head's
 * link and whose store is done (its source holds the link's new value). */
__attribute__((no_sanitize_address)) static bool
list_seg_stored(volatile uint64_t *p, uint64_t link)
{
	uint64_t src = p[1];

	if (p[0] != (uint64_t)&ifg.head->next || p[2] != 8 || (uint32_t)p[3])
		return false;
	if (src < (uint64_t)ifl.stack ||
	    src > (uint64_t)ifl.stack + IF_STACK - 8)
		return false;
	return *(volatile uint64_t *)src == link;
}

/* When the head's link changes (the segment's store is done, its close
 * is still to come), point the segment at the pool's first page (another
 * page of the region, read-only already). */
__attribute__((no_sanitize_address)) static void *list_attacker(void *arg)
{
	volatile uint64_t *seen[2] = {NULL, NULL};
	volatile uint64_t *link = (volatile uint64_t *)&ifg.head->next;
	uint64_t last = *link, now;

	(void)arg;
	while (!ifl.done) {
		volatile uint64_t *hit = NULL;

		now = *link;
		if (now == last)
			continue;
		last = now;
		for (int k = 0; k < 2 && !hit; k++)
			if (seen[k] && list_seg_stored(seen[k], now))
				hit = seen[k];
		for (volatile uint64_t *p = ifl.lo + 1; !hit && p + 3 < ifl.hi;
		     p++)
			if (list_seg_stored(p, now)) {
				hit = p;
				seen[seen[0] ? 1 : 0] = p;
			}
		if (hit) {
			hit[0] = (uint64_t)ifg.pool;
			ifl.stores++;
		}
	}
	return NULL;
}

/* A head and a node on pages of their own (different size classes), and
 * the entry that goes in and out between them. */
static int list_trial(void *arg)
{
	struct rare_list_head *node;

	(void)arg;
	ifg.pool = rare_pool_create(1 << 20);
	if (!ifg.pool)
		return IF_BROKEN;
	ifg.head = rare_alloc(ifg.pool, 16);
	ifg.table = rare_alloc(ifg.pool, 16);
	ifg.entry = rare_alloc(ifg.pool, 32);
	node = rare_alloc(ifg.pool, 64);
	if (!ifg.head || !ifg.table || !ifg.entry || !node ||
	    ((uintptr_t)ifg.head ^ (uintptr_t)ifg.table) >= 4096 ||
	    ((uintptr_t)ifg.head ^ (uintptr_t)ifg.entry) < 4096)
		return IF_BROKEN;
	rare_write(*ifg.head, ((struct rare_list_head){ifg.head, ifg.head}));
	rare_list_add(node, ifg.head);
	return if_race(list_victim, if_attacker(list_attacker), NULL)
		       ? IF_LANDED
		       : IF_HELD;
}

ATTACK("27g", inflight_flip,
       "move a segment of mprotect's multi-segment write (a list link) "
       "between its open and close flips: its page stays writable")
{
	if (strcmp(rare_write_backend(), "mprotect"))
		attack_report(ATTACK_NA, "no page flips (mprotect only)");
	if_trials(list_trial, NULL,
		  "the list head's page stayed writable after the call; a "
		  "plain store landed in another object on it",
		  "the head's page read-only after every call");
}

/* ---- 27h: pkey's record of a thread's holds ---- */

static long if_holds[8] __wr_rare __attribute__((aligned(64)));
static volatile int32_t if_holds_tid;

/* One window at a time, then a plain store of this thread's: it lands
 * only if the thread kept its keys open. */
static void *holds_victim(void *arg)
{
	(void)arg;
	if_holds_tid = (int32_t)syscall(SYS_gettid);
	for (long i = 0; i < IF_CALLS && !if_trial_over(i); i++) {
		rare_write_begin();
		if_holds[0] = i;
		rare_write_end();
	}
	return (void *)(uintptr_t)(attack_try_store64(&if_holds[1],
						      ATTACK_MARKER) &&
				   attack_load64(&if_holds[1]) ==
					   ATTACK_MARKER);
}

/* {victim's tid, no handler nesting} followed by a window count of 1:
 * the record on its way; the count becomes 2. */
__attribute__((no_sanitize_address)) static void *holds_attacker(void *arg)
{
	uint64_t want;

	(void)arg;
	while (!if_holds_tid && !ifl.done)
		;
	want = (uint32_t)if_holds_tid; /* nest 0 in the high half */
	while (!ifl.done)
		for (volatile uint64_t *p = ifl.lo; p + 1 < ifl.hi; p++)
			if (p[0] == want && (p[1] & 0xffff) == 1) {
				p[1] = (p[1] & ~0xffffULL) | 2;
				ifl.stores++;
			}
	return NULL;
}

static int holds_trial(void *arg)
{
	(void)arg;
	if_holds_tid = 0;
	return if_race(holds_victim, if_attacker(holds_attacker), NULL)
		       ? IF_LANDED
		       : IF_HELD;
}

ATTACK("27h", inflight_holds,
       "raise a window count in the record of pkey's thread on its way to "
       "the records' page: the outermost `rare_write_end` leaves the keys "
       "open")
{
	if (strcmp(rare_write_backend(), "pkey"))
		attack_report(ATTACK_NA,
			      "no per-thread record of keys held (pkey only)");
	if_trials(holds_trial, NULL,
		  "a plain store landed after the window closed",
		  "the keys closed at the end");
}

/* ---- 27i: mprotect's built write ---- */

static struct {
	char dst[8];
	uint64_t next; /* another protected object on the page */
} if_built __wr_rare __attribute__((aligned(64)));
static struct {
	char src[8];
	uint64_t after; /* what a longer copy would take along */
} if_built_src __attribute__((aligned(64)));

static void *built_victim(void *arg)
{
	(void)arg;
	for (long i = 0; i < IF_CALLS && !if_trial_over(i) && !if_built.next;
	     i++)
		rare_write_memcpy(if_built.dst, if_built_src.src, 3);
	return NULL;
}

/* {region, dst, src, 3, 0} on the victim's stack: 3 becomes 16. */
__attribute__((no_sanitize_address)) static void *built_attacker(void *arg)
{
	const uint64_t dst = (uint64_t)(uintptr_t)if_built.dst;
	const uint64_t src = (uint64_t)(uintptr_t)if_built_src.src;

	(void)arg;
	while (!ifl.done)
		for (volatile uint64_t *p = ifl.lo; p + 2 < ifl.hi; p++)
			if (p[0] == dst && p[1] == src && p[2] == 3) {
				p[2] = 16;
				ifl.stores++;
			}
	return NULL;
}

static int built_trial(void *arg)
{
	(void)arg;
	memcpy(if_built_src.src, "abc", 3);
	if_built_src.after = ATTACK_MARKER;
	if_race(built_victim, if_attacker(built_attacker), NULL);
	return if_built.next == ATTACK_MARKER ? IF_LANDED : IF_HELD;
}

ATTACK("27i", inflight_built,
       "make the length of a 3-byte `rare_write_memcpy` segment on its "
       "stack 16 while the backend opens: the copy runs over into the "
       "next protected object")
{
	if_trials(built_trial, NULL,
		  "the copy ran over into the next protected object",
		  "the next object unchanged");
}

/* ---- 27j: rare_pool_set_name() ---- */

static struct {
	struct rare_pool *pool;
	volatile uint64_t *table; /* a live object of the pool */
	uint64_t name_at;	  /* where the pool's head keeps its name */
} ifn;

static void *name_victim(void *arg)
{
	(void)arg;
	for (int i = 0;
	     i < IF_CALLS && !if_trial_over(i) && ifn.table[0] == IF_MAGIC; i++)
		if (rare_pool_set_name(ifn.pool, i & 1 ? "handlers-odd"
						       : "handlers-even"))
			break;
	return NULL;
}

/* {region, name, copy, RARE_POOL_NAME_MAX}: the name's place becomes the
 * table's. */
__attribute__((no_sanitize_address)) static void *name_attacker(void *arg)
{
	(void)arg;
	while (!ifl.done)
		for (volatile uint64_t *p = ifl.lo; p + 2 < ifl.hi; p++)
			if (p[0] == ifn.name_at && p[2] == RARE_POOL_NAME_MAX) {
				p[0] = (uint64_t)(uintptr_t)ifn.table;
				ifl.stores++;
			}
	return NULL;
}

static int name_trial(void *arg)
{
	static const char probe[] = "probe-27j";
	const uint64_t magic = IF_MAGIC;
	const char *at;

	(void)arg;
	ifn.pool = rare_pool_create(1 << 16);
	ifn.table = ifn.pool ? rare_alloc(ifn.pool, 32) : NULL;
	if (!ifn.table || rare_pool_set_name(ifn.pool, probe))
		return IF_BROKEN;
	rare_write_memcpy((void *)ifn.table, &magic, sizeof(magic));
	/* The pool's head is readable: find the name in it. */
	at = memmem(ifn.pool, 4096, probe, sizeof(probe));
	if (!at)
		return IF_BROKEN;
	ifn.name_at = (uint64_t)(uintptr_t)at;
	if_race(name_victim, if_attacker(name_attacker), NULL);
	return ifn.table[0] == IF_MAGIC ? IF_HELD : IF_LANDED;
}

ATTACK("27j", inflight_set_name,
       "point the name `rare_pool_set_name` writes into the pool's head (a "
       "segment on its stack) at a live object of the pool")
{
	if_trials(name_trial, NULL, "the pool's name went over a live object",
		  "the live object unchanged");
}

/* ---- 27k: rare_pool_create()'s head ---- */

static struct {
	uint64_t magic;		  /* a pool head's first word */
	uintptr_t table_page;	  /* the object page of another pool */
	volatile uintptr_t stray; /* an object handed out outside its pool */
} ifp;

static void *create_victim(void *arg)
{
	(void)arg;
	for (int i = 0; i < IF_CALLS / 10 && !if_trial_over(i) && !ifp.stray;
	     i++) {
		struct rare_pool *pool = rare_pool_create(1 << 16);
		uintptr_t o = pool ? (uintptr_t)rare_alloc(pool, 32) : 0;

		if (o && (o < (uintptr_t)pool ||
			  o >= (uintptr_t)pool + (1 << 16) + (64 << 10)))
			ifp.stray = o;
		rare_pool_destroy(pool);
	}
	return NULL;
}

/* {magic, name (zero), nr_pages, objects, ...}: the new pool's object
 * pages become the other pool's. */
__attribute__((no_sanitize_address)) static void *create_attacker(void *arg)
{
	(void)arg;
	while (!ifl.done)
		for (volatile uint64_t *p = ifl.lo; p + 7 < ifl.hi; p++)
			if (p[0] == ifp.magic && !p[1] && !p[2] && !p[3] &&
			    !p[4] && p[5] && p[6] && p[6] != ifp.table_page) {
				p[6] = ifp.table_page;
				ifl.stores++;
			}
	return NULL;
}

static int create_trial(void *arg)
{
	struct rare_pool *other = rare_pool_create(1 << 16);
	uint64_t *table = other ? rare_alloc(other, 32) : NULL;

	(void)arg;
	if (!table)
		return IF_BROKEN;
	memcpy(&ifp.magic, other, sizeof(ifp.magic));
	ifp.table_page = (uintptr_t)table & ~(uintptr_t)4095;
	ifp.stray = 0;
	if_race(create_victim, if_attacker(create_attacker), NULL);
	return ifp.stray ? IF_LANDED : IF_HELD;
}

ATTACK("27k", inflight_create,
       "point the object pages of the head `rare_pool_create` writes (on "
       "its stack) at another pool's: its objects are the other's")
{
	if_trials(create_trial, NULL,
		  "a new pool handed out an object of another pool",
		  "every object inside its own pool");
}

/* ---- 27l: rare_realloc() ---- */

static struct {
	struct rare_pool *pool;
	volatile uint64_t *table; /* a live object of the pool */
	volatile uint64_t moving; /* the object being grown */
} ifr;

static void *realloc_victim(void *arg)
{
	const uint64_t v[2] = {0x5a5a5a5a5a5a5a5aULL, 1};

	(void)arg;
	for (int i = 0;
	     i < IF_CALLS && !if_trial_over(i) && ifr.table[0] == IF_MAGIC;
	     i++) {
		void *o = rare_alloc(ifr.pool, 16), *n;

		if (!o)
			break;
		rare_write_memcpy(o, v, sizeof(v));
		ifr.moving = (uint64_t)(uintptr_t)o;
		n = rare_realloc(ifr.pool, o, 32);
		rare_free(ifr.pool, n ? n : o);
	}
	return NULL;
}

/*
 * {region, new object, old object, 16}: the copy goes to the table. A
 * first word below a page is an offset into a writable alias, not an
 * address (shadow's record {..., offset in the alias, source, length},
 * which its copy read from the stack until cbd4707): the table's offset
 * in its page, where the alias maps the table's page too.
 */
__attribute__((no_sanitize_address)) static void *realloc_attacker(void *arg)
{
	const uint64_t table = (uint64_t)(uintptr_t)ifr.table;
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	const uint64_t in_page = table & (page - 1);

	(void)arg;
	while (!ifl.done)
		for (volatile uint64_t *p = ifl.lo; p + 2 < ifl.hi; p++)
			if (p[1] == ifr.moving && p[2] == 16 && p[0] &&
			    p[0] != table && p[0] != p[1] && p[0] != in_page) {
				p[0] = p[0] < page ? in_page : table;
				ifl.stores++;
			}
	return NULL;
}

static int realloc_trial(void *arg)
{
	const uint64_t magic = IF_MAGIC;

	(void)arg;
	ifr.pool = rare_pool_create(1 << 16);
	ifr.table = ifr.pool ? rare_alloc(ifr.pool, 32) : NULL;
	if (!ifr.table)
		return IF_BROKEN;
	rare_write_memcpy((void *)ifr.table, &magic, sizeof(magic));
	if_race(realloc_victim, if_attacker(realloc_attacker), NULL);
	return ifr.table[0] == IF_MAGIC ? IF_HELD : IF_LANDED;
}

ATTACK("27l", inflight_realloc,
       "point the copy `rare_realloc` makes into the grown object (a "
       "segment on its stack) at another live object of the pool")
{
	if_trials(realloc_trial, NULL,
		  "the grown object's copy went over a live object",
		  "the live object unchanged");
}

/* ---- 27m: rare_pool_create_with()'s own backend ---- */

static struct {
	const struct rw_table *table;
	const char *name;	 /* the backend asked for */
	uint64_t ops, other;	 /* its ops table, another's */
	volatile uint64_t wrong; /* a pool on another backend */
	const char *wrong_how;	 /* how it was asked for */
	bool auto_too;		 /* "auto" picks this backend too */
} ifb;

/* Each call asks for the backend by name, by default, or as "auto" where
 * auto picks it too (the lookup's answer comes back through memory). */
static void *backend_victim(void *arg)
{
	const struct rare_pool_opts named = {.backend = ifb.name};
	const struct rare_pool_opts automatic = {.backend = "auto"};
	static const char *const how[] = {"named", "by default", "as auto"};

	(void)arg;
	for (int i = 0; i < IF_CALLS / 10 && !if_trial_over(i) && !ifb.wrong;
	     i++) {
		int k = i % (ifb.auto_too ? 3 : 2);
		struct rare_pool *pool =
			rare_pool_create_with(4096, k == 0   ? &named
						    : k == 1 ? NULL
							     : &automatic);
		const struct rw_region *r =
			pool ? attack_region_of(ifb.table, pool) : NULL;

		if (r && (uint64_t)(uintptr_t)r->backend != ifb.ops) {
			ifb.wrong_how = how[k];
			ifb.wrong = (uint64_t)(uintptr_t)r->backend;
		}
		rare_pool_destroy(pool);
	}
	return NULL;
}

/* The backend's ops table, wherever it crosses a call: another's. */
__attribute__((no_sanitize_address)) static void *backend_attacker(void *arg)
{
	(void)arg;
	while (!ifl.done)
		for (volatile uint64_t *p = ifl.lo; p < ifl.hi; p++)
			if (*p == ifb.ops) {
				*p = ifb.other;
				ifl.stores++;
			}
	return NULL;
}

static int backend_trial(void *arg)
{
	static char sym[48];
	const char *other;
	struct rare_pool_opts o;

	(void)arg;
	ifb.table = attack_lib_sym("rw_table");
	ifb.name = rare_write_backend();
	other = strcmp(ifb.name, "mprotect") ? "mprotect" : "pwrite";
	snprintf(sym, sizeof(sym), "rw_backend_%s", ifb.name);
	ifb.ops = (uint64_t)(uintptr_t)attack_lib_sym(sym);
	snprintf(sym, sizeof(sym), "rw_backend_%s", other);
	ifb.other = (uint64_t)(uintptr_t)attack_lib_sym(sym);
	o = (struct rare_pool_opts){.backend = other};
	/* The other backend in use, as a program's pool on it makes it. */
	if (!ifb.table || !ifb.ops || !ifb.other ||
	    !rare_pool_create_with(4096, &o))
		return IF_BROKEN;
	o = (struct rare_pool_opts){.backend = "auto"};
	{
		struct rare_pool *a = rare_pool_create_with(4096, &o);
		const struct rw_region *r =
			a ? attack_region_of(ifb.table, a) : NULL;

		if (!r)
			return IF_BROKEN;
		ifb.auto_too = (uint64_t)(uintptr_t)r->backend == ifb.ops;
		rare_pool_destroy(a);
	}
	ifb.wrong = 0;
	if_race(backend_victim, if_attacker(backend_attacker), NULL);
	if (ifb.wrong && getenv("RAREWRITE_TEST_VERBOSE"))
		fprintf(stderr, "27m: a pool %s recorded on %s\n",
			ifb.wrong_how,
			ifb.wrong == ifb.other ? other : "another backend");
	return ifb.wrong ? IF_LANDED : IF_HELD;
}

ATTACK("27m", inflight_pool_backend,
       "rewrite the ops table of the backend a `rare_pool_create_with` "
       "names (on its stack, in flight) to another backend's: the pool is "
       "made and recorded on that one")
{
	if_trials(backend_trial, NULL,
		  "a new pool was recorded on another backend",
		  "every new pool on the backend asked for");
}

/* ---- 27n: rare_pool_create()'s head, 27o: rare_pool_destroy()'s slot ---- */

static long if_sect[8] __wr_rare __attribute__((aligned(64)));

static struct {
	const struct rw_table *table;
	const struct rw_region *sect; /* the section's record */
	unsigned char *copy;	      /* its bytes before the race */
	uint64_t rec, start;	      /* the slot and start create reuses */
	uint64_t to_rec, to_start;    /* what the attacker makes them */
	uintptr_t other;	      /* 27o: a live pool of the program's */
} ifh;

static bool sect_changed(void)
{
	return memcmp(ifh.copy, (const void *)ifh.sect->start, ifh.sect->len);
}

/* The library's abort after the head went astray: whether the section
 * was written before it. */
static void head_abort(int sig)
{
	(void)sig;
	if (sect_changed()) {
		__atomic_add_fetch(ift.stores, ifl.stores, __ATOMIC_SEQ_CST);
		_exit(IF_LANDED);
	}
	signal(SIGABRT, SIG_DFL);
	raise(SIGABRT);
}

static bool if_mapped(const void *p)
{
	unsigned char v;

	return !mincore((void *)p, 4096, &v);
}

static void *head_victim(void *arg)
{
	(void)arg;
	for (int i = 0; i < IF_CALLS / 10 && !if_trial_over(i); i++) {
		struct rare_pool *pool = rare_pool_create(4096);

		if (!pool)
			break;
		rare_pool_destroy(pool);
		if (ifh.other &&
		    (!attack_region_of(ifb.table, (void *)ifh.other) ||
		     !if_mapped((void *)ifh.other)))
			break;
	}
	return NULL;
}

__attribute__((no_sanitize_address)) static void *head_attacker(void *arg)
{
	(void)arg;
	while (!ifl.done)
		for (volatile uint64_t *p = ifl.lo; p < ifl.hi; p++) {
			uint64_t v = *p;

			if (v == ifh.rec)
				*p = ifh.to_rec;
			else if (ifh.to_start && v == ifh.start)
				*p = ifh.to_start;
			else
				continue;
			ifl.stores++;
		}
	return NULL;
}

/* The slot and start a pool created and destroyed here takes (the loop
 * reuses them: the first free slot, the same mapping). */
static bool head_setup(void)
{
	struct rare_pool *p;
	const struct rw_region *r;

	ifb.table = ifh.table = attack_lib_sym("rw_table");
	if (!ifh.table)
		return false;
	rare_write(if_sect[0], 0x5ec7105ec7105ecL);
	ifh.sect = attack_region_of(ifb.table, if_sect);
	p = rare_pool_create(4096);
	r = p ? attack_region_of(ifb.table, p) : NULL;
	if (!ifh.sect || !r)
		return false;
	ifh.rec = (uint64_t)(uintptr_t)r;
	ifh.start = r->start;
	rare_pool_destroy(p);
	return true;
}

static int head_trial(void *arg)
{
	(void)arg;
	if (!head_setup())
		return IF_BROKEN;
	ifh.to_rec = (uint64_t)(uintptr_t)ifh.sect;
	ifh.to_start = ifh.sect->start;
	ifh.copy = malloc(ifh.sect->len);
	if (!ifh.copy)
		return IF_BROKEN;
	memcpy(ifh.copy, (const void *)ifh.sect->start, ifh.sect->len);
	signal(SIGABRT, head_abort);
	if_race(head_victim, if_attacker(head_attacker), NULL);
	return sect_changed() ? IF_LANDED : IF_HELD;
}

ATTACK("27n", inflight_pool_head,
       "rewrite the slot and start `rare_pool_create` carries to the new "
       "pool's head (registers saved on its stack, the head's segment) to "
       "the section's: the head is written over the section")
{
	if_trials(head_trial, NULL,
		  "a new pool's head was written over the section (then the "
		  "library aborted)",
		  "the section unchanged");
}

static int slot_trial(void *arg)
{
	struct rare_pool *other;
	const struct rw_region *o;

	(void)arg;
	ifb.table = ifh.table = attack_lib_sym("rw_table");
	other = rare_pool_create(
		4096); /* first: the loop takes the next slot */
	o = other && ifh.table ? attack_region_of(ifb.table, other) : NULL;
	if (!o || !head_setup())
		return IF_BROKEN;
	ifh.other = (uintptr_t)other;
	ifh.to_rec = (uint64_t)(uintptr_t)o;
	ifh.to_start = 0;
	if_race(head_victim, if_attacker(head_attacker), NULL);
	/* Out of the table, or its pages unmapped under a record that
	 * stayed (a backend's destroy() on the moved record). */
	return attack_region_of(ifb.table, other) && if_mapped(other)
		       ? IF_HELD
		       : IF_LANDED;
}

ATTACK("27o", inflight_pool_slot,
       "rewrite the slot `rare_pool_destroy` carries past its lock wait "
       "to another live pool's record: that pool is destroyed instead")
{
	if_trials(slot_trial, NULL, "another live pool was destroyed",
		  "the other pool still live");
}

/* ---- 27p: the zeroes a sealed pool's destroy leaves in its view ---- */

static struct {
	volatile uint64_t start;	 /* the sealed pool being destroyed */
	uint64_t to_start;		 /* another live pool's start */
	const volatile uint64_t *marker; /* an object of that pool */
} ifz;

#define IF_ZMARK 0x5eadbeefcafef00dULL

/* The other pool still live, mapped, and its object unchanged (read only
 * once it is known mapped: destroyed, it would fault, not report). */
static bool zero_held(void)
{
	return attack_region_of(ifb.table, (const void *)ifz.marker) &&
	       if_mapped((const void *)((uintptr_t)ifz.marker & ~4095UL)) &&
	       *ifz.marker == IF_ZMARK;
}

static void *zero_victim(void *arg)
{
	const struct rare_pool_opts sealed = {.flags = RARE_POOL_SEAL};

	(void)arg;
	for (int i = 0; i < IF_CALLS / 30 && !if_trial_over(i) && zero_held();
	     i++) {
		struct rare_pool *pool = rare_pool_create_with(4096, &sealed);
		const struct rw_region *r =
			pool ? attack_region_of(ifb.table, pool) : NULL;

		if (!r)
			break;
		ifz.start = r->start;
		rare_pool_destroy(pool);
	}
	return NULL;
}

/* The start of the sealed pool being destroyed, wherever it crosses a
 * call or a wait: the other pool's. */
__attribute__((no_sanitize_address)) static void *zero_attacker(void *arg)
{
	(void)arg;
	while (!ifl.done) {
		uint64_t start = ifz.start;

		if (!start)
			continue;
		for (volatile uint64_t *p = ifl.lo; p < ifl.hi; p++)
			if (*p == start) {
				*p = ifz.to_start;
				ifl.stores++;
			}
	}
	return NULL;
}

static int zero_trial(void *arg)
{
	const struct rare_pool_opts sealed = {.flags = RARE_POOL_SEAL};
	struct rare_pool *other, *probe;
	const struct rw_region *o;
	uint64_t *obj;

	(void)arg;
	ifb.table = attack_lib_sym("rw_table");
	probe = ifb.table ? rare_pool_create_with(4096, &sealed) : NULL;
	if (!probe)
		return IF_BROKEN;
	rare_pool_destroy(probe);
	other = rare_pool_create(4096);
	obj = other ? rare_alloc(other, sizeof(*obj)) : NULL;
	o = obj ? attack_region_of(ifb.table, other) : NULL;
	if (!o)
		return IF_BROKEN;
	rare_write(*obj, IF_ZMARK);
	ifz.marker = obj;
	ifz.to_start = o->start;
	ifz.start = 0;
	if_race(zero_victim, if_attacker(zero_attacker), NULL);
	return zero_held() ? IF_HELD : IF_LANDED;
}

ATTACK("27p", inflight_sealed_zeroes,
       "rewrite the start of a sealed pool `rare_pool_destroy` zero-fills "
       "(its view stays mapped) to another live pool's: that pool is "
       "zeroed")
{
	if_trials(zero_trial, NULL,
		  "another live pool was zeroed (or destroyed)",
		  "the other pool's object unchanged");
}

/* ---- 27r: a backend's copy of a segment, checked and read again ---- */

static struct {
	struct rare_pool *pool;
	struct rare_list_head *head, *entry;
	volatile uint64_t *table; /* another live object of the pool */
	uint64_t region;	  /* the pool's record in the table */
} ifc;

static void *seg_victim(void *arg)
{
	(void)arg;
	for (int i = 0;
	     i < IF_CALLS && !if_trial_over(i) && ifc.table[0] == IF_MAGIC;
	     i++) {
		if (i & 1)
			rare_list_del(ifc.entry);
		else
			rare_list_add(ifc.entry, ifc.head);
	}
	return NULL;
}

/* Whether @p holds a segment {region, dst, src, 8, 0} of the pool. */
__attribute__((no_sanitize_address)) static bool
seg_of_pool(volatile uint64_t *p)
{
	return p >= ifl.lo && p + 4 < ifl.hi && p[0] == ifc.region &&
	       p[3] == 8 && !(uint32_t)p[4];
}

/* Whether @p is the head's link segment, alone: not in an array of them
 * (the helper's four), and below every such array seen (deeper in the
 * stack: the backend's frame, not the helper's). */
__attribute__((no_sanitize_address)) static bool
seg_lone(volatile uint64_t *p, volatile uint64_t *arr)
{
	return p[1] == (uint64_t)(uintptr_t)&ifc.head->next && seg_of_pool(p) &&
	       p + 5 <= arr && !seg_of_pool(p - 5);
}

/*
 * A backend's copy of the segment that writes the head's link: its
 * destination becomes the other object's. Not the list helper's array of
 * four segments (a store there moves the write too, within what
 * rw_seg_region() accepts: the caller's array is open, SECURITY.md), so
 * only a segment alone, deeper in the stack than every array seen. A
 * pass over the stack now and then, to learn where, and in between only
 * those places (a pass is slower than the copy lives).
 */
__attribute__((no_sanitize_address)) static void *seg_attacker(void *arg)
{
	volatile uint64_t *hot[IF_HOT], *arr = ifl.hi;
	unsigned nr_hot = 0;

	(void)arg;
	while (!ifl.done) {
		for (volatile uint64_t *p = ifl.lo + 5; p + 20 < ifl.hi; p++) {
			unsigned i = 0;

			if (p < arr && seg_of_pool(p) && seg_of_pool(p + 5) &&
			    seg_of_pool(p + 10) && seg_of_pool(p + 15))
				arr = p;
			if (!seg_lone(p, arr))
				continue;
			while (i < nr_hot && hot[i] != p)
				i++;
			if (i == nr_hot && nr_hot < IF_HOT)
				hot[nr_hot++] = p;
		}
		for (unsigned k = 0; k < 100000 && !ifl.done; k++)
			for (unsigned i = 0; i < nr_hot; i++)
				if (seg_lone(hot[i], arr)) {
					hot[i][1] =
						(uint64_t)(uintptr_t)ifc.table;
					ifl.stores++;
				}
	}
	return NULL;
}

static int seg_trial(void *arg)
{
	const struct rw_region *r;
	struct rare_list_head *node;

	(void)arg;
	ifb.table = attack_lib_sym("rw_table");
	ifc.pool = ifb.table ? rare_pool_create(1 << 16) : NULL;
	r = ifc.pool ? attack_region_of(ifb.table, ifc.pool) : NULL;
	ifc.head = r ? rare_alloc(ifc.pool, 16) : NULL;
	ifc.entry = ifc.head ? rare_alloc(ifc.pool, 16) : NULL;
	node = ifc.entry ? rare_alloc(ifc.pool, 16) : NULL;
	ifc.table = node ? rare_alloc(ifc.pool, 16) : NULL;
	if (!ifc.table)
		return IF_BROKEN;
	ifc.region = (uint64_t)(uintptr_t)r;
	rare_write(*(uint64_t *)ifc.table, IF_MAGIC);
	rare_write(*ifc.head, ((struct rare_list_head){ifc.head, ifc.head}));
	rare_list_add(node, ifc.head);
	if_race(seg_victim, if_attacker(seg_attacker), NULL);
	return ifc.table[0] == IF_MAGIC ? IF_HELD : IF_LANDED;
}

ATTACK("27r", inflight_seg_copy,
       "point the destination of a list link's segment, in the backend's "
       "copy between its check and its store, at another live object: "
       "the link is written there")
{
	if_trials(seg_trial, NULL,
		  "a list link went into another live object of the pool",
		  "the other object unchanged");
}

/* ---- 27t: a new pool's start, moved to memory outside every region ---- */

/* Plain memory of the program's, in no region: .bss, page-aligned, as a
 * page of .data or of libc's data would be. */
static unsigned char if_elsewhere[16 * 4096] __attribute__((aligned(4096)));

static struct {
	volatile uint64_t start;  /* the mapping the loop's pool gets */
	uint64_t slot;		  /* its slot in the table */
	volatile int creating;	  /* the victim is inside rare_pool_create() */
	const char *volatile how; /* what elsewhere_touched() found */
} ifq;

/* Whether a live record of the table names if_elsewhere, or a write went
 * there (it is zero until then). */
static bool elsewhere_touched(void)
{
	uintptr_t lo = (uintptr_t)if_elsewhere, hi = lo + sizeof(if_elsewhere);

	for (unsigned i = 0; i < ifh.table->nr_regions && i < RW_MAX_REGIONS;
	     i++) {
		const struct rw_region *r = &ifh.table->regions[i];

		if (r->kind != RW_REGION_FREE && r->start < hi &&
		    lo < r->start + r->len) {
			ifq.how = "the table recorded a pool there";
			return true;
		}
	}
	for (size_t i = 0; i < sizeof(if_elsewhere); i++)
		if (((volatile unsigned char *)if_elsewhere)[i]) {
			ifq.how = "it was written";
			return true;
		}
	return false;
}

/* The library's abort after the record or a write went there: landed (a
 * write outside the pool happened, or the table named that memory). */
static void elsewhere_abort(int sig)
{
	(void)sig;
	if (elsewhere_touched()) {
		if (getenv("RAREWRITE_TEST_VERBOSE"))
			fprintf(stderr, "27t: %s (then the library aborted)\n",
				ifq.how);
		__atomic_add_fetch(ift.stores, ifl.stores, __ATOMIC_SEQ_CST);
		_exit(IF_LANDED);
	}
	signal(SIGABRT, SIG_DFL);
	raise(SIGABRT);
}

/* Each pool is destroyed by its start as the table records it: the
 * returned pointer crosses the victim's stack while the attacker may still
 * be rewriting it. */
static void *start_victim(void *arg)
{
	const struct rw_region *r = &ifh.table->regions[ifq.slot];

	(void)arg;
	for (int i = 0; i < IF_CALLS / 10 && !if_trial_over(i); i++) {
		struct rare_pool *pool;

		__atomic_store_n(&ifq.creating, 1, __ATOMIC_SEQ_CST);
		pool = rare_pool_create(4096);
		__atomic_store_n(&ifq.creating, 0, __ATOMIC_SEQ_CST);
		if (!pool && getenv("RAREWRITE_TEST_VERBOSE"))
			fprintf(stderr, "27t: rare_pool_create: %s\n",
				strerror(errno));
		if (!pool || elsewhere_touched() || r->kind != RW_REGION_POOL)
			break;
		/* The next creation most likely maps the same place again
		 * (the probe's may be a thread's stack by now). */
		ifq.start = r->start;
		rare_pool_destroy((struct rare_pool *)r->start);
	}
	return NULL;
}

/* The mapping's start, wherever it is in memory while a creation runs:
 * if_elsewhere. */
__attribute__((no_sanitize_address)) static void *start_attacker(void *arg)
{
	(void)arg;
	while (!ifl.done) {
		if (!__atomic_load_n(&ifq.creating, __ATOMIC_RELAXED))
			continue;
		for (volatile uint64_t *p = ifl.lo; p < ifl.hi; p++)
			if (*p == ifq.start) {
				*p = (uint64_t)(uintptr_t)if_elsewhere;
				ifl.stores++;
			}
	}
	return NULL;
}

static int start_trial(void *arg)
{
	struct rare_pool *p;
	const struct rw_region *r;

	(void)arg;
	ifb.table = ifh.table = attack_lib_sym("rw_table");
	p = ifh.table ? rare_pool_create(4096) : NULL;
	r = p ? attack_region_of(ifb.table, p) : NULL;
	if (!r || r->len > sizeof(if_elsewhere))
		return IF_BROKEN;
	ifq.start = r->start;
	ifq.slot = (uint64_t)(r - ifh.table->regions);
	rare_pool_destroy(p);
	signal(SIGABRT, elsewhere_abort);
	if_race(start_victim, if_attacker(start_attacker), NULL);
	if (!elsewhere_touched())
		return IF_HELD;
	if (getenv("RAREWRITE_TEST_VERBOSE"))
		fprintf(stderr, "27t: %s\n", ifq.how);
	return IF_LANDED;
}

ATTACK("27t", inflight_pool_start,
       "rewrite the start of the mapping `rare_pool_create` made, in flight "
       "on its stack, to plain memory of the program's outside every "
       "region: the pool is recorded there and its head written there")
{
	if_trials(start_trial, NULL,
		  "a new pool was recorded on, or wrote to, memory outside "
		  "every region",
		  "every new pool recorded on its own mapping");
}
