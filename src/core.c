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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rarewrite.h"
#include "internal.h"

#define RW_MAX_REGIONS 255
#define RW_MAX_BACKENDS 5

size_t rw_page_size = 4096;

/* Everything here is read-only once init has succeeded. Aligning the type
 * (not just the object) pads it to whole pages, so mprotect() on it cannot
 * reach a neighbour. */
static struct rw_table {
	bool initialised;
	const struct rw_backend *backend; /* the process-wide default */
	const struct rw_backend *used[RW_MAX_BACKENDS]; /* set up so far */
	unsigned nr_regions;				/* high-water mark */
	struct rw_region regions[RW_MAX_REGIONS];
} __attribute__((aligned(4096))) table;

/* Serialises init, region creation and destruction, and fork. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

/* Depth of the calling thread's begin/end window and who opened it.
 * initial-exec: a plain %fs-relative load on every write, no
 * __tls_get_addr call (the library is linked at startup, not dlopen()ed). */
#define RW_TLS __thread __attribute__((tls_model("initial-exec")))
static RW_TLS unsigned window_depth;
static RW_TLS const struct rw_backend *window_backend;

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
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "rarewrite: %s(%p): ", call, addr);
	va_list ap;

	va_start(ap, fmt);
	n += vsnprintf(msg + n, sizeof(msg) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(msg) - 2)
		n = sizeof(msg) - 2;
	msg[n++] = '\n';
	/* One write(2): the line arrives whole even from a dying process. */
	if (write(STDERR_FILENO, msg, (size_t)n) < 0) {
		/* nothing better to do */
	}
	abort();
}

bool rw_initialised(void)
{
	return __atomic_load_n(&table.initialised, __ATOMIC_ACQUIRE);
}

void rw_table_writable(bool writable)
{
	if (!table.initialised)
		return; /* before init the table is ordinary data */
	if (mprotect(&table, sizeof(table),
		     writable ? PROT_READ | PROT_WRITE : PROT_READ))
		rw_die("rare_write_init", &table,
		       "cannot re-protect the region table: %s",
		       strerror(errno));
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
		write_plain(segs, n);
		return;
	}
	b = segs[0].region->backend;
	for (i = 1; i < n; i++)
		if (segs[i].region->backend != b)
			break;
	if (i < n) { /* segments on pools of different levels */
		for (i = 0; i < n; i++)
			rw_write(&segs[i], 1);
		return;
	}
	/* Inside this thread's own begin/end window, stores go straight in. */
	if (window_depth && window_backend == b) {
		write_plain(segs, n);
		return;
	}
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

void rare_write_begin(void)
{
	if (window_depth++)
		return;
	if (!rw_initialised())
		return; /* everything is writable anyway */
	if (!(table.backend->caps & RARE_WRITE_CAP_BEGIN_END)) {
		window_depth = 0;
		rw_die("rare_write_begin", NULL,
		       "backend %s has no begin/end windows (see "
		       "rare_write_caps())",
		       table.backend->name);
	}
	window_backend = table.backend;
	window_backend->begin();
}

void rare_write_end(void)
{
	if (!window_depth)
		rw_die("rare_write_end", NULL, "no open window on this thread");
	if (--window_depth)
		return;
	if (window_backend) {
		const struct rw_backend *b = window_backend;

		window_backend = NULL;
		b->end();
	}
}

/*
 * Open maps, for the overlap check and to validate unmap. Plain memory: a
 * corrupted entry can at worst make a later map or unmap abort, because
 * unmap re-validates its target against the read-only region table.
 */
struct open_map {
	uintptr_t start, end, view;
	unsigned long token;
};
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct open_map *maps;
static size_t nr_maps, maps_cap;
static unsigned long next_token = 1;

static unsigned long maps_insert(uintptr_t start, size_t len)
{
	unsigned long token;

	pthread_mutex_lock(&maps_lock);
	for (size_t i = 0; i < nr_maps; i++)
		if (start < maps[i].end && maps[i].start < start + len) {
			pthread_mutex_unlock(&maps_lock);
			rw_die("rare_write_map", (void *)start,
			       "overlaps the open map %p+%zu",
			       (void *)maps[i].start,
			       (size_t)(maps[i].end - maps[i].start));
		}
	if (nr_maps == maps_cap) {
		size_t cap = maps_cap ? 2 * maps_cap : 16;
		struct open_map *m = realloc(maps, cap * sizeof(*m));

		if (!m)
			rw_die("rare_write_map", (void *)start,
			       "out of memory");
		maps = m;
		maps_cap = cap;
	}
	token = next_token++;
	maps[nr_maps++] = (struct open_map){start, start + len, 0, token};
	pthread_mutex_unlock(&maps_lock);
	return token;
}

