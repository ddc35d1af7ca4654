// SPDX-License-Identifier: MIT
/*
 * Bad input to every public function other than the write calls (those are
 * in test_misuse.c): NULL, zero and huge lengths, misaligned and unmapped
 * addresses, pools after rare_pool_destroy(). Each ends in one abort line
 * naming the call, or in the error the header documents; never a silent
 * write.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "harness.h"
#include "testutil.h"
#include <rarewrite/list.h>

static uint64_t bsect[8] __wr_rare __attribute__((aligned(64)));
static struct rare_list_head bhead __wr_rare = RARE_LIST_HEAD_INIT(bhead);
static struct rare_list_head bnode __wr_rare;
static struct rare_list_head plain_node;

/* An address that is certainly not mapped. */
static void *unmapped(void)
{
	void *p =
		mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	munmap(p, 4096);
	return p;
}

struct call {
	int op;
	void *a, *b;
	size_t len;
};

enum {
	MAP,
	UNMAP_FORGED,
	UNMAP_TWICE,
	BEGIN,
	END,
	ALLOC,
	FREE,
	DESTROY,
	LIST_ADD,
	LIST_ADD_TAIL,
	LIST_DEL,
};

static void do_call(void *arg)
{
	struct call *c = arg;

	switch (c->op) {
	case MAP:
		rare_write_map(c->a, c->len);
		break;
	case UNMAP_FORGED: {
		struct rare_write_mapping m = {.addr = c->a,
					       .target = c->a,
					       .len = c->len,
					       .token = 12345};

		rare_write_unmap(m);
		break;
	}
	case UNMAP_TWICE: {
		struct rare_write_mapping m = rare_write_map(c->a, c->len);

		rare_write_unmap(m);
		rare_write_unmap(m);
		break;
	}
	case BEGIN:
		rare_write_begin();
		break;
	case END:
		rare_write_end();
		break;
	case ALLOC:
		rare_alloc(c->a, c->len);
		break;
	case FREE:
		rare_free(c->a, c->b);
		break;
	case DESTROY:
		rare_pool_destroy(c->a);
		break;
	case LIST_ADD:
		rare_list_add(c->a, c->b);
		break;
	case LIST_ADD_TAIL:
		rare_list_add_tail(c->a, c->b);
		break;
	case LIST_DEL:
		rare_list_del(c->a);
		break;
	}
}

static void aborts(int op, void *a, void *b, size_t len, const char *call)
{
	struct call c = {op, a, b, len};

	expect_abort_addr(do_call, &c, call, NULL, false);
}

TEST(badinput_map_unmap, EXPECT_PASS)
{
	init();
	aborts(MAP, NULL, NULL, 8, "rare_write_map");
	aborts(MAP, bsect, NULL, 0, "rare_write_map");
	aborts(MAP, bsect, NULL, SIZE_MAX, "rare_write_map");
	aborts(MAP, (char *)bsect + 1, NULL, SIZE_MAX - 8, "rare_write_map");
	aborts(MAP, unmapped(), NULL, 8, "rare_write_map");
	aborts(MAP, &plain_node, NULL, 8, "rare_write_map");
	aborts(UNMAP_FORGED, bsect, NULL, 8, "rare_write_unmap");
	aborts(UNMAP_FORGED, NULL, NULL, 0, "rare_write_unmap");
	aborts(UNMAP_TWICE, bsect, NULL, 8, "rare_write_unmap");
	/* misaligned but inside: fine, and only those bytes change */
	struct rare_write_mapping m = rare_write_map((char *)bsect + 3, 2);

	((char *)m.addr)[0] = 1;
	((char *)m.addr)[1] = 2;
	rare_write_unmap(m);
	CHECK(((char *)bsect)[2] == 0 && ((char *)bsect)[3] == 1 &&
	      ((char *)bsect)[4] == 2 && ((char *)bsect)[5] == 0);
}

TEST(badinput_begin_end, EXPECT_PASS)
{
	init();
	aborts(END, NULL, NULL, 0, "rare_write_end");
	if (!backend_has(RARE_WRITE_CAP_BEGIN_END))
		aborts(BEGIN, NULL, NULL, 0, "rare_write_begin");
}

