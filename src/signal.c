// SPDX-License-Identifier: MIT
/*
 * signal.c - the library's SIGSEGV handler stays first; the program's
 * handlers run behind it.
 *
 * From rare_write_init() on, the kernel's SIGSEGV action is the library's
 * handler: a store to protected memory is reported (fault.c) before the
 * process dies, a fault a backend repairs (pkey reads) is retried, and
 * every other fault goes to the handler the program had, unchanged. A
 * crash reporter that installs its handler after init would replace ours,
 * so every function of the C library that installs a handler is
 * interposed: sigaction(), signal(), ssignal(), bsd_signal(),
 * sysv_signal(), __sysv_signal() (signal() under -std=c11), sigset(),
 * sigignore() and siginterrupt() (glibc's own go to its internal
 * __sigaction(), around the interposed one)
 * (like pthread_create() in backend/pkey.c): for a signal the library
 * wraps, the program's action is kept here, the kernel gets the library's
 * entry point with the program's mask and flags, and sigaction() reports
 * the program's action back as if nothing stood between.
 *
 * On a backend with a signal_enter hook (pkey) every handler of the
 * program, for any signal, is wrapped: a handler starts with the kernel's
 * init_pkru, which denies even reads of protected data, and the hook gives
 * it "read yes, write no" before the program's code runs. Signals the
 * library does not wrap go straight to the C library.
 *
 * The library's own actions go to the kernel with rt_sigaction(2) itself,
 * from the table (kernel_install()); the C library's sigaction is glibc's
 * __sigaction, exported under that name by both libc.so and libc.a
 * (sigaction itself is a weak alias there), for the signals the library
 * does not wrap.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "rarewrite.h"
#include "internal.h"
#include "critical.h"
#include "rawsys.h"
#include "reglock.h"
#include "table.h"
#include "table_put.h"

extern int __sigaction(int sig, const struct sigaction *act,
		       struct sigaction *old);

RW_TLS_IE unsigned rw_cs_depth;
RW_TLS_IE uint64_t rw_cs_deferred;
RW_TLS_IE unsigned rw_window_depth;
/* The begin/end depth of the code the outermost running handler
 * interrupted: a hint for rare_write_end() after a siglongjmp out of it. */
static RW_TLS_IE unsigned left_depth;

unsigned rw_signal_left_depth(void)
{
	unsigned d = left_depth;

	left_depth = 0;
	return d;
}

/*
 * What decides which code runs on a signal: the program's action per
 * wrapped signal and which signals are wrapped. It is a vault (vault.c):
 * read-only, written with pwrite() once the first activation created it,
 * so that no store can point a handler at a gadget (say SIGSEGV's at
 * rare_write_begin, which would open an mprotect window for good; attack
 * 12b). Handlers read it without a lock: writers fill the slot not in
 * use and then flip the index, so a handler sees one whole action or
 * the other. Aligning the type pads it to whole pages.
 */
/* An action as the table keeps it: the handler, the kernel's 64 signals of
 * the mask, and the flags in the low half of the last word (its high half
 * as the request had it: rw_table.signal_request's last three words). */
struct sv_action {
	uint64_t handler, mask, sig_flags;
};

/* The kernel's struct of rt_sigaction(2) (x86-64's layout). */
struct sv_kernel_action {
	uint64_t handler, flags, restorer, mask;
};

static struct sig_vault {
	int fd;	   /* the memfd behind it once sealed, else -1 */
	pid_t pid; /* the process it belongs to */
	bool wrap_segv, wrap_all;
	bool wrapped[NSIG]; /* the kernel's action is ours */
	struct {
		uint64_t idx;
		struct sv_action slot[2];
	} actions[NSIG];
	/* The kernel's action being installed, signal_lock held: what
	 * rt_sigaction(2) reads. */
	struct sv_kernel_action kact;
} __attribute__((aligned(4096))) sv = {.fd = -1};

/* Signals the library may wrap: not SIGKILL and SIGSTOP, and not glibc's
 * own two (SIGCANCEL, SIGSETXID), whose sigaction() it refuses. */
static bool wrappable(int sig)
{
	return sig > 0 && sig < NSIG && sig != SIGKILL && sig != SIGSTOP &&
	       sig != 32 && sig != 33;
}

/*
 * A child made without fork handlers (the process backend's helper, a raw
 * clone) shares the parent's table: its actions are its own business and
 * go straight to the kernel, never into the parent's table.
 */
static inline __attribute__((always_inline)) bool foreign_process(void)
{
	return sv.fd >= 0 && sv.pid != rw_sys(SYS_getpid, 0, 0, 0);
}

/* Inlined: @sig stays in the register it is in through the inline
 * getpid(2), not saved in a frame of its own (a fresh review of
 * e13c7a3: rewritten there, sigaction() recorded the action for another
 * signal). */
static inline __attribute__((always_inline)) bool should_wrap(int sig)
{
	return wrappable(sig) &&
	       ((sig == SIGSEGV && sv.wrap_segv) || sv.wrap_all) &&
	       !foreign_process();
}

/* The action in force for @sig, in the table. */
static inline __attribute__((always_inline)) const struct sv_action *
program_slot(int sig)
{
	struct sig_vault *v = RW_FRESH_ADDR(sv);

	return &v->actions[sig].slot[__atomic_load_n(&v->actions[sig].idx,
						     __ATOMIC_ACQUIRE) &
				     1];
}

/* @a as sigaction() reports it. */
static struct sigaction sigaction_of(const struct sv_action *a)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction =
		(void (*)(int, siginfo_t *, void *))(uintptr_t)a->handler;
	sa.sa_mask.__val[0] = a->mask;
	sa.sa_flags = (int)(uint32_t)a->sig_flags;
	return sa;
}

