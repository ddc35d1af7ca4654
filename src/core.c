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

#define RW_MAX_REGIONS 255
#define RW_MAX_BACKENDS 5
#define RW_MAX_MAPS 1024
#define RW_MAX_NESTED 256
#define RW_BACKEND_WORDS 8

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
 * Everything here is read-only once init has succeeded, and from then on
 * written only with pwrite() into the memfd behind it (vault.c): no store,
 * from this thread or any other, window or not, can reach it. Aligning the
 * type (not just the object) pads it to whole pages, so the mapping over
 * it cannot reach a neighbour. Fields written under different locks never
 * share an 8-byte word (vault.c widens stores to words).
 */
static struct rw_table {
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
	/* The process that owns this table (getpid() at the first seal, the
	 * child's in fork_child): a child made by a raw fork(), which ran no
	 * fork handler, still shares it and must not write it (attack 14c). */
	int64_t owner_pid;
	/* Words a backend keeps out of reach of stores (rw_backend_word()),
	 * indexed like backends[]; written with registry_lock held or in the
	 * fork child. */
	uint64_t backend_words[RW_MAX_BACKENDS][RW_BACKEND_WORDS];
	struct rw_region regions[RW_MAX_REGIONS];
	/* maps_lock */
	uint64_t nr_maps; /* high-water mark of maps[] */
	struct open_map maps[RW_MAX_MAPS];
	/* nested_lock */
	uint64_t nr_nested; /* slots of nested[] in use */
	struct nested_window nested[RW_MAX_NESTED];
} __attribute__((aligned(4096)))
table = {.vault_fd = -1, .fork_pipe = {-1, -1}};

/* Serialises init, region creation and destruction, and fork. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t nested_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Depth of the calling thread's begin/end window and who opened it.
 * initial-exec: a plain %fs-relative load on every write, no
 * __tls_get_addr call (the library is linked at startup, not dlopen()ed).
 * Both are plain memory that a store inside the window can change: they
 * only pick the fast path. Whether an end is the outermost is decided from
 * the table's record of nested windows (attack 7f).
 */
#define RW_TLS __thread __attribute__((tls_model("initial-exec")))
static RW_TLS unsigned window_depth;

static const struct {
	const char *name;
	const struct rw_backend *backend;
} backends[] = {
	{"pkey", &rw_backend_pkey},	  {"pwrite", &rw_backend_pwrite},
	{"shadow", &rw_backend_shadow},	  {"mprotect", &rw_backend_mprotect},
	{"process", &rw_backend_process},
};

void rw_die(const char *call, const void *addr, const char *fmt, ...)
{
	char head[160];
	va_list ap;

	snprintf(head, sizeof(head), "%s(%p)", call, addr);
	va_start(ap, fmt);
	rw_vsay(head, fmt, ap);
	va_end(ap);
	abort();
}

bool rw_initialised(void)
{
	return __atomic_load_n(&table.initialised, __ATOMIC_ACQUIRE);
}

/* Set in the single-threaded fork child while its private copy of the
 * table is mapped writable. */
static bool table_open_in_child;

/*
 * A child made by a raw fork() (no fork handler ran) shares the parent's
 * table memfd and memfd-backed views: a record it committed would redirect
 * the parent's later writes (attack 14c), a write through the API would land
 * in the parent's data. getpid() is the kernel's word; the owner's pid is in
 * the table.
 */
static void owner_check(const char *call, const void *addr)
{
	if ((int64_t)getpid() != table.owner_pid)
		rw_die(call, addr,
		       "called in a child made by a raw fork() (no fork "
		       "handlers ran): it shares the parent's protected "
		       "memory and must not write it");
}

/* Store into the table: plainly before it is sealed (init, or the fork
 * child's private copy), else through its memfd. */
static void table_store(void *dst, const void *src, size_t len)
{
	if (table.vault_fd < 0 || table_open_in_child) {
		memcpy(dst, src, len);
		return;
	}
	owner_check("rare_write", dst);
	rw_vault_store(table.vault_fd, &table, dst, src, len);
}

