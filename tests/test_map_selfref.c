// SPDX-License-Identifier: MIT
/*
 * rare_write_map(3): a structure that points into itself. The view is the
 * object itself on pkey and mprotect, an alias or a staging copy on
 * shadow, pwrite and process; addresses taken from the view are right only
 * where it is the object, addresses taken from the protected object (the
 * page's portable way) are right everywhere.
 */
#include <stdint.h>

#include "harness.h"
#include "testutil.h"
#include <rarewrite/list.h>

struct session {
	struct rare_list_head peers;
	char *cursor;
	char buf[64];
};

static struct session sess __wr_rare;

/* The manual's example, as written there. */
static struct session *session_new(struct rare_pool *sessions)
{
	struct session *s = rare_alloc(sessions, sizeof(*s));
	struct rare_write_mapping m;
	struct session *w;

	if (!s)
		return NULL;
	m = rare_write_map(s, sizeof(*s));
	w = m.addr;
	w->peers.next = &s->peers; /* not &w->peers */
	w->peers.prev = &s->peers;
	w->cursor = s->buf; /* not w->buf */
	rare_write_unmap(m);
	return s;
}

TEST(map_self_pointers_from_the_object_are_portable, EXPECT_PASS)
{
	struct rare_pool *sessions;
	struct rare_list_head *pos;
	struct session *s;
	int n = 0;

	init();
	sessions = rare_pool_create(1 << 16);
	CHECK(sessions);
	s = session_new(sessions);
	CHECK(s);
	CHECK(s->peers.next == &s->peers && s->peers.prev == &s->peers);
	CHECK(s->cursor == s->buf);
	rare_list_for_each(pos, &s->peers)
		n++;
	CHECK(n == 0); /* an empty list, walkable */
	/* And in a __wr_rare object, the same way. */
	{
		struct rare_write_mapping m =
			rare_write_map(&sess, sizeof(sess));
		struct session *w = m.addr;

		w->peers.next = &sess.peers;
		w->cursor = sess.buf;
		rare_write_unmap(m);
		CHECK(sess.peers.next == &sess.peers);
		CHECK(sess.cursor == sess.buf);
	}
}

TEST(map_self_pointers_from_the_view_depend_on_backend, EXPECT_PASS)
{
	struct rare_write_mapping m;
	struct session *w;
	bool view_is_object;

	init();
	m = rare_write_map(&sess, sizeof(sess));
	w = m.addr;
	view_is_object = m.addr == (void *)&sess;
	w->peers.next = &w->peers; /* the non-portable spelling */
	w->cursor = w->buf;
	rare_write_unmap(m);
	/* What the page says: right only where the view is the object. */
	CHECK(view_is_object ==
	      (strcmp(rare_write_backend(), "pkey") == 0 ||
	       strcmp(rare_write_backend(), "mprotect") == 0));
	CHECK((sess.peers.next == &sess.peers) == view_is_object);
	CHECK((sess.cursor == sess.buf) == view_is_object);
}
