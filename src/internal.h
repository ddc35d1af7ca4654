/* SPDX-License-Identifier: MIT */
/*
 * internal.h - what the backend-independent core and the backends share.
 *
 * The core (core.c) owns the region table, validates every write against it,
 * counts windows per thread and dispatches to the backend of the region. A
 * backend (backend/<name>.c) knows how to make a region read-only and how to
 * write it anyway; it sees regions and already validated segments, nothing
 * of the public API.
 */
#ifndef RAREWRITE_INTERNAL_H
#define RAREWRITE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RW_HIDDEN __attribute__((visibility("hidden")))

enum rw_region_kind {
	RW_REGION_FREE = 0,
	RW_REGION_SECTION, /* a __wr_rare section of the program or a DSO */
	RW_REGION_POOL,	   /* memory created for a rare_pool */
};

/*
 * One protected range of whole pages. The table of regions lives in pages
 * the core keeps read-only, so an arbitrary-write bug cannot redirect a
 * legitimate write by editing it; backends may change their fields only from
 * the hooks below, which the core calls with the table writable.
 */
struct rw_region {
	enum rw_region_kind kind;
	bool protected_; /* sealed by its backend (false before init) */
	bool seal;	 /* mseal() its views (sections; RARE_POOL_SEAL) */
	uintptr_t start; /* page aligned */
	size_t len;	 /* whole pages */
	/* Caller writes must fall in [user_start, start + len); the pool's
	 * bookkeeping below user_start is written by the library only. */
	uintptr_t user_start;
	const struct rw_backend *backend;
	int fd;		/* memfd behind the region, or -1 */
	uintptr_t priv; /* backend-private word */
};

/* One validated write: @len bytes from @src (or of byte @fill when @src is
 * NULL) to @dst, which lies wholly inside @region. */
struct rw_seg {
	struct rw_region *region;
	void *dst;
	const void *src;
	size_t len;
	int fill;
};

struct rw_backend {
	const char *name;
	unsigned caps; /* RARE_WRITE_CAP_* */
	/* Views are MADV_DONTFORK: in the fork child the core reserves their
	 * place before any hook runs, and fork_child maps over it. */
	bool dontfork_views;
	/* Changes its pages' protection on every write, so its views cannot
	 * be mseal()ed (mprotect). */
	bool flips_pages;
	/* map's view is the address itself (mprotect, pkey): the core takes
	 * it from its record of the request, not from map's return. */
	bool map_in_place;
	/* A view map() hands out must be gone before fork() copies the
	 * regions (shadow's alias is a writable mapping of the memfd): the
	 * core holds fork off from map to unmap (core.c, views_lock). */
	bool fork_waits_for_views;

	/* Probe the machine and set up process-wide state: 0 or -errno. */
	int (*setup)(void);
	/* Protect existing memory (a section): contents and address kept. */
	int (*adopt)(struct rw_region *r);
	/*
	 * Create r->len bytes of zeroed protected memory: 0 or -errno. The
	 * new mapping's start and descriptor go to the core's table from
	 * the register the system call returned them in, before any
	 * function call (rw_pool_made_put()), and every later use takes
	 * them, the length and the seal from there (rw_pool_made()), never
	 * from @r, which sits in writable memory (27t); @r->priv is the
	 * backend's to set.
	 */
	int (*create)(struct rw_region *r);
	/* Release what create() made. */
	void (*destroy)(struct rw_region *r);

	/* Apply one segment (a pool's bookkeeping, a write before init or
	 * without write_one): read from the caller's memory once. Never an
	 * array: a loop's cursor crosses the backend's system calls. */
	void (*write)(const struct rw_seg *seg);
	/* Optional: one write of the public API (@src NULL: @len bytes of
	 * @fill) into @r, the table's region the core found for @dst (never
	 * a copy in memory). Takes the backend's locks first, then checks
	 * the arguments again (rw_region_holds(), or rw_seg_make() on a path
	 * that calls functions) and applies them with no lock wait in
	 * between: a segment built before the wait sits on the stack, where
	 * another thread can move it (scribbler 15a). Called as the core's
	 * tail call, every argument in a register (rawsys.h). */
	void (*write_one)(const struct rw_region *r, const char *call,
			  void *dst, const void *src, size_t len, int fill);

