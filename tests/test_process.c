// SPDX-License-Identifier: MIT
/*
 * The process backend: the helper that owns the only writable mapping, its
 * validation of requests, its death, fork isolation of its socket, and many
 * writers at once. Cases skip on other backends. Forged requests use the
 * message layout (src/backend/process_ring.h) as the library's own code
 * would.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <linux/capability.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#include "attack.h"
#include "harness.h"
#include "testutil.h"
#include "../src/backend/process_ring.h"

static long guarded __wr_rare = 7;
static long guarded_array[64] __wr_rare;
static long plain_target = 5;

static void need_process(void)
{
	if (strcmp(test_backend(), "process"))
		SKIP("process backend only");
}

/* The control socket: the one AF_UNIX SOCK_SEQPACKET descriptor. */
/* The inode of the memfd called @name among our descriptors, or 0. */
static unsigned long memfd_inode(const char *name)
{
	char path[64], link[256], want[64];

	snprintf(want, sizeof(want), "/memfd:%s ", name);
	for (int fd = 0; fd < 1024; fd++) {
		struct stat st;
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 2);
		if (n < 0)
			continue;
		link[n] = ' ';
		link[n + 1] = 0;
		if (strstr(link, want) && !fstat(fd, &st))
			return st.st_ino;
	}
	return 0;
}

static int find_ctl_socket(void)
{
	for (int fd = 3; fd < 1024; fd++) {
		int type, domain;
		socklen_t l = sizeof(int);

		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l))
			continue;
		l = sizeof(int);
		if (!getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) &&
		    domain == AF_UNIX && type == SOCK_SEQPACKET)
			return fd;
	}
	return -1;
}

/* The helper's answer page: the program's one mapping of its memfd. */
static const struct prw_answer *answer_page(void)
{
	const struct prw_answer *a = NULL;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	CHECK(f);
	while (!a && fgets(line, sizeof(line), f)) {
		unsigned long lo;

		if (strstr(line, "/memfd:rarewrite-answer") &&
		    sscanf(line, "%lx-", &lo) == 1)
			a = (const struct prw_answer *)lo;
	}
	fclose(f);
	CHECK(a);
	return a;
}

/* The helper's answer to the request sent after its count was @before. */
static int32_t answer_after(const struct prw_answer *a, uint32_t before)
{
	struct timespec t = {0, 100000};

	for (int i = 0; i < 100000 &&
			__atomic_load_n(&a->count, __ATOMIC_ACQUIRE) == before;
	     i++)
		nanosleep(&t, NULL);
	CHECK(__atomic_load_n(&a->count, __ATOMIC_ACQUIRE) == before + 1);
	return a->err;
}

/*
 * Send a request of @nseg segments followed by @data on the library's
 * socket, as the program's own code does (a system call the attacker of
 * the threat model cannot make), and return the helper's answer.
 */
static int32_t forge(int sock, uint32_t nseg, const struct prw_seg *segs,
		     unsigned n, const void *data, size_t data_len)
{
	static uint64_t seq = 0xf0000000u;
	const struct prw_answer *a = answer_page();
	uint32_t before = __atomic_load_n(&a->count, __ATOMIC_ACQUIRE);
	struct prw_msg m = {.op = PRW_OP_WRITE, .nseg = nseg, .seq = ++seq};
	struct iovec iov[3] = {{&m, sizeof(m)},
			       {(void *)segs, n * sizeof(*segs)},
			       {(void *)data, data_len}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 3};

	CHECK(sendmsg(sock, &mh, 0) ==
	      (ssize_t)(sizeof(m) + n * sizeof(*segs) + data_len));
	return answer_after(a, before);
}

TEST(process_forged_out_of_region_requests_refused, EXPECT_PASS)
{
	uint64_t evil = 0x4141414141414141ULL;
	struct rare_pool *pool;
	long *obj;
	int sock;

	need_process();
	init();
	pool = rare_pool_create(4096);
	CHECK(pool);
	obj = rare_alloc(pool, 4096); /* the pool's last page */
	CHECK(obj);
	rare_write(guarded, 11L);
	sock = find_ctl_socket();
	CHECK(sock >= 0);

	/* A plain (unprotected) global of the program. */
	struct prw_seg plain = {(uintptr_t)&plain_target, 8, 0, 0};
	CHECK(forge(sock, 1, &plain, 1, &evil, 8) == -EINVAL);
	/* Across the end of the pool (its last 4 bytes and beyond). */
	struct prw_seg cross = {(uintptr_t)obj + 4092, 8, 0, 0};
	CHECK(forge(sock, 1, &cross, 1, &evil, 8) == -EINVAL);
	/* The library's code. */
	struct prw_seg code = {(uintptr_t)rare_write_init, 8, 0, 0};
	CHECK(forge(sock, 1, &code, 1, &evil, 8) == -EINVAL);
	/* A valid segment then an invalid one: nothing of it is applied. */
	struct prw_seg two[2] = {
		{(uintptr_t)&guarded, 8, PRW_SEG_FILL, 0x41},
		{(uintptr_t)&plain_target, 8, PRW_SEG_FILL, 0x41},
	};
	CHECK(forge(sock, 2, two, 2, NULL, 0) == -EINVAL);
	/* More data claimed than sent, or less; length wrapping; no
	 * segments; more segments than sent; zero length; unknown flags. */
	struct prw_seg more = {(uintptr_t)&guarded, 16, 0, 0};
	CHECK(forge(sock, 1, &more, 1, &evil, 8) == -EINVAL);
	struct prw_seg less = {(uintptr_t)&guarded, 4, 0, 0};
	CHECK(forge(sock, 1, &less, 1, &evil, 8) == -EINVAL);
	struct prw_seg wrap = {(uintptr_t)&guarded, UINT64_MAX - 2,
			       PRW_SEG_FILL, 0};
	CHECK(forge(sock, 1, &wrap, 1, NULL, 0) == -EINVAL);
	CHECK(forge(sock, 0, NULL, 0, NULL, 0) == -EINVAL);
	CHECK(forge(sock, 100000, &plain, 1, NULL, 0) == -EINVAL);
	CHECK(forge(sock, 2, &plain, 1, NULL, 0) == -EINVAL);
	struct prw_seg zero = {(uintptr_t)&guarded, 0, PRW_SEG_FILL, 0};
	CHECK(forge(sock, 1, &zero, 1, NULL, 0) == -EINVAL);
	struct prw_seg flags = {(uintptr_t)&guarded, 8, 0x80, 0};
	CHECK(forge(sock, 1, &flags, 1, &evil, 8) == -EINVAL);

	CHECK(guarded == 11);
	CHECK(plain_target == 5);
	CHECK(obj[511] == 0);
	/* The channel still works: a well-formed request is applied (it is
	 * within protected memory, as rare_write() would be). */
	struct prw_seg ok = {(uintptr_t)&guarded, 8, 0, 0};
	CHECK(forge(sock, 1, &ok, 1, &evil, 8) == 0);
	CHECK((uint64_t)guarded == evil);
	rare_write(guarded, 12L);
	CHECK(guarded == 12);
}

