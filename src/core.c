// SPDX-License-Identifier: MIT
/*
 * core.c - regions, windows, dispatch and checks; backend-independent.
 *
 * Every write names its destination; the core finds the protected region
 * that wholly holds it (or aborts), then hands validated segments to the
 * region's backend. The region table itself sits in pages that are read-only
 * after init, so a stray or malicious store cannot point a later legitimate
 * write somewhere else.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rarewrite.h"
#include "internal.h"
#include "critical.h"
#include "table.h"
#include "table_put.h"
#include "pool_layout.h"
#include "region_find.h"
#include "rawsys.h"
#include "reglock.h"

/*
 * Lock order, the order fork_prepare() takes them in: views_lock,
 * pools_lock, registry_lock, maps_lock, list_lock (list.c; a pool's
 * destroy takes it too), nested_lock, then the backends' own (their
 * fork_prepare hooks: the memfd write lock, flip_lock, records_lock, the
 * process write lock). A thread holds views_lock shared from
 * rare_write_map() to rare_write_unmap() on a backend whose view must not
 * reach a fork child (fork_waits_for_views), and may call anything of the
 * library meanwhile; so fork waits for it first, holding nothing it may
 * need. (shadow held the memfd write lock over its maps instead, which
 * fork took after maps_lock: unmap waited for fork, fork for unmap.) A
 * map takes it before maps_lock, so it decides whether to before it holds
 * maps_lock (inline, from the table: rare_write_map()).
 */
static uint32_t views_lock; /* a lock word (reglock.h): taken inline */
/* Serialises init, region creation and destruction, and fork. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
/* A lock word (reglock.h): rare_write_map() takes it without a call. */
static uint32_t maps_lock;
/* A lock word (reglock.h): a list operation (list.c) takes it inline
 * before it puts its request, fork() before the backends' locks. */
uint32_t rw_list_lock;
static pthread_mutex_t nested_lock = PTHREAD_MUTEX_INITIALIZER;
/* Maps of this thread that hold views_lock: its own fork() would wait for
 * itself. A hint: forged, that fork() aborts, or waits for good. */
static __thread unsigned views_held;

/*
 * Refuse to open a window inside fork(), where the C library runs at-fork
 * handlers from a list any store can redirect (attack 21b, fork.c). One
 * load from the table unless a fork is in progress.
 */
static inline void fork_check(const char *call)
{
	if (__builtin_expect(
		    __atomic_load_n(&rw_table.fork_mark, __ATOMIC_ACQUIRE), 0))
		rw_fork_refuse(call);
}

/*
 * One segment, never an array: a backend that looped over an array kept
 * its cursor and end in registers its per-segment functions saved on the
 * stack across their system calls, and a store there ran a forged segment
 * after the real one (27y, 27z).
 */
void rw_write(const struct rw_seg *seg)
{
	/* Before init only a section that its library sealed itself
	 * (rare_write_seal_self()) is protected: the rest is ordinary
	 * memory. Inside this thread's own begin/end window, stores go
	 * straight in. The backend is read from the table again at each
	 * use, never held across a call (a callee saves it on the stack):
	 * which code runs is the region's. */
	if (!rw_initialised()
		    ? !rw_seg_region(seg)->protected_
		    : rw_window_depth &&
			      rw_seg_region(seg)->backend == rw_table.backend) {
		rw_seg_store(seg, seg->dst);
		return;
	}
	/* Memory a raw fork() child would share with its parent. */
	if (rw_initialised() && rw_seg_region(seg)->backend->dontfork_views)
		rw_owner_check("rare_write", seg->dst);
	rw_seg_region(seg)->backend->write(seg);
}

void rw_seg_moved(const char *call, const void *dst)
{
	rw_die(call, dst, "the region changed backend during the write");
}

/* What rw_write_args() does not do inline: before init, inside a window,
 * without a write_one, and every abort (rw_region_of() says why). */
static __attribute__((noinline)) void write_args_slow(const char *call,
						      void *dst,
						      const void *src,
						      size_t len, int fill)
{
	const struct rw_region *r = rw_region_of(call, dst, len);
	const struct rw_backend *b = r->backend;

	if (!rw_initialised() || !b->write_one ||
	    (rw_window_depth && b == rw_table.backend)) {
		struct rw_seg seg = {.region = (struct rw_region *)r,
				     .dst = dst,
				     .src = src,
				     .len = len,
				     .fill = fill};

		rw_write(&seg);
		return;
	}
	if (b->dontfork_views)
		rw_owner_check(call, dst);
	/* The region and its backend found again: @r and @b came back
	 * through the callee above, which may have saved them on the stack. */
	r = rw_region_of(call, dst, len);
	r->backend->write_one(r, call, dst, src, len, fill);
}

/*
 * The arguments arrive in registers and stay there up to the backend's
 * write_one, a tail call: the region is found inline (rw_region_find()),
 * the owner checked inline, and no function is called that could save
 * them on the stack, where another thread rewrites them (scribbler 15a;
 * rawsys.h). The region found picks the backend (whose locks come first);
 * write_one checks it again once it holds them.
 */
void rw_write_args(const char *call, void *dst, const void *src, size_t len,
		   int fill)
{
	const struct rw_region *r = rw_region_find((uintptr_t)dst, len);
	const struct rw_backend *b;
	const volatile uint64_t *token_page;

	if (__builtin_expect(!r || !__atomic_load_n(&rw_table.initialised,
						    __ATOMIC_ACQUIRE),
			     0))
		goto slow;
	b = r->backend;
	if (!b->write_one || (rw_window_depth && b == rw_table.backend))
		goto slow;
	token_page = rw_table.owner.token_page;
	if (b->dontfork_views &&
	    (!token_page || *token_page != rw_table.owner.token))
		goto slow;
	b->write_one(r, call, dst, src, len, fill);
	return;
slow:
	write_args_slow(call, dst, src, len, fill);
}

void rare_write_memcpy(void *dst, const void *src, size_t len)
{
	if (!len)
		return;
	if (!src)
		rw_die("rare_write_memcpy", dst, "NULL source");
	rw_write_args("rare_write_memcpy", dst, src, len, 0);
}

void rare_write_memset(void *dst, int c, size_t len)
{
	if (!len)
		return;
	rw_write_args("rare_write_memset", dst, NULL, len, c);
}

/*
 * Nested windows. A thread's depth in plain TLS is only a hint: a store
 * made inside the window could raise it so that the outermost end is not
 * seen. So each nesting level beyond the outermost is also recorded in the
 * table, and an end closes the window unless the table says this thread
 * (gettid(), which no store can change) is nested. Windows that do not
 * nest cost no system call for this.
 */
static int32_t this_tid(void)
{
	return (int32_t)syscall(SYS_gettid);
}

static struct nested_window *nested_find(int32_t tid)
{
	for (unsigned i = 0; i < RW_MAX_NESTED; i++)
		if (__atomic_load_n(&rw_table.nested[i].tid,
				    __ATOMIC_RELAXED) == tid)
			return &rw_table.nested[i];
	return NULL;
}

/* Levels beyond the outermost that the table holds for this thread. */
static uint32_t nested_extra(int32_t tid)
{
	struct nested_window *w;

	if (!__atomic_load_n(&rw_table.nr_nested, __ATOMIC_ACQUIRE))
		return 0;
	w = nested_find(tid);
	return w ? w->extra : 0;
}

/* nested_extra() of the calling thread: gettid() only when some thread
 * nests (the table, not a store, says whether one does). */
static uint32_t my_nested_extra(void)
{
	if (!__atomic_load_n(&rw_table.nr_nested, __ATOMIC_ACQUIRE))
		return 0;
	return nested_extra(this_tid());
}

/*
 * Add @delta levels to @tid's record (0: forget it). Signals are blocked,
 * so that a handler's own begin/end cannot deadlock on the lock. The new
 * count is computed from the table under the lock and the table read back
 * after the store: the record reaches the vault through a stack copy that
 * another thread can rewrite while the call waits (an outside review, 27f:
 * {tid, 1} made {tid, 2^30}, and the outermost end did not close).
 */
