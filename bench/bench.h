/* SPDX-License-Identifier: MIT */
/*
 * bench.h - the benchmark's shared pieces: timing, statistics, reader
 * threads, result records, and the baselines and library operations that
 * main.c puts side by side.
 *
 * Every figure comes from measure_set(): the operations of one set are run
 * in alternating blocks, so a baseline and the library operation it is
 * compared with see the same machine state (the machines are shared and
 * noisy; ratios from one interleaved run are what the targets judge).
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One timed operation; @run does it once with iteration number @i. */
struct bench_op {
	const char *name;
	void (*run)(void *ctx, uint64_t i);
	void *ctx;
	/* What a concurrent reader thread loads while this op is timed. */
	const volatile uint64_t *read_target;
};

struct stats {
	double med, p99; /* nanoseconds per operation */
	unsigned n;	 /* samples kept (warm-up discarded) */
	unsigned batch;	 /* operations per sample */
};

/* harness.c */
extern bool bench_quick;
uint64_t now_ns(void);
void bench_init(void);
/* Time the @k ops of @ops in alternating blocks, optionally with a reader
 * thread loading their read targets; results in @out[k]. */
void measure_set(const struct bench_op *ops, unsigned k, bool reader,
		 struct stats *out);
/* Resident set size of the process in bytes. */
size_t rss_bytes(void);
/* Emit one record (to the parent through fd 3 in a child, else stored). */
void record(const char *backend, const char *what, const char *mode,
	    const char *unit, double v1, double v2, unsigned n);
uint64_t rng_next(uint64_t *state);

/* Baselines, one file each: constructors of an op for @len bytes. */
struct bench_op base_store(void);
struct bench_op base_wrpkru(void);
struct bench_op base_syscall(void);
struct bench_op base_pwrite(size_t len);
struct bench_op base_mprotect(size_t len);
struct bench_op base_mprotect_within(size_t len);
struct bench_op base_alias(size_t len);
struct bench_op base_futex(void);
void base_futex_stop(void);
struct bench_op base_chromium(void);

/* The library: backend child entry points (lib_ops.c, workloads). */
void run_backend_suite(const char *requested, bool auto_only);
const char *mechanism_name(const char *backend);
void run_hashtable(const char *backend);
void run_pool_memory(const char *backend);
void run_reads(const char *backend);

#endif /* BENCH_H */