/* A piece of the call of @len bytes at @start (process_ring.h): @plen
 * bytes of @data at @dst, forged on the socket; the helper's answer. */
static int32_t forge_piece(int sock, uintptr_t start, size_t len, uintptr_t dst,
			   size_t plen, const void *data)
{
	static uint64_t seq = 0xe0000000u;
	const struct prw_answer *a = answer_page();
	uint32_t before = __atomic_load_n(&a->count, __ATOMIC_ACQUIRE);
	struct prw_msg m = {.op = PRW_OP_WRITE,
			    .nseg = 1,
			    .seq = ++seq,
			    .start = start,
			    .len = len};
	struct prw_seg seg = {dst, plen, 0, 0};
	struct iovec iov[3] = {
		{&m, sizeof(m)}, {&seg, sizeof(seg)}, {(void *)data, plen}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 3};

	CHECK(sendmsg(sock, &mh, 0) ==
	      (ssize_t)(sizeof(m) + sizeof(seg) + plen));
	return answer_after(a, before);
}

/*
 * The helper keeps a write in pieces (process_ring.h): the first piece
 * opens the call at its start, and until the call is done the helper
 * takes nothing but its next piece, whatever the requests say. Forged on
 * the socket (a system call the attacker of the threat model cannot
 * make), to show the rules the library's own requests meet.
 */
TEST(process_helper_takes_only_the_calls_next_piece, EXPECT_PASS)
{
	const uintptr_t at = (uintptr_t)guarded_array;
	const struct prw_answer *a;
	unsigned char data[128];
	uint64_t evil = 0x4141414141414141ULL;
	int sock;

	need_process();
	init();
	rare_write(guarded, 21L);
	sock = find_ctl_socket();
	CHECK(sock >= 0);
	a = answer_page();
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i + 1);

	/* A first piece not at the call's start; one cut off an 8-byte
	 * boundary; one longer than the call. */
	CHECK(forge_piece(sock, at, 64, at + 8, 16, data) == -EINVAL);
	CHECK(forge_piece(sock, at, 64, at, 12, data) == -EINVAL);
	CHECK(forge_piece(sock, at, 8, at, 16, data) == -EINVAL);
	/* The call opens. */
	CHECK(forge_piece(sock, at, 64, at, 16, data) == 0);
	CHECK(a->call_dst == at && a->call_len == 64 && a->call_done == 16);
	/* While it is open: no other write, not even a good one. */
	struct prw_seg other = {(uintptr_t)&guarded, 8, 0, 0};
	CHECK(forge(sock, 1, &other, 1, &evil, 8) == -EBUSY);
	CHECK(guarded == 21);
	/* Not its next piece: skipped ahead, another call's, past its end. */
	CHECK(forge_piece(sock, at, 64, at + 24, 8, data + 24) == -EINVAL);
	CHECK(forge_piece(sock, at + 8, 56, at + 16, 8, data + 16) == -EINVAL);
	CHECK(forge_piece(sock, at, 72, at + 16, 8, data + 16) == -EINVAL);
	CHECK(forge_piece(sock, at, 64, at + 16, 56, data + 16) == -EINVAL);
	/* Its next piece, to the end: the call is done (the helper still
	 * expected it where the first ended). */
	CHECK(forge_piece(sock, at, 64, at + 16, 48, data + 16) == 0);
	CHECK(a->call_done == 64);
	CHECK(!memcmp(guarded_array, data, 64));
	rare_write(guarded, 22L);
	CHECK(guarded == 22);
}

/* Run @fn in a child with stderr captured; return its wait status and the
 * captured text in @out. */
static int run_capturing(void (*fn)(void *), char *out, size_t len)
{
	int p[2], status, saved;
	ssize_t n, got = 0;

	CHECK(!pipe(p));
	saved = dup(STDERR_FILENO);
	dup2(p[1], STDERR_FILENO);
	status = run_in_child(fn, NULL);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(p[1]);
	while (got < (ssize_t)len - 1 &&
	       (n = read(p[0], out + got, len - 1 - (size_t)got)) > 0)
		got += n;
	out[got] = 0;
	close(p[0]);
	return status;
}

static void kill_helper_then_write(void *unused)
{
	pid_t helper;

	(void)unused;
	init();
	rare_write(guarded, 1L);
	helper = find_helper();
	CHECK(helper > 0);
	CHECK(!kill(helper, SIGKILL));
	usleep(20000);
	rare_write(guarded, 2L); /* must abort */
	fprintf(stderr, "write after helper death returned\n");
}

TEST(process_helper_killed_next_write_aborts, EXPECT_PASS)
{
	char msg[1024];
	int status;

	need_process();
	status = run_capturing(kill_helper_then_write, msg, sizeof(msg));
	if (child_killed_by(status) != SIGABRT)
		fprintf(stderr, "status %#x, stderr: %s\n", status, msg);
	CHECK(child_killed_by(status) == SIGABRT);
	CHECK(strstr(msg, "rarewrite: rare_write_memcpy("));
	CHECK(strstr(msg, "helper"));
	CHECK(strstr(msg, "killed by signal 9"));
	CHECK(!strstr(msg, "returned"));
	/* One line. */
	CHECK(strchr(msg, '\n') == msg + strlen(msg) - 1);
}

/* Unregister every region behind the library's back (forged control
 * messages), so the helper refuses the library's next write. */
static void unregister_then_write(void *unused)
{
	int sock;

	(void)unused;
	init();
	rare_write(guarded, 1L);
	sock = find_ctl_socket();
	CHECK(sock >= 0);
	for (uint64_t id = 1; id <= 16; id++) {
		const struct prw_answer *a = answer_page();
		uint32_t before = __atomic_load_n(&a->count, __ATOMIC_ACQUIRE);
		struct prw_msg m = {.op = PRW_OP_DEL, .id = id, .seq = ~id};

		CHECK(send(sock, &m, sizeof(m), 0) == sizeof(m));
		answer_after(a, before);
	}
	rare_write(guarded, 2L); /* refused: must abort */
	fprintf(stderr, "refused write returned\n");
}

