// SPDX-License-Identifier: MIT
/*
 * attack_scribble.c - scenario 15, the scribbler: for every public call on
 * every backend, an attacker thread races the call and rewrites every word
 * equal to a value the call is using, wherever a store reaches it: the
 * calling thread's stack below the caller's own frame (range from
 * pthread_getattr_np(), clipped to the 64 KiB under the caller's stack
 * pointer, deeper than any frame of the library) and every object of the
 * library's symbol table (tests/inventory.txt lists them), writable ones
 * with plain stores, read-only ones with a store that may fault (they may
 * be flipped writable for a moment, mprotect's control page).
 *
 * The values: the region record the call is on (rewritten to another
 * region's record), the destination, its page and region start (to the
 * other region's), the source (to a buffer of the attacker's), the ops
 * table of the backend in force (to another backend's), the region start of
 * a pool being destroyed (to the program's section), a shadow alias's base
 * (to 0), counts of one (to 0x10001: library objects only, but in 15f on
 * the stack too, where a window's count used to wait for pwrite()) and
 * every held mutex or lock word (reglock.h) of the library (released:
 * stored 0).
 *
 * The caller's own frame is not scanned: what the program keeps in its
 * locals and passes as arguments is the program's (a store there moves the
 * write the program asked for); the library's frames, spills and records
 * are what it must not trust. The victim keeps its arguments in protected
 * memory (S below) and loads them right before each call.
 *
 * It holds when, after every call, no protected byte changed but by the
 * call's intended write (the section and another pool are compared with
 * snapshots), the region table's records keep their backends, the backend
 * in force is the same, no writable alias of a region is left mapped and
 * the section is still read-only; an abort by the library counts as held.
 * Each case first runs a control phase with the attacker scanning but not
 * storing: it must hold and must have seen the values (else the case is an
 * error: a scribbler that finds nothing proves nothing). The attack runs in
 * rounds, each a child process: an abort ends its round, held, and the next
 * round goes on with the calls left, so a check that catches one rewrite
 * does not hide what the other calls would have let through.
 *
 * SCRIBBLE_CALLS (default 10000) calls per case; each case prints its
 * counts in its note (ATTACK_NOTES=1 make attack-matrix).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attack.h"
#include "../src/table.h"

#define SCAN_DEPTH (64u << 10)
#define MAX_PAIRS 32
#define MAX_OBJS 256
/* Seconds of a run (control, attack) and without a call finished. The
 * attack child's alarm() is 60 s: 8 + 10 + 20 + 10 stays below it. */
#define CONTROL_BUDGET_S 8
#define STORE_BUDGET_S 20
#define STALL_S 10

/* The victim's arguments, in protected memory: no store moves them. */
static struct {
	uint64_t word[4] __attribute__((aligned(64)));
	uint64_t counter;
	uint64_t mapped;
	uint64_t windowed;
	uint64_t canary;
	struct rare_pool *pool;	 /* the victim's pool (alloc) */
	struct rare_pool *other; /* another region, the attacker's aim */
} S __wr_rare __attribute__((aligned(64))) = {.canary = 0x5ca1ab1e};

static const uint64_t konst[2] = {0x1111111111111111ULL, 0x2222222222222222ULL};
static unsigned char evil[4096] __attribute__((aligned(4096)));

struct obj {
	uint64_t *lo, *hi;
	bool ro, lock;
	uint32_t *word; /* a lock word of reglock.h, released by storing 0 */
};

static struct scribbler {
	uint64_t from[MAX_PAIRS], to[MAX_PAIRS];
	unsigned npairs;
	uint64_t count_from, count_to; /* library objects only, unless: */
	bool count_stack;	       /* the stack's too (15f) */
	const char *lock_only; /* release only this lock object (NULL: all) */
	struct obj obj[MAX_OBJS];
	unsigned nobj;
	uintptr_t stack_lo;
	uintptr_t sp;	/* the caller's stack pointer, 0: not in a call */
	int in_stack;	/* the attacker is in a pass over the stack */
	bool die_lands; /* 15g: any abort, crash or deadlock is a landing */
	volatile int store, stop;
	volatile unsigned long seen, stores;
	unsigned long progress; /* calls the victim finished */
	struct rounds *rounds;	/* the attack's rounds (NULL: one process) */
} sc;

/* ---- what the attacker can reach ---- */

static bool writable_now(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool w = false;

	while (f && fgets(line, sizeof(line), f)) {
		const char *p = line;
		uintptr_t lo = rw_parse_hex(&p), hi;

		p++;
		hi = rw_parse_hex(&p);
		if ((uintptr_t)addr >= lo && (uintptr_t)addr < hi) {
			w = p[2] == 'w';
			break;
		}
	}
	if (f)
		fclose(f);
	return w;
}

