// SPDX-License-Identifier: MIT
/*
 * attack_destroy.c - scenario 27q: a pool destroyed while another thread
 * writes to it, on the backends whose write uses the pool's memfd by its
 * number (shadow maps it as the alias, pwrite writes to it).
 *
 * The writer checks the region against the table under rw_memfd_lock,
 * then makes the system call that names r->fd. rare_pool_destroy() closed
 * that descriptor without the lock: when it ran between the check and the
 * call, and the program opened a file meanwhile (here the next pool's
 * memfd, which takes the lowest free number: the one just closed), the
 * write went into that file: another pool's protected memory, or any
 * file of the program.
 *
 * Deterministic: the writer thread stops itself at that system call's
 * entry (a seccomp filter of its own thread that hands the call with the
 * pool's descriptor to a supervisor thread, SECCOMP_RET_USER_NOTIF), as
 * the scheduler may stop it there; the descriptor is looked up only when
 * the call goes on. Meanwhile another thread destroys the pool and creates
 * the next one; the supervisor lets the call go on when that is done, or
 * when the destroyer sleeps in futex(2) (a lock kept it out). Then the
 * new pool must hold none of the writer's bytes.
 *
 * Three writes, each with a pool of its own: rare_write() of 8 bytes (the
 * backends' write_one, its unit store), a 24-byte rare_write_memcpy()
 * (write_one's bulk path) and rare_list_add() (the segment path,
 * backend->write()). The segment path checks each segment again, so on
 * the segment after the stopped one it aborts on the pool's record freed
 * under it; a handler of SIGABRT then says whether the stopped segment
 * landed in the new pool first.
 *
 * n/a on pkey and mprotect (a write stores to the pool's pages in place;
 * no descriptor) and process (the helper writes through its own mapping,
 * found by range; the program's descriptor is not used by a write).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rarewrite/list.h>

#include "attack.h"
#include "../src/table.h"

#define DS_POOL (64u << 10)
#define DS_MARK 0x27a7da7a27a7da7aULL
#define DS_WAIT_S 5.0 /* the longest the writer stays stopped */

enum ds_case { DS_UNIT, DS_BULK, DS_SEGS, DS_MAP, DS_NR };

static const char *const ds_names[DS_NR] = {
	"rare_write of 8 bytes", "a 24-byte rare_write_memcpy",
	"rare_list_add (segments)", "rare_write_map's view"};

/* A case child's exit status: DS_HELD or DS_LANDED, + DS_SLEPT when the
 * destroy was seen waiting, + DS_ABORTED when the library aborted after. */
#define DS_HELD 16
#define DS_LANDED 17
#define DS_SLEPT 2
#define DS_ABORTED 4

static struct {
	const struct rw_table *table;
	enum ds_case c;
	struct rare_pool *pool, *next;
	int fd;			     /* the pool's memfd */
	void *obj;		     /* the writer's target in the pool */
	struct rare_list_head *head; /* DS_SEGS: in the pool */
	volatile int listener;	     /* the writer's seccomp listener */
	volatile int go, destroyed, written;
	volatile pid_t destroyer_tid;
	volatile unsigned stops;      /* calls the supervisor let go on */
	volatile int destroyer_slept; /* it was seen in futex(2) */
} ds;

static double ds_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Whether the new pool holds any byte of the writer's: its objects' part
 * is all zeroes when created. */
static bool ds_next_written(void)
{
	const struct rw_region *r;
	const unsigned char *p, *end;

	if (!ds.next || !(r = attack_region_of(ds.table, ds.next)))
		return false;
	p = (const unsigned char *)r->user_start;
	end = (const unsigned char *)(r->start + r->len);
	for (; p < end; p++)
		if (*p)
			return true;
	return false;
}

/* The end of a case child: what the next pool holds. */
static __attribute__((noreturn)) void ds_exit(bool aborted)
{
	_exit((ds_next_written() ? DS_LANDED : DS_HELD) +
	      (ds.destroyer_slept ? DS_SLEPT : 0) + (aborted ? DS_ABORTED : 0));
}

