// SPDX-License-Identifier: MIT
/*
 * attack_list_links.c - scenarios 27x and 27y: a list helper's links on
 * their way from its check to the backend's stores.
 *
 * rare_list_add() checks the neighbours, then hands its four links to the
 * backend as an array of segments on its stack (list.c), and the backend
 * walks that array with a cursor. Between the check and the last store
 * the call makes system calls (a lock's futex, a window's mprotect(2),
 * shadow's mmap(2) and munmap(2) of each alias, pwrite's pwrite(2),
 * process's sendmsg(2)), and the stack is the attacker's at each of them.
 *
 * Deterministic, not a race: the attack child traces a victim child with
 * PTRACE_SYSCALL and at the n-th system call entry of the call (n = 1, 2,
 * ...: each moment in turn, a fresh victim each) rewrites the victim's
 * stack below its own frame:
 *
 * 27x: every word equal to a link's destination (in the helper's array
 * and in every copy of it) is pointed at a word of the same section that
 * no link names. The link then overwrites that word.
 *
 * 27y: every word that points into the helper's array of four (the
 * backend's cursor and end, wherever a callee saved them) is pointed at
 * the same place of an array of forged segments in the victim's writable
 * memory, each naming the section's own record (from the table) and that
 * same word, with 8 of the attacker's bytes as source.
 *
 * Before list.c put the operation's nodes into the table and wrote each
 * link as a single write (commit 298f5ed's src/), 27x landed at the first
 * system call on pwrite, shadow, mprotect and process, and 27y on pwrite
 * and shadow. Since, no array exists to find (27y holds trivially, kept
 * so that one coming back is seen).
 *
 * Landed: the word changed, even if the library aborts right after (the
 * victim's SIGABRT handler looks), as in 27n: the protected byte was
 * written in sight of every other thread. The victim's own frame (its
 * arguments) is the program's, as everywhere in the attack lane.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"
#include "../src/table.h"
#include "rarewrite/list.h"

/* The list the victim adds to (head -> a, made by each victim: a fork
 * child, its own copy; the call adds b after head), and the word no link
 * names, which the attack aims at. */
static struct {
	struct rare_list_head head, a, b;
	uint64_t target;
} ll __wr_rare __attribute__((aligned(64))) = {
	.head = RARE_LIST_HEAD_INIT(ll.head),
	.a = RARE_LIST_HEAD_INIT(ll.a),
	.b = RARE_LIST_HEAD_INIT(ll.b),
};

/* 27y's forged segments: writable memory of the victim, as the
 * attacker's own buffer would be. */
static struct rw_seg ll_forged[4];
static const uint64_t ll_evil = 0x4141414141414141ULL;

/* The victim's stack pointer right before its call: the attacker
 * rewrites only below it (the library's frames). */
static volatile uintptr_t ll_victim_sp;

enum { LL_HELD = 0, LL_LANDED = 10, LL_NOT_LINKED = 11 };

static void ll_on_abort(int sig)
{
	(void)sig;
	_exit(ll.target ? LL_LANDED : 128 + SIGABRT);
}

static __attribute__((noinline)) void ll_add(void)
{
	uintptr_t sp;

	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	ll_victim_sp = sp; /* the callees' frames are below */
	rare_list_add(&ll.b, &ll.head);
}

static __attribute__((noreturn)) void ll_victim(void)
{
	rare_list_add(&ll.a, &ll.head); /* head -> a, untraced */
	signal(SIGABRT, ll_on_abort);
	ptrace(PTRACE_TRACEME, 0, 0, 0);
	raise(SIGSTOP);
	ll_add();
	if (ll.target)
		_exit(LL_LANDED);
	if (ll.head.next != &ll.b || ll.b.next != &ll.a || ll.a.prev != &ll.b ||
	    ll.b.prev != &ll.head)
		_exit(LL_NOT_LINKED);
	_exit(LL_HELD);
}

/* Rewrite every word of @pid in [@lo, @hi) for which @map gives a new
 * value. Returns how many. */
static unsigned ll_rewrite(pid_t pid, uintptr_t lo, uintptr_t hi,
			   uintptr_t (*map)(uintptr_t v, uintptr_t arg),
			   uintptr_t arg)
{
	unsigned n = 0;

	for (uintptr_t w = lo & ~(uintptr_t)7; w < hi; w += 8) {
		uintptr_t v, to;

		errno = 0;
		v = (uintptr_t)ptrace(PTRACE_PEEKDATA, pid, (void *)w, 0);
		if (errno)
			continue;
		to = map(v, arg);
		if (to != v &&
		    !ptrace(PTRACE_POKEDATA, pid, (void *)w, (void *)to))
			n++;
	}
	return n;
}

/* 27x: a link's destination, to the target. */
static uintptr_t ll_map_destination(uintptr_t v, uintptr_t arg)
{
	(void)arg;
	if (v == (uintptr_t)&ll.b.next || v == (uintptr_t)&ll.b.prev ||
	    v == (uintptr_t)&ll.a.prev || v == (uintptr_t)&ll.head.next)
		return (uintptr_t)&ll.target;
	return v;
}

/* 27y: into the helper's array (@arg, its end included), to the same
 * place of the forged one. */
static uintptr_t ll_map_cursor(uintptr_t v, uintptr_t arg)
{
	if (arg && v - arg <= sizeof(ll_forged))
		return (uintptr_t)ll_forged + (v - arg);
	return v;
}

/* The helper's array of four on the victim's stack: the segment whose
 * destination is the first link's, followed by the second's. */
