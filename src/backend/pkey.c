// SPDX-License-Identifier: MIT
/*
 * pkey.c - per-thread write windows with memory protection keys (x86 PKU),
 * the user-space twin of ARM domains and PKS.
 *
 * Protected pages stay mapped PROT_READ | PROT_WRITE and carry a protection
 * key. At rest every thread's PKRU write-disables the keys of this library
 * (reads stay allowed); a window clears the write-disable bit of a key with
 * one WRPKRU on the calling thread only, so no other thread can use it. The
 * page tables never change after init, so the section views are mseal()ed
 * where the kernel has mseal(2).
 *
 * Protection domains: one key for every __wr_rare section, and up to
 * PKEY_POOL_KEYS more for pools, one pool per key while keys remain. A pool
 * created when all pool keys are taken shares the section key (documented
 * degradation: a window on that pool also opens the sections).
 *
 * The PKRU traps (docs/backends.md) and what this file does about them:
 *  - Threads that exist when a key is allocated keep PKRU = init_pkru, which
 *    denies even reads of the key. The keys are allocated in a constructor,
 *    before the program can have started threads, with write disabled, so
 *    every later thread inherits "read yes, write no". For threads that
 *    existed anyway (a library loaded by dlopen), and for signal handlers,
 *    which start with init_pkru, the library's SIGSEGV handler (signal.c)
 *    asks pkey_fault() first, which repairs read access: a protection-key
 *    fault on one of our keys whose saved PKRU denies access gets "read
 *    yes, write no" for that key in the signal frame, and the load is
 *    retried. Write access is never granted there. Every handler the
 *    program installs, for any signal, before or after init, starts with
 *    pkey_signal_enter() (signal.c wraps them), so it reads protected data
 *    without a repair fault.
 *  - A thread created inside an open window would inherit write access:
 *    pthread_create() is interposed so the new thread write-disables every
 *    key before it runs its start routine.
 *  - A signal handler runs with init_pkru (write disabled): an open window
 *    does not leak into it; sigreturn restores the interrupted window.
 *  - siglongjmp() out of a handler keeps the handler's init_pkru: a window
 *    the jump left is closed (fail-safe); rare_write_end() still balances.
 *  - fork(): the child inherits its thread's PKRU and private copy-on-write
 *    pages, so its writes never reach the parent.
 *
 * The gate is inline and ERIM-hardened: every WRPKRU is followed by RDPKRU
 * and a check against what the thread may hold open, recomputed from memory
 * (read-only key state and the thread's own window record). Jumping straight
 * to the open instruction with a chosen value fails the check and aborts
 * with the keys closed; jumping to the close instruction loops until closed.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <cpuid.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <threads.h>
#include <ucontext.h>
#include <unistd.h>

#include "rarewrite.h"
#include "internal.h"
#include "critical.h"
#include "rawsys.h"
#include "region_find.h"
#include "thread_self.h"

/* This backend's ops table (at the end), listed in backends.c. */
extern const struct rw_backend rw_backend_pkey RW_HIDDEN;

#ifndef SYS_mseal
#define SYS_mseal 462 /* Linux 6.10 */
#endif
#ifndef SEGV_PKUERR
#define SEGV_PKUERR 4
#endif
#ifndef PKEY_DISABLE_WRITE
#define PKEY_DISABLE_WRITE 0x2
#endif

#define NR_PKEYS 16
#define PKEY_POOL_KEYS 3
#define XFEATURE_PKRU 9
#define RW_XSTATE_MAGIC1 0x46505853u

/* Access-disable and write-disable bits of key @k in PKRU. */
#define AD(k) (1u << (2 * (k)))
#define WD(k) (2u << (2 * (k)))
#define BITS(k) (3u << (2 * (k)))
/* The write-disable bits of a mask of key bit pairs. */
#define WD_OF(mask) ((mask)&0xaaaaaaaau)

/*
 * Key state: fixed once setup() has run, then read-only (and sealed where
 * the kernel allows), so an arbitrary-write bug cannot add keys to the
 * "ours" mask that the fault handler repairs, or change which key a gate
 * opens. Signal handlers can read it: it sits under key 0.
 */
struct pkey_state {
	uint32_t wd_ours; /* WD_OF(all); first: the gate's asm reads it */
	bool active;	  /* setup() succeeded */
	int section_key;  /* -1: none */
	int pool_keys[PKEY_POOL_KEYS]; /* -1: none */
	int state_key;		       /* the thread records' page; -1: none */
	uint32_t ours;		       /* BITS() of the data keys above */
	uint32_t all;		       /* ours and the state key's bits */
	unsigned pkru_offset;	       /* of PKRU in the XSAVE signal frame */
	bool seal;		       /* mseal(2) works here */
} __attribute__((aligned(4096)));
/* A hidden global, not a static, so that the gate's asm can name it. */
RW_HIDDEN struct pkey_state rw_pkey_state = {
	.section_key = -1,
	.pool_keys = {-1, -1, -1},
	.state_key = -1,
};

/*
 * What each thread legitimately holds open: its begin/end window and its
 * maps, per key, and what the handlers running on it suspended. Not in
 * TLS, where one store would make the next legitimate write leave a key
 * open (attack 11a): a page of its own under the state key, which every
 * thread's PKRU write-disables; the library opens it only for the stores
 * of set_record(). A record is found by the thread's pointer, read from
 * its register (thread_self.h), which no store changes.
 * A single write keeps no record at all: it closes exactly the keys it
 * opened, and only when a key is still open afterwards asks the record
 * whether that is legitimate.
 */