static struct sigaction program_action(int sig)
{
	return sigaction_of(program_slot(sig));
}

/* The kernel's rule: 0 and 1 are the default and "ignore" whatever the
 * flags say (SA_SIGINFO with SIG_IGN called address 1 before). */
static bool is_function(const struct sv_action *a)
{
	return a->handler != (uintptr_t)SIG_DFL &&
	       a->handler != (uintptr_t)SIG_IGN;
}

/* Signals whose default action is to be ignored, or to stop. */
static bool default_ignores(int sig)
{
	return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG ||
	       sig == SIGWINCH;
}

static bool default_stops(int sig)
{
	return sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* The kernel's default action, from read-only memory: glibc's sigaction()
 * copies the action onto its stack, where a store before the system call
 * installed a handler the tgkill(2) of die_by() then ran (a fresh review
 * of e13c7a3). */
static const struct sv_kernel_action default_action;

static void kernel_default(int sig)
{
#if RW_RAWSYS_INLINE
	rw_sys6(SYS_rt_sigaction, sig, (long)&default_action, 0,
		sizeof(uint64_t), 0, 0);
#else
	struct sigaction dfl = {.sa_handler = SIG_DFL};

	(void)default_action;
	sigemptyset(&dfl.sa_mask);
	__sigaction(sig, &dfl, NULL);
#endif
}

/* Die by @sig with the default action: unblock it, send it to ourselves. */
static __attribute__((noreturn)) void die_by(int sig)
{
	sigset_t set;

	/* Never one the library does not handle: glibc's SIGSETXID handler
	 * makes a system call its writable memory names (a fresh review of
	 * d9a7d4d). */
	if (!wrappable(sig))
		rw_die("signal", NULL, "signal number %d out of range", sig);
	kernel_default(sig);
	sigemptyset(&set);
	sigaddset(&set, sig);
	for (;;) {
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
	}
}

/*
 * The writers of the table (sigaction() and every interposer through it, a
 * one-shot reset, the take-over at activation) hold signal_lock, a lock
 * word taken inline (reglock.h), with every signal blocked by an inline
 * system call, and put the change they make into the core table's signal
 * request (table.h) before any function call: a callee saves the caller's
 * registers in its frame, where a store rewrote sigaction()'s action
 * pointer across pthread_sigmask() and a mutex wait, and the table
 * recorded the attacker's handler (attack 28b).
 *
 * From there on nothing of the change passes through writable memory:
 * each store into the table is a pwrite(2) made inline whose source is
 * read-only (the request itself for an action, constants for an index or
 * a flag), its place computed from the request and the table's address
 * where it is used, and it is read back; the kernel's action is put into
 * the table from registers (rw_vault_put4(), compared) and rt_sigaction(2)
 * reads it there. A buffer on the stack or a pointer kept in a register
 * across a call was rewritten in flight (28c; a fresh review of f958dee:
 * the table's base, the kernel's action and its entry point).
 */
static uint32_t signal_lock;

static void entry(int sig, siginfo_t *si, void *uc);

/* The request's words, and the address of the table, loaded at each use
 * (a callee may have saved a copy kept from before). */
#define SIG_REQUEST(field)                                                     \
	__atomic_load_n(RW_FRESH_ADDR(rw_table.signal_request.field),          \
			__ATOMIC_RELAXED)
#define SV() RW_FRESH_ADDR(sv)
/* In sig_flags: the call records an action (not only a query). */
#define SIG_REQUEST_ACT (1ULL << 63)
/* The signals glibc keeps for itself (SIGCANCEL, SIGSETXID): never blocked,
 * never in a handler's mask (its sigaddset() refuses them), never ours. */
#define SIG_LIBC_OWN (3ULL << 31)
/* The kernel's flag for a restorer of our own (asm/signal.h). */
#define SA_RESTORER_FLAG 0x04000000

/* The values of an index and of a flag, as sources of a store: read-only
 * memory, not a copy on the stack. */
static const uint64_t index_value[2] = {0, 1};
static const bool flag_value[2] = {false, true};

static inline __attribute__((always_inline)) int request_sig(void)
{
	return (int)((SIG_REQUEST(sig_flags) >> 32) & 0x7f);
}

static const uint64_t all_signals = ~SIG_LIBC_OWN;
/* This thread holds signal_lock for fork() (rw_signal_fork_prepare()): a
 * handler run on it meanwhile (the fork handlers run with signals open) would
 * wait for the lock forever, so it writes under that hold. Forged elsewhere, a
 * thread writes without the lock, as with a forged lock word. */
static RW_TLS_IE bool holds_for_fork;

/* Block every signal (a handler on this thread must not find the lock
 * taken) and take the lock, inline. Returns the mask to restore. */
static inline __attribute__((always_inline)) uint64_t lock_signals(void)
{
	uint64_t saved = 0;

	/* The set from read-only memory: one rewritten on the stack would
	 * leave a handler free to take the lock on this thread. */
	rw_sys6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all_signals, (long)&saved,
		sizeof(all_signals), 0, 0);
	if (!holds_for_fork)
		rw_reglock_write(&signal_lock);
	return saved;
}

static inline __attribute__((always_inline)) void unlock_signals(uint64_t saved)
{
	if (!holds_for_fork)
		rw_reglock_write_unlock(&signal_lock);
	rw_sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&saved, 0, sizeof(saved),
		0, 0);
}

