// SPDX-License-Identifier: MIT
/*
 * process.c - Lutomirski's separate address space, in user space: a helper
 * process owns the only writable mapping of protected memory and applies
 * write requests it has validated.
 *
 * Each region is a memfd. The helper maps it writable; then the program
 * seals it F_SEAL_FUTURE_WRITE (no write(2), no new writable mapping, no
 * mprotect() of a view to writable, for anyone) and maps its read-only view,
 * MADV_DONTFORK and mseal()ed (sections; pools on request). The program
 * keeps the descriptor only to read it (a fork child copies from it): the
 * seal makes it useless for writing. Nothing in the program can write
 * protected memory directly, window or not.
 *
 * A write is one sendmsg() on a SOCK_SEQPACKET socket (process_ring.h):
 * target, length and data are the system call's arguments, copied by the
 * kernel when it is made, so no store to the program's memory can forge or
 * rewrite a request the helper has not yet read. The helper serves only
 * the program's pid (the kernel's SCM_CREDENTIALS) and answers in its
 * answer page, which the program maps read-only (its memfd is sealed
 * against writing before the helper hands it over), with a futex wake:
 * a socket reply cost as much again as the request. One request is in
 * flight at a time (the helper serves one at a time anyway), so the next
 * answer the page counts is its answer; a thread sleeps on the futex for
 * it. The helper is no child of the program (process_helper.c): when it
 * ends, its keeper says how on the socket. Regions are registered on the
 * same socket, their memfds passed with SCM_RIGHTS.
 *
 * fork(): the socket is closed in the child, so a child holds no channel to
 * the parent's helper. The child copies each region into a new memfd while
 * the parent's writers are held off, starts a helper of its own, registers
 * the copies and maps them over the inherited views. A child made by a raw
 * fork (no fork handlers) keeps the socket, but the helper refuses its
 * messages: they do not come from the program's pid.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rarewrite.h"
#include "internal.h"
#include "process_helper.h"
#include "process_ring.h"
#include "../rawsys.h"
#include "../reglock.h"

/* This backend's ops table (at the end), listed in backends.c. */
extern const struct rw_backend rw_backend_process RW_HIDDEN;

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

/*
 * The channel to the helper, who the helper is, who we are and how much
 * one message carries live in the core's table (rw_backend_word()), not in
 * .bss: a store to the socket number would send the next region's memfd,
 * still writable, to another socket of the program (attack 14a), one to
 * the size would split 8-byte words over requests (torn writes, 14b).
 * Unset words read 0: the socket is kept as fd + 1.
 */
enum {
	W_SOCK,	  /* ctl_sock + 1 */
	W_HELPER, /* the helper's pid */
	W_PID,	  /* ours, as the helper sees it in replies */
	W_DATA,	  /* data bytes per message, a multiple of 8 <= PRW_MAX_DATA */
	W_INO,	  /* st_ino of the socket: checked before every SCM_RIGHTS */
	W_ANSWER, /* the helper's answer page, mapped read-only */
};

static int ctl_fd(void)
{
	return (int)rw_backend_word(RW_BACKEND_PROCESS, W_SOCK) - 1;
}

/* The same for a raw system call, without sign extension (the kernel
 * reads the descriptor's low 32 bits): a constant less for the compiler
 * to keep in a register through the answer wait. */
#define CTL_FD_RAW() ((long)(rw_backend_word(RW_BACKEND_PROCESS, W_SOCK) - 1))

static pid_t helper_id(void)
{
	return (pid_t)rw_backend_word(RW_BACKEND_PROCESS, W_HELPER);
}

static pid_t our_pid(void)
{
	return (pid_t)rw_backend_word(RW_BACKEND_PROCESS, W_PID);
}

static size_t data_max(void)
{
	return (size_t)rw_backend_word(RW_BACKEND_PROCESS, W_DATA);
}

/* The helper's answer page, loaded from the core's table at each use: a
 * copy kept in a register through a wait would compete for the registers
 * that must not spill (25c), and the table is out of a store's reach. */
#define PAGE()                                                                 \
	((const struct prw_answer *)(uintptr_t)rw_backend_word(                \
		RW_BACKEND_PROCESS, W_ANSWER))

/* None after fork_child dropped it: a request then has no helper. */
static void answer_page_check(const char *call, const void *addr)
{
	if (!PAGE())
		rw_die(call, addr,
		       "the process backend has no helper's answer page");
}

static uint64_t next_id = 1;
static uint64_t req_seq;
/* Where the helper last answered from: a hint (see poll_first()). */
static uint32_t helper_cpu = UINT32_MAX;

/* Writers hold it shared; fork holds it exclusive. Both locks are words of
 * reglock.h, taken inline: pthread's save the caller's registers in their
 * frames through the wait, and a write's length rewritten there went to
 * the helper checked (27i). */
static uint32_t write_lock;
/* One request in flight: its sender takes the next reply. Held exclusive. */
static uint32_t req_lock;

/* A waiting thread wakes this often to check that the helper still lives. */
#define LIVENESS_MS 50
/* How long a caller looks at the answer page before sleeping on it, while
 * the helper runs on another CPU (it answers in a few microseconds): loads,
 * no system call and no clock call (spin_clock()), about 5 us. */
#define CALLER_SPIN_ROUNDS 4096u
/* The helper has this long to start, and to answer one request. A live
 * helper answers in microseconds; these only turn a hang into an error. */
#define START_TIMEOUT_S 10
#define REPLY_TIMEOUT_S 60

/* The helper has ended: say how, from its keeper's @fate (NULL: the
 * keeper is gone too, without a word). */
static __attribute__((noreturn)) void
helper_ended(const char *call, const void *addr, const struct prw_reply *fate)
{
	if (fate && fate->err == CLD_KILLED && fate->cpu == SIGSYS)
		rw_die(call, addr,
		       "the process backend's helper (pid %d) made a system "
		       "call outside its seccomp filter and was killed "
		       "(SIGSYS); the write cannot be applied",
		       (int)helper_id());
	if (fate && (fate->err == CLD_KILLED || fate->err == CLD_DUMPED))
		rw_die(call, addr,
		       "the process backend's helper (pid %d) was killed by "
		       "signal %u; the write cannot be applied",
		       (int)helper_id(), fate->cpu);
	rw_die(call, addr,
	       "the process backend's helper (pid %d) has died; the write "
	       "cannot be applied",
	       (int)helper_id());
}

/* The socket failed us: the helper is gone. Its keeper's word on how, if
 * any, is still in the socket (queued before the keeper's end closed). */
static __attribute__((noreturn)) void helper_died(const char *call,
						  const void *addr)
{
	struct prw_reply r;
	ssize_t n;

	while ((n = recv(ctl_fd(), &r, sizeof(r), MSG_DONTWAIT)) > 0 ||
	       (n < 0 && errno == EINTR))
		if (n == (ssize_t)sizeof(r) && r.seq == PRW_SEQ_FATE)
			helper_ended(call, addr, &r);
	helper_ended(call, addr, NULL);
}

/* The CPU we run on, or UINT32_MAX; a hint. Inline, no call; without
 * rseq none, and the caller sleeps at once. */
static inline __attribute__((always_inline)) uint32_t cur_cpu(void)
{
	int32_t id = prw_rseq_cpu();

	return id >= 0 ? (uint32_t)id : UINT32_MAX;
}

