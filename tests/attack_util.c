// SPDX-License-Identifier: MIT
/*
 * attack_util.c - running attack scenarios in children, recovering from
 * faults, racing windows, finding the library's private objects, and (built
 * with -DRW_ATTACK_MATRIX_MAIN) the `make attack-matrix` program.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#include "attack.h"
#include "../src/table.h"

/* attack_table.c's column of @backend, or -1. */
static int column_of(const char *backend)
{
	for (int c = 0; c < ATTACK_NR_BACKENDS && attack_columns[c]; c++)
		if (!strcmp(attack_columns[c], backend))
			return c;
	return -1;
}

/* Shared with the attack child: what it saw. */
struct report {
	enum attack_result result;
	bool attacking;
	char backend[32];
	char note[200];
};
static struct report *report;
/* In the attack child: the factor of attack_budget() (set by attack_run()). */
static double budget_scale = 1.0;

const char *attack_result_name(enum attack_result r)
{
	switch (r) {
	case ATTACK_BLOCKED:
		return "blocked";
	case ATTACK_OPEN:
		return "open";
	case ATTACK_NA:
		return "n/a";
	case ATTACK_ERROR:
		return "error";
	case ATTACK_SEALED:
		return "blocked (mseal)";
	case ATTACK_SHARED:
		return "blocked (shared)";
	default:
		return "unset";
	}
}

void attack_begin(void)
{
	__atomic_store_n(&report->attacking, true, __ATOMIC_SEQ_CST);
}

void attack_report(enum attack_result r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(report->note, sizeof(report->note), fmt, ap);
	va_end(ap);
	__atomic_store_n(&report->result, r, __ATOMIC_SEQ_CST);
	_exit(0);
}

/* Whether a verdict is in the report already (a child of the attack
 * child's may have written it). */
bool attack_reported(void)
{
	return __atomic_load_n(&report->result, __ATOMIC_SEQ_CST) !=
	       ATTACK_UNSET;
}

void attack_landed(const char *what)
{
	if (__atomic_load_n(&report->result, __ATOMIC_SEQ_CST) != ATTACK_UNSET)
		return;
	snprintf(report->note, sizeof(report->note), "%s", what);
	__atomic_store_n(&report->result, ATTACK_OPEN, __ATOMIC_SEQ_CST);
}

const struct rw_region *attack_region_of(const struct rw_table *t,
					 const void *p)
{
	for (unsigned i = 0; i < t->nr_regions; i++) {
		const struct rw_region *r = &t->regions[i];

		if (r->kind != RW_REGION_FREE && (uintptr_t)p >= r->start &&
		    (uintptr_t)p - r->start < r->len)
			return r;
	}
	return NULL;
}

bool attack_alias_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool left = false;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "memfd:rarewrite ") && strstr(line, "rw-s"))
			left = true;
	if (f)
		fclose(f);
	return left;
}

void attack_verdict(bool landed, const char *what)
{
	if (landed)
		attack_report(ATTACK_OPEN, "%s landed", what);
	attack_report(ATTACK_BLOCKED, "%s did not land", what);
}

/* ---- fault recovery ---- */

static __thread sigjmp_buf *fault_jmp;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *j = fault_jmp;

	(void)si;
	(void)uc;
	if (j) {
		fault_jmp = NULL;
		siglongjmp(*j, 1);
	}
	/* Not an expected fault: die of it. */
	signal(sig, SIG_DFL);
}

static void install_on_fault(void)
{
	struct sigaction sa = {.sa_sigaction = on_fault,
			       .sa_flags = SA_SIGINFO | SA_NODEFER};

	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

bool attack_try_store64(void *addr, uint64_t v)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	sigjmp_buf j;

	pthread_once(&once, install_on_fault);
	if (sigsetjmp(j, 1))
		return false;
	fault_jmp = &j;
	attack_store64(addr, v);
	fault_jmp = NULL;
	return true;
}

/* ---- racing a window from another thread ---- */

struct race {
	void *addr;
	uint64_t v;
	bool stop, landed;
};

