// SPDX-License-Identifier: MIT
/*
 * attack_segments.c - scenarios 27x-27z and 28a-28f: what a write hands the
 * backend as segments, on its way from the caller's check to the stores.
 *
 * rare_list_add() checked the neighbours, then handed its four links to
 * the backend as an array of segments on its stack (list.c), and the
 * backend walked that array with a cursor; a pool's bookkeeping write
 * (pool.c) still hands one segment on its stack. Between the check and
 * the last store the call makes system calls (a lock's futex, a window's
 * mprotect(2), shadow's mmap(2) and munmap(2) of each alias, pwrite's
 * pwrite(2), process's sendmsg(2)), and the stack is the attacker's at
 * each of them.
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
 * 27z: rare_alloc()'s bookkeeping segment, found on the stack by its
 * region (the pool's record) and destination (the pool's bookkeeping):
 * every word equal to its end (the backend's loop bound, wherever a
 * callee saved it) is moved one segment further, and a forged segment
 * (as 27y's) is written right after it, where the loop would read next.
 *
 * 28a: every word equal to a link's value (the next node's address) is
 * pointed at a node in the victim's writable memory. Landed only when the
 * call returns with a link there (an abort after it is held, as the
 * scribbler counts): a protected list that leads into the attacker's
 * memory, silently.
 *
 * 28b: sigaction() on a wrapped signal records the program's action in
 * the library's signal table (signal.c): every word equal to the address
 * of the program's action (a const object: its own bytes are read-only)
 * is pointed at an action in writable memory. Landed when the table then
 * names the attacker's handler (sigaction() reads it back from there), or
 * the kernel's action is the attacker's handler itself (glibc's
 * __sigaction(), around the library, reads it).
 *
 * 28c: as 28b, every word equal to the program's handler (wherever the
 * library copied the action: a buffer for the table's pwrite(2), the
 * action for the kernel) is pointed at the attacker's handler.
 *
 * 28f (a fresh review of d9a7d4d): as 28c, through signal(), whose
 * action the interposer built in its own frame.
 *
 * 28d, 28e (a fresh review of f958dee): as 28b, every word equal to the
 * library's entry point (what the kernel gets for a wrapped signal) or to
 * the restorer the kernel's SIGSEGV action has is pointed at a function
 * of the attacker's; landed when the kernel's action names it.
 *
 * Before list.c put the operation's nodes into the table and wrote each
 * link as a single write (commit 298f5ed's src/), 27x landed at the first
 * system call on pwrite, shadow, mprotect and process, and 27y on pwrite
 * and shadow. Since, no array exists to find (27y holds trivially, kept
 * so that one coming back is seen).
 *
 * Landed: the word changed, even if the library aborts (or the rewritten
 * frame crashes) right after (the victim's handlers look), as in 27n: the
 * protected byte was written in sight of every other thread. The victim's
 * own frame (its arguments) is the program's, as everywhere in the attack
 * lane.
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

/* 27y's and 27z's forged segments: writable memory of the victim, as
 * the attacker's own buffer would be. */
static struct rw_seg ll_forged[4];
/* 27z's pool (made by the attack child, each victim's copy its own) and
 * its record in the table. */
static struct rare_pool *ll_pool;
static uintptr_t ll_pool_record;
static const uint64_t ll_evil = 0x4141414141414141ULL;

/* The victim's stack pointer right before its call: the attacker
 * rewrites only below it (the library's frames). */
static volatile uintptr_t ll_victim_sp;

enum { LL_HELD = 0, LL_LANDED = 10, LL_NOT_LINKED = 11 };
enum ll_mode {
	LL_DESTINATION,
	LL_CURSOR,
	LL_SEG_END,
	LL_VALUE,
	LL_SIGACTION,
	LL_SIGHANDLER,
	LL_SIGENTRY,
	LL_SIGRESTORER,
	LL_SIGNAL,
};
/* 28d, 28e: the library's entry point for the kernel and the restorer the
 * kernel has, as the attacker finds them (the same in each fork child). */