/*
 * The calling thread's stack pointer, from the register (not a load): it
 * names the thread in a request, and its answer must name it too
 * (prw_msg.sp). Read in the function that transact() and await_answer()
 * are inlined into, whose stack pointer does not move between the send
 * and the check.
 */
static inline __attribute__((always_inline)) uint64_t cur_sp(void)
{
#if defined(__x86_64__)
	uint64_t sp;

	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	return sp;
#else
	return (uintptr_t)__builtin_frame_address(0);
#endif
}

/* Poll for the answer before sleeping: only while the helper runs on
 * another CPU than @cpu; on the same one polling only delays it. */
static bool poll_first(uint32_t cpu)
{
	uint32_t h = __atomic_load_n(&helper_cpu, __ATOMIC_RELAXED);

	return cpu != UINT32_MAX && h != UINT32_MAX && h != cpu;
}

static uint64_t mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

/* A cycle counter read inline (no vDSO call: 25c), to bound the spin:
 * ticks, never compared with the clock. 0 where there is none; then the
 * spin is bounded by its rounds alone. */
static inline __attribute__((always_inline)) uint64_t spin_clock(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	uint64_t t;

	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(t));
	return t;
#else
	return 0;
#endif
}

/* Ticks of spin_clock() in about 5 us: the TSC counts at 1 to 5 GHz;
 * arm64's counter at its own frequency (cntfrq_el0). */
static inline __attribute__((always_inline)) uint64_t spin_ticks(void)
{
#if defined(__aarch64__)
	uint64_t f;

	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(f));
	return f / 200000u;
#else
	return 16384u;
#endif
}

/* The helper has ended: the keeper's word on how (@n bytes of it in @r,
 * from a recv(2) on the socket that was not EAGAIN), or end-of-file. */
static __attribute__((noreturn, noinline, cold)) void
helper_gone(const char *call, const void *addr, const struct prw_reply *r,
	    long n)
{
	if (n == (long)sizeof(*r) && r->seq == PRW_SEQ_FATE)
		helper_ended(call, addr, r);
	helper_died(call, addr);
}

static __attribute__((noreturn, noinline, cold)) void
answer_late(const char *call, const void *addr)
{
	rw_die(call, addr,
	       "the process backend's helper (pid %d) did not answer within "
	       "%d s",
	       (int)helper_id(), REPLY_TIMEOUT_S);
}

static __attribute__((noreturn, noinline, cold)) void
answer_other(const char *call, const void *addr, uint32_t n, uint32_t seq,
	     uint32_t op)
{
	const struct prw_answer *a = PAGE();

	if (n != 1)
		rw_die(call, addr,
		       "the process backend's helper answered %u requests "
		       "where one was in flight",
		       n);
	if ((uint32_t)a->seq == seq && a->op == op)
		rw_die(call, addr,
		       "the process backend's helper answered another "
		       "request than this call's: another thread's (two "
		       "requests in flight at once: a forged lock?)");
	rw_die(call, addr,
	       "the process backend's helper answered another request than "
	       "this call's: seq %u op %u, where this call sent seq %u op %u "
	       "(changed in memory before it was sent)",
	       (uint32_t)a->seq, a->op, seq, op);
}

static __attribute__((noreturn, noinline, cold)) void
write_refused(const char *call, const void *addr, size_t len, int err)
{
	rw_die(call, addr,
	       "the process backend's helper refused the write (%zu bytes): %s",
	       len,
	       err == -EPERM   ? "not sent by this process"
	       : err == -EBUSY ? "another call's write in pieces is in "
				 "progress (two requests in flight at once: "
				 "a forged lock?)"
			       : "not inside memory registered with it, or "
				 "not the next piece of this call");
}

static __attribute__((noreturn, noinline, cold)) void
write_other(const char *call, const void *addr, size_t len)
{
	const struct prw_answer *a = PAGE();

	if (a->call_len)
		rw_die(call, addr,
		       "the process backend's helper applied another write "
		       "than this call's (%zu bytes at %#llx, where it applied "
		       "%llu at %#llx: the request was changed in memory "
		       "before it was sent)",
		       len, (unsigned long long)(uintptr_t)addr,
		       (unsigned long long)a->call_len,
		       (unsigned long long)a->call_dst);

	rw_die(call, addr,
	       "the process backend's helper applied another write than this "
	       "call's (%zu bytes at %#llx of %u segments, %llu data bytes: "
	       "the request was changed in memory before it was sent)",
	       len ? len : (size_t)a->len, (unsigned long long)a->dst, a->nseg,
	       (unsigned long long)a->total);
}

/* The wait's timeout, relative: no clock to read. In .rodata, out of a
 * store's reach. */
static const struct timespec liveness = {0, LIVENESS_MS * 1000000L};

/*
 * Sleep on the answer count while it is @before, LIVENESS_MS at most: a
 * FUTEX_WAIT, not private (the helper's mapping of the page is another
 * process's), with a relative timeout (FUTEX_WAIT_BITSET's is absolute: a
 * clock read, a call or a system call). It matches every wake, so a late
 * wake for the previous answer may end it early: the caller looks again.
 * On x86-64 the constants are loaded inside the asm, so that no register
 * holds them through the wait loop: the registers are for the values the
 * answer is checked against (await_answer()).
 */
static inline __attribute__((always_inline)) long
answer_sleep(const uint32_t *word, uint32_t before)
{
#if defined(__x86_64__)
	long ret;

	__asm__ volatile("mov %[nr], %%eax\n\t"
			 "xor %%esi, %%esi\n\t" /* FUTEX_WAIT */
			 "lea %[ts], %%r10\n\t"
			 "xor %%r8d, %%r8d\n\t"
			 "xor %%r9d, %%r9d\n\t"
			 "syscall"
			 : "=&a"(ret)
			 : "D"(word),
			   "d"(before), [nr] "i"(SYS_futex), [ts] "m"(liveness)
			 : "rsi", "r10", "r8", "r9", "rcx", "r11", "memory");
	return ret;
#else
	return rw_sys6(SYS_futex, (long)word, FUTEX_WAIT, before,
		       (long)&liveness, 0, 0);
#endif
}

/* recv(@sock, @buf, @len, MSG_DONTWAIT), raw: its constants inside the
 * asm as answer_sleep()'s. */
static inline __attribute__((always_inline)) long answer_recv(long sock,
							      void *buf)
{
#if defined(__x86_64__)
	long ret;

	__asm__ volatile(
		"mov %[nr], %%eax\n\t"
		"mov %[len], %%edx\n\t"
		"mov %[fl], %%r10d\n\t"
		"xor %%r8d, %%r8d\n\t"
		"xor %%r9d, %%r9d\n\t"
		"syscall"
		: "=&a"(ret)
		: "D"(sock), "S"(buf), [nr] "i"(SYS_recvfrom),
		  [len] "i"(sizeof(struct prw_reply)), [fl] "i"(MSG_DONTWAIT)
		: "rdx", "r10", "r8", "r9", "rcx", "r11", "memory");
	return ret;
#else
	return rw_sys6(SYS_recvfrom, sock, (long)buf, sizeof(struct prw_reply),
		       MSG_DONTWAIT, 0, 0);
#endif
}