TEST(badinput_pool_create, EXPECT_PASS)
{
	errno = 0;
	CHECK(rare_pool_create(0) == NULL && errno == EINVAL);
	init();
	errno = 0;
	CHECK(rare_pool_create(0) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(rare_pool_create(SIZE_MAX) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(rare_pool_create(SIZE_MAX / 2) == NULL && errno == ENOMEM);
}

TEST(badinput_alloc_free_destroy, EXPECT_PASS)
{
	struct rare_pool *p;
	char *o;

	init();
	p = rare_pool_create(1 << 16);
	CHECK(p);
	o = rare_alloc(p, 64);
	CHECK(o);
	errno = 0;
	CHECK(rare_alloc(p, 0) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(rare_alloc(p, SIZE_MAX) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(rare_alloc(p, (1 << 16) + 1) == NULL && errno == ENOMEM);
	rare_free(p, NULL);	 /* documented no-op */
	rare_pool_destroy(NULL); /* documented no-op */
	aborts(ALLOC, NULL, NULL, 8, "rare_alloc");
	aborts(ALLOC, (char *)p + 16, NULL, 8, "rare_alloc");
	aborts(ALLOC, unmapped(), NULL, 8, "rare_alloc");
	aborts(ALLOC, bsect, NULL, 8, "rare_alloc");
	aborts(FREE, NULL, o, 0, "rare_free");
	aborts(FREE, p, o + 1, 0, "rare_free");
	aborts(FREE, p, o + 16, 0, "rare_free"); /* never handed out */
	aborts(FREE, p, unmapped(), 0, "rare_free");
	aborts(FREE, p, bsect, 0, "rare_free");
	aborts(DESTROY, (char *)p + 1, NULL, 0, "rare_pool_destroy");
	aborts(DESTROY, unmapped(), NULL, 0, "rare_pool_destroy");
	aborts(DESTROY, bsect, NULL, 0, "rare_pool_destroy");
	/* after destroy: every call on it aborts */
	rare_pool_destroy(p);
	aborts(ALLOC, p, NULL, 8, "rare_alloc");
	aborts(FREE, p, o, 0, "rare_free");
	aborts(DESTROY, p, NULL, 0, "rare_pool_destroy");
	aborts(MAP, o, NULL, 8, "rare_write_map");
}

TEST(badinput_lists, EXPECT_PASS)
{
	init();
	aborts(LIST_ADD, NULL, &bhead, 0, "rare_list_add");
	aborts(LIST_ADD, &bnode, NULL, 0, "rare_list_add");
	aborts(LIST_ADD_TAIL, NULL, &bhead, 0, "rare_list_add_tail");
	aborts(LIST_ADD_TAIL, &bnode, NULL, 0, "rare_list_add_tail");
	aborts(LIST_ADD, &plain_node, &bhead, 0, "rare_list_add");
	aborts(LIST_ADD, &bnode, unmapped(), 0, "rare_list_add");
	aborts(LIST_ADD_TAIL, &bnode, unmapped(), 0, "rare_list_add_tail");
	aborts(LIST_ADD, unmapped(), &bhead, 0, "rare_list_add");
	aborts(LIST_DEL, NULL, NULL, 0, "rare_list_del");
	aborts(LIST_DEL, unmapped(), NULL, 0, "rare_list_del");
	aborts(LIST_DEL, &plain_node, NULL, 0, "rare_list_del");
	rare_list_add(&bnode, &bhead);
	rare_list_del(&bnode);
	aborts(LIST_DEL, &bnode, NULL, 0, "rare_list_del"); /* twice */
	aborts(LIST_ADD, (char *)&bnode + 1, &bhead, 0, "rare_list_add");
	CHECK(bhead.next == &bhead && bhead.prev == &bhead);
}

TEST(badinput_init_backend_names, EXPECT_PASS)
{
	setenv("RAREWRITE_BACKEND", "no-such-backend", 1);
	CHECK(rare_write_init() == -EINVAL);
	CHECK(!strcmp(rare_write_backend(), "none") && rare_write_caps() == 0);
	setenv("RAREWRITE_BACKEND", "", 1); /* empty: auto */
	CHECK(rare_write_init() == 0);
}