	/* Open/close the calling thread's window (only with BEGIN_END). The
	 * core calls them on the outermost begin/end only. */
	void (*begin)(void);
	void (*end)(void);

	/* A writable view of [addr, addr + len) inside @r, and its release,
	 * which publishes what was written through the view. */
	void *(*map)(struct rw_region *r, void *addr, size_t len);
	void (*unmap)(struct rw_region *r, void *view, void *addr, size_t len);

	/* fork(): prepare runs in the parent before the fork, parent after
	 * it, child in the single-threaded child with the table writable;
	 * each is optional. */
	void (*fork_prepare)(void);
	void (*fork_parent)(void);
	void (*fork_child)(void);

	/* Signals (signal.c), all optional and async-signal-safe. fault:
	 * a SIGSEGV the backend repairs itself (pkey: a read by a thread or
	 * handler whose PKRU denies it); true when the access may be
	 * retried. signal_enter: runs first in every handler the program
	 * installed: it suspends the calling thread's windows and maps (the
	 * handler holds none of them) and gives it read (never write)
	 * access to protected data. signal_exit: runs after the program's
	 * handler returned, resumes what signal_enter suspended and makes
	 * the frame's saved state (pkey: PKRU) what the backend's own record
	 * says the interrupted context held. cs_fault: a synchronous fault
	 * hit the library's own code inside a critical section (a bad
	 * source pointer of rare_write_memcpy): close what the section
	 * opened and release what it holds, the section will not resume.
	 * thread_writable: a thread started now by the calling thread would
	 * inherit write access (pkey: PKRU write-enables a key of ours);
	 * NULL where threads inherit nothing. */
	bool (*fault)(void *siginfo, void *ucontext);
	void (*signal_enter)(void *ucontext);
	void (*signal_exit)(void *ucontext);
	void (*cs_fault)(void);
	bool (*thread_writable)(void);
};

/*
 * Each backend's slot in backends.c's list, known when it is compiled: the
 * words below are addressed by it, never by an ops pointer, which a callee
 * may save on the stack where another thread's store swaps it for another
 * backend's (the process backend then read mprotect's words: scribbler
 * 15d).
 */
enum rw_backend_id {
	RW_BACKEND_PKEY,
	RW_BACKEND_PWRITE,
	RW_BACKEND_SHADOW,
	RW_BACKEND_MPROTECT,
	RW_BACKEND_PROCESS,
	RW_NR_BACKENDS
};

/*
 * backends.c: the list of backends (one file each under backend/), the one
 * place that names them. @i counts in the manual's order; @rank in auto's
 * order of preference, and *@last says auto without needs stops there.
 */
#define RW_MAX_BACKENDS 8 /* the core's per-backend slots */
RW_HIDDEN const struct rw_backend *rw_backend_at(unsigned i);
RW_HIDDEN const struct rw_backend *rw_backend_preferred(unsigned rank,
							bool *last);
/* @b's place in the list (its slot in the core's table), or -1 when it is
 * none of the library's. */
RW_HIDDEN int rw_backend_index(const struct rw_backend *b);
/*
 * Whether @b is backend @id of the list, by its slot: what a backend
 * compares a region's ops pointer with, not its own ops table's address,
 * which a compiler keeps in a callee-saved register across calls (a
 * callee saves it on the stack, where another thread swaps it). A macro,
 * as rw_seg_make() below.
 */
#define rw_backend_is(b, id) (rw_backend_index(b) == (int)(id))
/* The backend called @name, or NULL. */
RW_HIDDEN const struct rw_backend *rw_backend_find(const char *name);

/*
 * The page size: the C library's copy (getpagesize() reads its read-only,
 * RELRO data), not a variable of ours. A writable one would let a store
 * stretch mprotect's flips, shadow's aliases and pool addresses past their
 * regions (the inventory, tests/inventory.txt).
 */