static void add_object(const char *name, void *addr, size_t size, bool tls,
		       bool ours, void *arg)
{
	(void)tls;
	(void)arg;
	if (ours && size == 4 && strstr(name, "lock") && sc.nobj < MAX_OBJS &&
	    (!sc.lock_only || !strcmp(name, sc.lock_only))) {
		sc.obj[sc.nobj++] = (struct obj){.word = addr};
		return;
	}
	if (!ours || size < 8 || sc.nobj == MAX_OBJS ||
	    !strcmp(name, "rw_table")) /* the vault: 60 KiB of faults */
		return;
	sc.obj[sc.nobj++] = (struct obj){
		.lo = (uint64_t *)(((uintptr_t)addr + 7) & ~(uintptr_t)7),
		.hi = (uint64_t *)(((uintptr_t)addr + size) & ~(uintptr_t)7),
		.ro = !writable_now(addr),
		.lock = strstr(name, "lock") && size % 40 == 0 &&
			(!sc.lock_only || !strcmp(name, sc.lock_only)),
	};
}

static void pair(uint64_t from, uint64_t to)
{
	if (from && sc.npairs < MAX_PAIRS) {
		sc.from[sc.npairs] = from;
		sc.to[sc.npairs++] = to;
	}
}

/* Rewrite @w if it holds a value in use: 0 if not, 1 if it did, -1 if the
 * store faulted (a read-only object). Uninstrumented like its caller: it
 * reads other threads' stacks, redzones included. */
__attribute__((no_sanitize_address)) static inline int
scribble(volatile uint64_t *w, bool lib, bool ro)
{
	uint64_t v = *w, to;
	unsigned i;

	for (i = 0; i < sc.npairs && v != sc.from[i]; i++)
		;
	if (i < sc.npairs)
		to = sc.to[i];
	else if ((lib || sc.count_stack) && sc.count_from && v == sc.count_from)
		to = sc.count_to;
	else
		return 0;
	sc.seen++;
	if (!sc.store)
		return 1;
	if (ro && !attack_try_store64((void *)w, to))
		return -1;
	if (!ro)
		*w = to;
	sc.stores++;
	return 1;
}

/* Another thread's stack, redzones and all: not for AddressSanitizer. */
__attribute__((no_sanitize_address)) static void *attacker(void *p)
{
	(void)p;
	while (!__atomic_load_n(&sc.sp, __ATOMIC_RELAXED) && !sc.stop)
		;
	while (!sc.stop) {
		uintptr_t sp, lo;

		/* Announce the pass, then read sp: with unmark()'s store of 0
		 * then load of in_stack (both sequentially consistent), either
		 * this pass sees 0 or unmark() waits for it to end. */
		__atomic_store_n(&sc.in_stack, 1, __ATOMIC_SEQ_CST);
		sp = __atomic_load_n(&sc.sp, __ATOMIC_SEQ_CST);
		lo = sp - SCAN_DEPTH;
		if (lo < sc.stack_lo)
			lo = sc.stack_lo;
		for (volatile uint64_t *w = (uint64_t *)(lo & ~(uintptr_t)7);
		     sp && (uintptr_t)w < sp; w++)
			scribble(w, false, false);
		__atomic_store_n(&sc.in_stack, 0, __ATOMIC_SEQ_CST);
		for (unsigned o = 0; o < sc.nobj; o++) {
			struct obj *ob = &sc.obj[o];

			if (ob->word) { /* a held lock word: release it */
				if (__atomic_load_n(ob->word,
						    __ATOMIC_RELAXED)) {
					sc.seen++;
					if (sc.store) {
						__atomic_store_n(
							ob->word, 0,
							__ATOMIC_RELAXED);
						sc.stores++;
					}
				}
				continue;
			}
			for (volatile uint64_t *w = ob->lo; w < ob->hi; w++) {
				if (ob->lock) { /* a held mutex: release it */
					uint32_t l = (uint32_t)*w;

					if (((w - ob->lo) % 5) || !l || l > 2)
						continue;
					sc.seen++;
					if (sc.store) { /* __lock and __owner */
						*w = *w & ~0xffffffffULL;
						w[1] = w[1] & ~0xffffffffULL;
						sc.stores++;
					}
					continue;
				}
				if (scribble(w, true, ob->ro) < 0)
					break; /* read-only now: next pass */
			}
		}
	}
	return NULL;
}

/* ---- what must not change ---- */

struct snap {
	const void *at;
	size_t len;
	unsigned char *copy;
};

static struct {
	struct snap sect, other;
	const struct rw_table *table;
	const struct rw_backend *backend_of[RW_MAX_REGIONS];
	char backend[32];
	unsigned long calls, landed;
	char first[160];
	bool others_write; /* another thread writes too (its alias) */
	char diff[32];	   /* where a snapshot differed */
} chk;

