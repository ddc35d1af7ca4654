/* SPDX-License-Identifier: MIT */
/*
 * table.h - the core's protected table, shared by region.c (which owns it,
 * stores into it and looks regions up) and core.c (init, windows, maps,
 * fork). Not for the backends: they see regions through internal.h.
 */
#ifndef RAREWRITE_TABLE_H
#define RAREWRITE_TABLE_H

#include "internal.h"

#define RW_MAX_REGIONS 255
#define RW_MAX_MAPS 1024
#define RW_MAX_NESTED 256

/* A map open for rare_write_unmap(): token 0 marks a free slot. @backend:
 * the view came from the region's backend (its unmap releases it), not the
 * address itself (a region not yet protected when it was opened). */
struct open_map {
	uintptr_t start, end, view;
	unsigned long token;
	uint64_t backend;
};

/* A thread nested inside its own begin/end window: @extra begins beyond
 * the outermost. tid 0 marks a free slot. */
struct nested_window {
	int32_t tid;
	uint32_t extra;
};

/*
 * Who owns the table (owner.c): the owner's private page at @token_page,
 * read-only, sealed and MADV_WIPEONFORK, holds @token, which every child
 * reads as 0. @token_page NULL (no MADV_WIPEONFORK): @pid against getpid().
 */
struct rw_owner {
	int64_t pid;
	const uint64_t *token_page;
	uint64_t token;
};

/*
 * Everything here is read-only once init has succeeded, and from then on
 * written only with pwrite() into the memfd behind it (vault.c): no store,
 * from this thread or any other, window or not, can reach it. Aligning the
 * type (not just the object) pads it to whole pages, so the mapping over
 * it cannot reach a neighbour. Fields written under different locks never
 * share an 8-byte word (vault.c widens stores to words).
 */
struct rw_table {
	/* Words a backend keeps out of reach of stores (rw_backend_word()),
	 * by its slot in backends.c's list (enum rw_backend_id); written
	 * with registry_lock held or in the fork child. First: internal.h
	 * addresses them without this type. */
	struct rw_backend_words backend_words;
	/* registry_lock */
	bool initialised;
	int vault_fd; /* the memfd behind this table, once sealed */
	const struct rw_backend *backend; /* the process-wide default */
	const struct rw_backend *used[RW_MAX_BACKENDS]; /* set up so far */
	unsigned nr_regions;				/* high-water mark */
	unsigned preinit_windows; /* begin/end windows opened before init */
	bool atfork_registered;	  /* the fork hooks are in place */
	int32_t fork_tid; /* the forking thread, whose nested windows the child
			     keeps */
	int fork_pipe[2]; /* the fork handshake (fork_parent) */
	/* fork.c: a pipe holding one byte, the token a fork() takes, so that
	 * one fork at a time is marked (a lock no store can release); and
	 * the mark, pid << 32 | tid of the thread inside fork(), 0: none. */
	int fork_token[2];
	uint64_t fork_mark;
	int fork_wait[2]; /* the parent waits for the child's fork() to return
			   */
	/* klock.c: pipes holding one byte each, locks no store can release
	 * (rw_klock_take()); -1 before the first seal. */
	int klocks[RW_NR_KLOCKS][2];
	/* The process that owns this table (claimed at the first seal, and
	 * by the child in fork_child): a child made by a raw fork(), which
	 * ran no fork handler, still shares it and must not write it
	 * (attack 14c). */
	struct rw_owner owner;
	struct rw_region regions[RW_MAX_REGIONS];
	/* pools_lock (core.c): the rare_pool_create() in progress, written
	 * first from the registers its arguments came in (pool_request_put())
	 * and read here at every later step: @level, the slot + 1 of the
	 * pool's own backend (0: the process-wide default) | seal << 8;
	 * @len and @meta_len; @caller, the call's stack pointer (27m); @slot,
	 * the index of the region slot the call fills or frees (27n, 27o),
	 * written from the register it was found in; @start and @fd, the
	 * new pool's mapping and descriptor (-1: none), written by the
	 * backend's create() from the register the system call returned them
	 * in (rw_pool_made_put(), 27t), 0 and -1 until then. */
	struct {
		uint64_t level, len, meta_len, caller, start, fd, slot;
	} pool_request;
	/* maps_lock */
	uint64_t nr_maps; /* high-water mark of maps[] */
	/* The address and length of the rare_write_map() in progress, or
	 * the slot index and token of the rare_write_unmap() in progress,
	 * written first (core.c, map_request_put()): what the call uses
	 * from then on, where no store reaches it (the scribbler, 15e).
	 * @caller: the stack pointer of the call that put it, checked before
	 * the call returns: a maps_lock word released by a store let another
	 * thread's request replace it midway (26c). @view: the view the
	 * backend's map() handed back, put from the register it came back in
	 * (map_view_put()), 0 until then: the record and the handle take it
	 * from here, where a store cannot move the view unmap releases. */
	struct {
		uint64_t addr, len, caller, view;
	} map_request;
	/* The nodes of the list operation in progress (list.c, list_lock
	 * held), put first, from the registers the call's arguments came in
	 * (rw_table_put4()): its checks and every link it writes take them
	 * from here, its sources too, where no store reaches them (27x).
	 * @caller as in map_request; 0 once the operation is done, which
	 * fork() checks (a store that releases list_lock must not let a
	 * child copy a list half linked). */
	struct {
		uint64_t entry, prev, next, caller;
	} list_request;
	/* The change of the signal table in progress (signal.c,
	 * signal_lock held): the action sigaction() records (its handler,
	 * the kernel's 64 signals of its mask, and its flags with the signal
	 * number above them), put first from the registers the caller's
	 * action was read into (rw_table_put4()); every store into the
	 * signal table and the action given to the kernel are made from it
	 * (28b). @caller as in map_request. */
	struct {
		uint64_t caller, handler, mask, sig_flags;
	} signal_request;
	struct open_map maps[RW_MAX_MAPS];
	/* nested_lock */
	uint64_t nr_nested; /* slots of nested[] in use */
	struct nested_window nested[RW_MAX_NESTED];
} __attribute__((aligned(4096)));

