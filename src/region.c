// SPDX-License-Identifier: MIT
/*
 * region.c - the core's table: the protected regions, the backends in use
 * and their words, open maps and nested windows (table.h), and the lookups
 * every write starts with.
 *
 * The table sits in pages that are read-only from the first seal on
 * (vault.c), so a stray or malicious store cannot point a later legitimate
 * write somewhere else. Below the core's dispatch (core.c) and above the
 * leaves (say.c, vault.c, backends.c): it calls neither core.c nor a
 * backend.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rarewrite.h"
#include "internal.h"
#include "rawsys.h"
#include "table.h"

struct rw_table rw_table = {.vault_fd = -1,
			    .fork_pipe = {-1, -1},
			    .fork_token = {-1, -1},
			    .fork_wait = {-1, -1},
			    .klocks = {[0 ... RW_NR_KLOCKS - 1] = {-1, -1}}};

bool rw_initialised(void)
{
	return __atomic_load_n(&rw_table.initialised, __ATOMIC_ACQUIRE);
}

bool rw_table_open_in_child;

/*
 * A child made by a raw fork() (no fork handler ran) shares the parent's
 * table memfd and memfd-backed views: a record it committed would redirect
 * the parent's later writes (attack 14c), a write through the API would land
 * in the parent's data. The table says who owns it (owner.c).
 */
void rw_owner_check(const char *call, const void *addr)
{
	if (!rw_owner_is_me(&rw_table.owner))
		rw_die(call, addr,
		       "called in a child made by a raw fork() (no fork "
		       "handlers ran): it shares the parent's protected "
		       "memory and must not write it");
}

/*
 * The owner is checked inline, as core.c's table_put() does: @dst crossed
 * rw_owner_check()'s calls in a register it saved on the stack (its
 * getpid() a system call), where a store moved the table's write to
 * another field of the table. rw_owner_check() is called only to die.
 */
void rw_table_store(void *dst, const void *src, size_t len)
{
	const volatile uint64_t *page = rw_table.owner.token_page;

	if (rw_table.vault_fd < 0 || rw_table_open_in_child) {
		memcpy(dst, src, len);
		return;
	}
	if (page ? *page != rw_table.owner.token
		 : rw_sys(SYS_getpid, 0, 0, 0) != rw_table.owner.pid)
		rw_owner_check("rare_write", dst);
	rw_vault_store(rw_table.vault_fd, &rw_table, dst, src, len);
}

_Static_assert(__builtin_offsetof(struct rw_table, backend_words) == 0,
	       "internal.h's rw_backend_word() reads the table's first member");

void rw_backend_word_store(enum rw_backend_id id, unsigned i, uint64_t v)
{
	if ((unsigned)id >= RW_NR_BACKENDS || i >= RW_BACKEND_WORDS)
		rw_die("rare_write", NULL, "no such backend word %u.%u",
		       (unsigned)id, i);
	TABLE_SET(rw_table.backend_words.word[id][i], v);
}

struct rw_region *rw_region_next(struct rw_region *prev)
{
	struct rw_region *r = prev ? prev + 1 : rw_table.regions;
	unsigned nr = __atomic_load_n(&rw_table.nr_regions, __ATOMIC_ACQUIRE);

	for (; r < rw_table.regions + nr; r++)
		if (__atomic_load_n(&r->kind, __ATOMIC_ACQUIRE) !=
		    RW_REGION_FREE)
			return r;
	return NULL;
}

/*
 * rw_region_destroy() (core.c) puts a destroy's request into the table
 * (level, length and metadata length 0: a creation's length is never 0)
 * and the slot it frees, then marks the slot free; its record keeps the
 * range, the backend and the backend's word until the backend's destroy()
 * has returned, when the record is cleared. Every one of those is a vault
 * store, so the answer is the library's, never a store's. Loaded once each:
 * the caller may be another process reading the same memfd (the process
 * backend's helper) while the program writes it.
 */
const struct rw_region *rw_region_dying(void)
{
	uint64_t slot =
		__atomic_load_n(&rw_table.pool_request.slot, __ATOMIC_ACQUIRE);
	const struct rw_region *r;

	if (__atomic_load_n(&rw_table.pool_request.len, __ATOMIC_ACQUIRE) ||
	    slot >= RW_MAX_REGIONS)
		return NULL;
	r = &rw_table.regions[slot];
	if (__atomic_load_n(&r->kind, __ATOMIC_ACQUIRE) != RW_REGION_FREE ||
	    !__atomic_load_n(&r->protected_, __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&r->start, __ATOMIC_ACQUIRE))
		return NULL;
	return r;
}

/*
 * rw_region_create() (core.c) puts a creation's request (its length never
 * 0) and slot into the table, fills the slot, publishes it as a pool with
 * user_start at its start, writes the head, and only then raises
 * user_start past the bookkeeping: between the publication and the raise
 * the head is the one write the pool's start may take.
 */
const struct rw_region *rw_region_opening(size_t *meta_len)
{
	uint64_t slot =
		__atomic_load_n(&rw_table.pool_request.slot, __ATOMIC_ACQUIRE);
	uint64_t len =
		__atomic_load_n(&rw_table.pool_request.len, __ATOMIC_ACQUIRE);
	const struct rw_region *r;
	uintptr_t start;

	if (!len || slot >= RW_MAX_REGIONS)
		return NULL;
	r = &rw_table.regions[slot];
	start = __atomic_load_n(&r->start, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&r->kind, __ATOMIC_ACQUIRE) != RW_REGION_POOL ||
	    !__atomic_load_n(&r->protected_, __ATOMIC_ACQUIRE) || !start ||
	    __atomic_load_n(&r->user_start, __ATOMIC_ACQUIRE) != start ||
	    __atomic_load_n(&r->len, __ATOMIC_ACQUIRE) != len)
		return NULL;
	*meta_len = (size_t)__atomic_load_n(&rw_table.pool_request.meta_len,
					    __ATOMIC_ACQUIRE);
	return r;
}