static void nested_change(const char *call, int32_t tid, int delta)
{
	struct nested_window *w, rec;
	unsigned used = 0;
	uint32_t extra;
	sigset_t all, saved;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	pthread_mutex_lock(&nested_lock);
	extra = delta ? nested_extra(tid) + (uint32_t)delta : 0;
	rec = (struct nested_window){extra ? tid : 0, extra};
	w = nested_find(tid);
	if (!w && extra) {
		w = nested_find(0);
		if (!w)
			rw_die(call, NULL,
			       "more than %d threads nest windows at once",
			       RW_MAX_NESTED);
		TABLE_SET(rw_table.nr_nested, rw_table.nr_nested + 1);
	} else if (w && !extra) {
		TABLE_SET(rw_table.nr_nested, rw_table.nr_nested - 1);
	}
	if (w)
		rw_table_store(w, &rec, sizeof(rec));
	for (unsigned i = 0; i < RW_MAX_NESTED; i++)
		used += rw_table.nested[i].tid != 0;
	if (nested_extra(tid) != extra || used != rw_table.nr_nested)
		rw_die(call, &rw_table,
		       "the record of nested windows changed on its way to "
		       "the table");
	pthread_mutex_unlock(&nested_lock);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

/* Before init a window opens nothing; init refuses while one is open, so
 * every window that is open after init was opened after it. */
static bool preinit_window(int delta)
{
	bool pre;

	pthread_mutex_lock(&registry_lock);
	pre = !rw_table.initialised;
	if (pre) /* the table may be sealed already (rare_write_seal_self) */
		TABLE_SET(rw_table.preinit_windows,
			  rw_table.preinit_windows + delta);
	pthread_mutex_unlock(&registry_lock);
	return pre;
}

void rare_write_begin(void)
{
	const struct rw_backend *b;

	fork_check("rare_write_begin"); /* a redirected at-fork hook */
	if (rw_window_depth) {
		rw_window_depth++;
		if (rw_initialised())
			nested_change("rare_write_begin", this_tid(), 1);
		return;
	}
	if (!rw_initialised() && preinit_window(1)) {
		rw_window_depth = 1; /* everything is writable anyway */
		return;
	}
	b = rw_table.backend;
	if (!(b->caps & RARE_WRITE_CAP_BEGIN_END))
		rw_die("rare_write_begin", NULL,
		       "backend %s has no begin/end windows (see "
		       "rare_write_caps())",
		       b->name);
	/* A record left by a dead thread whose id we now carry. */
	if (my_nested_extra())
		nested_change("rare_write_begin", this_tid(), 0);
	rw_window_depth = 1;
	rw_table.backend->begin(); /* not @b: it crossed the calls above */
}

void rare_write_end(void)
{
	uint32_t extra;

	if (!rw_window_depth) /* a handler that cleared it was left by a jump */
		rw_window_depth = rw_signal_left_depth();
	if (!rw_window_depth)
		rw_die("rare_write_end", NULL, "no open window on this thread");
	if (!rw_initialised()) {
		if (!--rw_window_depth)
			preinit_window(-1);
		return;
	}
	extra = my_nested_extra();
	if (extra) {
		nested_change("rare_write_end", this_tid(), -1);
		rw_window_depth = extra;
		return;
	}
	rw_window_depth = 0;
	rw_table.backend->end();
}

/*
 * Open maps, for the overlap check and to validate unmap: kept in the
 * table, so a store cannot forge or move one, and unmap accepts only a
 * handle whose target, length, token and view match a record (attack 7g).
 */
static unsigned long next_token = 1;

/* The request of the map in progress (maps_lock held), read from the
 * table at each use. */
#define REQ_ADDR                                                               \
	((uintptr_t)__atomic_load_n(&rw_table.map_request.addr,                \
				    __ATOMIC_RELAXED))
#define REQ_LEN                                                                \
	((size_t)__atomic_load_n(&rw_table.map_request.len, __ATOMIC_RELAXED))
#define REQ_VIEW                                                               \
	((uintptr_t)__atomic_load_n(&rw_table.map_request.view,                \
				    __ATOMIC_RELAXED))

/*
 * Record @addr and @len as the map in progress, maps_lock held: through
 * the vault's memfd, then compared with @addr and @len, which never left
 * their registers (rw_table_put4(): no function call in between).
 */
static inline __attribute__((always_inline)) void
map_request_put(uintptr_t addr, size_t len)
{
	if (!rw_table_put4(&rw_table.map_request.addr, addr, len,
			   rw_request_caller(), 0))
		rw_die("rare_write_map", (void *)addr,
		       "the map's request changed on its way to the table (a "
		       "store into the caller's stack?)");
}

/*
 * Put @view, as the backend's map() returned it, into the request, and
 * compare after, as map_request_put(): called right after map() with
 * nothing in between, so the view reaches the table from the register it
 * came back in. Kept in a local across maps_insert()'s calls, it came
 * back from their frames, where a store could make the record, and so
 * unmap, release memory the backend never handed out (15e).
 */
static inline __attribute__((always_inline)) void map_view_put(uintptr_t view)
{
	long bad = 0;

	if (rw_table.vault_fd < 0 || rw_table_open_in_child ||
	    !RW_RAWSYS_INLINE) {
		rw_table_store(&rw_table.map_request.view, &view, sizeof(view));
		bad = REQ_VIEW != view;
	}
#if RW_RAWSYS_INLINE
	else
		__asm__ volatile("sub $128, %%rsp\n\t" /* the red zone */
				 "push %[view]\n\t"
				 "mov %[fd], %%edi\n\t"
				 "mov %%rsp, %%rsi\n\t"
				 "mov $8, %%edx\n\t"
				 "mov %[off], %%r10\n\t"
				 "mov %[nr], %%eax\n\t"
				 "syscall\n\t"
				 "add $136, %%rsp\n\t"
				 "cmp $8, %%rax\n\t"
				 "jne 1f\n\t"
				 "xor %%eax, %%eax\n\t"
				 "cmp %[view], (%[at])\n\t"
				 "je 2f\n"
				 "1:\tmov $1, %%eax\n"
				 "2:"
				 : "=&a"(bad)
				 : [fd] "m"(rw_table.vault_fd),
				   [at] "r"(&rw_table.map_request.view),
				   [off] "i"(__builtin_offsetof(
					   struct rw_table, map_request.view)),
				   [view] "r"(view), [nr] "i"(SYS_pwrite64)
				 : "rdi", "rsi", "rdx", "r10", "rcx", "r11",
				   "memory", "cc");
#endif
	if (bad || !view)
		rw_die("rare_write_map", (void *)REQ_ADDR,
		       "the view changed on its way to the table (a store "
		       "into the caller's stack?)");
}

/*
 * Whether the region at @addr is protected, from the table (init takes
 * maps_lock; a library's seal may protect a region a map opened on plain
 * memory, whose record then still says no backend). Returned, never
 * stored through a pointer: a flag whose address is taken lives on the
 * stack, and it went into the record and its check from there, so a
 * store made a record whose unmap never calls the backend's (shadow's
 * alias then stays mapped), or calls it for a view it never handed out.
 */
static bool map_protected(uintptr_t addr)
{
	const struct rw_region *r = rw_region_lookup((void *)addr);

	return r && __atomic_load_n(&r->protected_, __ATOMIC_ACQUIRE);
}

/*
 * The view of the map in progress, from the table (maps_lock held): the
 * address itself on plain memory and on a backend that opens it in place,
 * else what its map() handed back (map_view_put()).
 */
static uintptr_t map_view(void)
{
	const struct rw_region *r = rw_region_lookup((void *)REQ_ADDR);

	if (!map_protected(REQ_ADDR) || r->backend->map_in_place)
		return REQ_ADDR;
	if (!REQ_VIEW)
		rw_die("rare_write_map", (void *)REQ_ADDR,
		       "the backend was not asked for a view (a store into "
		       "the caller's stack?)");
	return REQ_VIEW;
}

/*
 * Abort unless the request in the table is still this call's (its stack
 * pointer, rw_request_caller()): maps_lock is a word a store can release, and
 * another thread's map or unmap then puts its own request over this one
 * midway, which the steps after read (26c: the victim's map went to the
 * other's target). Only the putting call writes its own there, so a
 * request replaced at any moment since the put fails this check, made
 * before the call returns what it did, inline: the slot unmap frees next
 * is read from the request with no call in between (maps_lock held).
 */
static inline __attribute__((always_inline)) void
map_request_mine(const char *call)
{
	if (__atomic_load_n(&rw_table.map_request.caller, __ATOMIC_RELAXED) !=
	    rw_request_caller())
		rw_die(call, (void *)REQ_ADDR,
		       "another thread's request replaced this one while it "
		       "ran (a store released maps_lock?)");
}

/* Record the map in progress (the request, its view, a token) in a slot,
 * then check the slot against the request: both in the table, so a store
 * into the record's copy on the stack is caught. maps_lock held. */
static unsigned long maps_insert(void)
{
	struct open_map *slot = NULL;
	unsigned long token;

	for (size_t i = 0; i < rw_table.nr_maps; i++)
		if (!rw_table.maps[i].token) {
			slot = &rw_table.maps[i];
			break;
		}
	if (!slot) {
		if (rw_table.nr_maps == RW_MAX_MAPS) {
			rw_reglock_write_unlock(&maps_lock);
			rw_die("rare_write_map", (void *)REQ_ADDR,
			       "more than %d maps open at once", RW_MAX_MAPS);
		}
		slot = &rw_table.maps[rw_table.nr_maps];
		TABLE_SET(rw_table.nr_maps, rw_table.nr_maps + 1);
	}
	/* Tokens only tell handles of the same range apart; 0 is free. */
	if (!next_token)
		next_token = 1;
	token = next_token++;
	rw_table_store(slot,
		       &(struct open_map){REQ_ADDR, REQ_ADDR + REQ_LEN,
					  map_view(), token,
					  map_protected(REQ_ADDR)},
		       sizeof(*slot));
	/* Each compared with the table's, found again: no local of them
	 * crossed the store. */
	if (slot->start != REQ_ADDR || slot->end != REQ_ADDR + REQ_LEN ||
	    !slot->token || slot->view != map_view() ||
	    slot->backend != map_protected(REQ_ADDR))
		rw_die("rare_write_map", (void *)REQ_ADDR,
		       "the map's record changed on its way to the table (a "
		       "store into the caller's stack?)");
	return slot->token;
}

/* Whether a rare_write_map() is open; maps_lock held. */
static bool maps_open(void)
{
	for (size_t i = 0; i < rw_table.nr_maps; i++)
		if (rw_table.maps[i].token)
			return true;
	return false;
}

/*
 * The address and length arrive in registers and go into the table first
 * (map_request_put(), under maps_lock taken inline, no function call
 * before): every step after that, the region's lookup, the backend's map
 * and the record, reads them from there, never from a variable a callee
 * may have saved on the stack (the scribbler, 15e). maps_lock stays held
 * until the record is in (the lock order of fork_prepare(): maps_lock
 * before the backends' locks). On a backend whose views must not reach a
 * fork child (shadow), views_lock is held shared before maps_lock and
 * until the unmap.
 */
struct rare_write_mapping rare_write_map(void *addr, size_t len)
{
	struct rare_write_mapping m;
	struct rw_region *r;
	bool protected_;
	unsigned long token;
	const struct rw_region *seen;
	bool views = false, need_views;

	fork_check("rare_write_map"); /* a redirected at-fork hook */
	if (!len)
		rw_die("rare_write_map", addr, "zero length");
	/* views_lock before maps_lock, inline (no call: @addr and @len are
	 * not in the table yet); only a guess, checked under maps_lock. */
	seen = rw_region_find((uintptr_t)addr, len);
	if (seen && __atomic_load_n(&seen->protected_, __ATOMIC_ACQUIRE) &&
	    seen->backend && seen->backend->fork_waits_for_views) {
		rw_reglock_read(&views_lock);
		views = true;
	}
again:
	rw_reglock_write(&maps_lock);
	map_request_put((uintptr_t)addr, len);
	r = rw_region_lookup((void *)REQ_ADDR);
	if (!r || REQ_ADDR < r->user_start ||
	    REQ_LEN > r->start + r->len - REQ_ADDR) {
		rw_reglock_write_unlock(&maps_lock);
		rw_region_of("rare_write_map", (void *)REQ_ADDR, REQ_LEN);
		/* It found the region valid after all: the table changed
		 * once maps_lock was dropped. Never go on unlocked. */
		rw_die("rare_write_map", (void *)REQ_ADDR,
		       "the region changed while the call ran");
	}
	for (size_t i = 0; i < rw_table.nr_maps; i++) {
		const struct open_map *o = &rw_table.maps[i];

		if (o->token && REQ_ADDR < o->end &&
		    o->start < REQ_ADDR + REQ_LEN) {
			rw_reglock_write_unlock(&maps_lock);
			rw_die("rare_write_map", (void *)REQ_ADDR,
			       "overlaps the open map %p+%zu", (void *)o->start,
			       (size_t)(o->end - o->start));
		}
	}
	/* A region not protected yet is plain memory: its own address is
	 * the view. The record says which, for unmap: a seal or init
	 * between the two must not make unmap release a view the backend
	 * never handed out (init refuses while a map is open). */
	protected_ = __atomic_load_n(&r->protected_, __ATOMIC_ACQUIRE);
	if (protected_ && r->backend->dontfork_views)
		rw_owner_check("rare_write_map", (void *)REQ_ADDR);
	/* Whether views_lock is held for this map: from the table, not from
	 * @r, which came back through the callee above. */
	r = rw_region_lookup((void *)REQ_ADDR);
	need_views = protected_ && r->backend->fork_waits_for_views;
	if (need_views && !views) {
		/* Sealed, or the region replaced, since the look before
		 * maps_lock: views_lock comes first (fork_prepare()'s order),
		 * so again from the start, the request's values as new
		 * arguments, each checked anew. */
		addr = (void *)REQ_ADDR;
		len = REQ_LEN;
		rw_reglock_write_unlock(&maps_lock);
		rw_reglock_read(&views_lock);
		views = true;
		goto again;
	}
	if (views && !need_views) {
		rw_reglock_read_unlock(&views_lock);
		views = false;
	}
	if (views)
		views_held++;
	/* Found again from the request, and whether it is protected from
	 * the table: @r and @protected_ crossed the callees above. A view of
	 * its own goes from map()'s return register into the table (one
	 * pwrite(2) more; in place, the view is the request's address). */
	r = rw_region_lookup((void *)REQ_ADDR);
	if (!__atomic_load_n(&r->protected_, __ATOMIC_ACQUIRE))
		; /* plain memory: the address is the view */
	else if (r->backend->map_in_place)
		r->backend->map(r, (void *)REQ_ADDR, REQ_LEN);
	else
		map_view_put((uintptr_t)r->backend->map(r, (void *)REQ_ADDR,
							REQ_LEN));
	token = maps_insert();
	m = (struct rare_write_mapping){.addr = (void *)map_view(),
					.target = (void *)REQ_ADDR,
					.len = REQ_LEN,
					.token = token};
	map_request_mine("rare_write_map");
	rw_reglock_write_unlock(&maps_lock);
	return m;
}

/* The record of the unmap in progress: its slot's index was put into the
 * request (maps_lock held). */
#define UNMAP_REC (&rw_table.maps[REQ_ADDR])

/* For a backend's unmap(), after it committed: the view to release, from
 * the table. Its @view argument crossed the commit's calls in a register
 * they saved on the stack, where a store made free() release another
 * live object (maps_lock held). */
void *rw_unmapping_view(void)
{
	return (void *)UNMAP_REC->view;
}

/*
 * The handle is the caller's, in memory any thread can store to: only the
 * table's record says which view to release and where it goes (15e). The
 * slot found, its index and token go into the table's request (the
 * index never left a register since the loop), and every step after that
 * reads the record there, not a copy a callee may have saved; the slot is
 * freed last, maps_lock held throughout (the order of fork_prepare():
 * maps_lock before the backends' locks).
 */
void rare_write_unmap(struct rare_write_mapping m)
{
	struct rw_region *r;
	size_t i;
	bool views;

	rw_region_of("rare_write_unmap", m.target, m.len);
	rw_reglock_write(&maps_lock);
	for (i = 0; i < rw_table.nr_maps; i++) {
		const struct open_map *o = &rw_table.maps[i];

		if (o->token && o->token == m.token &&
		    o->start == (uintptr_t)m.target &&
		    o->end == (uintptr_t)m.target + m.len &&
		    o->view == (uintptr_t)m.addr)
			break;
	}
	if (i == rw_table.nr_maps) {
		rw_reglock_write_unlock(&maps_lock);
		rw_die("rare_write_unmap", m.target, "not an open map");
	}
	map_request_put(i, rw_table.maps[i].token);
	if (REQ_ADDR >= rw_table.nr_maps || !UNMAP_REC->token ||
	    UNMAP_REC->token != REQ_LEN)
		rw_die("rare_write_unmap", m.target, "not an open map");
	rw_region_of("rare_write_unmap", (void *)UNMAP_REC->start,
		     UNMAP_REC->end - UNMAP_REC->start);
	views = false;
	if (UNMAP_REC->backend) {
		/* Found again from the record: @r came back through the
		 * callee above. */
		r = rw_region_lookup((void *)UNMAP_REC->start);
		r->backend->unmap(r, (void *)UNMAP_REC->view,
				  (void *)UNMAP_REC->start,
				  UNMAP_REC->end - UNMAP_REC->start);
		/* Whether the map holds views_lock: the table's record and
		 * region say (rare_write_map() took it for the same). */
		r = rw_region_lookup((void *)UNMAP_REC->start);
		if (!r)
			rw_die("rare_write_unmap", m.target,
			       "its region was destroyed during the unmap");
		views = r->backend->fork_waits_for_views;
	}
	map_request_mine("rare_write_unmap");
	TABLE_SET(UNMAP_REC->token, 0UL);
	rw_reglock_write_unlock(&maps_lock);
	if (views) {
		if (views_held) /* 0: unmapped on another thread than mapped */
			views_held--;
		rw_reglock_read_unlock(&views_lock);
	}
}

/* @b's slot in the table's list of backends set up so far, or the first
 * free slot after them when it is not there. */
static unsigned used_slot(const struct rw_backend *b)
{
	unsigned i;

	for (i = 0; i < RW_MAX_BACKENDS && rw_table.used[i]; i++)
		if (rw_table.used[i] == b)
			break;
	return i;
}

static bool backend_set_up(const struct rw_backend *b)
{
	unsigned i = used_slot(b);

	return i < RW_MAX_BACKENDS && rw_table.used[i] == b;
}

static int backend_use(const struct rw_backend *b)
{
	unsigned i = used_slot(b);
	int err;

	if (i < RW_MAX_BACKENDS && rw_table.used[i] == b)
		return 0;
	err = b->setup();
	if (!err) {
		TABLE_SET(rw_table.used[i], b);
		if (rw_table.backend) /* a pool's level: its signal hooks */
			rw_signal_activate();
	}
	return err;
}

/* Abort unless @r is a free slot of the table: a pointer to a slot that a
 * call may have saved on the stack, checked right before its use. */
static inline __attribute__((always_inline)) void
slot_freed(const char *call, const struct rw_region *r)
{
	uintptr_t at = (uintptr_t)r - (uintptr_t)rw_table.regions;

	if (at >= sizeof(rw_table.regions) || at % sizeof(*r) ||
	    __atomic_load_n(&r->kind, __ATOMIC_ACQUIRE) != RW_REGION_FREE)
		rw_die(call, r,
		       "a region slot changed under the call (a store into "
		       "the caller's stack?)");
}

/*
 * The record create() filled sits on the stack across its system calls,
 * where another thread can rewrite it (the scribbler, 15d): the backend,
 * length and seal are put back from this call's own values, the start and
 * descriptor from what create() put into the request (27t; the table's
 * record is written from there again after the copy), and the range and
 * descriptor must be new to the table (a record pointing at a section or
 * at another region's memfd would aim every later write there).
 * registry_lock held.
 */
static void created_check(struct rw_region *f, const struct rw_backend *b,
			  size_t len, bool seal)
{
/* The request's, loaded at each use: @f is on the stack, where a store
 * would turn a check of it into a false abort (or a false pass). */
#define MADE_START ((uintptr_t)rw_table.pool_request.start)
#define MADE_FD ((int)rw_table.pool_request.fd)
	struct rw_region *o;

	f->backend = b;
	f->len = len;
	f->seal = seal;
	f->kind = RW_REGION_FREE;
	f->start = MADE_START;
	f->fd = MADE_FD;
	if (!MADE_START || MADE_START % rw_page_size ||
	    MADE_START + len < MADE_START ||
	    (MADE_FD >= 0 && MADE_FD == rw_table.vault_fd))
		goto bad;
	rw_for_each_region(o)
		if ((MADE_START < o->start + o->len &&
		     o->start < MADE_START + len) ||
		    (MADE_FD >= 0 && MADE_FD == o->fd))
			goto bad;
	return;
#undef MADE_START
#undef MADE_FD
bad:
	rw_die("rare_pool_create", (void *)rw_table.pool_request.start,
	       "a new pool's record changed before it was committed (a store "
	       "into the caller's stack?)");
}

/*
 * A pool's creation, request first (27m). The backend a pool names, its
 * length, bookkeeping length and seal came from the caller in registers
 * and were carried to the record through pthread_mutex_lock(), the
 * backend's create() and their system calls, whose callees save the
 * caller's registers on the stack: a store there made a pwrite pool an
 * mprotect one (5 of 5 runs on every backend). Now they go into the table
 * first, before any function call: the name is matched against the
 * backends' names inline, pools_lock (a lock word, reglock.h) is taken
 * inline and the request written with an inline pwrite(2) from those
 * registers and compared with them; every later step reads the table's
 * request (POOL_*), never a copy a callee may have saved.
 */
/* Serialises pool creation and destruction and their request in the
 * table; taken before registry_lock (the lock order above). */
static uint32_t pools_lock;

/* The backend of slot @i (enum rw_backend_id): a load from read-only
 * data (backends.c), no call. */
static inline __attribute__((always_inline)) const struct rw_backend *
backend_of_slot(uint64_t i)
{
	return i < RW_NR_BACKENDS ? rw_backends_ops[i] : NULL;
}

/* Whether the program's string @a is the backend name @b; inline, byte by
 * byte (strcmp() is a call). */
static inline __attribute__((always_inline)) bool same_name(const char *a,
							    const char *b)
{
	const volatile char *x = a;

	while (*x && *x == *b) {
		x++;
		b++;
	}
	return *x == *b;
}

/* The slot + 1 of the backend called exactly @name, 0 for NULL (the
 * process-wide default), -1 for any other name ("auto", unknown). */
static inline __attribute__((always_inline)) long level_named(const char *name)
{
	if (!name)
		return 0;
	for (uint64_t i = 0; i < RW_NR_BACKENDS; i++)
		if (same_name(name, backend_of_slot(i)->name))
			return (long)i + 1;
	return -1;
}

/*
 * The level "auto" gives a pool once rw_backend_lookup() has set its choice
 * up: the first backend of the preference list that the table records as
 * set up. auto takes the first whose setup succeeds, and a backend set up
 * before succeeds at once, so that is the lookup's answer (or, if another
 * thread has since set up a preferred one, what auto picks now), read from
 * the table, which no store reaches.
 */
static long auto_level(void)
{
	const struct rw_backend *b;
	bool last;

	for (unsigned rank = 0; (b = rw_backend_preferred(rank, &last)); rank++)
		if (backend_set_up(b))
			return rw_backend_index(b) + 1;
	rw_die("rare_pool_create", NULL,
	       "\"auto\" set up a backend the table does not record");
}

#define POOL_REQ(field)                                                        \
	__atomic_load_n(&rw_table.pool_request.field, __ATOMIC_RELAXED)
/* The pool's backend: its own, or the process-wide default, read from the
 * table at each use. */
#define POOL_BACKEND                                                           \
	((POOL_REQ(level) & 0xff)                                              \
		 ? backend_of_slot((POOL_REQ(level) & 0xff) - 1)               \
		 : rw_table.backend)
#define POOL_SEAL (!!(POOL_REQ(level) >> 8))
#define POOL_LEN ((size_t)POOL_REQ(len))
#define POOL_META_LEN ((size_t)POOL_REQ(meta_len))

/*
 * Record the pool creation in progress, pools_lock held: through the
 * vault's memfd, then compared with the registers it was written from (as
 * map_request_put(): no call in between, pwrite(2) made inline from a copy
 * pushed below the red zone). Before the seal, or in the fork child, the
 * table is plain memory.
 */
static inline __attribute__((always_inline)) void
pool_request_put(uint64_t level, uint64_t len, uint64_t meta_len)
{
	long bad = 0;
	uint64_t caller = rw_request_caller();

	if (rw_table.vault_fd < 0 || rw_table_open_in_child ||
	    !RW_RAWSYS_INLINE) {
		/* The first six words, as the asm below. */
		const uint64_t req[6] = {level,	 len, meta_len,
					 caller, 0,   (uint64_t)-1};

		rw_table_store(&rw_table.pool_request, req, sizeof(req));
		return;
	}
#if RW_RAWSYS_INLINE
	__asm__ volatile(
		"sub $128, %%rsp\n\t" /* the red zone */
		"push $-1\n\t"	      /* fd: none yet */
		"push $0\n\t"	      /* start: none yet */
		"push %[caller]\n\t"
		"push %[meta]\n\t"
		"push %[len]\n\t"
		"push %[level]\n\t"
		"mov %[fd], %%edi\n\t"
		"mov %%rsp, %%rsi\n\t"
		"mov $48, %%edx\n\t"
		"mov %[off], %%r10\n\t"
		"mov %[nr], %%eax\n\t"
		"syscall\n\t"
		"add $176, %%rsp\n\t"
		"cmp $48, %%rax\n\t"
		"jne 1f\n\t"
		"xor %%eax, %%eax\n\t"
		"cmp %[level], (%[at])\n\t"
		"jne 1f\n\t"
		"cmp %[len], 8(%[at])\n\t"
		"jne 1f\n\t"
		"cmp %[meta], 16(%[at])\n\t"
		"jne 1f\n\t"
		"cmp %[caller], 24(%[at])\n\t"
		"jne 1f\n\t"
		"cmpq $0, 32(%[at])\n\t"
		"jne 1f\n\t"
		"cmpq $-1, 40(%[at])\n\t"
		"je 2f\n"
		"1:\tmov $1, %%eax\n"
		"2:"
		: "=&a"(bad)
		: [fd] "m"(rw_table.vault_fd), [at] "r"(&rw_table.pool_request),
		  [off] "i"(__builtin_offsetof(struct rw_table, pool_request)),
		  [level] "r"(level), [len] "r"(len), [meta] "r"(meta_len),
		  [caller] "r"(caller), [nr] "i"(SYS_pwrite64)
		: "rdi", "rsi", "rdx", "r10", "rcx", "r11", "memory", "cc");
#endif
	if (bad)
		rw_die("rare_pool_create", NULL,
		       "the pool's request changed on its way to the table (a "
		       "store into the caller's stack?)");
}

/* Whether the table's record @r (not yet published) names a range and a
 * descriptor no live region has, and not the table's own memfd. */
static inline __attribute__((always_inline)) bool
record_new(const struct rw_region *r)
{
	struct rw_region *o;

	if (!r->start || r->start % RW_RAWSYS_PAGE ||
	    r->start + r->len < r->start ||
	    (r->fd >= 0 && r->fd == rw_table.vault_fd))
		return false;
	rw_for_each_region(o)
		if ((r->start < o->start + o->len &&
		     o->start < r->start + r->len) ||
		    (r->fd >= 0 && r->fd == o->fd))
			return false;
	return true;
}

/*
 * Record the index of the region slot the call fills or frees in the
 * request, pools_lock held, from the register it is in (no function call
 * since it was found), and compare it after, as pool_request_put().
 */
static inline __attribute__((always_inline)) void
pool_slot_put(const char *call, uint64_t slot)
{
	long bad = 0;

	if (rw_table.vault_fd < 0 || rw_table_open_in_child ||
	    !RW_RAWSYS_INLINE) {
		rw_table_store(&rw_table.pool_request.slot, &slot,
			       sizeof(slot));
		bad = POOL_REQ(slot) != slot;
	}
#if RW_RAWSYS_INLINE
	else
		__asm__ volatile("sub $128, %%rsp\n\t" /* the red zone */
				 "push %[slot]\n\t"
				 "mov %[fd], %%edi\n\t"
				 "mov %%rsp, %%rsi\n\t"
				 "mov $8, %%edx\n\t"
				 "mov %[off], %%r10\n\t"
				 "mov %[nr], %%eax\n\t"
				 "syscall\n\t"
				 "add $136, %%rsp\n\t"
				 "cmp $8, %%rax\n\t"
				 "jne 1f\n\t"
				 "xor %%eax, %%eax\n\t"
				 "cmp %[slot], (%[at])\n\t"
				 "je 2f\n"
				 "1:\tmov $1, %%eax\n"
				 "2:"
				 : "=&a"(bad)
				 : [fd] "m"(rw_table.vault_fd),
				   [at] "r"(&rw_table.pool_request.slot),
				   [off] "i"(__builtin_offsetof(
					   struct rw_table, pool_request.slot)),
				   [slot] "r"(slot), [nr] "i"(SYS_pwrite64)
				 : "rdi", "rsi", "rdx", "r10", "rcx", "r11",
				   "memory", "cc");
#endif
	if (bad || slot >= RW_MAX_REGIONS)
		rw_die(call, NULL,
		       "the pool's slot changed on its way to the table (a "
		       "store into the caller's stack?)");
}

/*
 * Store the word @v at @dst in the table from the register it is in, and
 * compare, as pool_slot_put() (@dst computed from the table, in a
 * register). The copy pwrite(2) reads is pushed below the red zone, where
 * another thread's store can change it before the kernel copies it: the
 * table then differs from the register, which is the truth, so the store
 * is made again from it, a few times, before the call aborts naming @call.
 */
static inline __attribute__((always_inline)) void
table_word_put(const char *call, uint64_t *dst, uint64_t v)
{
	long bad = 0;

	if (rw_table.vault_fd < 0 || rw_table_open_in_child ||
	    !RW_RAWSYS_INLINE) {
		rw_table_store(dst, &v, sizeof(v));
		bad = __atomic_load_n(dst, __ATOMIC_RELAXED) != v;
	}
#if RW_RAWSYS_INLINE
	else {
		/* The retries inside the asm: a C loop around it took @v
		 * back from the stack copy the fallback above made. */
		unsigned long tries = 8;

		__asm__ volatile(
			"0:\tsub $128, %%rsp\n\t" /* the red zone */
			"push %[v]\n\t"
			"mov %[fd], %%edi\n\t"
			"mov %%rsp, %%rsi\n\t"
			"mov $8, %%edx\n\t"
			"mov %[off], %%r10\n\t"
			"mov %[nr], %%eax\n\t"
			"syscall\n\t"
			"add $136, %%rsp\n\t"
			"cmp $8, %%rax\n\t"
			"jne 1f\n\t"
			"cmp %[v], (%[at])\n\t"
			"je 2f\n"
			"1:\tdec %[tries]\n\t"
			"jnz 0b\n\t"
			"mov $1, %%eax\n\t"
			"jmp 3f\n"
			"2:\txor %%eax, %%eax\n"
			"3:"
			: "=&a"(bad), [tries] "+r"(tries)
			: [fd] "m"(rw_table.vault_fd), [at] "r"(dst),
			  [off] "r"((uintptr_t)dst - (uintptr_t)&rw_table),
			  [v] "r"(v), [nr] "i"(SYS_pwrite64)
			: "rdi", "rsi", "rdx", "r10", "rcx", "r11", "memory",
			  "cc");
	}
#endif
	if (bad)
		rw_die(call, NULL,
		       "the table's word changed on its way there (a store "
		       "into the caller's stack?)");
}

_Static_assert(
	__builtin_offsetof(struct rw_table, pool_request.start) ==
			__builtin_offsetof(struct rw_table, pool_request) +
				32 &&
		__builtin_offsetof(struct rw_table, pool_request.fd) ==
			__builtin_offsetof(struct rw_table, pool_request) + 40,
	"pool_request_put() writes start and fd as words 4 and 5");

/*
 * What a backend's create() made (27t): the new pool's start and
 * descriptor, put into the request from the register the system call
 * returned them in. The record create() filled sits on the stack, and
 * created_check() could only refuse a start on another region: a store
 * moved it to plain memory outside every region (.data, RELRO, libc's
 * data), and the pool was recorded and written there. The request is only
 * this creation's: in a destroy's its length is 0.
 */
void rw_pool_made_put(enum rw_pool_field f, uint64_t v)
{
	if (!POOL_REQ(len) || (f != RW_POOL_START && f != RW_POOL_FD))
		rw_die("rare_pool_create", NULL,
		       "a pool's mapping recorded outside a creation");
	table_word_put("rare_pool_create",
		       f == RW_POOL_START ? &rw_table.pool_request.start
					  : &rw_table.pool_request.fd,
		       v);
}

uint64_t rw_pool_made(enum rw_pool_field f)
{
	switch (f) {
	case RW_POOL_START:
		return POOL_REQ(start);
	case RW_POOL_FD:
		return POOL_REQ(fd);
	case RW_POOL_LEN:
		return POOL_REQ(len);
	case RW_POOL_SEALED:
		return POOL_SEAL;
	}
	return 0;
}

/*
 * The descriptor goes into the request before any call, and every system
 * call after takes it from there (inline: nothing of it is in memory). A
 * descriptor that crossed libc's ftruncate() in a register its callee
 * saved could be another of the program's files: that file would be
 * truncated, and the pool's writes go there.
 */
int rw_pool_memfd(unsigned seals)
{
	long fd = rw_sys(SYS_memfd_create, "rarewrite",
			 MFD_CLOEXEC | MFD_ALLOW_SEALING, 0);
	long err;

	if (fd < 0)
		return (int)fd;
	rw_pool_made_put(RW_POOL_FD, (uint64_t)fd);
	err = rw_sys(SYS_ftruncate, (int)POOL_REQ(fd), POOL_REQ(len), 0);
	if (!err)
		err = rw_sys(SYS_fcntl, (int)POOL_REQ(fd), F_ADD_SEALS, seals);
	if (err) {
		rw_sys(SYS_close, (int)POOL_REQ(fd), 0, 0);
		rw_pool_made_put(RW_POOL_FD, (uint64_t)-1);
	}
	return (int)err;
}

/* Abort unless the request in the table is still this call's: pools_lock
 * is a word a store can release, and another thread's creation then puts
 * its own over it midway. */
static inline __attribute__((always_inline)) void
pool_request_mine(const char *call)
{
	if (POOL_REQ(caller) != rw_request_caller())
		rw_die(call, NULL,
		       "another thread's pool request replaced this one while "
		       "it ran (a store released pools_lock?)");
}

/*
 * Store @len bytes from @src at @dst in the table, for pool creation and
 * destruction: like rw_table_store(), but inline, so that @dst, which the
 * caller computes from the table's request right before, stays in a
 * register to the system call. rw_table_store() takes it through
 * rw_owner_check() and rw_vault_store()'s copies, whose callees may save
 * it on the stack: a store there moved a new pool's record over another
 * live pool's (27o). What @src holds can still be changed until the
 * kernel copies it: every caller reads the table back after.
 */
static inline __attribute__((always_inline)) void
table_put(const char *call, void *dst, const void *src, size_t len)
{
	const volatile uint64_t *page = rw_table.owner.token_page;
	long n;

	if (rw_table.vault_fd < 0 || rw_table_open_in_child ||
	    !RW_RAWSYS_INLINE) {
		rw_table_store(dst, src, len);
		return;
	}
	if (page ? *page != rw_table.owner.token
		 : rw_sys(SYS_getpid, 0, 0, 0) != rw_table.owner.pid)
		rw_owner_check(call, dst); /* dies */
	n = rw_sys6(SYS_pwrite64, rw_table.vault_fd, (long)src, (long)len,
		    (long)((uintptr_t)dst - (uintptr_t)&rw_table), 0, 0);
	if (n != (long)len)
		rw_die(call, dst, "cannot write the library's table: %s",
		       n < 0 ? strerror((int)-n) : "short write");
}

/*
 * A new pool's head, read back after its write: the one its region
 * implies, no name, no page handed out, every hint empty and every page
 * record zero, or abort. The head and its segment wait on the stack for
 * the backend, which checks only that the segment lies in the region: a
 * store there moved the head into the object pages or gave it another
 * pool's object pages (27k), or made it longer over the page records.
 */
static void pool_head_verify(const struct rw_region *r)
{
	const struct rare_pool *pool = (const struct rare_pool *)r->start;
	bool ok = rw_pool_head_fixed_ok(r) && !pool->bump;

	for (size_t i = 0; i < sizeof(pool->name); i++)
		ok = ok && !pool->name[i];
	for (unsigned c = 0; c < NR_CLASSES; c++)
		ok = ok && pool->hint[c] == UINT32_MAX;
	if (ok)
		ok = rw_pool_all_zero(pool->meta,
				      pool->nr_pages * sizeof(pool->meta[0]));
	if (!ok)
		rw_die("rare_pool_create", pool,
		       "the pool's head is not the one its region implies (a "
		       "store into the caller's stack?)");
}

/*
 * The new pool's head, for rw_region_create() (pools_lock and
 * registry_lock held): built from the table's record of the slot in the
 * table's request, and written through the public write path, the
 * destination loaded from the table right before the call (the backend's
 * write_one keeps it in registers to the store). A head built on the stack
 * and handed over as a segment went wherever a store moved the segment or
 * the slot (27n: over the section); only its bytes can be changed now,
 * which pool_head_verify() reads back (27k).
 */
static void pool_head_write(void)
{
	const size_t page = RW_RAWSYS_PAGE;
	struct rare_pool head;

	memset(&head, 0, sizeof(head));
	head.magic = POOL_MAGIC;
	head.objects = RW_POOL_SLOT->start + POOL_META_LEN;
	head.nr_pages =
		(RW_POOL_SLOT->start + RW_POOL_SLOT->len - head.objects) / page;
	for (unsigned c = 0; c < NR_CLASSES; c++)
		head.hint[c] = UINT32_MAX;
	rw_write_args("rare_pool_create", (void *)RW_POOL_SLOT->start, &head,
		      sizeof(head), 0);
}

struct rw_region *rw_region_create(size_t len, size_t meta_len,
				   const char *name, bool seal)
{
	long level = level_named(name);
	const struct rw_backend *own; /* POOL_BACKEND, read once per use */
	struct rw_region *r, filled;
	int err;

	if (level < 0) {
		/* "auto", or no backend's name: the lookup sets up auto's
		 * choice, or says there is none. Its answer comes back
		 * through memory, where a store picks another backend (27m
		 * on "auto"): the level is the table's (auto_level()). */
		const struct rw_backend *unused;

		err = rw_backend_lookup(name, &unused);
		if (err) {
			errno = -err;
			return NULL;
		}
		level = auto_level();
	}
	rw_reglock_write(&pools_lock);
	pool_request_put((uint64_t)level | (uint64_t)seal << 8, len, meta_len);
	if (rw_window_depth) {
		rw_reglock_write_unlock(&pools_lock);
		rw_die("rare_pool_create", NULL,
		       "called inside an open window");
	}
	pthread_mutex_lock(&registry_lock);
	/* NULL before the first seal: init's; a pool's own level is set up
	 * on first use. */
	own = POOL_BACKEND;
	err = own ? backend_use(own) : 0;
	if (err)
		goto out;
	r = rw_region_alloc();
	if (!r) {
		err = -ENOMEM;
		goto out;
	}
	/* From here on the slot is the request's (RW_POOL_SLOT): @r would
	 * cross the calls below in a register their callees save (27n). */
	pool_slot_put("rare_pool_create", (uint64_t)(r - rw_table.regions));
	filled = (struct rw_region){.kind = RW_REGION_FREE,
				    .len = POOL_LEN,
				    .backend = POOL_BACKEND,
				    .fd = -1,
				    .seal = POOL_SEAL};
	own = POOL_BACKEND;
	/* init ran, or a library sealed itself */
	if (own && rw_table.backend) {
		err = own->create(&filled);
		filled.protected_ = true;
	} else {
		/* Plain memory until init (or the first rare_write_seal_self())
		 * adopts it, like a section; its start into the request as a
		 * backend's create() puts it (27t). */
		long p = rw_sys6(SYS_mmap, 0, (long)POOL_LEN,
				 PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		err = p < 0 && p > -4096 ? (int)p : 0;
		if (!err)
			rw_pool_made_put(RW_POOL_START, (uint64_t)p);
	}
	if (err)
		goto out;
	created_check(&filled, POOL_BACKEND, POOL_LEN, POOL_SEAL);
	/* The head is written through the public write path below, so its
	 * bookkeeping is open to it until then; raised after. */
	filled.user_start = filled.start;
	slot_freed("rare_pool_create", RW_POOL_SLOT);
	filled.kind = RW_REGION_FREE; /* still free to lookups */
	table_put("rare_pool_create", RW_POOL_SLOT, &filled, sizeof(filled));
	/* The backend picks the code that runs on the region: the record's
	 * copy came through the stack, so it is written again until the
	 * table holds the request's (15g, 27m). */
	while (__atomic_load_n(&RW_POOL_SLOT->backend, __ATOMIC_RELAXED) !=
	       POOL_BACKEND) {
		const struct rw_backend *b = POOL_BACKEND;

		table_put("rare_pool_create", &RW_POOL_SLOT->backend, &b,
			  sizeof(b));
	}
	/* Where the pool is, and its descriptor, are the kernel's, which
	 * create() put into the request from the system calls' registers:
	 * the record's copies came through the stack, where a store moved
	 * the start to memory outside every region (27t). Written from the
	 * request, each from a register, until the record holds them; the
	 * bookkeeping opens at the start. */
	while (RW_POOL_SLOT->start != POOL_REQ(start) ||
	       RW_POOL_SLOT->user_start != POOL_REQ(start)) {
		table_word_put("rare_pool_create",
			       (uint64_t *)&RW_POOL_SLOT->start,
			       POOL_REQ(start));
		table_word_put("rare_pool_create",
			       (uint64_t *)&RW_POOL_SLOT->user_start,
			       POOL_REQ(start));
	}
	while (RW_POOL_SLOT->fd != (int)POOL_REQ(fd)) {
		const int fd = (int)POOL_REQ(fd);

		table_put("rare_pool_create", &RW_POOL_SLOT->fd, &fd,
			  sizeof(fd));
	}
	/* The record as the table holds it, not its stack copy, which
	 * created_check() saw before the copies and system calls of the
	 * fill: the request's length and seal, a range and a descriptor new
	 * to the table, and the slot still free. */
	slot_freed("rare_pool_create", RW_POOL_SLOT);
	if (RW_POOL_SLOT->len != POOL_LEN ||
	    RW_POOL_SLOT->start != POOL_REQ(start) ||
	    RW_POOL_SLOT->fd != (int)POOL_REQ(fd) ||
	    RW_POOL_SLOT->user_start != RW_POOL_SLOT->start ||
	    RW_POOL_SLOT->seal != POOL_SEAL || !record_new(RW_POOL_SLOT))
		rw_die("rare_pool_create", (void *)RW_POOL_SLOT->start,
		       "a new pool's record changed before it was committed (a "
		       "store into the caller's stack?)");
	pool_request_mine("rare_pool_create");
	/* Published (as rw_region_publish(), the slot from the table at each
	 * step): the kind last, then the high-water mark, each read back. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	{
		enum rw_region_kind k = RW_REGION_POOL;
		unsigned nr = rw_table.nr_regions + 1;

		table_put("rare_pool_create", &RW_POOL_SLOT->kind, &k,
			  sizeof(k));
		if (RW_POOL_SLOT == &rw_table.regions[rw_table.nr_regions])
			table_put("rare_pool_create", &rw_table.nr_regions, &nr,
				  sizeof(nr));
	}
	if (RW_POOL_SLOT->kind != RW_REGION_POOL ||
	    RW_POOL_SLOT >= &rw_table.regions[rw_table.nr_regions] ||
	    RW_POOL_SLOT->len != POOL_LEN || RW_POOL_SLOT->seal != POOL_SEAL)
		rw_die("rare_pool_create", (void *)RW_POOL_SLOT->start,
		       "a new pool's record changed while it was published (a "
		       "store into the caller's stack?)");
	/* The head, to the request's slot from registers (27n), then the
	 * bookkeeping closed to the program's writes, then the head read
	 * back: the one the region implies, or abort. */
	pool_head_write();
	{
		uintptr_t u = RW_POOL_SLOT->start + POOL_META_LEN;

		table_put("rare_pool_create", &RW_POOL_SLOT->user_start, &u,
			  sizeof(u));
	}
	if (RW_POOL_SLOT->user_start != RW_POOL_SLOT->start + POOL_META_LEN)
		rw_die("rare_pool_create", (void *)RW_POOL_SLOT->start,
		       "a new pool's bookkeeping was not closed (a store into "
		       "the caller's stack?)");
	pool_head_verify(RW_POOL_SLOT);
out:
	pthread_mutex_unlock(&registry_lock);
	pool_request_mine("rare_pool_create");
	/* What is handed back: the request's slot, with no call until the
	 * caller reads its start. */
	r = err ? NULL : RW_POOL_SLOT;
	rw_reglock_write_unlock(&pools_lock);
	if (err)
		errno = -err;
	return r;
}
#undef POOL_BACKEND

/*
 * The pool at @pool: its slot is found under pools_lock, inline, and put
 * into the table's request from the register it was found in (27o: a slot
 * carried past registry_lock's wait was rewritten to another live pool's,
 * which was destroyed instead). After the wait it must still be a pool's
 * slot, and what destroy uses (the range, the descriptor, the ops table)
 * is read from that slot at each use, never from a copy on the stack.
 */
void rw_region_destroy(const void *pool)
{
	unsigned nr = __atomic_load_n(&rw_table.nr_regions, __ATOMIC_ACQUIRE);
	uint64_t i;

	rw_reglock_write(&pools_lock);
	for (i = 0; i < nr && i < RW_MAX_REGIONS; i++)
		if (__atomic_load_n(&rw_table.regions[i].kind,
				    __ATOMIC_ACQUIRE) == RW_REGION_POOL &&
		    rw_table.regions[i].start == (uintptr_t)pool)
			break;
	if (i == nr || i == RW_MAX_REGIONS) {
		rw_reglock_write_unlock(&pools_lock);
		rw_die("rare_pool_destroy", pool, "not a live rare_pool");
	}
	pool_request_put(0, 0, 0);
	pool_slot_put("rare_pool_destroy", i);
	if (rw_window_depth) {
		rw_reglock_write_unlock(&pools_lock);
		rw_die("rare_pool_destroy", pool,
		       "called inside an open window");
	}
	pthread_mutex_lock(&registry_lock);
	/* A list operation on the pool finishes first: its links are single
	 * writes, each found by address, and one after the destroy would go
	 * to whatever pool is mapped there next (27q). */
	rw_reglock_write(&rw_list_lock);
	if (RW_POOL_SLOT->kind != RW_REGION_POOL ||
	    (RW_POOL_SLOT->protected_ &&
	     rw_backend_index(RW_POOL_SLOT->backend) < 0))
		rw_die("rare_pool_destroy", RW_POOL_SLOT,
		       "not a live pool's record (a store into the caller's "
		       "stack?)");
	pool_request_mine("rare_pool_destroy");
	/* Lookups stop matching first. */
	{
		enum rw_region_kind k = RW_REGION_FREE;

		table_put("rare_pool_destroy", &RW_POOL_SLOT->kind, &k,
			  sizeof(k));
	}
	slot_freed("rare_pool_destroy", RW_POOL_SLOT);
	if (RW_POOL_SLOT->protected_)
		RW_POOL_SLOT->backend->destroy(RW_POOL_SLOT);
	else /* created before init: still plain memory */
		munmap((void *)RW_POOL_SLOT->start, RW_POOL_SLOT->len);
	{
		const struct rw_region none = {.kind = RW_REGION_FREE,
					       .fd = -1};

		table_put("rare_pool_destroy", RW_POOL_SLOT, &none,
			  sizeof(none));
	}
	slot_freed("rare_pool_destroy", RW_POOL_SLOT);
	pool_request_mine("rare_pool_destroy");
	rw_reglock_write_unlock(&rw_list_lock);
	pthread_mutex_unlock(&registry_lock);
	rw_reglock_write_unlock(&pools_lock);
}

/* A section the linker did not page-align: linked without the fragment. */
#define NOT_LINKED                                                             \
	"__wr_rare section is not page-aligned; link with "                    \
	"$(pkg-config --libs rarewrite) (ld.bfd or ld.lld; gold cannot read "  \
	"it)"
static void check_section_aligned(const struct rw_region *r)
{
	if (r->start % rw_page_size || r->len % rw_page_size)
		rw_die("rare_write_init", (void *)r->start, NOT_LINKED);
}

/* The same before the first seal, as an environment error: -ENOEXEC (the
 * program or a library is not laid out as the library needs). */
static int sections_linked(const char *call)
{
	for (unsigned i = 0; i < rw_table.nr_regions && i < RW_MAX_REGIONS;
	     i++) {
		const struct rw_region *r = &rw_table.regions[i];

		if (r->kind == RW_REGION_SECTION &&
		    (r->start % rw_page_size || r->len % rw_page_size)) {
			rw_say(call, "%p: " NOT_LINKED, (void *)r->start);
			return -ENOEXEC;
		}
	}
	return 0;
}

static int adopt_on(struct rw_region *r, const struct rw_backend *b)
{
	check_section_aligned(r);
	r->backend = b;
	return r->backend->adopt(r);
}

static int adopt_section(struct rw_region *r)
{
	return adopt_on(r, rw_table.backend);
}

void rare_write_register_section_(void *start, void *stop)
{
	struct rw_region *r, filled;

	if (!start || start == stop)
		return;
	pthread_mutex_lock(&registry_lock);
	if (rw_region_lookup(start)) {
		pthread_mutex_unlock(&registry_lock);
		return; /* another object file of the same DSO said so */
	}
	r = rw_region_alloc();
	if (!r)
		rw_die("rare_write_init", start, "too many protected regions");
	filled = (struct rw_region){
		.kind = RW_REGION_FREE,
		.start = (uintptr_t)start,
		.len = (size_t)((char *)stop - (char *)start),
		.user_start = (uintptr_t)start,
		.fd = -1,
		.seal = true};
	/* A library loaded after init is sealed as it arrives. */
	if (rw_table.initialised) {
		int err = adopt_section(&filled);

		if (err)
			rw_die("rare_write_init", start,
			       "cannot protect a late-loaded section: %s",
			       strerror(-err));
		filled.protected_ = true;
	}
	rw_region_commit(r, &filled, RW_REGION_SECTION);
	if (rw_table.initialised) {
		rw_section_check_copies(); /* no copy relocation out of it */
		rw_symbolize_prepare();	   /* its symbols for fault reports */
	}
	pthread_mutex_unlock(&registry_lock);
}

/*
 * Run one fork hook of every backend in use, once per distinct hook: the
 * memfd backends share theirs.
 */
#define FOR_EACH_FORK_HOOK(hook)                                               \
	for (unsigned i = 0; i < RW_MAX_BACKENDS && rw_table.used[i]; i++) {   \
		bool seen = false;                                             \
		for (unsigned j = 0; j < i; j++)                               \
			seen |= rw_table.used[j]->hook ==                      \
				rw_table.used[i]->hook;                        \
		if (rw_table.used[i]->hook && !seen)                           \
			rw_table.used[i]->hook();                              \
	}

/*
 * The parent holds its writers off (each backend's prepare hook) until the
 * child has taken its private copies: the child ends the wait by closing
 * its end of a pipe after its hooks ran, or by dying. The pipe and the
 * forking thread's id live in the table: a store to plain memory could
 * otherwise make the parent close the table's own descriptor, or give the
 * child another thread's nested windows (an end that does not close).
 */
static void fork_prepare(void)
{
	int p[2];

	if (views_held)
		rw_die("fork", NULL,
		       "called with a rare_write_map() open on this thread "
		       "on a backend that holds fork() off until unmap: it "
		       "would wait for itself");
	rw_reglock_write(&views_lock);
	rw_reglock_write(&pools_lock);
	pthread_mutex_lock(&registry_lock);
	rw_reglock_write(&maps_lock);
	rw_reglock_write(&rw_list_lock);
	/* A list operation half done would be the child's list for good:
	 * its caller is cleared with its last link (a store that released
	 * list_lock let fork() in before it). */
	if (__atomic_load_n(&rw_table.list_request.caller, __ATOMIC_RELAXED))
		rw_die("fork", NULL,
		       "a list operation is in progress (a store released "
		       "the list lock?)");
	pthread_mutex_lock(&nested_lock);
	FOR_EACH_FORK_HOOK(fork_prepare);
	rw_signal_fork_prepare();
	if (pipe2(p, O_CLOEXEC))
		p[0] = p[1] = -1;
	TABLE_SET(rw_table.fork_tid, this_tid());
	TABLE_SET(rw_table.fork_pipe[0], p[0]);
	TABLE_SET(rw_table.fork_pipe[1], p[1]);
}

static void fork_parent(void)
{
	char c;

	if (rw_table.fork_pipe[1] >= 0) {
		close(rw_table.fork_pipe[1]);
		while (read(rw_table.fork_pipe[0], &c, 1) < 0 && errno == EINTR)
			;
		close(rw_table.fork_pipe[0]);
	}
	TABLE_SET(rw_table.fork_pipe[0], -1);
	TABLE_SET(rw_table.fork_pipe[1], -1);
	rw_signal_fork_parent(); /* the child has copied the signal table */
	FOR_EACH_FORK_HOOK(fork_parent);
	pthread_mutex_unlock(&nested_lock);
	rw_reglock_write_unlock(&rw_list_lock);
	rw_reglock_write_unlock(&maps_lock);
	pthread_mutex_unlock(&registry_lock);
	rw_reglock_write_unlock(&pools_lock);
	rw_reglock_write_unlock(&views_lock);
}

/*
 * Views the child did not inherit (MADV_DONTFORK) leave holes where the
 * next mmap() of any hook could land. Reserve them first; the backends map
 * their private copies over the reservation. Something already there
 * (another fork handler's mapping) is not overwritten: the child dies.
 */
static void reserve_views(void)
{
	struct rw_region *r;

	rw_for_each_region(r) {
		if (!r->protected_ || !r->backend->dontfork_views)
			continue;
		if (mmap((void *)r->start, r->len, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
				 MAP_FIXED_NOREPLACE,
			 -1, 0) != (void *)r->start)
			rw_die("fork", (void *)r->start,
			       "the child has something mapped where protected "
			       "memory was: %s",
			       strerror(errno));
	}
}

/*
 * The child takes a private copy of the table first: until then it shares
 * the parent's, and writes would reach the parent. The copy stays writable
 * (the child has one thread) while the backends' hooks run.
 */
static void fork_child(void)
{
	uint32_t extra = nested_extra(rw_table.fork_tid);

	if (rw_table.vault_fd >= 0) {
		int fd = rw_vault_fork_copy(rw_table.vault_fd, &rw_table,
					    sizeof(rw_table));

		if (fd < 0)
			rw_die("fork", &rw_table,
			       "child cannot copy the region table: %s",
			       strerror(-fd));
		rw_table_open_in_child = true;
		rw_table.vault_fd = fd;
	}
	reserve_views();
	/* Maps a page: after the views' places are held. */
	rw_owner_claim(&rw_table.owner);
	rw_klock_child(); /* before any hook can take one */
	FOR_EACH_FORK_HOOK(fork_child);
	/* Only the forking thread lives on, under a new id. */
	memset(rw_table.nested, 0, sizeof(rw_table.nested));
	rw_table.nr_nested = 0;
	if (extra) {
		rw_table.nested[0] = (struct nested_window){this_tid(), extra};
		rw_table.nr_nested = 1;
	}
	rw_signal_fork_child();
	/* Copies taken: the parent may go on. */
	if (rw_table.fork_pipe[0] >= 0) {
		close(rw_table.fork_pipe[0]);
		close(rw_table.fork_pipe[1]);
	}
	rw_table.fork_pipe[0] = rw_table.fork_pipe[1] = -1;
	if (rw_table_open_in_child) {
		int err = rw_vault_fork_done(&rw_table, sizeof(rw_table));

		if (err)
			rw_die("fork", &rw_table,
			       "child cannot protect the region table: %s",
			       strerror(-err));
		rw_table_open_in_child = false;
	}
	pthread_mutex_init(&nested_lock, NULL);
	__atomic_store_n(&rw_list_lock, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&maps_lock, 0, __ATOMIC_RELAXED);
	pthread_mutex_init(&registry_lock, NULL);
	__atomic_store_n(&pools_lock, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&views_lock, 0, __ATOMIC_RELAXED);
}

/* RAREWRITE_BACKEND names no backend: say which it may name. */
static void say_unknown(const char *why, const char *name)
{
	char list[128] = "auto";
	const struct rw_backend *b;
	size_t n = strlen(list);

	for (unsigned i = 0; (b = rw_backend_at(i)) && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, ", %s",
				      b->name);
	rw_say(why, "unknown backend \"%.32s\" in RAREWRITE_BACKEND (%s)", name,
	       list);
}

/*
 * The backend called @name, set up, with every capability in @need. "auto"
 * (or no name) tries them in the order of preference of the list
 * (backends.c). With @why, failures are also said in one line on stderr,
 * naming @why's call.
 */
static int backend_named(const char *name, unsigned need, const char *why,
			 const struct rw_backend **out)
{
	bool last;
	int err;

	if (!name || !*name || !strcmp(name, "auto")) {
		for (unsigned i = 0; (*out = rw_backend_preferred(i, &last));
		     i++) {
			if (((*out)->caps & need) != need)
				continue;
			err = backend_use(*out);
			if (!err)
				return 0;
			/* Without needs, auto stops at the list's last resort.
			 */
			if (!need && last) {
				if (why)
					rw_say(why, "backend %s (auto): %s",
					       (*out)->name, strerror(-err));
				return err;
			}
		}
		if (why)
			rw_say(why, "no backend on this machine has %s%s%s",
			       need & RARE_WRITE_CAP_BEGIN_END ? "begin_end"
							       : "",
			       need == (RARE_WRITE_CAP_BEGIN_END |
					RARE_WRITE_CAP_THREAD_LOCAL)
				       ? ","
				       : "",
			       need & RARE_WRITE_CAP_THREAD_LOCAL
				       ? "thread_local"
				       : "");
		return -ENOTSUP;
	}
	*out = rw_backend_find(name);
	if (*out) {
		if (((*out)->caps & need) != need) {
			if (why)
				rw_say(why,
				       "backend %s (RAREWRITE_BACKEND) "
				       "has no %s, which the program "
				       "needs (RAREWRITE_NEED, "
				       "rare_write_init_caps())",
				       name,
				       need & ~(*out)->caps &
						       RARE_WRITE_CAP_BEGIN_END
					       ? "begin_end"
					       : "thread_local");
			return -ENOTSUP;
		}
		err = backend_use(*out);
		if (err && why)
			rw_say(why,
			       "backend %s (RAREWRITE_BACKEND) is not "
			       "available on this machine: %s",
			       name, strerror(-err));
		return err;
	}
	if (why)
		say_unknown(why, name);
	return -EINVAL;
}

/*
 * RAREWRITE_BACKEND, through secure_getenv(): a set-user-ID or file
 * capability program (AT_SECURE) ignores it, so whoever starts it cannot
 * pick a weaker backend for it (RAREWRITE_NEED likewise, env.c).
 */
static int choose_backend(unsigned need, const char *call,
			  const struct rw_backend **out)
{
	return backend_named(secure_getenv("RAREWRITE_BACKEND"), need, call,
			     out);
}

int rw_backend_lookup(const char *name, const struct rw_backend **out)
{
	int err;

	if (!name) {
		*out = NULL; /* the process-wide default */
		return 0;
	}
	pthread_mutex_lock(&registry_lock);
	err = backend_named(name, 0, NULL, out);
	pthread_mutex_unlock(&registry_lock);
	return err;
}

/* What an initialised process offers against what the caller needs. */
static int caps_check(unsigned need)
{
	if ((rw_table.backend->caps & need) == need)
		return 0;
	rw_say("rare_write_init_caps",
	       "backend %s, chosen by an earlier init, lacks capabilities %#x",
	       rw_table.backend->name, need & ~rw_table.backend->caps);
	return -ENOTSUP;
}

int rare_write_init(void)
{
	return rare_write_init_caps(0);
}

/* The fork hooks, once: at init or at the first rare_write_seal_self(). */
static int register_atfork(const char *call)
{
	int err;

	if (rw_table.atfork_registered)
		return 0;
	err = rw_fork_setup(); /* fork.c: the fork() the hooks run in */
	if (!err)
		err = rw_klock_setup(); /* klock.c: before anything is written
					 */
	if (!err)
		err = -pthread_atfork(fork_prepare, fork_parent, fork_child);
	if (err)
		rw_say(call, "cannot set up the fork hooks: %s",
		       strerror(-err));
	else
		TABLE_SET(rw_table.atfork_registered, true);
	return err;
}

/*
 * The first seal, by rare_write_seal_self() or init, moves the table into
 * its vault: from then on no store reaches it, and a library's sealed
 * section cannot be redirected through it before the program's init.
 * First, so that a process out of descriptors fails here, before anything
 * is protected. registry_lock held.
 */
/*
 * Before the first seal the table is plain memory: a store could have put
 * a backend of the attacker's in it (whose functions would run from then
 * on, attack 14e) or a region no code of ours made. Nothing is protected
 * yet, so every record must be plain: unprotected, without descriptor,
 * whole pages, on one of the library's backends if any; and the table
 * has no vault yet (a descriptor stored into vault_fd would receive its
 * records, attack 13f). A fork child before init owns its copy.
 */
static void table_check(const char *call)
{
	bool bad = rw_table.vault_fd != -1 ||
		   (rw_table.owner.pid != 0 &&
		    rw_table.owner.pid != (int64_t)getpid()) ||
		   rw_table.nr_regions > RW_MAX_REGIONS ||
		   rw_table.nr_maps > RW_MAX_MAPS ||
		   rw_table.nr_nested > RW_MAX_NESTED || rw_table.initialised ||
		   rw_table.atfork_registered || rw_table.fork_mark ||
		   rw_table.fork_token[0] != -1 ||
		   rw_table.klocks[RW_KLOCK_ADD][0] != -1 ||
		   rw_table.klocks[RW_KLOCK_POOL][0] != -1 ||
		   (rw_table.backend && rw_backend_index(rw_table.backend) < 0);

	for (unsigned i = 0; i < RW_MAX_BACKENDS; i++)
		bad |= rw_table.used[i] &&
		       rw_backend_index(rw_table.used[i]) < 0;
	for (unsigned i = 0; !bad && i < rw_table.nr_regions; i++) {
		const struct rw_region *r = &rw_table.regions[i];

		if (r->kind == RW_REGION_FREE)
			continue;
		/* The usual cause of a misaligned section is the link, not
		 * a store: say how to link (an abort either way). */
		if (r->kind == RW_REGION_SECTION)
			check_section_aligned(r);
		bad = (r->kind != RW_REGION_SECTION &&
		       r->kind != RW_REGION_POOL) ||
		      r->protected_ || r->fd != -1 || r->priv ||
		      r->start % rw_page_size || r->len % rw_page_size ||
		      !r->len || r->start + r->len < r->start ||
		      r->user_start < r->start ||
		      r->user_start > r->start + r->len ||
		      (r->backend && rw_backend_index(r->backend) < 0);
	}
	if (bad)
		rw_die(call, &rw_table,
		       "the region table was changed by a store before it "
		       "was sealed");
}

static int table_seal(const char *call)
{
	int err;

	/* Sealed is what the kernel shows (the memfd mapped read-only over
	 * the table), not what vault_fd says. */
	if (rw_vault_sealed(rw_table.vault_fd, &rw_table, sizeof(rw_table)))
		return 0;
	table_check(call);
	rw_reglock_write(&maps_lock); /* no plain store races the copy */
	rw_owner_claim(&rw_table.owner);
	err = rw_vault_create(&rw_table, sizeof(rw_table), &rw_table.vault_fd);
	rw_reglock_write_unlock(&maps_lock);
	if (err)
		rw_say(call, "cannot protect the region table: %s",
		       strerror(-err));
	return err;
}

#ifndef SYS_mseal
#define SYS_mseal 462 /* Linux 6.10 */
#endif

/*
 * Seal the views of @r as its backend would have at adoption (see
 * protect_regions()): mprotect flips its pages on every write, the
 * backends with memfd views seal those (after MADV_DONTFORK), pkey its
 * tagged pages. Kernels without mseal(2) leave them unsealed.
 */
static void seal_views(const char *call, const struct rw_region *r)
{
	int err = 0;

	if (!r->seal || r->backend->flips_pages)
		return;
	if (r->backend->dontfork_views)
		err = rw_view_seal((void *)r->start, r->len, true);
	else if (syscall(SYS_mseal, r->start, r->len, 0UL) && errno != ENOSYS)
		err = -errno;
	if (err)
		rw_die(call, (void *)r->start,
		       "cannot seal protected memory: %s", strerror(-err));
}

/*
 * Put a region this call protected back to plain memory, contents kept,
 * after a later one failed. The backend releases what it made (its view,
 * descriptor, helper record); plain pages with the contents then take the
 * view's place in one mremap(). A thread reading the region in between
 * would fault: this runs only when init fails.
 */
static void unprotect(const char *call, struct rw_region *r, bool no_level)
{
	struct rw_region f = *r, orig = *r;
	void *tmp = mmap(NULL, f.len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (tmp == MAP_FAILED)
		rw_die(call, (void *)f.start, "cannot undo protection: %s",
		       strerror(errno));
	memcpy(tmp, (void *)f.start, f.len);
	f.seal = false; /* not sealed yet: the backend may unmap the view */
	f.backend->destroy(&f);
	if (mremap(tmp, f.len, f.len, MREMAP_MAYMOVE | MREMAP_FIXED,
		   (void *)f.start) == MAP_FAILED)
		rw_die(call, (void *)f.start, "cannot undo protection: %s",
		       strerror(errno));
	orig.protected_ = false;
	orig.fd = -1;
	orig.priv = 0;
	if (no_level) /* a pool on the process-wide backend, once chosen */
		orig.backend = NULL;
	rw_table_store(r, &orig, sizeof(orig));
}

/*
 * Protect the regions not protected yet: every one (init), or (a seal) the
 * pools and the section @only. Pools go on their own level, else with
 * sections on the process-wide backend. All or nothing: views are sealed
 * only once every region is in, so that a failure (a process out of
 * descriptors) can put back the ones protected so far, say which region
 * failed in one line and return -errno. registry_lock held.
 */
static int protect_regions(const char *call, const struct rw_region *only)
{
	uint64_t done[(RW_MAX_REGIONS + 63) / 64] = {0},
					      no_level[(RW_MAX_REGIONS + 63) /
						       64] = {0};
	struct rw_region *r;
	int err = 0;

	rw_for_each_region(r) {
		struct rw_region f = *r;
		size_t i = (size_t)(r - rw_table.regions);

		if (r->protected_ ||
		    (only && r->kind == RW_REGION_SECTION && r != only))
			continue;
		if (!r->backend)
			no_level[i / 64] |= 1ULL << (i % 64);
		f.seal = false;
		err = adopt_on(&f, r->kind == RW_REGION_POOL && r->backend
					   ? r->backend
					   : rw_table.backend);
		if (err) {
			rw_say(call,
			       "cannot protect the %s at %p (%zu bytes): %s",
			       r->kind == RW_REGION_POOL ? "pool"
							 : "__wr_rare section",
			       (void *)r->start, r->len, strerror(-err));
			break;
		}
		f.protected_ = true;
		f.seal = r->seal;
		rw_table_store(r, &f, sizeof(f));
		done[i / 64] |= 1ULL << (i % 64);
	}
	for (size_t i = 0; i < RW_MAX_REGIONS; i++) {
		if (!(done[i / 64] >> (i % 64) & 1))
			continue;
		if (err)
			unprotect(call, &rw_table.regions[i],
				  no_level[i / 64] >> (i % 64) & 1);
		else
			seal_views(call, &rw_table.regions[i]);
	}
	return err;
}

/*
 * A shared library seals its own section before the program's init. The
 * first seal decides what init would: the table goes into its vault, the
 * backend comes from the environment (RAREWRITE_BACKEND and RAREWRITE_NEED,
 * as for init, which then keeps it), and every pool is protected from now
 * on. Other sections stay plain until rare_write_init().
 */
int rare_write_seal_section_(void *start, void *stop)
{
	const struct rw_backend *b = NULL;
	struct rw_region *r;
	unsigned need = 0;
	int err;

	if (!start || start == stop)
		return 0; /* this object has no __wr_rare data */
	if (rw_window_depth)
		rw_die("rare_write_seal_self", start,
		       "called inside an open window");
	pthread_mutex_lock(&registry_lock);
	r = rw_region_lookup(start);
	if (!r || r->kind != RW_REGION_SECTION ||
	    r->start != (uintptr_t)start) {
		pthread_mutex_unlock(&registry_lock);
		rw_die("rare_write_seal_self", start,
		       "not a registered __wr_rare section");
	}
	err = 0;
	if (r->protected_)
		goto out; /* init, or an earlier call, sealed it */
	if (rw_table.preinit_windows)
		rw_die("rare_write_seal_self", start,
		       "called while a thread has a window open");
	err = sections_linked("rare_write_seal_self");
	if (!err)
		err = table_seal("rare_write_seal_self");
	if (!err)
		err = rw_signal_seal("rare_write_seal_self");
	if (err || rw_table.backend)
		goto adopt;
	err = rw_env_need(&need);
	if (!err)
		err = choose_backend(need, "rare_write_seal_self", &b);
	if (!err)
		err = register_atfork("rare_write_seal_self");
	if (err)
		goto out;
	TABLE_SET(rw_table.backend, b); /* init keeps it */
adopt:
	if (err)
		goto out;
	rw_section_check_copies(); /* its variables are still inside */
	err = protect_regions("rare_write_seal_self", r);
	if (err) {
		if (b) /* the first seal: init may still choose */
			TABLE_SET(rw_table.backend, NULL);
		goto out;
	}
	rw_signal_activate(); /* report stray stores into it */
out:
	pthread_mutex_unlock(&registry_lock);
	return err;
}

int rare_write_init_caps(unsigned need_caps)
{
	const struct rw_backend *b = NULL;
	unsigned need = need_caps;
	int err = rw_env_need(&need);

	if (err)
		return err;
	if (need & ~(RARE_WRITE_CAP_BEGIN_END | RARE_WRITE_CAP_THREAD_LOCAL)) {
		rw_say("rare_write_init_caps", "unknown capability bits %#x",
		       need);
		return -EINVAL;
	}
	if (rw_initialised())
		return caps_check(need);
	if (rw_window_depth)
		rw_die("rare_write_init", NULL, "called inside an open window");
	pthread_mutex_lock(&registry_lock);
	if (rw_table.initialised) {
		pthread_mutex_unlock(&registry_lock);
		return caps_check(need);
	}
	if (rw_table.preinit_windows)
		rw_die("rare_write_init", NULL,
		       "called while another thread has a window open");
	err = sections_linked("rare_write_init");
	if (!err)
		err = table_seal("rare_write_init");
	if (!err)
		err = rw_signal_seal("rare_write_init");
	if (err)
		goto out;
	if (rw_table.backend) {
		/* A library sealed itself first, on this backend. */
		if ((rw_table.backend->caps & need) != need) {
			rw_say("rare_write_init",
			       "backend %s, chosen when a library sealed "
			       "itself (rare_write_seal_self()), lacks "
			       "capabilities %#x; name them in RAREWRITE_NEED "
			       "too",
			       rw_table.backend->name,
			       need & ~rw_table.backend->caps);
			err = -ENOTSUP;
			goto out;
		}
	} else {
		err = choose_backend(need, "rare_write_init", &b);
		if (err)
			goto out;
	}
	err = register_atfork("rare_write_init");
	if (err)
		goto out;
	rw_section_check_copies(); /* every section variable is still inside */
	if (b)
		TABLE_SET(rw_table.backend, b);
	/* A map opened on plain memory and unmapped after init would make
	 * the backend release a view it never handed out, as a window opened
	 * before init would close one it never opened: refuse both. No map
	 * opens until init is done (maps_lock). */
	rw_reglock_write(&maps_lock);
	err = maps_open() ? -EBUSY : protect_regions("rare_write_init", NULL);
	if (!err) {
		__atomic_thread_fence(__ATOMIC_RELEASE);
		TABLE_SET(rw_table.initialised, true);
	} else if (b) {
		TABLE_SET(rw_table.backend, NULL);
	}
	rw_reglock_write_unlock(&maps_lock);
	if (err == -EBUSY)
		rw_die("rare_write_init", NULL,
		       "called while a rare_write_map() is open");
	if (!err)
		rw_signal_activate(); /* report stray stores from now on */
out:
	pthread_mutex_unlock(&registry_lock);
	return err;
}

const char *rare_write_backend(void)
{
	const struct rw_backend *b =
		__atomic_load_n(&rw_table.backend, __ATOMIC_ACQUIRE);

	/* From the first seal on (init, or a library's own). */
	return b ? b->name : "none";
}

unsigned rare_write_caps(void)
{
	return rw_initialised() ? rw_table.backend->caps : 0;
}