TEST(process_refused_write_aborts_and_lands_nowhere, EXPECT_PASS)
{
	char msg[1024];
	int status;

	need_process();
	status = run_capturing(unregister_then_write, msg, sizeof(msg));
	if (child_killed_by(status) != SIGABRT)
		fprintf(stderr, "status %#x, stderr: %s\n", status, msg);
	CHECK(child_killed_by(status) == SIGABRT);
	CHECK(strstr(msg, "refused"));
	CHECK(!strstr(msg, "returned"));
}

TEST(process_fork_child_has_own_copy_and_helper, EXPECT_PASS)
{
	int to_child[2], to_parent[2], status;
	pid_t pid, parent_helper;
	char c;

	need_process();
	init();
	rare_write(guarded, 1L);
	parent_helper = find_helper();
	CHECK(parent_helper > 0);
	CHECK(!pipe(to_child) && !pipe(to_parent));
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		pid_t mine = find_helper();

		if (mine <= 0 || mine == parent_helper)
			_exit(10);
		rare_write(guarded, 2L);
		if (guarded != 2)
			_exit(11);
		CHECK(write(to_parent[1], "w", 1) == 1);
		CHECK(read(to_child[0], &c, 1) == 1); /* parent wrote 3 */
		_exit(guarded == 2 ? 0 : 12);
	}
	CHECK(read(to_parent[0], &c, 1) == 1);
	CHECK(guarded == 1); /* the child's write stayed in the child */
	rare_write(guarded, 3L);
	CHECK(write(to_child[1], "p", 1) == 1);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(guarded == 3);
}

struct parent_channels {
	unsigned long sock_inode, table_inode;
	pid_t helper, parent;
};

/*
 * Run on as an attacker of the same uid without CAP_SYS_PTRACE (which
 * defeats any user-space protection; the suite often runs as root).
 */
static void drop_ptrace_capability(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	CHECK(!syscall(SYS_capget, &h, d));
	d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
	d[CAP_SYS_PTRACE / 32].permitted &= ~(1u << (CAP_SYS_PTRACE % 32));
	CHECK(!syscall(SYS_capset, &h, d));
}

/* The attacker in the child: every channel to the parent's helper. */
static void fork_attacker(void *arg)
{
	const struct parent_channels *pc = arg;
	long evil = 666;
	char path[300], link[256];
	struct iovec local = {&evil, sizeof(evil)};
	struct iovec remote = {&guarded, sizeof(guarded)};
	DIR *d;
	struct dirent *e;
	int fd;

	/* 3. No descriptor is the parent's socket, none is a memfd of
	 * protected memory (the child's own are closed too). */
	d = opendir("/proc/self/fd");
	CHECK(d);
	while ((e = readdir(d))) {
		struct stat st;
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = 0;
		/* The child's own copy of the library's table is its own:
		 * never the parent's. */
		if (strstr(link, "/memfd:rarewrite-table") &&
		    !stat(path, &st) && st.st_ino == pc->table_inode)
			_exit(29);
		/* A region's memfd is kept to be read (by a fork child's
		 * copy); its seals must make it useless for writing. */
		if (strstr(link, "/memfd:rarewrite") &&
		    !strstr(link, "rarewrite-table")) {
			int rfd = atoi(e->d_name);
			char b = 0x41;

			if (pwrite(rfd, &b, 1, 0) >= 0 ||
			    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
				 rfd, 0) != MAP_FAILED)
				_exit(22);
		}
		if (!stat(path, &st) && S_ISSOCK(st.st_mode) &&
		    st.st_ino == pc->sock_inode)
			_exit(23);
	}
	closedir(d);
	/* 4. The parent's helper admits no debugger and no /proc/pid/mem. */
	drop_ptrace_capability();
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pc->helper);
	fd = open(path, O_RDWR);
	if (fd >= 0)
		_exit(24);
	if (ptrace(PTRACE_SEIZE, pc->helper, NULL, NULL) == 0)
		_exit(25);
	if (process_vm_writev(pc->helper, &local, 1, &remote, 1, 0) >= 0)
		_exit(26);
	/* 5. Nor can the parent's read-only view be written from outside. */
	if (process_vm_writev(pc->parent, &local, 1, &remote, 1, 0) >= 0)
		_exit(27);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pc->parent);
	fd = open(path, O_RDWR);
	if (fd >= 0) {
		ssize_t n = pwrite(fd, &evil, sizeof(evil),
				   (off_t)(uintptr_t)&guarded);

		close(fd);
		if (n == sizeof(evil))
			_exit(28);
	}
	/* 6. Forge through every socket the child has: only its own helper
	 * can answer, and it holds only the child's own copies. */
	for (int s = 3; s < 1024; s++) {
		struct prw_msg m = {.op = PRW_OP_DEL, .id = 1};

		send(s, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	_exit(0);
}

TEST(process_fork_child_cannot_reach_parent_helper, EXPECT_PASS)
{
	struct parent_channels pc = {0};
	struct stat st;
	int sock, status;

	need_process();
	init();
	rare_write(guarded, 1L);
	pc.helper = find_helper();
	pc.parent = getpid();
	sock = find_ctl_socket();
	CHECK(pc.helper > 0 && sock >= 0);
	CHECK(!fstat(sock, &st));
	pc.sock_inode = st.st_ino;
	pc.table_inode = memfd_inode("rarewrite-table");
	CHECK(pc.table_inode);
	status = run_in_child(fork_attacker, &pc);
	if (status != CHILD_OK)
		fprintf(stderr, "attacker status %#x\n", status);
	CHECK(status == CHILD_OK);
	CHECK(guarded == 1);
	rare_write(guarded, 2L); /* the parent's helper still serves */
	CHECK(guarded == 2);
	CHECK(find_helper() == pc.helper);
}

TEST(process_no_writable_mapping_in_program, EXPECT_PASS)
{
	struct rare_pool *pool;
	char line[512];
	long *obj;
	FILE *f;

	need_process();
	init();
	pool = rare_pool_create(1 << 16);
	CHECK(pool);
	obj = rare_alloc(pool, 64);
	CHECK(obj);
	rare_write(obj[0], 1L);
	f = fopen("/proc/self/maps", "r");
	CHECK(f);
	while (fgets(line, sizeof(line), f)) {
		char perms[8];

		if (!strstr(line, "/memfd:rarewrite"))
			continue;
		CHECK(sscanf(line, "%*x-%*x %7s", perms) == 1);
		CHECK(perms[1] == '-');
		CHECK(perms[3] == 's');
	}
	fclose(f);
	/* Sealed before the view was mapped: it cannot be made writable. */
	CHECK(mprotect((void *)((uintptr_t)&guarded & ~4095UL), 4096,
		       PROT_READ | PROT_WRITE) < 0);
	CHECK(mprotect((void *)((uintptr_t)obj & ~4095UL), 4096,
		       PROT_READ | PROT_WRITE) < 0);
	rare_write(obj[0], 2L);
	CHECK(obj[0] == 2);
}

TEST(process_helper_closes_inherited_descriptors, EXPECT_PASS)
{
	struct pollfd pfd;
	int p[2];
	char c;

	need_process();
	/* Not close-on-exec: the helper inherits it and must close it. */
	CHECK(!pipe(p));
	init();
	close(p[1]);
	pfd = (struct pollfd){.fd = p[0], .events = POLLIN};
	CHECK(poll(&pfd, 1, 5000) == 1);
	CHECK(read(p[0], &c, 1) == 0); /* EOF: no copy of the end remains */
}

TEST(process_helper_invisible_to_wait_and_undebuggable, EXPECT_PASS)
{
	char path[64];
	pid_t helper;
	int status;

	need_process();
	init();
	helper = find_helper();
	CHECK(helper > 0);
	/* Not a SIGCHLD child: the program's wait(-1) never sees it. */
	errno = 0;
	CHECK(waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD);
	/* Non-dumpable: no debugger, no /proc/<pid>/mem, even for its own
	 * uid. */
	drop_ptrace_capability();
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)helper);
	CHECK(open(path, O_RDWR) < 0);
	CHECK(ptrace(PTRACE_SEIZE, helper, NULL, NULL) < 0);
}

