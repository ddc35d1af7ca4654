// SPDX-License-Identifier: MIT
/*
 * attack_map_view.c - scenario 27s: the view a backend's map() hands back,
 * rewritten in the library's stack frames on its way to the core's record
 * of the map, which is what rare_write_unmap() releases.
 *
 * On shadow the view is a writable alias (an mmap(2) of the region's
 * memfd) and unmap munmaps the pages of the recorded view. Deterministic,
 * not a race: the attack child traces a victim child with PTRACE_SYSCALL,
 * learns the alias from mmap's return, and at the n-th system call entry
 * after it (n = 1, 2, ...: each moment in turn, a fresh victim each)
 * rewrites every word of the victim's stack below its own frame that holds
 * the alias (its base or the view into it) to the same place in the pages
 * of the program's protected section. A record that took the rewritten
 * value makes unmap munmap the section and leave the alias mapped: the
 * section's memory is gone from the program, and the memfd stays writable
 * through the alias. An abort by the library counts as held.
 *
 * The victim's own frame (its handle, returned by value) is the program's,
 * as everywhere in the attack lane, and is not rewritten.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"

/* What the map targets: at the start of a page of the section, where the
 * rewritten view points (only in the victim, a child of its own). */
static struct {
	uint64_t word;
} mv_target __wr_rare __attribute__((aligned(4096)));

/* The victim's stack pointer right before its call: the attacker rewrites
 * only below it (the library's frames). */
static volatile uintptr_t mv_victim_sp;

enum { MV_HELD = 0, MV_SECTION_GONE = 10, MV_ALIAS_LEFT = 11 };

static __attribute__((noinline)) void mv_map_unmap(void)
{
	struct rare_write_mapping m;
	uintptr_t sp;

	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	mv_victim_sp = sp; /* the callees' frames are below */
	m = rare_write_map(&mv_target.word, 8);
	rare_write_unmap(m);
}

static __attribute__((noreturn)) void mv_victim(void *arg)
{
	void *page = (void *)((uintptr_t)&mv_target & ~(uintptr_t)4095);

	(void)arg;
	mv_map_unmap();
	if (msync(page, 4096, MS_ASYNC) && errno == ENOMEM)
		_exit(MV_SECTION_GONE);
	_exit(attack_alias_mapped() ? MV_ALIAS_LEFT : MV_HELD);
}

struct mv_run {
	unsigned nth, entries, rewritten;
	bool attacked;
	uintptr_t alias, sp_top;
};

static long mv_stop(pid_t pid, enum attack_stop stop,
		    const struct user_regs_struct *regs, void *arg)
{
	struct mv_run *run = arg;

	if (stop == ATTACK_STOP_EXIT) { /* the alias from mmap's return */
		if (!run->alias && regs->orig_rax == SYS_mmap &&
		    regs->rax < (unsigned long long)-4095L &&
		    regs->rsi == 4096 && regs->r10 == MAP_SHARED)
			run->alias = (uintptr_t)regs->rax;
		return PTRACE_SYSCALL;
	}
	if (!run->alias || run->attacked || ++run->entries != run->nth)
		return PTRACE_SYSCALL;
	if (!run->sp_top)
		run->sp_top = attack_trace_peek(pid, &mv_victim_sp);
	attack_begin();
	run->rewritten =
		attack_trace_move(pid, regs->rsp, run->sp_top, run->alias, 4096,
				  (uintptr_t)&mv_target & ~(uintptr_t)4095);
	run->attacked = true;
	return PTRACE_SYSCALL;
}

enum mv_round { MV_NO_MOMENT, MV_ROUND_HELD, MV_ROUND_LANDED };

/* One victim, attacked at its @nth system call entry after the alias's
 * mmap. */
static enum mv_round mv_round(unsigned nth, char *what, size_t cap)
{
	struct mv_run run = {.nth = nth};
	int status = attack_trace_syscalls(
		attack_trace_spawn(NULL, mv_victim, NULL), mv_stop, &run);

	snprintf(what, cap,
		 "at system call %u after the alias's mmap, %u words "
		 "rewritten: %s",
		 nth, run.rewritten,
		 WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT
			 ? "the library aborted"
		 : WIFEXITED(status) && WEXITSTATUS(status) == MV_SECTION_GONE
			 ? "unmap unmapped the section's page"
		 : WIFEXITED(status) && WEXITSTATUS(status) == MV_ALIAS_LEFT
			 ? "a writable alias stayed mapped"
			 : "held");
	if (!run.alias)
		attack_report(ATTACK_ERROR, "the map made no mmap of 4096 "
					    "bytes of a descriptor");
	if (!run.attacked)
		return MV_NO_MOMENT;
	if (WIFEXITED(status) && (WEXITSTATUS(status) == MV_SECTION_GONE ||
				  WEXITSTATUS(status) == MV_ALIAS_LEFT))
		return MV_ROUND_LANDED;
	if (WIFEXITED(status) && WEXITSTATUS(status) == MV_HELD)
		return MV_ROUND_HELD;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)
		return MV_ROUND_HELD;
	attack_report(ATTACK_ERROR, "the victim ended with status %#x (%s)",
		      status, what);
}

ATTACK("27s", map_view,
       "the view `rare_write_map` records (shadow: the alias) rewritten in "
       "the library's frames at each system call after its mmap: unmap "
       "must release the alias, not the section")
{
	char what[200] = "", last[200] = "";
	unsigned nth;

	if (strcmp(rare_write_backend(), "shadow"))
		attack_report(ATTACK_NA, "the view is a mapping of its own on "
					 "shadow only");
	for (nth = 1; nth < 64; nth++) {
		enum mv_round r = mv_round(nth, what, sizeof(what));

		if (r == MV_ROUND_LANDED)
			attack_report(ATTACK_OPEN, "%s", what);
		if (r == MV_NO_MOMENT)
			break;
		memcpy(last, what, sizeof(last));
	}
	if (nth == 1)
		attack_report(ATTACK_ERROR, "no system call after the mmap");
	attack_report(ATTACK_BLOCKED, "%u moments held; last: %s", nth - 1,
		      last);
}
