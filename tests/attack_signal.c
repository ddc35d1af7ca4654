// SPDX-License-Identifier: MIT
/*
 * attack_signal.c - scenarios 11 and 12: the state the library keeps about
 * threads and signals, and the pointers it follows.
 *
 * 11a forges every thread-local object of the library (and, separately,
 * leaves a rare_write_memcpy by siglongjmp from a fault in its source)
 * before a legitimate write; 11b rewrites the saved PKRU of a signal frame
 * while the handler runs, and races the rewrite against sigreturn; 11c has
 * a handler make a legitimate write while it interrupts a window or map;
 * 12a points every pointer of the library at read-only state to a fake
 * copy during a window; 12b points the library's function pointers (the
 * program's signal actions, a cached pthread_create) at a gadget.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "attack.h"

/* [0] the program writes it, [1] the attacker wants it; same page. */
static uint64_t svictim[2] __wr_rare __attribute__((aligned(16)));

static bool victim_writable(void)
{
	return attack_try_store64(&svictim[1], ATTACK_MARKER) &&
	       attack_load64(&svictim[1]) == ATTACK_MARKER;
}

/* Run @fn in a forked child of the scenario: true when it exits 42
 * (the attack landed). */
static bool in_child(void (*fn)(void))
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork failed");
	if (!pid) {
		fn();
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 42;
}

/* ---- 11a --------------------------------------------------------------- */

static void forge_tls(const char *name, void *addr, size_t size, bool tls,
		      bool ours, void *arg)
{
	(void)arg;
	/* core's window depth is a documented hint (7f); forging it makes
	 * the write below a plain store, which proves nothing here. */
	if (!tls || !ours || !strcmp(name, "rw_window_depth"))
		return;
	memset(addr, 0x01, size); /* flags set, every count and mask 1s */
}

static void forged_tls_then_write(void)
{
	attack_lib_each_object(forge_tls, NULL);
	rare_write(svictim[0], 1UL);
	_exit(victim_writable() ? 42 : 0);
}

static sigjmp_buf memcpy_jmp;

static void leave_fault(int sig)
{
	(void)sig;
	siglongjmp(memcpy_jmp, 1);
}

static void longjmp_out_of_memcpy(void)
{
	struct sigaction sa = {.sa_handler = leave_fault,
			       .sa_flags = SA_NODEFER};
	void *bad =
		mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	if (!sigsetjmp(memcpy_jmp, 1))
		rare_write_memcpy(&svictim[0], bad, sizeof(svictim[0]));
	rare_write(svictim[0], 2UL); /* any later legitimate write */
	_exit(victim_writable() ? 42 : 0);
}

ATTACK("11a", tls_gate_state,
       "forge the library's thread-local window/gate state (or leave a "
       "`rare_write_memcpy` by `siglongjmp` from a fault), then a legitimate "
       "write")
{
	bool forged, jumped;

	attack_begin();
	forged = in_child(forged_tls_then_write);
	jumped = in_child(longjmp_out_of_memcpy);
	if (forged || jumped)
		attack_report(ATTACK_OPEN, "%s%s%s", forged ? "forged TLS" : "",
			      forged && jumped ? ", " : "",
			      jumped ? "siglongjmp out of memcpy" : "");
	attack_report(ATTACK_BLOCKED,
		      "store after the write faulted in both cases");
}

/* ---- 11b --------------------------------------------------------------- */

#define XFEATURE_PKRU 9

/* How long the race with sigreturn may take to land. It lands within a
 * signal or two while the two threads run at once; on CPUs busy with other
 * work they rarely do, and it lands when the scheduler preempts the
 * signalled thread inside the window instead: up to 28 s measured with
 * both threads on one CPU (docs/attack-matrix.md, 11b). A race lost is no
 * proof that the window is closed, so the budget is generous: longer than
 * the attack child's alarm() of 60 s (attack_run()), which the race
 * re-arms, and below the runner's 120 s per case. */
#define RACE_SECONDS 90

static unsigned pkru_offset;
static ucontext_t *volatile frame;
static volatile int frame_phase; /* 1 published, 2 forged */
static volatile bool race_on, race_stop;

static uint32_t rdpkru(void)
{
	uint32_t eax, edx;

	__asm__ volatile("rdpkru" : "=a"(eax), "=d"(edx) : "c"(0) : "memory");
	return eax;
}

/* The saved PKRU of @uc, marked in use so that sigreturn loads it. */
static uint32_t *saved_pkru(ucontext_t *uc)
{
	unsigned char *fx = (unsigned char *)uc->uc_mcontext.fpregs;

	*(uint64_t *)(fx + 512) |= 1ULL << XFEATURE_PKRU;
	return (uint32_t *)(fx + pkru_offset);
}