/*
 * Put @sig's change into the request from the registers it is in:
 * @handler, @mask and @flags of the action to record (@act), or only @sig
 * (a query). No function call before it since the caller read them.
 */
static inline __attribute__((always_inline)) void
signal_request_put(const char *call, int sig, bool act, uint64_t handler,
		   uint64_t mask, int flags)
{
	uint64_t sig_flags = (uint64_t)(sig & 0x7f) << 32;

	if (act)
		sig_flags |= SIG_REQUEST_ACT | (uint32_t)flags;
	else
		handler = mask = 0;
	if (!rw_table_put4(&rw_table.signal_request.caller, rw_request_caller(),
			   handler, mask & ~SIG_LIBC_OWN, sig_flags)) {
		rw_reglock_write_unlock(&signal_lock);
		rw_die(call, NULL,
		       "the action changed on its way to the signal table (a "
		       "store into the caller's stack?)");
	}
}

/* Abort unless the request is still this call's (signal_lock is a word a
 * store can release, and another writer then puts its own). */
static inline __attribute__((always_inline)) void
signal_request_mine(const char *call)
{
	if (SIG_REQUEST(caller) != rw_request_caller()) {
		rw_reglock_write_unlock(&signal_lock);
		rw_die(call, &sv,
		       "another thread's signal change replaced this one while "
		       "it ran (a store released the signal lock?)");
	}
}

/* The request's action, as the table keeps it (its last three words). */
static inline __attribute__((always_inline)) const struct sv_action *
request_action(void)
{
	return (const struct sv_action *)RW_FRESH_ADDR(
		rw_table.signal_request.handler);
}

static inline __attribute__((always_inline)) bool
same_action(const struct sv_action *a, const struct sv_action *b)
{
	return a->handler == b->handler && a->mask == b->mask &&
	       (uint32_t)a->sig_flags == (uint32_t)b->sig_flags;
}

/*
 * May this process store into the table through its memfd? False before
 * the seal (plain memory). Before the seal sv.fd is plain memory: a
 * descriptor stored there would receive the table's bytes, so a pwrite()
 * goes only to the memfd the kernel shows mapped read-only over the table
 * (a read of /proc/self/maps: signal actions change rarely, never on a
 * rare_write() path). A child made without fork handlers (_Fork(), a raw
 * clone) shares the parent's memfd: it must never write it. Checked
 * before each store.
 */
static bool sv_sealed_here(const char *call)
{
	if (sv.fd < 0)
		return false;
	if (sv.pid != rw_sys(SYS_getpid, 0, 0, 0))
		rw_die(call, &sv,
		       "called in a child made by a raw fork() (no fork "
		       "handlers ran): it shares the parent's signal table "
		       "and must not write it");
	if (!rw_vault_sealed(sv.fd, &sv, sizeof(sv)))
		rw_die(call, &sv,
		       "the signal table was changed by a store before it "
		       "was sealed");
	return true;
}

/*
 * Store @len bytes of @src (read-only memory) at @dst of the table, and
 * read them back: pwrite(2) inline once sealed, its offset from @dst and
 * the table's address computed here; plain memory before the seal.
 */
static inline __attribute__((always_inline)) void
sv_write(const char *call, bool sealed, void *dst, const void *src, size_t len)
{
	if (!sealed) {
		memcpy(dst, src, len);
	} else if (rw_sys6(SYS_pwrite64, sv.fd, (long)src, (long)len,
			   (long)((char *)dst - (char *)SV()), 0,
			   0) != (long)len) {
		rw_die(call, dst, "cannot write the signal table");
	}
	if (memcmp(dst, src, len))
		rw_die(call, dst,
		       "the signal table holds other bytes than the call "
		       "wrote (a store into them on their way?)");
}

/* The slot of @sig's actions not in force: the one a writer fills. */
static inline __attribute__((always_inline)) uint64_t slot_not_in_force(int sig)
{
	return (__atomic_load_n(&SV()->actions[sig].idx, __ATOMIC_RELAXED) +
		1) &
	       1;
}

/*
 * Make the request's action its signal's, unless it is in force already:
 * the slot not in force, then the index (a handler reads one whole action
 * or the other).
 */
static inline __attribute__((always_inline)) void
record_request(const char *call)
{
	struct sv_action *slot;
	uint64_t next;
	bool sealed;
	int sig;

	signal_request_mine(call);
	sig = request_sig();
	if (same_action(program_slot(sig), request_action()))
		return;
	sealed = sv_sealed_here(call);
	signal_request_mine(call);
	sig = request_sig();
	slot = &SV()->actions[sig].slot[slot_not_in_force(sig)];
	sv_write(call, sealed, slot, request_action(), sizeof(*slot));
	__atomic_thread_fence(__ATOMIC_RELEASE);
	sealed = sv_sealed_here(call);
	signal_request_mine(call);
	sig = request_sig();
	next = slot_not_in_force(sig);
	if (!same_action(&SV()->actions[sig].slot[next], request_action()))
		rw_die(call, &sv, "the signal table changed under its lock");
	sv_write(call, sealed, &SV()->actions[sig].idx, &index_value[next],
		 sizeof(uint64_t));
}

/* Turn one of the table's switches on: SIGSEGV is ours (@all false), or
 * every signal is. */
static inline __attribute__((always_inline)) void switch_on(const char *call,
							    bool all)
{
	bool sealed;

	if (all ? SV()->wrap_all : SV()->wrap_segv)
		return;
	sealed = sv_sealed_here(call);
	sv_write(call, sealed, all ? &SV()->wrap_all : &SV()->wrap_segv,
		 &flag_value[true], sizeof(bool));
}