static ssize_t chk_short;

/* Copy [at, at + len) without faulting: false if any of it is unmapped. */
static bool peek(const void *at, void *buf, size_t len)
{
	struct iovec l = {buf, len}, r = {(void *)at, len};

	/* A transient EFAULT was seen on mprotect's regions (a piece being
	 * flipped?): three tries before "unmapped". */
	for (int i = 0; i < 3; i++) {
		ssize_t n = process_vm_readv(getpid(), &l, 1, &r, 1, 0);

		if (n == (ssize_t)len)
			return true;
		chk_short = n;
	}
	return false;
}

static void snap_take(struct snap *s, const void *at, size_t len)
{
	s->at = at;
	s->len = len;
	s->copy = realloc(s->copy, len);
	if (!s->copy)
		attack_report(ATTACK_ERROR, "cannot snapshot %p+%#zx", at, len);
	/* process_vm_readv() was seen to fail with EFAULT on mprotect's
	 * section before any attack (cause not isolated): before the attack,
	 * a plain copy (a fault here is a harness error, not a verdict). */
	if (!peek(at, s->copy, len))
		memcpy(s->copy, at, len);
}

/* Bytes of @s other than [skip, skip + skip_len) that differ (or unmapped). */
static bool snap_changed(struct snap *s, const void *skip, size_t skip_len)
{
	static unsigned char buf[1 << 20];
	size_t a = (uintptr_t)skip - (uintptr_t)s->at;

	if (s->len > sizeof(buf))
		return true;
	if (!peek(s->at, buf, s->len)) {
		/* The EFAULT seen on mprotect's section: mapped (mincore()
		 * succeeds on every page) means readable here, protected
		 * memory is never unreadable; unmapped is a change. */
		static unsigned char vec[(1 << 20) / 4096];

		if (mincore((void *)s->at, s->len, vec)) {
			snprintf(chk.diff, sizeof(chk.diff), " (unmapped)");
			return true;
		}
		memcpy(buf, s->at, s->len);
	}
	if (skip && a < s->len)
		memcpy(buf + a, s->copy + a, skip_len);
	for (size_t i = 0; i < s->len; i++)
		if (buf[i] != s->copy[i]) {
			snprintf(chk.diff, sizeof(chk.diff), " at +%#zx", i);
			return true;
		}
	return false;
}

static void landed(const char *what)
{
	if (!chk.landed++) {
		snprintf(chk.first, sizeof(chk.first), "%s%s (call %lu)", what,
			 chk.diff, chk.calls);
		if (sc.store) /* kept if the corruption crashes us later */
			attack_landed(chk.first);
	}
}

/* After a call that wrote @len bytes at @dst (NULL: none). */
static void verify(const void *dst, size_t len, bool full)
{
	chk.calls++;
	if (snap_changed(&chk.sect, dst, len)) {
		landed("a section byte changed");
		chk.diff[0] = 0;
		snap_take(&chk.sect, chk.sect.at, chk.sect.len);
	}
	if (snap_changed(&chk.other, NULL, 0)) {
		landed("the other pool changed");
		chk.diff[0] = 0;
		snap_take(&chk.other, chk.other.at, chk.other.len);
	}
	if (!full)
		return;
	if (strcmp(rare_write_backend(), chk.backend))
		landed("the backend in force changed");
	for (unsigned i = 0; i < RW_MAX_REGIONS; i++)
		if (chk.backend_of[i] &&
		    chk.table->regions[i].kind != RW_REGION_FREE &&
		    chk.table->regions[i].backend != chk.backend_of[i]) {
			landed("a region record changed backend");
			chk.backend_of[i] = chk.table->regions[i].backend;
		}
	if (!chk.others_write && attack_alias_mapped())
		landed("a writable alias stayed mapped");
	if (attack_try_store64(&S.canary, S.canary))
		landed("the section stayed writable");
}

static void check_setup(void)
{
	const struct rw_region *r;

	chk.table = attack_lib_sym("rw_table");
	if (!chk.table)
		attack_report(ATTACK_ERROR, "no symbol rw_table");
	snprintf(chk.backend, sizeof(chk.backend), "%s", rare_write_backend());
	r = attack_region_of(chk.table, &S);
	if (!r)
		attack_report(ATTACK_ERROR, "no region of the section");
	snap_take(&chk.sect, (void *)r->start, r->len);
	r = attack_region_of(chk.table, S.other);
	if (!r)
		attack_report(ATTACK_ERROR, "no region of the other pool");
	snap_take(&chk.other, (void *)r->start, r->len);
	for (unsigned i = 0; i < chk.table->nr_regions; i++)
		if (chk.table->regions[i].kind != RW_REGION_FREE)
			chk.backend_of[i] = chk.table->regions[i].backend;
}