static void maps_remove(const struct rare_write_mapping *m)
{
	pthread_mutex_lock(&maps_lock);
	for (size_t i = 0; i < nr_maps; i++)
		if (maps[i].token == m->token &&
		    maps[i].start == (uintptr_t)m->target &&
		    maps[i].end == (uintptr_t)m->target + m->len) {
			maps[i] = maps[--nr_maps];
			pthread_mutex_unlock(&maps_lock);
			return;
		}
	pthread_mutex_unlock(&maps_lock);
	rw_die("rare_write_unmap", m->target, "not an open map");
}

struct rare_write_mapping rare_write_map(void *addr, size_t len)
{
	struct rare_write_mapping m = {.target = addr, .len = len};
	struct rw_region *r;

	if (!len)
		rw_die("rare_write_map", addr, "zero length");
	r = rw_region_of("rare_write_map", addr, len);
	m.token = maps_insert((uintptr_t)addr, len);
	m.addr = rw_initialised() ? r->backend->map(r, addr, len) : addr;
	return m;
}

void rare_write_unmap(struct rare_write_mapping m)
{
	struct rw_region *r = rw_region_of("rare_write_unmap", m.target, m.len);

	maps_remove(&m);
	if (rw_initialised())
		r->backend->unmap(r, m.addr, m.target, m.len);
}

/* A region slot, with the table writable; registry_lock held. */
static struct rw_region *region_alloc(void)
{
	for (unsigned i = 0; i < table.nr_regions; i++)
		if (table.regions[i].kind == RW_REGION_FREE)
			return &table.regions[i];
	if (table.nr_regions == RW_MAX_REGIONS)
		return NULL;
	return &table.regions[table.nr_regions];
}

/*
 * Make a filled-in slot visible to lock-free lookups: the kind goes last, so
 * a reader never matches a half-written region.
 */
static void region_publish(struct rw_region *r, enum rw_region_kind kind)
{
	__atomic_store_n(&r->kind, kind, __ATOMIC_RELEASE);
	if (r == &table.regions[table.nr_regions])
		__atomic_store_n(&table.nr_regions, table.nr_regions + 1,
				 __ATOMIC_RELEASE);
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
		rw_table_writable(true);
		table.used[i] = b;
		rw_table_writable(false);
	}
	return err;
}

/*
 * Fill slot @r with @filled and publish it. The table is writable only for
 * these stores, never across a backend's system calls, to keep the window
 * in which another thread could rewrite it short (attack 7b).
 */
static void region_commit(struct rw_region *r, const struct rw_region *filled,
			  enum rw_region_kind kind)
{
	rw_table_writable(true);
	*r = *filled;
	r->kind = RW_REGION_FREE;
	region_publish(r, kind);
	rw_table_writable(false);
}

struct rw_region *rw_region_create(size_t len, size_t meta_len,
				   const struct rw_backend *b)
{
	struct rw_region *r, filled;
	int err;

	if (window_depth)
		rw_die("rare_pool_create", NULL,
		       "called inside an open window");
	pthread_mutex_lock(&registry_lock);
	if (!b)
		b = table.backend;
	err = backend_use(b); /* a pool's own level, set up on first use */
	if (err)
		goto out;
	r = region_alloc();
	if (!r) {
		err = -ENOMEM;
		goto out;
	}
	filled = (struct rw_region){
		.kind = RW_REGION_FREE, .len = len, .backend = b, .fd = -1};
	err = b->create(&filled);
	if (err)
		goto out;
	filled.user_start = filled.start + meta_len;
	filled.protected_ = true;
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
	rw_table_writable(true);
	*r = (struct rw_region){.kind = RW_REGION_FREE, .fd = -1};
	rw_table_writable(false);
	gone.backend->destroy(&gone);
	pthread_mutex_unlock(&registry_lock);
}

