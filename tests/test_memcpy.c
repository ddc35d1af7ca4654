// SPDX-License-Identifier: MIT
/* rare_write_memcpy / rare_write_memset: sizes, offsets, page straddles. */
#include <stdint.h>

#include "harness.h"
#include "testutil.h"

/* Three pages of the program's section, page aligned. */
static unsigned char sect[3 * 4096] __wr_rare __attribute__((aligned(4096)));

#define POOL_BUF (72 * 1024)

static unsigned char ref[POOL_BUF];
static unsigned char src[POOL_BUF];

static const size_t sizes[] = {1,    2,	   3,	 4,    5,    7,	   8,
			       9,    15,   16,	 17,   31,   32,   63,
			       64,   100,  255,	 256,  511,  1000, 4095,
			       4096, 4097, 8191, 8192, 8193, 65536};
static const size_t offsets[] = {0, 1, 2, 3, 4, 7, 8, 15, 16, 4090, 4095};

static void fill_src(unsigned seed)
{
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 31 + seed * 17 + (i >> 8));
}

/* Every combination that fits in @len bytes at @buf, checked against a
 * plain-memory reference after each write. */
static void exercise(unsigned char *buf, size_t len)
{
	unsigned seed = 1;

	memcpy(ref, buf, len);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (size_t o = 0; o < sizeof(offsets) / sizeof(offsets[0]);
		     o++) {
			size_t n = sizes[s], off = offsets[o];

			if (off + n > len)
				continue;
			fill_src(seed++);
			rare_write_memcpy(buf + off, src, n);
			memcpy(ref + off, src, n);
			CHECK(memcmp(buf, ref, len) == 0);
			rare_write_memset(buf + off, (int)(seed & 0xff), n);
			memset(ref + off, (int)(seed & 0xff), n);
			CHECK(memcmp(buf, ref, len) == 0);
		}
}

TEST(memcpy_sizes_offsets_section, EXPECT_PASS)
{
	init();
	exercise(sect, sizeof(sect));
}

TEST(memcpy_sizes_offsets_pool, EXPECT_PASS)
{
	struct rare_pool *pool;
	unsigned char *buf;

	init();
	pool = rare_pool_create(POOL_BUF + 16 * 4096);
	CHECK(pool);
	buf = rare_alloc(pool, POOL_BUF);
	CHECK(buf);
	exercise(buf, POOL_BUF);
}

/* Writes that straddle page boundaries of the section, at every offset
 * around the boundary, with neighbouring bytes untouched. */
TEST(memcpy_straddles_pages, EXPECT_PASS)
{
	size_t pg = page_size();

	init();
	CHECK(sizeof(sect) >= 3 * pg);
	memcpy(ref, sect, sizeof(sect));
	for (size_t n = 2; n <= 24; n++)
		for (size_t back = 1; back < n; back++) {
			size_t off = pg - back;

			fill_src((unsigned)(n * 100 + back));
			rare_write_memcpy(sect + off, src, n);
			memcpy(ref + off, src, n);
			CHECK(memcmp(sect, ref, sizeof(sect)) == 0);
			/* across the second boundary too, with memset */
			rare_write_memset(sect + 2 * pg - back, (int)n, n);
			memset(ref + 2 * pg - back, (int)n, n);
			CHECK(memcmp(sect, ref, sizeof(sect)) == 0);
		}
	/* one write covering a whole page plus both neighbours' edges */
	fill_src(99);
	rare_write_memcpy(sect + pg - 5, src, pg + 10);
	memcpy(ref + pg - 5, src, pg + 10);
	CHECK(memcmp(sect, ref, sizeof(sect)) == 0);
}

/* The 64 KiB write that spans 17 pages of a pool, unaligned, then the
 * memset of all of it. */
TEST(memcpy_64k_unaligned, EXPECT_PASS)
{
	struct rare_pool *pool;
	unsigned char *buf;

	init();
	pool = rare_pool_create(POOL_BUF + 4096);
	CHECK(pool);
	buf = rare_alloc(pool, POOL_BUF);
	CHECK(buf);
	fill_src(7);
	rare_write_memcpy(buf + 3, src, 65536);
	CHECK(buf[0] == 0 && buf[1] == 0 && buf[2] == 0);
	CHECK(memcmp(buf + 3, src, 65536) == 0);
	CHECK(buf[65539] == 0);
	rare_write_memset(buf, 0xa5, POOL_BUF);
	for (size_t i = 0; i < POOL_BUF; i++)
		CHECK(buf[i] == 0xa5);
	rare_write_memset(buf + 1, 0, POOL_BUF - 1);
	CHECK(buf[0] == 0xa5);
	for (size_t i = 1; i < POOL_BUF; i++)
		CHECK(buf[i] == 0);
}

/* The source may itself be protected memory (another region or the same
 * one, not overlapping the destination). */
TEST(memcpy_from_protected_source, EXPECT_PASS)
{
	struct rare_pool *pool;
	unsigned char *buf;
	size_t pg = page_size();

	init();
	pool = rare_pool_create(16 * 4096);
	CHECK(pool);
	buf = rare_alloc(pool, 8192);
	CHECK(buf);
	fill_src(3);
	rare_write_memcpy(sect, src, 2 * pg);
	rare_write_memcpy(buf, sect + 1, 8000); /* section -> pool */
	CHECK(memcmp(buf, src + 1, 8000) == 0);
	rare_write_memcpy(sect + 2 * pg, buf, pg); /* pool -> section */
	CHECK(memcmp(sect + 2 * pg, src + 1, pg) == 0);
	rare_write_memcpy(sect, sect + 2 * pg + 8, 100); /* same region */
	CHECK(memcmp(sect, src + 9, 100) == 0);
}

TEST(memcpy_zero_length_is_noop, EXPECT_PASS)
{
	init();
	rare_write_memcpy(sect, src, 0);
	rare_write_memset(sect, 1, 0);
	CHECK(sect[0] == 0);
}

TEST(memset_all_byte_values, EXPECT_PASS)
{
	init();
	for (int c = -256; c < 512; c += 7) {
		rare_write_memset(sect + 5, c, 11);
		for (int i = 0; i < 11; i++)
			CHECK(sect[5 + i] == (unsigned char)c);
		CHECK(sect[4] == 0 && sect[16] == 0);
	}
}