/* Whether the kernel's action for the request's signal is to be ours:
 * SIGSEGV's always, another's when the program's is a function. From the
 * table, at each use (@unwrap: not ours, the kernel refused it). */
static inline __attribute__((always_inline)) bool wrap_wanted(bool unwrap)
{
	int sig = request_sig();

	return !unwrap && (sig == SIGSEGV || is_function(program_slot(sig)));
}

/* Record whether the kernel's action for the request's signal is ours. */
static inline __attribute__((always_inline)) void
record_wrapped(const char *call, bool unwrap)
{
	bool sealed;

	signal_request_mine(call);
	if (SV()->wrapped[request_sig()] == wrap_wanted(unwrap))
		return;
	sealed = sv_sealed_here(call);
	signal_request_mine(call);
	sv_write(call, sealed, &SV()->wrapped[request_sig()],
		 &flag_value[wrap_wanted(unwrap)], sizeof(bool));
}

#if defined(__x86_64__)
/*
 * The return from a handler the kernel makes: rt_sigreturn(2), in the
 * bytes of glibc's __restore_rt, which unwinders recognise (libgcc's
 * x86-64 fallback: test fault_backtrace_unwinds_through_restorer). Ours, so
 * that the kernel's action is made without glibc's sigaction() and the copy it
 * keeps on its stack.
 */
__asm__(".text\n\t"
	".p2align 4\n\t"
	".globl rw_signal_restorer\n\t"
	".hidden rw_signal_restorer\n\t"
	".type rw_signal_restorer, @function\n"
	"rw_signal_restorer:\n\t"
	".byte 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00\n\t" /* mov $15, %rax */
	".byte 0x0f, 0x05\n\t"				     /* syscall */
	".size rw_signal_restorer, .-rw_signal_restorer\n\t"
	".previous");
RW_HIDDEN void rw_signal_restorer(void);

/*
 * Give the kernel the action of the request's signal: entry() with the
 * program's mask and flags (the table says it is wrapped), or the
 * program's action itself.
 * The kernel's struct is put into the table from registers and compared,
 * and rt_sigaction(2) reads it there, read-only. 0 or -errno.
 */
static inline __attribute__((always_inline)) long
kernel_install(const char *call)
{
	const struct sv_action *a;
	uint64_t handler, flags;
	bool sealed, wrapped;
	int sig;

	sealed = sv_sealed_here(call);
	signal_request_mine(call);
	sig = request_sig();
	wrapped = SV()->wrapped[sig];
	a = program_slot(sig);
	handler = wrapped ? (uint64_t)(uintptr_t)entry : a->handler;
	flags = (uint32_t)a->sig_flags | SA_RESTORER_FLAG;
	if (wrapped)
		flags |= SA_SIGINFO;
	if (sig == SIGSEGV) /* ours even when the program's is one-shot */
		flags = (flags & ~(uint64_t)SA_RESETHAND) | SA_ONSTACK;
	if (!sealed) {
		SV()->kact = (struct sv_kernel_action){
			handler, flags, (uintptr_t)rw_signal_restorer, a->mask};
	} else if (!rw_vault_put4(sv.fd, offsetof(struct sig_vault, kact),
				  &SV()->kact.handler, handler, flags,
				  (uintptr_t)rw_signal_restorer, a->mask)) {
		rw_die(call, &sv,
		       "the kernel's action changed on its way to the signal "
		       "table (a store into the caller's stack?)");
	}
	return rw_sys6(SYS_rt_sigaction, request_sig(), (long)&SV()->kact, 0,
		       sizeof(uint64_t), 0, 0);
}

/*
 * The kernel's action for @sig, through the system call itself, into
 * registers: the kernel writes it below the red zone and the asm pops it
 * at once, so no pointer to it waits anywhere (a fresh review of d9a7d4d:
 * a pointer to take_over()'s buffer was kept on the stack across the
 * loop's system calls). Only the instructions between the system call's
 * return and the pops are left to a racing store. 0 or -errno.
 */
static inline __attribute__((always_inline)) long
kernel_action(int sig, struct sv_kernel_action *k)
{
	uint64_t handler, flags, restorer, mask;
	long ret = SYS_rt_sigaction;

	__asm__ volatile("sub $160, %%rsp\n\t" /* red zone, and 32 bytes */
			 "mov %%rsp, %%rdx\n\t"
			 "xor %%esi, %%esi\n\t"
			 "mov $8, %%r10d\n\t"
			 "syscall\n\t"
			 "pop %[h]\n\t"
			 "pop %[f]\n\t"
			 "pop %[r]\n\t"
			 "pop %[m]\n\t"
			 "add $128, %%rsp"
			 : "+a"(ret), [h] "=&r"(handler), [f] "=&r"(flags),
			   [r] "=&r"(restorer), [m] "=&r"(mask)
			 : "D"((long)sig)
			 : "rsi", "rdx", "r10", "rcx", "r11", "memory", "cc");
	*k = (struct sv_kernel_action){handler, flags, restorer, mask};
	return ret;
}
#else
/* Elsewhere (the C fallback of rawsys.h) the C library's sigaction() makes
 * the kernel's action, from a copy on its stack (SECURITY.md). */
static inline long kernel_install(const char *call)
{
	int sig = request_sig();
	const struct sv_action *a = program_slot(sig);
	bool wrapped = sv.wrapped[sig];
	struct sigaction k;

	(void)call;
	memset(&k, 0, sizeof(k));
	k.sa_sigaction = wrapped ? entry
				 : (void (*)(int, siginfo_t *, void *))(
					   uintptr_t)a->handler;
	k.sa_mask.__val[0] = a->mask;
	k.sa_flags = (int)(uint32_t)a->sig_flags | (wrapped ? SA_SIGINFO : 0);
	if (sig == SIGSEGV)
		k.sa_flags = (k.sa_flags & ~SA_RESETHAND) | SA_ONSTACK;
	return __sigaction(sig, &k, NULL) ? -errno : 0;
}