static void *init_and_exit(void *unused)
{
	(void)unused;
	init();
	return NULL;
}

TEST(process_helper_survives_initialising_thread, EXPECT_PASS)
{
	pthread_t t;

	need_process();
	/* PR_SET_PDEATHSIG fires when the creating thread exits. */
	CHECK(!pthread_create(&t, NULL, init_and_exit, NULL));
	CHECK(!pthread_join(t, NULL));
	usleep(50000);
	rare_write(guarded, 4L);
	CHECK(guarded == 4);
	CHECK(find_helper() > 0);
}

TEST(process_helper_dies_with_program, EXPECT_PASS)
{
	int p[2], status;
	pid_t helper = 0;

	need_process();
	CHECK(!pipe(p));
	status = run_in_child(init_report_helper_exit, &p[1]);
	CHECK(status == CHILD_OK);
	CHECK(read(p[0], &helper, sizeof(helper)) == sizeof(helper));
	CHECK(helper > 0);
	/* Up to 30 s: on a loaded machine the dying helper may wait long
	 * for a CPU; a pass waits only as long as it takes. */
	for (int i = 0; i < 3000; i++) {
		char path[64], buf[256];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)helper);
		f = fopen(path, "r");
		if (!f)
			return; /* gone and reaped */
		buf[0] = 0;
		if (fgets(buf, sizeof(buf), f) && strstr(buf, ") Z")) {
			fclose(f);
			return; /* exited, awaiting its new parent */
		}
		fclose(f);
		usleep(10000);
	}
	CHECK(!"helper outlived its program");
}

#define WRITERS 8
#define ROUNDS 3000

static struct rare_pool *mt_pool;
static long *mt_objs[WRITERS];
static volatile bool mt_stop;

static void *writer(void *arg)
{
	long i = (long)arg;

	for (long n = 1; n <= ROUNDS; n++) {
		rare_write(guarded_array[i], n);
		rare_write(mt_objs[i][0], n);
		/* Readers check that both halves always match. */
		rare_write(guarded_array[32],
			   (long)(n & 1 ? 0x1111111111111111L
					: 0x2222222222222222L));
		if (guarded_array[i] != n || mt_objs[i][0] != n)
			return (void *)1;
	}
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	while (!mt_stop) {
		long v = __atomic_load_n(&guarded_array[32], __ATOMIC_RELAXED);

		if (v && v != 0x1111111111111111L && v != 0x2222222222222222L)
			return (void *)1;
	}
	return NULL;
}

TEST(process_many_threads_write_at_once, EXPECT_PASS)
{
	pthread_t w[WRITERS], r;
	void *ret;

	need_process();
	init();
	mt_pool = rare_pool_create(WRITERS * 64);
	CHECK(mt_pool);
	for (int i = 0; i < WRITERS; i++)
		CHECK((mt_objs[i] = rare_alloc(mt_pool, 64)));
	CHECK(!pthread_create(&r, NULL, reader, NULL));
	for (long i = 0; i < WRITERS; i++)
		CHECK(!pthread_create(&w[i], NULL, writer, (void *)i));
	for (int i = 0; i < WRITERS; i++) {
		CHECK(!pthread_join(w[i], &ret));
		CHECK(!ret);
	}
	mt_stop = true;
	CHECK(!pthread_join(r, &ret));
	CHECK(!ret);
	for (int i = 0; i < WRITERS; i++) {
		CHECK(guarded_array[i] == ROUNDS);
		CHECK(mt_objs[i][0] == ROUNDS);
	}
}

/* Writes larger than one message (PRW_MAX_DATA) go in pieces, in order. */
TEST(process_big_requests_land_whole, EXPECT_PASS)
{
	size_t len = 3 << 20;
	struct rare_pool *pool;
	struct rare_write_mapping m;
	unsigned char *obj, *src;

	need_process();
	init();
	pool = rare_pool_create(4 << 20);
	CHECK(pool);
	obj = rare_alloc(pool, len);
	src = malloc(len);
	CHECK(obj && src);
	for (size_t i = 0; i < len; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	rare_write_memcpy(obj, src, len);
	CHECK(!memcmp(obj, src, len));
	m = rare_write_map(obj + 100, 70000);
	CHECK(m.addr != obj + 100); /* a private staging copy */
	memset(m.addr, 0x5a, 70000);
	CHECK(obj[100] == src[100]); /* nothing lands before unmap */
	rare_write_unmap(m);
	CHECK(obj[100] == 0x5a && obj[70099] == 0x5a);
	CHECK(obj[70100] == src[70100]);
	rare_free(pool, obj);
	free(src);
}

/*
 * The helper's seccomp filter, installed by the helper's own function in a
 * child: the calls of its loop pass, any other kills it with SIGSYS.
 */
/* Leaving by the system call itself: a sanitizer's _exit() makes calls of
 * its own. */
static void filtered_loop_calls(void *arg)
{
	int (*install)(void) = (int (*)(void))arg;
	struct msghdr mh = {0};
	struct stat st;

	if (install())
		syscall(SYS_exit_group, 3);
	syscall(SYS_recvmsg, -1, &mh, 0);
	syscall(SYS_sendto, -1, NULL, 0, 0, NULL, 0);
	syscall(SYS_fcntl, -1, F_GET_SEALS);
	syscall(SYS_fstat, -1, &st);
	syscall(SYS_getcpu, NULL, NULL, NULL);
	syscall(SYS_futex, NULL, FUTEX_WAKE_BITSET, 1, NULL, NULL, 1);
	syscall(SYS_munmap, NULL, 0);
	syscall(SYS_close, -1);
	syscall(SYS_exit_group, 0);
}

static void filtered_forbidden_call(void *arg)
{
	int (*install)(void) = (int (*)(void))arg;

	if (install())
		syscall(SYS_exit_group, 3);
	syscall(SYS_getpid); /* not a call of the loop */
	syscall(SYS_exit_group, 0);
}

/* futex is allowed only to wake (the answer page): not to wait, nor
 * anything else the call can do. */
static void filtered_futex_wait(void *arg)
{
	int (*install)(void) = (int (*)(void))arg;
	uint32_t word = 1;

	if (install())
		syscall(SYS_exit_group, 3);
	syscall(SYS_futex, &word, FUTEX_WAIT, 0, NULL, NULL, 0);
	syscall(SYS_exit_group, 0);
}

static void filtered_exec_mapping(void *arg)
{
	int (*install)(void) = (int (*)(void))arg;

	if (install())
		syscall(SYS_exit_group, 3);
	mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
	     0);
	syscall(SYS_exit_group, 0);
}