static void *racer(void *p)
{
	struct race *r = p;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		if (attack_try_store64(r->addr, r->v) &&
		    attack_load64(r->addr) == r->v) {
			__atomic_store_n(&r->landed, true, __ATOMIC_SEQ_CST);
			break;
		}
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool attack_race(void *addr, uint64_t v, void (*fn)(void *), void *arg,
		 double seconds)
{
	struct race r = {addr, v, false, false};
	double end = now() + attack_budget(seconds);
	pthread_t t;

	if (pthread_create(&t, NULL, racer, &r))
		attack_report(ATTACK_ERROR, "pthread_create failed");
	while (!__atomic_load_n(&r.landed, __ATOMIC_SEQ_CST) && now() < end)
		for (int i = 0; i < 64; i++)
			fn(arg);
	__atomic_store_n(&r.stop, true, __ATOMIC_SEQ_CST);
	pthread_join(t, NULL);
	return r.landed || attack_load64(addr) == v;
}

/* ---- a victim traced at its system calls ---- */

pid_t attack_trace_spawn(void (*setup)(void *arg), void (*victim)(void *arg),
			 void *arg)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork: %s", strerror(errno));
	if (!pid) {
		if (setup)
			setup(arg);
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		victim(arg);
		_exit(ATTACK_TRACE_RETURNED);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status) ||
	    ptrace(PTRACE_SETOPTIONS, pid, 0,
		   PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL))
		attack_report(ATTACK_ERROR, "cannot trace the victim: %s",
			      strerror(errno));
	return pid;
}

int attack_trace_syscalls(pid_t pid, attack_on_stop on_stop, void *arg)
{
	long req = PTRACE_SYSCALL;
	int status, sig = 0;

	for (;;) {
		struct user_regs_struct regs;
		enum attack_stop stop;

		if (ptrace((enum __ptrace_request)req, pid, 0, sig) ||
		    waitpid(pid, &status, 0) != pid)
			attack_report(ATTACK_ERROR, "lost the victim: %s",
				      strerror(errno));
		if (!WIFSTOPPED(status))
			return status;
		sig = 0;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			ptrace(PTRACE_GETREGS, pid, 0, &regs);
			/* x86-64: -ENOSYS in rax marks the entry */
			stop = regs.rax == (unsigned long long)-ENOSYS
				       ? ATTACK_STOP_ENTRY
				       : ATTACK_STOP_EXIT;
		} else if (WSTOPSIG(status) == SIGTRAP &&
			   req == PTRACE_SINGLESTEP) {
			ptrace(PTRACE_GETREGS, pid, 0, &regs);
			stop = ATTACK_STOP_STEP;
		} else {
			sig = WSTOPSIG(status); /* delivered: SIGABRT too */
			continue;
		}
		req = on_stop(pid, stop, &regs, arg);
	}
}

uintptr_t attack_trace_peek(pid_t pid, const volatile void *addr)
{
	return (uintptr_t)ptrace(PTRACE_PEEKDATA, pid, (void *)addr, 0);
}

size_t attack_trace_read(pid_t pid, uintptr_t lo, uintptr_t hi, uint64_t *buf,
			 size_t cap)
{
	struct iovec local, remote;
	ssize_t got;

	lo &= ~(uintptr_t)7;
	if (hi <= lo)
		return 0;
	if ((hi - lo) / 8 < cap)
		cap = (hi - lo) / 8;
	local = (struct iovec){buf, cap * 8};
	remote = (struct iovec){(void *)lo, cap * 8};
	got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return got < 0 ? 0 : (size_t)got / 8;
}

unsigned attack_trace_rewrite(pid_t pid, uintptr_t lo, uintptr_t hi,
			      uintptr_t (*map)(uintptr_t v, void *arg),
			      void *arg, unsigned only)
{
	enum { CHUNK = 512 };
	uint64_t words[CHUNK];
	unsigned done = 0, seen = 0;

	for (lo &= ~(uintptr_t)7; lo < hi; lo += CHUNK * 8) {
		size_t n = attack_trace_read(pid, lo, hi, words, CHUNK);

		for (size_t i = 0; i < n; i++) {
			uintptr_t to = map(words[i], arg);

			if (to == words[i] || (only && ++seen != only))
				continue;
			if (!ptrace(PTRACE_POKEDATA, pid, (void *)(lo + i * 8),
				    (void *)to))
				done++;
		}
		if (n < CHUNK)
			break;
	}
	return done;
}

struct move {
	uintptr_t from, span, to;
};

static uintptr_t map_move(uintptr_t v, void *arg)
{
	const struct move *m = arg;

	return v - m->from < m->span ? m->to + (v - m->from) : v;
}