static int adopt_section(struct rw_region *r)
{
	if (r->start % rw_page_size || r->len % rw_page_size)
		rw_die("rare_write_init", (void *)r->start,
		       "__wr_rare section is not page-aligned; link with "
		       "$(pkg-config --libs rarewrite)");
	r->backend = table.backend;
	return r->backend->adopt(r);
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
		.fd = -1};
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
	if (table.initialised)
		rw_section_check_copies(); /* no copy relocation out of it */
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

/*
 * The parent holds its writers off (each backend's prepare hook) until the
 * child has taken its private copies: the child ends the wait by closing
 * its end of this pipe after its hooks ran, or by dying.
 */
static int fork_pipe[2] = {-1, -1};

static void fork_prepare(void)
{
	pthread_mutex_lock(&registry_lock);
	FOR_EACH_FORK_HOOK(fork_prepare);
	if (pipe2(fork_pipe, O_CLOEXEC))
		fork_pipe[0] = fork_pipe[1] = -1;
}

static void fork_parent(void)
{
	char c;

	if (fork_pipe[1] >= 0) {
		close(fork_pipe[1]);
		while (read(fork_pipe[0], &c, 1) < 0 && errno == EINTR)
			;
		close(fork_pipe[0]);
	}
	fork_pipe[0] = fork_pipe[1] = -1;
	FOR_EACH_FORK_HOOK(fork_parent);
	pthread_mutex_unlock(&registry_lock);
}

static void fork_child(void)
{
	rw_table_writable(true);
	FOR_EACH_FORK_HOOK(fork_child);
	rw_table_writable(false);
	if (fork_pipe[0] >= 0) {
		close(fork_pipe[0]);
		close(fork_pipe[1]);
	}
	fork_pipe[0] = fork_pipe[1] = -1;
	pthread_mutex_unlock(&registry_lock);
	/* Only the forking thread lives on; its window state is still true. */
	pthread_mutex_init(&maps_lock, NULL);
}

static int backend_named(const char *name, const struct rw_backend **out)
{
	if (!name || !*name || !strcmp(name, "auto")) {
		/* pkey where the machine has it, else pwrite */
		*out = backend_use(&rw_backend_pkey) ? &rw_backend_pwrite
						     : &rw_backend_pkey;
		return backend_use(*out);
	}
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (!strcmp(name, backends[i].name)) {
			*out = backends[i].backend;
			return backend_use(*out);
		}
	return -EINVAL;
}

static int choose_backend(const struct rw_backend **out)
{
	return backend_named(getenv("RAREWRITE_BACKEND"), out);
}

int rw_backend_lookup(const char *name, const struct rw_backend **out)
{
	int err;

	if (!name) {
		*out = NULL; /* the process-wide default */
		return 0;
	}
	pthread_mutex_lock(&registry_lock);
	err = backend_named(name, out);
	pthread_mutex_unlock(&registry_lock);
	return err;
}

int rare_write_init(void)
{
	static bool atfork_registered;
	const struct rw_backend *b = NULL;
	struct rw_region *r;
	int err;

	if (rw_initialised())
		return 0;
	if (window_depth)
		rw_die("rare_write_init", NULL, "called inside an open window");
	pthread_mutex_lock(&registry_lock);
	if (table.initialised) {
		pthread_mutex_unlock(&registry_lock);
		return 0;
	}
	rw_page_size = (size_t)sysconf(_SC_PAGESIZE);
	err = choose_backend(&b);
	if (err)
		goto out;
	table.backend = b;
	rw_section_check_copies(); /* every section variable is still inside */
	rw_for_each_region(r) {
		if (r->kind != RW_REGION_SECTION || r->protected_)
			continue;
		err = adopt_section(r);
		if (err)
			goto out;
		r->protected_ = true;
	}
	if (!atfork_registered) {
		err = -pthread_atfork(fork_prepare, fork_parent, fork_child);
		if (err)
			goto out;
		atfork_registered = true;
	}
	__atomic_store_n(&table.initialised, true, __ATOMIC_RELEASE);
	if (mprotect(&table, sizeof(table), PROT_READ))
		rw_die("rare_write_init", &table,
		       "cannot protect the region table: %s", strerror(errno));
out:
	pthread_mutex_unlock(&registry_lock);
	return err;
}

const char *rare_write_backend(void)
{
	return rw_initialised() ? table.backend->name : "none";
}

unsigned rare_write_caps(void)
{
	return rw_initialised() ? table.backend->caps : 0;
}