struct rw_region *rw_region_lookup(const void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	struct rw_region *r;

	rw_for_each_region(r)
		if (a >= r->start && a - r->start < r->len)
			return r;
	return NULL;
}

struct rw_region *rw_region_of(const char *call, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	struct rw_region *r = rw_region_lookup(addr);

	if (!r)
		rw_die(call, addr, "%zu bytes outside protected memory", len);
	if (a < r->user_start)
		rw_die(call, addr, "write to library-private pool bookkeeping");
	if (len > r->start + r->len - a)
		rw_die(call, addr,
		       "%zu bytes cross the end of protected region %p+%zu",
		       len, (void *)r->start, r->len);
	return r;
}

/*
 * The region of segment @s, re-derived right before it is applied. A
 * segment lives in the caller's stack frame, which another thread's store
 * can rewrite after rw_region_of() validated it: its region must still be
 * a live slot of the table (never a fake one in plain memory, whose
 * backend would pick the code that runs, attack 14d), on one of the
 * library's backends, and hold dst and len. Within those bounds a racing
 * store can still move dst to other bytes of the same region, as any
 * argument of rare_write() (README, "What is open").
 */
const struct rw_region *rw_seg_region(const struct rw_seg *s)
{
	const struct rw_region *r =
		__atomic_load_n(&s->region, __ATOMIC_RELAXED);
	uintptr_t dst = (uintptr_t)__atomic_load_n(&s->dst, __ATOMIC_RELAXED);
	size_t len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
	uintptr_t at = (uintptr_t)r - (uintptr_t)rw_table.regions;

	if (at >= sizeof(rw_table.regions) || at % sizeof(*r) ||
	    __atomic_load_n(&r->kind, __ATOMIC_ACQUIRE) == RW_REGION_FREE ||
	    (r->backend ? rw_backend_index(r->backend) < 0 : r->protected_) ||
	    dst < r->start || len > r->len || dst - r->start > r->len - len)
		rw_die("rare_write", (void *)dst,
		       "a validated write changed before it was applied "
		       "(a store into the caller's stack?)");
	return r;
}

struct rw_region *rw_region_alloc(void)
{
	for (unsigned i = 0; i < rw_table.nr_regions; i++)
		if (rw_table.regions[i].kind == RW_REGION_FREE)
			return &rw_table.regions[i];
	if (rw_table.nr_regions == RW_MAX_REGIONS)
		return NULL;
	return &rw_table.regions[rw_table.nr_regions];
}

bool rw_backends_fault(void *siginfo, void *ucontext)
{
	for (unsigned i = 0; i < RW_MAX_BACKENDS && rw_table.used[i]; i++)
		if (rw_table.used[i]->fault &&
		    rw_table.used[i]->fault(siginfo, ucontext))
			return true;
	return false;
}

void rw_backends_signal_enter(void *ucontext)
{
	for (unsigned i = 0; i < RW_MAX_BACKENDS && rw_table.used[i]; i++)
		if (rw_table.used[i]->signal_enter)
			rw_table.used[i]->signal_enter(ucontext);
}

void rw_backends_signal_exit(void *ucontext)
{
	for (unsigned i = 0; i < RW_MAX_BACKENDS && rw_table.used[i]; i++)
		if (rw_table.used[i]->signal_exit)
			rw_table.used[i]->signal_exit(ucontext);
}

void rw_backends_cs_fault(void)
{
	for (unsigned i = 0; i < RW_MAX_BACKENDS && rw_table.used[i]; i++)
		if (rw_table.used[i]->cs_fault)
			rw_table.used[i]->cs_fault();
}

bool rw_backends_thread_writable(void)
{
	for (unsigned i = 0; i < RW_MAX_BACKENDS && rw_table.used[i]; i++)
		if (rw_table.used[i]->thread_writable &&
		    rw_table.used[i]->thread_writable())
			return true;
	return false;
}

bool rw_backends_wrap_signals(void)
{
	for (unsigned i = 0; i < RW_MAX_BACKENDS && rw_table.used[i]; i++)
		if (rw_table.used[i]->signal_enter)
			return true;
	return false;
}

/*
 * Fill slot @r with @filled and publish it to lock-free lookups: the kind
 * goes last, in a store of its own, so a reader never matches a
 * half-written region. registry_lock held.
 */
void rw_region_fill(struct rw_region *r, const struct rw_region *filled)
{
	struct rw_region f = *filled;

	f.kind = RW_REGION_FREE;
	rw_table_store(r, &f, sizeof(f));
}

void rw_region_publish(struct rw_region *r, enum rw_region_kind kind)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	TABLE_SET(r->kind, kind);
	if (r == &rw_table.regions[rw_table.nr_regions])
		TABLE_SET(rw_table.nr_regions, rw_table.nr_regions + 1);
}

void rw_region_commit(struct rw_region *r, const struct rw_region *filled,
		      enum rw_region_kind kind)
{
	rw_region_fill(r, filled);
	rw_region_publish(r, kind);
}

int32_t rw_fork_tid(void)
{
	return rw_table.fork_tid;
}