/* ---- the harness ---- */

static const char *other_backend(void)
{
	return strcmp(rare_write_backend(), "mprotect") ? "rw_backend_mprotect"
							: "rw_backend_pwrite";
}

static char *backend_sym(void)
{
	static char name[48];

	snprintf(name, sizeof(name), "rw_backend_%s", rare_write_backend());
	return name;
}

/* The values every call uses: the section's region and the other pool's. */
static void common_pairs(const void *dst)
{
	const struct rw_region *a = attack_region_of(chk.table, dst),
			       *b = attack_region_of(chk.table, S.other);
	uintptr_t off = (uintptr_t)dst - a->start;

	pair((uintptr_t)a, (uintptr_t)b);
	pair((uintptr_t)dst, b->start + off % b->len);
	pair((uintptr_t)dst & ~(uintptr_t)4095, b->start);
	pair(a->start, b->start);
	pair((uintptr_t)attack_lib_sym(backend_sym()),
	     (uintptr_t)attack_lib_sym(other_backend()));
}

static unsigned long nr_calls(void)
{
	const char *e = getenv("SCRIBBLE_CALLS");

	return e ? strtoul(e, NULL, 0) : 10000;
}

/*
 * The attack's rounds (attack_rounds()), shared with each round's process:
 * the counts of the rounds before, and the running round's, published
 * after each call, so that what a round did before its abort is counted.
 */
struct rounds {
	struct timespec deadline; /* the attack's budget, over all rounds */
	unsigned long calls, stores, aborts, crashes;
	unsigned long round_calls, round_stores;
};

struct victim {
	void (*call)(unsigned long i);
	uintptr_t lo;
	unsigned long n;
};

/*
 * guarded(fn, arg, &sc.sp) runs fn(arg), the library call, with the stack
 * below its own frame open to the attacker: it saves every callee-saved
 * register, publishes its stack pointer in sc.sp and restores the
 * registers from its own frame (above sc.sp, never rewritten). Without it
 * the caller's callee-saved registers come back from the library's frames,
 * where the attacker rewrote them (a destination the test kept in %rbp
 * across the call came back as the other pool's, and the test's own check
 * then reported a section byte changed): what any C code has, not a write
 * of the library's. fn only loads the arguments from S and makes the call.
 */
void scribble_guarded(void (*fn)(unsigned long), unsigned long arg,
		      uintptr_t *sp);
__asm__(".text\n"
	".type scribble_guarded, @function\n"
	"scribble_guarded:\n"
	"	endbr64\n"
	"	push %rbp\n"
	"	push %rbx\n"
	"	push %r12\n"
	"	push %r13\n"
	"	push %r14\n"
	"	push %r15\n"
	"	sub $8, %rsp\n"
	"	lea -8(%rsp), %rax\n"
	"	xchg %rax, (%rdx)\n" /* sc.sp, sequentially consistent */
	"	mov %rdi, %r11\n"
	"	mov %rsi, %rdi\n"
	"	call *%r11\n"
	"	add $8, %rsp\n"
	"	pop %r15\n"
	"	pop %r14\n"
	"	pop %r13\n"
	"	pop %r12\n"
	"	pop %rbx\n"
	"	pop %rbp\n"
	"	ret\n"
	".size scribble_guarded, .-scribble_guarded\n");

/*
 * After the library call, before the test's own checks: those run in the
 * same stack the attacker rewrites (verify()'s and snap_changed()'s
 * arguments, attack_region_of(chk.table, )'s loop), and a rewritten skip range
 * or record pointer is a harness error, not the library's. The stack pass that
 * may still be under way ends first; the library's objects stay attacked.
 */
static void unmark(void);

static void guarded(void (*fn)(unsigned long), unsigned long arg)
{
	scribble_guarded(fn, arg, &sc.sp);
	unmark();
}

static void unmark(void)
{
	__atomic_store_n(&sc.sp, 0, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&sc.in_stack, __ATOMIC_SEQ_CST))
		sched_yield();
}

/* Wall-clock budget of a run: under a loaded machine the case ends after
 * fewer calls (counted in the verdict) instead of meeting the attack
 * child's alarm(). */
static struct timespec budget_end;

static bool budget_spent_at(const struct timespec *end)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec > end->tv_sec ||
	       (ts.tv_sec == end->tv_sec && ts.tv_nsec >= end->tv_nsec);
}

static bool budget_spent(void)
{
	return budget_spent_at(&budget_end);
}

