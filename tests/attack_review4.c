// SPDX-License-Identifier: MIT
/*
 * attack_review4.c - scenarios 27u, 27v and 27w: findings 1, 2 and 4 of
 * the fresh review of commit 4d3a807 (docs/attack-matrix.md, "What is
 * open"), each with a test of its own. Deterministic, not races: as in
 * 27s (attack_map_view.c), the attack child forks a victim that it traces
 * with ptrace and stores into the victim's stack at chosen moments, a
 * fresh victim for each moment (27u, 27w; 27v's racer runs through one
 * victim). Only the library's frames are rewritten,
 * below the stack pointer the victim publishes right before its call; the
 * victim's own frame is the program's. An abort by the library counts as
 * held.
 *
 * 27u (pwrite, process: their view is a malloc()ed staging copy): the
 * backend's unmap freed the view it got as an argument, which crossed the
 * commit's system calls in a callee-saved register the callees saved on
 * the stack. At the n-th system call entry of rare_write_unmap() (n = 1,
 * 2, ...), every stack word pointing into the view is rewritten to the
 * same place in another live heap object of the same size. Landed when
 * the next malloc() of that size hands out the live object (it was
 * freed: the program now holds it twice).
 *
 * 27v (shadow, mprotect, pkey: unmap releases what map opened, an alias
 * or a window): the record rare_write_map() puts into the table says
 * whether the backend handed out the view; unmap calls the backend's only
 * when it does. The flag had its address taken, so the record and the
 * check after the store took it from the stack. No system call lies
 * between the flag's last computation and its check, hence single steps:
 * one victim runs the map one instruction at a time, and after each
 * instruction of the library a racer that knows the binary keeps the
 * flag false: in every copy of the record on the stack (found by its
 * start and end) and in the flag's slot. The slot is found as the code
 * finds it, by its address in a register: the first stack byte holding 1
 * that a register points at once the map runs (other such bytes, the
 * handle's own flag among them, are left alone). Landed when, after
 * unmap, a writable alias of the region is still mapped (shadow) or the
 * target is still writable (mprotect, pkey).
 *
 * 27w (every backend: a map and its unmap write the table on each): every
 * table write went through the C library's pwrite(), which in a threaded
 * program keeps its arguments on its stack around its cancellation check,
 * with no system call there. A first victim, untouched, lists the table
 * writes (pwrite64 on the table's memfd) of a map and unmap. Then, for
 * each of them, a fresh victim runs from the return of the table write
 * before it (the marker's for the first) to its system call one
 * instruction at a time, and after every instruction the attacker
 * rewrites every stack word equal to the write's file offset to the
 * offset of another region's ops pointer (a pool's). Landed when that
 * region's ops pointer changed (its next rare_write() would call through
 * the bytes written there). The victim starts a thread first: only then
 * does the C library take the path with the cancellation check.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
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
#include "../src/table.h"

/* What the maps target, at the start of a page of the section. */
#define R4_LEN 64
static struct {
	uint64_t word[R4_LEN / 8];
} r4_target __wr_rare __attribute__((aligned(4096)));

/* Published by the victim right before the attacked call (its marker
 * system call follows): the stack pointer of its own frame (the attacker
 * rewrites only below it) and, for 27u, the map's view and the live
 * object of the same size. */
static volatile uintptr_t r4_victim_sp;
static volatile uintptr_t r4_view;
static void *volatile r4_bystander;
/* 27v: set once rare_write_map() returned (the racer stops there). */
static volatile int r4_mapped;
/* 27w: the table's memfd in the victim (a fork child has its own). */
static volatile long r4_vault_fd;

/* The victim's exit statuses. */
enum { R4_HELD = 0, R4_LANDED = 10, R4_BROKEN = 11 };

/* The marker, in the function that makes the attacked call: its stack
 * pointer (the library's frames are below it), then a system call of the
 * victim's own, where the attacker reads what the victim published. */
#define R4_MARK()                                                              \
	do {                                                                   \
		uintptr_t sp_;                                                 \
		__asm__ volatile("mov %%rsp, %0" : "=r"(sp_));                 \
		r4_victim_sp = sp_;                                            \
		syscall(SYS_getppid);                                          \
	} while (0)

#define R4_STACK_WORDS 4096

