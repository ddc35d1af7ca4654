// SPDX-License-Identifier: MIT
/*
 * process.c - Lutomirski's separate address space, in user space: a helper
 * process owns the only writable mapping of protected memory and applies
 * write requests it has validated.
 *
 * Each region is a memfd. The helper maps it writable; then the program
 * seals it F_SEAL_FUTURE_WRITE (no write(2), no new writable mapping, no
 * mprotect() of a view to writable, for anyone) and maps its read-only view,
 * MADV_DONTFORK and mseal()ed (sections; pools on request). The program
 * keeps the descriptor only to read it (a fork child copies from it): the
 * seal makes it useless for writing. Nothing in the program can write
 * protected memory directly, window or not.
 *
 * A write is a request in a shared ring (process_ring.h): the calling
 * thread claims a slot, fills it, marks it READY and rings the doorbell (a
 * futex wake only if the helper sleeps); the helper applies the request and
 * marks it DONE, waking the caller only if it sleeps. A side spins for
 * the other only while that one is polling on another CPU (ring hints);
 * otherwise it sleeps at once, as in a plain futex ping-pong: on a busy or
 * small machine both often share one CPU, where a spin only keeps the
 * other side from running. The helper's DONE store is a release and the
 * caller's load an acquire on the same physical page, so on return the
 * write is visible in the caller's read-only view. Requests too big for a
 * slot take their body from a bulk area (one at a time). Regions are
 * registered and bulk areas handed over on a control socket (SCM_RIGHTS).
 *
 * fork(): the ring and the bulk area are MADV_DONTFORK and the socket is
 * closed in the child, so a child holds no channel to the parent's helper.
 * The child copies each region into a new memfd while the parent's writers
 * are held off, starts a helper of its own, registers the copies and maps
 * them over the inherited views.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rarewrite.h"
#include "internal.h"
#include "process_helper.h"
#include "process_ring.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

static struct prw_ring *ring;
static int ctl_sock = -1;
static pid_t helper_pid;
static uint64_t next_id = 1;

/* Writers hold it shared; fork holds it exclusive. */
static pthread_rwlock_t write_lock = PTHREAD_RWLOCK_INITIALIZER;
/* Free slots, so that a claim always finds one. */
static sem_t slots_free;
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
/* The bulk area: one oversized request at a time. */
static pthread_mutex_t bulk_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *bulk;
static size_t bulk_len;

/* Spin this long for the answer of a helper that polls on another CPU
 * before sleeping. */
#define CALLER_SPIN_NS 20000u
/* While asleep, check this often that the helper still lives. */
#define LIVENESS_NS 50000000L

/* The helper is gone: reap it and say how it ended. */
static __attribute__((noreturn)) void helper_died(const char *call,
						  const void *addr)
{
	int status = 0;
	pid_t got = waitpid(helper_pid, &status, __WALL | WNOHANG);

	if (got == helper_pid && WIFSIGNALED(status) &&
	    WTERMSIG(status) == SIGSYS)
		rw_die(call, addr,
		       "the process backend's helper (pid %d) made a system "
		       "call outside its seccomp filter and was killed "
		       "(SIGSYS); the write cannot be applied",
		       (int)helper_pid);
	if (got == helper_pid && WIFSIGNALED(status))
		rw_die(call, addr,
		       "the process backend's helper (pid %d) was killed by "
		       "signal %d; the write cannot be applied",
		       (int)helper_pid, WTERMSIG(status));
	rw_die(call, addr,
	       "the process backend's helper (pid %d) has died; the write "
	       "cannot be applied",
	       (int)helper_pid);
}

static void check_helper(const char *call, const void *addr)
{
	siginfo_t si = {0};

	if (waitid(P_PID, (id_t)helper_pid, &si,
		   WEXITED | WNOHANG | WNOWAIT | __WALL)) {
		if (errno == ECHILD)
			helper_died(call, addr);
		return;
	}
	if (si.si_pid == helper_pid)
		helper_died(call, addr);
}

/* The CPU we run on, or -1; a hint. */
static uint32_t cur_cpu(void)
{
	int cpu = sched_getcpu();

	return cpu < 0 ? UINT32_MAX : (uint32_t)cpu;
}

/* Ring the doorbell; true when the helper polls it on another CPU than
 * @cpu, so that its answer is worth spinning for. */
static bool ring_doorbell(uint32_t cpu)
{
	__atomic_fetch_add(&ring->doorbell, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ring->helper_sleeping, __ATOMIC_SEQ_CST)) {
		syscall(SYS_futex, &ring->doorbell, FUTEX_WAKE, 1, NULL, NULL,
			0);
		return false;
	}
	return cpu != UINT32_MAX &&
	       __atomic_load_n(&ring->helper_cpu, __ATOMIC_RELAXED) != cpu;
}

