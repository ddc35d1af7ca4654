// SPDX-License-Identifier: MIT
/*
 * attack_report.c - scenario 23: the fault report cannot be silenced.
 *
 * The report names the code that stored from the ELF file of its object,
 * and the path of that file comes from the loader's list of objects, which
 * is writable. 23 points the name of libc's entry at a FIFO before the
 * library lists the objects again (as it does when a dlopen()ed library
 * registers a section), then makes libc's memset() store into protected
 * memory: the process must still die by SIGSEGV, within a bound, with the
 * report. A blocking open of the FIFO would hang it for good: no report
 * and no death.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attack.h"

static uint64_t reported[8] __wr_rare;

/* libc's memset, through a pointer the compiler cannot see through: the
 * faulting pc is in libc. */
static void *(*volatile libc_memset)(void *, int, size_t) = memset;

/* Fork a child that stores into protected memory from libc's memset();
 * true when it died by SIGSEGV within @seconds and wrote the report. */
static bool dies_with_report(double seconds, char *why, size_t why_len)
{
	char out[1024];
	int p[2], status = 0;
	ssize_t n, got = 0;
	bool ended = false;
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
		alarm(0);
		libc_memset(reported, 0x41, sizeof(reported));
		_exit(0);
	}
	close(p[1]);
	for (int i = 0; i < (int)(seconds * 100) && !ended; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			ended = true;
		else
			nanosleep(&(struct timespec){0, 10 * 1000 * 1000},
				  NULL);
	}
	if (!ended) {
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		close(p[0]);
		snprintf(why, why_len, "hung for %.0f s", seconds);
		return false;
	}
	while (got + 1 < (ssize_t)sizeof(out) &&
	       (n = read(p[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += n;
	out[got] = 0;
	close(p[0]);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV) {
		snprintf(why, why_len, "ended with status %#x", status);
		return false;
	}
	if (!strstr(out, "rarewrite: write to protected memory")) {
		snprintf(why, why_len, "died by SIGSEGV without the report");
		return false;
	}
	snprintf(why, why_len, "died by SIGSEGV with the report");
	return true;
}

ATTACK("23", report_fifo,
       "the loader's name of libc is pointed at a FIFO, then libc's "
       "`memset()` stores into protected memory: the process still dies "
       "by SIGSEGV, with the fault report")
{
	void (*prepare)(void) =
		(void (*)(void))attack_lib_func("rw_symbolize_prepare");
	struct link_map *lm = NULL;
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	static char fifo[64];
	char why[128];

	if (!prepare)
		attack_report(ATTACK_ERROR, "no rw_symbolize_prepare");
	/* The control: untouched, the report comes. */
	if (!dies_with_report(20, why, sizeof(why)))
		attack_report(ATTACK_ERROR, "control: %s", why);
	if (!libc || dlinfo(libc, RTLD_DI_LINKMAP, &lm) || !lm)
		/* A static program: the list names no file the loader
		 * reports (the program is /proc/self/exe); nothing to
		 * redirect. */
		attack_report(ATTACK_BLOCKED, "no loader list (static)");
	snprintf(fifo, sizeof(fifo), "/tmp/rarewrite-attack-%d.fifo",
		 (int)getpid());
	unlink(fifo);
	if (mkfifo(fifo, 0600))
		attack_report(ATTACK_ERROR, "mkfifo: %s", strerror(errno));
	attack_begin();
	attack_store64(&lm->l_name, (uint64_t)(uintptr_t)fifo);
	prepare(); /* as a dlopen()ed library's section would */
	bool reports = dies_with_report(20, why, sizeof(why));

	unlink(fifo);
	if (reports)
		attack_report(ATTACK_BLOCKED, "%s", why);
	attack_report(ATTACK_OPEN, "%s", why);
}