unsigned attack_trace_move(pid_t pid, uintptr_t lo, uintptr_t hi,
			   uintptr_t from, uintptr_t span, uintptr_t to)
{
	struct move m = {from, span, to};

	return attack_trace_rewrite(pid, lo, hi, map_move, &m, 0);
}

/* ---- the library's private objects, from its ELF symbol table ---- */

struct tls_find {
	uintptr_t base;
	void *tls;
};

static int find_tls(struct dl_phdr_info *info, size_t size, void *p)
{
	struct tls_find *f = p;

	(void)size;
	if (info->dlpi_addr == f->base) {
		f->tls = info->dlpi_tls_data;
		return 1;
	}
	return 0;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *p)
{
	struct tls_find *f = p;

	(void)size;
	f->base = info->dlpi_addr;
	return 1;
}

typedef void *(*sym_fn)(const Elf64_Sym *sym, const char *name,
			const char *file, uintptr_t base, void *arg);

/* The separate debug file of a stripped library, named by its build ID
 * (/usr/lib/debug/.build-id/xx/yyyy.debug: where a Debian -dbgsym package
 * puts the .symtab that dh_strip took out of the installed library). */
static bool debug_file_of(const char *f, size_t size, char *path, size_t cap)
{
	const Elf64_Ehdr *eh = (const void *)f;
	const Elf64_Shdr *sh = (const void *)(f + eh->e_shoff);

	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const char *p = f + sh[i].sh_offset;
		const char *end = p + sh[i].sh_size;

		if (sh[i].sh_type != SHT_NOTE || sh[i].sh_offset > size ||
		    sh[i].sh_size > size - sh[i].sh_offset)
			continue;
		while ((size_t)(end - p) >= sizeof(Elf64_Nhdr)) {
			const Elf64_Nhdr *n = (const void *)p;
			const char *name = p + sizeof(*n);
			const unsigned char *id = (const unsigned char *)name +
						  ((n->n_namesz + 3) & ~3u);
			size_t len;

			if ((const char *)id + n->n_descsz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && n->n_descsz >= 2 &&
			    2 * n->n_descsz + 40 < cap) {
				len = (size_t)snprintf(
					path, cap,
					"/usr/lib/debug/.build-id/%02x/",
					id[0]);
				for (unsigned k = 1; k < n->n_descsz; k++)
					len += (size_t)snprintf(path + len,
								cap - len,
								"%02x", id[k]);
				snprintf(path + len, cap - len, ".debug");
				return true;
			}
			p = (const char *)id + ((n->n_descsz + 3) & ~3u);
		}
	}
	return false;
}

/* Call @fn on every symbol of @file's ELF symbol table, with the source
 * file of local symbols, until it returns non-NULL. A file without one
 * (stripped) names its separate debug file in @debug, if @debug is given
 * and the file has a build ID. */
static void *file_symtab_walk(const char *file, void *load_base, sym_fn fn,
			      void *arg, char *debug, size_t debug_cap)
{
	struct stat st;
	void *result = NULL;
	int fd;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0) {
		const char *f = mmap(NULL, (size_t)st.st_size, PROT_READ,
				     MAP_PRIVATE, fd, 0);
		const Elf64_Ehdr *eh = (const void *)f;

		if (f != MAP_FAILED) {
			const Elf64_Shdr *sh = (const void *)(f + eh->e_shoff);
			uintptr_t base =
				eh->e_type == ET_DYN ? (uintptr_t)load_base : 0;
			bool has_symtab = false;

			for (unsigned i = 0; i < eh->e_shnum && !result; i++) {
				const Elf64_Sym *sym;
				const char *strtab, *name_of = "";
				size_t n;

				if (sh[i].sh_type != SHT_SYMTAB)
					continue;
				has_symtab = true;
				sym = (const void *)(f + sh[i].sh_offset);
				strtab = f + sh[sh[i].sh_link].sh_offset;
				n = sh[i].sh_size / sizeof(*sym);
				for (size_t k = 0; k < n && !result; k++) {
					if (ELF64_ST_TYPE(sym[k].st_info) ==
					    STT_FILE)
						name_of =
							strtab + sym[k].st_name;
					if (ELF64_ST_BIND(sym[k].st_info) !=
					    STB_LOCAL)
						name_of = "";
					result = fn(&sym[k],
						    strtab + sym[k].st_name,
						    name_of, base, arg);
				}
			}
			if (!has_symtab && debug &&
			    !debug_file_of(f, (size_t)st.st_size, debug,
					   debug_cap))
				debug[0] = 0;
			munmap((void *)f, (size_t)st.st_size);
		}
	}
	close(fd);
	return result;
}