/* A case that goes on after the stopped call may end there: the segment
 * path checks the next segment against the record freed under it and
 * aborts, unmap aborts on a map whose region is gone, or (pwrite, whose
 * unmap is the stopped call) faults on the region's lookup after the
 * backend's unmap (core.c). Whether the stopped call landed first. */
static void ds_abort(int sig)
{
	(void)sig;
	ds_exit(true);
}

/* Set-up failures in a case child: not a verdict. */
static __attribute__((noreturn)) void ds_fail(const char *what)
{
	fprintf(stderr, "27q %s: %s\n", ds_names[ds.c], what);
	_exit(1);
}

/* Stop this thread's system calls that name descriptor @fd to write:
 * mmap(2) of it writable and shared (shadow's alias), pwrite64(2) and
 * pwritev(2) to it (pwrite). */
static int ds_filter(int fd)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 11),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[4])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)fd, 0, 7),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 3 /* READ | WRITE */, 4, 5),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pwrite64, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pwritev, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)fd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	/* Without TSYNC: this thread's filter only. */
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
}

static void *ds_writer(void *arg)
{
	static const char src[24] = "a protected 24-byte copy";
	int l = ds_filter(ds.fd);

	(void)arg;
	if (l < 0) {
		ds.listener = -2;
		return NULL;
	}
	ds.listener = l;
	switch (ds.c) {
	case DS_UNIT:
		rare_write(*(uint64_t *)ds.obj, DS_MARK);
		break;
	case DS_BULK:
		rare_write_memcpy(ds.obj, src, sizeof(src));
		break;
	case DS_SEGS:
		rare_list_add(ds.obj, ds.head);
		break;
	default: {
		struct rare_write_mapping m = rare_write_map(ds.obj, 8);

		*(volatile uint64_t *)m.addr = DS_MARK;
		rare_write_unmap(m);
		break;
	}
	}
	ds.written = 1;
	return NULL;
}

