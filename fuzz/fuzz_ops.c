// SPDX-License-Identifier: MIT
/*
 * fuzz_ops.c - libFuzzer harness: the input is a program of operations on
 * protected memory (writes, memcpy/memset of any size and offset, begin/end
 * windows, map/unmap, pools, lists, init again), run against the backend in
 * RAREWRITE_BACKEND. After every step protected memory must equal a plain
 * shadow model. Misuse steps run in a forked child that must die by SIGABRT
 * (one per input; FUZZ_NO_MISUSE=1 turns them off).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rarewrite.h>
#include <rarewrite/list.h>

#define ARENA 8192
static unsigned char arena[ARENA] __wr_rare __attribute__((aligned(4096)));
static unsigned char model[ARENA];

static struct rare_list_head lhead __wr_rare = RARE_LIST_HEAD_INIT(lhead);
#define NODES 32
static struct rare_pool *node_pool;
static struct rare_list_head *nodes[NODES];
static int order[NODES], nr_order; /* model of the list: node indices */
static bool in_list[NODES];

#define POOLS 4
#define OBJS 32
struct obj {
	unsigned char *p;
	size_t size;
	unsigned char *model;
};
static struct rare_pool *pools[POOLS];
static struct obj objs[POOLS][OBJS];

static bool misuse_on;

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "fuzz_ops: " __VA_ARGS__);                     \
		fprintf(stderr, "\n");                                         \
		abort();                                                       \
	} while (0)

struct in {
	const uint8_t *p;
	size_t n;
};

static unsigned get(struct in *in, unsigned bytes)
{
	unsigned v = 0;

	for (unsigned i = 0; i < bytes; i++) {
		v <<= 8;
		if (in->n) {
			v |= *in->p++;
			in->n--;
		}
	}
	return v;
}

/* Source bytes: from the input while it lasts, then a pattern. */
static void fill(struct in *in, unsigned char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = in->n ? (in->n--, *in->p++)
			       : (unsigned char)(i * 7 + 1);
}

/* Interesting lengths: 1/2/4/8 (atomic stores) and anything up to @max. */
static size_t pick_len(struct in *in, size_t max)
{
	static const size_t small[] = {1, 2, 4, 8, 3, 16, 7, 64};
	unsigned k = get(in, 1);
	size_t len = k < 128 ? small[k % 8] : 1 + get(in, 2) % max;

	return len > max ? max : len;
}

static void check_all(const char *after)
{
	if (memcmp(arena, model, ARENA)) {
		size_t i = 0;

		while (arena[i] == model[i])
			i++;
		FAIL("after %s: arena[%zu] is %#x, model says %#x", after, i,
		     arena[i], model[i]);
	}
	for (int p = 0; p < POOLS; p++)
		for (int o = 0; o < OBJS; o++)
			if (objs[p][o].p &&
			    memcmp(objs[p][o].p, objs[p][o].model,
				   objs[p][o].size))
				FAIL("after %s: pool object %d/%d differs",
				     after, p, o);
	/* The list, both ways. */
	{
		const struct rare_list_head *pos;
		int i = 0;

		rare_list_for_each(pos, &lhead) {
			if (i >= nr_order || pos != nodes[order[i]])
				FAIL("after %s: list differs at %d", after, i);
			i++;
		}
		if (i != nr_order)
			FAIL("after %s: list has %d entries, model %d", after,
			     i, nr_order);
		for (pos = lhead.prev; pos != &lhead; pos = pos->prev)
			if (--i < 0 || pos != nodes[order[i]])
				FAIL("after %s: backward list differs", after);
	}
}

static struct obj *pick_obj(struct in *in)
{
	int p = (int)(get(in, 1) % POOLS), o = (int)(get(in, 1) % OBJS);

	return objs[p][o].p ? &objs[p][o] : NULL;
}

static void pool_destroy(int p)
{
	for (int o = 0; o < OBJS; o++) {
		free(objs[p][o].model);
		objs[p][o] = (struct obj){0};
	}
	rare_pool_destroy(pools[p]);
	pools[p] = NULL;
}

/* ---- misuse, in a child that must abort ---- */

