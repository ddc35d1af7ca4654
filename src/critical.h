/* SPDX-License-Identifier: MIT */
/*
 * critical.h - the depths of the calling thread that signal.c keeps: of a
 * backend's critical section and of core.c's begin/end window. Only the
 * files that bracket sections or count windows include it: rw_cs_leave()
 * calls into signal.c, which calls region.c, fault.c and more of the core,
 * and in internal.h it made each of those files depend on signal.c in turn.
 */
#ifndef RAREWRITE_CRITICAL_H
#define RAREWRITE_CRITICAL_H

#include <stdint.h>

#include "internal.h"

/*
 * Critical sections (signal.c): a backend that holds a lock or has a key
 * or pages open for a single write, without blocking signals, brackets it
 * with rw_cs_enter()/rw_cs_leave(). A signal that arrives inside is not
 * run there: the wrapper blocks it in the interrupted context's mask,
 * queues it again and returns; rw_cs_leave() unblocks it, and it is
 * delivered right after the section with its siginfo. No system call
 * unless a signal actually came. The depth is a plain TLS hint: a forged
 * depth only delays handlers (or runs one where the section is open,
 * which is then what a racing thread could do anyway); what may be
 * written is never decided from it.
 */
#define RW_TLS_IE __thread __attribute__((tls_model("initial-exec")))
RW_HIDDEN extern RW_TLS_IE unsigned rw_cs_depth;
RW_HIDDEN extern RW_TLS_IE uint64_t rw_cs_deferred;
RW_HIDDEN void rw_cs_release(void);

/*
 * Depth of the calling thread's begin/end window (core.c's windows).
 * initial-exec: a plain %fs-relative load on every write, no
 * __tls_get_addr call (the library is linked at startup, not dlopen()ed).
 * Plain memory that a store inside the window can change: it only picks
 * the fast path. Whether an end is the outermost is decided from the
 * table's record of nested windows (attack 7f). Defined in signal.c,
 * which clears it for the length of a handler (the handler holds no window
 * of the code it interrupted).
 */
RW_HIDDEN extern RW_TLS_IE unsigned rw_window_depth;

static inline __attribute__((always_inline)) void rw_cs_enter(void)
{
	rw_cs_depth++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline __attribute__((always_inline)) void rw_cs_leave(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (!--rw_cs_depth && rw_cs_deferred)
		rw_cs_release();
}

#endif /* RAREWRITE_CRITICAL_H */