static int seccomp_mode(pid_t pid)
{
	char path[64], line[256];
	int mode = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	fclose(f);
	return mode;
}

TEST(process_helper_seccomp_allows_only_its_loop, EXPECT_PASS)
{
	void *install = attack_lib_func("prw_helper_seccomp");

	need_process();
	init();
	CHECK(install);
	CHECK(seccomp_mode(find_helper()) == 2); /* the live helper: filter */
	CHECK(run_in_child(filtered_loop_calls, install) == CHILD_OK);
	CHECK(child_killed_by(run_in_child(filtered_forbidden_call, install)) ==
	      SIGSYS);
	CHECK(child_killed_by(run_in_child(filtered_exec_mapping, install)) ==
	      SIGSYS);
	CHECK(child_killed_by(run_in_child(filtered_futex_wait, install)) ==
	      SIGSYS);
}

static bool have_cap_sys_ptrace(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	return !syscall(SYS_capget, &h, d) &&
	       (d[CAP_SYS_PTRACE / 32].effective &
		(1u << (CAP_SYS_PTRACE % 32)));
}

/*
 * In a child with a helper of its own: stop the helper at its next system
 * call (ptrace, which only CAP_SYS_PTRACE allows on the non-dumpable
 * helper), turn that call into getpid(), which the filter forbids, and
 * write: the write must abort naming the seccomp kill.
 */
static void helper_forbidden_then_write(void *arg)
{
	pid_t h = find_helper();
	struct user_regs_struct regs;
	int st;

	(void)arg;
	if (h <= 0 || ptrace(PTRACE_SEIZE, h, NULL, PTRACE_O_TRACESYSGOOD) ||
	    ptrace(PTRACE_INTERRUPT, h, NULL, NULL) ||
	    waitpid(h, &st, __WALL) != h)
		_exit(40);
	do {
		if (ptrace(PTRACE_SYSCALL, h, NULL, NULL) ||
		    waitpid(h, &st, __WALL) != h)
			_exit(41);
	} while (!WIFSTOPPED(st) || WSTOPSIG(st) != (SIGTRAP | 0x80));
	if (ptrace(PTRACE_GETREGS, h, NULL, &regs))
		_exit(42);
	regs.orig_rax = SYS_getpid;
	if (ptrace(PTRACE_SETREGS, h, NULL, &regs) ||
	    ptrace(PTRACE_DETACH, h, NULL, NULL))
		_exit(43);
	rare_write(guarded, 9L);
	_exit(44); /* the write went through: the helper lived */
}

TEST(process_helper_seccomp_kill_is_reported, EXPECT_PASS)
{
	char msg[1024];
	int status;

	need_process();
	if (!have_cap_sys_ptrace())
		SKIP("needs CAP_SYS_PTRACE to make the helper misbehave");
	init();
	status = run_captured(helper_forbidden_then_write, NULL, msg,
			      sizeof(msg));
	if (child_killed_by(status) != SIGABRT)
		fprintf(stderr, "status %#x: %s\n", status, msg);
	CHECK(child_killed_by(status) == SIGABRT);
	CHECK(strstr(msg, "seccomp") && strstr(msg, "SIGSYS"));
	CHECK(guarded != 9);
}

static long status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)) &&
		    sscanf(line + strlen(field), ": %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * The helper starts as a copy of the program but keeps none of its
 * anonymous memory: 32 MiB the program has touched before init stay out of
 * the helper's resident set (and the helper still serves).
 */
TEST(process_helper_keeps_no_copy_of_program_memory, EXPECT_PASS)
{
	size_t big = 32 << 20;
	char *buf = malloc(big);
	pid_t h;

	need_process();
#ifdef __SANITIZE_ADDRESS__
	SKIP("the helper keeps AddressSanitizer's shadow memory");
#endif
	CHECK(buf);
	memset(buf, 1, big);
	init();
	rare_write(guarded, 5L);
	CHECK(guarded == 5);
	h = find_helper();
	CHECK(h > 0);
	CHECK(status_kb(getpid(), "RssAnon") > 32 * 1024);
	if (status_kb(h, "RssAnon") >= 8 * 1024)
		fprintf(stderr, "helper RssAnon %ld kB\n",
			status_kb(h, "RssAnon"));
	CHECK(status_kb(h, "RssAnon") < 8 * 1024);
	free(buf);
}

/*
 * Control of scribbler 15a/15b on this backend: a write request sits in the
 * program's memory from its construction to sendmsg(2), where a store of
 * another thread can rewrite it. Here a tracer rewrites it at the latest
 * such moment, the system call's entry, every time: the helper applies the
 * rewritten request, and the call must then die (the echo of what the
 * helper applied differs from what the call holds in registers) instead of
 * returning. Each case fails if the call returns or dies of anything else.
 */
static long echo_target __wr_rare;
static long echo_other __wr_rare;
static long echo_array[8] __wr_rare;

enum tamper { TAMPER_DST, TAMPER_DATA, TAMPER_SEQ, TAMPER_SEGS };

static bool tamper_request(pid_t pid, unsigned long mh_addr, enum tamper how)
{
	struct msghdr mh;
	struct iovec iov, local, remote;
	struct {
		struct prw_msg m;
		struct prw_seg seg;
		uint64_t data;
	} req;

	local = (struct iovec){&mh, sizeof(mh)};
	remote = (struct iovec){(void *)mh_addr, sizeof(mh)};
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != sizeof(mh))
		return false;
	local = (struct iovec){&iov, sizeof(iov)};
	remote = (struct iovec){mh.msg_iov, sizeof(iov)};
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != sizeof(iov) ||
	    iov.iov_len < sizeof(req.m) + sizeof(req.seg))
		return false;
	local = (struct iovec){&req, sizeof(req.m) + sizeof(req.seg)};
	remote = (struct iovec){iov.iov_base, local.iov_len};
	if (how == TAMPER_DATA)
		local.iov_len = remote.iov_len = sizeof(req);
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) !=
		    (ssize_t)local.iov_len ||
	    req.m.op != PRW_OP_WRITE)
		return false;
	switch (how) {
	case TAMPER_DST:
		if (req.seg.dst != (uintptr_t)&echo_target)
			return false;
		req.seg.dst = (uintptr_t)&echo_other;
		break;
	case TAMPER_DATA:
		req.data = 0x4141414141414141ULL;
		break;
	case TAMPER_SEQ:
		req.m.seq += 1000;
		break;
	case TAMPER_SEGS:
		if (req.seg.dst != (uintptr_t)&echo_array[0])
			return false;
		req.seg.dst = (uintptr_t)&echo_array[4];
		/* The call's start too, so that the helper applies it. */
		if (req.m.start == (uintptr_t)&echo_array[0])
			req.m.start = (uintptr_t)&echo_array[4];
		break;
	}
	return process_vm_writev(pid, &local, 1, &remote, 1, 0) ==
	       (ssize_t)local.iov_len;
}