static uintptr_t ll_entry, ll_restorer;
/* 28a's node in the victim's writable memory, where a rewritten link
 * would lead readers. */
static struct rare_list_head ll_fake;

/* An abort, or a crash of a rewritten frame: held unless the word
 * changed first. */
static void ll_on_death(int sig)
{
	_exit(ll.target ? LL_LANDED : 128 + sig);
}

/* 28b: the program's action, read-only (a const object), and the one the
 * attacker would have installed, in writable memory. */
static void ll_good_handler(int sig)
{
	(void)sig;
}

static void ll_evil_handler(int sig)
{
	(void)sig;
}

extern int __sigaction(int sig, const struct sigaction *act,
		       struct sigaction *old);
static const struct sigaction ll_good = {.sa_handler = ll_good_handler};
static struct sigaction ll_evil_action = {.sa_handler = ll_evil_handler};

static void ll_evil_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
}

static void ll_evil_restorer(void)
{
}

/* The rows that attack sigaction(). */
static bool ll_sig_mode(enum ll_mode mode)
{
	return mode == LL_SIGACTION || mode == LL_SIGHANDLER ||
	       mode == LL_SIGENTRY || mode == LL_SIGRESTORER ||
	       mode == LL_SIGNAL;
}

static __attribute__((noinline)) void ll_call(enum ll_mode mode)
{
	uintptr_t sp;

	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	ll_victim_sp = sp; /* the callees' frames are below */
	if (mode == LL_SEG_END) {
		if (!rare_alloc(ll_pool, 64))
			_exit(LL_NOT_LINKED);
	} else if (mode == LL_SIGNAL) {
		if (signal(SIGSEGV, ll_good_handler) == SIG_ERR)
			_exit(LL_NOT_LINKED);
	} else if (ll_sig_mode(mode)) {
		if (sigaction(SIGSEGV, &ll_good, NULL))
			_exit(LL_NOT_LINKED);
	} else {
		rare_list_add(&ll.b, &ll.head);
	}
}

/* Before the tracing starts: head -> a, and the handlers. */
static void ll_setup(void *arg)
{
	(void)arg;
	rare_list_add(&ll.a, &ll.head);
	signal(SIGABRT, ll_on_death);
	signal(SIGSEGV, ll_on_death);
	signal(SIGBUS, ll_on_death);
}

static __attribute__((noreturn)) void ll_victim(void *arg)
{
	enum ll_mode mode = (enum ll_mode)(uintptr_t)arg;

	ll_call(mode);
	if (ll.target)
		_exit(LL_LANDED);
	if (ll_sig_mode(mode)) {
		struct sigaction cur, kernel;

		if (sigaction(SIGSEGV, NULL, &cur) ||
		    __sigaction(SIGSEGV, NULL, &kernel))
			_exit(LL_NOT_LINKED);
		_exit(cur.sa_handler == ll_evil_handler ||
				      kernel.sa_handler == ll_evil_handler ||
				      kernel.sa_sigaction == ll_evil_info ||
				      kernel.sa_restorer == ll_evil_restorer
			      ? LL_LANDED
			      : LL_HELD);
	}
	if (mode == LL_VALUE &&
	    (ll.b.next == &ll_fake || ll.b.prev == &ll_fake ||
	     ll.a.prev == &ll_fake || ll.head.next == &ll_fake))
		_exit(LL_LANDED); /* and the call returned */
	if (mode != LL_SEG_END &&
	    (ll.head.next != &ll.b || ll.b.next != &ll.a ||
	     ll.a.prev != &ll.b || ll.b.prev != &ll.head))
		_exit(LL_NOT_LINKED);
	_exit(LL_HELD);
}

/* 27x: a link's destination, to the target. */
static uintptr_t ll_map_destination(uintptr_t v, void *arg)
{
	(void)arg;
	if (v == (uintptr_t)&ll.b.next || v == (uintptr_t)&ll.b.prev ||
	    v == (uintptr_t)&ll.a.prev || v == (uintptr_t)&ll.head.next)
		return (uintptr_t)&ll.target;
	return v;
}