#define MAX_THREADS 256
#define MAX_NEST 6

struct key_holds {
	uint16_t window;	 /* rare_write_begin() */
	uint16_t maps[NR_PKEYS]; /* open rare_write_map()s per key */
};

struct thread_rec {
	uint64_t tid; /* rw_thread_self(); 0: free */
	uint32_t nest;
	struct key_holds cur;
	struct {
		struct key_holds holds;
		uintptr_t frame; /* of the handler that suspended them */
	} saved[MAX_NEST];
};

static struct pkey_threads {
	uint64_t nr; /* records in use */
	struct thread_rec thr[MAX_THREADS];
} __attribute__((aligned(4096))) threads;

static inline __attribute__((always_inline)) uint32_t rdpkru(void)
{
	uint32_t eax, edx;

	__asm__ volatile("rdpkru" : "=a"(eax), "=d"(edx) : "c"(0) : "memory");
	return eax;
}

static __attribute__((noreturn, noinline, cold)) void
gate_violation(const char *call, uint32_t pkru);

/*
 * Every WRPKRU of the library is this one: ERIM's check follows the
 * instruction. If EAX there is not the value the gate computed (a jump
 * straight to the WRPKRU with a chosen EAX), the fallback write-disables
 * every key of ours using nothing but RIP-relative state, before any other
 * instruction could use the access, and the process dies.
 */
static inline __attribute__((always_inline)) void wrpkru(uint32_t v)
{
	__asm__ goto("wrpkru\n\t"
		     "cmp %0, %%eax\n\t"
		     "je %l[ok]\n\t"
		     "xor %%ecx, %%ecx\n\t"
		     "xor %%edx, %%edx\n\t"
		     "rdpkru\n\t"
		     "or rw_pkey_state(%%rip), %%eax\n\t"
		     "wrpkru\n\t"
		     "jmp %l[bad]"
		     :
		     : "S"(v), "a"(v), "c"(0), "d"(0)
		     : "memory", "cc"
		     : ok, bad);
ok:
	return;
bad:
	gate_violation("wrpkru", v);
}

/* Reloaded after every WRPKRU: the "memory" clobber forces the loads. */
static inline __attribute__((always_inline)) uint32_t ours(void)
{
	return *(volatile uint32_t *)&rw_pkey_state.ours;
}

static inline __attribute__((always_inline)) uint32_t all(void)
{
	return *(volatile uint32_t *)&rw_pkey_state.all;
}

/* Does @pkru deny writes to every key of ours (and the state key) except
 * those in @open? */
static inline __attribute__((always_inline)) bool closed_except(uint32_t pkru,
								uint32_t open)
{
	/* A key is shut when its access- or write-disable bit is set. */
	uint32_t shut = all() & ~open & 0x55555555u;
	uint32_t denied = (pkru | (pkru >> 1)) & 0x55555555u;

	return (denied & shut) == shut;
}

static uint64_t this_thread(void)
{
	return rw_thread_self("pkey");
}

static const struct thread_rec *find_record(uint64_t tid)
{
	if (!__atomic_load_n(&threads.nr, __ATOMIC_RELAXED))
		return NULL;
	for (unsigned i = 0; i < MAX_THREADS; i++)
		if (threads.thr[i].tid == tid)
			return &threads.thr[i];
	return NULL;
}

static uint32_t holds_mask(const struct key_holds *h)
{
	uint32_t m = 0;

	if (h->window)
		return ours();
	for (int k = 1; k < NR_PKEYS; k++)
		if (h->maps[k])
			m |= BITS(k);
	return m & ours();
}

/* The keys the calling thread may hold write-enabled right now, from its
 * record (a system call: only where a key is open). */
static uint32_t legit_mask(void)
{
	const struct thread_rec *r;

	if (!__atomic_load_n(&threads.nr, __ATOMIC_RELAXED))
		return 0;
	r = find_record(this_thread());
	return r ? holds_mask(&r->cur) : 0;
}

/*
 * Make PKRU say exactly what the thread's record says: its keys open,
 * every other key of ours and the state key write-disabled, reads allowed.
 * ERIM's loop: the check after each WRPKRU recomputes the record from the
 * thread id, not from registers a jump could have chosen.
 */
static __attribute__((noinline)) void gate_settle(void)
{
	uint32_t legit;

	do {
		legit = legit_mask();
		wrpkru((rdpkru() & ~all()) | WD_OF(all() & ~legit));
	} while (!closed_except(rdpkru(), legit_mask()) ||
		 (rdpkru() & legit_mask()));
}

static __attribute__((noreturn, noinline, cold)) void
gate_violation(const char *call, uint32_t pkru)
{
	do
		wrpkru((rdpkru() & ~all()) | WD_OF(all()));
	while (!closed_except(rdpkru(), 0));
	rw_die(call, NULL,
	       "PKRU %#x is not what the write gate computed; keys closed",
	       pkru);
}

/* Serialises slot allocation (each thread writes only its own slot).
 * A store to it can only deadlock the writers, never open a key. */
static pthread_mutex_t records_lock = PTHREAD_MUTEX_INITIALIZER;

static void state_shut(uint32_t state)
{
	do
		wrpkru(rdpkru() | WD_OF(state));
	while (!closed_except(rdpkru(), all() & ~state));
}

/* Every hold of @r (NULL: none): its own and those its handlers
 * suspended. */
