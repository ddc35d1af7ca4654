// SPDX-License-Identifier: MIT
/*
 * syscount.c - the system calls each operation costs, counted, not timed.
 *
 * A write costs what its mechanism needs (docs/backends.md, "System calls
 * per operation"): one pwrite(), a map/unmap pair, an mprotect pair, none
 * for pkey, one round trip for process. Anything more (a getpid() per
 * write, a lock that sleeps, a stray mmap) shows up here as a count, the
 * same on a busy machine as on a quiet one.
 *
 * The program forks a child that runs the operations under ptrace: the
 * parent stops it at every system call entry (PTRACE_GET_SYSCALL_INFO) and
 * counts those between two marker calls (an unused system call number) the
 * child makes around N operations, after a warm-up. It fails when a count
 * exceeds N times the documented figure, and prints what was called.
 *
 * Usage: syscount BACKEND   (one this machine offers; the figures are
 * the table below).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rarewrite.h>

#define NR_OPS 1000
#define NR_WARMUP 32
#define MARKER_NR 0x7fff /* no such system call: ENOSYS, seen by the tracer */

enum op { WRITE8, MEMCPY4K, MAP_UNMAP, BEGIN_END, ADD8, ALLOC64, NR_OP };

static const char *const op_name[NR_OP] = {
	[WRITE8] = "rare_write 8 B",
	[MEMCPY4K] = "rare_write_memcpy 4 KiB",
	[MAP_UNMAP] = "rare_write_map + rare_write_unmap 256 B",
	[BEGIN_END] = "rare_write_begin + 8 stores + rare_write_end",
	[ADD8] = "rare_write_add 8 B",
	[ALLOC64] = "rare_alloc + rare_free 64 B",
};

/*
 * System calls per operation, as docs/backends.md states them; -1: not
 * counted. A map/unmap pair adds four pwrite()s to the mechanism's own:
 * the open map's record goes into the table and out of it (vault.c), and
 * each of map and unmap first puts its request there (core.c,
 * map_request_put(): what it uses after a function call, scribbler 15e);
 * one more where the backend hands out a view of its own (pwrite, shadow,
 * process): map puts the view there from the register it came back in
 * (map_view_put(), 27s), for the record and unmap to take. The
 * mprotect backend's window also writes its thread's window count into
 * its vault at begin and at end, one pwrite() each (the thread is
 * known by its FS base register, no gettid()). rare_write_add()
 * blocks signals and restores them (two rt_sigprocmask()) and takes and
 * gives the add lock (klock.h: a read() and a write() of its pipe)
 * around its write: 4 + the write. rare_alloc() and rare_free() take and
 * give the pool lock (2 each) around their bookkeeping writes: one write
 * for an allocation from a page in use, three for its free (pwrite: one of
 * them a pwritev(); process: two requests in all), so a pair costs 4 and
 * the mechanism's cost of four writes (process: three). pkey's mechanism
 * costs none: a window and a single write are WRPKRU only (its thread
 * records are found by the thread pointer, thread_self.h, not gettid()),
 * and its map, add and pool pay only the common parts above. Counted
 * where the CPU has PKU.
 */
static const struct figures {
	const char *backend;
	int per_op[NR_OP];
} figures[] = {
	{"pkey", {0, 0, 0 + 4, 0, 4 + 0, 4 + 0}},
	{"pwrite", {1, 1, 1 + 5, -1, 4 + 1, 4 + 1 + 3}},
	{"shadow", {2, 2, 2 + 5, -1, 4 + 2, 4 + 2 + 6}},
	{"mprotect", {2, 2, 2 + 2 + 4, 2 + 2, 4 + 2, 4 + 2 + 6}},
	/* sendmsg(); the futex wait for the answer (none when it came
	 * first) is counted apart, at most one per operation */
	{"process", {1, 1, 1 + 5, -1, 4 + 1, 4 + 1 + 2}},
};

static struct prot {
	uint64_t word __attribute__((aligned(4096)));
	uint64_t words[8];
	uint64_t counter;
	unsigned char area[256];
	unsigned char buf4k[4096] __attribute__((aligned(4096)));
} prot __wr_rare;

static unsigned char src4k[4096];
static struct rare_pool *pool;

static void marker(long phase, long op)
{
	syscall(MARKER_NR, phase, op);
}