static const char *r4_status(int status)
{
	static char s[64];

	if (WIFEXITED(status) && WEXITSTATUS(status) == R4_HELD)
		return "held";
	if (WIFEXITED(status) && WEXITSTATUS(status) == R4_LANDED)
		return "landed";
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)
		return "the library aborted";
	snprintf(s, sizeof(s), "status %#x", status);
	return s;
}

/* A victim's end as a verdict: landed, held (an abort too), or an
 * error of the harness. */
static bool r4_landed(int status, const char *what)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == R4_LANDED)
		return true;
	if ((WIFEXITED(status) && WEXITSTATUS(status) == R4_HELD) ||
	    (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT))
		return false;
	attack_report(ATTACK_ERROR, "the victim ended with %s (%s)",
		      r4_status(status), what);
}

/* ---- 27u: the view unmap frees ---- */

static __attribute__((noinline)) void r4_view_victim(void *arg)
{
	struct rare_write_mapping m;
	void *next;

	(void)arg;
	r4_bystander = malloc(R4_LEN); /* live all along */
	m = rare_write_map(&r4_target, R4_LEN);
	r4_view = (uintptr_t)m.addr;
	R4_MARK();
	rare_write_unmap(m);
	next = malloc(R4_LEN);
	_exit(next == r4_bystander ? R4_LANDED : R4_HELD);
}

struct r4_view_round {
	unsigned nth, entries, rewritten;
	bool marked, attacked;
	uintptr_t sp_top, view, bystander;
};

static long r4_view_stop(pid_t pid, enum attack_stop stop,
			 const struct user_regs_struct *regs, void *arg)
{
	struct r4_view_round *rd = arg;

	if (stop != ATTACK_STOP_ENTRY)
		return PTRACE_SYSCALL;
	if (!rd->marked) {
		if (regs->orig_rax == SYS_getppid) {
			rd->marked = true;
			rd->sp_top = attack_trace_peek(pid, &r4_victim_sp);
			rd->view = attack_trace_peek(pid, &r4_view);
			rd->bystander = attack_trace_peek(pid, &r4_bystander);
		}
		return PTRACE_SYSCALL;
	}
	if (++rd->entries == rd->nth) {
		attack_begin();
		rd->rewritten =
			attack_trace_move(pid, regs->rsp, rd->sp_top, rd->view,
					  R4_LEN, rd->bystander);
		rd->attacked = true;
	}
	return PTRACE_SYSCALL;
}

ATTACK("27u", review4_view_free,
       "the view `rare_write_unmap` frees (pwrite, process: a heap copy) "
       "rewritten on the stack at each of its system calls to another live "
       "object: that object must not be freed")
{
	const char *b = rare_write_backend();
	char what[160] = "";
	unsigned nth;

	if (strcmp(b, "pwrite") && strcmp(b, "process"))
		attack_report(ATTACK_NA,
			      "the view is a heap copy on pwrite and "
			      "process only");
	for (nth = 1; nth < 64; nth++) {
		struct r4_view_round rd = {.nth = nth};
		int status = attack_trace_syscalls(
			attack_trace_spawn(NULL, r4_view_victim, NULL),
			r4_view_stop, &rd);

		if (!rd.marked)
			attack_report(ATTACK_ERROR, "no marker: %s",
				      r4_status(status));
		if (!rd.attacked) { /* unmap made fewer system calls */
			if (r4_landed(status, "untouched"))
				attack_report(ATTACK_ERROR,
					      "an untouched unmap freed the "
					      "live object");
			break;
		}
		snprintf(what, sizeof(what),
			 "at system call %u of unmap, %u words rewritten: %s",
			 nth, rd.rewritten, r4_status(status));
		if (r4_landed(status, what))
			attack_report(ATTACK_OPEN,
				      "%s (the live object was handed out "
				      "again)",
				      what);
	}
	if (nth == 1)
		attack_report(ATTACK_ERROR, "unmap made no system call");
	attack_report(ATTACK_BLOCKED, "%u moments held; last: %s", nth - 1,
		      what);
}

/* ---- 27v: the map's "backend handed out the view" flag ---- */

