// SPDX-License-Identifier: MIT
/*
 * base_futex.c - baseline of any design that asks another process to write
 * (the process backend): one futex round trip between two processes over a
 * shared page, request there and answer back.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

enum { IDLE, REQUEST, DONE, QUIT };

static uint32_t *word;
static pid_t partner;

static void futex_wait(uint32_t *w, uint32_t val)
{
	syscall(SYS_futex, w, FUTEX_WAIT, val, NULL, NULL, 0);
}

static void futex_wake(uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void run(void *ctx, uint64_t i)
{
	(void)ctx;
	(void)i;
	__atomic_store_n(word, REQUEST, __ATOMIC_RELEASE);
	futex_wake(word);
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == REQUEST)
		futex_wait(word, REQUEST);
}

static void partner_main(void)
{
	for (;;) {
		uint32_t w = __atomic_load_n(word, __ATOMIC_ACQUIRE);

		if (w == QUIT)
			_exit(0);
		if (w != REQUEST) {
			futex_wait(word, w);
			continue;
		}
		__atomic_store_n(word, DONE, __ATOMIC_RELEASE);
		futex_wake(word);
	}
}

struct bench_op base_futex(void)
{
	if (!word) {
		word = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (word == MAP_FAILED)
			abort();
		partner = fork();
		if (partner < 0)
			abort();
		if (!partner)
			partner_main();
	}
	return (struct bench_op){"futex ping-pong", run, NULL, NULL};
}

void base_futex_stop(void)
{
	if (!partner)
		return;
	__atomic_store_n(word, QUIT, __ATOMIC_RELEASE);
	futex_wake(word);
	waitpid(partner, NULL, 0);
	partner = 0;
}