/* Call @fn on every symbol of the library's ELF symbol table (its separate
 * debug file's when the installed library is stripped), with the source
 * file of local symbols, until it returns non-NULL. */
static void *symtab_walk(sym_fn fn, void *arg)
{
	Dl_info info;
	char debug[128] = "";
	void *result;

	if (!dladdr((void *)rare_write_init, &info) || !info.dli_fname ||
	    !info.dli_fname[0]) {
		/* A static program: the library is in the executable. */
		struct tls_find main_prog = {0, NULL};

		dl_iterate_phdr(first_object, &main_prog);
		info.dli_fname = "/proc/self/exe";
		info.dli_fbase = (void *)main_prog.base;
	}
	result = file_symtab_walk(info.dli_fname, info.dli_fbase, fn, arg,
				  debug, sizeof(debug));
	if (!result && debug[0]) {
		result = file_symtab_walk(debug, info.dli_fbase, fn, arg, NULL,
					  0);
		if (!result && access(debug, R_OK))
			fprintf(stderr,
				"%s is stripped and %s is missing (a -dbgsym "
				"package): the library's objects cannot be "
				"found\n",
				info.dli_fname, debug);
	}
	return result;
}

static void *match_object(const Elf64_Sym *sym, const char *name,
			  const char *file, uintptr_t base, void *arg)
{
	unsigned type = ELF64_ST_TYPE(sym->st_info);

	(void)file;
	if (strcmp(name, arg) || (type != STT_OBJECT && type != STT_TLS))
		return NULL;
	if (type == STT_TLS) {
		struct tls_find tf = {base, NULL};

		dl_iterate_phdr(find_tls, &tf);
		return tf.tls ? (char *)tf.tls + sym->st_value : NULL;
	}
	return (void *)(base + sym->st_value);
}

void *attack_lib_sym(const char *name)
{
	return symtab_walk(match_object, (void *)name);
}

static void *match_func(const Elf64_Sym *sym, const char *name,
			const char *file, uintptr_t base, void *arg)
{
	(void)file;
	if (strcmp(name, arg) || ELF64_ST_TYPE(sym->st_info) != STT_FUNC)
		return NULL;
	return (void *)(base + sym->st_value);
}

void *attack_lib_func(const char *name)
{
	return symtab_walk(match_func, (void *)name);
}

/* The library's own sources (src/ and src/backend/), by base name. */
static bool library_file(const char *file)
{
	static const char *const ours[] = {"core.c",	 "region.c",
					   "backends.c", "say.c",
					   "memfd.c",	 "pool.c",
					   "list.c",	 "copy.c",
					   "section.c",	 "memfd_region.c",
					   "pwrite.c",	 "shadow.c",
					   "mprotect.c", "pkey.c",
					   "process.c",	 "process_helper.c",
					   "vault.c",	 "process_seccomp.c",
					   "signal.c",	 "add.c",
					   "klock.c"};
	const char *slash = strrchr(file, '/');

	file = slash ? slash + 1 : file;
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (!strcmp(file, ours[i]))
			return true;
	return false;
}

struct each_object {
	void (*fn)(const char *name, void *addr, size_t size, bool tls,
		   bool ours, void *arg);
	void *arg;
};

static void *visit_object(const Elf64_Sym *sym, const char *name,
			  const char *file, uintptr_t base, void *arg)
{
	struct each_object *e = arg;
	unsigned type = ELF64_ST_TYPE(sym->st_info);
	bool ours = library_file(file) || !strncmp(name, "rw_", 3);

	if ((type != STT_OBJECT && type != STT_TLS) || !sym->st_size)
		return NULL;
	if (type == STT_TLS) {
		struct tls_find tf = {base, NULL};

		dl_iterate_phdr(find_tls, &tf);
		if (tf.tls)
			e->fn(name, (char *)tf.tls + sym->st_value,
			      sym->st_size, true, ours, e->arg);
		return NULL;
	}
	e->fn(name, (void *)(base + sym->st_value), sym->st_size, false, ours,
	      e->arg);
	return NULL;
}

