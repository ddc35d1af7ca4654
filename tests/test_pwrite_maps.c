// SPDX-License-Identifier: MIT
/*
 * What /proc/self/maps shows while writes run: the pwrite backend never has
 * a writable mapping of protected memory; the shadow backend's alias is a
 * writable mapping at another address, and only while a write runs.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>

#include "harness.h"
#include "testutil.h"

static long value __wr_rare;
static unsigned char blob[2 * 4096] __wr_rare __attribute__((aligned(4096)));

static struct rare_pool *pool;
static long *obj;
static volatile bool stop;
static volatile unsigned long writes;

struct range {
	uintptr_t lo, hi;
};

static char maps_buf[1 << 20];

static size_t read_maps(void)
{
	int fd = open("/proc/self/maps", O_RDONLY);
	size_t got = 0;
	ssize_t n;

	CHECK(fd >= 0);
	while ((n = read(fd, maps_buf + got, sizeof(maps_buf) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	maps_buf[got] = 0;
	return got;
}

/* The bounds of the mapping that holds @p. */
static struct range mapping_of(const void *p)
{
	uintptr_t a = (uintptr_t)p;

	read_maps();
	for (char *line = maps_buf; line && *line;) {
		uintptr_t lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= a && a < hi)
			return (struct range){lo, hi};
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	CHECK(!"address not mapped");
	return (struct range){0, 0};
}

/* Whether the maps line of the mapping holding @p contains @what. */
/* /proc/self/maps prints addresses as %08lx: low non-PIE ones are padded. */
static bool maps_line_has(const void *p, const char *what)
{
	struct range r = mapping_of(p);
	char want[40], *line, *end;
	bool has;

	snprintf(want, sizeof(want), "%08lx-%08lx ", (unsigned long)r.lo,
		 (unsigned long)r.hi);
	line = strstr(maps_buf, want);
	CHECK(line);
	end = strchr(line, '\n');
	if (end)
		*end = 0;
	has = strstr(line, what) != NULL;
	if (end)
		*end = '\n';
	return has;
}

static void *writer(void *unused)
{
	(void)unused;
	for (long i = 0; !stop; i++) {
		struct rare_write_mapping m;

		rare_write(value, i);
		rare_write(*obj, i);
		rare_write_memset(blob, (int)i, sizeof(blob));
		m = rare_write_map(blob + 100, 200);
		memset(m.addr, (int)i + 1, 200);
		rare_write_unmap(m);
		__atomic_add_fetch(&writes, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void start_writer(pthread_t *t)
{
	pool = rare_pool_create(1 << 16);
	CHECK(pool);
	obj = rare_alloc(pool, 64);
	CHECK(obj);
	CHECK(pthread_create(t, NULL, writer, NULL) == 0);
	while (!writes)
		sched_yield();
}

static void stop_writer(pthread_t t)
{
	stop = true;
	pthread_join(t, NULL);
}

/* Checks every line of maps_buf; returns how many looked writable and
 * protected, printing the first. */
static unsigned bad_lines(const struct range *prot, unsigned nr)
{
	unsigned bad = 0;

	for (char *line = maps_buf, *end; *line; line = end + 1) {
		uintptr_t lo, hi;
		char perms[8];

		end = strchr(line, '\n');
		if (!end)
			break;
		*end = 0;
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
			continue;
		if (perms[1] != 'w')
			goto next;
		if (strstr(line, "memfd:rarewrite")) {
			if (!bad++)
				fprintf(stderr, "writable memfd: %s\n", line);
			goto next;
		}
		for (unsigned i = 0; i < nr; i++)
			if (lo < prot[i].hi && prot[i].lo < hi && !bad++)
				fprintf(stderr, "writable protected: %s\n",
					line);
next:
		*end = '\n';
	}
	return bad;
}

TEST(pwrite_never_maps_protected_memory_writable, EXPECT_PASS)
{
	struct range prot[2];
	double start;
	unsigned long scans = 0, before;
	pthread_t t;

	init();
	if (strcmp(rare_write_backend(), "pwrite"))
		SKIP("pwrite only");
	start_writer(&t);
	prot[0] = (struct range){(uintptr_t)__start_rarewrite_data,
				 (uintptr_t)__stop_rarewrite_data};
	prot[1] = mapping_of(pool);
	CHECK(prot[1].hi > (uintptr_t)obj);
	before = writes;
	/* At least 0.7 s, and until both sides did some work: a loaded
	 * machine may starve the writer for a while (at most 30 s). */
	start = now_seconds();
	while (now_seconds() < start + 0.7 ||
	       ((scans <= 10 || writes <= before + 10) &&
		now_seconds() < start + 30)) {
		read_maps();
		scans++;
		if (bad_lines(prot, 2)) {
			stop_writer(t);
			CHECK(!"writable mapping of protected memory");
		}
	}
	stop_writer(t);
	CHECK(scans > 10 && writes > before + 10);
	/* sanity: the section and the pool really are read-only shared
	 * memfd views */
	CHECK(maps_line_has(blob, "r--s") &&
	      maps_line_has(blob, "memfd:rarewrite"));
	CHECK(maps_line_has(obj, "r--s") &&
	      maps_line_has(obj, "memfd:rarewrite"));
}

/* shadow: the alias exists while a map is open, writable, elsewhere; it
 * is gone after unmap. */
TEST(shadow_alias_visible_only_while_mapped, EXPECT_PASS)
{
	struct rare_write_mapping m;
	struct range none = {0, 0};
	char want[32];

	init();
	if (strcmp(rare_write_backend(), "shadow"))
		SKIP("shadow only");
	read_maps();
	CHECK(bad_lines(&none, 1) == 0);
	m = rare_write_map(&value, sizeof(value));
	snprintf(want, sizeof(want), "%08lx-",
		 (unsigned long)((uintptr_t)m.addr & ~(page_size() - 1)));
	read_maps();
	CHECK(strstr(maps_buf, want));
	CHECK(bad_lines(&none, 1) == 1); /* one rw memfd:rarewrite line */
	rare_write_unmap(m);
	read_maps();
	CHECK(!strstr(maps_buf, want) || bad_lines(&none, 1) == 0);
	CHECK(bad_lines(&none, 1) == 0);
}