static inline long kernel_action(int sig, struct sv_kernel_action *k)
{
	struct sigaction sa;

	if (__sigaction(sig, NULL, &sa))
		return -errno;
	k->handler = (uintptr_t)sa.sa_sigaction;
	k->flags = (uint32_t)sa.sa_flags;
	k->restorer = 0;
	k->mask = sa.sa_mask.__val[0];
	return 0;
}
#endif

/*
 * Point the kernel at entry() for the request's signal, or give it the
 * program's action when there is nothing to wrap. 0 or -1 with errno.
 */
static inline __attribute__((always_inline)) int
install_request(const char *call)
{
	long err;

	record_wrapped(call, false); /* each checks the request is ours */
	err = kernel_install(call);
	if (!err)
		return 0;
	errno = (int)-err;
	return -1;
}

/*
 * Call the program's handler for @sig as the vault holds it now: the
 * action in force, or with @replaced the one a one-shot reset has just
 * replaced (1: the other slot). Its address is loaded here, after the last
 * lock wait and system call of the signal path, and called with nothing
 * in between but compares: an address kept across a lock or a system
 * call sits in a register that every callee using it saves in its frame,
 * where a store makes the library run the attacker's function (attack
 * 25e). Not inlined, so that the vault's address and the slot's offset are
 * computed here from @sig, never kept from before the reset in a register
 * callees spill; a @sig rewritten there can name only another signal's
 * action of the program's. With @replaced the action in force must be the
 * default the reset put there: a @sig rewritten to a signal no reset ran
 * for would otherwise name the action the program replaced long ago (a
 * fresh review of f958dee). False, and nothing called, if the slot holds
 * no function (the program changed the action meanwhile).
 */
static __attribute__((noinline)) bool
run_from_vault(int sig, siginfo_t *si, void *uc, unsigned replaced)
{
	const struct sv_action *a, *now;
	uint64_t idx, handler;
	uint32_t flags;

	/* @sig indexes the vault: out of range it names plain memory. */
	if (!wrappable(sig))
		rw_die("signal", NULL, "signal number %d out of range", sig);
	idx = __atomic_load_n(&sv.actions[sig].idx, __ATOMIC_ACQUIRE);
	a = &sv.actions[sig].slot[(idx ^ replaced) & 1];
	now = &sv.actions[sig].slot[idx & 1];
	flags = (uint32_t)__atomic_load_n(&a->sig_flags, __ATOMIC_RELAXED);
	handler = __atomic_load_n(&a->handler, __ATOMIC_RELAXED);
	if (replaced && (!(flags & SA_RESETHAND) ||
			 __atomic_load_n(&now->handler, __ATOMIC_RELAXED) !=
				 (uintptr_t)SIG_DFL))
		return false;
	if (flags & SA_SIGINFO) {
		void (*fn)(int, siginfo_t *, void *) =
			(void (*)(int, siginfo_t *, void *))handler;

		if (!fn || handler == (uintptr_t)SIG_IGN)
			return false;
		fn(sig, si, uc);
	} else {
		void (*fn)(int) = (void (*)(int))handler;

		if (fn == SIG_DFL || fn == SIG_IGN)
			return false;
		fn(sig);
	}
	return true;
}

/*
 * Reset @sig's one-shot action to SIG_DFL, if it is still in force (a
 * thread that took the same signal may have reset it first, or the
 * program changed it: that action stays). A child without fork handlers
 * shares the parent's table: its reset is its own, in the kernel only.
 */
static __attribute__((noinline)) void reset_one_shot(int sig)
{
	const struct sv_action *cur;
	uint64_t saved;

	if (!wrappable(sig))
		rw_die("signal", NULL, "signal number %d out of range", sig);
	if (foreign_process()) {
		kernel_default(sig);
		return;
	}
	/* Not inlined: @sig stays in the register it came in, through the
	 * inline lock, to the request. */
	saved = lock_signals();
	signal_request_put("signal", sig, true, (uintptr_t)SIG_DFL, 0, 0);
	cur = program_slot(request_sig());
	/* The kernel reset its own action (SA_RESETHAND stays in the flags
	 * it has, but SIGSEGV's). */
	if (is_function(cur) && ((uint32_t)cur->sig_flags & SA_RESETHAND))
		record_request("signal");
	signal_request_mine("signal");
	unlock_signals(saved);
}

/*
 * Run the program's action for @sig. The action read first only decides
 * the way (ignore, die, reset); what is called is loaded again from the
 * vault right before the call, after the reset's lock and system calls.
 * The action may change under us (another thread's sigaction()): decide
 * again.
 */
static void call_program(int sig, siginfo_t *si, void *uc, bool fault)
{
	/* @sig indexes the table, and a number rewritten on its way here
	 * must not name glibc's own signals. */
	if (!wrappable(sig))
		rw_die("signal", NULL, "signal number %d out of range", sig);
	for (;;) {
		const struct sv_action *a = program_slot(sig);

		if (!is_function(a)) {
			/* SIG_IGN ignores a sent signal; a fault cannot be
			 * ignored (the kernel would force the default
			 * action on it). */
			if (a->handler == (uintptr_t)SIG_IGN && !fault)
				return;
			/* The default of a sent signal may be to ignore it
			 * or to stop: die_by() would wait for ever. */
			if (!fault && default_ignores(sig))
				return;
			if (!fault && default_stops(sig)) {
				rw_sys(SYS_kill, rw_sys(SYS_getpid, 0, 0, 0),
				       SIGSTOP, 0);
				return;
			}
			die_by(sig);
		}
		if (!((uint32_t)a->sig_flags & SA_RESETHAND)) {
			if (run_from_vault(sig, si, uc, false))
				return;
			continue;
		}
		reset_one_shot(sig); /* one-shot, as asked */
		/* In a child sharing the parent's table the reset went to
		 * the kernel: the action is still the vault's current one. */
		if (run_from_vault(sig, si, uc, !foreign_process()))
			return;
	}
}

