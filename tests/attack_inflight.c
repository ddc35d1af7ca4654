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
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "attack.h"

#define IF_STACK (256u << 10)
#define IF_SCAN (16u << 10) /* the top of the victim's stack it scans */
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

static void if_stack(void)
{
	ifl.stack = mmap(NULL, IF_STACK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ifl.stack == MAP_FAILED)
		attack_report(ATTACK_ERROR,
			      "mmap of the victim's stack failed");
	ifl.lo = (volatile uint64_t *)(ifl.stack + IF_STACK - IF_SCAN);
	ifl.hi = (volatile uint64_t *)(ifl.stack + IF_STACK);
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
static void *alloc_attacker(void *arg)
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
	double end = if_now() + IF_BUDGET_S;
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
	 * Below its stack pointer: the library's frames. */
	iff.frame = if_stack_pointer();
	for (int i = 0; i < 20000; i++) {
		struct if_handler *o = rare_alloc(pool, sizeof(*o));

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
static void *free_attacker(void *arg)
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
	double end = if_now() + IF_BUDGET_S;
	unsigned trials = 0;

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

static bool alias_like(volatile uint64_t *p)
{
	uint64_t base = p[0], len = p[1], at = p[2];

	return base && !(base & 4095) && len == 4096 && at - base < 4096 &&
	       ((at - base) & 4095) == ((uintptr_t)&if_pol & 4095);
}

static void *alias_attacker(void *arg)
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
	double end = if_now() + IF_BUDGET_S;
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
