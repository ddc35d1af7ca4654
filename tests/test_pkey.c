// SPDX-License-Identifier: MIT
/*
 * The pkey backend: per-thread windows and the PKRU traps. Every case SKIPs
 * unless the backend under test is pkey (RAREWRITE_BACKEND=pkey, or auto on
 * a machine with PKU); make check-vm runs them under QEMU, whose CPU model
 * "max" emulates PKU.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>

#include "harness.h"

static long value __wr_rare = 1;

#define AD(k) (1u << (2 * (k)))
#define WD(k) (2u << (2 * (k)))
#define INIT_PKRU 0x55555554u /* the kernel's: no access to keys 1-15 */

static bool cpu_has_pku(void)
{
	unsigned a, b, c, d;

	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 3)) &&
	       (c & (1u << 4));
}

static void need_pkey(void)
{
	const char *b = test_backend();

	if (strcmp(b, "pkey") && !(!strcmp(b, "auto") && cpu_has_pku()))
		SKIP("not the pkey backend");
}

static void init_pkey(void)
{
	need_pkey();
	init();
	CHECK(!strcmp(rare_write_backend(), "pkey"));
}

static uint32_t rdpkru(void)
{
	uint32_t eax, edx;

	__asm__ volatile("rdpkru" : "=a"(eax), "=d"(edx) : "c"(0) : "memory");
	return eax;
}

/* Protection key of the mapping holding @addr, from /proc/self/smaps. */
static int pkey_of(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false;
	int key = -1;

	CHECK(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
		else if (in && sscanf(line, "ProtectionKey: %d", &key) == 1)
			break;
	}
	fclose(f);
	return key;
}

/* The child stores to @arg; returns how it ended. */
static void store_long(void *arg)
{
	*(volatile long *)arg = 666;
}

static bool store_faults(long *p)
{
	return child_killed_by(run_in_child(store_long, p)) == SIGSEGV;
}

TEST(pkey_caps_key_and_window, EXPECT_PASS)
{
	init_pkey();
	CHECK(rare_write_caps() ==
	      (RARE_WRITE_CAP_BEGIN_END | RARE_WRITE_CAP_THREAD_LOCAL));
	CHECK(pkey_of(&value) > 0);
	CHECK(store_faults(&value));
	rare_write_begin();
	value = 5; /* a direct store inside the window lands */
	rare_write_end();
	CHECK(value == 5);
	CHECK(store_faults(&value));
	CHECK(rare_write(value, 6L) == 6);
}

TEST(pkey_unavailable_is_enotsup, EXPECT_PASS)
{
	if (cpu_has_pku())
		SKIP("this CPU has PKU");
	setenv("RAREWRITE_BACKEND", "pkey", 1);
	CHECK(rare_write_init() == -ENOTSUP);
	CHECK(!strcmp(rare_write_backend(), "none"));
}

TEST(pkey_auto_prefers_pkey, EXPECT_PASS)
{
	if (strcmp(test_backend(), "auto"))
		SKIP("only for auto");
	init();
	printf("# auto chose %s (PKU %s)\n", rare_write_backend(),
	       cpu_has_pku() ? "present" : "absent");
	CHECK(!strcmp(rare_write_backend(), cpu_has_pku() ? "pkey" : "pwrite"));
}

/* --- another thread during a window ------------------------------------ */

static int go[2];

static void *attacker_thread(void *arg)
{
	char c;

	(void)arg;
	CHECK(read(go[0], &c, 1) == 1);
	CHECK(value == 5); /* reads are free during the window */
	value = 666;	   /* SIGSEGV: the window is not this thread's */
	return NULL;
}

static void window_with_attacker(void *unused)
{
	pthread_t t;

	(void)unused;
	CHECK(!pipe(go));
	CHECK(!pthread_create(&t, NULL, attacker_thread, NULL));
	rare_write_begin();
	value = 5;
	CHECK(value == 5);
	CHECK(write(go[1], "x", 1) == 1);
	pthread_join(t, NULL);
	rare_write_end();
	_exit(3); /* the attacker's store landed */
}

TEST(pkey_other_thread_store_during_window_dies, EXPECT_PASS)
{
	int st;

	init_pkey();
	st = run_in_child(window_with_attacker, NULL);
	CHECK(child_killed_by(st) == SIGSEGV);
	CHECK(value == 1);
}

/* --- threads created before init ----------------------------------------- */

