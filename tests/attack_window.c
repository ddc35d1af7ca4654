// SPDX-License-Identifier: MIT
/*
 * attack_window.c - scenarios 2, 3 and 9: using somebody else's write
 * window. Another thread stores while a window is open or races single
 * writes; a signal handler stores while the window it interrupted is open;
 * a jump to the pkey gate's WRPKRU with a chosen value.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "attack.h"

/* [0] the program writes it, [1] the attacker wants it; same page. */
static uint64_t victim[2] __wr_rare __attribute__((aligned(16)));

struct handshake {
	int state; /* 0 waiting, 1 window open, 2 attacker done */
	bool stored;
	/* A map's view, when it is a private staging copy that unmap
	 * commits (pwrite, process): the thief rewrites it too. */
	uint64_t *volatile staging;
};

static void *window_thief(void *p)
{
	struct handshake *h = p;

	while (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) != 1)
		;
	h->stored = attack_try_store64(&victim[1], ATTACK_MARKER);
	if (h->staging)
		attack_try_store64(h->staging, ATTACK_MARKER);
	__atomic_store_n(&h->state, 2, __ATOMIC_RELEASE);
	return NULL;
}

ATTACK("2a", thread_in_window,
       "another thread stores while a window is open (begin/end, or a map)")
{
	struct handshake h = {0, false, NULL};
	struct rare_write_mapping m = {0};
	bool begin_end = rare_write_caps() & RARE_WRITE_CAP_BEGIN_END;
	/* shadow's view is the live alias itself: row 5b. */
	bool staging = !begin_end && strcmp(rare_write_backend(), "shadow");
	pthread_t t;

	if (pthread_create(&t, NULL, window_thief, &h))
		attack_report(ATTACK_ERROR, "pthread_create failed");
	attack_begin();
	if (begin_end)
		rare_write_begin();
	else
		m = rare_write_map(&victim[0], sizeof(victim[0]));
	if (staging) {
		*(uint64_t *)m.addr = 1; /* the program's update */
		h.staging = m.addr;
	}
	__atomic_store_n(&h.state, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&h.state, __ATOMIC_ACQUIRE) != 2)
		;
	if (begin_end)
		rare_write_end();
	else
		rare_write_unmap(m);
	pthread_join(t, NULL);
	attack_verdict(attack_load64(&victim[1]) == ATTACK_MARKER ||
			       attack_load64(&victim[0]) == ATTACK_MARKER,
		       begin_end ? "store during begin/end"
		       : staging ? "store during rare_write_map, and into its "
				   "staging view"
				 : "store during rare_write_map");
}

static void legit_write(void *arg)
{
	static uint64_t n;

	(void)arg;
	rare_write(victim[0], ++n);
}

ATTACK("2b", thread_races_write,
       "another thread races single `rare_write()` calls")
{
	attack_begin();
	attack_verdict(
		attack_race(&victim[1], ATTACK_MARKER, legit_write, NULL, 5.0),
		"racing store");
}

static void handler_store(int sig)
{
	(void)sig;
	attack_store64(&victim[1], ATTACK_MARKER);
}

ATTACK("3", signal_in_window,
       "a signal handler stores while the window it interrupted is open")
{
	bool begin_end = rare_write_caps() & RARE_WRITE_CAP_BEGIN_END;
	struct rare_write_mapping m = {0};

	signal(SIGUSR1, handler_store);
	attack_begin();
	if (begin_end)
		rare_write_begin();
	else
		m = rare_write_map(&victim[0], sizeof(victim[0]));
	raise(SIGUSR1); /* the "NMI" */
	if (begin_end)
		rare_write_end();
	else
		rare_write_unmap(m);
	attack_verdict(attack_load64(&victim[1]) == ATTACK_MARKER,
		       "store from the signal handler");
}

#if defined(__x86_64__)
/*
 * Jump straight to each WRPKRU (0f 01 ef) in the library's code (the
 * mapping holding rare_write_begin) with
 * EAX = 0 (every key writable), on a stack that returns anywhere into
 * gate_landing. A hardened gate re-checks the value and never lets PKRU stay
 * 0; an unhardened one returns with it.
 */
__attribute__((used, noreturn)) static void gate_landing_c(void)
{
	uint32_t eax, edx;

	__asm__ volatile(".byte 0x0f,0x01,0xee" /* rdpkru */
			 : "=a"(eax), "=d"(edx)
			 : "c"(0));
	/* PKRU 0 kept: the attacker's value stuck. */
	_exit(eax == 0 ? 42 : 43);
}
__asm__(".text\n"
	"gate_landing:\n"
	"	andq $-16, %rsp\n"
	"	call gate_landing_c\n");
extern char gate_landing[];

static void gate_jump(void *wrpkru)
{
	size_t len = 1 << 16;
	uintptr_t *stack = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (stack == MAP_FAILED)
		_exit(44);
	for (size_t i = 0; i < len / sizeof(*stack); i++)
		stack[i] = (uintptr_t)gate_landing;
	__asm__ volatile("movq %0, %%rsp\n"
			 "xorl %%eax, %%eax\n"
			 "xorl %%ecx, %%ecx\n"
			 "xorl %%edx, %%edx\n"
			 "jmp *%1\n"
			 :
			 : "r"(stack + len / sizeof(*stack) / 2), "r"(wrpkru)
			 : "memory");
	__builtin_unreachable();
}

ATTACK("9", pkey_gate, "WRPKRU with an attacker-chosen value via the gate")
{
	FILE *f;
	char line[512];
	unsigned sites = 0, stuck = 0;

	if (strcmp(rare_write_backend(), "pkey"))
		attack_report(ATTACK_NA, "not the pkey backend");
	f = fopen("/proc/self/maps", "r");
	if (!f)
		attack_report(ATTACK_ERROR, "cannot read /proc/self/maps");
	attack_begin();
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 ||
		    perms[2] != 'x' || (uintptr_t)rare_write_begin < lo ||
		    (uintptr_t)rare_write_begin >= hi)
			continue;
		for (unsigned char *p = (void *)lo;
		     p + 3 <= (unsigned char *)hi; p++) {
			int status;
			pid_t pid;

			if (p[0] != 0x0f || p[1] != 0x01 || p[2] != 0xef ||
			    !attack_lib_code(p))
				continue; /* not a WRPKRU of the library */
			sites++;
			pid = fork();
			if (!pid)
				gate_jump(p);
			waitpid(pid, &status, 0);
			if (WIFEXITED(status) && WEXITSTATUS(status) == 42)
				stuck++;
		}
	}
	fclose(f);
	if (!sites)
		attack_report(ATTACK_ERROR,
			      "no WRPKRU next to rare_write_begin");
	if (stuck)
		attack_report(ATTACK_OPEN, "%u of %u WRPKRU sites keep PKRU=0",
			      stuck, sites);
	attack_report(ATTACK_BLOCKED, "all %u WRPKRU sites re-check", sites);
}
#else
ATTACK("9", pkey_gate, "WRPKRU with an attacker-chosen value via the gate")
{
	attack_report(ATTACK_NA, "x86-64 only");
}
#endif