/* One control message and its reply: 0 or -errno from the helper. */
static int ctl(const char *call, const void *addr, uint32_t op, uint64_t id,
	       uint64_t start, uint64_t len, int fd)
{
	struct prw_ctl m = {.op = op, .id = id, .start = start, .len = len};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {&m, sizeof(m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	int32_t reply;
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	pthread_mutex_lock(&ctl_lock);
	while ((n = sendmsg(ctl_sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(m)) {
		pthread_mutex_unlock(&ctl_lock);
		helper_died(call, addr);
	}
	__atomic_store_n(&ring->ctl_pending, 1, __ATOMIC_SEQ_CST);
	ring_doorbell(UINT32_MAX);
	while ((n = recv(ctl_sock, &reply, sizeof(reply), 0)) < 0 &&
	       errno == EINTR)
		;
	pthread_mutex_unlock(&ctl_lock);
	if (n != (ssize_t)sizeof(reply))
		helper_died(call, addr);
	return reply;
}

/* A new ring, socket and helper. */
static int helper_start(void)
{
	int sv[2], fd, err;
	int32_t ready;
	ssize_t n;
	void *p;
	pid_t pid;

	fd = memfd_create(PRW_RING_NAME, MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, PRW_RING_SIZE)) {
		err = -errno;
		close(fd);
		return err;
	}
	p = mmap(NULL, PRW_RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 0);
	err = -errno;
	close(fd);
	if (p == MAP_FAILED)
		return err;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		err = -errno;
		munmap(p, PRW_RING_SIZE);
		return err;
	}
	pid = prw_helper_spawn(p, sv[1]);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		munmap(p, PRW_RING_SIZE);
		return pid;
	}
	while ((n = recv(sv[0], &ready, sizeof(ready), 0)) < 0 &&
	       errno == EINTR)
		;
	if (n != (ssize_t)sizeof(ready) || ready) {
		close(sv[0]);
		munmap(p, PRW_RING_SIZE);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		return -ECHILD;
	}
	/* Children of ours never see the ring (fork() or not). */
	if (madvise(p, PRW_RING_SIZE, MADV_DONTFORK)) {
		err = -errno;
		close(sv[0]);
		munmap(p, PRW_RING_SIZE);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		return err;
	}
	ring = p;
	ctl_sock = sv[0];
	helper_pid = pid;
	bulk = NULL;
	bulk_len = 0;
	sem_init(&slots_free, 0, PRW_NR_SLOTS);
	return 0;
}

static int process_setup(void)
{
	return helper_start();
}

/* A memfd of @len bytes holding @contents (NULL: zeroes), sealed against
 * resizing, which the helper insists on; region_register() adds the write
 * seals once the helper has mapped it. */
static int memfd_new(const char *name, size_t len, const void *contents)
{
	return rw_memfd_new(name, len, contents, F_SEAL_SHRINK | F_SEAL_GROW);
}

/*
 * Hand @fd to the helper as the region at r->start, then seal it against
 * every future write and map the program's read-only view over r->start.
 * On success @fd becomes r->fd (read-only by its seals), else it is closed.
 */
static int region_register(const char *call, struct rw_region *r, int fd)
{
	uint64_t id = next_id++;
	int err = ctl(call, (void *)r->start, PRW_OP_ADD, id, r->start, r->len,
		      fd);

	if (err)
		goto out;
	/* Sealed before the view exists, so the view cannot be made
	 * writable either (the kernel clears VM_MAYWRITE). */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) ||
	    mmap((void *)r->start, r->len, PROT_READ, MAP_SHARED | MAP_FIXED,
		 fd, 0) == MAP_FAILED) {
		err = -errno;
		ctl(call, (void *)r->start, PRW_OP_DEL, id, 0, 0, -1);
		goto out;
	}
	err = rw_view_seal((void *)r->start, r->len, r->seal);
	if (err) {
		ctl(call, (void *)r->start, PRW_OP_DEL, id, 0, 0, -1);
		goto out;
	}
	r->priv = (uintptr_t)id;
	r->fd = fd;
	return 0;
out:
	close(fd);
	r->fd = -1;
	return err;
}

static int process_adopt(struct rw_region *r)
{
	int fd = memfd_new("rarewrite", r->len, (void *)r->start);

	if (fd < 0)
		return fd;
	return region_register("rare_write_init", r, fd);
}