/* What await_answer() compares the answer's echo with, besides seq, op
 * and stack pointer: nothing (a control message: ctl() checks its own), a
 * unit write's (destination and length in one word, value), a request of
 * segments' (count, data bytes, digest), a piece of a call's (the call's
 * start and length: process_ring.h). */
enum echo { ECHO_NONE, ECHO_UNIT, ECHO_SEGS, ECHO_CALL };
/* A unit write's destination and length (1, 2, 4, 8) in one word, which
 * leaves the compiler one register more for the others: the length above
 * any user address. */
#define UNIT_SHIFT 60
#define UNIT_ADDR ((1ULL << UNIT_SHIFT) - 1)

/*
 * Wait until the answer page counts one answer more than @before, the count
 * when our request went out, and check that it answers request @seq with
 * @op and, for a write, that it applied what @x1, @x2, @x3 say (@echo): 0
 * or -errno from the helper (a mismatch dies in write_other()). The page
 * is the helper's alone (read-only here), and nothing but our request is
 * in flight: that answer is ours. A helper that hangs (stopped) runs into
 * the deadline; one that ended is found on the socket.
 *
 * Inline, and without a call from the send to the checks (attack 25c):
 * @before, @seq and the values compared stay in registers through the
 * wait. In memory (a stack slot, or the frame of a function that saves
 * them, as clock_gettime() in the vDSO and recv() did) a store of count -
 * 1 there would make the caller take the previous answer for its own and
 * return before the helper applied its write; a store to an expected
 * value there, together with one to the request before the send, would
 * pass a redirected write (15a). So the spin is bounded by a cycle
 * counter, the wait's timeout is relative (no clock read), the deadline
 * counts timeouts, the socket is read with a raw recvfrom(2), the answer
 * page and the socket are loaded from the core's table at each use, and
 * every pass of the loop names those values as live in registers (an
 * empty asm): a compiler that spilled them would have to write and read
 * them back in every pass. The count of timeouts may sit in memory: a
 * store there changes only when this gives up. Should @before be lost
 * anyway, the answer's echo names the previous request's seq and write,
 * not ours, and the call dies.
 */
static inline __attribute__((always_inline)) int
await_answer(const char *call, const void *addr, uint64_t sb, uint32_t op,
	     enum echo echo, uint64_t x1, uint64_t x2, uint64_t x3)
{
	const uint32_t before = (uint32_t)sb;
	unsigned timeouts = 0;
	uint32_t count;

	/* A unit write's destination is in @x1: not a second register. */
	if (echo == ECHO_UNIT)
		addr = (const void *)(uintptr_t)(x1 & UNIT_ADDR);
	/* A piece's call start is in @x1: the same. */
	if (echo == ECHO_CALL)
		addr = (const void *)(uintptr_t)x1;

