// SPDX-License-Identifier: MIT
/* <rarewrite/list.h>: lists whose nodes live in protected memory. */
#include <stdint.h>

#include <rarewrite/list.h>

#include "harness.h"
#include "testutil.h"

struct item {
	int id;
	struct rare_list_head node;
};

static struct rare_list_head head __wr_rare = RARE_LIST_HEAD_INIT(head);
static struct item items[8] __wr_rare;
static struct rare_list_head plain_head = RARE_LIST_HEAD_INIT(plain_head);
static struct rare_list_head plain_node;

/* The ids along the list, as a string ("" if empty); checks the back links
 * on the way. */
static const char *ids(struct rare_list_head *h)
{
	static char buf[256];
	struct rare_list_head *pos, *prev = h;
	size_t n = 0;

	rare_list_for_each(pos, h) {
		CHECK(pos->prev == prev);
		buf[n++] = (char)('0' +
				  rare_list_entry(pos, struct item, node)->id);
		prev = pos;
		CHECK(n < sizeof(buf) - 1);
	}
	CHECK(h->prev == prev);
	buf[n] = 0;
	return buf;
}

static void set_ids(void)
{
	for (int i = 0; i < 8; i++)
		rare_write(items[i].id, i);
}

TEST(list_add_add_tail_del_for_each, EXPECT_PASS)
{
	init();
	set_ids();
	CHECK(strcmp(ids(&head), "") == 0);
	rare_list_add(&items[1].node, &head);
	rare_list_add(&items[2].node, &head);
	CHECK(strcmp(ids(&head), "21") == 0);
	rare_list_add_tail(&items[3].node, &head);
	rare_list_add_tail(&items[4].node, &head);
	CHECK(strcmp(ids(&head), "2134") == 0);
	rare_list_add(&items[5].node, &items[1].node); /* after 1 */
	CHECK(strcmp(ids(&head), "21534") == 0);
	rare_list_del(&items[5].node);
	CHECK(strcmp(ids(&head), "2134") == 0);
	rare_list_del(&items[2].node); /* the first */
	CHECK(strcmp(ids(&head), "134") == 0);
	rare_list_del(&items[4].node); /* the last */
	CHECK(strcmp(ids(&head), "13") == 0);
	rare_list_del(&items[1].node);
	rare_list_del(&items[3].node);
	CHECK(strcmp(ids(&head), "") == 0);
	CHECK(head.next == &head && head.prev == &head);
	/* a deleted entry may be added again */
	rare_list_add_tail(&items[2].node, &head);
	CHECK(strcmp(ids(&head), "2") == 0);
}

TEST(list_del_poisons, EXPECT_PASS)
{
	init();
	rare_list_add(&items[0].node, &head);
	rare_list_del(&items[0].node);
	CHECK(items[0].node.next == RARE_LIST_POISON1);
	CHECK(items[0].node.prev == RARE_LIST_POISON2);
}

/* A stale user of a deleted entry faults instead of walking on. */
TEST(list_stale_entry_faults, EXPECT_SEGV)
{
	init();
	rare_list_add(&items[0].node, &head);
	rare_list_add(&items[1].node, &head);
	rare_list_del(&items[0].node);
	(void)*(volatile long *)items[0].node.next;
}

TEST(list_nodes_stay_protected, EXPECT_SEGV)
{
	init();
	rare_list_add(&items[0].node, &head);
	*(struct rare_list_head *volatile *)&head.next = &plain_node;
}

TEST(list_before_init_is_plain, EXPECT_PASS)
{
	set_ids();
	rare_list_add(&items[1].node, &head);
	rare_list_add_tail(&items[2].node, &head);
	rare_list_del(&items[1].node);
	CHECK(strcmp(ids(&head), "2") == 0);
	init();
	CHECK(strcmp(ids(&head), "2") == 0);
	rare_list_add(&items[3].node, &head);
	CHECK(strcmp(ids(&head), "32") == 0);
}

/* Many nodes in a pool, on a head in the section and on a head in the
 * pool; random deletes keep the list consistent. */