static void *early_thread(void *arg)
{
	char c;

	(void)arg;
	CHECK(read(go[0], &c, 1) == 1);
	CHECK(value == 1);
	CHECK(store_faults(&value));
	CHECK(rare_write(value, 7L) == 7);
	CHECK(value == 7);
	return NULL;
}

TEST(pkey_thread_created_before_init, EXPECT_PASS)
{
	pthread_t t;

	need_pkey();
	CHECK(!pipe(go));
	CHECK(!pthread_create(&t, NULL, early_thread, NULL));
	init_pkey();
	CHECK(write(go[1], "x", 1) == 1);
	CHECK(!pthread_join(t, NULL));
	CHECK(value == 7);
}

/*
 * A thread that predates the library's keys (dlopen into a threaded
 * program) has init_pkru: no access at all. Its first read faults and is
 * repaired to read-only; writes still fault.
 */
static sigjmp_buf init_pkru_env;

static void to_init_pkru(int sig)
{
	(void)sig;
	siglongjmp(init_pkru_env, 1); /* keeps the handler's init_pkru */
}

/* Give the calling thread the kernel's init_pkru without a WRPKRU of our
 * own (the gate tests scan the binary for stray ones). The handler is
 * installed with the C library's own __sigaction: through sigaction() the
 * library would give it read access on entry (signal.c), as it does for
 * every handler of the program. */
extern int __sigaction(int, const struct sigaction *, struct sigaction *);

static void take_init_pkru(void)
{
	struct sigaction sa = {.sa_handler = to_init_pkru}, old;

	sigemptyset(&sa.sa_mask);
	CHECK(!__sigaction(SIGUSR2, &sa, &old));
	if (!sigsetjmp(init_pkru_env, 1))
		raise(SIGUSR2);
	__sigaction(SIGUSR2, &old, NULL);
}

static void *predating_thread(void *arg)
{
	(void)arg;
	int fds[2];

	take_init_pkru();
	CHECK(rdpkru() == INIT_PKRU);
	/* The kernel honours PKRU too: no repair without a user-mode fault. */
	CHECK(!pipe(fds));
	CHECK(write(fds[1], &value, sizeof(value)) == -1 && errno == EFAULT);
	CHECK(value == 1); /* repaired by the library's SIGSEGV handler */
	CHECK((rdpkru() & AD(pkey_of(&value))) == 0);
	CHECK(rdpkru() & WD(pkey_of(&value)));
	CHECK(store_faults(&value));
	CHECK(rare_write(value, 8L) == 8);
	return NULL;
}

TEST(pkey_thread_with_init_pkru_reads_not_writes, EXPECT_PASS)
{
	pthread_t t;

	init_pkey();
	CHECK(!pthread_create(&t, NULL, predating_thread, NULL));
	CHECK(!pthread_join(t, NULL));
	CHECK(value == 8);
}

/* --- threads created inside a window ------------------------------------- */

static void *inherit_thread(void *arg)
{
	int key = pkey_of(&value);

	(void)arg;
	CHECK(value == 9);
	CHECK(rdpkru() & WD(key)); /* the window was not inherited */
	CHECK(store_faults(&value));
	CHECK(rare_write(value, 10L) == 10);
	return NULL;
}

TEST(pkey_thread_created_in_window_cannot_write, EXPECT_PASS)
{
	pthread_t t;

	init_pkey();
	rare_write_begin();
	value = 9;
	CHECK(!pthread_create(&t, NULL, inherit_thread, NULL));
	CHECK(!pthread_join(t, NULL));
	CHECK(value == 10);
	value = 11; /* the creator's window is still open */
	rare_write_end();
	CHECK(value == 11);
}

static void *storing_thread(void *arg)
{
	(void)arg;
	*(volatile long *)&value = 666;
	return NULL;
}

TEST(pkey_thread_created_in_window_store_dies, EXPECT_SEGV)
{
	pthread_t t;

	init_pkey();
	rare_write_begin();
	CHECK(!pthread_create(&t, NULL, storing_thread, NULL));
	pthread_join(t, NULL);
	rare_write_end();
}

/*
 * A thread that exits holding a window (a bug of the program) leaves its
 * record behind, found by its thread pointer (src/thread_self.h), and the
 * C library gives that pointer to the next thread at once. The next thread
 * must start closed and its own begin/end must close again: the record it
 * finds is not its own.
 */
static pthread_t exited_self;

static void *exits_in_window(void *arg)
{
	(void)arg;
	rare_write_begin();
	exited_self = pthread_self();
	return NULL;
}