	/* The CPU read again, not kept from the send: a register less
	 * through the wait, for the values compared (a hint either way). */
	if (poll_first(cur_cpu())) {
		uint64_t t0 = spin_clock(), ticks = spin_ticks();

		for (unsigned i = 0;
		     i < CALLER_SPIN_ROUNDS &&
		     __atomic_load_n(&PAGE()->count, __ATOMIC_ACQUIRE) ==
			     before &&
		     spin_clock() - t0 < ticks;
		     i++)
			cpu_relax();
	}
	while ((count = __atomic_load_n(&PAGE()->count, __ATOMIC_ACQUIRE)) ==
	       before) {
		long r;

		__asm__ volatile("" ::"r"(sb), "r"(x1), "r"(x2), "r"(x3));
		r = answer_sleep(&PAGE()->count, before);
		if (r != -ETIMEDOUT)
			continue;
		/* The deadline, in timeouts of LIVENESS_MS each at least. */
		if (++timeouts > REPLY_TIMEOUT_S * 1000 / LIVENESS_MS)
			answer_late(call, addr);
		/* A helper that ended says so on the socket (its keeper's
		 * word, or end-of-file when both are gone). Nothing else
		 * comes on it: the helper answers in its page. */
		{
			/* Zeroed: the analysers cannot see the raw
			 * recvfrom() fill it. */
			struct prw_reply rep = {0};

			do
				r = answer_recv(CTL_FD_RAW(), &rep);
			while (r == -EINTR);
			if (r != -EAGAIN && r != -EWOULDBLOCK &&
			    (r <= 0 || (r == (long)sizeof(rep) &&
					rep.seq == PRW_SEQ_FATE)))
				helper_gone(call, addr, &rep, r);
		}
	}
	/* From the registers: a copy of before + 1 or of the seq in the
	 * frame would let a store make these checks pass. The empty asm
	 * makes the values below new ones, computed here from the registers
	 * the loop kept, not a copy of the destination or length the
	 * compiler made for the check and kept on the stack. */
	__asm__ volatile("" : "+r"(sb), "+r"(x1), "+r"(x2), "+r"(x3));
	if (count - (uint32_t)sb != 1 ||
	    (uint32_t)__atomic_load_n(&PAGE()->seq, __ATOMIC_RELAXED) !=
		    (uint32_t)(sb >> 32) ||
	    __atomic_load_n(&PAGE()->op, __ATOMIC_RELAXED) != op ||
	    __atomic_load_n(&PAGE()->sp, __ATOMIC_RELAXED) != cur_sp())
		answer_other(call, addr, count - (uint32_t)sb,
			     (uint32_t)(sb >> 32), op);
	if (__atomic_load_n(&PAGE()->err, __ATOMIC_RELAXED))
		return __atomic_load_n(&PAGE()->err, __ATOMIC_RELAXED);
	if (echo == ECHO_UNIT &&
	    (__atomic_load_n(&PAGE()->nseg, __ATOMIC_RELAXED) != 1 ||
	     __atomic_load_n(&PAGE()->dst, __ATOMIC_RELAXED) !=
		     (x1 & UNIT_ADDR) ||
	     __atomic_load_n(&PAGE()->len, __ATOMIC_RELAXED) !=
		     x1 >> UNIT_SHIFT ||
	     __atomic_load_n(&PAGE()->total, __ATOMIC_RELAXED) !=
		     x1 >> UNIT_SHIFT ||
	     __atomic_load_n(&PAGE()->data, __ATOMIC_RELAXED) != x3))
		write_other(call, addr, x1 >> UNIT_SHIFT);
	if (echo == ECHO_SEGS &&
	    (__atomic_load_n(&PAGE()->nseg, __ATOMIC_RELAXED) != x1 ||
	     __atomic_load_n(&PAGE()->total, __ATOMIC_RELAXED) != x2 ||
	     __atomic_load_n(&PAGE()->digest, __ATOMIC_RELAXED) != x3))
		write_other(call, addr, x2);
	if (echo == ECHO_CALL &&
	    (__atomic_load_n(&PAGE()->call_dst, __ATOMIC_RELAXED) != x1 ||
	     __atomic_load_n(&PAGE()->call_len, __ATOMIC_RELAXED) != x2))
		write_other(call, (const void *)(uintptr_t)x1, x2);
	__atomic_store_n(&helper_cpu,
			 __atomic_load_n(&PAGE()->cpu, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	return 0;
}

static __attribute__((noreturn, noinline, cold)) void
send_failed(const char *call, const void *addr, long n, size_t len)
{
	if (n == -EMSGSIZE)
		rw_die(call, addr,
		       "a %zu-byte request does not fit the process backend's "
		       "socket",
		       len);
	helper_died(call, addr);
}

/*
 * Send @mh as one request of @len bytes, @op (the caller's constant), and
 * wait for its answer: 0 or -errno from the helper, after the answer's echo
 * of the request's op and seq matched, and of its write what @echo, @x1,
 * @x2 and @x3 say (await_answer()). req_lock held, and @mh built
 * after it was taken (attacks 15a, 25a, 25b): no wait between the
 * request's construction and the system call that copies it. Inline, the
 * system calls raw (rawsys.h), no call at all from here to the answer:
 * the answer count it waits for, the seq and the caller's values stay in
 * registers (25c), the length it expects is its caller's constant or
 * computed since the lock.
 */
static inline __attribute__((always_inline)) int
transact(const char *call, const void *addr, struct msghdr *mh, size_t len,
	 uint32_t op, enum echo echo, uint64_t x1, uint64_t x2, uint64_t x3)
{
	struct prw_msg *m = mh->msg_iov[0].iov_base;
	uint64_t seq = ++req_seq, sb;
	long n;

	answer_page_check(call, addr);
	m->op = op;
	m->seq = seq;
	m->sp = cur_sp();
	m->cpu = cur_cpu(); /* a hint */
	/* Before the request goes (the helper may answer at once), with the
	 * seq's low half in one register (await_answer()). */
	sb = seq << 32 | __atomic_load_n(&PAGE()->count, __ATOMIC_ACQUIRE);
	rw_in_register(sb);
	do
		n = rw_sys6(SYS_sendmsg, CTL_FD_RAW(), (long)mh, MSG_NOSIGNAL,
			    0, 0, 0);
	while (n == -EINTR);
	if (n != (long)len)
		send_failed(call, addr, n, len);
	return await_answer(call, addr, sb, op, echo, x1, x2, x3);
}

/*
 * Before a memfd goes out, still writable (the helper must map it so): the
 * socket must be the one helper_start() made, by its inode, and its peer
 * the socketpair we created, by the kernel's SO_PEERCRED. A socket number
 * that was closed and reused for a connection to someone else fails both.
 */
static void peer_check(const char *call, const void *addr)
{
	struct ucred cred;
	socklen_t l = sizeof(cred);
	struct stat st;

	if (fstat(ctl_fd(), &st) || !S_ISSOCK(st.st_mode) ||
	    (uint64_t)st.st_ino != rw_backend_word(RW_BACKEND_PROCESS, W_INO) ||
	    getsockopt(ctl_fd(), SOL_SOCKET, SO_PEERCRED, &cred, &l) ||
	    cred.pid != our_pid())
		rw_die(call, addr,
		       "the process backend's socket is not the one to its "
		       "helper; not sending it protected memory");
}

/*
 * A control message: 0 or -errno. Built whole after req_lock is taken,
 * from its op (each caller's constant), with @fd passed if >= 0: a message,
 * an iovec or a control message built before the wait would sit on the
 * stack through it, where a store points the iovec at a request of the
 * attacker's (25b) or swaps the descriptor for another memfd of the
 * library (25a). For an ADD the helper tells which memfd it mapped: it
 * must be @fd's, else the call dies (the helper refuses memfds of the
 * wrong seals and any it mapped before: a swap for another region's).
 * A WIPE passes none, and the helper tells which memfd it zeroed: it must
 * be @named's, the region's (@named is @fd for an ADD, -1 for the rest).
 */
static inline __attribute__((always_inline)) int
ctl(const char *call, const void *addr, uint32_t op, uint64_t id,
    uint64_t start, uint64_t len, int fd, int named)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct prw_msg m;
	struct iovec iov;
	struct msghdr mh;
	int err;

	rw_reglock_write(&req_lock);
	if (fd >= 0)
		peer_check(call, addr);
	m = (struct prw_msg){.id = id, .start = start, .len = len};
	iov = (struct iovec){&m, sizeof(m)};
	mh = (struct msghdr){.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	err = transact(call, addr, &mh, sizeof(struct prw_msg), op, ECHO_NONE,
		       0, 0, 0);
	if (!err && named >= 0) {
		struct stat st;

		if (fstat(named, &st) ||
		    __atomic_load_n(&PAGE()->dev, __ATOMIC_RELAXED) !=
			    (uint64_t)st.st_dev ||
		    __atomic_load_n(&PAGE()->ino, __ATOMIC_RELAXED) !=
			    (uint64_t)st.st_ino)
			rw_die(call, addr,
			       "the process backend's helper %s another "
			       "memfd than the region's (descriptor %d)",
			       op == PRW_OP_WIPE ? "zeroed" : "mapped", named);
	}
	rw_reglock_write_unlock(&req_lock);
	return err;
}

/* The helper forgets region @id: it must, or it would keep writing a range
 * the program is about to reuse. */
static void ctl_del(const char *call, const void *addr, uint64_t id)
{
	int err = ctl(call, addr, PRW_OP_DEL, id, 0, 0, -1, -1);

	if (err)
		rw_die(call, addr,
		       "the process backend's helper did not forget the "
		       "region: %s",
		       strerror(-err));
}

/* The first descriptor passed in @mh, or -1; any further one is closed. */
static int passed_fd(const struct msghdr *mh)
{
	int fd = -1;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c;
	     c = CMSG_NXTHDR((struct msghdr *)mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0;
		     i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int),
			       sizeof(int));
			if (fd < 0)
				fd = got;
			else
				close(got);
		}
	}
	return fd;
}

/*
 * Map the helper's answer page, @fd, read-only: it must be sealed against
 * every future write (so no mapping of ours can ever write it) and hold a
 * page. MADV_DONTFORK (a fork child gets its own helper and page) and
 * mseal()ed. The address, or NULL with errno set.
 */
static void *answer_page_map(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);
	struct stat st;
	void *p;
	int err;

	if (seals < 0 || !(seals & F_SEAL_FUTURE_WRITE) || fstat(fd, &st) ||
	    st.st_size < (off_t)PRW_PAGE) {
		errno = EPROTO;
		return NULL;
	}
	p = mmap(NULL, PRW_PAGE, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	err = rw_view_seal(p, PRW_PAGE, true);
	if (err) {
		munmap(p, PRW_PAGE);
		errno = -err;
		return NULL;
	}
	return p;
}

/* Wait for the helper's answer page and its struct prw_ready on @sock: 0
 * with its pid in *@pid and the page's descriptor in *@page_fd, or -errno.
 * A helper that dies or hangs at start is an error with a reason on
 * stderr, never a wait without end. */