static unsigned long holds_total(const struct thread_rec *r)
{
	unsigned long n = 0;

	if (!r)
		return 0;
	for (unsigned i = 0; i <= r->nest && i <= MAX_NEST; i++) {
		const struct key_holds *h =
			i < r->nest ? &r->saved[i].holds : &r->cur;

		n += h->window;
		for (int k = 0; k < NR_PKEYS; k++)
			n += h->maps[k];
	}
	return n;
}

/* set_record() with no count to keep: signals and fork move holds. */
#define ANY_HOLDS LONG_MIN

/*
 * Replace the calling thread's record by @rec (freed when it holds and
 * suspended nothing). Only here is the state key write-enabled, for these
 * stores; a signal in between runs after (a critical section), so a
 * handler never finds the lock taken by its own thread.
 *
 * @rec waits on the caller's stack for the lock, and another thread can
 * rewrite it there ({window 1} made {window 2}: the outermost end leaves
 * the thread's keys open, as 27d does to mprotect's count). So a begin or
 * a map (@delta 1) and an end or an unmap (-1) must change the thread's
 * holds, counted in the record under the lock, by exactly @delta: a forged
 * record aborts. What is left: a hold moved from one kind to another of
 * the same thread in the same store (SECURITY.md).
 */
static void set_record(const char *call, const struct thread_rec *rec,
		       long delta)
{
	bool empty = !rec->cur.window && !holds_mask(&rec->cur) && !rec->nest;
	uint32_t state = all() & ~ours();
	struct thread_rec *slot;
	unsigned long before;

	if (empty && !find_record(rec->tid))
		return;
	rw_cs_enter();
	pthread_mutex_lock(&records_lock);
	slot = (struct thread_rec *)find_record(rec->tid);
	before = holds_total(slot);
	for (unsigned i = 0; !slot && !empty && i < MAX_THREADS; i++)
		if (!threads.thr[i].tid)
			slot = &threads.thr[i];
	if (!slot && !empty) {
		pthread_mutex_unlock(&records_lock);
		rw_die("rare_write_begin", NULL,
		       "more than %d threads hold windows or maps at once",
		       MAX_THREADS);
	}
	if (slot) {
		wrpkru(rdpkru() & ~state);
		if (empty) {
			memset(slot, 0, sizeof(*slot));
			threads.nr--;
		} else {
			if (!slot->tid)
				threads.nr++;
			*slot = *rec;
		}
		state_shut(state);
	}
	if (delta != ANY_HOLDS &&
	    holds_total(slot && slot->tid ? slot : NULL) !=
		    before + (unsigned long)delta) {
		pthread_mutex_unlock(&records_lock);
		rw_die(call, NULL,
		       "the thread's record changed on its way to its page");
	}
	pthread_mutex_unlock(&records_lock);
	rw_cs_leave();
}

/* The calling thread's record as a value (empty if it has none). */
static struct thread_rec my_record(uint64_t tid)
{
	const struct thread_rec *r = find_record(tid);
	struct thread_rec rec = {.tid = tid};

	if (r)
		rec = *r;
	return rec;
}

static bool cpu_has_pku(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	return (c & (1u << 3)) && (c & (1u << 4)); /* PKU, OSPKE */
}

static int key_alloc(void)
{
	return (int)syscall(SYS_pkey_alloc, 0UL,
			    (unsigned long)PKEY_DISABLE_WRITE);
}

/*
 * Allocate the keys before main(), while the process normally has a single
 * thread: a key allocated later is unreadable for threads that already
 * exist. The calling thread gets "write disabled"; threads created later
 * inherit that. Costs nothing without PKU (no key is taken).
 */
__attribute__((constructor)) static void pkey_early(void)
{
	if (!cpu_has_pku())
		return;
	if (rw_pkey_state.state_key < 0)
		rw_pkey_state.state_key = key_alloc();
	if (rw_pkey_state.state_key < 0)
		return;
	rw_pkey_state.section_key = key_alloc();
	if (rw_pkey_state.section_key < 0)
		return;
	for (int i = 0; i < PKEY_POOL_KEYS; i++)
		rw_pkey_state.pool_keys[i] = key_alloc();
}

static int seal(void *addr, size_t len)
{
	return (int)syscall(SYS_mseal, addr, len, 0UL);
}

/*
 * The PKRU slot of the interrupted context in a signal frame, marked in
 * use so that sigreturn's XRSTOR loads it; NULL if the frame has none.
 */
static uint32_t *frame_pkru(ucontext_t *uc)
{
	unsigned char *fx = (unsigned char *)uc->uc_mcontext.fpregs;
	uint32_t magic1, xstate_size;
	uint64_t xfeatures, *xstate_bv;

	if (!fx || !rw_pkey_state.pkru_offset)
		return NULL;
	/* struct _fpx_sw_bytes sits in the reserved tail of the FXSAVE
	 * area: magic1, extended_size, xfeatures, xstate_size. */
	memcpy(&magic1, fx + 464, 4);
	memcpy(&xfeatures, fx + 472, 8);
	memcpy(&xstate_size, fx + 480, 4);
	if (magic1 != RW_XSTATE_MAGIC1 ||
	    !(xfeatures & (1ULL << XFEATURE_PKRU)) ||
	    xstate_size < rw_pkey_state.pkru_offset + 4)
		return NULL;
	xstate_bv = (uint64_t *)(fx + 512);
	if (!(*xstate_bv & (1ULL << XFEATURE_PKRU))) {
		/* PKRU was in its init state (0) when saved. */
		*(uint32_t *)(fx + rw_pkey_state.pkru_offset) = 0;
		*xstate_bv |= 1ULL << XFEATURE_PKRU;
	}
	return (uint32_t *)(fx + rw_pkey_state.pkru_offset);
}

