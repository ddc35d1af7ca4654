// SPDX-License-Identifier: MIT
/*
 * attack_core_setuid.c - scenario 13a: whoever starts a set-user-ID program
 * sets RAREWRITE_BACKEND and RAREWRITE_NEED to choose a weaker backend for
 * it, or to make its init fail. A copy of build/tests/core-setuid is made
 * set-user-ID root and run as nobody (AT_SECURE); the attack lands when
 * what it chose differs from what it chooses with a clean environment.
 * Also the helpers of tests/test_core_setuid.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/auxv.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"
#include "core_setuid.h"

/* Copy @from to @dir/core-setuid, set-user-ID root; the path in @out. */
static int install_setuid(const char *from, const char *dir, char *out,
			  size_t out_len)
{
	char buf[65536];
	int in, fd;
	ssize_t n;

	snprintf(out, out_len, "%s/core-setuid", dir);
	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	if (fd < 0) {
		close(in);
		return -errno;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(fd, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	close(in);
	if (n < 0 || fchown(fd, 0, 0) || fchmod(fd, 04755)) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

const char *core_setuid_prepare(char *dir, size_t dir_len, char *prog,
				size_t prog_len)
{
	char self[PATH_MAX], helper[PATH_MAX + 16];
	struct statvfs vfs;
	ssize_t n;

	if (geteuid() != 0)
		return "not root: cannot make a set-user-ID-root program";
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return "no /proc/self/exe";
	self[n] = 0;
	snprintf(helper, sizeof(helper), "%s/core-setuid", dirname(self));
	/* A static program (check-vm's runner) is its own helper: see
	 * core_setuid_child(). */
	if (access(helper, X_OK) && !getauxval(AT_BASE))
		snprintf(helper, sizeof(helper), "/proc/self/exe");
	else if (access(helper, X_OK))
		return "build/tests/core-setuid is missing";
	snprintf(dir, dir_len, "/tmp/rarewrite-setuid-XXXXXX");
	if (!mkdtemp(dir))
		return "mkdtemp failed";
	if (chmod(dir, 0755) || statvfs(dir, &vfs)) {
		rmdir(dir);
		return "cannot prepare the directory";
	}
	if (vfs.f_flag & ST_NOSUID) {
		rmdir(dir);
		return "/tmp is mounted nosuid: set-user-ID bits have no "
		       "effect";
	}
	if (install_setuid(helper, dir, prog, prog_len)) {
		rmdir(dir);
		return "cannot install the set-user-ID copy";
	}
	return NULL;
}

void core_setuid_cleanup(const char *dir, const char *prog)
{
	unlink(prog);
	rmdir(dir);
}

/* Run @prog as nobody (or as root: @as_root, no AT_SECURE) with only the
 * environment @env; its one line of output into @out. */
int core_setuid_run(const char *prog, char *const env[], bool as_root,
		    char *out, size_t out_len)
{
	/* nobody (no getpwnam(): the static runner has no NSS) */
	const uid_t uid = 65534;
	const gid_t gid = 65534;
	size_t got = 0;
	int p[2], status;
	pid_t pid;

	if (pipe(p))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		char *argv[] = {(char *)prog, NULL}, *e[16];
		size_t n = 0;

		/* For a static runner standing in for the helper. */
		while (env[n] && n < 14) {
			e[n] = env[n];
			n++;
		}
		e[n++] = "RW_CORE_SETUID=1";
		e[n] = NULL;
		env = e;

		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		if (!as_root && (setgroups(0, NULL) || setgid(gid) ||
				 setuid(uid) || getuid() != uid))
			_exit(125);
		execve(prog, argv, env);
		_exit(126);
	}
	close(p[1]);
	for (;;) {
		ssize_t n = read(p[0], out + got, out_len - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = 0;
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/*
 * A static runner copied set-user-ID and run with RW_CORE_SETUID=1 does
 * what tests/setuid/core_setuid_main.c does, before main().
 */
__attribute__((constructor)) static void core_setuid_child(void)
{
	int err;

	if (!getenv("RW_CORE_SETUID") || getauxval(AT_BASE))
		return;
	err = rare_write_init();
	printf("secure=%lu init=%d backend=%s caps=%u euid=%d uid=%d\n",
	       getauxval(AT_SECURE), err, rare_write_backend(),
	       rare_write_caps(), (int)geteuid(), (int)getuid());
	fflush(stdout);
	_exit(0);
}

ATTACK("13a", env_downgrade,
       "choose a set-user-ID program's backend through its environment "
       "(RAREWRITE_BACKEND, RAREWRITE_NEED)")
{
	char dir[64], prog[128], backend[64], got[256], want[256];
	char *env[] = {backend, "RAREWRITE_NEED=begin_end", NULL};
	char *clean[] = {NULL};
	const char *why =
		core_setuid_prepare(dir, sizeof(dir), prog, sizeof(prog));
	int s1, s2;

	if (why)
		attack_report(ATTACK_ERROR, "cannot run: %s", why);
	/* The column's backend, and windows, which pwrite lacks. */
	snprintf(backend, sizeof(backend), "RAREWRITE_BACKEND=%s",
		 rare_write_backend());
	attack_begin();
	s1 = core_setuid_run(prog, env, false, got, sizeof(got));
	s2 = core_setuid_run(prog, clean, false, want, sizeof(want));
	core_setuid_cleanup(dir, prog);
	if (s1 || s2 || !strstr(want, "secure=1 init=0 "))
		attack_report(ATTACK_ERROR, "helper failed: %#x %#x %s", s1, s2,
			      want);
	got[strcspn(got, "\n")] = 0;
	want[strcspn(want, "\n")] = 0;
	attack_verdict(strcmp(got, want) != 0, got);
}