#define rw_page_size ((size_t)getpagesize())
int getpagesize(void);

/* core.c */
RW_HIDDEN __attribute__((noreturn, format(printf, 3, 4))) void
rw_die(const char *call, const void *addr, const char *fmt, ...);
/* Iterate the live regions (all backends); safe while the table is stable. */
RW_HIDDEN struct rw_region *rw_region_next(struct rw_region *prev);
#define rw_for_each_region(r)                                                  \
	for ((r) = rw_region_next(NULL); (r); (r) = rw_region_next(r))
/*
 * The record of the pool whose rare_pool_destroy() is in progress, as the
 * table says: the request a destroy's (length 0), its slot marked free for
 * lookups and still holding the protected range; else NULL. Loads only: the
 * process backend's helper, which shares the table's mapping, calls it.
 */
RW_HIDDEN const struct rw_region *rw_region_dying(void);
/*
 * The record of the pool whose rare_pool_create() is in progress and whose
 * head is not written yet, as the table says: the request a creation's,
 * its slot published as a pool with the bookkeeping still open (user_start
 * at the start); the head's bound, the request's metadata length, in
 * *@meta_len. Else NULL. Loads only, as rw_region_dying().
 */
RW_HIDDEN const struct rw_region *rw_region_opening(size_t *meta_len);

/*
 * Words of backend @id kept in the core's table, where no store reaches
 * them (a descriptor, a pid, a size that decides where a write or a
 * descriptor goes): the table's first member (table.h), so a read is one
 * load from a link-time address. Set with the registry lock held (setup,
 * create) or in the fork child's hook; read with plain loads. @id and @i
 * must be constants (checked when compiled).
 */
#define RW_BACKEND_WORDS 8
struct rw_backend_words {
	uint64_t word[RW_MAX_BACKENDS][RW_BACKEND_WORDS];
};
struct rw_table;
RW_HIDDEN extern struct rw_table rw_table;
#define rw_backend_word(id, i)                                                 \
	({                                                                     \
		_Static_assert((id) < RW_NR_BACKENDS &&                        \
				       (i) < RW_BACKEND_WORDS,                 \
			       "a backend word by constant slot and index");   \
		__atomic_load_n(&((const struct rw_backend_words               \
					   *)(const void *)&rw_table)          \
					 ->word[id][i],                        \
				__ATOMIC_ACQUIRE);                             \
	})
#define rw_backend_word_set(id, i, v)                                          \
	({                                                                     \
		_Static_assert((id) < RW_NR_BACKENDS &&                        \
				       (i) < RW_BACKEND_WORDS,                 \
			       "a backend word by constant slot and index");   \
		rw_backend_word_store((id), (i), (v));                         \
	})
RW_HIDDEN void rw_backend_word_store(enum rw_backend_id id, unsigned i,
				     uint64_t v);

/* vault.c: memory no store can reach, written with pwrite() into the memfd
 * mapped read-only over it (the core's table). */
/* Put [base, base + len) in a new memfd mapped over it; the descriptor goes
 * to *@fd_field (inside the range) before the copy. 0 or -errno. */
RW_HIDDEN int rw_vault_create(void *base, size_t len, int *fd_field);
/* Write @len bytes from @src to @dst inside the vault of @fd at @base, as
 * whole aligned 8-byte words (no reader sees a word torn). */
RW_HIDDEN void rw_vault_store(int fd, const void *base, void *dst,
			      const void *src, size_t len);
/* Fork child: replace the parent's vault by a private copy, mapped
 * writable until rw_vault_fork_done(); closes @fd. The new fd or -errno. */
RW_HIDDEN int rw_vault_fork_copy(int fd, void *base, size_t len);
RW_HIDDEN int rw_vault_fork_done(void *base, size_t len);
/* Whether @fd is the vault mapped read-only over all of [base, base + len),
 * by the kernel's word (fstat and /proc/self/maps), not a field's. */
