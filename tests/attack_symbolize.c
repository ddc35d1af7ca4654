// SPDX-License-Identifier: MIT
/*
 * attack_symbolize.c - scenarios 23b and 23c: what the loader's writable
 * list of objects can make the fault report do.
 *
 * The report names the code that stored from the ELF file of its object;
 * the file's path and the object's load bias come from the loader's list
 * (struct link_map: l_name, l_addr), which is writable, at the time the
 * library lists the objects (init, or a dlopen()ed library registering a
 * section). 23b points libc's name at a FIFO: the dying process must not
 * open it (a device's open has side effects; inotify sees every open).
 * 23c moves libc's load bias by 0x40: the report must still name the
 * storing code as it did untouched (the kernel's mappings say where libc
 * is), not a neighbour.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"

static uint64_t named[8] __wr_rare;

/* libc's swab(), through a pointer the compiler cannot see through: the
 * faulting pc is in libc, in a function its .dynsym names (memset() is an
 * IFUNC whose variants only a stripped .symtab would name). */
static void (*volatile libc_swab)(const void *, void *, ssize_t) = swab;
static const char source[sizeof(uint64_t) * 8];

/* The report of a child that stores from libc's swab(): its "by pc ..."
 * part into @pc (the child must die by SIGSEGV with a report). */
static void report_pc(char *pc, size_t pc_len)
{
	char out[2048], *at, *end;
	int p[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe(p))
		attack_report(ATTACK_ERROR, "pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork: %s", strerror(errno));
	if (!pid) {
		close(p[0]);
		dup2(p[1], STDERR_FILENO);
		libc_swab(source, named, sizeof(named));
		_exit(0);
	}
	close(p[1]);
	while (got + 1 < (ssize_t)sizeof(out) &&
	       (n = read(p[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += n;
	out[got] = 0;
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	at = strstr(out, "by pc ");
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV || !at)
		attack_report(ATTACK_ERROR, "no report (status %#x): %s",
			      status, out);
	end = strchr(at, ':');
	if (end)
		*end = 0;
	snprintf(pc, pc_len, "%s", at);
}

/* libc's entry in the loader's list, and the library's list builder. */
static struct link_map *libc_entry(void (**prepare)(void))
{
	struct link_map *lm = NULL;
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

	*prepare = (void (*)(void))attack_lib_func("rw_symbolize_prepare");
	if (!*prepare)
		attack_report(ATTACK_ERROR, "no rw_symbolize_prepare");
	if (!libc || dlinfo(libc, RTLD_DI_LINKMAP, &lm) || !lm)
		/* A static program: no loader list to redirect. */
		attack_report(ATTACK_BLOCKED, "no loader list (static)");
	return lm;
}

ATTACK("23b", report_opens_device,
       "the loader's name of libc is pointed at a FIFO (a device would do "
       "as well), then libc's `swab()` stores into protected memory: the "
       "dying process opens it (a device's open has side effects)")
{
	void (*prepare)(void);
	struct link_map *lm = libc_entry(&prepare);
	char fifo[64], pc[256], ev[256];
	int in;
	ssize_t n;

	snprintf(fifo, sizeof(fifo), "/tmp/rarewrite-23b-%d.fifo",
		 (int)getpid());
	unlink(fifo);
	if (mkfifo(fifo, 0600))
		attack_report(ATTACK_ERROR, "mkfifo: %s", strerror(errno));
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (in < 0 || inotify_add_watch(in, fifo, IN_OPEN) < 0)
		attack_report(ATTACK_ERROR, "inotify: %s", strerror(errno));
	attack_begin();
	attack_store64(&lm->l_name, (uint64_t)(uintptr_t)fifo);
	prepare(); /* as a dlopen()ed library's section would */
	report_pc(pc, sizeof(pc));
	n = read(in, ev, sizeof(ev));
	unlink(fifo);
	attack_verdict(n > 0, "the dying process opened the FIFO");
}

ATTACK("23c", report_misnamed,
       "libc's load bias in the loader's list is moved by 0x40, then "
       "libc's `swab()` stores into protected memory: the report names "
       "other code than the storing function")
{
	void (*prepare)(void);
	struct link_map *lm = libc_entry(&prepare);
	char before[256], after[256];
	uintptr_t bias = lm->l_addr;

	report_pc(before, sizeof(before)); /* the control */
	if (!strstr(before, "+0x") || !strstr(before, "libc"))
		attack_report(ATTACK_ERROR, "control names no symbol: %s",
			      before);
	attack_begin();
	attack_store64(&lm->l_addr, bias + 0x40);
	prepare();
	attack_store64(&lm->l_addr, bias); /* only the list keeps it */
	report_pc(after, sizeof(after));
	if (strcmp(before, after))
		attack_report(ATTACK_OPEN, "\"%s\" became \"%s\"", before,
			      after);
	attack_report(ATTACK_BLOCKED, "still \"%s\"", after);
}
