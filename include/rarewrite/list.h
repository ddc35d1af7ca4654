/* SPDX-License-Identifier: MIT */
/*
 * rarewrite/list.h - doubly linked lists whose nodes live in protected
 * memory (__wr_rare objects or rare_pool allocations).
 *
 * The shape is the kernel's list_head. Each modifying call checks the
 * neighbours' links before it writes anything (a corrupted list aborts with a
 * message naming the call and the entry), writes the operation's pointers
 * one by one from a record in the library's protected table, the new entry's
 * own first (rare_list_add(3)), and rare_list_del() poisons the deleted
 * entry's pointers so a stale user faults instead of walking freed memory.
 *
 * Readers walk the list with plain loads; every pointer update is an aligned
 * 8-byte write, so a concurrent reader sees each link old or new, never torn.
 * Writers must be serialised by the caller (a mutex around modifications),
 * as with the kernel's lists.
 */
#ifndef RAREWRITE_LIST_H
#define RAREWRITE_LIST_H

#include <rarewrite.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rare_list_head {
	struct rare_list_head *next, *prev;
};

/* Values stored in a deleted entry: non-canonical, so any use faults. */
#define RARE_LIST_POISON1 ((struct rare_list_head *)0xdead000000000100UL)
#define RARE_LIST_POISON2 ((struct rare_list_head *)0xdead000000000122UL)

/* Static initialiser of an empty list: struct rare_list_head h =
 * RARE_LIST_HEAD_INIT(h); (in check mode a __wr_rare head is const, and
 * its own address initialises its links) */
#ifndef RAREWRITE_CHECK_WRITES
#define RARE_LIST_HEAD_INIT(name)                                              \
	{                                                                      \
		&(name), &(name)                                               \
	}
#else
#define RARE_LIST_HEAD_INIT(name)                                              \
	{                                                                      \
		(struct rare_list_head *)&(name),                              \
			(struct rare_list_head *)&(name)                       \
	}
#endif

/* Insert @entry right after @head (stack order). */
RAREWRITE_API void rare_list_add(struct rare_list_head *entry,
				 struct rare_list_head *head);

/* Insert @entry right before @head (queue order). */
RAREWRITE_API void rare_list_add_tail(struct rare_list_head *entry,
				      struct rare_list_head *head);

/* Unlink @entry and poison its pointers. */
RAREWRITE_API void rare_list_del(struct rare_list_head *entry);

#ifdef RAREWRITE_CHECK_WRITES
/*
 * Check mode: a __wr_rare list head is const there; the calls that write
 * it legitimately take it without a warning. The inline keeps the type
 * check: anything but a struct rare_list_head pointer is still an error.
 */
static inline struct rare_list_head *
rare_list_writable_(const struct rare_list_head *p)
{
	return (struct rare_list_head *)p;
}
#define rare_list_add(entry, head)                                             \
	(rare_list_add)(rare_list_writable_(entry), rare_list_writable_(head))
#define rare_list_add_tail(entry, head)                                        \
	(rare_list_add_tail)(rare_list_writable_(entry),                       \
			     rare_list_writable_(head))
#define rare_list_del(entry) (rare_list_del)(rare_list_writable_(entry))
#endif

/* Iterate over a list; @pos is a struct rare_list_head pointer. */
#define rare_list_for_each(pos, head)                                          \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

/* The struct that embeds the list node @ptr as member @member. */
#define rare_list_entry(ptr, type, member)                                     \
	((type *)((char *)(ptr)-offsetof(type, member)))

#ifdef __cplusplus
}
#endif

#endif /* RAREWRITE_LIST_H */