RW_HIDDEN bool rw_vault_sealed(int fd, const void *base, size_t len);
/* 1 if the file @dev/@ino is mapped read-only over all of [base, base +
 * len), 0 if not, -1 if /proc/self/maps cannot be read. */
RW_HIDDEN int rw_maps_read_only_file(dev_t dev, ino_t ino, const void *base,
				     size_t len);

/* copy.c: stores through a writable address. Aligned 1/2/4/8-byte units
 * are single stores, so concurrent readers never see them torn. */
RW_HIDDEN void rw_store(void *dst, const void *src, size_t len);
/* memset(), an aligned 1, 2, 4 or 8-byte fill in one store. */
RW_HIDDEN void rw_fill(void *dst, int c, size_t len);
/* Apply segment @s through @at, a writable address of s->dst. */
RW_HIDDEN void rw_seg_store(const struct rw_seg *s, void *at);
/* A private malloc()ed copy of [addr, addr + len): the rare_write_map() view
 * of backends that commit on unmap; the caller frees it. */
RW_HIDDEN void *rw_staging_copy(const void *addr, size_t len);
/* In a backend's unmap(), once it committed: the view to release, as the
 * library's table records it (core.c), not the argument that crossed the
 * commit's calls. */
RW_HIDDEN void *rw_unmapping_view(void);

/* memfd.c: memory in a sealed memfd, mapped read-only over its place (the
 * vaults, and the backends whose regions live in a memfd). */
/* A memfd of @len bytes holding @contents (NULL: zeroes) with F_ADD_SEALS
 * @seals applied: an fd or -errno. */
RW_HIDDEN int rw_memfd_new(const char *name, size_t len, const void *contents,
			   unsigned seals);
/* Size @fd to @len bytes, fill it from @contents (NULL: zeroes), add
 * @seals: 0 or -errno. */
RW_HIDDEN int rw_memfd_fill(int fd, size_t len, const void *contents,
			    unsigned seals);
/*
 * A read-only MAP_SHARED view of a memfd at @at: MADV_DONTFORK (no child
 * inherits it; the fork child maps its own copy in its place) and, if
 * @seal, mseal()ed where the kernel has it. 0 or -errno.
 */
RW_HIDDEN int rw_view_seal(void *at, size_t len, bool seal);
/* Fork child: map a private copy of the memfd @fd (the parent's, which it
 * closes) at @at, where the view was not inherited, and seal it as above.
 * Returns the copy's fd; dies on failure. */
RW_HIDDEN int rw_view_fork_copy(int fd, void *at, size_t len, bool seal,
				unsigned seals);

/*
 * core.c, for the backends' create(): the pool being created, as the
 * table's request holds it (27t). A start or descriptor a backend carried
 * in memory, or in a register its callee saved on the stack, could be
 * rewritten to plain memory outside every region, where the pool was then
 * recorded and written.
 */
enum rw_pool_field {
	RW_POOL_START, /* the new mapping's start (0: none yet) */
	RW_POOL_FD,    /* its descriptor (-1: none) */
	RW_POOL_LEN,   /* the request's length */
	RW_POOL_SEALED /* the request's seal, 0 or 1 */
};
/* Put @v, the start or descriptor a system call has just returned, still
 * in the register it came in, into the request; read it back and abort
 * unless it is @v. Only in a creation, pools_lock held. */
RW_HIDDEN void rw_pool_made_put(enum rw_pool_field f, uint64_t v);
/* Field @f of the request: a load from the table (no store reaches it). */
RW_HIDDEN uint64_t rw_pool_made(enum rw_pool_field f);
/* A memfd for the new pool, sized to the request's length and sealed with
 * @seals, its number put into the request as RW_POOL_FD from the register
 * memfd_create(2) returned it in, every system call made inline with it
 * loaded from there: 0 or -errno (the descriptor closed). */
RW_HIDDEN int rw_pool_memfd(unsigned seals);

/* core.c, for pool.c and list.c: regions and validated writes. */
/* A pool region on the backend called @name (NULL: the process-wide
 * default), which is set up on first use; NULL and errno on failure
 * (EINVAL: no such backend). */
