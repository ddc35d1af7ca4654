/* SPDX-License-Identifier: MIT */
/*
 * attack.h - the attack matrix: scenarios that attack the library the way an
 * exploit would, each in a forked child, and the table (attack_table.c) of
 * what each backend is documented to stop.
 *
 * A scenario is a function run in a fresh child after rare_write_init(). It
 * calls attack_begin() right before the hostile step; a death by SIGSEGV,
 * SIGBUS, SIGILL or SIGABRT after that point counts as "blocked" (the store
 * faulted, a hijacked jump missed, or the library caught it), a death
 * before it is a harness error. A
 * scenario that survives reports what it saw with attack_report().
 *
 * Every TEST(attack_*) compares the result with the table for the backend in
 * force and fails when they differ in either direction; `make attack-matrix`
 * prints all of it as a markdown table.
 */
#ifndef RAREWRITE_TEST_ATTACK_H
#define RAREWRITE_TEST_ATTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

enum attack_result {
	ATTACK_UNSET = 0,
	ATTACK_BLOCKED,
	ATTACK_OPEN,
	ATTACK_NA,
	ATTACK_ERROR,
	/* In the table only: blocked where the kernel has mseal(2) (Linux
	 * 6.10+), open where it has not. */
	ATTACK_SEALED,
	/* In the table only: blocked where the program links
	 * librarewrite.so, which interposes the C library's entries that
	 * start threads of its own (src/libc_threads.c), open in a static
	 * program, which keeps the C library's (librarewrite.a leaves them
	 * out). */
	ATTACK_SHARED,
};

/* Room for the backends of the library (rare_write_backends(3)), which
 * give the matrix's columns and their order. */
#define ATTACK_NR_BACKENDS 8
/* The backends attack_table.c has a column for, in its cells' order; NULL
 * after the last. The matrix fails on a backend of the library without
 * one, or a column that names no backend of the library. */
extern const char *const attack_columns[ATTACK_NR_BACKENDS];

struct attack {
	const char *id;	  /* "1a": scenario number and variant */
	const char *what; /* one line for the matrix */
	void (*fn)(void);
};

/* The expectations: one row per scenario, one column per backend. */
struct attack_expect {
	const char *id;
	enum attack_result result[ATTACK_NR_BACKENDS];
};
extern const struct attack_expect attack_table[];
extern const size_t attack_table_len;