static int helper_ready(int sock, pid_t *pid, int *page_fd)
{
	uint64_t deadline = mono_s() + START_TIMEOUT_S;
	union {
		struct prw_ready ready;
		struct prw_reply fate;
	} m;
	ssize_t n;

	*page_fd = -1;
	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} cbuf;
		struct iovec iov = {&m, sizeof(m)};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf.buf,
				    .msg_controllen = sizeof(cbuf.buf)};
		int fd;

		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		fd = n >= 0 ? passed_fd(&mh) : -1;
		if (n == (ssize_t)sizeof(m.ready) && m.ready.pid > 0 &&
		    m.ready.err == PRW_READY_PAGE && fd >= 0 && *page_fd < 0) {
			*page_fd = fd;
			continue;
		}
		if (fd >= 0)
			close(fd);
		if (n == (ssize_t)sizeof(m.ready) && m.ready.pid > 0) {
			*pid = m.ready.pid;
			if (m.ready.err <= 0 && *page_fd >= 0)
				return m.ready.err;
			rw_say("rare_write_init",
			       "the process backend's helper started without "
			       "an answer page");
			return -EPROTO;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
		    mono_s() <= deadline)
			continue;
		break;
	}
	if (n == (ssize_t)sizeof(m.fate) && m.fate.seq == PRW_SEQ_FATE &&
	    (m.fate.err == CLD_KILLED || m.fate.err == CLD_DUMPED)) {
		rw_say("rare_write_init",
		       "the process backend's helper (pid %d) was killed by "
		       "signal %u while starting",
		       (int)m.fate.pid, m.fate.cpu);
		return -ECHILD;
	}
	if (n >= 0) {
		rw_say("rare_write_init",
		       "the process backend's helper exited while starting");
		return -ECHILD;
	}
	rw_say("rare_write_init",
	       "the process backend's helper did not start within %d s",
	       START_TIMEOUT_S);
	return -ETIMEDOUT;
}

/* Largest message the socket takes, from its send buffer. */
static size_t socket_max_data(int sock)
{
	int want = (int)(2 * PRW_MSG_MAX), have = 0;
	socklen_t l = sizeof(have);
	size_t room, head = sizeof(struct prw_msg) +
			    PRW_MAX_SEGS * sizeof(struct prw_seg);

	setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
	if (getsockopt(sock, SOL_SOCKET, SO_SNDBUF, &have, &l) || have <= 0)
		return 0;
	/* The kernel refuses a datagram above the send buffer less 32; keep
	 * a margin for its accounting. */
	room = (size_t)have / 2;
	if (room <= head + PRW_PAGE)
		return 0;
	room -= head;
	return room < PRW_MAX_DATA ? room & ~(size_t)63 : PRW_MAX_DATA;
}

/* A new socket and helper. */
static int helper_start(void)
{
	struct timeval tv = {0, LIVENESS_MS * 1000};
	int sv[2], one = 1, err, page_fd = -1;
	void *page = NULL;
	struct stat st;
	size_t data;
	pid_t pid = 0;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	data = socket_max_data(sv[0]);
	/* The helper learns every sender's pid from the kernel; our waits
	 * wake to check on the helper. */
	if (!data ||
	    setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	    setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		err = data ? -errno : -ENOBUFS;
		close(sv[0]);
		close(sv[1]);
		return err;
	}
	err = prw_helper_spawn(sv[1]);
	close(sv[1]);
	if (err) {
		close(sv[0]);
		return err;
	}
	/* On failure the closed socket ends the helper, if it runs. */
	err = helper_ready(sv[0], &pid, &page_fd);
	if (!err && fstat(sv[0], &st))
		err = -errno;
	if (!err && !(page = answer_page_map(page_fd)))
		err = -errno;
	if (page_fd >= 0)
		close(page_fd);
	if (err) {
		close(sv[0]);
		return err;
	}
	rw_backend_word_set(RW_BACKEND_PROCESS, W_SOCK, (uint64_t)sv[0] + 1);
	rw_backend_word_set(RW_BACKEND_PROCESS, W_HELPER, (uint64_t)pid);
	rw_backend_word_set(RW_BACKEND_PROCESS, W_PID, (uint64_t)getpid());
	rw_backend_word_set(RW_BACKEND_PROCESS, W_DATA, data & ~(size_t)7);
	rw_backend_word_set(RW_BACKEND_PROCESS, W_INO, (uint64_t)st.st_ino);
	rw_backend_word_set(RW_BACKEND_PROCESS, W_ANSWER, (uintptr_t)page);
	return 0;
}

static int process_setup(void)
{
	return helper_start();
}

/* A memfd of @len bytes holding @contents (NULL: zeroes), sealed against
 * resizing, which the helper insists on; region_register() adds the write
 * seals once the helper has mapped it. */
static int memfd_new(const char *name, size_t len, const void *contents)
{
	return rw_memfd_new(name, len, contents, F_SEAL_SHRINK | F_SEAL_GROW);
}

/*
 * Hand @fd to the helper as the region at r->start, then seal it against
 * every future write and map the program's read-only view over r->start.
 * On success @fd becomes r->fd (read-only by its seals), else it is closed.
 * @made (a constant: always inline): a pool's creation, whose start,
 * length and descriptor are the core's request's (rw_pool_made(), 27t),
 * loaded at each use, never @r's or @fd, which sit in writable memory: a
 * start moved there to the program's data had the pool's view mapped over
 * it and recorded there.
 */
#define REG_START (made ? (uintptr_t)rw_pool_made(RW_POOL_START) : r->start)
#define REG_LEN (made ? (size_t)rw_pool_made(RW_POOL_LEN) : r->len)
#define REG_FD (made ? (int)rw_pool_made(RW_POOL_FD) : fd)
static inline __attribute__((always_inline)) int
register_at(const char *call, struct rw_region *r, int fd, const bool made)
{
	uint64_t id = next_id++;
	int err = ctl(call, (void *)REG_START, PRW_OP_ADD, id, REG_START,
		      REG_LEN, REG_FD, REG_FD);
	long ret;

	if (err)
		goto out;
	/* Sealed before the view exists, so the view cannot be made
	 * writable either (the kernel clears VM_MAYWRITE). Inline: the
	 * start and descriptor go to the kernel from registers. */
	ret = rw_sys(SYS_fcntl, REG_FD, F_ADD_SEALS,
		     F_SEAL_FUTURE_WRITE | F_SEAL_SEAL);
	if (!ret)
		ret = rw_sys6(SYS_mmap, (long)REG_START, (long)REG_LEN,
			      PROT_READ, MAP_SHARED | MAP_FIXED, REG_FD, 0);
	if (ret < 0 && ret > -4096) {
		err = (int)ret;
		ctl_del(call, (void *)REG_START, id);
		goto out;
	}
	err = rw_view_seal((void *)REG_START, REG_LEN,
			   made ? rw_pool_made(RW_POOL_SEALED) : r->seal);
	if (err) {
		ctl_del(call, (void *)REG_START, id);
		goto out;
	}
	r->priv = (uintptr_t)id;
	r->fd = REG_FD;
	return 0;
out:
	rw_sys(SYS_close, REG_FD, 0, 0);
	r->fd = -1;
	return err;
}

static int region_register(const char *call, struct rw_region *r, int fd)
{
	return register_at(call, r, fd, false);
}

static int process_adopt(struct rw_region *r)
{
	int fd = memfd_new("rarewrite", r->len, (void *)r->start);

	if (fd < 0)
		return fd;
	return region_register("rare_write_init", r, fd);
}

/* The placeholder's start and the memfd go into the core's table from the
 * registers mmap(2) and memfd_create(2) returned them in (27t); the view
 * is mapped over the placeholder from there. */