void attack_lib_each_object(void (*fn)(const char *name, void *addr,
				       size_t size, bool tls, bool ours,
				       void *arg),
			    void *arg)
{
	struct each_object e = {fn, arg};

	symtab_walk(visit_object, &e);
}

static void *match_code(const Elf64_Sym *sym, const char *name,
			const char *file, uintptr_t base, void *arg)
{
	uintptr_t a = (uintptr_t)arg, start = base + sym->st_value;

	if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || a < start ||
	    a - start >= sym->st_size)
		return NULL;
	if (library_file(file) || !strncmp(name, "rare_", 5) ||
	    !strncmp(name, "rw_", 3))
		return (void *)1;
	return NULL; /* maybe another, overlapping symbol says more */
}

bool attack_lib_code(const void *addr)
{
	return symtab_walk(match_code, (void *)addr) != NULL;
}

/* ---- running a scenario ---- */

/* RAREWRITE_TEST_RACE_SCALE for scenario @id on @backend (attack_budget()):
 * 1 unless it is set and the table expects the scenario blocked here. A
 * value that is not a number in (0, 1] is an error, never ignored. */
static double race_scale(const char *id, const char *backend)
{
	const char *env = getenv("RAREWRITE_TEST_RACE_SCALE");
	char *end;
	double f;

	if (!env || !*env)
		return 1.0;
	f = strtod(env, &end);
	if (*end || !(f > 0.0 && f <= 1.0))
		attack_report(ATTACK_ERROR,
			      "RAREWRITE_TEST_RACE_SCALE=%s: not in (0, 1]",
			      env);
	return attack_expected(id, backend) == ATTACK_BLOCKED ? f : 1.0;
}

double attack_budget(double seconds)
{
	double s = seconds * budget_scale;

	return s < 1.0 && seconds > 1.0 ? 1.0 : s;
}

/*
 * Keep the kernel's perf scheduling key on for the life of this process.
 * The lock scenarios (attack_locks.c) set hardware breakpoints with
 * ptrace, each a per-task perf event: the first turns that static key on
 * and the last turns it off again, and each turn patches __schedule() with
 * int3. Under QEMU TCG that patching while other vCPUs run once took the
 * guest kernel down (check-vm: "Oops: int3" in __schedule, in 26c). A
 * dummy event of our own, opened once and never closed, leaves the key on:
 * one patch at the start, none per breakpoint. Best effort: without perf
 * events the scenarios run as before.
 */
static void hold_perf_sched_key(void)
{
	static bool held;
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_DUMMY,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};

	if (held)
		return;
	held = true;
	(void)syscall(SYS_perf_event_open, &attr, 0, -1, -1,
		      PERF_FLAG_FD_CLOEXEC);
}