static __attribute__((noinline)) void r4_flag_victim(void *arg)
{
	struct rare_write_mapping m;
	bool writable;

	(void)arg;
	R4_MARK();
	m = rare_write_map(&r4_target, 8);
	r4_mapped = 1;
	rare_write_unmap(m);
	if (!strcmp(rare_write_backend(), "shadow"))
		writable = attack_alias_mapped();
	else
		writable = attack_try_store64(&r4_target, ATTACK_MARKER);
	_exit(writable ? R4_LANDED : R4_HELD);
}

struct r4_flag_run {
	bool stepping, done;
	unsigned steps, cleared;
	uintptr_t sp_top, slot;
};

/* Clear the byte at @addr of the victim if it holds 1. */
static unsigned r4_clear_one(pid_t pid, uintptr_t addr)
{
	uintptr_t word = addr & ~(uintptr_t)7;
	unsigned shift = (unsigned)(addr - word) * 8;
	long v;

	errno = 0;
	v = ptrace(PTRACE_PEEKDATA, pid, (void *)word, 0);
	if (errno || ((unsigned long)v >> shift & 0xff) != 1)
		return 0;
	v &= ~(0xffL << shift);
	return !ptrace(PTRACE_POKEDATA, pid, (void *)word, (void *)v);
}

/* One step of the racer: the flag cleared in every record on the stack
 * (start, end, view, token, flag: struct open_map) and in its slot. The
 * slot is the first stack byte holding 1 that a register of the library
 * points at once the map runs (the address the code took of its local,
 * map_view()'s out-parameter in 4d3a807), and stays the racer's target. */
static unsigned r4_clear_flags(pid_t pid, const struct user_regs_struct *regs,
			       struct r4_flag_run *run)
{
	static uint64_t words[R4_STACK_WORDS];
	const unsigned long long held[] = {
		regs->rax, regs->rbx, regs->rcx, regs->rdx, regs->rsi,
		regs->rdi, regs->rbp, regs->r8,	 regs->r9,  regs->r10,
		regs->r11, regs->r12, regs->r13, regs->r14, regs->r15};
	uintptr_t lo = regs->rsp & ~(uintptr_t)7;
	size_t n =
		attack_trace_read(pid, lo, run->sp_top, words, R4_STACK_WORDS);
	uintptr_t start = (uintptr_t)&r4_target;
	unsigned done = 0;

	for (size_t i = 0; i + 4 < n; i++)
		if (words[i] == start && words[i + 1] == start + 8 &&
		    (words[i + 4] & 0xff) == 1)
			done += r4_clear_one(pid, lo + (i + 4) * 8);
	for (size_t i = 0; !run->slot && i < sizeof(held) / sizeof(held[0]);
	     i++)
		if (held[i] > regs->rsp && held[i] < run->sp_top &&
		    r4_clear_one(pid, (uintptr_t)held[i])) {
			run->slot = (uintptr_t)held[i];
			return done + 1;
		}
	if (run->slot)
		done += r4_clear_one(pid, run->slot);
	return done;
}

#define R4_MAX_STEPS 2000000u

/* Whether @rip is the library's code, asked after every instruction.
 * With librarewrite.so, whether it lies in the library's object (its code
 * is the library's); in a static program attack_lib_code(), which reads
 * the symbol table from the file at each call, remembered per address. */
static bool r4_lib_code(uintptr_t rip)
{
	static struct {
		uintptr_t rip;
		bool ours;
	} memo[8192];
	static Dl_info lib;
	static int shared = -1;
	size_t i = (rip ^ rip >> 13) % (sizeof(memo) / sizeof(memo[0]));
	Dl_info at;

	if (shared < 0)
		shared = dladdr((void *)rare_write_init, &lib) &&
			 lib.dli_fname && lib.dli_fname[0];
	if (shared)
		return dladdr((void *)rip, &at) &&
		       at.dli_fbase == lib.dli_fbase;
	if (memo[i].rip != rip) {
		memo[i].rip = rip;
		memo[i].ours = attack_lib_code((void *)rip);
	}
	return memo[i].ours;
}