static void *ds_destroyer(void *arg)
{
	(void)arg;
	ds.destroyer_tid = (pid_t)syscall(SYS_gettid);
	while (!__atomic_load_n(&ds.go, __ATOMIC_ACQUIRE))
		usleep(100);
	rare_pool_destroy(ds.pool);
	/* The lowest free descriptor: the one the destroy closed. */
	ds.next = rare_pool_create(DS_POOL);
	__atomic_store_n(&ds.destroyed, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Whether the destroyer sleeps in futex(2): a lock keeps it out. */
static bool ds_destroyer_sleeps(void)
{
	char path[64], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall",
		 (int)ds.destroyer_tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return !strncmp(buf, "202 ", 4);
}

static bool ds_continue(int l, const struct seccomp_notif_sizes *sz)
{
	struct seccomp_notif *req = calloc(1, sz->seccomp_notif);
	struct seccomp_notif_resp *resp = calloc(1, sz->seccomp_notif_resp);
	bool ok = false;

	if (req && resp && !ioctl(l, SECCOMP_IOCTL_NOTIF_RECV, req)) {
		resp->id = req->id;
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (!ds.stops) {
			/* The first call: the destroy and the next create
			 * run now, while the writer is stopped. */
			unsigned asleep = 0;
			double end = ds_now() + DS_WAIT_S;

			__atomic_store_n(&ds.go, 1, __ATOMIC_RELEASE);
			while (!__atomic_load_n(&ds.destroyed,
						__ATOMIC_ACQUIRE) &&
			       ds_now() < end && asleep < 20) {
				usleep(5000);
				asleep = ds_destroyer_sleeps() ? asleep + 1 : 0;
			}
			ds.destroyer_slept = asleep >= 20;
		}
		ok = !ioctl(l, SECCOMP_IOCTL_NOTIF_SEND, resp);
		ds.stops++;
	}
	free(req);
	free(resp);
	return ok;
}

/* Each stopped call of the writer's goes on; the first only after the
 * destroy ran or slept. */
static void *ds_supervisor(void *arg)
{
	struct seccomp_notif_sizes sz;
	int l;

	(void)arg;
	while ((l = ds.listener) == -1)
		usleep(100);
	if (l < 0 || syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz))
		return NULL;
	while (!ds.written) {
		struct pollfd p = {.fd = l, .events = POLLIN};

		if (poll(&p, 1, 20) == 1 && (p.revents & POLLIN))
			ds_continue(l, &sz);
	}
	return NULL;
}

/* One write into a fresh pool while it is destroyed, in a child of its
 * own (a case may end in the library's abort): its exit status. */
static void ds_case_child(enum ds_case c)
{
	pthread_t w, s, d;
	const struct rw_region *r;

	ds.c = c;
	ds.listener = -1;
	signal(SIGABRT, ds_abort);
	signal(SIGSEGV, ds_abort);
	ds.pool = rare_pool_create(DS_POOL);
	r = ds.pool ? attack_region_of(ds.table, ds.pool) : NULL;
	if (!r)
		ds_fail("rare_pool_create failed");
	ds.fd = r->fd;
	/* Bookkeeping written now, before the writer's filter. */
	ds.obj = rare_alloc(ds.pool, 32);
	ds.head = rare_alloc(ds.pool, sizeof(*ds.head));
	if (!ds.obj || !ds.head)
		ds_fail("rare_alloc failed");
	rare_write(*ds.head, ((struct rare_list_head){ds.head, ds.head}));
	if (pthread_create(&d, NULL, ds_destroyer, NULL) ||
	    pthread_create(&s, NULL, ds_supervisor, NULL) ||
	    pthread_create(&w, NULL, ds_writer, NULL))
		ds_fail("pthread_create failed");
	pthread_join(w, NULL);
	if (ds.listener == -2)
		ds_fail("no seccomp listener for the writer");
	pthread_join(s, NULL);
	pthread_join(d, NULL);
	r = ds.next ? attack_region_of(ds.table, ds.next) : NULL;
	if (!r)
		ds_fail("the next rare_pool_create failed");
	if (r->fd != ds.fd)
		ds_fail("the next pool did not reuse the descriptor: no test");
	if (!ds.stops)
		ds_fail("no call on the pool's descriptor");
	ds_exit(false);
}

ATTACK("27q", destroy_reused_fd,
       "destroy a pool while another thread writes to it, between the "
       "write's check and its system call; the next pool reuses the "
       "descriptor: the write lands in that pool")
{
	const char *b = rare_write_backend();
	char landed[160] = "";
	unsigned slept = 0, aborted = 0;

	if (strcmp(b, "shadow") && strcmp(b, "pwrite"))
		attack_report(ATTACK_NA,
			      "no write uses a pool's descriptor in the "
			      "program (shadow and pwrite only)");
	ds.table = attack_lib_sym("rw_table");
	if (!ds.table)
		attack_report(ATTACK_ERROR, "no rw_table");
	attack_begin();
	for (enum ds_case c = DS_UNIT; c < DS_NR; c++) {
		int status, v;
		pid_t pid;

		fflush(NULL);
		pid = fork();
		if (pid < 0)
			attack_report(ATTACK_ERROR, "fork failed");
		if (!pid) {
			alarm(30);
			ds_case_child(c);
		}
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		v = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		if (v < DS_HELD || v > DS_LANDED + DS_SLEPT + DS_ABORTED)
			attack_report(ATTACK_ERROR, "case %s ended with %s %d",
				      ds_names[c],
				      WIFSIGNALED(status) ? "signal" : "status",
				      WIFSIGNALED(status) ? WTERMSIG(status)
							  : v);
		slept += !!(v & DS_SLEPT);
		aborted += !!(v & DS_ABORTED);
		if ((v & ~(DS_SLEPT | DS_ABORTED)) == DS_LANDED)
			snprintf(landed + strlen(landed),
				 sizeof(landed) - strlen(landed), "%s%s",
				 *landed ? ", " : "", ds_names[c]);
	}
	if (*landed)
		attack_report(ATTACK_OPEN,
			      "into a pool being destroyed went into the next "
			      "pool's memfd (its descriptor reused): %s",
			      landed);
	attack_report(ATTACK_BLOCKED,
		      "every write went into its own pool (%u of %d destroys "
		      "waited for the write; %u cases aborted after it)",
		      slept, (int)DS_NR, aborted);
}