static void *frame_forger(void *unused)
{
	(void)unused;
	while (!race_stop) {
		ucontext_t *uc = frame;

		if (!uc)
			continue;
		if (race_on) { /* keep writing until A is back */
			*saved_pkru(uc) = 0;
			continue;
		}
		if (frame_phase == 1) {
			*saved_pkru(uc) = 0; /* every key writable */
			frame_phase = 2;
		}
	}
	return NULL;
}

static double seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void publishing_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	frame = uc;
	if (race_on)
		return; /* the forger writes on, past our return */
	frame_phase = 1;
	while (frame_phase != 2)
		;
}

ATTACK("11b", frame_pkru,
       "forge the saved PKRU in a signal frame while the handler runs, or "
       "race it against sigreturn")
{
	struct sigaction sa = {.sa_sigaction = publishing_handler,
			       .sa_flags = SA_SIGINFO | SA_ONSTACK};
	stack_t ss = {.ss_size = 1 << 16};
	unsigned a, b, c, d, landed = 0, tries = 0;
	double start, end;
	pthread_t t;

	if (strcmp(rare_write_backend(), "pkey"))
		attack_report(ATTACK_NA, "no PKRU: not the pkey backend");
	__cpuid_count(0xd, XFEATURE_PKRU, a, b, c, d);
	(void)c;
	(void)d;
	pkru_offset = b;
	/* The frames go on a stack of their own, which nothing else uses
	 * while the forger keeps writing. */
	ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ss.ss_sp == MAP_FAILED || sigaltstack(&ss, NULL))
		attack_report(ATTACK_ERROR, "sigaltstack failed");
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	if (pthread_create(&t, NULL, frame_forger, NULL))
		attack_report(ATTACK_ERROR, "pthread_create failed");
	attack_begin();
	/* The handler waits until its frame is forged. */
	raise(SIGUSR1);
	frame = NULL;
	if (victim_writable()) {
		race_stop = true;
		attack_report(ATTACK_OPEN, "frame forged during the handler");
	}
	/* The residual race: the forger writes from the handler's return
	 * to sigreturn's XRSTOR, for up to RACE_SECONDS. */
	race_on = true;
	alarm(RACE_SECONDS + 10);
	start = seconds_now();
	end = start + RACE_SECONDS;
	while (!landed && (tries % 1024 || seconds_now() < end)) {
		raise(SIGUSR1);
		frame = NULL;
		tries++;
		if (!(rdpkru() & 0xfffffffcu)) /* every key but 0 open */
			landed++;
	}
	race_stop = true;
	pthread_join(t, NULL);
	if (landed && victim_writable())
		attack_report(ATTACK_OPEN,
			      "forging during the handler blocked; the race "
			      "with sigreturn landed after %u signals (%.2f s)",
			      tries, seconds_now() - start);
	if (landed)
		attack_report(ATTACK_ERROR, "every key open after sigreturn, "
					    "yet the store faulted");
	attack_report(ATTACK_BLOCKED,
		      "forged frames corrected (%u races in %d s)", tries,
		      RACE_SECONDS);
}

/* ---- 11c --------------------------------------------------------------- */

static volatile bool handler_landed, handler_wrote;

static void writing_handler(int sig)
{
	(void)sig;
	rare_write(svictim[0], 3UL); /* legitimate, in the handler */
	handler_wrote = svictim[0] == 3;
	handler_landed = victim_writable();
}

ATTACK("11c", handler_inherits_window,
       "a handler that interrupts a window or map makes a legitimate write, "
       "then a plain store")
{
	struct sigaction sa = {.sa_handler = writing_handler};
	struct rare_write_mapping m;
	bool map_landed, window_landed = false;

	uint64_t scratch = 0;

	attack_try_store64(&scratch, 1); /* installs its fault handler */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	attack_begin();
	m = rare_write_map(&svictim[0], sizeof(svictim[0]));
	raise(SIGUSR1);
	rare_write_unmap(m);
	map_landed = handler_landed;
	if (map_landed) /* before the window case, which may kill us */
		attack_report(ATTACK_OPEN, "handler's store landed (map)");
	if (rare_write_caps() & RARE_WRITE_CAP_BEGIN_END) {
		handler_landed = false;
		rare_write_begin();
		raise(SIGUSR1);
		rare_write_end();
		window_landed = handler_landed;
	}
	if (map_landed || window_landed)
		attack_report(ATTACK_OPEN, "handler's store landed (%s)",
			      map_landed ? "map" : "begin/end");
	attack_report(ATTACK_BLOCKED, "handler's store faulted");
}

/* ---- 12a --------------------------------------------------------------- */

struct redirect {
	unsigned found, moved;
};

/* Whether @addr is mapped and read-only (a page of the library's state
 * that it reaches through a pointer). */
static bool read_only_page(uintptr_t addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool ro = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 &&
		    addr >= lo && addr < hi) {
			ro = perms[0] == 'r' && perms[1] == '-' &&
			     perms[2] != 'x';
			break;
		}
	}
	fclose(f);
	return ro;
}