/* A fault of the instruction that was running: it cannot wait. */
static bool synchronous(int sig, const siginfo_t *si)
{
	return si && si->si_code > 0 &&
	       (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
		sig == SIGFPE || sig == SIGTRAP);
}

/* The siginfo of each signal deferred on this thread (one per signal:
 * it stays blocked until it ran, further ones wait in the kernel). */
static RW_TLS_IE siginfo_t deferred_info[64];

/*
 * A signal arrived inside a critical section: keep it blocked until the
 * section ends (in the interrupted context's mask, which sigreturn
 * restores), with its siginfo here; rw_cs_release() runs it.
 */
static void defer(int sig, siginfo_t *si, ucontext_t *uc)
{
	sigset_t one;

	/* @sig indexes this thread's deferred_info. */
	if (!wrappable(sig))
		rw_die("signal", NULL, "signal number %d out of range", sig);
	sigemptyset(&one);
	sigaddset(&one, sig);
	pthread_sigmask(SIG_BLOCK, &one, NULL); /* SA_NODEFER: not yet */
	sigaddset(&uc->uc_sigmask, sig);
	deferred_info[sig - 1] = *si;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rw_cs_deferred |= 1ULL << (sig - 1);
}

static void entry(int sig, siginfo_t *si, void *uc);

/*
 * The section is over: run each deferred signal as the kernel would have
 * (its mask applied), then unblock it, so that the kernel delivers the
 * ones queued behind it in their order.
 */
void rw_cs_release(void)
{
	uint64_t d;

	while ((d = rw_cs_deferred)) {
		int sig = __builtin_ctzll(d) + 1;
		struct sigaction sa;

		/* A word of this thread's: only a signal entry() deferred. */
		if (!wrappable(sig))
			rw_die("signal", NULL,
			       "deferred signal %d is not one the library "
			       "handles",
			       sig);
		sa = program_action(sig);
		siginfo_t info = deferred_info[sig - 1];
		sigset_t one, saved;
		ucontext_t uc;

		rw_cs_deferred = d & ~(1ULL << (sig - 1));
		sigemptyset(&one);
		sigaddset(&one, sig);
		pthread_sigmask(SIG_BLOCK, &sa.sa_mask, &saved);
		memset(&uc, 0, sizeof(uc)); /* no XSAVE area: nothing to fix */
		getcontext(&uc);
		entry(sig, &info, &uc);
		pthread_sigmask(SIG_SETMASK, &saved, NULL);
		pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	}
}

static void entry(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	bool fault = sig == SIGSEGV && si && si->si_code > 0;
	unsigned depth;

	if (sig == SIGSEGV && rw_backends_fault(si, uc)) {
		errno = saved_errno;
		return; /* repaired: the access is retried */
	}
	if (rw_cs_depth) {
		if (!synchronous(sig, si)) {
			defer(sig, si, uc);
			errno = saved_errno;
			return;
		}
		/* The library's own code faulted (a bad source pointer):
		 * the section is over, whatever the handler does. */
		rw_cs_depth = 0;
		rw_backends_cs_fault();
	}
	/* The handler holds none of the windows it interrupted. */
	depth = rw_window_depth;
	rw_window_depth = 0;
	if (depth)
		left_depth = depth;
	rw_backends_signal_enter(uc);
	if (sig == SIGSEGV && rw_fault_report(si, uc)) {
		/* A crash reporter still runs, and may longjmp away; if it
		 * returns, the store would only fault again. */
		call_program(sig, si, uc, true);
		die_by(sig);
	}
	call_program(sig, si, uc, fault);
	rw_backends_signal_exit(uc);
	if (depth)
		left_depth = 0;
	rw_window_depth = depth;
	errno = saved_errno;
}

/*
 * Take over @sig: record the program's current action, install ours. The
 * kernel's action is read with the system call itself and put into the
 * request from registers, @sig with it.
 */
static inline __attribute__((always_inline)) void take_over(int sig)
{
	struct sv_kernel_action cur = {0};

	if (sv.wrapped[sig] || kernel_action(sig, &cur) ||
	    ((cur.flags & SA_SIGINFO) && cur.handler == (uintptr_t)entry))
		return;
	signal_request_put("rare_write_init", sig, true, cur.handler, cur.mask,
			   (int)cur.flags);
	record_request("rare_write_init");
	if (!install_request("rare_write_init"))
		return;
	/* A signal the kernel (or valgrind, which keeps one for itself)
	 * refuses can have no handler of the program's either. */
	if (request_sig() == SIGSEGV)
		rw_die("rare_write_init", NULL,
		       "cannot install the signal %d handler", SIGSEGV);
	record_wrapped("rare_write_init", true);
}