enum attack_result attack_run(const struct attack *a, char *note,
			      size_t note_len, char *backend,
			      size_t backend_len)
{
	enum attack_result res;
	int status;
	pid_t pid;

	hold_perf_sched_key();

	report = mmap(NULL, sizeof(*report), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (report == MAP_FAILED) {
		snprintf(note, note_len, "mmap: %s", strerror(errno));
		return ATTACK_ERROR;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(note, note_len, "fork: %s", strerror(errno));
		return ATTACK_ERROR;
	}
	if (!pid) {
		int err;

		alarm(60);
		if (!getenv("RAREWRITE_TEST_VERBOSE")) {
			int null = open("/dev/null", O_WRONLY);

			if (null >= 0)
				dup2(null, STDERR_FILENO);
		}
		err = rare_write_init();
		snprintf(report->backend, sizeof(report->backend), "%s",
			 rare_write_backend());
		if (err)
			attack_report(ATTACK_ERROR, "rare_write_init: %s",
				      strerror(-err));
		budget_scale = race_scale(a->id, report->backend);
		a->fn();
		attack_report(ATTACK_ERROR, "scenario returned no verdict");
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	res = report->result;
	snprintf(backend, backend_len, "%s", report->backend);
	snprintf(note, note_len, "%s", report->note);
	if (res == ATTACK_UNSET) {
		int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;

		/* SIGILL too: a jump into the middle of code (21a under
		 * AddressSanitizer: libc's moved load bias sends a lookup of
		 * the sanitizer's or libc's own into the test's code; which
		 * signal follows depends on the bytes it lands on). */
		if ((sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT ||
		     sig == SIGILL) &&
		    report->attacking) {
			res = ATTACK_BLOCKED;
			snprintf(note, note_len, "attacker killed by %s",
				 sig == SIGABRT ? "SIGABRT (library check)"
						: strsignal(sig));
		} else if (sanitized_build() && WIFEXITED(status) &&
			   WEXITSTATUS(status) == 1 && report->attacking) {
			/* AddressSanitizer or UBSan reported what the
			 * attacker's stores broke and exited 1: a crash, as
			 * a SIGSEGV is in a plain build (15f on mprotect
			 * under make check-asan). make check runs the same
			 * cell where no sanitizer stops it first. */
			res = ATTACK_BLOCKED;
			snprintf(note, note_len,
				 "attacker's stores stopped by the sanitizer "
				 "(exit 1)");
		} else {
			res = ATTACK_ERROR;
			snprintf(note, note_len,
				 "child ended with status %#x%s", status,
				 report->attacking ? "" : " before attacking");
		}
	}
	munmap(report, sizeof(*report));
	report = NULL;
	return res;
}

/* mseal(2) exists: sealing nothing succeeds. */
static bool have_mseal(void)
{
#ifndef SYS_mseal
#define SYS_mseal 462
#endif
	static char page[1] __attribute__((aligned(4096)));

	return syscall(SYS_mseal, page, 0UL, 0UL) == 0;
}

/* The loader's table of this program (link.h): none in a static one. */
extern ElfW(Dyn) _DYNAMIC[] __attribute__((weak));

/* The program's timer_create() is the library's (librarewrite.so), not the
 * C library's own: not so in a static program, nor in one that links
 * librarewrite.a (the library is then in the executable, which the loader
 * names ""), which leaves src/libc_threads.c out. */
static bool libc_entries_interposed(void)
{
	Dl_info lib, entry;

	return _DYNAMIC && dladdr((void *)rare_write_init, &lib) &&
	       lib.dli_fname && lib.dli_fname[0] &&
	       dladdr((void *)timer_create, &entry) &&
	       entry.dli_fbase == lib.dli_fbase;
}

enum attack_result attack_expected(const char *id, const char *backend)
{
	enum attack_result r = attack_cell(id, backend);

	if (r == ATTACK_SEALED)
		return have_mseal() ? ATTACK_BLOCKED : ATTACK_OPEN;
	if (r == ATTACK_SHARED)
		return libc_entries_interposed() ? ATTACK_BLOCKED : ATTACK_OPEN;
	return r;
}

enum attack_result attack_cell(const char *id, const char *backend)
{
	for (size_t i = 0; i < attack_table_len; i++) {
		if (strcmp(attack_table[i].id, id))
			continue;
		int c = column_of(backend);

		return c < 0 ? ATTACK_UNSET : attack_table[i].result[c];
	}
	return ATTACK_UNSET;
}

/*
 * The scribbler's rows (15), 25c, 27i, 27l, 27n, 27p and 27r race: "open" there
 * means the attack lands at a measured rate, not in every run, so a run in
 * which it did not land (or the corruption crashed the child first) does not
 * contradict the table. A "blocked" cell still fails on the first landing.
 */
static enum attack_result racy_ok(const char *id, enum attack_result got,
				  enum attack_result want)
{
	if ((!strncmp(id, "15", 2) || !strcmp(id, "25c") ||
	     !strcmp(id, "27i") || !strcmp(id, "27l") || !strcmp(id, "27n") ||
	     !strcmp(id, "27p") || !strcmp(id, "27r")) &&
	    want == ATTACK_OPEN && got == ATTACK_BLOCKED)
		return want;
	return got;
}

void attack_check(const struct attack *a)
{
	char note[256], backend[32];
	enum attack_result got, want;

	/* The scribbler's rows hold because the library keeps destination,
	 * region and value in registers from its check to the store. An
	 * instrumented build spills them across its system calls (objdump
	 * of build-asan's rmw(): the destination at -0xb8(%rbp) around the
	 * rt_sigprocmask), so there a landing says nothing of the library
	 * users run: make check and check-deb run them on the product's
	 * build (docs/attack-matrix.md, 15a-15f). */
	if (sanitized_build() && !strncmp(a->id, "15", 2))
		SKIP("the scribbler checks register-only paths, which "
		     "-fsanitize=address spills to the stack");
	/* 27p rewrites the pool's start wherever it is, also the argument of
	 * rare_pool_destroy(), which the -O2 build keeps in a register
	 * through pools_lock's wait and the ASan build spills: there another
	 * live pool is destroyed (the 27o class, by its argument). */
	if (sanitized_build() && !strcmp(a->id, "27p"))
		SKIP("the pool's start stays in a register through destroy's "
		     "lock only without -fsanitize=address");
	/* 27n and 27t: a new pool's slot, start and descriptor go from the
	 * system call's register to the table; the ASan build spills them
	 * across the calls in between (27t on mprotect landed at trial 1,
	 * 27n on process at trial 2 under make check-asan on 9f96d2b; the
	 * -O2 build held in make check and check-fresh). */
	if (sanitized_build() &&
	    (!strcmp(a->id, "27n") || !strcmp(a->id, "27t")))
		SKIP("a new pool's start and slot stay in registers only "
		     "without -fsanitize=address");
	/* 27w: a table write's file offset goes from rw_vault_store()'s
	 * registers to the kernel; the ASan build keeps it in a stack slot
	 * (objdump of build-asan's rw_vault_store(): the offset of the
	 * write's start at 0x38(%rsp), added to the progress for each
	 * pwrite(2)): 27w landed there in 4 of 4 runs on pwrite, shadow,
	 * mprotect and process, unmap's last table write; the -O2 build
	 * held 3 of 3). */
	/* 28f: signal()'s handler goes from its argument register through
	 * the inline lock to the signal request; the ASan build keeps it in
	 * a stack slot across rt_sigprocmask(2) (28f landed at the first
	 * system call on every backend under make check-asan on f9485f0;
	 * the -O2 build and the Debian build held). */
	if (sanitized_build() && !strcmp(a->id, "28f"))
		SKIP("signal()'s handler stays in a register through the "
		     "signal lock only without -fsanitize=address");
	if (sanitized_build() && !strcmp(a->id, "27w"))
		SKIP("a table write's offset stays in registers only without "
		     "-fsanitize=address");
	got = attack_run(a, note, sizeof(note), backend, sizeof(backend));
	want = attack_expected(a->id, backend);
	if (getenv("ATTACK_NOTES"))
		fprintf(stderr, "attack %s on %s: %s (%s)\n", a->id, backend,
			attack_result_name(got), note);
	got = racy_ok(a->id, got, want);
	if (got == ATTACK_NA && want == ATTACK_NA)
		SKIP("scenario does not apply to this backend");
	/* A scenario this machine cannot stage (13a's set-user-ID-root copy
	 * needs root, as a package build has not): the runner skips it and
	 * says why, as test_core_setuid.c does; the matrix shows an error. */
	if (got == ATTACK_ERROR && !strncmp(note, "cannot run: ", 12))
		SKIP(note);
	if (got != want)
		fprintf(stderr, "attack %s on %s: %s (%s), the table says %s\n",
			a->id, backend, attack_result_name(got), note,
			attack_result_name(want));
	CHECK(got == want);
}

#ifdef RW_ATTACK_MATRIX_MAIN
/*
 * The attack-matrix program. With --expected it prints the table of
 * attack_table.c as docs/attack-matrix.md carries it; otherwise it runs every
 * scenario against every backend (those RAREWRITE_TEST_BACKENDS names, when
 * set), prints what happened, and exits 1 when reality and the table
 * differ anywhere.
 */
extern const struct attack *const __start_rw_attacks[];
extern const struct attack *const __stop_rw_attacks[];

static int by_id(const void *x, const void *y)
{
	const struct attack *const *a = x, *const *b = y;
	char *ra, *rb;
	unsigned long na = strtoul((*a)->id, &ra, 10);
	unsigned long nb = strtoul((*b)->id, &rb, 10);

	/* By number, then variant: 9 before 11a. */
	if (na != nb)
		return na < nb ? -1 : 1;
	return strcmp(ra, rb);
}

static bool available(const char *name)
{
	int status;
	pid_t pid;

	setenv("RAREWRITE_BACKEND", name, 1);
	fflush(NULL);
	pid = fork();
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDERR_FILENO);
		_exit(rare_write_init() ? 1 : 0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Whether RAREWRITE_TEST_BACKENDS, when set, names @name (as the runner
 * reads it: a list split at spaces and commas). */
static bool asked_for(const char *name)
{
	const char *only = getenv("RAREWRITE_TEST_BACKENDS");
	size_t len = strlen(name);

	if (!only)
		return true;
	for (const char *p = only; (p = strstr(p, name)); p += len)
		if ((p == only || p[-1] == ' ' || p[-1] == ',') &&
		    (!p[len] || p[len] == ' ' || p[len] == ','))
			return true;
	return false;
}

/* Whether the library has a backend called @name. */
static bool library_has(const char *name)
{
	const char *b;

	for (unsigned i = 0; (b = rare_write_backends(i, NULL)); i++)
		if (!strcmp(b, name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	size_t n = (size_t)(__stop_rw_attacks - __start_rw_attacks);
	const struct attack **list = calloc(n, sizeof(*list));
	bool expected_only = argc > 1 && !strcmp(argv[1], "--expected");
	bool have[ATTACK_NR_BACKENDS] = {0}, ran_any = false;
	const char *names[ATTACK_NR_BACKENDS];
	unsigned mismatches = 0, nr = 0;

	/* The columns: the library's backends, each with its cells. */
	while (nr < ATTACK_NR_BACKENDS &&
	       (names[nr] = rare_write_backends(nr, NULL)))
		if (column_of(names[nr++]) < 0) {
			fprintf(stderr,
				"attack-matrix: tests/attack_table.c has no "
				"column for backend %s\n",
				names[nr - 1]);
			return 1;
		}
	for (unsigned c = 0; c < ATTACK_NR_BACKENDS && attack_columns[c]; c++)
		if (!library_has(attack_columns[c])) {
			fprintf(stderr,
				"attack-matrix: tests/attack_table.c has a "
				"column for %s, which the library lacks\n",
				attack_columns[c]);
			return 1;
		}
	memcpy(list, __start_rw_attacks, n * sizeof(*list));
	qsort(list, n, sizeof(*list), by_id);
	for (unsigned b = 0; !expected_only && b < nr; b++) {
		have[b] = asked_for(names[b]) && available(names[b]);
		ran_any = ran_any || have[b];
	}
	/* A run that executed nothing proves nothing. */
	if (!expected_only && !ran_any) {
		fprintf(stderr, "attack-matrix: no backend to run (%s)\n",
			getenv("RAREWRITE_TEST_BACKENDS")
				? "RAREWRITE_TEST_BACKENDS names none here"
				: "none starts on this machine");
		free(list);
		return 1;
	}
	printf("| # | attack |");
	for (unsigned b = 0; b < nr; b++)
		printf(" %s |", names[b]);
	printf("\n|---|---|");
	for (unsigned b = 0; b < nr; b++)
		printf("---|");
	printf("\n");
	for (size_t i = 0; i < n; i++) {
		printf("| %s | %s |", list[i]->id, list[i]->what);
		for (unsigned b = 0; b < nr; b++) {
			enum attack_result want =
				attack_expected(list[i]->id, names[b]);
			char note[256], backend[32];
			enum attack_result got;

			if (!have[b]) {
				printf(" %s%s |",
				       attack_result_name(attack_cell(
					       list[i]->id, names[b])),
				       expected_only ? "" : "*");
				continue;
			}
			setenv("RAREWRITE_BACKEND", names[b], 1);
			got = racy_ok(list[i]->id,
				      attack_run(list[i], note, sizeof(note),
						 backend, sizeof(backend)),
				      want);
			if (got == want && getenv("ATTACK_NOTES")) {
				printf(" %s (%s) |", attack_result_name(got),
				       note);
			} else if (got == want) {
				printf(" %s |", attack_result_name(got));
			} else {
				mismatches++;
				printf(" **%s** (table: %s; %s) |",
				       attack_result_name(got),
				       attack_result_name(want), note);
			}
		}
		printf("\n");
	}
	if (!expected_only) {
		printf("\n\\* not run: backend not available on this machine "
		       "(or left out by RAREWRITE_TEST_BACKENDS); the cell is "
		       "the table's expectation.\n");
		if (mismatches)
			printf("\n%u cells differ from tests/attack_table.c\n",
			       mismatches);
	}
	free(list);
	return mismatches ? 1 : 0;
}
#endif
