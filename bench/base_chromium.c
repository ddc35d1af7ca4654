// SPDX-License-Identifier: MIT
/*
 * base_chromium.c - the design most user-space code uses today, after
 * Chromium's base::ProtectedMemory: one linker section holds all protected
 * data; its first object is the writers count; a writer takes the lock,
 * makes the whole section RW if it is the first writer, raises the count,
 * stores, and the last writer makes the section RO again (AutoWritableMemory
 * construction and destruction, each under the lock).
 *
 * The section here is one page (the count and the datum), the smallest and
 * so the cheapest section Chromium can have: the comparison favours it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "bench.h"

struct protected_memory {
	uint64_t writers;
	uint64_t word;
} __attribute__((aligned(4096)));

static struct protected_memory pm
	__attribute__((section("protected_memory"), used)) = {0, 1};
extern char __start_protected_memory[]
	__attribute__((weak, visibility("hidden")));
extern char __stop_protected_memory[]
	__attribute__((weak, visibility("hidden")));

static pthread_mutex_t pm_lock = PTHREAD_MUTEX_INITIALIZER;
static bool sealed;

static void set_prot(int prot)
{
	if (mprotect(__start_protected_memory,
		     (size_t)(__stop_protected_memory -
			      __start_protected_memory),
		     prot))
		abort();
}

static void writable_begin(void)
{
	pthread_mutex_lock(&pm_lock);
	if (!pm.writers)
		set_prot(PROT_READ | PROT_WRITE);
	pm.writers++;
	pthread_mutex_unlock(&pm_lock);
}

static void writable_end(void)
{
	pthread_mutex_lock(&pm_lock);
	if (!--pm.writers)
		set_prot(PROT_READ);
	pthread_mutex_unlock(&pm_lock);
}

static void run(void *ctx, uint64_t i)
{
	(void)ctx;
	writable_begin();
	__atomic_store_n(&pm.word, i, __ATOMIC_RELAXED);
	writable_end();
}

struct bench_op base_chromium(void)
{
	if (!sealed) { /* ProtectedMemoryInitializer: RO from first use */
		set_prot(PROT_READ);
		sealed = true;
	}
	return (struct bench_op){"chromium-style section flip", run, NULL,
				 &pm.word};
}