static void run_op(enum op op, uint64_t i)
{
	struct rare_write_mapping m;
	void *obj;

	switch (op) {
	case WRITE8:
		rare_write(prot.word, i);
		break;
	case MEMCPY4K:
		src4k[0] = (unsigned char)i;
		rare_write_memcpy(prot.buf4k, src4k, sizeof(src4k));
		break;
	case MAP_UNMAP:
		m = rare_write_map(prot.area, sizeof(prot.area));
		memset(m.addr, (int)i, sizeof(prot.area));
		rare_write_unmap(m);
		break;
	case BEGIN_END:
		rare_write_begin();
		for (unsigned j = 0; j < 8; j++)
			__atomic_store_n(&prot.words[j], i, __ATOMIC_RELAXED);
		rare_write_end();
		break;
	case ADD8:
		rare_write_add(prot.counter, 1);
		break;
	case ALLOC64:
		obj = rare_alloc(pool, 64);
		if (!obj)
			abort();
		rare_free(pool, obj);
		break;
	default:
		abort();
	}
}

/* The traced child: every operation of the backend, each between markers. */
static int tracee(const struct figures *f)
{
	int err;

	if (ptrace(PTRACE_TRACEME, 0, 0, 0) || raise(SIGSTOP))
		return 2;
	err = rare_write_init();
	if (err || strcmp(rare_write_backend(), f->backend)) {
		fprintf(stderr, "syscount: %s: init: %s (backend %s)\n",
			f->backend, strerror(-err), rare_write_backend());
		return 2;
	}
	for (int op = 0; op < NR_OP; op++) {
		if (f->per_op[op] < 0)
			continue;
		/* The pool last: a region more for mprotect's windows to
		 * flip. */
		if (op == ALLOC64 && !(pool = rare_pool_create(16 * 4096)))
			return 2;
		for (uint64_t i = 0; i < NR_WARMUP; i++)
			run_op(op, i);
		marker(1, op);
		for (uint64_t i = 0; i < NR_OPS; i++)
			run_op(op, i);
		marker(0, op);
	}
	if (prot.word != NR_OPS - 1)
		return 3;
	return 0;
}

static const char *syscall_name(long nr)
{
	switch (nr) {
	case SYS_getpid:
		return "getpid";
	case SYS_gettid:
		return "gettid";
	case SYS_pwrite64:
		return "pwrite64";
	case SYS_pwritev:
		return "pwritev";
	case SYS_mmap:
		return "mmap";
	case SYS_munmap:
		return "munmap";
	case SYS_mprotect:
		return "mprotect";
	case SYS_futex:
		return "futex";
	case SYS_sendmsg:
		return "sendmsg";
	case SYS_recvfrom:
		return "recvfrom";
	case SYS_recvmsg:
		return "recvmsg";
	case SYS_brk:
		return "brk";
	case SYS_arch_prctl:
		return "arch_prctl";
	case SYS_madvise:
		return "madvise";
	default:
		return NULL;
	}
}

#define MAX_NR 1024

/*
 * Where the kernel has not enabled FSGSBASE (no RDFSBASE), a window asks
 * arch_prctl() who the thread is (thread_self.h): mprotect once at begin
 * and once at end; pkey at each look at the thread's record, four at each
 * (the record, then the settle loop's three checks, which recompute it
 * on purpose: ERIM's rule).
 */
static int figure(const struct figures *f, int op)
{
	bool window = op == MAP_UNMAP || op == BEGIN_END;

	if (!window || getauxval(AT_HWCAP2) & 2 /* HWCAP2_FSGSBASE */)
		return f->per_op[op];
	if (!strcmp(f->backend, "mprotect"))
		return f->per_op[op] + 2;
	if (!strcmp(f->backend, "pkey"))
		return f->per_op[op] + 8;
	return f->per_op[op];
}

/* Report one operation's count: 0 when within its figure, and the process
 * backend's waits for an answer at most one per operation. */
static int verdict(const struct figures *f, int op, const unsigned long *hist,
		   unsigned long polls, unsigned long waits)
{
	unsigned long total = 0, limit = (unsigned long)figure(f, op) * NR_OPS;
	bool bad;
	char what[512] = "";
	size_t n = 0;

	for (long nr = 0; nr < MAX_NR; nr++) {
		const char *name = syscall_name(nr);

		if (!hist[nr])
			continue;
		total += hist[nr];
		if (n >= sizeof(what))
			continue;
		if (name)
			n += (size_t)snprintf(what + n, sizeof(what) - n,
					      "%s %s %lu", n ? "," : "", name,
					      hist[nr]);
		else
			n += (size_t)snprintf(what + n, sizeof(what) - n,
					      "%s #%ld %lu", n ? "," : "", nr,
					      hist[nr]);
	}
	if (waits && n < sizeof(what))
		n += (size_t)snprintf(
			what + n, sizeof(what) - n,
			" (and %lu waits for the helper's answer)", waits);
	if (polls && n < sizeof(what))
		snprintf(what + n, sizeof(what) - n,
			 " (and %lu polls: answer waits that ran out or found "
			 "the answer, empty recv()s)",
			 polls);
	bad = total > limit || waits > NR_OPS;
	printf("%s %s: %s: %.2f system calls per operation (documented: %d)"
	       "%s%s\n",
	       bad ? "FAIL" : "ok  ", f->backend, op_name[op],
	       (double)total / NR_OPS, figure(f, op), total ? ";" : "", what);
	return bad;
}

