// SPDX-License-Identifier: MIT
/*
 * list.c - list helpers for nodes in protected memory, after the RFC's
 * rare_list_*: check the neighbours first, then all pointer updates of the
 * operation in one write, poisoning on delete.
 *
 * The order of the segments matters for lock-free readers: the new entry's
 * own pointers are written first, and it becomes reachable only by the last
 * store (prev->next), as in the kernel's list_add_rcu().
 */
#include "rarewrite/list.h"
#include "internal.h"

static struct rw_seg link_seg(const char *call, struct rare_list_head **field,
			      struct rare_list_head *const *value)
{
	return (struct rw_seg){
		.region = rw_region_of(call, field, sizeof(*field)),
		.dst = field,
		.src = value,
		.len = sizeof(*field),
	};
}

static void check_add(const char *call, struct rare_list_head *entry,
		      struct rare_list_head *prev, struct rare_list_head *next)
{
	if (!entry || !prev || !next)
		rw_die(call, entry, "NULL list node");
	/* Validate before reading: a wild node aborts, it does not fault. */
	rw_region_of(call, entry, sizeof(*entry));
	rw_region_of(call, next, sizeof(*next));
	if ((uintptr_t)entry % sizeof(void *))
		rw_die(call, entry, "misaligned list node (links would tear)");
	if (next->prev != prev)
		rw_die(call, next, "corrupted list: next->prev is %p, not %p",
		       (void *)next->prev, (void *)prev);
	if (prev->next != next)
		rw_die(call, prev, "corrupted list: prev->next is %p, not %p",
		       (void *)prev->next, (void *)next);
	if (entry == prev || entry == next)
		rw_die(call, entry, "entry is already in the list");
}

static void add_between(const char *call, struct rare_list_head *entry,
			struct rare_list_head *prev,
			struct rare_list_head *next)
{
	check_add(call, entry, prev, next);
	struct rw_seg segs[4] = {
		link_seg(call, &entry->next, &next),
		link_seg(call, &entry->prev, &prev),
		link_seg(call, &next->prev, &entry),
		link_seg(call, &prev->next, &entry),
	};
	rw_write(segs, 4);
}

void rare_list_add(struct rare_list_head *entry, struct rare_list_head *head)
{
	if (!head)
		rw_die("rare_list_add", head, "NULL list head");
	rw_region_of("rare_list_add", head, sizeof(*head));
	add_between("rare_list_add", entry, head, head->next);
}

void rare_list_add_tail(struct rare_list_head *entry,
			struct rare_list_head *head)
{
	if (!head)
		rw_die("rare_list_add_tail", head, "NULL list head");
	rw_region_of("rare_list_add_tail", head, sizeof(*head));
	rw_region_of("rare_list_add_tail", head->prev, sizeof(*head));
	add_between("rare_list_add_tail", entry, head->prev, head);
}

void rare_list_del(struct rare_list_head *entry)
{
	static struct rare_list_head *const poison1 = RARE_LIST_POISON1;
	static struct rare_list_head *const poison2 = RARE_LIST_POISON2;
	struct rare_list_head *prev, *next;

	if (!entry)
		rw_die("rare_list_del", entry, "NULL list node");
	rw_region_of("rare_list_del", entry, sizeof(*entry));
	prev = entry->prev;
	next = entry->next;
	if (next == RARE_LIST_POISON1 || prev == RARE_LIST_POISON2)
		rw_die("rare_list_del", entry, "entry was already deleted");
	if (!rw_region_lookup(prev) || !rw_region_lookup(next))
		rw_die("rare_list_del", entry,
		       "corrupted list: a neighbour is outside protected "
		       "memory");
	if (prev->next != entry || next->prev != entry)
		rw_die("rare_list_del", entry,
		       "corrupted list: neighbours do not point back");
	struct rw_seg segs[4] = {
		link_seg("rare_list_del", &next->prev, &prev),
		link_seg("rare_list_del", &prev->next, &next),
		link_seg("rare_list_del", &entry->next, &poison1),
		link_seg("rare_list_del", &entry->prev, &poison2),
	};
	rw_write(segs, 4);
}
