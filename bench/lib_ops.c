// SPDX-License-Identifier: MIT
/*
 * lib_ops.c - the library's operations, each timed in one set with the raw
 * mechanism its backend is built on (same size), so the ratio of the two
 * is the library's own overhead; rare_write of 8 bytes is also timed
 * against the Chromium-style reference.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rarewrite.h>
#include <rarewrite/list.h>

#include "bench.h"

#define NR_STORES 64

static struct prot_data {
	unsigned char buf64k[65536] __attribute__((aligned(4096)));
	unsigned char buf4k[4096] __attribute__((aligned(4096)));
	uint64_t word __attribute__((aligned(4096)));
	uint64_t words[NR_STORES];
	unsigned char map_area[256];
	struct rare_list_head head, node;
} prot __wr_rare = {.head = RARE_LIST_HEAD_INIT(prot.head)};

static unsigned char src64k[65536];
static struct rare_pool *pool;

static void op_write8(void *ctx, uint64_t i)
{
	(void)ctx;
	rare_write(prot.word, i);
}

static void op_memcpy4k(void *ctx, uint64_t i)
{
	(void)ctx;
	memcpy(src64k, &i, sizeof(i));
	rare_write_memcpy(prot.buf4k, src64k, sizeof(prot.buf4k));
}

static void op_memcpy64k(void *ctx, uint64_t i)
{
	(void)ctx;
	memcpy(src64k, &i, sizeof(i));
	rare_write_memcpy(prot.buf64k, src64k, sizeof(prot.buf64k));
}

static void op_window64(void *ctx, uint64_t i)
{
	(void)ctx;
	rare_write_begin();
	for (unsigned j = 0; j < NR_STORES; j++)
		__atomic_store_n(&prot.words[j], i, __ATOMIC_RELAXED);
	rare_write_end();
}

static void op_separate64(void *ctx, uint64_t i)
{
	(void)ctx;
	for (unsigned j = 0; j < NR_STORES; j++)
		rare_write(prot.words[j], i);
}

static void op_map256(void *ctx, uint64_t i)
{
	struct rare_write_mapping m;

	(void)ctx;
	m = rare_write_map(prot.map_area, sizeof(prot.map_area));
	memset(m.addr, (int)i, sizeof(prot.map_area));
	rare_write_unmap(m);
}

static void op_list(void *ctx, uint64_t i)
{
	(void)ctx;
	(void)i;
	rare_list_add(&prot.node, &prot.head);
	rare_list_del(&prot.node);
}

static void op_alloc(void *ctx, uint64_t i)
{
	void *p = rare_alloc(pool, 32);

	(void)ctx;
	(void)i;
	if (!p)
		abort();
	rare_free(pool, p);
}

static struct bench_op raw_op(const char *name, size_t len);
/* base_seqpacket.c: the process backend's own transport, raw. */
struct bench_op base_seqpacket(void);

const char *mechanism_name(const char *name)
{
	static const char *const map[][2] = {
		{"pwrite", "raw pwrite"},
		{"mprotect", "raw mprotect pair"},
		{"shadow", "raw mmap/munmap alias"},
		{"process", "futex ping-pong"},
		{"pkey", "2 WRPKRU and a store"},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(name, map[i][0]))
			return map[i][1];
	return "null syscall";
}

/* The raw mechanism under backend @name, for writes of @len bytes. */
static struct bench_op mechanism(const char *name, size_t len)
{
	struct bench_op op = raw_op(name, len);

	op.name = "mech";
	return op;
}

static struct bench_op raw_op(const char *name, size_t len)
{
	if (!strcmp(name, "pwrite"))
		return base_pwrite(len);
	if (!strcmp(name, "mprotect"))
		return base_mprotect(len);
	if (!strcmp(name, "shadow"))
		return base_alias(len);
	if (!strcmp(name, "process"))
		return base_futex();
	if (!strcmp(name, "pkey"))
		return base_wrpkru();
	return base_syscall();
}