static long r4_flag_stop(pid_t pid, enum attack_stop stop,
			 const struct user_regs_struct *regs, void *arg)
{
	struct r4_flag_run *run = arg;

	if (run->done)
		return PTRACE_SYSCALL;
	if (!run->stepping) {
		/* from the marker's return on, one instruction at a time */
		if (stop == ATTACK_STOP_EXIT && regs->orig_rax == SYS_getppid) {
			run->stepping = true;
			run->sp_top = attack_trace_peek(pid, &r4_victim_sp);
			attack_begin();
			return PTRACE_SINGLESTEP;
		}
		return PTRACE_SYSCALL;
	}
	if (attack_trace_peek(pid, &r4_mapped) || ++run->steps > R4_MAX_STEPS) {
		run->done = true;
		return PTRACE_SYSCALL;
	}
	if (r4_lib_code(regs->rip))
		run->cleared += r4_clear_flags(pid, regs, run);
	return PTRACE_SINGLESTEP;
}

ATTACK("27v", review4_map_flag,
       "the flag in `rare_write_map`'s record that the backend handed out "
       "the view, kept false on the stack through the map: unmap must "
       "still close what the map opened")
{
	const char *b = rare_write_backend();
	struct r4_flag_run run = {0};
	char what[160];
	int status;

	if (!strcmp(b, "pwrite") || !strcmp(b, "process"))
		attack_report(ATTACK_NA, "the view is a heap copy: nothing of "
					 "the region is left writable");
	status = attack_trace_syscalls(
		attack_trace_spawn(NULL, r4_flag_victim, NULL), r4_flag_stop,
		&run);
	snprintf(what, sizeof(what), "%u instructions, %u bytes cleared: %s",
		 run.steps, run.cleared, r4_status(status));
	if (!run.stepping)
		attack_report(ATTACK_ERROR, "no marker: %s", what);
	if (run.steps > R4_MAX_STEPS)
		attack_report(ATTACK_ERROR, "the map did not return: %s", what);
	if (r4_landed(status, what))
		attack_report(ATTACK_OPEN, "%s (unmap left the map open)",
			      what);
	attack_report(ATTACK_BLOCKED, "%s", what);
}

/* ---- 27w: a table write's offset ---- */

/* A pool in another region: the region whose ops pointer a moved table
 * write overwrites (made before the victims fork). */
static void *r4_other;

static void *r4_idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* The victim's expectations, kept apart from its registers. */
static const struct rw_table *volatile r4_table;
static const struct rw_region *volatile r4_other_record;
static const struct rw_backend *volatile r4_other_ops;

static __attribute__((noinline)) void r4_table_victim(void *arg)
{
	const struct rw_table *t = attack_lib_sym("rw_table");
	const struct rw_region *other = attack_region_of(t, r4_other);
	const struct rw_backend *ops = other->backend;
	struct rare_write_mapping m;
	pthread_t idle;

	(void)arg;
	/* A threaded program: glibc's pwrite() keeps its arguments on the
	 * stack only then. */
	if (pthread_create(&idle, NULL, r4_idle, NULL))
		_exit(R4_BROKEN);
	r4_vault_fd = t->vault_fd;
	r4_table = t;
	r4_other_record = other;
	r4_other_ops = ops;
	R4_MARK();
	m = rare_write_map(&r4_target, 8);
	rare_write_unmap(m);
	/* From memory the attacker does not rewrite (it rewrites the
	 * library's frames only): this frame's registers came back through
	 * them, and a word equal to the table's address is one it rewrites. */
	_exit(attack_region_of(r4_table, r4_other) != r4_other_record ||
			      r4_other_record->backend != r4_other_ops
		      ? R4_LANDED
		      : R4_HELD);
}

#define R4_MAX_WRITES 32

struct r4_table_run {
	int vault_fd;
	/* the first, untouched victim: each table write's file offset, in
	 * order */
	unsigned nr_writes;
	uintptr_t offset[R4_MAX_WRITES];
	/* an attacked victim: which write, and its offset's new value */
	bool attack, marked;
	unsigned which, writes, steps, rewritten;
	uintptr_t sp_top, to;
};

static bool r4_table_write(const struct r4_table_run *run,
			   const struct user_regs_struct *regs)
{
	return regs->orig_rax == SYS_pwrite64 &&
	       (int)regs->rdi == run->vault_fd;
}

/* Whether the victim's next instruction is a system call that writes the
 * table (its number and descriptor already in rax and rdi). */