static void misuse(unsigned kind)
{
	static unsigned char plain[64];
	unsigned char buf[16] = {0};

	switch (kind % 9) {
	case 0: /* outside protected memory */
		rare_write_memcpy(plain, buf, 8);
		break;
	case 1: /* across the end of the arena's section */
		rare_write_memcpy(__stop_rarewrite_data - 4, buf, 8);
		break;
	case 2: /* unbalanced end */
		rare_write_end();
		break;
	case 3: /* begin without the capability, else an overlapping map */
		if (!(rare_write_caps() & RARE_WRITE_CAP_BEGIN_END))
			rare_write_begin();
		rare_write_map(arena, 16);
		rare_write_map(arena + 8, 16);
		break;
	case 4: /* a pointer the pool did not hand out */
		rare_free(node_pool, plain);
		break;
	case 5: { /* double free */
		struct rare_pool *p = rare_pool_create(4096);
		void *o = rare_alloc(p, 32);

		rare_free(p, o);
		rare_free(p, o);
		break;
	}
	case 6: /* the pool's own bookkeeping */
		rare_write_memset(node_pool, 0, 8);
		break;
	case 7: /* a destroyed pool */ {
		struct rare_pool *p = rare_pool_create(4096);

		rare_pool_destroy(p);
		rare_alloc(p, 16);
		break;
	}
	case 8: /* deleting an entry twice */
		if (!in_list[0])
			rare_list_add(nodes[0], &lhead);
		rare_list_del(nodes[0]);
		rare_list_del(nodes[0]);
		break;
	}
}

static void misuse_in_child(unsigned kind)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return;
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, STDERR_FILENO);
		signal(SIGABRT, SIG_DFL); /* not libFuzzer's crash handler */
		misuse(kind);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
		FAIL("misuse %u went undetected (status %#x)", kind % 9,
		     status);
}

/* ---- the interpreter ---- */