/* fork(): the child takes a private copy of the vault, which it shares
 * with the parent until then. Called by core.c's fork handlers: the lock
 * is taken last and released only once the child has copied the vault
 * (with fork handlers of its own, the parent's were run before core.c's
 * wait for the child, and a sigaction() of another thread wrote the
 * vault while the child copied it: a fresh review of e13c7a3). A wrapped
 * one-shot handler (or one that calls signal()) run on the forking thread
 * between the fork handlers waited for the lock forever (a fresh review of
 * d9a7d4d): this thread's writers go on under fork's hold. */
void rw_signal_fork_prepare(void)
{
	rw_reglock_write(&signal_lock);
	holds_for_fork = true;
}

void rw_signal_fork_parent(void)
{
	holds_for_fork = false;
	rw_reglock_write_unlock(&signal_lock);
}

void rw_signal_fork_child(void)
{
	/* The kernel's word again: a descriptor stored into the table before
	 * its seal must not make the child copy it into a vault. */
	if (rw_vault_sealed(sv.fd, &sv, sizeof(sv))) {
		int fd = rw_vault_fork_copy(sv.fd, &sv, sizeof(sv));

		if (fd < 0)
			rw_die("fork", &sv,
			       "child cannot copy the signal table: %s",
			       strerror(-fd));
		sv.fd = fd;
		sv.pid = getpid();
		fd = rw_vault_fork_done(&sv, sizeof(sv));
		if (fd < 0)
			rw_die("fork", &sv,
			       "child cannot protect the signal table: %s",
			       strerror(-fd));
	}
	holds_for_fork = false;
	__atomic_store_n(&signal_lock, 0, __ATOMIC_RELAXED);
}

/* The table as the library leaves it until the first seal (sigaction()
 * goes straight to the kernel until then): anything else is a store's. */
static bool sv_pristine(void)
{
	const unsigned char *p = (const unsigned char *)&sv.wrap_segv;
	const unsigned char *end = (const unsigned char *)(&sv + 1);

	if (sv.fd != -1 || sv.pid != 0)
		return false;
	for (; p < end; p++)
		if (*p)
			return false;
	return true;
}

/* Seal the table, once: 0 or -errno (no descriptor left); signal_lock
 * held. "Sealed" is the kernel's word (the memfd mapped read-only over
 * the table), never sv.fd's: a store of a descriptor there before init
 * would otherwise leave the table writable for good. */
static int sv_seal(const char *call)
{
	int err;

	if (rw_vault_sealed(sv.fd, &sv, sizeof(sv)))
		return 0;
	if (!sv_pristine())
		rw_die(call, &sv,
		       "the signal table was changed by a store before it "
		       "was sealed");
	sv.pid = getpid();
	err = rw_vault_create(&sv, sizeof(sv), &sv.fd);
	if (err) {
		sv.pid = 0; /* pristine again: a later seal may retry */
		return err;
	}
	return 0;
}

int rw_signal_seal(const char *call)
{
	uint64_t saved = lock_signals();
	int err = sv_seal(call);

	unlock_signals(saved);
	if (err)
		rw_say(call, "cannot protect the signal table: %s",
		       strerror(-err));
	return err;
}

void rw_signal_activate(void)
{
	uint64_t saved;
	int err;

	rw_symbolize_prepare();
	saved = lock_signals();
	switch_on("rare_write_init", false);
	take_over(SIGSEGV);
	if (rw_backends_wrap_signals() && !sv.wrap_all) {
		switch_on("rare_write_init", true);
		for (int sig = 1; sig < NSIG; sig++)
			if (wrappable(sig) && sig != SIGSEGV)
				take_over(sig);
	}
	err = sv_seal("rare_write_init");
	if (err)
		rw_die("rare_write_init", &sv,
		       "cannot protect the signal table: %s", strerror(-err));
	unlock_signals(saved);
}

/* Where the action a call records comes from. */
enum action_source {
	FROM_ACT,    /* the program's struct, read once the lock is held */
	FROM_VALUES, /* the interposer's arguments, in registers */
	FROM_NONE,   /* a query */
	FROM_TABLE_RESTART,    /* the action in force, SA_RESTART on */
	FROM_TABLE_NO_RESTART, /* the action in force, SA_RESTART off */
};

/*
 * The one path of sigaction() and every interposer, for a signal the
 * library wraps: the action goes into the request, under the lock, from
 * registers (@from: the program's @act is read only once the lock is
 * held, into registers that reach the request with no function call
 * between; an interposer's @handler, @mask and @flags are its arguments,
 * never a struct in its frame, which a store rewrote across the lock: a
 * fresh review of d9a7d4d). The rest of the call works from the request.
 * @old receives the table's action for a signal the library wraps, else
 * the kernel's (the C library's own handlers, such as system()'s, go to
 * the kernel around this function).
 */
static inline __attribute__((always_inline)) int
change_action(const char *call, int sig, enum action_source from,
	      const struct sigaction *act, uint64_t handler, uint64_t mask,
	      int flags, struct sigaction *old)
{
	uint64_t saved = lock_signals();
	int err = 0;

	if (from == FROM_ACT) {
		handler = (uintptr_t)act->sa_sigaction;
		mask = act->sa_mask.__val[0];
		flags = act->sa_flags;
	} else if (from == FROM_TABLE_RESTART ||
		   from == FROM_TABLE_NO_RESTART) {
		const struct sv_action *a = program_slot(sig);

		handler = a->handler;
		mask = a->mask;
		flags = (int)(uint32_t)a->sig_flags;
		if (from == FROM_TABLE_RESTART)
			flags |= SA_RESTART;
		else
			flags &= ~SA_RESTART;
	}
	signal_request_put(call, sig, from != FROM_NONE, handler, mask, flags);
	/* It was, before the lock: only a request of another writer's (a
	 * forged lock) names a signal not to wrap now. */
	if (!should_wrap(request_sig()))
		rw_die(call, &sv,
		       "another thread's signal change replaced this one "
		       "(a store released the signal lock?)");
	if (old) {
		int s = request_sig();

		if (SV()->wrapped[s] || s == SIGSEGV)
			*old = program_action(s);
		else
			err = __sigaction(s, NULL, old);
	}
	if (!err && (SIG_REQUEST(sig_flags) & SIG_REQUEST_ACT)) {
		record_request(call);
		err = install_request(call);
	}
	signal_request_mine(call);
	unlock_signals(saved);
	return err;
}