static void *next_thread(void *reused)
{
	int key = pkey_of(&value);

	*(bool *)reused = pthread_equal(pthread_self(), exited_self);
	CHECK(rdpkru() & WD(key));
	CHECK(store_faults(&value));
	CHECK(rare_write(value, 31L) == 31);
	rare_write_begin();
	value = 32;
	rare_write_end();
	CHECK(store_faults(&value));
	return NULL;
}

TEST(pkey_thread_reusing_an_exited_thread_starts_closed, EXPECT_PASS)
{
	bool reused = false;
	pthread_t t;

	init_pkey();
	CHECK(!pthread_create(&t, NULL, exits_in_window, NULL));
	CHECK(!pthread_join(t, NULL));
	CHECK(!pthread_create(&t, NULL, next_thread, &reused));
	CHECK(!pthread_join(t, NULL));
	CHECK(value == 32);
	CHECK(store_faults(&value));
	if (!reused)
		SKIP("the C library gave the second thread a new control "
		     "block");
}

/* --- signal handlers -------------------------------------------------------
 */

static volatile long seen;
static volatile sig_atomic_t handler_ran;
static sigjmp_buf jump_env;

static void reading_handler(int sig)
{
	(void)sig;
	seen = value; /* handlers start with init_pkru */
	handler_ran = 1;
}

static void writing_handler(int sig)
{
	(void)sig;
	*(volatile long *)&value = 666;
}

static void rare_writing_handler(int sig)
{
	(void)sig;
	rare_write(value, 13L);
	seen = value;
}

static void jumping_handler(int sig)
{
	(void)sig;
	siglongjmp(jump_env, 1);
}

static void on_usr1(void (*fn)(int))
{
	struct sigaction sa = {.sa_handler = fn};

	sigemptyset(&sa.sa_mask);
	CHECK(!sigaction(SIGUSR1, &sa, NULL));
}

TEST(pkey_handler_reads_protected_data, EXPECT_PASS)
{
	init_pkey();
	rare_write(value, 12L);
	on_usr1(reading_handler);
	raise(SIGUSR1);
	CHECK(handler_ran && seen == 12);
	/* and again, in a window */
	rare_write_begin();
	handler_ran = 0;
	raise(SIGUSR1);
	rare_write_end();
	CHECK(handler_ran && seen == 12);
}

TEST(pkey_handler_rare_write_works, EXPECT_PASS)
{
	init_pkey();
	on_usr1(rare_writing_handler);
	raise(SIGUSR1);
	CHECK(seen == 13 && value == 13);
	CHECK(store_faults(&value)); /* sigreturn restored the rest state */
}

TEST(pkey_window_does_not_leak_into_handler, EXPECT_SEGV)
{
	init_pkey();
	on_usr1(writing_handler);
	rare_write_begin();
	value = 14; /* open here */
	raise(SIGUSR1);
	rare_write_end();
}

TEST(pkey_window_intact_after_sigreturn, EXPECT_PASS)
{
	init_pkey();
	on_usr1(reading_handler);
	rare_write_begin();
	value = 15;
	raise(SIGUSR1);
	CHECK(handler_ran && seen == 15);
	value = 16; /* the window came back with sigreturn */
	rare_write_end();
	CHECK(value == 16);
	CHECK(store_faults(&value));
}

TEST(pkey_siglongjmp_out_of_window_closes_it, EXPECT_PASS)
{
	init_pkey();
	on_usr1(jumping_handler);
	rare_write_begin();
	value = 17;
	if (!sigsetjmp(jump_env, 1))
		raise(SIGUSR1);
	/* The handler's init_pkru came along: no write, reads repaired. */
	CHECK(value == 17);
	CHECK(store_faults(&value));
	rare_write_end(); /* still balances */
	CHECK(rare_write(value, 18L) == 18);
	CHECK(store_faults(&value));
}

TEST(pkey_siglongjmp_at_rest, EXPECT_PASS)
{
	init_pkey();
	on_usr1(jumping_handler);
	if (!sigsetjmp(jump_env, 1))
		raise(SIGUSR1);
	CHECK(value == 1);
	CHECK(rare_write(value, 19L) == 19);
	CHECK(store_faults(&value));
}

/* A SIGSEGV handler installed before init still sees real faults, and
 * may read protected data. */
static void user_segv(int sig)
{
	(void)sig;
	_exit((int)value);
}

static void store_with_user_handler(void *unused)
{
	(void)unused;
	*(volatile long *)&value = 666;
}

