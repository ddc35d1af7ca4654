// SPDX-License-Identifier: MIT
/*
 * fork.c - no window opens inside fork().
 *
 * The C library runs its at-fork handlers, the library's own among them
 * (core.c), from a list of plain function pointers in its writable memory:
 * a store that points an entry at rare_write_begin (or adds one) would
 * make every fork() open a window that never closes (attack 21b). No hook
 * can tell it was called from that list, so fork() itself is interposed:
 * from before the C library's fork runs the first prepare handler until
 * after the last parent or child handler returned, the table (the vault,
 * out of reach of stores) marks the forking thread, and every call that
 * can leave a window open (rare_write_begin(), rare_write_map()) aborts on
 * that thread and in the child, naming itself; other threads go on.
 *
 * One fork at a time is marked: the forks take a token from a pipe whose
 * descriptors are in the table, a lock no store can release (a mutex word
 * in writable memory could be, letting two marks race for one field).
 * The child's handlers see the mark too: those that run before the core's
 * child hook copies the table read the parent's, which keeps it until the
 * child's fork() has returned (a pipe in the table, closed by the child
 * then, or by its death), so the copy carries it, whatever a store did to
 * the core's own hooks.
 * Signals but the synchronous ones are blocked meanwhile, so no handler
 * runs on the forking thread while it is marked or holds the token (a
 * handler's fork would wait for itself); they arrive when fork() returns.
 *
 * Only fork() runs the handlers from outside the C library. vfork(),
 * _Fork(), posix_spawn() (and system(), popen(), which spawn) run none.
 * daemon() and forkpty() fork inside the C library, through its internal
 * name, which no interposition reaches: they are defined here on the
 * interposed fork(), as glibc 2.36 defines them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <paths.h>
#include <pty.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <utmp.h>

#include "internal.h"
#include "table.h"

/* The C library's fork(): exported under this name too, by libc.so and
 * libc.a (where fork itself is a weak alias). */
extern pid_t __fork(void);

static uint64_t mark_of(pid_t pid, pid_t tid)
{
	return (uint64_t)(uint32_t)pid << 32 | (uint32_t)tid;
}

static pid_t this_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

void rw_fork_refuse(const char *call)
{
	uint64_t mark = __atomic_load_n(&rw_table.fork_mark, __ATOMIC_ACQUIRE);

	if (!mark)
		return;
	if ((pid_t)(mark >> 32) != getpid())
		rw_die(call, NULL,
		       "called in the child of a fork() still running its "
		       "fork handlers (a redirected at-fork hook?): a window "
		       "opened there would outlive the fork");
	if ((pid_t)(uint32_t)mark == this_tid())
		rw_die(call, NULL,
		       "called inside fork() (a redirected at-fork hook?): a "
		       "window opened there would outlive the fork");
}

/* A new token pipe, holding its one byte, into the table. */
static int token_create(void)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	if (write(p[1], "", 1) != 1) {
		int err = -errno;

		close(p[0]);
		close(p[1]);
		return err;
	}
	TABLE_SET(rw_table.fork_token[0], p[0]);
	TABLE_SET(rw_table.fork_token[1], p[1]);
	return 0;
}

int rw_fork_setup(void)
{
	return rw_table.fork_token[0] >= 0 ? 0 : token_create();
}

static void token_take(void)
{
	char c;

	while (read(rw_table.fork_token[0], &c, 1) != 1)
		if (errno != EINTR)
			rw_die("fork", NULL, "the fork token's pipe: %s",
			       strerror(errno ? errno : EPIPE));
}

static void token_give(void)
{
	while (write(rw_table.fork_token[1], "", 1) != 1)
		if (errno != EINTR)
			rw_die("fork", NULL, "the fork token's pipe: %s",
			       strerror(errno));
}

/* The child has one thread and a table of its own (core.c's child hook):
 * its own token, no mark; then the parent may go on. */