/* @act is touched first: a bad pointer faults there, where the library's
 * report names it, not with every signal blocked. */
__attribute__((visibility("default"))) int
sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!should_wrap(sig))
		return __sigaction(sig, act, old);
	if (!act)
		return change_action("sigaction", sig, FROM_NONE, NULL, 0, 0, 0,
				     old);
	(void)*(const volatile int *)&act->sa_flags;
	return change_action("sigaction", sig, FROM_ACT, act, 0, 0, 0, old);
}

/* @h for @sig with @flags and the mask they imply, through the one path
 * (its arguments in registers) or, for a signal the library does not
 * wrap, the C library's. Returns the previous handler. */
static inline __attribute__((always_inline)) sighandler_t
set_handler_as(const char *call, int sig, sighandler_t h, int flags,
	       uint64_t mask)
{
	struct sigaction old;

	if (h == SIG_ERR || !wrappable(sig)) {
		errno = EINVAL;
		return SIG_ERR;
	}
	if (!should_wrap(sig)) {
		struct sigaction sa = {.sa_handler = h, .sa_flags = flags};

		sigemptyset(&sa.sa_mask);
		sa.sa_mask.__val[0] = mask;
		if (__sigaction(sig, &sa, &old))
			return SIG_ERR;
		return old.sa_handler;
	}
	if (change_action(call, sig, FROM_VALUES, NULL, (uintptr_t)h, mask,
			  flags, &old))
		return SIG_ERR;
	return old.sa_handler;
}

static sighandler_t set_handler(int sig, sighandler_t h, int flags)
{
	uint64_t self = sig > 0 && sig <= 64 ? 1ULL << (sig - 1) : 0;

	return set_handler_as("signal", sig, h, flags,
			      flags & SA_NODEFER ? 0 : self);
}

/* glibc's signal() has BSD semantics: persistent, restarting, masked. */
__attribute__((visibility("default"))) sighandler_t signal(int sig,
							   sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

__attribute__((visibility("default"))) sighandler_t bsd_signal(int sig,
							       sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

__attribute__((visibility("default"))) sighandler_t sysv_signal(int sig,
								sighandler_t h)
{
	return set_handler(sig, h, SA_RESETHAND | SA_NODEFER);
}

/* What <signal.h> calls signal() in strict ISO C mode (-std=c11): the
 * System V semantics. */
__attribute__((visibility("default"))) sighandler_t
__sysv_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESETHAND | SA_NODEFER);
}

/* System V's sigignore(): SIG_IGN, empty mask, no flags. */
__attribute__((visibility("default"))) int sigignore(int sig)
{
	return set_handler_as("sigignore", sig, SIG_IGN, 0, 0) == SIG_ERR ? -1
									  : 0;
}

/* siginterrupt(): SA_RESTART off (@flag) or on in the current action, so
 * that the flags the library keeps for the program stay its own. */
__attribute__((visibility("default"))) int siginterrupt(int sig, int flag)
{
	struct sigaction sa;

	if (!wrappable(sig)) {
		errno = EINVAL;
		return -1;
	}
	/* A wrapped signal: read and written back under one hold of the
	 * lock, from the table, never from a copy in this frame. */
	if (should_wrap(sig))
		return flag ? change_action("siginterrupt", sig,
					    FROM_TABLE_NO_RESTART, NULL, 0, 0,
					    0, NULL)
			    : change_action("siginterrupt", sig,
					    FROM_TABLE_RESTART, NULL, 0, 0, 0,
					    NULL);
	if (__sigaction(sig, NULL, &sa))
		return -1;
	if (flag)
		sa.sa_flags &= ~SA_RESTART;
	else
		sa.sa_flags |= SA_RESTART;
	return __sigaction(sig, &sa, NULL);
}

/* ssignal() is glibc's other name for signal(). */
__attribute__((visibility("default"))) sighandler_t ssignal(int sig,
							    sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

/*
 * System V's sigset(): SIG_HOLD blocks the signal and leaves its action;
 * anything else installs it (no flags, empty mask) and unblocks it. The
 * previous action comes back, or SIG_HOLD if the signal was blocked.
 */
__attribute__((visibility("default"))) sighandler_t sigset(int sig,
							   sighandler_t h)
{
	struct sigaction old;
	sigset_t one, was;

	if (h == SIG_ERR || !wrappable(sig)) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&one);
	sigaddset(&one, sig);
	if (h == SIG_HOLD) {
		if (sigprocmask(SIG_BLOCK, &one, &was))
			return SIG_ERR;
		if (sigismember(&was, sig))
			return SIG_HOLD;
		if (sigaction(sig, NULL, &old))
			return SIG_ERR;
		return old.sa_handler;
	}
	old.sa_handler = set_handler_as("sigset", sig, h, 0, 0);
	if (old.sa_handler == SIG_ERR || sigprocmask(SIG_UNBLOCK, &one, &was))
		return SIG_ERR;
	return sigismember(&was, sig) ? SIG_HOLD : old.sa_handler;
}