static int tracer(pid_t child, const struct figures *f)
{
	static unsigned long hist[MAX_NR];
	unsigned long polls = 0, waits = 0;
	bool last_wait = false;
	long last_nr = -1;
	int status, failed = 0, counting = 0, seen = 0;

	if (waitpid(child, &status, 0) != child || !WIFSTOPPED(status))
		return 2;
	if (ptrace(PTRACE_SETOPTIONS, child, 0,
		   PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL))
		return 2;
	for (int sig = 0;;) {
		struct __ptrace_syscall_info info;

		if (ptrace(PTRACE_SYSCALL, child, 0, sig))
			return 2;
		sig = 0;
		if (waitpid(child, &status, 0) != child)
			return 2;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			sig = WSTOPSIG(status); /* the child's own signal */
			continue;
		}
		if (ptrace(PTRACE_GET_SYSCALL_INFO, child, sizeof(info),
			   &info) <= 0)
			return 2;
		/*
		 * The process backend waits for its answer with one shared
		 * FUTEX_WAIT (relative timeout: no clock read; before that
		 * a FUTEX_WAIT_BITSET; no lock of the library's or the C
		 * library's is a shared futex), and only when the answer is
		 * not there yet: whether it does depends on timing, so those
		 * waits are counted apart, at most one per operation. One
		 * that runs out (every 50 ms, to look for the helper's death
		 * on the socket: a recv() that finds nothing, EAGAIN), finds
		 * the answer already there (EAGAIN) or is interrupted is a
		 * poll, and so is that recv().
		 */
		if (info.op == PTRACE_SYSCALL_INFO_EXIT && counting &&
		    ((last_nr == SYS_recvfrom && info.exit.rval == -EAGAIN) ||
		     (last_wait && (info.exit.rval == -ETIMEDOUT ||
				    info.exit.rval == -EAGAIN ||
				    info.exit.rval == -EINTR)))) {
			if (last_wait)
				waits--;
			else
				hist[last_nr]--;
			polls++;
		}
		if (info.op != PTRACE_SYSCALL_INFO_ENTRY)
			continue;
		last_nr = (long)info.entry.nr;
		last_wait = info.entry.nr == SYS_futex &&
			    (info.entry.args[1] == FUTEX_WAIT ||
			     info.entry.args[1] == FUTEX_WAIT_BITSET);
		if (counting && last_wait) {
			waits++;
			continue;
		}
		if (info.entry.nr == MARKER_NR) {
			int op = (int)info.entry.args[1];

			if (op < 0 || op >= NR_OP)
				return 2;
			counting = (int)info.entry.args[0];
			if (counting) {
				memset(hist, 0, sizeof(hist));
				polls = waits = 0;
			} else {
				failed |= verdict(f, op, hist, polls, waits);
				seen++;
			}
			continue;
		}
		if (counting)
			hist[info.entry.nr < MAX_NR ? info.entry.nr : 0]++;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr,
			"FAIL %s: the traced child ended with status %#x\n",
			f->backend, status);
		return 1;
	}
	return failed || !seen;
}

int main(int argc, char **argv)
{
	const struct figures *f = NULL;
	unsigned i;
	const char *name;
	pid_t child;

	if (argc != 2) {
		fprintf(stderr, "usage: %s BACKEND\n", argv[0]);
		return 2;
	}
	for (i = 0; i < sizeof(figures) / sizeof(figures[0]); i++)
		if (!strcmp(figures[i].backend, argv[1]))
			f = &figures[i];
	for (i = 0; (name = rare_write_backends(i, NULL)); i++)
		if (!strcmp(name, argv[1]))
			break;
	if (!f || !name) {
		fprintf(stderr, "syscount: no figures for backend %s\n",
			argv[1]);
		return 2;
	}
	if (setenv("RAREWRITE_BACKEND", f->backend, 1))
		return 2;
	child = fork();
	if (child < 0)
		return 2;
	if (!child)
		_exit(tracee(f));
	return tracer(child, f);
}