static int process_create(struct rw_region *r)
{
	void *p = mmap(NULL, r->len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int fd, err;

	if (p == MAP_FAILED)
		return -errno;
	fd = memfd_new("rarewrite", r->len, NULL);
	if (fd < 0) {
		munmap(p, r->len);
		return fd;
	}
	r->start = (uintptr_t)p;
	err = region_register("rare_pool_create", r, fd);
	if (err) {
		munmap(p, r->len);
		r->start = 0;
	}
	return err;
}

static void process_write_call(const char *call, const struct rw_seg *segs,
			       unsigned n);

static void process_destroy(struct rw_region *r)
{
	/* A sealed view stays until exit: leave zeroes in it. */
	if (r->seal) {
		struct rw_seg zero = {
			.region = r, .dst = (void *)r->start, .len = r->len};

		process_write_call("rare_pool_destroy", &zero, 1);
	}
	/* The helper forgets the range before the address can be reused. */
	ctl("rare_pool_destroy", (void *)r->start, PRW_OP_DEL, r->priv, 0, 0,
	    -1);
	munmap((void *)r->start, r->len);
	close(r->fd);
}

/* Make the bulk area at least @need bytes; bulk_lock held. */
static void bulk_reserve(const char *call, const void *addr, size_t need)
{
	size_t len = 65536;
	void *p;
	int fd, err;

	if (need <= bulk_len)
		return;
	while (len < need)
		len *= 2;
	fd = memfd_new("rarewrite-bulk", len, NULL);
	if (fd < 0)
		rw_die(call, addr, "no bulk area for a %zu-byte request: %s",
		       need, strerror(-fd));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED || madvise(p, len, MADV_DONTFORK))
		rw_die(call, addr, "cannot map a %zu-byte bulk area: %s", len,
		       strerror(errno));
	err = ctl(call, addr, PRW_OP_BULK, 0, 0, len, fd);
	close(fd);
	if (err)
		rw_die(call, addr, "the helper refused a bulk area: %s",
		       strerror(-err));
	if (bulk)
		munmap(bulk, bulk_len);
	bulk = p;
	bulk_len = len;
}

/* Lay @n segments out as a request body at @body. */
static void body_fill(unsigned char *body, const struct rw_seg *segs,
		      unsigned n)
{
	struct prw_req_head head = {.nseg = n};
	size_t data = sizeof(head) + n * sizeof(struct prw_seg);

	memcpy(body, &head, sizeof(head));
	for (unsigned i = 0; i < n; i++) {
		struct prw_seg g = {.dst = (uintptr_t)segs[i].dst,
				    .len = segs[i].len,
				    .data = PRW_DATA_FILL,
				    .fill = segs[i].fill};

		if (segs[i].src) {
			g.data = data;
			memcpy(body + data, segs[i].src, segs[i].len);
			data += segs[i].len;
		}
		memcpy(body + sizeof(head) + i * sizeof(g), &g, sizeof(g));
	}
}

static struct prw_slot *slot_claim(void)
{
	static __thread unsigned hint;