static void step(struct in *in, unsigned op, bool *misused)
{
	unsigned char buf[4096];
	unsigned caps = rare_write_caps();

	switch (op % 13) {
	case 0: { /* rare_write_memcpy into the arena */
		size_t len = pick_len(in, ARENA);
		size_t off = get(in, 2) % (ARENA - len + 1);
		unsigned char src[ARENA];

		fill(in, src, len);
		rare_write_memcpy(arena + off, src, len);
		memcpy(model + off, src, len);
		break;
	}
	case 1: { /* rare_write_memset */
		size_t len = pick_len(in, ARENA);
		size_t off = get(in, 2) % (ARENA - len + 1);
		int c = (int)get(in, 1);

		rare_write_memset(arena + off, c, len);
		memset(model + off, c, len);
		break;
	}
	case 2: { /* typed rare_write of an aligned word */
		size_t off = (get(in, 2) % (ARENA / 8)) * 8;
		uint64_t v = ((uint64_t)get(in, 4) << 32) | get(in, 4);

		rare_write(*(uint64_t *)(arena + off), v);
		memcpy(model + off, &v, 8);
		break;
	}
	case 3: { /* begin, direct stores (maybe nested), end */
		unsigned n = 1 + get(in, 1) % 4;
		bool nest = get(in, 1) & 1;

		if (!(caps & RARE_WRITE_CAP_BEGIN_END))
			break;
		rare_write_begin();
		if (nest)
			rare_write_begin();
		for (unsigned i = 0; i < n; i++) {
			size_t len = pick_len(in, 256);
			size_t off = get(in, 2) % (ARENA - len + 1);

			fill(in, arena + off, len);
			memcpy(model + off, arena + off, len);
		}
		if (nest)
			rare_write_end();
		rare_write_end();
		break;
	}
	case 4: { /* map, write through the view, unmap */
		size_t len = pick_len(in, ARENA);
		size_t off = get(in, 2) % (ARENA - len + 1);
		struct rare_write_mapping m = rare_write_map(arena + off, len);
		size_t woff = get(in, 2) % len;
		size_t wlen = 1 + get(in, 2) % (len - woff);

		if (memcmp(m.addr, model + off, len))
			FAIL("map view does not show the current contents");
		fill(in, (unsigned char *)m.addr + woff, wlen);
		memcpy(model + off + woff, (unsigned char *)m.addr + woff,
		       wlen);
		rare_write_unmap(m);
		break;
	}
	case 5: { /* pool create / destroy */
		int p = (int)(get(in, 1) % POOLS);

		if (pools[p]) {
			pool_destroy(p);
		} else {
			size_t cap = 1 + get(in, 3) % (1 << 18);

			pools[p] = rare_pool_create(cap);
			if (!pools[p])
				FAIL("rare_pool_create(%zu) failed", cap);
		}
		break;
	}
	case 6: { /* alloc */
		int p = (int)(get(in, 1) % POOLS), o = (int)(get(in, 1) % OBJS);
		size_t size = 1 + get(in, 2) % 6000;
		unsigned char *x;

		if (!pools[p] || objs[p][o].p)
			break;
		x = rare_alloc(pools[p], size);
		if (!x)
			break; /* full: fine */
		for (size_t i = 0; i < size; i++)
			if (x[i])
				FAIL("rare_alloc returned dirty memory");
		if ((uintptr_t)x % 16)
			FAIL("rare_alloc returned a misaligned object");
		for (int q = 0; q < POOLS; q++)
			for (int k = 0; k < OBJS; k++)
				if (objs[q][k].p &&
				    x < objs[q][k].p + objs[q][k].size &&
				    objs[q][k].p < x + size)
					FAIL("rare_alloc overlaps a live "
					     "object");
		objs[p][o] = (struct obj){x, size, calloc(1, size)};
		break;
	}
	case 7: { /* free */
		int p = (int)(get(in, 1) % POOLS), o = (int)(get(in, 1) % OBJS);

		if (!objs[p][o].p)
			break;
		rare_free(pools[p], objs[p][o].p);
		free(objs[p][o].model);
		objs[p][o] = (struct obj){0};
		break;
	}
	case 8: { /* write into a pool object */
		struct obj *x = pick_obj(in);
		size_t len, off;

		if (!x)
			break;
		len = pick_len(in, x->size);
		off = get(in, 2) % (x->size - len + 1);
		if (get(in, 1) & 1) {
			fill(in, buf, len < sizeof(buf) ? len : sizeof(buf));
			len = len < sizeof(buf) ? len : sizeof(buf);
			rare_write_memcpy(x->p + off, buf, len);
			memcpy(x->model + off, buf, len);
		} else {
			int c = (int)get(in, 1);

			rare_write_memset(x->p + off, c, len);
			memset(x->model + off, c, len);
		}
		break;
	}
	case 9: { /* list add / add_tail */
		int n = (int)(get(in, 1) % NODES);

		if (in_list[n])
			break;
		if (get(in, 1) & 1) {
			rare_list_add(nodes[n], &lhead);
			memmove(order + 1, order,
				sizeof(int) * (size_t)nr_order);
			order[0] = n;
		} else {
			rare_list_add_tail(nodes[n], &lhead);
			order[nr_order] = n;
		}
		nr_order++;
		in_list[n] = true;
		break;
	}
	case 10: { /* list del */
		int i;

		if (!nr_order)
			break;
		i = (int)(get(in, 1) % (unsigned)nr_order);
		rare_list_del(nodes[order[i]]);
		if (nodes[order[i]]->next != RARE_LIST_POISON1)
			FAIL("deleted entry is not poisoned");
		in_list[order[i]] = false;
		memmove(order + i, order + i + 1,
			sizeof(int) * (size_t)(nr_order - i - 1));
		nr_order--;
		break;
	}
	case 11: /* init again: idempotent, same backend */ {
		const char *b = rare_write_backend();

		if (rare_write_init() || strcmp(b, rare_write_backend()))
			FAIL("second rare_write_init changed something");
		break;
	}
	case 12: /* misuse, once per input, in a child */
		if (misuse_on && !*misused) {
			*misused = true;
			misuse_in_child(get(in, 1));
		}
		break;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int err;

	(void)argc;
	(void)argv;
	err = rare_write_init();
	if (err) {
		fprintf(stderr, "fuzz_ops: rare_write_init: %s\n",
			strerror(-err));
		exit(1);
	}
	node_pool = rare_pool_create(NODES * 16);
	for (int i = 0; i < NODES; i++)
		nodes[i] = rare_alloc(node_pool, sizeof(struct rare_list_head));
	memcpy(model, arena, ARENA);
	misuse_on = !getenv("FUZZ_NO_MISUSE");
	fprintf(stderr, "fuzz_ops: backend %s\n", rare_write_backend());
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	bool misused = false;
	static const char *const names[] = {
		"memcpy",    "memset",	  "rare_write",
		"begin/end", "map/unmap", "pool create/destroy",
		"alloc",     "free",	  "pool write",
		"list add",  "list del",  "init",
		"misuse"};

	for (unsigned steps = 0; in.n && steps < 64; steps++) {
		unsigned op = get(&in, 1);

		step(&in, op, &misused);
		check_all(names[op % 13]);
	}
	/* Leave nothing behind for the next input but the arena. */
	while (nr_order) {
		rare_list_del(nodes[order[--nr_order]]);
		in_list[order[nr_order]] = false;
	}
	for (int p = 0; p < POOLS; p++)
		if (pools[p])
			pool_destroy(p);
	check_all("cleanup");
	return 0;
}
