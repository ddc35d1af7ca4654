// SPDX-License-Identifier: MIT
/*
 * list.c - list helpers for nodes in protected memory, after the RFC's
 * rare_list_*: check the neighbours first, then the pointer updates of the
 * operation, poisoning on delete.
 *
 * The order of the links matters for lock-free readers: the new entry's
 * own pointers are written first, and it becomes reachable only by the last
 * store (prev->next), as in the kernel's list_add_rcu().
 *
 * What decides the links never waits in writable memory (27x, 27y): the
 * operation's three nodes go from the registers the arguments came in
 * into the table's list request first (list_request_put(): no function
 * call before it), and the checks and every link read them from there.
 * Each link is one single write, its destination computed from the
 * request and its source a word of the request (or a constant), so no
 * array of segments sits on a stack for a store to point elsewhere while
 * the backend waits for a lock or makes its system calls. list_lock keeps
 * other operations and fork() out until the last link.
 */
#include "rarewrite/list.h"
#include "internal.h"
#include "region_find.h"
#include "reglock.h"
#include "table.h"
#include "table_put.h"

static struct rare_list_head *const poison1 = RARE_LIST_POISON1;
static struct rare_list_head *const poison2 = RARE_LIST_POISON2;

#define REQ_NODE(field)                                                        \
	((struct rare_list_head *)__atomic_load_n(                             \
		&rw_table.list_request.field, __ATOMIC_RELAXED))
/* The address of a word of the table as a link's source, computed where
 * it is used (table_put.h). */
#define FRESH_ADDR(obj) ((struct rare_list_head *const *)RW_FRESH_ADDR(obj))
/* A word of the request as a link's source: the table's own memory. */
#define REQ_WORD(field) FRESH_ADDR(rw_table.list_request.field)

enum list_op { LIST_ADD, LIST_ADD_TAIL, LIST_DEL };

static __attribute__((noreturn, noinline)) void
list_refused(const char *call, const void *at, const char *null_what)
{
	if (!at)
		rw_die(call, at, "NULL list %s", null_what);
	rw_region_of(call, at, sizeof(struct rare_list_head));
	rw_die(call, at, "the list changed while the call ran");
}

/* Abort unless the request is still this call's (list_lock is a word a
 * store can release, and another operation then puts its own). */
static inline __attribute__((always_inline)) void request_mine(const char *call)
{
	if (__atomic_load_n(&rw_table.list_request.caller, __ATOMIC_RELAXED) !=
	    rw_request_caller()) {
		rw_reglock_write_unlock(&rw_list_lock);
		rw_die(call, REQ_NODE(entry),
		       "another thread's list operation replaced this one "
		       "while it ran (a store released the list lock?)");
	}
}

/*
 * Put the operation's nodes into the table from the registers they are
 * in, list_lock held. @at is the node the others were read from (the
 * head, or the deleted entry): found in a region inline first, so that a
 * wild pointer aborts instead of faulting; nothing else is checked yet.
 */
static inline __attribute__((always_inline)) void
list_request_put(const char *call, struct rare_list_head *at, enum list_op op,
		 struct rare_list_head *entry)
{
	struct rare_list_head *prev, *next;

	if (!at || !rw_region_find((uintptr_t)at, sizeof(*at))) {
		rw_reglock_write_unlock(&rw_list_lock);
		list_refused(call, at, op == LIST_DEL ? "node" : "head");
	}
	if (op == LIST_ADD) {
		prev = at;
		next = __atomic_load_n(&at->next, __ATOMIC_RELAXED);
	} else if (op == LIST_ADD_TAIL) {
		prev = __atomic_load_n(&at->prev, __ATOMIC_RELAXED);
		next = at;
	} else {
		prev = __atomic_load_n(&at->prev, __ATOMIC_RELAXED);
		next = __atomic_load_n(&at->next, __ATOMIC_RELAXED);
	}
	if (!rw_table_put4(&rw_table.list_request.entry, (uintptr_t)entry,
			   (uintptr_t)prev, (uintptr_t)next,
			   rw_request_caller())) {
		rw_reglock_write_unlock(&rw_list_lock);
		rw_die(call, at,
		       "the list operation changed on its way to the table (a "
		       "store into the caller's stack?)");
	}
}

/*
 * The request's nodes are valid for an insertion, list_lock held. Each use
 * loads them from the request again (REQ_NODE(): an atomic load, never
 * kept in a register a callee saves), so what is checked is what the
 * links use.
 */