/* A pointer of the library into read-only data: point it at a writable
 * copy of that page in which every small count is one higher. */
static void redirect_pointer(const char *name, void *addr, size_t size,
			     bool tls, bool ours, void *arg)
{
	struct redirect *r = arg;
	uintptr_t target, page;
	uint64_t *fake;

	(void)name;
	if (tls || !ours || size != sizeof(void *))
		return;
	target = *(uintptr_t *)addr;
	if (target < 4096 || !read_only_page(target))
		return;
	page = target & ~(uintptr_t)4095;
	r->found++;
	fake = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fake == MAP_FAILED)
		return;
	memcpy(fake, (void *)page, 4096);
	for (size_t i = 0; i < 4096 / 8; i++)
		if (fake[i] && fake[i] < 65536)
			fake[i]++;
	if (attack_try_store64(addr, (uintptr_t)fake + (target - page)))
		r->moved++;
}

ATTACK("12a", state_pointers,
       "point every pointer the library follows to its read-only state at a "
       "fake copy during a window")
{
	struct redirect r = {0, 0};
	bool begin_end = rare_write_caps() & RARE_WRITE_CAP_BEGIN_END;
	struct rare_write_mapping m = {0};

	if (begin_end)
		rare_write_begin();
	else
		m = rare_write_map(&svictim[0], sizeof(svictim[0]));
	attack_begin();
	attack_lib_each_object(redirect_pointer, &r);
	if (begin_end)
		rare_write_end();
	else
		rare_write_unmap(m);
	rare_write(svictim[0], 4UL);
	if (victim_writable())
		attack_report(ATTACK_OPEN,
			      "store landed after %u pointer(s) redirected",
			      r.moved);
	attack_report(ATTACK_BLOCKED, "%u pointer(s) to read-only state found",
		      r.found);
}

/* ---- 12b --------------------------------------------------------------- */

static volatile bool gadget_ran;

static void gadget(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	gadget_ran = true;
}

static int gadget_create(pthread_t *t, const pthread_attr_t *a,
			 void *(*fn)(void *), void *arg)
{
	(void)t;
	(void)a;
	(void)fn;
	(void)arg;
	gadget_ran = true;
	return EAGAIN;
}

struct overwrite {
	uintptr_t from, to;
	unsigned found, stored;
};

/* Every word of the library's own objects that holds @from. */
static void overwrite_words(const char *name, void *addr, size_t size, bool tls,
			    bool ours, void *arg)
{
	struct overwrite *o = arg;

	(void)name;
	if (tls || !ours)
		return;
	for (size_t off = 0; off + 8 <= size; off += 8) {
		uintptr_t *w = (uintptr_t *)((char *)addr + off);

		if (*w != o->from)
			continue;
		o->found++;
		if (attack_try_store64(w, o->to))
			o->stored++;
	}
}

static void *idle(void *p)
{
	return p;
}

extern int __pthread_create_2_1(pthread_t *, const pthread_attr_t *,
				void *(*)(void *), void *)
	__attribute__((weak));

ATTACK("12b", function_pointers,
       "point the library's function pointers (the program's signal "
       "actions, a cached `pthread_create`) at a gadget")
{
	struct overwrite handlers = {0, (uintptr_t)gadget, 0, 0};
	struct overwrite create = {0, (uintptr_t)gadget_create, 0, 0};
	struct sigaction cur;
	uint64_t scratch = 0;
	bool by_signal, by_create;
	pthread_t t;

	/* The recovering store installs the program's SIGSEGV action, which
	 * the library keeps on every backend: that is the target. */
	attack_try_store64(&scratch, 1);
	sigaction(SIGSEGV, NULL, &cur);
	handlers.from = (uintptr_t)cur.sa_sigaction;
	if (pthread_create(&t, NULL, idle, NULL) == 0) /* caches, if it does */
		pthread_join(t, NULL);
	create.from = (uintptr_t)__pthread_create_2_1;
	if (!create.from)
		create.from = (uintptr_t)dlsym(RTLD_NEXT, "pthread_create");
	attack_begin();
	attack_lib_each_object(overwrite_words, &handlers);
	raise(SIGSEGV); /* sent, not a fault: the action runs and returns */
	by_signal = gadget_ran;
	gadget_ran = false;
	if (create.from)
		attack_lib_each_object(overwrite_words, &create);
	if (pthread_create(&t, NULL, idle, NULL) == 0)
		pthread_join(t, NULL);
	by_create = gadget_ran;
	if (by_signal || by_create)
		attack_report(ATTACK_OPEN, "gadget ran from %s",
			      by_signal ? "the signal table"
					: "the cached pthread_create");
	attack_report(ATTACK_BLOCKED,
		      "%u handler and %u pthread_create pointer(s) found, none "
		      "stored",
		      handlers.found, create.found);
}