TEST(list_nodes_in_pools, EXPECT_PASS)
{
	enum { N = 2000 };
	struct rare_pool *pool;
	struct rare_list_head *phead, *pos;
	static struct item *it[N];
	unsigned seed = 12345, count;

	init();
	pool = rare_pool_create(1 << 20);
	CHECK(pool);
	phead = rare_alloc(pool, sizeof(*phead));
	CHECK(phead);
	rare_write(*phead, ((struct rare_list_head){phead, phead}));
	for (int i = 0; i < N; i++) {
		it[i] = rare_alloc(pool, sizeof(struct item));
		CHECK(it[i]);
		rare_write(it[i]->id, i);
		if (i % 2)
			rare_list_add_tail(&it[i]->node, phead);
		else
			rare_list_add(&it[i]->node, &head);
	}
	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245 + 12345;
		if (seed & 0x10000) {
			rare_list_del(&it[i]->node);
			rare_free(pool, it[i]);
			it[i] = NULL;
		}
	}
	count = 0;
	rare_list_for_each(pos, phead) {
		struct item *x = rare_list_entry(pos, struct item, node);

		CHECK(x->id % 2 == 1 && it[x->id] == x);
		CHECK(pos->next->prev == pos);
		count++;
	}
	rare_list_for_each(pos, &head) {
		struct item *x = rare_list_entry(pos, struct item, node);

		CHECK(x->id % 2 == 0 && it[x->id] == x);
		CHECK(pos->next->prev == pos);
		count++;
	}
	for (int i = 0; i < N; i++)
		count -= it[i] != NULL;
	CHECK(count == 0);
}

/* Misuse and corruption abort before anything is written. */
static void do_add(void *e)
{
	rare_list_add(e, &head);
}

static void do_add_tail(void *e)
{
	rare_list_add_tail(e, &head);
}

static void do_del(void *e)
{
	rare_list_del(e);
}

TEST(list_corrupted_next_prev_aborts, EXPECT_PASS)
{
	static struct rare_list_head bogus;

	init();
	rare_list_add(&items[0].node, &head);
	rare_list_add(&items[1].node, &head); /* head, 1, 0 */
	/* an attacker's rare_write-level corruption of 1's back link */
	rare_write(items[1].node.prev, &bogus);
	expect_abort(do_add, &items[2].node, "rare_list_add", &items[1].node);
	expect_abort(do_del, &items[1].node, "rare_list_del", &items[1].node);
	/* nothing was written by the aborted calls */
	CHECK(head.next == &items[1].node);
	CHECK(items[2].node.next == NULL && items[2].node.prev == NULL);
}

TEST(list_corrupted_prev_next_aborts, EXPECT_PASS)
{
	init();
	rare_list_add(&items[0].node, &head);
	rare_list_add(&items[1].node, &head);		/* head, 1, 0 */
	rare_write(items[0].node.next, &items[1].node); /* should be head */
	expect_abort(do_add_tail, &items[2].node, "rare_list_add_tail",
		     &items[0].node);
	expect_abort(do_del, &items[0].node, "rare_list_del", &items[0].node);
}

TEST(list_double_del_aborts, EXPECT_PASS)
{
	init();
	rare_list_add(&items[0].node, &head);
	rare_list_del(&items[0].node);
	expect_abort(do_del, &items[0].node, "rare_list_del", &items[0].node);
	CHECK(head.next == &head && head.prev == &head);
}

TEST(list_double_add_aborts, EXPECT_PASS)
{
	init();
	rare_list_add(&items[0].node, &head);
	expect_abort(do_add, &items[0].node, "rare_list_add", &items[0].node);
	expect_abort(do_add_tail, &items[0].node, "rare_list_add_tail",
		     &items[0].node);
	CHECK(strcmp(ids(&head), "0") == 0);
}

TEST(list_null_aborts, EXPECT_PASS)
{
	init();
	expect_abort(do_add, NULL, "rare_list_add", NULL);
	expect_abort(do_del, NULL, "rare_list_del", NULL);
}

static void do_add_plain(void *unused)
{
	(void)unused;
	rare_list_add(&plain_node, &plain_head);
}

static void do_add_plain_to_protected(void *unused)
{
	(void)unused;
	rare_list_add(&plain_node, &head);
}

/* Nodes outside protected memory are misuse, before and after init. */
TEST(list_unprotected_nodes_abort, EXPECT_PASS)
{
	expect_abort_addr(do_add_plain, NULL, "rare_list_add", NULL, false);
	init();
	expect_abort_addr(do_add_plain, NULL, "rare_list_add", NULL, false);
	expect_abort(do_add_plain_to_protected, NULL, "rare_list_add",
		     &plain_node.next);
	CHECK(head.next == &head);
}