#define TABLE_SET(field, val)                                                  \
	do {                                                                   \
		__typeof__(field) v_ = (val);                                  \
		table_store(&(field), &v_, sizeof(v_));                        \
	} while (0)

/* Index of @b in backends[], or -1 when it is none of the library's. */
static int backend_index(const struct rw_backend *b)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i].backend == b)
			return (int)i;
	return -1;
}

static uint64_t *backend_word_at(const struct rw_backend *b, unsigned i)
{
	int k = backend_index(b);

	if (k < 0 || i >= RW_BACKEND_WORDS)
		rw_die("rare_write", b, "no such backend word %u", i);
	return &table.backend_words[k][i];
}

uint64_t rw_backend_word(const struct rw_backend *b, unsigned i)
{
	return __atomic_load_n(backend_word_at(b, i), __ATOMIC_ACQUIRE);
}

void rw_backend_word_set(const struct rw_backend *b, unsigned i, uint64_t v)
{
	TABLE_SET(*backend_word_at(b, i), v);
}

struct rw_region *rw_region_next(struct rw_region *prev)
{
	struct rw_region *r = prev ? prev + 1 : table.regions;
	unsigned nr = __atomic_load_n(&table.nr_regions, __ATOMIC_ACQUIRE);

	for (; r < table.regions + nr; r++)
		if (__atomic_load_n(&r->kind, __ATOMIC_ACQUIRE) !=
		    RW_REGION_FREE)
			return r;
	return NULL;
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
	uintptr_t at = (uintptr_t)r - (uintptr_t)table.regions;

	if (at >= sizeof(table.regions) || at % sizeof(*r) ||
	    __atomic_load_n(&r->kind, __ATOMIC_ACQUIRE) == RW_REGION_FREE ||
	    (r->backend ? backend_index(r->backend) < 0 : r->protected_) ||
	    dst < r->start || len > r->len || dst - r->start > r->len - len)
		rw_die("rare_write", (void *)dst,
		       "a validated write changed before it was applied "
		       "(a store into the caller's stack?)");
	return r;
}

/* Before init, protected data is ordinary memory: store it directly. */
static void write_plain(const struct rw_seg *segs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		rw_seg_store(&segs[i], segs[i].dst);
}

void rw_write(const struct rw_seg *segs, unsigned n)
{
	const struct rw_backend *b;
	unsigned i;

	if (!n)
		return;
	if (!rw_initialised()) {
		/* Before init only a section that its library sealed itself
		 * (rare_write_seal_self()) is protected. */
		for (i = 0; i < n; i++) {
			const struct rw_region *r = rw_seg_region(&segs[i]);

			if (r->protected_)
				r->backend->write(&segs[i], 1);
			else
				write_plain(&segs[i], 1);
		}
		return;
	}
	b = rw_seg_region(&segs[0])->backend;
	for (i = 1; i < n; i++)
		if (rw_seg_region(&segs[i])->backend != b)
			break;
	if (i < n) { /* segments on pools of different levels */
		for (i = 0; i < n; i++)
			rw_write(&segs[i], 1);
		return;
	}
	/* Inside this thread's own begin/end window, stores go straight in. */
	if (window_depth && b == table.backend) {
		write_plain(segs, n);
		return;
	}
	/* Memory a raw fork() child would share with its parent. */
	if (b->dontfork_views)
		owner_check("rare_write", segs[0].dst);
	b->write(segs, n);
}

void rare_write_memcpy(void *dst, const void *src, size_t len)
{
	struct rw_seg seg = {.dst = dst, .src = src, .len = len};

	if (!len)
		return;
	if (!src)
		rw_die("rare_write_memcpy", dst, "NULL source");
	seg.region = rw_region_of("rare_write_memcpy", dst, len);
	rw_write(&seg, 1);
}