RW_HIDDEN extern struct rw_table rw_table;
/* Set in the single-threaded fork child while its private copy of the
 * table is mapped writable. */
RW_HIDDEN extern bool rw_table_open_in_child;
/* core.c: held by a list operation (list.c) from its request to its last
 * link, and by fork(). A lock word (reglock.h). */
RW_HIDDEN extern uint32_t rw_list_lock;

/* The region slot of the pool creation or destruction in progress
 * (pools_lock held): from the table's request at each use, never a
 * pointer a callee may have saved on the stack. */
#define RW_POOL_SLOT                                                           \
	(&rw_table.regions[__atomic_load_n(&rw_table.pool_request.slot,        \
					   __ATOMIC_RELAXED) %                 \
			   RW_MAX_REGIONS])

/* Store into the table: plainly before it is sealed (init, or the fork
 * child's private copy), else through its memfd. */
RW_HIDDEN void rw_table_store(void *dst, const void *src, size_t len);
#define TABLE_SET(field, val)                                                  \
	do {                                                                   \
		__typeof__(field) v_ = (val);                                  \
		rw_table_store(&(field), &v_, sizeof(v_));                     \
	} while (0)
/* Abort naming @call in a child made by a raw fork(), which shares the
 * parent's table and memfd-backed views. */
RW_HIDDEN void rw_owner_check(const char *call, const void *addr);
/* owner.c: make the calling process @o's owner (@o writable by stores:
 * the table before its seal, or the fork child's copy). */
RW_HIDDEN void rw_owner_claim(struct rw_owner *o);
/* owner.c: whether the calling process owns @o; no system call where the
 * kernel has MADV_WIPEONFORK. */
RW_HIDDEN bool rw_owner_is_me(const struct rw_owner *o);
/* A free region slot, or NULL; registry_lock held. */
RW_HIDDEN struct rw_region *rw_region_alloc(void);
/* Fill slot @r with @filled and publish it as @kind; registry_lock held. */
RW_HIDDEN void rw_region_commit(struct rw_region *r,
				const struct rw_region *filled,
				enum rw_region_kind kind);
/* The two halves of it: fill the slot (still free to lookups), then
 * publish it as @kind. */
RW_HIDDEN void rw_region_fill(struct rw_region *r,
			      const struct rw_region *filled);
RW_HIDDEN void rw_region_publish(struct rw_region *r, enum rw_region_kind kind);

/* klock.c: the pipes, at the first seal (registry_lock held); -errno. */
RW_HIDDEN int rw_klock_setup(void);
/* klock.c: the fork child's own pipes (its table copy writable). */
RW_HIDDEN void rw_klock_child(void);

/* fork.c: abort naming @call if this thread is inside fork(), or in the
 * child of a fork still running its handlers (rw_table.fork_mark set). */
RW_HIDDEN void rw_fork_refuse(const char *call);
/* The fork token, at the first seal (registry_lock held); -errno. */
RW_HIDDEN int rw_fork_setup(void);

#endif /* RAREWRITE_TABLE_H */