static void child_settle(void)
{
	int err;

	close(rw_table.fork_token[0]);
	close(rw_table.fork_token[1]);
	err = token_create();
	if (err)
		rw_die("fork", NULL, "child cannot make its fork token: %s",
		       strerror(-err));
	TABLE_SET(rw_table.fork_mark, 0);
	close(rw_table.fork_wait[0]);
	close(rw_table.fork_wait[1]);
	TABLE_SET(rw_table.fork_wait[0], -1);
	TABLE_SET(rw_table.fork_wait[1], -1);
}

/* The parent: until the child's fork() returned (EOF), if there is one. */
static void parent_wait(pid_t pid)
{
	char c;

	close(rw_table.fork_wait[1]);
	if (pid > 0)
		while (read(rw_table.fork_wait[0], &c, 1) < 0 && errno == EINTR)
			;
	close(rw_table.fork_wait[0]);
	TABLE_SET(rw_table.fork_wait[0], -1);
	TABLE_SET(rw_table.fork_wait[1], -1);
}

__attribute__((visibility("default"), weak)) pid_t fork(void)
{
	static const int sync_signals[] = {SIGSEGV, SIGBUS,  SIGILL,
					   SIGFPE,  SIGTRAP, SIGSYS};
	sigset_t block, saved;
	uint64_t mark;
	int err, wait[2];
	pid_t pid;

	/* Before the first seal no hook of ours is registered and a window
	 * opens nothing. */
	if (!__atomic_load_n(&rw_table.atfork_registered, __ATOMIC_ACQUIRE))
		return __fork();
	mark = mark_of(getpid(), this_tid());
	if (__atomic_load_n(&rw_table.fork_mark, __ATOMIC_ACQUIRE) == mark)
		rw_die("fork", NULL,
		       "called from inside fork() on the same "
		       "thread (from a fork handler)");
	sigfillset(&block);
	for (unsigned i = 0; i < sizeof(sync_signals) / sizeof(int); i++)
		sigdelset(&block, sync_signals[i]);
	pthread_sigmask(SIG_BLOCK, &block, &saved);
	token_take();
	if (pipe2(wait, O_CLOEXEC)) { /* out of descriptors: as fork() */
		err = errno;
		token_give();
		pthread_sigmask(SIG_SETMASK, &saved, NULL);
		errno = err;
		return -1;
	}
	TABLE_SET(rw_table.fork_wait[0], wait[0]);
	TABLE_SET(rw_table.fork_wait[1], wait[1]);
	TABLE_SET(rw_table.fork_mark, mark);
	pid = __fork();
	err = errno;
	if (pid == 0) {
		child_settle();
	} else { /* the parent, or a fork that failed */
		parent_wait(pid);
		TABLE_SET(rw_table.fork_mark, 0);
		token_give();
	}
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	errno = err;
	return pid;
}

/* glibc 2.36's daemon(), on the interposed fork(). */
__attribute__((visibility("default"), weak)) int daemon(int nochdir,
							int noclose)
{
	struct stat st;
	int fd;

	switch (fork()) {
	case -1:
		return -1;
	case 0:
		break;
	default:
		_exit(0);
	}
	if (setsid() == -1)
		return -1;
	if (!nochdir)
		(void)!chdir("/");
	if (noclose)
		return 0;
	fd = open(_PATH_DEVNULL, O_RDWR);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st)) {
		close(fd);
		return -1;
	}
	if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
		close(fd);
		errno = ENODEV; /* no call failed */
		return -1;
	}
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > 2)
		close(fd);
	return 0;
}

/* glibc 2.36's forkpty(), on the interposed fork(). */
__attribute__((visibility("default"), weak)) int
forkpty(int *amaster, char *name, const struct termios *termp,
	const struct winsize *winp)
{
	int master, slave;
	pid_t pid;

	if (openpty(&master, &slave, name, termp, winp) == -1)
		return -1;
	switch (pid = fork()) {
	case -1:
		close(master);
		close(slave);
		return -1;
	case 0:
		close(master);
		if (login_tty(slave))
			_exit(1);
		return 0;
	default:
		*amaster = master;
		close(slave);
		return pid;
	}
}