void rare_write_memset(void *dst, int c, size_t len)
{
	struct rw_seg seg = {.dst = dst, .len = len, .fill = c};

	if (!len)
		return;
	seg.region = rw_region_of("rare_write_memset", dst, len);
	rw_write(&seg, 1);
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
		if (__atomic_load_n(&table.nested[i].tid, __ATOMIC_RELAXED) ==
		    tid)
			return &table.nested[i];
	return NULL;
}

/* Levels beyond the outermost that the table holds for this thread. */
static uint32_t nested_extra(int32_t tid)
{
	struct nested_window *w;

	if (!__atomic_load_n(&table.nr_nested, __ATOMIC_ACQUIRE))
		return 0;
	w = nested_find(tid);
	return w ? w->extra : 0;
}

/* Record @extra levels for @tid (0: none). Signals are blocked, so that a
 * handler's own begin/end cannot deadlock on the lock. */
static void nested_set(int32_t tid, uint32_t extra)
{
	struct nested_window *w, rec = {extra ? tid : 0, extra};
	sigset_t all, saved;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	pthread_mutex_lock(&nested_lock);
	w = nested_find(tid);
	if (!w && extra) {
		w = nested_find(0);
		if (!w)
			rw_die("rare_write_begin", NULL,
			       "more than %d threads nest windows at once",
			       RW_MAX_NESTED);
		TABLE_SET(table.nr_nested, table.nr_nested + 1);
	} else if (w && !extra) {
		TABLE_SET(table.nr_nested, table.nr_nested - 1);
	}
	if (w)
		table_store(w, &rec, sizeof(rec));
	pthread_mutex_unlock(&nested_lock);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

/* Before init a window opens nothing; init refuses while one is open, so
 * every window that is open after init was opened after it. */
static bool preinit_window(int delta)
{
	bool pre;

	pthread_mutex_lock(&registry_lock);
	pre = !table.initialised;
	if (pre) /* the table may be sealed already (rare_write_seal_self) */
		TABLE_SET(table.preinit_windows, table.preinit_windows + delta);
	pthread_mutex_unlock(&registry_lock);
	return pre;
}

void rare_write_begin(void)
{
	const struct rw_backend *b;

	if (window_depth) {
		window_depth++;
		if (rw_initialised())
			nested_set(this_tid(), nested_extra(this_tid()) + 1);
		return;
	}
	if (!rw_initialised() && preinit_window(1)) {
		window_depth = 1; /* everything is writable anyway */
		return;
	}
	b = table.backend;
	if (!(b->caps & RARE_WRITE_CAP_BEGIN_END))
		rw_die("rare_write_begin", NULL,
		       "backend %s has no begin/end windows (see "
		       "rare_write_caps())",
		       b->name);
	/* A record left by a dead thread whose id we now carry. */
	if (nested_extra(this_tid()))
		nested_set(this_tid(), 0);
	window_depth = 1;
	b->begin();
}

void rare_write_end(void)
{
	uint32_t extra;

	if (!window_depth) /* a handler that cleared it was left by a jump */
		window_depth = rw_signal_left_depth();
	if (!window_depth)
		rw_die("rare_write_end", NULL, "no open window on this thread");
	if (!rw_initialised()) {
		if (!--window_depth)
			preinit_window(-1);
		return;
	}
	extra = nested_extra(this_tid());
	if (extra) {
		nested_set(this_tid(), extra - 1);
		window_depth = extra;
		return;
	}
	window_depth = 0;
	table.backend->end();
}

/*
 * Open maps, for the overlap check and to validate unmap: kept in the
 * table, so a store cannot forge or move one, and unmap accepts only a
 * handle whose target, length, token and view match a record (attack 7g).
 */
static unsigned long next_token = 1;

static void maps_insert(struct rare_write_mapping *m, bool backend)
{
	uintptr_t start = (uintptr_t)m->target, end = start + m->len;
	struct open_map *slot = NULL;

	pthread_mutex_lock(&maps_lock);
	for (size_t i = 0; i < table.nr_maps; i++) {
		const struct open_map *o = &table.maps[i];

		if (!o->token) {
			if (!slot)
				slot = &table.maps[i];
		} else if (start < o->end && o->start < end) {
			pthread_mutex_unlock(&maps_lock);
			rw_die("rare_write_map", m->target,
			       "overlaps the open map %p+%zu", (void *)o->start,
			       (size_t)(o->end - o->start));
		}
	}
	if (!slot) {
		if (table.nr_maps == RW_MAX_MAPS) {
			pthread_mutex_unlock(&maps_lock);
			rw_die("rare_write_map", m->target,
			       "more than %d maps open at once", RW_MAX_MAPS);
		}
		slot = &table.maps[table.nr_maps];
		TABLE_SET(table.nr_maps, table.nr_maps + 1);
	}
	/* Tokens only tell handles of the same range apart; 0 is free. */
	if (!next_token)
		next_token = 1;
	m->token = next_token++;
	table_store(slot,
		    &(struct open_map){start, end, (uintptr_t)m->addr, m->token,
				       backend},
		    sizeof(*slot));
	pthread_mutex_unlock(&maps_lock);
}

/* Forget the open map @m; whether its view came from the backend. */
static bool maps_remove(const struct rare_write_mapping *m)
{
	bool backend;

	pthread_mutex_lock(&maps_lock);
	for (size_t i = 0; i < table.nr_maps; i++) {
		const struct open_map *o = &table.maps[i];

		if (o->token && o->token == m->token &&
		    o->start == (uintptr_t)m->target &&
		    o->end == (uintptr_t)m->target + m->len &&
		    o->view == (uintptr_t)m->addr) {
			backend = o->backend;
			TABLE_SET(table.maps[i].token, 0UL);
			pthread_mutex_unlock(&maps_lock);
			return backend;
		}
	}
	pthread_mutex_unlock(&maps_lock);
	rw_die("rare_write_unmap", m->target, "not an open map");
}

/* Whether a rare_write_map() is open; maps_lock held. */
static bool maps_open(void)
{
	for (size_t i = 0; i < table.nr_maps; i++)
		if (table.maps[i].token)
			return true;
	return false;
}

struct rare_write_mapping rare_write_map(void *addr, size_t len)
{
	struct rare_write_mapping m = {.target = addr, .len = len};
	struct rw_region *r;
	bool protected_;

	if (!len)
		rw_die("rare_write_map", addr, "zero length");
	r = rw_region_of("rare_write_map", addr, len);
	pthread_mutex_lock(&maps_lock);
	for (size_t i = 0; i < table.nr_maps; i++) {
		const struct open_map *o = &table.maps[i];

		if (o->token && (uintptr_t)addr < o->end &&
		    o->start < (uintptr_t)addr + len) {
			pthread_mutex_unlock(&maps_lock);
			rw_die("rare_write_map", addr,
			       "overlaps the open map %p+%zu", (void *)o->start,
			       (size_t)(o->end - o->start));
		}
	}
	pthread_mutex_unlock(&maps_lock);
	/* A region not protected yet is plain memory: its own address is
	 * the view. The record says which, for unmap: a seal or init
	 * between the two must not make unmap release a view the backend
	 * never handed out (init refuses while a map is open). */
	protected_ = __atomic_load_n(&r->protected_, __ATOMIC_ACQUIRE);
	if (protected_ && r->backend->dontfork_views)
		owner_check("rare_write_map", addr);
	m.addr = protected_ ? r->backend->map(r, addr, len) : addr;
	maps_insert(&m, protected_);
	return m;
}

void rare_write_unmap(struct rare_write_mapping m)
{
	struct rw_region *r = rw_region_of("rare_write_unmap", m.target, m.len);

	if (maps_remove(&m))
		r->backend->unmap(r, m.addr, m.target, m.len);
}

/* A free region slot; registry_lock held. */
static struct rw_region *region_alloc(void)
{
	for (unsigned i = 0; i < table.nr_regions; i++)
		if (table.regions[i].kind == RW_REGION_FREE)
			return &table.regions[i];
	if (table.nr_regions == RW_MAX_REGIONS)
		return NULL;
	return &table.regions[table.nr_regions];
}

static int backend_use(const struct rw_backend *b)
{
	unsigned i;
	int err;

	for (i = 0; i < RW_MAX_BACKENDS && table.used[i]; i++)
		if (table.used[i] == b)
			return 0;
	err = b->setup();
	if (!err) {
		TABLE_SET(table.used[i], b);
		if (table.backend) /* a pool's level: its signal hooks */
			rw_signal_activate();
	}
	return err;
}

bool rw_backends_fault(void *siginfo, void *ucontext)
{
	for (unsigned i = 0; i < RW_MAX_BACKENDS && table.used[i]; i++)
		if (table.used[i]->fault &&
		    table.used[i]->fault(siginfo, ucontext))
			return true;
	return false;
}

void rw_backends_signal_enter(void *ucontext)
{
	for (unsigned i = 0; i < RW_MAX_BACKENDS && table.used[i]; i++)
		if (table.used[i]->signal_enter)
			table.used[i]->signal_enter(ucontext);
}

void rw_backends_signal_exit(void *ucontext)
{
	for (unsigned i = 0; i < RW_MAX_BACKENDS && table.used[i]; i++)
		if (table.used[i]->signal_exit)
			table.used[i]->signal_exit(ucontext);
}

void rw_backends_cs_fault(void)
{
	for (unsigned i = 0; i < RW_MAX_BACKENDS && table.used[i]; i++)
		if (table.used[i]->cs_fault)
			table.used[i]->cs_fault();
}

unsigned rw_window_depth_swap(unsigned depth)
{
	unsigned old = window_depth;

	window_depth = depth;
	return old;
}

bool rw_backends_wrap_signals(void)
{
	for (unsigned i = 0; i < RW_MAX_BACKENDS && table.used[i]; i++)
		if (table.used[i]->signal_enter)
			return true;
	return false;
}

/*
 * Fill slot @r with @filled and publish it to lock-free lookups: the kind
 * goes last, in a store of its own, so a reader never matches a
 * half-written region. registry_lock held.
 */
static void region_commit(struct rw_region *r, const struct rw_region *filled,
			  enum rw_region_kind kind)
{
	struct rw_region f = *filled;

	f.kind = RW_REGION_FREE;
	table_store(r, &f, sizeof(f));
	__atomic_thread_fence(__ATOMIC_RELEASE);
	TABLE_SET(r->kind, kind);
	if (r == &table.regions[table.nr_regions])
		TABLE_SET(table.nr_regions, table.nr_regions + 1);
}

struct rw_region *rw_region_create(size_t len, size_t meta_len,
				   const struct rw_backend *b, bool seal)
{
	struct rw_region *r, filled;
	int err;

	if (window_depth)
		rw_die("rare_pool_create", NULL,
		       "called inside an open window");
	pthread_mutex_lock(&registry_lock);
	if (!b)
		b = table.backend;    /* NULL before the first seal: init's */
	err = b ? backend_use(b) : 0; /* a pool's own level, on first use */
	if (err)
		goto out;
	r = region_alloc();
	if (!r) {
		err = -ENOMEM;
		goto out;
	}
	filled = (struct rw_region){.kind = RW_REGION_FREE,
				    .len = len,
				    .backend = b,
				    .fd = -1,
				    .seal = seal};
	if (table.backend) { /* init ran, or a library sealed itself */
		err = b->create(&filled);
		filled.protected_ = true;
	} else {
		/* Plain memory until init (or the first rare_write_seal_self())
		 * adopts it, like a section. */
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		err = p == MAP_FAILED ? -errno : 0;
		filled.start = (uintptr_t)p;
	}
	if (err)
		goto out;
	filled.user_start = filled.start + meta_len;
	region_commit(r, &filled, RW_REGION_POOL);
out:
	pthread_mutex_unlock(&registry_lock);
	if (err) {
		errno = -err;
		return NULL;
	}
	return r;
}

void rw_region_destroy(struct rw_region *r)
{
	struct rw_region gone;

	if (window_depth)
		rw_die("rare_pool_destroy", (void *)r->start,
		       "called inside an open window");
	pthread_mutex_lock(&registry_lock);
	gone = *r;
	TABLE_SET(r->kind, RW_REGION_FREE); /* lookups stop matching first */
	table_store(r, &(struct rw_region){.kind = RW_REGION_FREE, .fd = -1},
		    sizeof(*r));
	if (gone.protected_)
		gone.backend->destroy(&gone);
	else /* created before init: still plain memory */
		munmap((void *)gone.start, gone.len);
	pthread_mutex_unlock(&registry_lock);
}

/* A section the linker did not page-align: linked without the fragment. */
static void check_section_aligned(const struct rw_region *r)
{
	if (r->start % rw_page_size || r->len % rw_page_size)
		rw_die("rare_write_init", (void *)r->start,
		       "__wr_rare section is not page-aligned; link with "
		       "$(pkg-config --libs rarewrite) (ld.bfd or ld.lld; "
		       "gold cannot read it)");
}

static int adopt_on(struct rw_region *r, const struct rw_backend *b)
{
	check_section_aligned(r);
	r->backend = b;
	return r->backend->adopt(r);
}

static int adopt_section(struct rw_region *r)
{
	return adopt_on(r, table.backend);
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
	r = region_alloc();
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
	if (table.initialised) {
		int err = adopt_section(&filled);

		if (err)
			rw_die("rare_write_init", start,
			       "cannot protect a late-loaded section: %s",
			       strerror(-err));
		filled.protected_ = true;
	}
	region_commit(r, &filled, RW_REGION_SECTION);
	if (table.initialised) {
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
	for (unsigned i = 0; i < RW_MAX_BACKENDS && table.used[i]; i++) {      \
		bool seen = false;                                             \
		for (unsigned j = 0; j < i; j++)                               \
			seen |= table.used[j]->hook == table.used[i]->hook;    \
		if (table.used[i]->hook && !seen)                              \
			table.used[i]->hook();                                 \
	}

int32_t rw_fork_tid(void)
{
	return table.fork_tid;
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

	pthread_mutex_lock(&registry_lock);
	pthread_mutex_lock(&maps_lock);
	pthread_mutex_lock(&nested_lock);
	FOR_EACH_FORK_HOOK(fork_prepare);
	if (pipe2(p, O_CLOEXEC))
		p[0] = p[1] = -1;
	TABLE_SET(table.fork_tid, this_tid());
	TABLE_SET(table.fork_pipe[0], p[0]);
	TABLE_SET(table.fork_pipe[1], p[1]);
}

static void fork_parent(void)
{
	char c;

	if (table.fork_pipe[1] >= 0) {
		close(table.fork_pipe[1]);
		while (read(table.fork_pipe[0], &c, 1) < 0 && errno == EINTR)
			;
		close(table.fork_pipe[0]);
	}
	TABLE_SET(table.fork_pipe[0], -1);
	TABLE_SET(table.fork_pipe[1], -1);
	FOR_EACH_FORK_HOOK(fork_parent);
	pthread_mutex_unlock(&nested_lock);
	pthread_mutex_unlock(&maps_lock);
	pthread_mutex_unlock(&registry_lock);
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
	uint32_t extra = nested_extra(table.fork_tid);

	if (table.vault_fd >= 0) {
		int fd = rw_vault_fork_copy(table.vault_fd, &table,
					    sizeof(table));

		if (fd < 0)
			rw_die("fork", &table,
			       "child cannot copy the region table: %s",
			       strerror(-fd));
		table_open_in_child = true;
		table.vault_fd = fd;
	}
	table.owner_pid = getpid();
	reserve_views();
	FOR_EACH_FORK_HOOK(fork_child);
	/* Only the forking thread lives on, under a new id. */
	memset(table.nested, 0, sizeof(table.nested));
	table.nr_nested = 0;
	if (extra) {
		table.nested[0] = (struct nested_window){this_tid(), extra};
		table.nr_nested = 1;
	}
	/* Copies taken: the parent may go on. */
	if (table.fork_pipe[0] >= 0) {
		close(table.fork_pipe[0]);
		close(table.fork_pipe[1]);
	}
	table.fork_pipe[0] = table.fork_pipe[1] = -1;
	if (table_open_in_child) {
		int err = rw_vault_fork_done(&table, sizeof(table));

		if (err)
			rw_die("fork", &table,
			       "child cannot protect the region table: %s",
			       strerror(-err));
		table_open_in_child = false;
	}
	pthread_mutex_init(&nested_lock, NULL);
	pthread_mutex_init(&maps_lock, NULL);
	pthread_mutex_init(&registry_lock, NULL);
}

/*
 * The backend called @name, set up, with every capability in @need. "auto"
 * (or no name) tries them in order of preference: pkey, then pwrite, which
 * has no windows, then mprotect, which has; so a program that needs windows
 * gets pkey where the CPU has it, else mprotect. With @why, failures are
 * also said in one line on stderr, naming @why's call.
 */
static int backend_named(const char *name, unsigned need, const char *why,
			 const struct rw_backend **out)
{
	static const struct rw_backend *const by_preference[] = {
		&rw_backend_pkey,   &rw_backend_pwrite,	 &rw_backend_mprotect,
		&rw_backend_shadow, &rw_backend_process,
	};
	int err;

	if (!name || !*name || !strcmp(name, "auto")) {
		for (size_t i = 0;
		     i < sizeof(by_preference) / sizeof(by_preference[0]);
		     i++) {
			*out = by_preference[i];
			if (((*out)->caps & need) != need)
				continue;
			err = backend_use(*out);
			if (!err)
				return 0;
			/* Without needs, auto means pkey, else pwrite. */
			if (!need && *out == &rw_backend_pwrite) {
				if (why)
					rw_say(why, "backend pwrite (auto): %s",
					       strerror(-err));
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
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (!strcmp(name, backends[i].name)) {
			*out = backends[i].backend;
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
		rw_say(why,
		       "unknown backend \"%.32s\" in RAREWRITE_BACKEND "
		       "(auto, pkey, pwrite, shadow, mprotect, process)",
		       name);
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
	if ((table.backend->caps & need) == need)
		return 0;
	rw_say("rare_write_init_caps",
	       "backend %s, chosen by an earlier init, lacks capabilities %#x",
	       table.backend->name, need & ~table.backend->caps);
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

	if (table.atfork_registered)
		return 0;
	err = -pthread_atfork(fork_prepare, fork_parent, fork_child);
	if (err)
		rw_say(call, "pthread_atfork: %s", strerror(-err));
	else
		TABLE_SET(table.atfork_registered, true);
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
 * whole pages, on one of the library's backends if any.
 */
static void table_check(const char *call)
{
	bool bad = table.nr_regions > RW_MAX_REGIONS ||
		   table.nr_maps > RW_MAX_MAPS ||
		   table.nr_nested > RW_MAX_NESTED || table.initialised ||
		   (table.backend && backend_index(table.backend) < 0);

	for (unsigned i = 0; i < RW_MAX_BACKENDS; i++)
		bad |= table.used[i] && backend_index(table.used[i]) < 0;
	for (unsigned i = 0; !bad && i < table.nr_regions; i++) {
		const struct rw_region *r = &table.regions[i];

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
		      (r->backend && backend_index(r->backend) < 0);
	}
	if (bad)
		rw_die(call, &table,
		       "the region table was changed by a store before it "
		       "was sealed");
}

static int table_seal(const char *call)
{
	int err;

	if (table.vault_fd >= 0)
		return 0;
	table_check(call);
	pthread_mutex_lock(&maps_lock); /* no plain store races the copy */
	table.owner_pid = getpid();
	err = rw_vault_create(&table, sizeof(table), &table.vault_fd);
	pthread_mutex_unlock(&maps_lock);
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

	if (!r->seal || r->backend == &rw_backend_mprotect)
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
	table_store(r, &orig, sizeof(orig));
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
		size_t i = (size_t)(r - table.regions);

		if (r->protected_ ||
		    (only && r->kind == RW_REGION_SECTION && r != only))
			continue;
		if (!r->backend)
			no_level[i / 64] |= 1ULL << (i % 64);
		f.seal = false;
		err = adopt_on(&f, r->kind == RW_REGION_POOL && r->backend
					   ? r->backend
					   : table.backend);
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
		table_store(r, &f, sizeof(f));
		done[i / 64] |= 1ULL << (i % 64);
	}
	for (size_t i = 0; i < RW_MAX_REGIONS; i++) {
		if (!(done[i / 64] >> (i % 64) & 1))
			continue;
		if (err)
			unprotect(call, &table.regions[i],
				  no_level[i / 64] >> (i % 64) & 1);
		else
			seal_views(call, &table.regions[i]);
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
	if (window_depth)
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
	if (table.preinit_windows)
		rw_die("rare_write_seal_self", start,
		       "called while a thread has a window open");
	err = table_seal("rare_write_seal_self");
	if (!err)
		err = rw_signal_seal("rare_write_seal_self");
	if (err || table.backend)
		goto adopt;
	err = rw_env_need(&need);
	if (!err)
		err = choose_backend(need, "rare_write_seal_self", &b);
	if (!err)
		err = register_atfork("rare_write_seal_self");
	if (err)
		goto out;
	TABLE_SET(table.backend, b); /* init keeps it */
adopt:
	if (err)
		goto out;
	rw_section_check_copies(); /* its variables are still inside */
	err = protect_regions("rare_write_seal_self", r);
	if (err) {
		if (b) /* the first seal: init may still choose */
			TABLE_SET(table.backend, NULL);
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
	if (window_depth)
		rw_die("rare_write_init", NULL, "called inside an open window");
	pthread_mutex_lock(&registry_lock);
	if (table.initialised) {
		pthread_mutex_unlock(&registry_lock);
		return caps_check(need);
	}
	if (table.preinit_windows)
		rw_die("rare_write_init", NULL,
		       "called while another thread has a window open");
	err = table_seal("rare_write_init");
	if (!err)
		err = rw_signal_seal("rare_write_init");
	if (err)
		goto out;
	if (table.backend) {
		/* A library sealed itself first, on this backend. */
		if ((table.backend->caps & need) != need) {
			rw_say("rare_write_init",
			       "backend %s, chosen when a library sealed "
			       "itself (rare_write_seal_self()), lacks "
			       "capabilities %#x; name them in RAREWRITE_NEED "
			       "too",
			       table.backend->name,
			       need & ~table.backend->caps);
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
		TABLE_SET(table.backend, b);
	/* A map opened on plain memory and unmapped after init would make
	 * the backend release a view it never handed out, as a window opened
	 * before init would close one it never opened: refuse both. No map
	 * opens until init is done (maps_lock). */
	pthread_mutex_lock(&maps_lock);
	err = maps_open() ? -EBUSY : protect_regions("rare_write_init", NULL);
	if (!err) {
		__atomic_thread_fence(__ATOMIC_RELEASE);
		TABLE_SET(table.initialised, true);
	} else if (b) {
		TABLE_SET(table.backend, NULL);
	}
	pthread_mutex_unlock(&maps_lock);
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
		__atomic_load_n(&table.backend, __ATOMIC_ACQUIRE);

	/* From the first seal on (init, or a library's own). */
	return b ? b->name : "none";
}

unsigned rare_write_caps(void)
{
	return rw_initialised() ? table.backend->caps : 0;
}