static void emit(const char *backend, const char *what, const char *mode,
		 const struct bench_op *ops, const struct stats *st, unsigned k)
{
	char name[96];

	for (unsigned j = 0; j < k; j++) {
		if (j == 0)
			snprintf(name, sizeof(name), "%s", what);
		else
			snprintf(name, sizeof(name), "%s/%s", what,
				 ops[j].name);
		record(backend, name, mode, "ns", st[j].med, st[j].p99,
		       st[j].n);
	}
}

static void run_set(const char *backend, const char *what, struct bench_op *ops,
		    unsigned k)
{
	static const char *const modes[] = {"alone", "reader"};
	struct stats st[8];

	for (int m = 0; m < 2; m++) {
		fprintf(stderr, "  %-9s %-10s %s\n", backend, what, modes[m]);
		measure_set(ops, k, m == 1, st);
		emit(backend, what, modes[m], ops, st, k);
	}
}

void run_backend_suite(const char *backend, bool auto_only)
{
	const char *name = rare_write_backend();
	const volatile uint64_t *rt = &prot.word;
	struct bench_op ops[4];

	if (auto_only) {
		/* auto: rare_write against the Chromium-style reference. */
		ops[0] = (struct bench_op){"rare_write", op_write8, NULL, rt};
		ops[1] = mechanism(name, 8);
		ops[2] = base_chromium();
		ops[2].name = "chromium";
		run_set(backend, "write8", ops, 3);
		return;
	}
	pool = rare_pool_create(1 << 20);
	if (!pool)
		abort();

	ops[0] = (struct bench_op){"rare_write", op_write8, NULL, rt};
	ops[1] = mechanism(name, 8);
	ops[2] = base_chromium();
	ops[2].name = "chromium";
	if (!strcmp(name, "mprotect")) {
		ops[3] = base_mprotect_within(8);
		ops[3].name = "within";
		run_set(backend, "write8", ops, 4);
	} else if (!strcmp(name, "process")) {
		/* Its requests are sendmsg() + a reply: that, raw, too. */
		ops[3] = base_seqpacket();
		ops[3].name = "seqpacket";
		run_set(backend, "write8", ops, 4);
	} else {
		run_set(backend, "write8", ops, 3);
	}

	ops[0] = (struct bench_op){"memcpy", op_memcpy4k, NULL,
				   (const uint64_t *)prot.buf4k};
	ops[1] = mechanism(name, 4096);
	run_set(backend, "memcpy4k", ops, 2);

	ops[0] = (struct bench_op){"memcpy", op_memcpy64k, NULL,
				   (const uint64_t *)prot.buf64k};
	ops[1] = mechanism(name, 65536);
	run_set(backend, "memcpy64k", ops, 2);

	ops[0] = (struct bench_op){"separate", op_separate64, NULL, prot.words};
	ops[1] = mechanism(name, 8);
	if (rare_write_caps() & RARE_WRITE_CAP_BEGIN_END) {
		ops[2] = (struct bench_op){"window", op_window64, NULL,
					   prot.words};
		run_set(backend, "stores64", ops, 3);
	} else {
		run_set(backend, "stores64", ops, 2);
	}

	ops[0] = (struct bench_op){"map", op_map256, NULL,
				   (const uint64_t *)prot.map_area};
	ops[1] = mechanism(name, 256);
	run_set(backend, "map256", ops, 2);

	ops[0] = (struct bench_op){"list", op_list, NULL,
				   (const uint64_t *)&prot.head};
	ops[1] = mechanism(name, 8);
	run_set(backend, "list", ops, 2);

	ops[0] = (struct bench_op){"alloc", op_alloc, NULL, rt};
	ops[1] = mechanism(name, 8);
	run_set(backend, "alloc", ops, 2);
	rare_pool_destroy(pool);
}
