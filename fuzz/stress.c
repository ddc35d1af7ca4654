// SPDX-License-Identifier: MIT
/*
 * stress.c - many threads, many mixed operations, on the backend in
 * RAREWRITE_BACKEND:
 *
 *	stress [threads [ops-per-thread]]     (default 16 x STRESS_OPS or 1e6)
 *	stress cycles N                       pool create/destroy, leak check
 *
 * Readers check that the shared words are never torn (every value written
 * has eight equal bytes); writers count their own increments of their own
 * protected counter and check at the end that none was lost; pool objects
 * are checked after every write. Exit 0 when nothing was lost or torn.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rarewrite.h>

#define MAX_THREADS 64
#define SHARED 8

static uint64_t shared[SHARED] __wr_rare __attribute__((aligned(64)));
/* One counter per thread, 8 per cache line: neighbours share pages. */
static uint64_t counters[MAX_THREADS] __wr_rare;

static struct rare_pool *pool;
static unsigned long nr_ops;
static unsigned long torn, lost, bad_obj;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static bool torn_value(uint64_t v)
{
	return v != (v & 0xff) * 0x0101010101010101ULL;
}

static void *reader(void *arg)
{
	unsigned long seen = 0;

	(void)arg;
	for (unsigned long i = 0; i < nr_ops; i++) {
		uint64_t v =
			__atomic_load_n(&shared[i % SHARED], __ATOMIC_RELAXED);

		if (torn_value(v)) {
			__atomic_fetch_add(&torn, 1, __ATOMIC_RELAXED);
			if (seen++ < 3)
				fprintf(stderr, "torn: %#llx\n",
					(unsigned long long)v);
		}
	}
	return NULL;
}

static void *writer(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint64_t s = 0x9e3779b97f4a7c15ULL * (t + 1), mine = 0;
	bool begin_end = rare_write_caps() & RARE_WRITE_CAP_BEGIN_END;

	for (unsigned long i = 0; i < nr_ops; i++) {
		unsigned op = (unsigned)(rnd(&s) % 100);

		if (op < 40) { /* increment my counter */
			rare_write(counters[t], counters[t] + 1);
			mine++;
		} else if (op < 45) { /* the same through a map */
			struct rare_write_mapping m =
				rare_write_map(&counters[t], 8);

			*(uint64_t *)m.addr += 1;
			rare_write_unmap(m);
			mine++;
		} else if (op < 50 && begin_end) { /* a window */
			rare_write_begin();
			counters[t]++;
			rare_write_end();
			mine++;
		} else if (op < 90) { /* a shared word, never torn */
			uint64_t b = rnd(&s) & 0xff;

			rare_write(shared[b % SHARED],
				   b * 0x0101010101010101ULL);
		} else if (op < 95) { /* read the shared words */
			for (unsigned k = 0; k < SHARED; k++)
				if (torn_value(__atomic_load_n(
					    &shared[k], __ATOMIC_RELAXED)))
					__atomic_fetch_add(&torn, 1,
							   __ATOMIC_RELAXED);
		} else { /* pool object: alloc, write, check, free */
			size_t size = 16 + rnd(&s) % 3000;
			unsigned char *o = rare_alloc(pool, size);
			unsigned char c = (unsigned char)t;

			if (!o)
				continue; /* full for a moment */
			rare_write_memset(o, c, size);
			for (size_t k = 0; k < size; k++)
				if (o[k] != c) {
					__atomic_fetch_add(&bad_obj, 1,
							   __ATOMIC_RELAXED);
					break;
				}
			rare_free(pool, o);
		}
	}
	if (counters[t] != mine) {
		fprintf(stderr, "thread %u: counter %llu, %llu increments\n", t,
			(unsigned long long)counters[t],
			(unsigned long long)mine);
		__atomic_fetch_add(&lost, mine - counters[t], __ATOMIC_RELAXED);
	}
	return NULL;
}

static long status_kb(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key) + 1);
	if (f)
		fclose(f);
	return v;
}

static long count_entries(const char *path, bool lines)
{
	long n = 0;

	if (lines) {
		FILE *f = fopen(path, "r");
		int c;

		while (f && (c = fgetc(f)) != EOF)
			n += c == '\n';
		if (f)
			fclose(f);
	} else {
		DIR *d = opendir(path);

		while (d && readdir(d))
			n++;
		if (d)
			closedir(d);
	}
	return n;
}

/* Pool create/destroy cycles: descriptors, mappings and RSS stay flat. */
static int cycles(unsigned long n)
{
	long fds0 = 0, maps0 = 0, rss0 = 0;

	for (unsigned long i = 0; i < n; i++) {
		struct rare_pool *p = rare_pool_create(1 << 16);
		void *o[8];

		if (!p) {
			perror("rare_pool_create");
			return 1;
		}
		for (int k = 0; k < 8; k++)
			o[k] = rare_alloc(p, 100 + 500 * (size_t)k);
		for (int k = 0; k < 8; k += 2)
			rare_free(p, o[k]);
		rare_pool_destroy(p);
		if (i == n / 10) { /* after warm-up */
			fds0 = count_entries("/proc/self/fd", false);
			maps0 = count_entries("/proc/self/maps", true);
			rss0 = status_kb("VmRSS:");
		}
	}
	long fds = count_entries("/proc/self/fd", false);
	long maps = count_entries("/proc/self/maps", true);
	long rss = status_kb("VmRSS:");

	printf("cycles %lu: fds %ld -> %ld, mappings %ld -> %ld, "
	       "RSS %ld -> %ld kB\n",
	       n, fds0, fds, maps0, maps, rss0, rss);
	return fds > fds0 || maps > maps0 || rss > rss0 + 1024;
}

int main(int argc, char **argv)
{
	unsigned threads = 16;
	const char *env = getenv("STRESS_OPS");
	pthread_t tid[MAX_THREADS];
	int err = rare_write_init();

	if (err) {
		fprintf(stderr, "stress: rare_write_init: %s\n",
			strerror(-err));
		return 2;
	}
	if (argc > 2 && !strcmp(argv[1], "cycles"))
		return cycles(strtoul(argv[2], NULL, 0));
	nr_ops = env ? strtoul(env, NULL, 0) : 1000000;
	if (argc > 1)
		threads = (unsigned)atoi(argv[1]);
	if (argc > 2)
		nr_ops = strtoul(argv[2], NULL, 0);
	if (threads < 2 || threads > MAX_THREADS)
		threads = 16;
	pool = rare_pool_create(1 << 20);
	if (!pool) {
		perror("rare_pool_create");
		return 2;
	}
	/* A quarter of the threads only read. */
	for (unsigned t = 0; t < threads; t++)
		pthread_create(&tid[t], NULL, t < threads / 4 ? reader : writer,
			       (void *)(uintptr_t)t);
	for (unsigned t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	printf("stress %s: %u threads x %lu ops: %lu torn, %lu lost, "
	       "%lu bad objects\n",
	       rare_write_backend(), threads, nr_ops, torn, lost, bad_obj);
	return torn || lost || bad_obj;
}