static void tampered_write_dies(enum tamper how, const char *says)
{
	static const long src[3] = {1, 2, 3};
	char out[4096] = "";
	int fds[2], status;
	bool done = false;
	size_t have = 0;
	ssize_t n;
	pid_t pid;

	need_process();
	init();
	rare_write(echo_target, 1L);
	CHECK(pipe(fds) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		dup2(fds[1], 2);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) || raise(SIGSTOP))
			_exit(3);
		if (how == TAMPER_SEGS)
			rare_write_memcpy(echo_array, src, sizeof(src));
		else
			rare_write(echo_target, 0x1234L);
		_exit(0); /* the call returned: the control failed */
	}
	close(fds[1]);
	CHECK(waitpid(pid, &status, 0) == pid && WIFSTOPPED(status));
	CHECK(!ptrace(PTRACE_SETOPTIONS, pid, 0,
		      PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL));
	for (int sig = 0;;) {
		struct __ptrace_syscall_info info;

		CHECK(!ptrace(PTRACE_SYSCALL, pid, 0, sig));
		sig = 0;
		CHECK(waitpid(pid, &status, 0) == pid);
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			sig = WSTOPSIG(status);
			continue;
		}
		if (!done &&
		    ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof(info), &info) >
			    0 &&
		    info.op == PTRACE_SYSCALL_INFO_ENTRY &&
		    info.entry.nr == SYS_sendmsg)
			done = tamper_request(pid, info.entry.args[1], how);
	}
	while (have < sizeof(out) - 1 &&
	       (n = read(fds[0], out + have, sizeof(out) - 1 - have)) > 0)
		have += (size_t)n;
	out[have] = 0;
	close(fds[0]);
	if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) ||
	    !strstr(out, says))
		fprintf(stderr, "rewritten: %d; status %#x; stderr: %s\n", done,
			status, out);
	CHECK(done);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	CHECK(strstr(out, says));
}

TEST(process_request_destination_rewritten_aborts, EXPECT_PASS)
{
	tampered_write_dies(TAMPER_DST, "applied another write than this "
					"call's");
}

TEST(process_request_value_rewritten_aborts, EXPECT_PASS)
{
	tampered_write_dies(TAMPER_DATA, "applied another write than this "
					 "call's");
}

TEST(process_request_seq_rewritten_aborts, EXPECT_PASS)
{
	tampered_write_dies(TAMPER_SEQ, "answered another request than this "
					"call's");
}

TEST(process_segments_destination_rewritten_aborts, EXPECT_PASS)
{
	tampered_write_dies(TAMPER_SEGS, "applied another write than this "
					 "call's");
}

/*
 * The review of 15a on this backend (docs/attack-matrix.md, "15a on
 * process"): three ways a write of another size than 1, 2, 4 or 8 bytes,
 * or two calls at once, got past the echo. Each is staged in a traced
 * child (the parent stands in for the racing store, at the moment a
 * single step or a system-call stop gives it); each fails if the
 * moved write lands and the call returns. An abort counts as held.
 */
struct review_share {
	const struct prw_answer *page; /* the child's answer page */
	unsigned char *obj;	       /* the call's destination */
	size_t len;		       /* its length */
	unsigned char *victim;	       /* where the attack moves it */
	int go[2], done[2];	       /* test 3: the second thread's pipes */
	uint32_t before;	       /* test 3: the count at the first send */
};

static struct review_share *review;

static void review_share_new(void)
{
	review = mmap(NULL, sizeof(*review), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(review != MAP_FAILED);
	memset(review, 0, sizeof(*review));
}

/* While set, the tracer single-steps the child and looks after each
 * instruction (a watchpoint in software: this machine's hypervisor gives
 * a tracer no hardware watchpoints). */
static bool review_step;
/* Once set, the child runs on without system-call stops. */
static bool review_cont;

static bool peek(pid_t pid, uintptr_t at, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)at, len};

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static bool poke(pid_t pid, uintptr_t at, const void *buf, size_t len)
{
	struct iovec local = {(void *)buf, len}, remote = {(void *)at, len};

	return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* The head of the request at sendmsg(2)'s entry (@mh_addr, the child's):
 * its message and first segment, and where they are. */
static bool request_head(pid_t pid, unsigned long mh_addr, struct prw_msg *m,
			 struct prw_seg *seg, uintptr_t *at)
{
	struct msghdr mh;
	struct iovec iov;

	if (!peek(pid, mh_addr, &mh, sizeof(mh)) ||
	    !peek(pid, (uintptr_t)mh.msg_iov, &iov, sizeof(iov)) ||
	    iov.iov_len < sizeof(*m) + sizeof(*seg))
		return false;
	*at = (uintptr_t)iov.iov_base;
	return peek(pid, *at, m, sizeof(*m)) &&
	       peek(pid, *at + sizeof(*m), seg, sizeof(*seg)) &&
	       m->op == PRW_OP_WRITE;
}

/* The tracer's view of one stop: a system call's entry (@info) or a
 * single step's (@info NULL). */
typedef void (*review_stop_fn)(pid_t pid,
			       const struct __ptrace_syscall_info *info);