static bool r4_before_table_write(pid_t pid, const struct r4_table_run *run,
				  const struct user_regs_struct *regs)
{
	long insn;

	errno = 0;
	insn = ptrace(PTRACE_PEEKTEXT, pid, (void *)regs->rip, 0);
	return !errno && (insn & 0xffff) == 0x050f /* syscall */ &&
	       regs->rax == SYS_pwrite64 && (int)regs->rdi == run->vault_fd;
}

/* Table writes are counted, not system calls: the process backend's
 * waits for its helper vary in number from run to run. */
static long r4_table_stop(pid_t pid, enum attack_stop stop,
			  const struct user_regs_struct *regs, void *arg)
{
	struct r4_table_run *run = arg;

	if (!run->marked) {
		if (stop == ATTACK_STOP_ENTRY &&
		    regs->orig_rax == SYS_getppid) {
			run->marked = true;
			run->sp_top = attack_trace_peek(pid, &r4_victim_sp);
			run->vault_fd =
				(int)attack_trace_peek(pid, &r4_vault_fd);
		}
		return PTRACE_SYSCALL;
	}
	if (!run->attack) { /* the untouched victim: list the writes */
		if (stop == ATTACK_STOP_ENTRY && r4_table_write(run, regs) &&
		    run->nr_writes < R4_MAX_WRITES)
			run->offset[run->nr_writes++] = regs->r10;
		return PTRACE_SYSCALL;
	}
	if (stop == ATTACK_STOP_ENTRY && r4_table_write(run, regs))
		run->writes++;
	/* From the return of the write before (the marker's for the first)
	 * to this write's system call, one instruction at a time. */
	if (stop == ATTACK_STOP_EXIT && run->writes == run->which &&
	    (run->which ? r4_table_write(run, regs)
			: regs->orig_rax == SYS_getppid)) {
		attack_begin();
		return PTRACE_SINGLESTEP;
	}
	if (stop != ATTACK_STOP_STEP)
		return PTRACE_SYSCALL;
	run->steps++;
	run->rewritten +=
		attack_trace_move(pid, regs->rsp, run->sp_top,
				  run->offset[run->which], 1, run->to);
	if (r4_before_table_write(pid, run, regs) || run->steps > R4_MAX_STEPS)
		return PTRACE_SYSCALL;
	return PTRACE_SINGLESTEP;
}

ATTACK("27w", review4_table_offset,
       "the file offset of each table write of a map and unmap rewritten on "
       "the stack, instruction by instruction up to its system call, to "
       "another region's ops pointer: the write must not move")
{
	const struct rw_table *t = attack_lib_sym("rw_table");
	struct r4_table_run list = {0};
	const struct rw_region *other;
	char what[200] = "";
	unsigned i;
	int status;

	r4_other = rare_alloc(rare_pool_create(1 << 16), 64);
	other = r4_other ? attack_region_of(t, r4_other) : NULL;
	if (!other)
		attack_report(ATTACK_ERROR, "no pool or no table");
	status = attack_trace_syscalls(
		attack_trace_spawn(NULL, r4_table_victim, NULL), r4_table_stop,
		&list);
	if (r4_landed(status, "untouched") || !list.marked || !list.nr_writes)
		attack_report(ATTACK_ERROR,
			      "an untouched map wrote no table "
			      "(%s)",
			      r4_status(status));
	for (i = 0; i < list.nr_writes; i++) {
		struct r4_table_run run = list;

		run.attack = true;
		run.marked = false;
		run.which = i;
		run.to = (uintptr_t)&other->backend - (uintptr_t)t;
		status = attack_trace_syscalls(
			attack_trace_spawn(NULL, r4_table_victim, NULL),
			r4_table_stop, &run);
		snprintf(what, sizeof(what),
			 "table write %u of %u (offset %#lx), %u instructions, "
			 "%u words rewritten: %s",
			 i + 1, list.nr_writes, (unsigned long)list.offset[i],
			 run.steps, run.rewritten, r4_status(status));
		if (r4_landed(status, what))
			attack_report(ATTACK_OPEN,
				      "%s (another region's ops pointer "
				      "changed)",
				      what);
	}
	attack_report(ATTACK_BLOCKED, "%u table writes held; last: %s",
		      list.nr_writes, what);
}