	while (sem_wait(&slots_free))
		;
	for (unsigned i = 0;; i++) {
		unsigned k = (hint + i) % PRW_NR_SLOTS;
		struct prw_slot *s = &ring->slots[k];
		uint32_t expect = PRW_FREE;

		if (__atomic_compare_exchange_n(&s->state, &expect, PRW_CLAIMED,
						false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			hint = k;
			return s;
		}
		if (i && !(i % PRW_NR_SLOTS))
			sched_yield(); /* a forged state holds a slot */
	}
}

/* Wait for the helper's verdict on @s: PRW_DONE or PRW_REFUSED. Spin
 * first only if @spin. */
static uint32_t slot_wait(struct prw_slot *s, bool spin, const char *call,
			  const void *addr)
{
	uint64_t until = spin ? now_ns() + CALLER_SPIN_NS : 0;
	uint32_t st;

	for (unsigned n = 0;; n++) {
		st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (st != PRW_READY)
			goto verdict;
		if (!(n % 64) && now_ns() > until)
			break;
		cpu_relax();
	}
	__atomic_store_n(&s->waiting, 1, __ATOMIC_SEQ_CST);
	while ((st = __atomic_load_n(&s->state, __ATOMIC_SEQ_CST)) ==
	       PRW_READY) {
		struct timespec t = {0, LIVENESS_NS};

		if (syscall(SYS_futex, &s->state, FUTEX_WAIT, PRW_READY, &t,
			    NULL, 0) &&
		    errno == ETIMEDOUT)
			check_helper(call, addr);
	}
	__atomic_store_n(&s->waiting, 0, __ATOMIC_RELAXED);
	/* Where the wake-up put us, for the helper's choice to spin. */
	__atomic_store_n(&ring->caller_cpu, cur_cpu(), __ATOMIC_RELAXED);
verdict:
	if (st != PRW_DONE && st != PRW_REFUSED)
		rw_die(call, addr, "the request ring was tampered with");
	return st;
}

/* One request for @n segments, applied whole by the helper. */
static void submit(const char *call, const struct rw_seg *segs, unsigned n)
{
	size_t size = sizeof(struct prw_req_head) + n * sizeof(struct prw_seg);
	bool big, spin;
	struct prw_slot *s;
	uint32_t st, cpu;

	for (unsigned i = 0; i < n; i++)
		if (segs[i].src)
			size += segs[i].len;
	big = size > sizeof(s->body);
	if (big) {
		pthread_mutex_lock(&bulk_lock);
		bulk_reserve(call, segs[0].dst, size);
	}
	s = slot_claim();
	if (big) {
		body_fill(bulk, segs, n);
		s->flags = PRW_BODY_BULK;
	} else {
		body_fill(s->body, segs, n);
		s->flags = 0;
	}
	cpu = cur_cpu();
	__atomic_store_n(&ring->caller_cpu, cpu, __ATOMIC_RELAXED);
	__atomic_store_n(&s->state, PRW_READY, __ATOMIC_RELEASE);
	spin = ring_doorbell(cpu);
	st = slot_wait(s, spin, call, segs[0].dst);
	__atomic_store_n(&s->state, PRW_FREE, __ATOMIC_RELEASE);
	sem_post(&slots_free);
	if (big)
		pthread_mutex_unlock(&bulk_lock);
	if (st == PRW_REFUSED)
		rw_die(call, segs[0].dst,
		       "the process backend's helper refused the write (%zu "
		       "bytes): not inside memory registered with it",
		       segs[0].len);
}

static void process_write_call(const char *call, const struct rw_seg *segs,
			       unsigned n)
{
	pthread_rwlock_rdlock(&write_lock);
	/* More segments than a request holds: internal callers never get
	 * near; split rather than fail. */
	for (; n > PRW_MAX_SEGS; segs += PRW_MAX_SEGS, n -= PRW_MAX_SEGS)
		submit(call, segs, PRW_MAX_SEGS);
	submit(call, segs, n);
	pthread_rwlock_unlock(&write_lock);
}

static void process_write(const struct rw_seg *segs, unsigned n)
{
	process_write_call(segs[0].src ? "rare_write_memcpy"
				       : "rare_write_memset",
			   segs, n);
}

/* map hands out a private staging copy; unmap commits it in one request. */
static void *process_map(struct rw_region *r, void *addr, size_t len)
{
	(void)r;
	return rw_staging_copy(addr, len);
}

static void process_unmap(struct rw_region *r, void *view, void *addr,
			  size_t len)
{
	struct rw_seg seg = {.region = r, .dst = addr, .src = view, .len = len};

	process_write_call("rare_write_unmap", &seg, 1);
	free(view);
}

static void process_fork_prepare(void)
{
	pthread_rwlock_wrlock(&write_lock);
}

static void process_fork_parent(void)
{
	pthread_rwlock_unlock(&write_lock);
}

static void process_fork_child(void)
{
	struct rw_region *r;
	int err;

	/* The parent's ring and bulk area were not inherited
	 * (MADV_DONTFORK); drop its socket, the last channel to its
	 * helper. */
	close(ctl_sock);
	ctl_sock = -1;
	ring = NULL;
	bulk = NULL;
	bulk_len = 0;
	/* A snapshot of every region while the parent's writers wait, read
	 * from the parent's memfd (the view was not inherited). */
	rw_for_each_region(r) {
		void *old;
		int fd;

		if (r->backend != &rw_backend_process || !r->protected_)
			continue;
		old = mmap(NULL, r->len, PROT_READ, MAP_SHARED, r->fd, 0);
		fd = old == MAP_FAILED ? -errno
				       : memfd_new("rarewrite", r->len, old);
		if (old != MAP_FAILED)
			munmap(old, r->len);
		if (fd < 0)
			rw_die("fork", (void *)r->start,
			       "child cannot take a private copy of protected "
			       "memory: %s",
			       strerror(-fd));
		close(r->fd);
		r->fd = fd;
	}
	pthread_rwlock_init(&write_lock, NULL);
	pthread_mutex_init(&ctl_lock, NULL);
	pthread_mutex_init(&bulk_lock, NULL);
	err = helper_start();
	if (err)
		rw_die("fork", NULL,
		       "child cannot start its own process-backend helper: %s",
		       strerror(-err));
	rw_for_each_region(r) {
		if (r->backend != &rw_backend_process || r->fd < 0)
			continue;
		err = region_register("fork", r, r->fd);
		if (err)
			rw_die("fork", (void *)r->start,
			       "child cannot register its copy with its "
			       "helper: %s",
			       strerror(-err));
	}
}

const struct rw_backend rw_backend_process = {
	.name = "process",
	.caps = 0,
	.dontfork_views = true,
	.setup = process_setup,
	.adopt = process_adopt,
	.create = process_create,
	.destroy = process_destroy,
	.write = process_write,
	.map = process_map,
	.unmap = process_unmap,
	.fork_prepare = process_fork_prepare,
	.fork_parent = process_fork_parent,
	.fork_child = process_fork_child,
};