/* Run @child traced, stopped first, its stderr into @out; @stop at every
 * system-call entry and single step. The child's wait status. */
static int review_run(void (*child)(void), review_stop_fn stop, char *out,
		      size_t cap)
{
	int fds[2], status;
	size_t have = 0;
	ssize_t n;
	pid_t pid;

	review_step = review_cont = false;
	CHECK(pipe(fds) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		dup2(fds[1], 2);
		child();
		_exit(3);
	}
	close(fds[1]);
	CHECK(waitpid(pid, &status, 0) == pid && WIFSTOPPED(status));
	CHECK(!ptrace(PTRACE_SETOPTIONS, pid, 0,
		      PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL));
	for (int sig = 0;;) {
		struct __ptrace_syscall_info info;
		siginfo_t si;

		CHECK(!ptrace(review_step   ? PTRACE_SINGLESTEP
			      : review_cont ? PTRACE_CONT
					    : PTRACE_SYSCALL,
			      pid, 0, sig));
		sig = 0;
		CHECK(waitpid(pid, &status, 0) == pid);
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof(info),
				   &info) > 0 &&
			    info.op == PTRACE_SYSCALL_INFO_ENTRY)
				stop(pid, &info);
		} else if (WSTOPSIG(status) == SIGTRAP && review_step &&
			   !ptrace(PTRACE_GETSIGINFO, pid, 0, &si) &&
			   si.si_code > 0 /* from the kernel: the step */) {
			stop(pid, NULL);
		} else {
			sig = WSTOPSIG(status);
		}
	}
	while (have < cap - 1 &&
	       (n = read(fds[0], out + have, cap - 1 - have)) > 0)
		have += (size_t)n;
	out[have] = 0;
	close(fds[0]);
	return status;
}

/* The child's verdict: returned with the write where it was meant (0),
 * the attack through (2: moved, or returned before its own answer), or
 * the call's own bytes wrong (4); an abort is SIGABRT. */
static void review_verdict(int status, bool staged, const char *out)
{
	bool aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;

	if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
		fprintf(stderr, "landed: the attack went through and the "
				"call returned\n");
	if (getenv("RAREWRITE_TEST_VERBOSE"))
		fprintf(stderr, "staged: %d; status %#x; stderr: %s\n", staged,
			status, out);
	if (!staged ||
	    !(aborted || (WIFEXITED(status) && WEXITSTATUS(status) == 0)))
		fprintf(stderr, "staged: %d; status %#x; stderr: %s\n", staged,
			status, out);
	CHECK(staged);
	CHECK(aborted || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
	if (aborted)
		CHECK(strstr(out, "rarewrite: rare_write_"));
}

static void review_stopped(void)
{
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) || raise(SIGSTOP))
		_exit(3);
}

/*
 * Review (1): the first piece of a 24-byte copy. Its destination waits in
 * the segment on the stack until the request goes; a store there before
 * the echo's digest was taken moved the write with no abort. The tracer
 * learns where the request's head is at a first call's sendmsg(2), then
 * steps a second call from the same frame instruction by instruction and
 * rewrites the segment's destination (and the head's other word that may
 * name the call's start) as soon as the call has stored it, until the
 * second call's sendmsg(2).
 */
static long review_array[8] __wr_rare;
static struct {
	int state;
	uintptr_t head_at;
	bool staged;
} r1;

static void first_piece_child(void)
{
	static const long a[3] = {1, 2, 3}, b[3] = {4, 5, 6};

	review_stopped();
	rare_write_memcpy(review_array, a, sizeof(a));
	syscall(SYS_getppid); /* the tracer starts stepping */
	rare_write_memcpy(review_array, b, sizeof(b));
	if (review_array[4] == 4)
		_exit(2);
	_exit(review_array[0] == 4 && review_array[2] == 6 ? 0 : 4);
}

/* Rewrite the word at @at if it holds @want: the racing store. */
static bool swap_word(pid_t pid, uintptr_t at, uint64_t want, uint64_t moved)
{
	uint64_t word;

	return peek(pid, at, &word, 8) && word == want &&
	       poke(pid, at, &moved, 8);
}

/* The child is at a syscall instruction that will be @nr. */
static bool at_syscall(pid_t pid, long nr)
{
	struct user_regs_struct regs;
	unsigned char insn[2];

	return !ptrace(PTRACE_GETREGS, pid, 0, &regs) && (long)regs.rax == nr &&
	       peek(pid, regs.rip, insn, 2) && insn[0] == 0x0f &&
	       insn[1] == 0x05;
}

static void first_piece_stop(pid_t pid,
			     const struct __ptrace_syscall_info *info)
{
	const uint64_t want = (uintptr_t)&review_array[0],
		       moved = (uintptr_t)&review_array[4];
	struct prw_msg m;
	struct prw_seg seg;
	uintptr_t at;

	if (!info) {
		if (swap_word(pid,
			      r1.head_at + sizeof(m) +
				      offsetof(struct prw_seg, dst),
			      want, moved))
			r1.staged = true;
		swap_word(pid, r1.head_at + offsetof(struct prw_msg, start),
			  want, moved);
		if (at_syscall(pid, SYS_sendmsg))
			review_step = false;
		return;
	}
	if (r1.state == 1 && info->entry.nr == SYS_getppid) {
		review_step = true;
		r1.state = 2;
	}
	if (r1.state == 0 && info->entry.nr == SYS_sendmsg &&
	    request_head(pid, info->entry.args[1], &m, &seg, &at) &&
	    seg.dst == want) {
		r1.head_at = at;
		r1.state = 1;
	}
}

TEST(process_first_piece_destination_rewritten_held, EXPECT_PASS)
{
	char out[4096];
	int status;

	need_process();
	init();
	memset(&r1, 0, sizeof(r1));
	status = review_run(first_piece_child, first_piece_stop, out,
			    sizeof(out));
	review_verdict(status, r1.staged, out);
}

/*
 * Review (2): a copy larger than one message goes in pieces; the next
 * piece's destination, length and source were saved on the stack through
 * the previous piece's answer wait, and checked again only for being in
 * some protected region of the backend. The tracer watches the answer
 * count (a read watchpoint: the child's loads of it), and once the first
 * piece is answered rewrites every word on the child's stack that holds
 * the call's start, length, next destination or remaining length so that
 * the rest is 16 bytes at another protected object.
 */
#define REVIEW_BIG (300u << 10)
static long review_victim[4] __wr_rare;
static struct {
	int state;
	uint32_t before;
	uint64_t first;
	bool staged;
} r2;