/* One of the data keys. */
static bool key_is_ours(int k)
{
	return k > 0 && k < NR_PKEYS && (rw_pkey_state.ours & BITS(k));
}

/* A data key or the state key. */
static bool key_is_any(int k)
{
	return k > 0 && k < NR_PKEYS && (rw_pkey_state.all & BITS(k));
}

/* A read of our data by a thread or handler whose PKRU denies it. */
static bool pkey_fault(void *siginfo, void *ctx)
{
	const siginfo_t *si = siginfo;
	uint32_t *pkru;
	int k;

	if (si->si_code != SEGV_PKUERR || !key_is_any((int)si->si_pkey))
		return false;
	pkru = frame_pkru(ctx);
	k = (int)si->si_pkey;
	/* Access disabled: a thread that predates the key, or a signal
	 * handler. Allow reads (never writes), retry. */
	if (pkru && (*pkru & AD(k))) {
		*pkru = (*pkru & ~BITS(k)) | WD(k);
		return true;
	}
	return false;
}

/*
 * Every handler of the program starts here (signal.c): it may read
 * protected data, never write it (the same hardened loop as the gate), and
 * it holds none of the windows and maps of the code it interrupted: they
 * are suspended in the thread's record, under the handler's frame.
 */
static void pkey_signal_enter(void *uc)
{
	struct thread_rec rec;

	if (!rw_pkey_state.active)
		return;
	do
		wrpkru((rdpkru() & ~all()) | WD_OF(all()));
	while (!closed_except(rdpkru(), 0));
	if (!__atomic_load_n(&threads.nr, __ATOMIC_RELAXED))
		return;
	rec = my_record(this_thread());
	if (!find_record(rec.tid))
		return;
	if (rec.nest == MAX_NEST)
		rw_die("signal", NULL, "handlers nested more than %d deep",
		       MAX_NEST);
	rec.saved[rec.nest].holds = rec.cur;
	rec.saved[rec.nest++].frame = (uintptr_t)uc;
	memset(&rec.cur, 0, sizeof(rec.cur));
	set_record("signal", &rec, ANY_HOLDS);
}

/*
 * The handler returns: the suspended windows and maps come back, and the
 * frame's saved PKRU, which any thread could have rewritten while the
 * handler ran (attack 11b), is made what the record says the interrupted
 * code held. Between this store and sigreturn's XRSTOR the frame is still
 * writable memory: that residual race is open (docs/attack-matrix.md, row 11b).
 */
static void pkey_signal_exit(void *uc)
{
	uint32_t *pkru, legit = 0;
	struct thread_rec rec;
	unsigned i;

	if (!rw_pkey_state.active)
		return;
	if (__atomic_load_n(&threads.nr, __ATOMIC_RELAXED)) {
		rec = my_record(this_thread());
		for (i = rec.nest; i > 0; i--)
			if (rec.saved[i - 1].frame == (uintptr_t)uc)
				break;
		if (i) {
			/* Levels above ours: handlers left by a jump. */
			rec.cur = rec.saved[i - 1].holds;
			memset(&rec.saved[i - 1], 0,
			       (rec.nest - (i - 1)) * sizeof(rec.saved[0]));
			rec.nest = i - 1;
			set_record("signal", &rec, ANY_HOLDS);
		}
		legit = legit_mask();
	}
	pkru = frame_pkru(uc);
	if (pkru)
		*pkru = (*pkru & ~all()) | WD_OF(all() & ~legit);
}

static int pkey_setup(void)
{
	unsigned a, b, c, d;

	if (!cpu_has_pku())
		return -ENOTSUP;
	if (rw_pkey_state.section_key < 0)
		pkey_early(); /* the constructor found no key: try once more */
	if (rw_pkey_state.section_key < 0)
		return -ENOTSUP;
	if (rw_pkey_state.state_key < 0)
		return -ENOTSUP;
	rw_pkey_state.ours = BITS(rw_pkey_state.section_key);
	for (int i = 0; i < PKEY_POOL_KEYS; i++)
		if (rw_pkey_state.pool_keys[i] > 0)
			rw_pkey_state.ours |= BITS(rw_pkey_state.pool_keys[i]);
	rw_pkey_state.all = rw_pkey_state.ours | BITS(rw_pkey_state.state_key);
	rw_pkey_state.wd_ours = WD_OF(rw_pkey_state.all);
	/* The thread records: written only with the state key open. */
	if (pkey_mprotect(&threads, sizeof(threads), PROT_READ | PROT_WRITE,
			  rw_pkey_state.state_key))
		return -errno;
	__cpuid_count(0xd, XFEATURE_PKRU, a, b, c, d);
	rw_pkey_state.pkru_offset = a >= 4 ? b : 0;
	(void)c;
	(void)d;
	/* mseal(addr, 0, 0) succeeds where the system call exists. */
	rw_pkey_state.seal = seal(&rw_pkey_state, 0) == 0;
	rw_pkey_state.active = true;
	if (mprotect(&rw_pkey_state, sizeof(rw_pkey_state), PROT_READ)) {
		int err = -errno;

		rw_pkey_state.active = false;
		return err;
	}
	if (rw_pkey_state.seal)
		seal(&rw_pkey_state, sizeof(rw_pkey_state));
	gate_settle();
	return 0;
}

static int tag(struct rw_region *r, int key)
{
	if (pkey_mprotect((void *)r->start, r->len, PROT_READ | PROT_WRITE,
			  key))
		return -errno;
	r->priv = (uintptr_t)key;
	return 0;
}