/* 28a: the value of the first link (b's next: a), to the fake node. */
static uintptr_t ll_map_value(uintptr_t v, void *arg)
{
	(void)arg;
	return v == (uintptr_t)&ll.a ? (uintptr_t)&ll_fake : v;
}

/* 28b: the program's action, to the attacker's. */
static uintptr_t ll_map_action(uintptr_t v, void *arg)
{
	(void)arg;
	return v == (uintptr_t)&ll_good ? (uintptr_t)&ll_evil_action : v;
}

/* 28c: the program's handler, to the attacker's. */
static uintptr_t ll_map_handler(uintptr_t v, void *arg)
{
	(void)arg;
	return v == (uintptr_t)ll_good_handler ? (uintptr_t)ll_evil_handler : v;
}

/* 28d: the library's entry point, to a function of the attacker's. */
static uintptr_t ll_map_entry(uintptr_t v, void *arg)
{
	(void)arg;
	return v == ll_entry ? (uintptr_t)ll_evil_info : v;
}

/* 28e: the kernel's restorer, to a function of the attacker's. */
static uintptr_t ll_map_restorer(uintptr_t v, void *arg)
{
	(void)arg;
	return v == ll_restorer ? (uintptr_t)ll_evil_restorer : v;
}

/* 27y: into the helper's array (@arg, its end included), to the same
 * place of the forged one. */