static void pieces_child(void)
{
	struct rare_pool *pool = rare_pool_create(1 << 20);
	unsigned char *src = malloc(REVIEW_BIG);

	CHECK(pool && src);
	review->obj = rare_alloc(pool, REVIEW_BIG);
	CHECK(review->obj);
	memset(src, 0x5a, REVIEW_BIG);
	review->page = answer_page();
	review->len = REVIEW_BIG;
	review->victim = (unsigned char *)review_victim;
	review_stopped();
	rare_write_memcpy(review->obj, src, REVIEW_BIG);
	if (review_victim[0])
		_exit(2);
	_exit(memcmp(review->obj, src, REVIEW_BIG) ? 4 : 0);
}

/* Rewrite the words of the child's stack above @sp that equal @from[i]
 * to @to[i]; how many. */
static unsigned stack_rewrite(pid_t pid, uintptr_t sp, const uint64_t *from,
			      const uint64_t *to, unsigned n)
{
	static uint64_t words[4096];
	unsigned count = 0;
	struct iovec local = {words, sizeof(words)},
		     remote = {(void *)(sp & ~(uintptr_t)7), sizeof(words)};
	ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	for (size_t w = 0; got > 0 && w < (size_t)got / 8; w++)
		for (unsigned i = 0; i < n; i++)
			if (words[w] == from[i]) {
				CHECK(poke(pid, (sp & ~(uintptr_t)7) + w * 8,
					   &to[i], 8));
				count++;
				break;
			}
	return count;
}

static void pieces_stop(pid_t pid, const struct __ptrace_syscall_info *info)
{
	struct user_regs_struct regs;
	struct prw_msg m;
	struct prw_seg seg;
	uint32_t count;
	uintptr_t at;

	if (info) {
		if (r2.state == 0 && info->entry.nr == SYS_sendmsg &&
		    request_head(pid, info->entry.args[1], &m, &seg, &at) &&
		    seg.dst == (uintptr_t)review->obj) {
			r2.first = seg.len;
			CHECK(peek(pid, (uintptr_t)&review->page->count,
				   &r2.before, 4));
			review_step = true;
			r2.state = 1;
		}
		return;
	}
	if (r2.state != 1 ||
	    !peek(pid, (uintptr_t)&review->page->count, &count, 4) ||
	    count == r2.before)
		return;
	/* The first piece is answered: the rest goes 16 bytes at the
	 * victim, as far as the stack decides it. */
	{
		const uint64_t d = (uintptr_t)review->obj,
			       v = (uintptr_t)review->victim, l = review->len,
			       p = r2.first;
		const uint64_t from[4] = {d, d + p, l, l - p},
			       to[4] = {v - p, v, p + 16, 16};

		CHECK(!ptrace(PTRACE_GETREGS, pid, 0, &regs));
		r2.staged = stack_rewrite(pid, regs.rsp, from, to, 4) > 0;
	}
	review_step = false;
	r2.state = 2;
}

TEST(process_next_piece_rewritten_held, EXPECT_PASS)
{
	char out[4096];
	int status;

	need_process();
	init();
	review_share_new();
	memset(&r2, 0, sizeof(r2));
	status = review_run(pieces_child, pieces_stop, out, sizeof(out));
	review_verdict(status, r2.staged, out);
	munmap(review, sizeof(*review));
}

/*
 * Review (3): req_lock released by a store while a call holds it, and
 * req_seq set back so that a second call sends the same seq: both ask for
 * the same fill, the second's answer comes first, and the first took it
 * for its own and returned while its own request was still being applied.
 * The tracer stops the first call at its sendmsg(2), forges the two
 * words, lets a second thread make the same call whole, then lets the
 * first go on; at the first's next system call after it returned, the
 * answer count says whether its own request was answered.
 */
#define REVIEW_FILL (32u << 20)
static struct {
	bool staged;
} r3;

static void *same_call_thread(void *unused)
{
	char c;

	(void)unused;
	if (read(review->go[0], &c, 1) != 1)
		_exit(3);
	rare_write_memset(review->obj, 0x33, REVIEW_FILL);
	if (write(review->done[1], "d", 1) != 1)
		_exit(3);
	return NULL;
}

static void same_seq_child(void)
{
	struct rare_pool *pool = rare_pool_create(REVIEW_FILL + (1 << 20));
	pthread_t t;

	CHECK(pool);
	review->obj = rare_alloc(pool, REVIEW_FILL);
	CHECK(review->obj);
	review->page = answer_page();
	CHECK(!pthread_create(&t, NULL, same_call_thread, NULL));
	review_stopped();
	rare_write_memset(review->obj, 0x33, REVIEW_FILL);
	/* Returned: answered are the other thread's request and this one's,
	 * or this one took the other's answer. */
	if (__atomic_load_n(&review->page->count, __ATOMIC_ACQUIRE) -
		    review->before <
	    2)
		_exit(2);
	_exit(0);
}

static void same_seq_stop(pid_t pid, const struct __ptrace_syscall_info *info)
{
	uint32_t *lock = attack_lib_sym("req_lock");
	uint64_t *seq = attack_lib_sym("req_seq"), s;
	const uint32_t zero = 0;
	struct pollfd pfd = {.fd = review->done[0], .events = POLLIN};
	struct prw_msg m;
	struct prw_seg seg;
	uintptr_t at;
	char c;

	if (!info || r3.staged || info->entry.nr != SYS_sendmsg ||
	    !request_head(pid, info->entry.args[1], &m, &seg, &at) ||
	    seg.dst != (uintptr_t)review->obj)
		return;
	CHECK(lock && seq);
	CHECK(peek(pid, (uintptr_t)&review->page->count, &review->before, 4));
	CHECK(peek(pid, (uintptr_t)seq, &s, 8));
	s--;
	CHECK(poke(pid, (uintptr_t)lock, &zero, 4));
	CHECK(poke(pid, (uintptr_t)seq, &s, 8));
	CHECK(write(review->go[1], "g", 1) == 1);
	CHECK(poll(&pfd, 1, 20000) == 1 && read(review->done[0], &c, 1) == 1);
	r3.staged = true;
	/* No stop at the system call's exit: the first call looks at the
	 * answer page as soon as its request is sent. */
	review_cont = true;
}

TEST(process_same_seq_other_answer_held, EXPECT_PASS)
{
	char out[4096];
	int status;

	need_process();
	init();
	review_share_new();
	CHECK(!pipe(review->go) && !pipe(review->done));
	memset(&r3, 0, sizeof(r3));
	status = review_run(same_seq_child, same_seq_stop, out, sizeof(out));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
		fprintf(stderr, "the call returned before its own answer\n");
	review_verdict(status, r3.staged, out);
	munmap(review, sizeof(*review));
}