static int pool_key(const struct rw_region *self);

/* The section's pages keep their place and contents; only the key changes.
 * Nothing ever changes them again, so they are sealed. A pool created
 * before init is adopted too: it gets a pool key and is not sealed, so
 * that rare_pool_destroy() can unmap it. */
static int pkey_adopt(struct rw_region *r)
{
	bool pool = r->kind == RW_REGION_POOL;
	int err = tag(r, pool ? pool_key(r) : rw_pkey_state.section_key);

	if (!err && r->seal && rw_pkey_state.seal &&
	    seal((void *)r->start, r->len))
		return -errno;
	return err;
}

/* A pool key no live region uses, or the section key when none is left. */
static int pool_key(const struct rw_region *self)
{
	for (int i = 0; i < PKEY_POOL_KEYS; i++) {
		int k = rw_pkey_state.pool_keys[i];
		bool used = k <= 0;
		struct rw_region *r;

		rw_for_each_region(r)
			if (r != self &&
			    rw_backend_is(r->backend, RW_BACKEND_PKEY) &&
			    r->protected_ && (int)r->priv == k)
				used = true;
		if (!used)
			return k;
	}
	return rw_pkey_state.section_key;
}

/*
 * Pools are not sealed: rare_pool_destroy() must be able to unmap them.
 * The mapping's start goes into the core's table from the register
 * mmap(2) returned it in, and pkey_mprotect(2) takes it from there,
 * inline: a start that crossed a call could have been rewritten to the
 * program's data (27t), which would have been tagged with the pool's key
 * and made writable in its windows. The key is chosen after that call
 * (rw_pool_made_put() saves callee-saved registers: a key kept across it
 * could come back as another's), and crosses only rw_pool_made(), which
 * saves none.
 */
static int pkey_create(struct rw_region *r)
{
	long p = rw_sys6(SYS_mmap, 0, (long)rw_pool_made(RW_POOL_LEN),
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	long err;
	int key;

	if (p < 0 && p > -4096)
		return (int)p;
	rw_pool_made_put(RW_POOL_START, (uint64_t)p);
	key = pool_key(r);
	err = rw_sys6(SYS_pkey_mprotect, (long)rw_pool_made(RW_POOL_START),
		      (long)rw_pool_made(RW_POOL_LEN), PROT_READ | PROT_WRITE,
		      key, 0, 0);
	if (err) {
		rw_sys(SYS_munmap, rw_pool_made(RW_POOL_START),
		       rw_pool_made(RW_POOL_LEN), 0);
		return (int)err;
	}
	r->priv = (uintptr_t)key;
	return 0;
}

static void pkey_destroy(struct rw_region *r)
{
	munmap((void *)r->start, r->len);
}

static uint32_t key_bits(const struct rw_region *r)
{
	int k = (int)r->priv;

	if (!key_is_ours(k))
		rw_die("rare_write", (void *)r->start, "region has no key");
	return BITS(k);
}

/* The keys (of ours) that @pkru leaves write-enabled. */
static inline __attribute__((always_inline)) uint32_t open_in(uint32_t pkru)
{
	uint32_t denied = (pkru | (pkru >> 1)) & 0x55555555u;

	return ours() & ~(denied * 3);
}

/*
 * fork() waits for the writes of more than one store in flight on other
 * threads, so that a child never copies one half done (a single aligned
 * store cannot be): a Dekker pair of words. A writer counts itself in,
 * then looks for a fork; a fork raises its flag, then waits for the count
 * to drain. A writer that finds a fork steps out and spins until it is
 * over: no system call and no lock word's futex, whose arguments would
 * push the write's own values out of registers (pkey_write_one()). A
 * forged word may make a fork or a writer wait for good, or a child copy
 * a write half done; it never changes what is written or where.
 */
static uint32_t spans_in_flight, forking;

static inline __attribute__((always_inline)) void span_enter(void)
{
	for (;;) {
		__atomic_add_fetch(&spans_in_flight, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&forking, __ATOMIC_SEQ_CST))
			return;
		__atomic_sub_fetch(&spans_in_flight, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&forking, __ATOMIC_RELAXED))
			__asm__ volatile("pause");
	}
}