__attribute__((noinline)) static void victim_loop(struct victim *v)
{
	/* Past n while the scribbler has seen no value yet (a starved
	 * attacker thread on a loaded machine), within the budget. */
	for (unsigned long i = 0; (i < v->n || !sc.seen) && !budget_spent();
	     i++) {
		v->call(i);
		__atomic_store_n(&sc.progress, i + 1, __ATOMIC_RELAXED);
		if (sc.rounds) {
			__atomic_store_n(&sc.rounds->round_calls, chk.calls,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&sc.rounds->round_stores, sc.stores,
					 __ATOMIC_RELAXED);
		}
	}
	unmark();
}

static void *victim_thread(void *p)
{
	struct victim *v = p;
	pthread_attr_t at;
	size_t size;
	void *lo;

	pthread_getattr_np(pthread_self(), &at);
	pthread_attr_getstack(&at, &lo, &size);
	pthread_attr_destroy(&at);
	sc.stack_lo = (uintptr_t)lo;
	attack_lib_each_object(add_object, NULL); /* TLS: the victim's */
	victim_loop(v);
	return NULL;
}

static void run(void (*call)(unsigned long), unsigned long n, bool store)
{
	struct victim v = {call, 0, n};
	unsigned long last = 0;
	unsigned stalled = 0;
	pthread_attr_t at;
	pthread_t a, t;

	sc.store = store;
	sc.stop = 0;
	sc.sp = 0;
	sc.nobj = 0;
	sc.progress = 0;
	clock_gettime(CLOCK_MONOTONIC, &budget_end);
	/* The control's budget stays whole: it must see the calls. */
	budget_end.tv_sec += store ? (time_t)attack_budget(STORE_BUDGET_S)
				   : CONTROL_BUDGET_S;
	if (store && sc.rounds)
		budget_end = sc.rounds->deadline;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256u << 10);
	if (pthread_create(&a, NULL, attacker, NULL) ||
	    pthread_create(&t, &at, victim_thread, &v))
		attack_report(ATTACK_ERROR, "pthread_create failed");
	/* A forged lock word may serialise for good (a deadlock): denial of
	 * service, which the threat model allows; the verdict says so. A
	 * deadlock is no call finishing for STALL_S seconds, not a slow run:
	 * on a loaded machine a run takes longer but keeps finishing calls. */
	for (;;) {
		struct timespec ts;
		unsigned long now;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		if (!pthread_timedjoin_np(t, NULL, &ts))
			break;
		now = __atomic_load_n(&sc.progress, __ATOMIC_RELAXED);
		stalled = now == last ? stalled + 1 : 0;
		last = now;
		if (stalled < STALL_S)
			continue;
		if (chk.landed)
			attack_report(ATTACK_OPEN,
				      "%lu of %lu calls; first: %s", chk.landed,
				      chk.calls, chk.first);
		if (store && sc.die_lands)
			attack_report(ATTACK_OPEN,
				      "deadlock after %lu calls, %lu rewrites",
				      chk.calls, sc.stores);
		attack_report(store ? ATTACK_BLOCKED : ATTACK_ERROR,
			      "deadlock after %lu calls (denial of service), "
			      "%lu rewrites, nothing landed",
			      chk.calls, sc.stores);
	}
	sc.stop = 1;
	pthread_join(a, NULL);
	pthread_attr_destroy(&at);
}

/*
 * The attack, @n calls in rounds: each round a child process that runs the
 * calls left, until they are done or the budget is spent. A round that the
 * library aborts (SIGABRT: one of its checks caught a rewrite) or that the
 * rewrites crash counts its calls as held and the next one goes on. A
 * round's own verdict (a landing, a deadlock) is the case's: it is in the
 * shared report already, and this process ends with it. Returns the
 * counts of all rounds in chk.calls and sc.stores.
 */
static void attack_rounds(void (*call)(unsigned long), unsigned long n)
{
	struct rounds *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (r == MAP_FAILED)
		attack_report(ATTACK_ERROR, "mmap: %s", strerror(errno));
	memset(r, 0, sizeof(*r));
	clock_gettime(CLOCK_MONOTONIC, &r->deadline);
	r->deadline.tv_sec += (time_t)attack_budget(STORE_BUDGET_S);
	sc.rounds = r;
	do {
		int status;
		pid_t pid;

		r->round_calls = r->round_stores = 0;
		pid = fork();
		if (pid < 0)
			attack_report(ATTACK_ERROR, "fork: %s",
				      strerror(errno));
		if (!pid) {
			run(call, n - r->calls, true);
			if (chk.landed)
				attack_report(ATTACK_OPEN,
					      "%lu of %lu calls of a round; "
					      "first: %s; %lu rewrites",
					      chk.landed, chk.calls, chk.first,
					      sc.stores);
			r->round_calls = chk.calls;
			r->round_stores = sc.stores;
			_exit(0);
		}
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (attack_reported())
			_exit(0);
		r->calls += r->round_calls;
		r->stores += r->round_stores;
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)
			r->aborts++;
		else if (WIFSIGNALED(status))
			r->crashes++;
		else if (!WIFEXITED(status) || WEXITSTATUS(status))
			attack_report(ATTACK_ERROR,
				      "a round ended with status %#x", status);
		else
			break; /* its calls done, or the budget spent */
	} while (r->calls < n && !budget_spent_at(&r->deadline));
	chk.calls = r->calls;
	sc.stores = r->stores;
}