static uintptr_t ll_find_array(pid_t pid, uintptr_t lo, uintptr_t hi)
{
	const size_t dst_at = offsetof(struct rw_seg, dst);

	for (uintptr_t w = lo & ~(uintptr_t)7; w + sizeof(ll_forged) <= hi;
	     w += 8) {
		long d0, d1;

		errno = 0;
		d0 = ptrace(PTRACE_PEEKDATA, pid, (void *)(w + dst_at), 0);
		d1 = ptrace(PTRACE_PEEKDATA, pid,
			    (void *)(w + sizeof(struct rw_seg) + dst_at), 0);
		if (!errno && (uintptr_t)d0 == (uintptr_t)&ll.b.next &&
		    (uintptr_t)d1 == (uintptr_t)&ll.b.prev)
			return w;
	}
	return 0;
}

enum ll_round { LL_NO_MOMENT, LL_ROUND_HELD, LL_ROUND_LANDED };

/* One victim, attacked at its @nth system call entry after its stop. */
static enum ll_round ll_round(bool cursor, unsigned nth, char *what, size_t cap)
{
	unsigned entries = 0, rewritten = 0;
	uintptr_t sp_top = 0, array = 0;
	bool in_call = false, attacked = false;
	int status, sig = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork: %s", strerror(errno));
	if (!pid)
		ll_victim();
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status) ||
	    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD))
		attack_report(ATTACK_ERROR, "cannot trace the victim: %s",
			      strerror(errno));
	for (;;) {
		struct user_regs_struct regs;

		if (ptrace(PTRACE_SYSCALL, pid, 0, sig) ||
		    waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
			break;
		sig = 0;
		if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			sig = WSTOPSIG(status); /* delivered: SIGABRT too */
			continue;
		}
		ptrace(PTRACE_GETREGS, pid, 0, &regs);
		in_call = !in_call;
		/* The victim's own exit is not a moment of the call. */
		if (!in_call || attacked || regs.orig_rax == SYS_exit_group ||
		    ++entries != nth)
			continue;
		errno = 0;
		sp_top = (uintptr_t)ptrace(PTRACE_PEEKDATA, pid,
					   (void *)&ll_victim_sp, 0);
		attack_begin();
		if (!cursor) {
			rewritten = ll_rewrite(pid, (uintptr_t)regs.rsp, sp_top,
					       ll_map_destination, 0);
		} else {
			array = ll_find_array(pid, (uintptr_t)regs.rsp, sp_top);
			rewritten = ll_rewrite(pid, (uintptr_t)regs.rsp, sp_top,
					       ll_map_cursor, array);
		}
		attacked = true;
	}
	snprintf(what, cap, "at system call %u (%s), %u words rewritten%s: %s",
		 nth, attacked ? "entered" : "none", rewritten,
		 cursor && !array ? " (no array of four on the stack)" : "",
		 WIFEXITED(status) && WEXITSTATUS(status) == LL_LANDED
			 ? "the link went over the target"
		 : WIFEXITED(status) && WEXITSTATUS(status) == LL_NOT_LINKED
			 ? "the list was left half linked"
		 : WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGABRT
			 ? "the library aborted"
			 : "held");
	if (!attacked)
		return LL_NO_MOMENT;
	if (WIFEXITED(status) && WEXITSTATUS(status) == LL_LANDED)
		return LL_ROUND_LANDED;
	if (WIFEXITED(status) && (WEXITSTATUS(status) == LL_HELD ||
				  WEXITSTATUS(status) == 128 + SIGABRT))
		return LL_ROUND_HELD;
	/* Half linked with the target untouched: the write went nowhere
	 * protected, or partly; not the attack's aim, but say so. */
	if (WIFEXITED(status) && WEXITSTATUS(status) == LL_NOT_LINKED)
		return LL_ROUND_HELD;
	attack_report(ATTACK_ERROR, "the victim ended with status %#x (%s)",
		      status, what);
}

static void ll_attack(bool cursor)
{
	const struct rw_table *t = attack_lib_sym("rw_table");
	const struct rw_region *r = t ? attack_region_of(t, &ll) : NULL;
	char what[200] = "", last[200] = "";
	unsigned nth, held = 0;

	if (!r)
		attack_report(ATTACK_ERROR, "the section has no region");
	for (unsigned i = 0; i < 4; i++)
		ll_forged[i] = (struct rw_seg){.region = (struct rw_region *)r,
					       .dst = &ll.target,
					       .src = &ll_evil,
					       .len = sizeof(ll_evil)};
	for (nth = 1; nth < 64; nth++) {
		enum ll_round round = ll_round(cursor, nth, what, sizeof(what));

		if (round == LL_ROUND_LANDED)
			attack_report(ATTACK_OPEN, "%s", what);
		if (round == LL_NO_MOMENT)
			break;
		held++;
		memcpy(last, what, sizeof(last));
	}
	/* pkey: no lock waited for, no window opened by a system call; the
	 * race in the same few instructions is 27r's. */
	if (!held)
		attack_report(ATTACK_BLOCKED,
			      "the call made no system call: no moment to "
			      "attack");
	attack_report(ATTACK_BLOCKED, "%u moments held; last: %s", held, last);
}

ATTACK("27x", list_link_destination,
       "`rare_list_add`'s link destinations rewritten in the library's "
       "frames at each system call of the call: no link may go over a "
       "word the call does not name")
{
	ll_attack(false);
}

ATTACK("27y", list_link_cursor,
       "the backend's cursor over `rare_list_add`'s segments pointed at "
       "forged segments at each system call of the call: no forged "
       "segment may be written")
{
	ll_attack(true);
}