static inline __attribute__((always_inline)) void span_leave(void)
{
	uint32_t n = __atomic_load_n(&spans_in_flight, __ATOMIC_RELAXED);

	/* A count a store zeroed: nothing to take away. */
	while (n &&
	       !__atomic_compare_exchange_n(&spans_in_flight, &n, n - 1, false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

/*
 * The store of a write, inline, every argument in a register: an aligned
 * 1, 2, 4 or 8-byte unit is one store of @v (readers never see it torn);
 * any other size one rep movsb from @src, or rep stosb of @v's low byte
 * when @src is NULL, as vault.c's and shadow's alias_bulk(). Not the C
 * library's memmove() through rw_store(): a function the compiler calls
 * may save what it is handed on the stack (SECURITY.md). A source that
 * overlaps the destination from below is copied backwards (memmove()'s
 * job: a forward copy would read what it already wrote); the direction
 * flag is clear again before anything else runs (a signal handler gets it
 * clear from the kernel).
 */
static inline __attribute__((always_inline)) void
put(uintptr_t a, const void *src, size_t len, uint64_t v)
{
	uintptr_t s = (uintptr_t)src;

	if (rw_is_unit(a, len)) {
		switch (len) {
		case 1:
			__atomic_store_n((uint8_t *)a, (uint8_t)v,
					 __ATOMIC_RELAXED);
			break;
		case 2:
			__atomic_store_n((uint16_t *)a, (uint16_t)v,
					 __ATOMIC_RELAXED);
			break;
		case 4:
			__atomic_store_n((uint32_t *)a, (uint32_t)v,
					 __ATOMIC_RELAXED);
			break;
		default:
			__atomic_store_n((uint64_t *)a, v, __ATOMIC_RELAXED);
		}
	} else if (!src) {
		__asm__ volatile("rep stosb"
				 : "+D"(a), "+c"(len)
				 : "a"(v)
				 : "memory");
	} else if (a > s && a - s < len) {
		a += len - 1;
		s += len - 1;
		__asm__ volatile("std\n\t"
				 "rep movsb\n\t"
				 "cld"
				 : "+D"(a), "+S"(s), "+c"(len)
				 :
				 : "memory", "cc");
	} else {
		__asm__ volatile("rep movsb"
				 : "+D"(a), "+S"(s), "+c"(len)
				 :
				 : "memory");
	}
}

/* The value put() stores for a unit: loaded from @src before the key
 * opens, or the fill's byte in every byte (rep stosb: the low one). */
static inline __attribute__((always_inline)) uint64_t
unit_value(uintptr_t a, const void *src, size_t len, int fill)
{
	if (src && rw_is_unit(a, len))
		return rw_load_unit(src, len);
	return 0x0101010101010101ULL * (unsigned char)fill;
}

static __attribute__((noreturn, noinline)) void
pkey_refused(const char *call, void *dst, size_t len)
{
	rw_die(call, dst, "%zu bytes: the region changed during the write",
	       len);
}

/*
 * A segment (a pool's bookkeeping, a write before init), in the caller's
 * memory (its stack), which another thread can rewrite at any moment: it
 * is read from there once, into registers, checked there
 * (rw_seg_holds(): a live record of the table, on this backend, holding
 * it; then its key), its key opened, stored from those registers (put())
 * and the key shut again. No function is called in between. The check on
 * the caller's array (rw_seg_region()) followed by a second read of it
 * for the store, after WRPKRU and through rw_seg_store() and memmove(),
 * let a store in between move a list link into another live object (27r,
 * under QEMU, where each WRPKRU flushes the emulated TLB and the gap is
 * long). A segment rewritten before its read is checked as rewritten: it
 * goes anywhere rw_seg_holds() accepts, as on shadow and pwrite.
 *
 * It keeps no state outside registers: it opens the keys of its segment
 * that were shut and shuts exactly those (attack 11a); only if a key of
 * ours is still open afterwards (a map of this thread, or a forged spill)
 * does the record decide. fork() waits for it (span_enter()); a signal
 * in between runs after it.
 */
static void pkey_write(const struct rw_seg *s)
{
	const struct rw_region *r;
	uintptr_t a;
	const void *src;
	size_t len;
	uint64_t v;
	uint32_t mask, pre, opened, want;
	int key;

	/* Entered first: what is read after is not held across a call. */
	rw_cs_enter();
	span_enter();
	r = __atomic_load_n(&s->region, __ATOMIC_RELAXED);
	a = (uintptr_t)__atomic_load_n(&s->dst, __ATOMIC_RELAXED);
	src = __atomic_load_n(&s->src, __ATOMIC_RELAXED);
	len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
	v = unit_value(a, src, len,
		       __atomic_load_n(&s->fill, __ATOMIC_RELAXED));
	if (!rw_seg_holds(r, &rw_backend_pkey, a, len) ||
	    !key_is_ours(key = (int)r->priv)) {
		span_leave();
		rw_cs_leave();
		pkey_refused("rare_write_memcpy", (void *)a, len);
	}
	mask = BITS(key);
	pre = rdpkru();
	opened = mask & ~open_in(pre);
	want = pre & ~mask;
	wrpkru(want);
	put(a, src, len, v);
	wrpkru(want | WD_OF(opened));
	if (!closed_except(rdpkru(), 0))
		gate_settle();
	span_leave();
	rw_cs_leave();
}

/*
 * One write of the public API, its arguments in registers from the core's
 * check to the store (the core's tail call): no segment on the stack for
 * another thread to make longer (27i: a 3-byte copy made 16 ran over into
 * the next protected object). The region is checked again here, then the
 * same open, store, shut as pkey_write(), the store inline (put()). @spans
 * (a constant in each caller below): more than one store, counted for
 * fork().
 */
static inline __attribute__((always_inline)) void
store_one(const struct rw_region *r, const char *call, void *dst,
	  const void *src, size_t len, int fill, const bool spans)
{
	uint64_t v = unit_value((uintptr_t)dst, src, len, fill);
	uint32_t mask, pre, opened, want;

	rw_cs_enter();
	if (spans)
		span_enter();
	if (!rw_region_holds(r, &rw_backend_pkey, (uintptr_t)dst, len) ||
	    !key_is_ours((int)r->priv)) {
		if (spans)
			span_leave();
		rw_cs_leave();
		pkey_refused(call, dst, len);
	}
	mask = BITS((int)r->priv);
	pre = rdpkru();
	opened = mask & ~open_in(pre);
	want = pre & ~mask;
	/*
	 * No read-back between the two WRPKRU: only a signal's return
	 * changes PKRU there, the critical section defers signals, and a
	 * PKRU that did change still closes to one computed from registers,
	 * which the check below then compares with the record. A read of
	 * PKRU right after WRPKRU waits for it: about a tenth of the write
	 * (bench/README.md).
	 */
	wrpkru(want);
	put((uintptr_t)dst, src, len, v);
	wrpkru(want | WD_OF(opened));
	if (!closed_except(rdpkru(), 0))
		gate_settle();
	if (spans)
		span_leave();
	rw_cs_leave();
}

/* Two copies of store_one(), so that neither keeps a flag in memory. */
static void pkey_write_one(const struct rw_region *r, const char *call,
			   void *dst, const void *src, size_t len, int fill)
{
	if (rw_is_unit((uintptr_t)dst, len))
		store_one(r, call, dst, src, len, fill, false);
	else
		store_one(r, call, dst, src, len, fill, true);
}

/* Change the calling thread's record with @fn, then make PKRU match it. */
static void update_holds(const char *call,
			 void (*fn)(struct thread_rec *, uintptr_t),
			 uintptr_t arg, long delta)
{
	struct thread_rec rec = my_record(this_thread());

	fn(&rec, arg);
	set_record(call, &rec, delta);
	gate_settle();
}

static void begin_holds(struct thread_rec *rec, uintptr_t unused)
{
	(void)unused;
	rec->cur.window++;
}

/*
 * Take one hold away: the current one, or after a siglongjmp out of a
 * handler, the one that handler suspended (the window stays closed).
 */
static void drop_hold(struct thread_rec *rec, int key, const char *call)
{
	uint16_t *cur = key ? &rec->cur.maps[key] : &rec->cur.window;
	unsigned top = rec->nest;

	if (*cur) {
		(*cur)--;
		return;
	}
	while (top) {
		struct key_holds *h = &rec->saved[top - 1].holds;
		uint16_t *old = key ? &h->maps[key] : &h->window;

		if (*old) {
			(*old)--;
			return;
		}
		top--;
	}
	rw_die(call, NULL, "no open %s on this thread", key ? "map" : "window");
}

static void end_holds(struct thread_rec *rec, uintptr_t unused)
{
	(void)unused;
	drop_hold(rec, 0, "rare_write_end");
}

static void pkey_begin(void)
{
	update_holds("rare_write_begin", begin_holds, 0, 1);
}

static void pkey_end(void)
{
	update_holds("rare_write_end", end_holds, 0, -1);
}

static void map_holds(struct thread_rec *rec, uintptr_t key)
{
	rec->cur.maps[key]++;
}

static void unmap_holds(struct thread_rec *rec, uintptr_t key)
{
	drop_hold(rec, (int)key, "rare_write_unmap");
}

/* A map is a window on the region's key only: the view is the address. */
static void *pkey_map(struct rw_region *r, void *addr, size_t len)
{
	(void)len;
	key_bits(r);
	update_holds("rare_write_map", map_holds, r->priv, 1);
	return addr;
}

static void pkey_unmap(struct rw_region *r, void *view, void *addr, size_t len)
{
	(void)view;
	(void)addr;
	(void)len;
	key_bits(r);
	update_holds("rare_write_unmap", unmap_holds, r->priv, -1);
}

/* fork(): the child keeps the forking thread's record. Which thread forked
 * comes from the child's own register (its thread pointer is the forking
 * thread's), elsewhere from the core's table (rw_fork_tid()): a copy in
 * .bss could be pointed at a thread holding keys open (attack 14f). */
static void pkey_fork_prepare(void)
{
	__atomic_store_n(&forking, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&spans_in_flight, __ATOMIC_SEQ_CST))
		sched_yield();
	pthread_mutex_lock(&records_lock);
}

static void pkey_fork_parent(void)
{
	pthread_mutex_unlock(&records_lock);
	__atomic_store_n(&forking, 0, __ATOMIC_RELEASE);
}

static void pkey_fork_child(void)
{
	struct thread_rec keep;

	pthread_mutex_init(&records_lock, NULL);
	/* The writers that were counted are not in the child. */
	spans_in_flight = 0;
	forking = 0;
	if (!rw_pkey_state.active)
		return;
#if defined(__x86_64__)
	keep = my_record(this_thread()); /* the forking thread's pointer */
#else
	keep = my_record((uint64_t)rw_fork_tid());
#endif
	for (unsigned i = 0; i < MAX_THREADS; i++)
		if (threads.thr[i].tid) {
			struct thread_rec gone = threads.thr[i];

			memset(&gone.cur, 0, sizeof(gone.cur));
			gone.nest = 0;
			set_record("fork", &gone, ANY_HOLDS);
		}
	keep.tid = this_thread();
	set_record("fork", &keep, ANY_HOLDS);
	gate_settle();
}

/*
 * Threads created inside an open window would inherit its PKRU. The
 * interposed pthread_create() and thrd_create() start every thread through
 * a trampoline that write-disables our keys first. In a dynamically linked
 * program these definitions come before libc's; in a static one they are
 * the first definitions the linker sees. The real function is libc's next
 * definition, or in a static link its internal name, which the reference
 * to aio_init() pulls into the link (its object, which starts the
 * asynchronous I/O workers, calls it; mq_notify() is interposed in the
 * shared library, libc_threads.c). C11's
 * thrd_create() is what libc's own is: pthread_create() with glibc's
 * marker for a C11 thread as its attributes.
 */
typedef int create_fn(pthread_t *, const pthread_attr_t *, void *(*)(void *),
		      void *);
extern create_fn __pthread_create_2_1 __attribute__((weak));
__attribute__((used)) static void (*const pull_in_create)(
	const struct aioinit *) = aio_init;
#define ATTR_C11_THREAD ((const pthread_attr_t *)(uintptr_t)-1)

/*
 * The C library's pthread_create(), found once: dlsym() walks the loader's
 * list of objects, which is writable (a store to an object's load bias
 * there would make the next lookup return a gadget), and a pointer cached
 * in writable memory could be pointed at one directly (attack 12b). So the
 * lookup runs in a constructor, before the program's main() and before
 * anything is protected, into a page that is then read-only (and sealed
 * where the kernel has mseal(2)); "done" is in that page, so no store can
 * make it run again. A call before the constructor (another library's
 * constructor) looks it up then, before anything can be protected.
 */
static struct libc_next {
	bool done;
	create_fn *create;
} __attribute__((aligned(4096))) libc_next;
static pthread_mutex_t libc_next_lock = PTHREAD_MUTEX_INITIALIZER;

static void libc_next_resolve(void)
{
	create_fn *f = __pthread_create_2_1;

	pthread_mutex_lock(&libc_next_lock);
	if (!__atomic_load_n(&libc_next.done, __ATOMIC_ACQUIRE)) {
		if (!f)
			f = (create_fn *)dlsym(RTLD_NEXT, "pthread_create");
		if (!f)
			rw_die("pthread_create", NULL,
			       "cannot find the C library's pthread_create");
		libc_next.create = f;
		__atomic_store_n(&libc_next.done, true, __ATOMIC_RELEASE);
		if (mprotect(&libc_next, sizeof(libc_next), PROT_READ))
			rw_die("pthread_create", &libc_next,
			       "cannot protect the C library's pthread_create");
		seal(&libc_next, sizeof(libc_next)); /* where mseal(2) is */
	}
	pthread_mutex_unlock(&libc_next_lock);
}

__attribute__((constructor)) static void libc_next_early(void)
{
	libc_next_resolve();
}

static create_fn *real_create(void)
{
	if (!__atomic_load_n(&libc_next.done, __ATOMIC_ACQUIRE))
		libc_next_resolve();
	return libc_next.create;
}

struct thread_start {
	union {
		void *(*posix)(void *);
		thrd_start_t c11;
	} fn;
	void *arg;
};

/* The new thread's keys: write-disabled, whatever it inherited. */
static void thread_settle(void)
{
	/* A record left by a dead thread whose id we now carry. */
	if (find_record(this_thread())) {
		struct thread_rec none = {.tid = this_thread()};

		set_record("pthread_create", &none, ANY_HOLDS);
	}
	gate_settle();
}

static void *thread_trampoline(void *p)
{
	struct thread_start s = *(struct thread_start *)p;

	free(p);
	thread_settle();
	return s.fn.posix(s.arg);
}

static void *c11_trampoline(void *p)
{
	struct thread_start s = *(struct thread_start *)p;

	free(p);
	if (rw_pkey_state.active)
		thread_settle();
	return (void *)(intptr_t)s.fn.c11(s.arg);
}

static int start_thread(pthread_t *thread, const pthread_attr_t *attr,
			void *(*trampoline)(void *),
			const struct thread_start *start)
{
	struct thread_start *s = malloc(sizeof(*s));
	int err;

	if (!s)
		return EAGAIN;
	*s = *start;
	err = real_create()(thread, attr, trampoline, s);
	if (err)
		free(s);
	return err;
}

__attribute__((visibility("default"), weak)) int
pthread_create(pthread_t *thread, const pthread_attr_t *attr,
	       void *(*fn)(void *), void *arg)
{
	if (!rw_pkey_state.active)
		return real_create()(thread, attr, fn, arg);
	return start_thread(thread, attr, thread_trampoline,
			    &(struct thread_start){.fn.posix = fn, .arg = arg});
}

/* glibc's thrd_create(), through the trampoline. */
__attribute__((visibility("default"), weak)) int
thrd_create(thrd_t *thr, thrd_start_t fn, void *arg)
{
	int err =
		start_thread((pthread_t *)thr, ATTR_C11_THREAD, c11_trampoline,
			     &(struct thread_start){.fn.c11 = fn, .arg = arg});

	switch (err) {
	case 0:
		return thrd_success;
	case ENOMEM:
		return thrd_nomem;
	case ETIMEDOUT:
		return thrd_timedout;
	case EBUSY:
		return thrd_busy;
	default:
		return thrd_error;
	}
}

/* Whether this thread may write one of our keys now (a window, a map):
 * a thread the C library starts from here inherits that (libc_threads.c).
 * The register, not a record: no store changes it. */
static bool pkey_thread_writable(void)
{
	return rw_pkey_state.active &&
	       (rdpkru() & rw_pkey_state.wd_ours) != rw_pkey_state.wd_ours;
}

const struct rw_backend rw_backend_pkey = {
	.name = "pkey",
	.caps = RARE_WRITE_CAP_BEGIN_END | RARE_WRITE_CAP_THREAD_LOCAL,
	.setup = pkey_setup,
	.adopt = pkey_adopt,
	.create = pkey_create,
	.destroy = pkey_destroy,
	.write = pkey_write,
	.write_one = pkey_write_one,
	.begin = pkey_begin,
	.end = pkey_end,
	.map_in_place = true,
	.map = pkey_map,
	.unmap = pkey_unmap,
	.fork_prepare = pkey_fork_prepare,
	.fork_parent = pkey_fork_parent,
	.fork_child = pkey_fork_child,
	.fault = pkey_fault,
	.signal_enter = pkey_signal_enter,
	.signal_exit = pkey_signal_exit,
	.thread_writable = pkey_thread_writable,
};