static uintptr_t ll_map_cursor(uintptr_t v, void *arg)
{
	uintptr_t array = (uintptr_t)arg;

	if (array && v - array <= sizeof(ll_forged))
		return (uintptr_t)ll_forged + (v - array);
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

/* 27z: the bookkeeping segment on the victim's stack, its region the
 * pool's record, its destination below the pool's user start, its source
 * on the stack (the record pool.c built) and its length a record's. */
static uintptr_t ll_find_segment(pid_t pid, uintptr_t lo, uintptr_t hi)
{
	const struct rw_region *r = (const struct rw_region *)ll_pool_record;

	for (uintptr_t w = lo & ~(uintptr_t)7;
	     w + 2 * sizeof(struct rw_seg) <= hi; w += 8) {
		long words[sizeof(struct rw_seg) / sizeof(long)];
		struct rw_seg seg;

		errno = 0;
		for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			words[i] = ptrace(PTRACE_PEEKDATA, pid,
					  (void *)(w + i * sizeof(long)), 0);
		memcpy(&seg, words, sizeof(seg));
		if (!errno && (uintptr_t)seg.region == ll_pool_record &&
		    (uintptr_t)seg.dst >= r->start &&
		    (uintptr_t)seg.dst < r->user_start &&
		    (uintptr_t)seg.src >= lo && (uintptr_t)seg.src < hi &&
		    seg.len && seg.len <= 4096)
			return w;
	}
	return 0;
}

/* 27z: the segment's end, one segment further. */
static uintptr_t ll_map_seg_end(uintptr_t v, void *arg)
{
	uintptr_t seg = (uintptr_t)arg;

	if (seg && v == seg + sizeof(struct rw_seg))
		return seg + 2 * sizeof(struct rw_seg);
	return v;
}

/* 27z: a forged segment right after @seg. */
static void ll_poke_forged(pid_t pid, uintptr_t seg)
{
	long words[sizeof(struct rw_seg) / sizeof(long)];

	memcpy(words, &ll_forged[0], sizeof(words));
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		ptrace(PTRACE_POKEDATA, pid,
		       (void *)(seg + sizeof(struct rw_seg) + i * sizeof(long)),
		       (void *)words[i]);
}

struct ll_run {
	enum ll_mode mode;
	unsigned nth, only, entries, rewritten;
	uintptr_t array;
	bool attacked;
};
/* The modes that rewrite each word a map changes, by mode (the others
 * find an array or a segment first). */
static uintptr_t (*const ll_map_of[])(uintptr_t v, void *arg) = {
	[LL_DESTINATION] = ll_map_destination,
	[LL_VALUE] = ll_map_value,
	[LL_SIGACTION] = ll_map_action,
	[LL_SIGHANDLER] = ll_map_handler,
	[LL_SIGNAL] = ll_map_handler,
	[LL_SIGENTRY] = ll_map_entry,
	[LL_SIGRESTORER] = ll_map_restorer,
	[LL_CURSOR] = NULL,
	[LL_SEG_END] = NULL,
};

/* At each stop of a victim of ll_round(). */
static long ll_stop(pid_t pid, enum attack_stop stop,
		    const struct user_regs_struct *regs, void *arg)
{
	struct ll_run *run = arg;
	uintptr_t lo = regs->rsp, sp_top;

	/* The victim's own exit is not a moment of the call. */
	if (stop != ATTACK_STOP_ENTRY || run->attacked ||
	    regs->orig_rax == SYS_exit_group || ++run->entries != run->nth)
		return PTRACE_SYSCALL;
	sp_top = attack_trace_peek(pid, &ll_victim_sp);
	attack_begin();
	if (ll_map_of[run->mode]) {
		run->rewritten = attack_trace_rewrite(
			pid, lo, sp_top, ll_map_of[run->mode], NULL, 0);
	} else if (run->mode == LL_CURSOR) {
		run->array = ll_find_array(pid, lo, sp_top);
		run->rewritten = attack_trace_rewrite(
			pid, lo, sp_top, ll_map_cursor, (void *)run->array, 0);
	} else {
		run->array = ll_find_segment(pid, lo, sp_top);
		run->rewritten =
			attack_trace_rewrite(pid, lo, sp_top, ll_map_seg_end,
					     (void *)run->array, run->only);
		if (run->rewritten)
			ll_poke_forged(pid, run->array);
	}
	run->attacked = true;
	return PTRACE_SYSCALL;
}

enum ll_round { LL_NO_MOMENT, LL_ROUND_HELD, LL_ROUND_LANDED };

/* One victim, attacked at its @nth system call entry after its stop
 * (27z: at the @only-th word equal to the segment's end: the loop's
 * cursor, advanced before the call, has the same value). */
static enum ll_round ll_round(enum ll_mode mode, unsigned nth, unsigned only,
			      char *what, size_t cap)
{
	struct ll_run run = {.mode = mode, .nth = nth, .only = only};
	int status = attack_trace_syscalls(
		attack_trace_spawn(ll_setup, ll_victim,
				   (void *)(uintptr_t)mode),
		ll_stop, &run);

	snprintf(what, cap, "at system call %u (%s), %u words rewritten%s: %s",
		 nth, run.attacked ? "entered" : "none", run.rewritten,
		 mode == LL_CURSOR && !run.array
			 ? " (no array of four on the stack)"
		 : mode == LL_SEG_END && !run.array
			 ? " (no segment on the stack)"
			 : "",
		 WIFEXITED(status) && WEXITSTATUS(status) == LL_LANDED
			 ? "protected memory changed where the call did not say"
		 : WIFEXITED(status) && WEXITSTATUS(status) == LL_NOT_LINKED
			 ? "the list was left half linked"
		 : WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGABRT
			 ? "the library aborted"
		 : WIFEXITED(status) && WEXITSTATUS(status) > 128
			 ? "the victim died of a rewritten frame"
			 : "held");
	if (!run.attacked)
		return LL_NO_MOMENT;
	if (WIFEXITED(status) && WEXITSTATUS(status) == LL_LANDED)
		return LL_ROUND_LANDED;
	if (WIFEXITED(status) &&
	    (WEXITSTATUS(status) == LL_HELD || WEXITSTATUS(status) > 128))
		return LL_ROUND_HELD;
	/* Half linked with the target untouched: the write went nowhere
	 * protected, or partly; not the attack's aim, but say so. */
	if (WIFEXITED(status) && WEXITSTATUS(status) == LL_NOT_LINKED)
		return LL_ROUND_HELD;
	attack_report(ATTACK_ERROR, "the victim ended with status %#x (%s)",
		      status, what);
}

static void ll_attack(enum ll_mode mode)
{
	const struct rw_table *t = attack_lib_sym("rw_table");
	const struct rw_region *r = t ? attack_region_of(t, &ll) : NULL;
	char what[200] = "", last[200] = "";
	unsigned nth, held = 0;

	if (!r)
		attack_report(ATTACK_ERROR, "the section has no region");
	if (mode == LL_SIGENTRY || mode == LL_SIGRESTORER) {
		struct sigaction k;

		ll_entry = (uintptr_t)attack_lib_func("entry");
		if (!ll_entry || __sigaction(SIGSEGV, NULL, &k) ||
		    k.sa_sigaction !=
			    (void (*)(int, siginfo_t *, void *))ll_entry)
			attack_report(ATTACK_ERROR,
				      "SIGSEGV's kernel action is not the "
				      "library's entry()");
		ll_restorer = (uintptr_t)k.sa_restorer;
	}
	for (unsigned i = 0; i < 4; i++)
		ll_forged[i] = (struct rw_seg){.region = (struct rw_region *)r,
					       .dst = &ll.target,
					       .src = &ll_evil,
					       .len = sizeof(ll_evil)};
	if (mode == LL_SEG_END) {
		/* A pool of the default backend, on whose first rare_alloc()
		 * each victim writes the bookkeeping of a fresh page. */
		ll_pool = rare_pool_create(1 << 16);
		r = ll_pool ? attack_region_of(t, ll_pool) : NULL;
		if (!r)
			attack_report(ATTACK_ERROR, "rare_pool_create: %s",
				      strerror(errno));
		ll_pool_record = (uintptr_t)r;
	}
	for (nth = 1; nth < 64; nth++) {
		enum ll_round round = LL_NO_MOMENT;

		for (unsigned only = mode == LL_SEG_END; only <= 3; only++) {
			round = ll_round(mode, nth, only, what, sizeof(what));
			if (round == LL_ROUND_LANDED)
				attack_report(ATTACK_OPEN, "%s", what);
			if (round == LL_NO_MOMENT || !only)
				break;
		}
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
	ll_attack(LL_DESTINATION);
}

ATTACK("27y", list_link_cursor,
       "the backend's cursor over `rare_list_add`'s segments pointed at "
       "forged segments at each system call of the call: no forged "
       "segment may be written")
{
	ll_attack(LL_CURSOR);
}

ATTACK("28a", list_link_value,
       "the value of a `rare_list_add` link (a node's address) rewritten "
       "in the library's frames at each system call of the call to a node "
       "in writable memory: the call must not return with a link there")
{
	ll_attack(LL_VALUE);
}

ATTACK("28b", sigaction_source,
       "the action `sigaction` records (a const object of the program's) "
       "pointed at one in writable memory in the library's frames at each "
       "system call of the call: the program's handler must be recorded")
{
	ll_attack(LL_SIGACTION);
}

ATTACK("28c", sigaction_handler,
       "the handler `sigaction` records rewritten in the library's frames "
       "(its copies for the table and the kernel) at each system call of "
       "the call: the program's handler must be recorded and installed")
{
	ll_attack(LL_SIGHANDLER);
}

ATTACK("28d", sigaction_entry,
       "the entry point `sigaction` gives the kernel for a wrapped signal "
       "rewritten in the library's frames at each system call of the call "
       "to a function of the attacker's: the kernel must get the library's")
{
	ll_attack(LL_SIGENTRY);
}

ATTACK("28e", sigaction_restorer,
       "the restorer of the kernel's action rewritten in the library's "
       "frames at each system call of `sigaction` to a function of the "
       "attacker's: the kernel must keep a restorer of the library's or "
       "the C library's")
{
	ll_attack(LL_SIGRESTORER);
}

ATTACK("28f", signal_handler,
       "the handler `signal` records rewritten in the library's frames at "
       "each system call of the call (the interposer's own action among "
       "them): the program's handler must be recorded and installed")
{
	ll_attack(LL_SIGNAL);
}

ATTACK("27z", pool_segment_end,
       "the backend's loop bound over `rare_alloc`'s bookkeeping segment "
       "moved one segment further at each system call of the call, a "
       "forged segment after it: no forged segment may be written")
{
	ll_attack(LL_SEG_END);
}