static void check_add(const char *call)
{
	if (!REQ_NODE(entry) || !REQ_NODE(prev) || !REQ_NODE(next))
		rw_die(call, REQ_NODE(entry), "NULL list node");
	/* Validate before reading: a wild node aborts, it does not fault. */
	rw_region_of(call, REQ_NODE(entry), sizeof(struct rare_list_head));
	rw_region_of(call, REQ_NODE(prev), sizeof(struct rare_list_head));
	rw_region_of(call, REQ_NODE(next), sizeof(struct rare_list_head));
	if ((uintptr_t)REQ_NODE(entry) % sizeof(void *))
		rw_die(call, REQ_NODE(entry),
		       "misaligned list node (links would tear)");
	if (REQ_NODE(next)->prev != REQ_NODE(prev))
		rw_die(call, REQ_NODE(next),
		       "corrupted list: next->prev is %p, not %p",
		       (void *)REQ_NODE(next)->prev, (void *)REQ_NODE(prev));
	if (REQ_NODE(prev)->next != REQ_NODE(next))
		rw_die(call, REQ_NODE(prev),
		       "corrupted list: prev->next is %p, not %p",
		       (void *)REQ_NODE(prev)->next, (void *)REQ_NODE(next));
	if (REQ_NODE(entry) == REQ_NODE(prev) ||
	    REQ_NODE(entry) == REQ_NODE(next))
		rw_die(call, REQ_NODE(entry), "entry is already in the list");
}

static void check_del(const char *call)
{
	if (REQ_NODE(next) == RARE_LIST_POISON1 ||
	    REQ_NODE(prev) == RARE_LIST_POISON2)
		rw_die(call, REQ_NODE(entry), "entry was already deleted");
	if (!rw_region_lookup(REQ_NODE(prev)) ||
	    !rw_region_lookup(REQ_NODE(next)))
		rw_die(call, REQ_NODE(entry),
		       "corrupted list: a neighbour is outside protected "
		       "memory");
	if (REQ_NODE(prev)->next != REQ_NODE(entry) ||
	    REQ_NODE(next)->prev != REQ_NODE(entry))
		rw_die(call, REQ_NODE(entry),
		       "corrupted list: neighbours do not point back");
}

/*
 * Abort unless the link at @at holds what the request says, read back
 * right after its write: where a backend hands the value to the kernel
 * from a buffer (pwrite's stack copy for pwrite(2), process's request), a
 * store in the last instructions before the copy changes the value, not
 * where it goes, and a list that leads into the attacker's memory must
 * not be left behind by a call that returned. (Links are changed under
 * the list's own lock by the program: no other write races this one.)
 */
static inline __attribute__((always_inline)) void
link_written(const char *call, struct rare_list_head *const *at,
	     struct rare_list_head *const *want)
{
	if (__atomic_load_n(at, __ATOMIC_RELAXED) !=
	    __atomic_load_n(want, __ATOMIC_RELAXED)) {
		rw_reglock_write_unlock(&rw_list_lock);
		rw_die(call, at,
		       "a list link is not what the call wrote (its value "
		       "changed on its way to the kernel?)");
	}
}

/*
 * One link: the request still this call's, then a single write whose
 * destination is computed from the request and whose source is a word of
 * the request or a constant. The single write keeps both in registers
 * from its check to its store (rw_write_args()); the link is read back
 * after (link_written()).
 */
#define LINK(call, node, field, value)                                         \
	do {                                                                   \
		request_mine(call);                                            \
		rw_write_args(call, &REQ_NODE(node)->field, (value),           \
			      sizeof(void *), 0);                              \
		link_written(call, &REQ_NODE(node)->field, (value));           \
	} while (0)

/* Done: the request no longer names a call (fork_prepare() checks). */
static inline __attribute__((always_inline)) void list_done(const char *call)
{
	request_mine(call);
	if (!rw_table_put4(&rw_table.list_request.entry, 0, 0, 0, 0)) {
		rw_reglock_write_unlock(&rw_list_lock);
		rw_die(call, NULL,
		       "the list request did not clear (a store into the "
		       "caller's stack?)");
	}
	rw_reglock_write_unlock(&rw_list_lock);
}

/* The arguments reach list_request_put() in their registers: nothing is
 * called before it but the lock, taken inline. Before init the table is
 * plain memory, as protected data is, and the same steps hold. */
static inline __attribute__((always_inline)) void
list_add_op(const char *call, struct rare_list_head *entry,
	    struct rare_list_head *head, enum list_op op)
{
	rw_reglock_write(&rw_list_lock);
	list_request_put(call, head, op, entry);
	check_add(call);
	LINK(call, entry, next, REQ_WORD(next));
	LINK(call, entry, prev, REQ_WORD(prev));
	LINK(call, next, prev, REQ_WORD(entry));
	LINK(call, prev, next, REQ_WORD(entry));
	list_done(call);
}

void rare_list_add(struct rare_list_head *entry, struct rare_list_head *head)
{
	list_add_op("rare_list_add", entry, head, LIST_ADD);
}

void rare_list_add_tail(struct rare_list_head *entry,
			struct rare_list_head *head)
{
	list_add_op("rare_list_add_tail", entry, head, LIST_ADD_TAIL);
}

void rare_list_del(struct rare_list_head *entry)
{
	static const char call[] = "rare_list_del";

	rw_reglock_write(&rw_list_lock);
	list_request_put(call, entry, LIST_DEL, entry);
	check_del(call);
	LINK(call, next, prev, REQ_WORD(prev));
	LINK(call, prev, next, REQ_WORD(next));
	LINK(call, entry, next, FRESH_ADDR(poison1));
	LINK(call, entry, prev, FRESH_ADDR(poison2));
	list_done(call);
}