/* Register a scenario and its TEST() case. */
#define ATTACK(id_, name_, what_)                                              \
	static void attack_fn_##name_(void);                                   \
	static const struct attack attack_def_##name_ = {id_, what_,           \
							 attack_fn_##name_};   \
	__attribute__((used,                                                   \
		       section("rw_attacks"))) static const struct attack      \
		*const attack_ptr_##name_ = &attack_def_##name_;               \
	TEST(attack_##name_, EXPECT_PASS)                                      \
	{                                                                      \
		attack_check(&attack_def_##name_);                             \
	}                                                                      \
	static void attack_fn_##name_(void)

/* In the attack child. */
void attack_begin(void); /* the hostile step starts now */
__attribute__((noreturn)) void attack_report(enum attack_result r,
					     const char *fmt, ...);
/* The attack landed (OPEN), whatever happens next: a later death of the
 * child (a crash the corruption caused) keeps this verdict and note. */
void attack_landed(const char *what);
/* Whether a verdict is in the report (a child of this one may write it). */
bool attack_reported(void);
struct rw_table;
struct rw_region;
/* The live record of table @t (the library's rw_table, attack_lib_sym())
 * whose region holds @p, or NULL. */
const struct rw_region *attack_region_of(const struct rw_table *t,
					 const void *p);
/* Whether a writable shared mapping of a region's memfd (a shadow alias)
 * is mapped in this process (/proc/self/maps). */
bool attack_alias_mapped(void);
/* Report OPEN when @landed, else BLOCKED, with a note. */
__attribute__((noreturn)) void attack_verdict(bool landed, const char *what);

/* A store the compiler cannot drop, move or instrument (the attacker's
 * arbitrary-write primitive). */
static inline void attack_store64(void *addr, uint64_t v)
{
	__asm__ volatile("movq %1, (%0)" : : "r"(addr), "r"(v) : "memory");
}

static inline uint64_t attack_load64(const void *addr)
{
	return __atomic_load_n((const uint64_t *)addr, __ATOMIC_RELAXED);
}

/* Store @v at @addr and report whether the store itself faulted (true: it
 * went through). Recovers from SIGSEGV/SIGBUS on the calling thread. */
bool attack_try_store64(void *addr, uint64_t v);

/* Store repeatedly from a second thread while @fn(@arg) runs windows in a
 * loop on the calling thread, until @addr holds @v or @seconds pass. Returns
 * true when the store landed. */
bool attack_race(void *addr, uint64_t v, void (*fn)(void *), void *arg,
		 double seconds);

/* A race's or a wait's budget of @seconds, as the scenario should use it:
 * @seconds, unless RAREWRITE_TEST_RACE_SCALE=F (0 < F <= 1) is set and the
 * table expects this scenario blocked on this backend; then F * @seconds,
 * and never below 1 s. A blocked cell runs its races to the end, so the
 * scale shortens those, and only those: a race that must land keeps its
 * whole budget (it stops when it lands), a blocked one still runs and
 * still fails when it lands. For the lanes that repeat the suite on
 * another build (make check-asan, the package's autopkgtest, check-vm);
 * make check keeps the full budgets. attack_race() applies it itself. */
double attack_budget(double seconds);

/* A victim traced at its system calls (x86-64): deterministic attacks on
 * what the library keeps in its stack frames. The attack child forks a
 * victim with attack_trace_spawn(), runs it with attack_trace_syscalls(),
 * and reads and rewrites its memory at the stops it chooses; a fresh
 * victim for each moment attacked.
 *
 * Fork a victim traced by the calling process: the child runs
 * @setup(@arg) untraced (when @setup is not NULL), stops itself, then runs
 * @victim(@arg), which ends the child with a status of its own (it exits
 * with ATTACK_TRACE_RETURNED if @victim returns). The victim's pid, in
 * that stop; it dies with the tracer (PTRACE_O_EXITKILL). */
#define ATTACK_TRACE_RETURNED 127
pid_t attack_trace_spawn(void (*setup)(void *arg), void (*victim)(void *arg),
			 void *arg);

enum attack_stop {
	ATTACK_STOP_ENTRY, /* a system call entry */
	ATTACK_STOP_EXIT,  /* its return (rax: the result) */
	ATTACK_STOP_STEP,  /* an instruction done, after PTRACE_SINGLESTEP */
};
struct user_regs_struct;
/* Called at each stop of the victim with its registers; returns how the
 * victim goes on: PTRACE_SYSCALL (to the next system call entry or
 * return) or PTRACE_SINGLESTEP (one instruction). */
typedef long (*attack_on_stop)(pid_t pid, enum attack_stop stop,
			       const struct user_regs_struct *regs, void *arg);
/* Run victim @pid from its stop to its end, calling @on_stop(..., @arg)
 * at each stop; its wait status. Signals are delivered to it (the
 * library's SIGABRT too); a lost victim is a harness error. */
int attack_trace_syscalls(pid_t pid, attack_on_stop on_stop, void *arg);

/* The word at @addr of traced @pid (the address of an object of ours:
 * the victim's copy of it). */
uintptr_t attack_trace_peek(pid_t pid, const volatile void *addr);
/* The words of traced @pid from @lo (rounded down to 8) up to @hi into
 * @buf, at most @cap of them; how many it read. */
size_t attack_trace_read(pid_t pid, uintptr_t lo, uintptr_t hi, uint64_t *buf,
			 size_t cap);
/* Rewrite every word of traced @pid from @lo (rounded down to 8) up to
 * @hi that @map(word, @arg) changes, to what it returns (@only > 0: only
 * the @only-th of them from @lo up). How many words were written. */
unsigned attack_trace_rewrite(pid_t pid, uintptr_t lo, uintptr_t hi,
			      uintptr_t (*map)(uintptr_t v, void *arg),
			      void *arg, unsigned only);
/* attack_trace_rewrite() of every word that points into [@from, @from +
 * @span), to the same place from @to. */
unsigned attack_trace_move(pid_t pid, uintptr_t lo, uintptr_t hi,
			   uintptr_t from, uintptr_t span, uintptr_t to);

/* Address of a file-local object of the library (from its ELF symbol table;
 * test-only, no API), or NULL. TLS symbols give the calling thread's copy. */
void *attack_lib_sym(const char *name);

/* Call @fn on every data object of the library (its ELF symbol table),
 * TLS ones with the calling thread's copy. In a static program that is
 * every object of the program: @ours says whether it is the library's
 * (its sources, or an rw_ name). */
void attack_lib_each_object(void (*fn)(const char *name, void *addr,
				       size_t size, bool tls, bool ours,
				       void *arg),
			    void *arg);

/* Address of a function of the library, hidden ones too, or NULL. */
void *attack_lib_func(const char *name);

/* Whether @addr lies in a function of the library's own code. */
bool attack_lib_code(const void *addr);

/* Run @a against the backend in RAREWRITE_BACKEND; the backend in force
 * comes back in @backend. */
enum attack_result attack_run(const struct attack *a, char *note,
			      size_t note_len, char *backend,
			      size_t backend_len);
/* The TEST() body: run, compare with the table, fail on a difference. */
void attack_check(const struct attack *a);
enum attack_result attack_expected(const char *id, const char *backend);
/* The table's cell itself (ATTACK_SEALED, ATTACK_SHARED unresolved). */
enum attack_result attack_cell(const char *id, const char *backend);
const char *attack_result_name(enum attack_result r);

#define ATTACK_MARKER 0x4141414141414141ULL

#endif /* RAREWRITE_TEST_ATTACK_H */
