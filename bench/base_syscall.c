// SPDX-License-Identifier: MIT
/* base_syscall.c - baseline: the cheapest system call, getppid(). */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"

static uint64_t word;

static void run(void *ctx, uint64_t i)
{
	(void)ctx;
	(void)i;
	syscall(SYS_getppid);
}

struct bench_op base_syscall(void)
{
	return (struct bench_op){"null syscall", run, NULL, &word};
}