TEST(pkey_user_segv_handler_is_chained, EXPECT_PASS)
{
	struct sigaction sa = {.sa_handler = user_segv};
	int st;

	need_pkey();
	sigemptyset(&sa.sa_mask);
	CHECK(!sigaction(SIGSEGV, &sa, NULL));
	init_pkey();
	rare_write(value, 42L);
	st = run_in_child(store_with_user_handler, NULL);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
}

/* --- fork -------------------------------------------------------------------
 */

static void forked_writer(void *unused)
{
	(void)unused;
	CHECK(value == 20);
	CHECK(rare_write(value, 21L) == 21);
	rare_write_begin();
	value = 22;
	rare_write_end();
	CHECK(value == 22);
	CHECK(store_faults(&value));
}

TEST(pkey_fork_child_private_and_closed, EXPECT_PASS)
{
	init_pkey();
	rare_write(value, 20L);
	CHECK(run_in_child(forked_writer, NULL) == CHILD_OK);
	CHECK(value == 20);
	CHECK(store_faults(&value));
}

static volatile int fork_status = -1;

static void forking_handler(int sig)
{
	(void)sig;
	/* The child starts with the handler's init_pkru. */
	fork_status = run_in_child(forked_writer, NULL);
}

TEST(pkey_fork_from_signal_handler, EXPECT_PASS)
{
	init_pkey();
	rare_write(value, 20L);
	on_usr1(forking_handler);
	raise(SIGUSR1);
	CHECK(fork_status == CHILD_OK);
	CHECK(value == 20);
}

/* --- protection domains ----------------------------------------------------
 */

TEST(pkey_pools_get_own_keys_then_share, EXPECT_PASS)
{
	struct rare_pool *pools[24];
	long *objs[24];
	int section_key, keys[24], distinct = 0;

	init_pkey();
	section_key = pkey_of(&value);
	for (int i = 0; i < 24; i++) {
		pools[i] = rare_pool_create(4096);
		CHECK(pools[i]);
		objs[i] = rare_alloc(pools[i], sizeof(long));
		CHECK(objs[i]);
		rare_write(*objs[i], (long)i + 100);
		CHECK(*objs[i] == i + 100);
		keys[i] = pkey_of(objs[i]);
		CHECK(keys[i] > 0);
		bool fresh = keys[i] != section_key;

		for (int j = 0; j < i; j++)
			fresh &= keys[j] != keys[i];
		distinct += fresh;
	}
	printf("# %d pools had a key of their own\n", distinct);
	/* Keys ran out long before 24 pools: the rest share the section's. */
	CHECK(keys[23] == section_key);
	CHECK(store_faults(objs[0]) && store_faults(objs[23]));
	if (distinct) {
		/* A map opens its own domain only. */
		struct rare_write_mapping m = rare_write_map(objs[0], 8);

		*(long *)m.addr = 7;
		CHECK(store_faults(&value));
		rare_write_unmap(m);
		CHECK(*objs[0] == 7);
		CHECK(store_faults(objs[0]));
		/* A destroyed pool's key goes to the next pool. */
		rare_pool_destroy(pools[0]);
		pools[0] = rare_pool_create(4096);
		objs[0] = rare_alloc(pools[0], 8);
		CHECK(pkey_of(objs[0]) == keys[0]);
	}
	rare_write_begin(); /* a window opens every domain */
	for (int i = 0; i < 24; i++)
		*objs[i] = i;
	value = 23;
	rare_write_end();
	for (int i = 0; i < 24; i++) {
		CHECK(*objs[i] == i);
		rare_pool_destroy(pools[i]);
	}
}

/* --- sealing -----------------------------------------------------------------
 */

TEST(pkey_section_sealed, EXPECT_PASS)
{
	void *page = (void *)((uintptr_t)&value & ~(uintptr_t)4095);

	init_pkey();
	if (syscall(462, page, 0UL, 0UL))
		SKIP("no mseal(2) in this kernel");
	CHECK(mprotect(page, 4096, PROT_READ) == -1 && errno == EPERM);
	CHECK(pkey_mprotect(page, 4096, PROT_READ | PROT_WRITE, 0) == -1 &&
	      errno == EPERM);
	CHECK(munmap(page, 4096) == -1 && errno == EPERM);
	CHECK(mremap(page, 4096, 8192, MREMAP_MAYMOVE) == MAP_FAILED &&
	      errno == EPERM);
	CHECK(store_faults(&value));
}