static int process_create(struct rw_region *r)
{
	long p =
		rw_sys6(SYS_mmap, 0, (long)rw_pool_made(RW_POOL_LEN), PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int err;

	if (p < 0 && p > -4096)
		return (int)p;
	rw_pool_made_put(RW_POOL_START, (uint64_t)p);
	err = rw_pool_memfd(F_SEAL_SHRINK | F_SEAL_GROW);
	if (!err)
		err = register_at("rare_pool_create", r, -1, true);
	if (err)
		rw_sys(SYS_munmap, rw_pool_made(RW_POOL_START),
		       rw_pool_made(RW_POOL_LEN), 0);
	return err;
}
#undef REG_START
#undef REG_LEN
#undef REG_FD

static void zero_sealed(const struct rw_region *r);

static void process_destroy(struct rw_region *r)
{
	/* A sealed view stays until exit: leave zeroes in it. */
	if (r->seal)
		zero_sealed(r);
	/* The view and the descriptor first, inline: @r stays in a register
	 * to both, where it crossed ctl_del()'s calls before (a callee saved
	 * it, a store moved it to another live pool's record, whose pages
	 * were unmapped: 27o). Then the helper forgets the range; the
	 * address cannot be a new region's before (registry_lock is held),
	 * and the helper's mapping is its own. */
	rw_sys(SYS_munmap, r->start, r->len, 0);
	rw_sys(SYS_close, r->fd, 0, 0);
	ctl_del("rare_pool_destroy", (void *)r->start, r->priv);
}

/* A segment of a list checked before a lock wait, checked again after it:
 * still inside protected memory of this backend (a pool's head, below its
 * user start, is the core's to write: rw_region_holds() without it). The
 * pieces of one write after the first are the helper's to check
 * (call_rest()). */
static void seg_recheck(const char *call, uintptr_t dst, size_t len)
{
	const struct rw_region *r = rw_region_lookup((const void *)dst);

	if (!r || !rw_backend_is(r->backend, RW_BACKEND_PROCESS) ||
	    !r->protected_ || len > r->start + r->len - dst)
		rw_die(call, (void *)dst,
		       "%zu bytes not inside protected memory of the process "
		       "backend (changed while the call waited for its lock)",
		       len);
}

/*
 * The length of the first piece of the @rest bytes at @at that go to the
 * helper: all of them (a fill is one segment), or as many as one message
 * takes, ending on an 8-byte boundary (no aligned word torn over two
 * requests, 14b; the helper refuses another cut).
 */
static inline __attribute__((always_inline)) size_t
piece_len(uintptr_t at, size_t rest, const void *src)
{
	size_t max = data_max();
	size_t cut = ((at + max) & ~(uintptr_t)7) - at;

	/* Without a branch: a compiler that joins two paths here spilled
	 * @at to the stack, and took the request's destination from there. */
	return src && rest > max ? cut : rest;
}

/*
 * One piece of the call of @len bytes at @start (process_ring.h): @piece
 * bytes at @at, from @src (NULL: filled with @fill), sent and answered;
 * the echo must name that call, as @start and @len in registers say, or
 * the call dies (write_other()). req_lock held.
 */
static inline __attribute__((always_inline)) void
piece_put(const char *call, uint64_t start, uint64_t len, uintptr_t at,
	  size_t piece, const void *src, int fill)
{
	struct {
		struct prw_msg m;
		struct prw_seg seg;
	} h;
	struct iovec iov[2];
	struct msghdr mh;
	int err;

	h.m = (struct prw_msg){.nseg = 1, .start = start, .len = len};
	h.seg = (struct prw_seg){.dst = at,
				 .len = piece,
				 .flags = src ? 0 : PRW_SEG_FILL,
				 .fill = fill};
	iov[0] = (struct iovec){&h, sizeof(h)};
	iov[1] = (struct iovec){(void *)src, src ? piece : 0};
	mh = (struct msghdr){.msg_iov = iov, .msg_iovlen = src ? 2 : 1};
	/* From here @start and @len are only compared: named as registers
	 * again, so that a compiler that spilled the copies it used for the
	 * request does not compare with those (as unit_put()). */
	__asm__ volatile("" : "+r"(start), "+r"(len));
	err = transact(call, NULL, &mh, sizeof(h) + (src ? piece : 0),
		       PRW_OP_WRITE, ECHO_CALL, start, len, 0);
	if (err)
		write_refused(call, (void *)(uintptr_t)start, piece, err);
}

/*
 * The rest of the call the last answer names, piece by piece, each one's
 * place and the call's range taken from the echo, in the helper's
 * read-only page, never from this call's memory: the previous piece's
 * wait left that on the stack, where a store moved the rest of a 300 KiB
 * copy over another pool's head (the review of 15a). The helper takes
 * nothing but the call's next piece (process_ring.h). @src is the call's
 * source: a store to it changes what is written, never where.
 */
static __attribute__((noinline)) void call_rest(const char *call,
						const char *src, int fill)
{
	for (;;) {
		const struct prw_answer *a = PAGE();
		uint64_t start =
			__atomic_load_n(&a->call_dst, __ATOMIC_RELAXED);
		uint64_t len = __atomic_load_n(&a->call_len, __ATOMIC_RELAXED);
		uint64_t done =
			__atomic_load_n(&a->call_done, __ATOMIC_RELAXED);

		if (done >= len)
			return;
		piece_put(call, start, len, start + done,
			  piece_len(start + done, len - done, src),
			  src ? src + done : NULL, fill);
	}
}

/*
 * The write of @len bytes at @dst (from @src, or filled with @fill) as a
 * call in pieces: the first sent from the registers the caller's check
 * used and its echo compared with them (the review of 15a: the first
 * piece's destination waited in a segment on the stack until the digest
 * was taken, and a store there moved it); the rest, if any, as the
 * helper's echo names it (call_rest()). Whether there is a rest is the
 * echo's to say too, not a length in memory. Not inline: the caller's
 * lock waits leave no register for the answer wait's values; its
 * arguments come in registers from the caller's check, no blocking point
 * between.
 */
static __attribute__((noinline)) void
call_put(const char *call, uintptr_t dst, const void *src, size_t len, int fill)
{
	piece_put(call, dst, len, dst, piece_len(dst, len, src), src, fill);
	if (__atomic_load_n(&PAGE()->call_done, __ATOMIC_RELAXED) !=
	    __atomic_load_n(&PAGE()->call_len, __ATOMIC_RELAXED))
		call_rest(call, src, fill);
}

/* Segments in one message; its head lives on the caller's stack. */
#define REQ_SEGS 64u

/* A write request being built: its head and segments, and where the data
 * of each segment is (the caller's memory: sendmsg() copies it). */
struct req {
	struct {
		struct prw_msg m;
		struct prw_seg segs[REQ_SEGS];
	} head;
	struct iovec iov[REQ_SEGS + 1];
	unsigned nseg, niov;
	size_t data;
	const void *addr; /* for messages: the call's first destination */
	bool waited;	  /* see req_add() */
};

/*
 * Send @q as one request; it is applied whole, or the call dies. req_lock
 * held since before the request was built: a request built before the
 * wait would sit on the stack through it (scribbler 15a). The segments
 * are in memory from req_add() to the system call: the digest of their
 * destinations, lengths and fills, their number and the data's length,
 * taken right before the send, must be the helper's echo of what it
 * applied, or the call dies. That catches a store in the request, or an
 * iovec pointed at another request, after the digest; not a segment
 * rewritten before it, nor a data pointer redirected (the data are not
 * in the digest): those stay open on this path (docs/attack-matrix.md,
 * 15a). A single write of 1, 2, 4 or 8 aligned bytes does not come here
 * (unit_put()).
 */
static void req_flush(const char *call, const void *addr, struct req *q)
{
	size_t head = sizeof(q->head.m) + q->nseg * sizeof(q->head.segs[0]);
	struct msghdr mh = {.msg_iov = q->iov, .msg_iovlen = q->niov};
	uint64_t digest;
	size_t total;
	unsigned nseg;
	int err;

	if (!q->nseg)
		return;
	q->head.m.nseg = q->nseg;
	q->iov[0] = (struct iovec){&q->head, head};
	nseg = q->nseg;
	total = q->data;
	digest = prw_digest(q->head.segs, nseg);
	err = transact(call, addr, &mh, head + total, PRW_OP_WRITE, ECHO_SEGS,
		       nseg, total, digest);
	if (err)
		write_refused(call, addr, total, err);
	q->nseg = 0;
	q->niov = 1;
	q->data = 0;
}

/*
 * A segment of @total bytes at @dst (from @src, or filled with @fill) into
 * @q, flushed as the message limits require; one larger than a message
 * goes alone, as a call in pieces (call_put()), applied in order as
 * separate writes would be.
 *
 * @q->waited: the segment was checked before a lock wait (the core's
 * checks, then write_lock and req_lock): it is checked again against the
 * region table here, as is every segment after a request of this call was
 * sent and answered (a wait, with the arguments saved on the stack).
 */
static void req_add(const char *call, struct req *q, uintptr_t dst,
		    const void *src, size_t total, int fill)
{
	if (q->nseg == REQ_SEGS ||
	    (src && total > data_max() - q->data && q->nseg)) {
		req_flush(call, q->addr, q);
		q->waited = true;
	}
	if (q->waited)
		seg_recheck(call, dst, total);
	if (src && total > data_max()) {
		call_put(call, dst, src, total, fill);
		q->waited = true;
		return;
	}
	q->head.segs[q->nseg++] = (struct prw_seg){
		.dst = dst,
		.len = total,
		.flags = src ? 0 : PRW_SEG_FILL,
		.fill = fill,
	};
	if (src) {
		q->iov[q->niov++] = (struct iovec){(void *)src, total};
		q->data += total;
	}
}

static void req_init(struct req *q, const void *addr, bool waited)
{
	memset(&q->head.m, 0, sizeof(q->head.m));
	q->nseg = 0;
	q->niov = 1;
	q->data = 0;
	q->addr = addr;
	q->waited = waited;
}

/* @n segments as few requests as the message limits allow, in order. */
static void submit(const char *call, const struct rw_seg *segs, unsigned n,
		   bool waited)
{
	struct req q;

	req_init(&q, segs[0].dst, waited);
	for (unsigned i = 0; i < n; i++)
		req_add(call, &q, (uintptr_t)segs[i].dst, segs[i].src,
			segs[i].len, segs[i].fill);
	req_flush(call, q.addr, &q);
}

/* @recheck: the segments are a caller's, checked before the locks (not a
 * pool's own range from its table record, below its user start). */
static void process_write_call(const char *call, const struct rw_seg *segs,
			       unsigned n, bool recheck)
{
	rw_reglock_read(&write_lock);
	rw_reglock_write(&req_lock);
	submit(call, segs, n, recheck);
	rw_reglock_write_unlock(&req_lock);
	rw_reglock_read_unlock(&write_lock);
}

/*
 * A new pool's head, @len bytes at @src, as one HEAD request (req_lock
 * held): it names no destination, the helper writes it at the start of
 * the pool the core's table records as being created, bookkeeping still
 * open (process_ring.h). Sent as a write, its destination waited in the
 * request in memory for sendmsg(2), where a store aimed the head at the
 * section (27n). The core reads the head back after.
 */
static inline __attribute__((always_inline)) void
head_put(const char *call, const void *addr, const void *src, size_t len)
{
	struct prw_msg m;
	struct iovec iov[2];
	struct msghdr mh;
	int err;

	if (len > data_max())
		rw_die(call, addr,
		       "a %zu-byte pool head does not fit one request", len);
	m = (struct prw_msg){.op = 0};
	iov[0] = (struct iovec){&m, sizeof(m)};
	iov[1] = (struct iovec){(void *)src, len};
	mh = (struct msghdr){.msg_iov = iov, .msg_iovlen = 2};
	err = transact(call, addr, &mh, sizeof(m) + len, PRW_OP_HEAD, ECHO_NONE,
		       0, 0, 0);
	if (err)
		rw_die(call, addr,
		       "the process backend's helper refused the new pool's "
		       "head: %s (not the creation the library's table "
		       "records?)",
		       strerror(-err));
}

/*
 * One aligned 1, 2, 4 or 8-byte write of @v (@len bytes) at @a, req_lock
 * held and @a checked: the request is built here, inline, from the
 * registers the check used, and the helper's echo of what it applied is
 * compared with those registers (not with the request, which sat in
 * memory until sendmsg(2) copied it, where a store could redirect it:
 * scribbler 15a, 15b). A difference kills the process: the write the
 * helper made instead dies with it.
 */
static inline __attribute__((always_inline)) void
unit_put(const char *call, uint64_t al, uint64_t v)
{
	uintptr_t a;
	size_t len;
	struct {
		struct prw_msg m;
		struct prw_seg seg;
		union {
			uint8_t u8;
			uint16_t u16;
			uint32_t u32;
			uint64_t u64;
		} data; /* the unit at the data's start, in native order */
	} u;
	struct iovec iov;
	struct msghdr mh;
	int err;

	/* Computed here, from the register: not a copy the compiler made for
	 * the check before and kept on the stack since. */
	rw_in_register(al);
	a = al & UNIT_ADDR;
	len = al >> UNIT_SHIFT;
	u.m = (struct prw_msg){.nseg = 1};
	u.seg = (struct prw_seg){.dst = a, .len = len};
	switch (len) {
	case 1:
		u.data.u8 = (uint8_t)v;
		break;
	case 2:
		u.data.u16 = (uint16_t)v;
		break;
	case 4:
		u.data.u32 = (uint32_t)v;
		break;
	default:
		u.data.u64 = v;
	}
	iov = (struct iovec){&u, sizeof(u.m) + sizeof(u.seg) + len};
	mh = (struct msghdr){.msg_iov = &iov, .msg_iovlen = 1};
	/* From here @al and @v are only compared: named once more as
	 * registers, so that a compiler that spilled the copies it used for
	 * the request does not compare with those. */
	__asm__ volatile("" : "+r"(al), "+r"(v));
	err = transact(call, (void *)a, &mh, sizeof(u.m) + sizeof(u.seg) + len,
		       PRW_OP_WRITE, ECHO_UNIT, al, 0, v);
	if (err)
		write_refused(call, (void *)a, len, err);
}

/* Unlock and die: a write whose region changed while it waited. */
static __attribute__((noreturn, noinline, cold)) void moved(const char *call,
							    uintptr_t a)
{
	rw_reglock_write_unlock(&req_lock);
	rw_reglock_read_unlock(&write_lock);
	rw_seg_moved(call, (void *)a);
}

/*
 * Any write but an aligned 1, 2, 4 or 8-byte one: the locks first (inline:
 * the arguments stay in registers through their waits), then the
 * arguments checked against the table and sent as a call (call_put()):
 * no segment on the stack from the check to the request (27i: a 3-byte
 * copy made 16 there ran over into the next protected object). The
 * request itself is built in memory, as sendmsg(2) needs it, where a
 * store can still rewrite it: the helper's echo of the call it applied
 * is compared with the destination and length this check held in
 * registers, and the rest of a call in pieces goes where the helper,
 * which keeps the call, says.
 */
static __attribute__((noinline)) void
process_write_segs(const struct rw_region *r, const char *call, void *dst,
		   const void *src, size_t len, int fill)
{
	rw_reglock_read(&write_lock);
	rw_reglock_write(&req_lock);
	/* Inline, no call that would save @dst for a store to move. */
	if (!rw_region_holds(r, &rw_backend_process, (uintptr_t)dst, len))
		moved(call, (uintptr_t)dst);
	/* The start of a pool whose bookkeeping is open: only a new pool's
	 * head goes there (rw_region_create()), and it goes as a HEAD. Loads
	 * of the table's record, no call, no system call. */
	if ((uintptr_t)dst == r->start && src && r->user_start == r->start &&
	    __atomic_load_n(&r->kind, __ATOMIC_ACQUIRE) == RW_REGION_POOL)
		head_put(call, dst, src, len);
	else
		call_put(call, (uintptr_t)dst, src, len, fill);
	rw_reglock_write_unlock(&req_lock);
	rw_reglock_read_unlock(&write_lock);
}

/*
 * An aligned 1, 2, 4 or 8-byte write (rare_write(), rare_write_add())
 * goes by unit_put(): its value loaded first (as mprotect's and
 * shadow's), then the locks (inline), the check against the table, the
 * request built from the registers the check used and the helper's echo
 * compared with them, with no call from the check to the comparison: a
 * callee would save them where another thread rewrites them (15a, 15b,
 * 25c). A unit write at the start of a pool being created goes as a
 * WRITE too (a new pool's head is longer): were its destination moved in
 * the request, the echo would not match and the call would die (27n).
 * Any other write is process_write_segs()'s.
 */
static void process_write_one(const struct rw_region *r, const char *call,
			      void *dst, const void *src, size_t len, int fill)
{
	uint64_t al = (uintptr_t)dst | (uint64_t)len << UNIT_SHIFT, v;

	if (!RW_RAWSYS_INLINE || !rw_is_unit((uintptr_t)dst, len) ||
	    (uintptr_t)dst > UNIT_ADDR) {
		process_write_segs(r, call, dst, src, len, fill);
		return;
	}
	v = src ? rw_load_unit(src, len)
		: 0x0101010101010101ULL * (unsigned char)fill;
	if (len < 8)
		v &= (1ULL << (8 * len)) - 1;
	/* Destination and length in one register from here (UNIT_SHIFT). */
	rw_in_register(r);
	rw_in_register(al);
	rw_in_register(v);
	rw_reglock_read(&write_lock);
	rw_reglock_write(&req_lock);
	if (!rw_region_holds(r, &rw_backend_process, al & UNIT_ADDR,
			     al >> UNIT_SHIFT))
		moved(call, al & UNIT_ADDR);
	unit_put(call, al, v);
	rw_reglock_write_unlock(&req_lock);
	rw_reglock_read_unlock(&write_lock);
}

/*
 * Zeroes over a sealed pool's whole view, which stays mapped until exit:
 * one WIPE, which names no range (process_ring.h). A range sent to the
 * helper sits in the request in memory until sendmsg(2) copies it, and a
 * store there aimed the zeroes at another live pool, which the helper
 * serves as well (27p: built after the locks from the table's record, it
 * still landed at the first trial). So the helper takes the range from
 * the core's table, whose memfd it shares: the record the core marked
 * free for the destroy in progress, the region it registered for that
 * record, nothing else. The answer names the memfd it zeroed: @r's (from
 * the table, in a register), or the call dies. Writers held off, as for a
 * write: a fork copies the memfds meanwhile.
 */
static void zero_sealed(const struct rw_region *r)
{
	int err;

	rw_reglock_read(&write_lock);
	err = ctl("rare_pool_destroy", (void *)r->start, PRW_OP_WIPE, 0, 0, 0,
		  -1, r->fd);
	rw_reglock_read_unlock(&write_lock);
	if (err)
		rw_die("rare_pool_destroy", (void *)r->start,
		       "the process backend's helper refused to zero the "
		       "sealed pool being destroyed: %s (not the destroy the "
		       "library's table records?)",
		       strerror(-err));
}

static void process_write(const struct rw_seg *seg)
{
	process_write_call(seg->src ? "rare_write_memcpy" : "rare_write_memset",
			   seg, 1, true);
}

/* map hands out a private staging copy; unmap commits it in one request. */
static void *process_map(struct rw_region *r, void *addr, size_t len)
{
	(void)r;
	return rw_staging_copy(addr, len);
}

/* The commit is a single write, on its path that keeps the call's target
 * and length in registers and compares them with the helper's echo (15e:
 * a segment on the stack here went through the digest path). */
static void process_unmap(struct rw_region *r, void *view, void *addr,
			  size_t len)
{
	process_write_one(r, "rare_write_unmap", addr, view, len, 0);
	free(rw_unmapping_view());
}

static void process_fork_prepare(void)
{
	rw_reglock_write(&write_lock);
}

static void process_fork_parent(void)
{
	rw_reglock_write_unlock(&write_lock);
}

static void process_fork_child(void)
{
	struct rw_region *r;
	int err;

	/* Drop the parent's socket, the only channel to its helper; its
	 * answer page was not inherited (MADV_DONTFORK). */
	close(ctl_fd());
	rw_backend_word_set(RW_BACKEND_PROCESS, W_SOCK, 0);
	rw_backend_word_set(RW_BACKEND_PROCESS, W_ANSWER, 0);
	/* A snapshot of every region while the parent's writers wait, read
	 * from the parent's memfd (the view was not inherited). */
	rw_for_each_region(r) {
		void *old;
		int fd;

		if (r->backend != &rw_backend_process || !r->protected_)
			continue;
		old = mmap(NULL, r->len, PROT_READ, MAP_SHARED, r->fd, 0);
		fd = old == MAP_FAILED ? -errno
				       : memfd_new("rarewrite", r->len, old);
		if (old != MAP_FAILED)
			munmap(old, r->len);
		if (fd < 0)
			rw_die("fork", (void *)r->start,
			       "child cannot take a private copy of protected "
			       "memory: %s",
			       strerror(-fd));
		close(r->fd);
		r->fd = fd;
	}
	/* Only this thread runs in the child: nobody holds or waits. */
	write_lock = 0;
	req_lock = 0;
	err = helper_start();
	if (err)
		rw_die("fork", NULL,
		       "child cannot start its own process-backend helper: %s",
		       strerror(-err));
	rw_for_each_region(r) {
		if (r->backend != &rw_backend_process || r->fd < 0)
			continue;
		err = region_register("fork", r, r->fd);
		if (err)
			rw_die("fork", (void *)r->start,
			       "child cannot register its copy with its "
			       "helper: %s",
			       strerror(-err));
	}
}

const struct rw_backend rw_backend_process = {
	.name = "process",
	.caps = 0,
	.dontfork_views = true,
	.setup = process_setup,
	.adopt = process_adopt,
	.create = process_create,
	.destroy = process_destroy,
	.write = process_write,
	.write_one = process_write_one,
	.map = process_map,
	.unmap = process_unmap,
	.fork_prepare = process_fork_prepare,
	.fork_parent = process_fork_parent,
	.fork_child = process_fork_child,
};