RW_HIDDEN struct rw_region *rw_region_create(size_t len, size_t meta_len,
					     const char *name, bool seal);
/* The backend called @name (as in RAREWRITE_BACKEND), set up for use; NULL
 * names the process-wide default. 0, -EINVAL (unknown) or -ENOTSUP. */
RW_HIDDEN int rw_backend_lookup(const char *name,
				const struct rw_backend **out);
/* Destroy the pool region that starts at @pool, or abort naming
 * rare_pool_destroy (not a live pool). */
RW_HIDDEN void rw_region_destroy(const void *pool);
/* backends.c: the ops tables by slot (enum rw_backend_id). */
RW_HIDDEN extern const struct rw_backend *const rw_backends_ops[];

/* The region wholly holding [addr, addr + len), or abort naming @call. */
RW_HIDDEN struct rw_region *rw_region_of(const char *call, const void *addr,
					 size_t len);
RW_HIDDEN struct rw_region *rw_region_lookup(const void *addr);
/* The table's region of @s, checked again to hold it (or abort): what a
 * backend uses rather than s->region, which sits in writable memory. */
RW_HIDDEN const struct rw_region *rw_seg_region(const struct rw_seg *s);
/* Write one validated segment through its region's backend. */
RW_HIDDEN void rw_write(const struct rw_seg *seg);
/* One write of the public API, naming @call: validated after the backend's
 * locks are taken (write_one), where the backend has them. */
RW_HIDDEN void rw_write_args(const char *call, void *dst, const void *src,
			     size_t len, int fill);
RW_HIDDEN __attribute__((noreturn)) void rw_seg_moved(const char *call,
						      const void *dst);
/* For write_one, locks held: the segment of these arguments, validated
 * against the table now, on backend @b (else abort naming @call). A
 * macro: @b is the caller's constant, taken after the lookup, not a value
 * held across it (a callee may save it on the stack); not an inline
 * function, whose calls would count against every includer
 * (tests/check-deps.sh). */
#define rw_seg_make(b, call, dst, src, len, fill, out)                         \
	do {                                                                   \
		struct rw_region *r_ = rw_region_of((call), (dst), (len));     \
                                                                               \
		if (r_->backend != (b))                                        \
			rw_seg_moved((call), (dst));                           \
		*(out) = (struct rw_seg){.region = r_,                         \
					 .dst = (dst),                         \
					 .src = (src),                         \
					 .len = (len),                         \
					 .fill = (fill)};                      \
	} while (0)
RW_HIDDEN bool rw_initialised(void);

/* Whether the table's region @r (a pointer that came in a register) is
 * live, on backend @b, protected, and holds [a, a + len) where callers may
 * write: the check of a write path that makes no function call between it
 * and the system call (rawsys.h), so inline. */
static inline __attribute__((always_inline)) bool
rw_region_holds(const struct rw_region *r, const struct rw_backend *b,
		uintptr_t a, size_t len)
{
	return __atomic_load_n(&r->kind, __ATOMIC_ACQUIRE) != RW_REGION_FREE &&
	       r->backend == b && r->protected_ && a >= r->user_start &&
	       a >= r->start && a - r->start < r->len &&
	       len <= r->start + r->len - a;
}

/* klock.c: locks whose state is in the kernel, so that no store releases
 * one while it is held (attack 26): rare_write_add() and friends, and
 * every pool's allocation. Taken and given inline (klock.h). */
enum rw_klock { RW_KLOCK_ADD, RW_KLOCK_POOL, RW_NR_KLOCKS };

/* section.c: abort if the program holds a copy relocation of a variable in
 * a shared library's registered __wr_rare section (the live variable would
 * sit in the program's writable .bss). A no-op in static programs. */
RW_HIDDEN void rw_section_check_copies(void);