/* --- the hardened gate -----------------------------------------------------
 */

static int victim_key;
static unsigned pkru_offset;

/* Did the interrupted context hold write access to the victim key? */
static bool frame_writable(ucontext_t *uc)
{
	unsigned char *fx = (unsigned char *)uc->uc_mcontext.fpregs;
	uint64_t bv;
	uint32_t pkru;

	memcpy(&bv, fx + 512, 8);
	if (!(bv & (1ULL << 9)))
		return true; /* PKRU in its init state: 0, all access */
	memcpy(&pkru, fx + pkru_offset, 4);
	return !(pkru & (AD(victim_key) | WD(victim_key)));
}

static void gadget_outcome(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	_exit(frame_writable(ctx) ? 3 : 0);
}

static void landing(void)
{
	_exit(rdpkru() & (AD(victim_key) | WD(victim_key)) ? 0 : 3);
}

/* Jump straight to a WRPKRU with EAX = 0 (every key writable). */
static void jump_to_wrpkru(void *insn)
{
	static char altstack[65536];
	stack_t ss = {.ss_sp = altstack, .ss_size = sizeof(altstack)};
	struct sigaction sa = {.sa_sigaction = gadget_outcome,
			       .sa_flags = SA_SIGINFO | SA_ONSTACK};
	int sigs[] = {SIGSEGV, SIGABRT, SIGILL, SIGBUS,
		      SIGFPE,  SIGTRAP, SIGALRM};

	sigaltstack(&ss, NULL);
	sigemptyset(&sa.sa_mask);
	for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	alarm(2);
	/* EAX chosen by the attacker; the other scratch registers junk. */
	__asm__ volatile("push %1\n\t"
			 "mov $0x5a5a5a5a5a5a5a5a, %%rsi\n\t"
			 "mov %%rsi, %%rdi\n\t"
			 "mov %%rsi, %%r8\n\t"
			 "mov %%rsi, %%r9\n\t"
			 "mov %%rsi, %%r10\n\t"
			 "xor %%eax, %%eax\n\t"
			 "xor %%ecx, %%ecx\n\t"
			 "xor %%edx, %%edx\n\t"
			 "jmp *%0"
			 :
			 : "r"(insn), "r"(landing)
			 : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10",
			   "memory");
	__builtin_unreachable();
}

struct text_range {
	uintptr_t addr, lo, hi;
};

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct text_range *t = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
		    t->addr >= lo && t->addr < lo + ph->p_memsz) {
			t->lo = lo;
			t->hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

TEST(pkey_gate_rejects_jump_to_wrpkru, EXPECT_PASS)
{
	struct text_range t = {.addr = (uintptr_t)&rare_write_memcpy};
	unsigned a, b, c, d, hits = 0;

	init_pkey();
	__cpuid_count(0xd, 9, a, b, c, d);
	pkru_offset = b;
	victim_key = pkey_of(&value);
	CHECK(dl_iterate_phdr(find_text, &t) == 1);
	for (uintptr_t p = t.lo; p + 3 <= t.hi; p++) {
		const unsigned char *q = (const unsigned char *)p;
		int st;

		if (q[0] != 0x0f || q[1] != 0x01 || q[2] != 0xef)
			continue;
		hits++;
		st = run_in_child(jump_to_wrpkru, (void *)p);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr,
				"WRPKRU at %#lx gave write access (%#x)\n",
				(unsigned long)(p - t.lo), st);
			CHECK(!"gate let a jump keep the key open");
		}
	}
	printf("# %u WRPKRU instructions tried\n", hits);
	CHECK(hits > 0);
}

/* --- handlers installed after init (the fault report) --------------------- */

static volatile uint32_t entry_pkru;

static void record_pkru(int sig)
{
	(void)sig;
	entry_pkru = rdpkru(); /* before any access to protected data */
}

/* Every handler of the program starts with read (never write) access to
 * protected data, for any signal, even with the program's own SIGSEGV
 * handler in place, so no repair fault is needed. */
TEST(pkey_handler_after_init_starts_readable, EXPECT_PASS)
{
	int key;

	init_pkey();
	key = pkey_of(&value);
	CHECK(signal(SIGSEGV, user_segv) != SIG_ERR);
	CHECK(signal(SIGUSR1, record_pkru) != SIG_ERR);
	raise(SIGUSR1);
	CHECK((entry_pkru & AD(key)) == 0);
	CHECK(entry_pkru & WD(key));
}