/*
 * With ATTACK_NOTES: how far the attack got when the library aborted it.
 * An abort holds, but a run cut short after a few calls is little
 * evidence (15d's runs ended so for long). Async-signal-safe: write(2)
 * of digits formatted here.
 */
static void abort_note(int sig)
{
	static const char head[] = "scribbler: the library aborted the "
				   "attack after ",
			  tail[] = " calls\n";
	char buf[sizeof(head) + sizeof(tail) + 24], digits[24];
	unsigned long v = chk.calls;
	size_t n = sizeof(head) - 1;
	int k = 0;

	memcpy(buf, head, n);
	do
		digits[k++] = (char)('0' + v % 10);
	while ((v /= 10) && k < (int)sizeof(digits));
	while (k)
		buf[n++] = digits[--k];
	memcpy(buf + n, tail, sizeof(tail) - 1);
	n += sizeof(tail) - 1;
	if (write(2, buf, n) < 0)
		n = 0;
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Control phase, then the attack; the verdict with its counts. */
static void scribble_case(const char *what, void (*call)(unsigned long))
{
	unsigned long n = nr_calls(), seen;

	if (!chk.sect.copy)
		check_setup();
	run(call, n / 10 ? n / 10 : 1, false);
	seen = sc.seen;
	if (chk.landed)
		attack_report(ATTACK_ERROR, "control run without stores: %s",
			      chk.first);
	chk.calls = 0;
	if (getenv("ATTACK_NOTES"))
		signal(SIGABRT, abort_note);
	attack_begin();
	/* 15g: the child's death (the library's abort or a crash) is the
	 * verdict the harness reads unless a later report replaces it. */
	if (sc.die_lands)
		attack_landed("the victim died under the attack (an abort or a "
			      "crash: a call used what the swapped ops pointer "
			      "named; run with RAREWRITE_TEST_VERBOSE=1)");
	if (sc.die_lands)
		run(call, n, true);
	else
		attack_rounds(call, n);
	/* Values seen in either run: a scribbler that found none of them
	 * proves nothing (an error, not a pass). */
	if (!sc.seen && !chk.landed)
		attack_report(ATTACK_ERROR,
			      "the scribbler saw none of the values");
	if (chk.landed)
		attack_report(ATTACK_OPEN,
			      "%s: %lu of %lu calls; first: %s; %lu rewrites",
			      what, chk.landed, chk.calls, chk.first,
			      sc.stores);
	if (sc.rounds && (sc.rounds->aborts || sc.rounds->crashes))
		attack_report(ATTACK_BLOCKED,
			      "%s: %lu calls held, %lu rewrites; rounds "
			      "ended by a library abort: %lu, by a crash: %lu "
			      "(control: %lu values seen, held)",
			      what, chk.calls, sc.stores, sc.rounds->aborts,
			      sc.rounds->crashes, seen);
	attack_report(ATTACK_BLOCKED,
		      "%s: %lu calls held, %lu rewrites (control: %lu values "
		      "seen, held)",
		      what, chk.calls, sc.stores, seen);
}

static void pools(void)
{
	struct rare_pool *o = rare_pool_create(4 * 4096);
	struct rare_pool *p = rare_pool_create(64 * 4096);

	chk.table = attack_lib_sym("rw_table");
	if (!o || !p || !chk.table)
		attack_report(ATTACK_ERROR, "pool setup failed");
	rare_write(S.other, o);
	rare_write(S.pool, p);
}

/* ---- the calls ---- */

static void memcpy_thunk(unsigned long i)
{
	rare_write_memcpy(&S.word[1], &konst[i & 1], 8);
}

static void call_memcpy(unsigned long i)
{
	guarded(memcpy_thunk, i);
	if (S.word[1] != konst[i & 1])
		landed("the write did not write what was asked");
	verify(&S.word[1], 8, i % 64 == 0);
}

ATTACK("15a", scribble_write,
       "scribbler: `rare_write`/`rare_write_memcpy` (segment, region, "
       "source, ops and lock words rewritten on the stack and in the "
       "library's objects)")
{
	pools();
	common_pairs(&S.word[1]);
	pair((uintptr_t)&konst[0], (uintptr_t)evil);
	pair((uintptr_t)&konst[1], (uintptr_t)evil);
	memset(evil, 0x41, sizeof(evil));
	scribble_case("rare_write_memcpy", call_memcpy);
}

static void add_thunk(unsigned long i)
{
	(void)i;
	rare_write_add(S.counter, 1);
}

static void call_add(unsigned long i)
{
	uint64_t before = S.counter;

	guarded(add_thunk, i);
	if (S.counter != before + 1)
		landed("the add did not add one");
	verify(&S.counter, 8, i % 64 == 0);
}

ATTACK("15b", scribble_add, "scribbler: `rare_write_add`")
{
	pools();
	common_pairs(&S.counter);
	scribble_case("rare_write_add", call_add);
}

/* Two threads allocate from one pool; a slot handed out twice is seen by
 * the owner array (compare-and-swap, plain memory of the test). */
static uint32_t owner[64 * 256];
static volatile int alloc_stop;

static inline __attribute__((always_inline)) void alloc_one(uint32_t me)
{
	char *o = rare_alloc(S.pool, 16);
	const struct rw_region *r = attack_region_of(chk.table, S.pool);
	size_t slot;
	uint32_t zero = 0;

	if (!o)
		return;
	slot = ((uintptr_t)o - r->start) / 16 % (64 * 256);
	if (!__atomic_compare_exchange_n(&owner[slot], &zero, me, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		landed("rare_alloc handed out a live object twice");
	__atomic_store_n(&owner[slot], 0, __ATOMIC_SEQ_CST);
	rare_free(S.pool, o);
}

static void *second_allocator(void *p)
{
	(void)p;
	while (!alloc_stop)
		alloc_one(2);
	return NULL;
}

static void alloc_thunk(unsigned long i)
{
	(void)i;
	alloc_one(1);
}

static void call_alloc(unsigned long i)
{
	guarded(alloc_thunk, i);
	verify(NULL, 0, i % 64 == 0);
}

ATTACK("15c", scribble_alloc,
       "scribbler: `rare_alloc`/`rare_free` from two threads (the pool "
       "lock released by a store)")
{
	pthread_t t;

	pools();
	/* The pool's locks alone: with the other values rewritten too, the
	 * segment checks abort first, and other locks deadlock (15a-15e).
	 * Since 26b the pool's lock is a pipe (klock.c): no word of it to
	 * release, which 26b proves at every access; nothing to race here. */
	if (!attack_lib_sym("pool_locks"))
		attack_report(ATTACK_BLOCKED,
			      "the pool lock has no word to release (a pipe, "
			      "klock.c; attack 26b)");
	sc.lock_only = "pool_locks";
	chk.others_write = true;
	pthread_create(&t, NULL, second_allocator, NULL);
	scribble_case("rare_alloc", call_alloc);
	alloc_stop = 1;
	pthread_join(t, NULL);
}

static struct rare_pool *made; /* the test's memory, not scanned */

static void create_thunk(unsigned long i)
{
	(void)i;
	made = rare_pool_create(4096);
}

static void destroy_thunk(unsigned long i)
{
	(void)i;
	rare_pool_destroy(made);
}

static void call_pool(unsigned long i)
{
	const struct rw_region *r;

	guarded(create_thunk, i);
	if (!made) { /* refused (denial of service): nothing to check */
		static bool said;

		if (!said && getenv("ATTACK_NOTES")) {
			said = true;
			fprintf(stderr,
				"scribbler: rare_pool_create refused (%s), "
				"first at call %lu\n",
				strerror(errno), i);
		}
		return;
	}
	r = attack_region_of(chk.table, made);
	if (!r || strcmp(r->backend->name, chk.backend))
		landed("a pool was recorded on another backend");
	guarded(destroy_thunk, i);
	verify(NULL, 0, i % 64 == 0);
}

ATTACK("15d", scribble_pool,
       "scribbler: `rare_pool_create`/`rare_pool_destroy` (the record's "
       "backend, start and ops rewritten on the stack)")
{
	struct rare_pool *p;
	const struct rw_region *r;

	pools();
	check_setup();
	p = rare_pool_create(4096); /* the slot and start the loop reuses */
	r = p ? attack_region_of(chk.table, p) : NULL;
	if (!r)
		attack_report(ATTACK_ERROR, "pool setup failed");
	pair((uintptr_t)r, (uintptr_t)attack_region_of(chk.table, &S));
	pair(r->start, attack_region_of(chk.table, &S)->start);
	pair((uintptr_t)attack_lib_sym(backend_sym()),
	     (uintptr_t)attack_lib_sym(other_backend()));
	rare_pool_destroy(p);
	scribble_case("rare_pool_create/destroy", call_pool);
}

static void map_thunk(unsigned long i)
{
	struct rare_write_mapping m = rare_write_map(&S.mapped, 8);

	*(volatile uint64_t *)m.addr = konst[i & 1];
	rare_write_unmap(m);
}

static void call_map(unsigned long i)
{
	guarded(map_thunk, i);
	if (S.mapped != konst[i & 1])
		landed("the map did not write what was asked");
	verify(&S.mapped, 8, i % 64 == 0);
}

ATTACK("15e", scribble_map,
       "scribbler: `rare_write_map`/`rare_write_unmap` (view, alias base "
       "and record rewritten)")
{
	struct rare_write_mapping m;

	pools();
	common_pairs(&S.mapped);
	m = rare_write_map(&S.mapped, 8); /* where the view lands */
	if (m.addr != (void *)&S.mapped) {
		pair((uintptr_t)m.addr, (uintptr_t)evil);
		pair((uintptr_t)m.addr & ~(uintptr_t)4095, 0);
	}
	rare_write_unmap(m);
	scribble_case("rare_write_map/unmap", call_map);
}

/* The other of konst's values than @v: what a window writes next. */
static uint64_t next_konst(uint64_t v)
{
	return v == konst[0] ? konst[1] : konst[0];
}

/* The value to write is decided inside the window from S, not from @i:
 * kept in a callee-saved register across rare_write_begin(), i & 1 came
 * back from the library's frame as 0x10001 once the scribbler rewrites
 * counts of one on the stack (15f), and konst[0x10001] is not konst. */
static void window_thunk(unsigned long i)
{
	(void)i;
	rare_write_begin();
	*(volatile uint64_t *)&S.windowed = next_konst(S.windowed);
	rare_write_end();
}

static void call_window(unsigned long i)
{
	uint64_t want = next_konst(S.windowed);

	guarded(window_thunk, i);
	if (S.windowed != want)
		landed("the window did not write what was asked");
	verify(&S.windowed, 8, i % 16 == 0);
}

ATTACK("15f", scribble_window,
       "scribbler: `rare_write_begin`/`rare_write_end` (window counts "
       "raised, the flip lock released)")
{
	if (!(rare_write_caps() & RARE_WRITE_CAP_BEGIN_END))
		attack_report(ATTACK_NA, "no begin/end windows");
	pools();
	common_pairs(&S.windowed);
	sc.count_from = 1;
	sc.count_to = 0x10001;
	/* A window's count of one, and the count of windows open, crossed
	 * the stack on mprotect (a record copied from its vault, a head
	 * buffer for pwrite()): rewritten there too, the copies and what
	 * the check after the pwrite() compared them with alike. */
	sc.count_stack = true;
	scribble_case("rare_write_begin/end", call_window);
}

/*
 * 15g: the scribbler swaps only the address of the backend's ops table
 * (for another backend's in use), and any change of behaviour lands: an
 * abort or crash too, unlike 15a-15f. A backend that names itself by its
 * ops pointer, held in a callee-saved register across a call (which the
 * callee saves on the stack), reads another backend's words or runs its
 * code: mprotect's control memfd became pwrite's empty slot (EBADF in the
 * table's vault store, -O2), the process backend's answer page
 * mprotect's (a NULL read, check-asan). Calls: a write, an add, a map, a
 * window where the backend has them. Not pool create/destroy (15d): the
 * new record's backend word still crosses calls on the stack, and a run
 * ends in the library's "not a live rare_pool" abort under these swaps.
 */
static void ops_write_thunk(unsigned long i)
{
	rare_write_memcpy(&S.word[1], &konst[i & 1], 8);
	rare_write_add(S.counter, 1);
	map_thunk(i);
	if (rare_write_caps() & RARE_WRITE_CAP_BEGIN_END)
		window_thunk(i);
}

static void call_ops(unsigned long i)
{
	uint64_t before = S.counter;

	guarded(ops_write_thunk, i);
	if (S.word[1] != konst[i & 1] || S.counter != before + 1 ||
	    S.mapped != konst[i & 1] ||
	    ((rare_write_caps() & RARE_WRITE_CAP_BEGIN_END) &&
	     S.windowed != konst[i & 1]))
		landed("a call did not write what was asked");
	verify(&S.word[1],
	       (size_t)((char *)(&S.windowed + 1) - (char *)&S.word[1]),
	       i % 16 == 0);
}

ATTACK("15g", scribble_ops,
       "scribbler: only the backend's ops table address, swapped on the "
       "stack and in the library's objects for another backend's in use "
       "(an abort, crash or deadlock counts as landed: the backend read "
       "the other's words or ran its code)")
{
	struct rare_pool_opts o = {.backend = other_backend() + 11};

	pools();
	if (!rare_pool_create_with(4096, &o)) /* the other one in use */
		attack_report(ATTACK_ERROR, "no pool on %s", o.backend);
	check_setup();
	pair((uintptr_t)attack_lib_sym(backend_sym()),
	     (uintptr_t)attack_lib_sym(other_backend()));
	sc.die_lands = true;
	scribble_case("ops pointer only", call_ops);
}