/* env.c: one line "rarewrite: @call: ..." on stderr (no abort). */
RW_HIDDEN __attribute__((format(printf, 2, 3))) void
rw_say(const char *call, const char *fmt, ...);
/* The same, with "@head" for @call and the arguments in @ap: rw_die() too. */
RW_HIDDEN void rw_vsay(const char *head, const char *fmt, va_list ap);

/*
 * Parse the lowercase hex number at *s (as /proc/self/maps prints it),
 * advancing *s past it. Async-signal-safe: the fault report uses it.
 */
static inline uintptr_t rw_parse_hex(const char **s)
{
	uintptr_t v = 0;

	for (;; (*s)++) {
		char c = **s;

		if (c >= '0' && c <= '9')
			v = v * 16 + (uintptr_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uintptr_t)(c - 'a' + 10);
		else
			return v;
	}
}
/* Add the RARE_WRITE_CAP_* bits of RAREWRITE_NEED to *@need: 0 or -EINVAL
 * (said on stderr). */
RW_HIDDEN int rw_env_need(unsigned *need);

/* A bounded line built without snprintf (async-signal-safe). */
struct rw_buf {
	size_t len;
	char s[512];
};
RW_HIDDEN void rw_buf_puts(struct rw_buf *b, const char *s);
RW_HIDDEN void rw_buf_hex(struct rw_buf *b, uintptr_t v);

/* symbolize.c: list the loaded objects (safe context, before faults). */
RW_HIDDEN void rw_symbolize_prepare(void);
/* Async-signal-safe: append "symbol+0xOFF" for @addr to @b and return
 * true, or append nothing and return false; @file gets the base name of
 * the object holding @addr ("" if none). */
RW_HIDDEN bool rw_symbolize(struct rw_buf *b, uintptr_t addr, char *file,
			    size_t file_len);
/* The same for a code address: named only if it lies in a mapping of the
 * object's file, with the bias that mapping gives. */
RW_HIDDEN bool rw_symbolize_pc(struct rw_buf *b, uintptr_t pc, char *file,
			       size_t file_len);

/* fault.c: if the SIGSEGV described by @siginfo/@ucontext is a store to
 * protected memory, print the one-line report and return true. */
RW_HIDDEN bool rw_fault_report(void *siginfo, void *ucontext);

/* signal.c: keep the library's SIGSEGV handler first from now on, and on
 * backends with signal_enter, wrap every handler of the program. Called
 * with the registry lock held, after init and after each backend setup. */
RW_HIDDEN void rw_signal_activate(void);
/* signal.c: put the signal table in its vault now, so that a process out
 * of descriptors fails init cleanly, before anything is protected: 0 or
 * -errno (said on stderr naming @call). Registry lock held. */
RW_HIDDEN int rw_signal_seal(const char *call);
/* Run the signal hooks of every backend in use. */
RW_HIDDEN bool rw_backends_fault(void *siginfo, void *ucontext);
RW_HIDDEN void rw_backends_signal_enter(void *ucontext);
RW_HIDDEN void rw_backends_signal_exit(void *ucontext);
RW_HIDDEN void rw_backends_cs_fault(void);
RW_HIDDEN bool rw_backends_wrap_signals(void);
/* Whether a backend in use says a thread started now would inherit write
 * access (thread_writable). */
RW_HIDDEN bool rw_backends_thread_writable(void);
/* core.c, for fork_child hooks: the forking thread's id (from the table,
 * set by the core's prepare handler, which runs after the backends'). */
RW_HIDDEN int32_t rw_fork_tid(void);
/* signal.c: the depth a handler left by siglongjmp had cleared (0 if
 * none), once: rare_write_end() then closes that window. */
RW_HIDDEN unsigned rw_signal_left_depth(void);
/* signal.c: fork()'s part of the signal table, from core.c's fork
 * handlers: the prepare one last (signal_lock after the core's locks), the
 * child's before the child lets the parent go on, the parent's after. */
RW_HIDDEN void rw_signal_fork_prepare(void);
RW_HIDDEN void rw_signal_fork_parent(void);
RW_HIDDEN void rw_signal_fork_child(void);

#endif /* RAREWRITE_INTERNAL_H */
