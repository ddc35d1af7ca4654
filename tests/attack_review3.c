// SPDX-License-Identifier: MIT
/*
 * attack_review3.c - scenarios 25a-25c, from the outside review of the
 * process backend's answer path (branch review3). Each fails when the
 * attack lands (the table says "blocked").
 *
 * 25a: a pool is created while another thread of the program writes (so
 * the process backend's request lock is contended). ctl() builds the
 * SCM_RIGHTS control message of the ADD request, the region's memfd, on
 * its stack before it waits for req_lock. The attacker's thread rewrites
 * the descriptor number there to the core table's vault memfd
 * (rw_table.vault_fd, readable memory). The helper gets the vault, finds
 * it sealed against shrinking and big enough, maps it writable as the new
 * pool, and every later write of the program to that pool lands in the
 * library's table: the pool's head overwrites the table's first 96 bytes
 * (initialised, vault_fd, the default backend's ops pointer, used[]).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "attack.h"
#include "../src/table.h"

#define R3_POOL_MAGIC 0x72617265706f6f6cULL /* pool_layout.h */
#define R3_STACK (256u << 10)

static unsigned char r3_big[65536] __wr_rare __attribute__((aligned(4096)));

static bool r3_is_process(void)
{
	return !strcmp(rare_write_backend(), "process");
}

/* ---- 25a ---- */

static struct {
	uint64_t *lo, *hi; /* the victim thread's stack */
	int vault_fd;
	volatile int stop;
	volatile unsigned long stores;
	volatile int landed;
} r3a;

static void *r3a_writer(void *p)
{
	static unsigned char src[sizeof(r3_big)];

	(void)p;
	memset(src, 0x5a, sizeof(src));
	while (!r3a.stop)
		rare_write_memcpy(r3_big, src, sizeof(src));
	return NULL;
}

/* The attacker: rewrite the fd of every SCM_RIGHTS control message it sees
 * on the victim's stack ({cmsg_len 20, SOL_SOCKET, SCM_RIGHTS, fd}). */
__attribute__((no_sanitize_address)) static void *r3a_attacker(void *p)
{
	const uint64_t *table = (const uint64_t *)attack_lib_sym("rw_table");

	(void)p;
	while (!r3a.stop) {
		for (volatile uint64_t *w = r3a.lo; w + 2 < r3a.hi; w++) {
			if (w[0] != 20 || w[1] != 0x0000000100000001ULL)
				continue;
			volatile int32_t *fd = (volatile int32_t *)&w[2];
			int32_t v = *fd;

			if (v >= 0 && v < 4096 && v != r3a.vault_fd) {
				*fd = r3a.vault_fd;
				r3a.stores++;
			}
		}
		if (table && attack_load64(table) == R3_POOL_MAGIC &&
		    !r3a.landed) {
			r3a.landed = 1;
			attack_landed("a pool's head was written into the "
				      "library's region table (its vault)");
		}
	}
	return NULL;
}

static void *r3a_victim(void *p)
{
	const uint64_t *table = (const uint64_t *)attack_lib_sym("rw_table");
	unsigned long *tries = p;

	for (unsigned i = 0; i < 300 && !r3a.landed; i++) {
		struct rare_pool *pool = rare_pool_create(4096);

		++*tries;
		if (!pool)
			continue;
		if (attack_load64(table) == R3_POOL_MAGIC) {
			r3a.landed = 1;
			attack_landed("a pool's head was written into the "
				      "library's region table (its vault)");
			break;
		}
		rare_pool_destroy(pool);
	}
	return NULL;
}

ATTACK("25a", review3_add_fd_swap,
       "while another thread writes, rewrite the memfd number in the ADD "
       "request's control message on the stack (built before the request "
       "lock) to the core table's vault memfd, then create a pool")
{
	pthread_t v, w, a;
	pthread_attr_t attr;
	unsigned long tries = 0;
	void *stack;

	if (!r3_is_process())
		attack_report(ATTACK_NA, "no helper");
	if (!attack_lib_sym("rw_table"))
		attack_report(ATTACK_ERROR, "no rw_table symbol");
	r3a.vault_fd = ((struct rw_table *)attack_lib_sym("rw_table"))->vault_fd;
	stack = mmap(NULL, R3_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED)
		attack_report(ATTACK_ERROR, "mmap");
	r3a.lo = stack;
	r3a.hi = (uint64_t *)((char *)stack + R3_STACK);
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, stack, R3_STACK);
	attack_begin();
	pthread_create(&w, NULL, r3a_writer, NULL);
	pthread_create(&a, NULL, r3a_attacker, NULL);
	pthread_create(&v, &attr, r3a_victim, &tries);
	pthread_join(v, NULL);
	if (r3a.landed)
		attack_report(ATTACK_OPEN,
			      "a pool's head was written into the library's "
			      "region table (vault fd %d) after %lu pools, %lu "
			      "stores",
			      r3a.vault_fd, tries, r3a.stores);
	r3a.stop = 1;
	pthread_join(w, NULL);
	pthread_join(a, NULL);
	attack_report(ATTACK_BLOCKED, "%lu pools, %lu stores, table intact",
		      tries, r3a.stores);
}
