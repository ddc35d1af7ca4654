// SPDX-License-Identifier: MIT
/*
 * process_helper.c - the helper process of the process backend: the only
 * place where protected memory is mapped writable.
 *
 * It is a clone of the program made without SIGCHLD (a "clone child", so the
 * program's own wait(-1) and SIGCHLD handlers never see it). Before serving
 * it blocks every signal but the parent-death one, restores default
 * dispositions, closes every descriptor but its end of the control socket,
 * makes itself non-dumpable (no ptrace, no /proc/<pid>/mem for anyone of the
 * same uid), checks that its parent is still the program, and confines
 * itself to the system calls of its loop (process_seccomp.c).
 *
 * It starts on a copy-on-write copy of the program's memory, so it calls
 * nothing that takes a libc lock (no malloc, no stdio, no abort): system
 * calls and memcpy only. Before serving it drops what it does not need of
 * that copy: every anonymous mapping (the program's heap, its other
 * threads' stacks, its buffers) but its own stack and thread block; what
 * stays is the loaded objects (code, data, .bss) and the ring.
 *
 * Every request is copied into helper memory, validated against the
 * helper's own table of regions (which the program cannot touch), and then
 * applied whole; a request that fails validation is refused and nothing of
 * it is written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "process_helper.h"
#include "process_ring.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

/* The helper's state: in the helper's own (copied) memory only. */
static struct helper_region {
	uint64_t id;
	uintptr_t start; /* program address */
	size_t len;
	unsigned char *map; /* the writable mapping */
} h_regions[PRW_MAX_REGIONS];
static unsigned h_nr_regions;
static const unsigned char *h_bulk;
static size_t h_bulk_len;
static struct prw_ring *h_ring;
static int h_sock;
static pid_t h_program;

static void on_parent_death(int sig)
{
	(void)sig;
	/* Sent when the thread that started us exits; only the death of the
	 * whole program (we were handed to another reaper) ends the helper. */
	if (getppid() != h_program)
		_exit(0);
}

static struct helper_region *region_by_addr(uintptr_t dst, uint64_t len)
{
	for (unsigned i = 0; i < h_nr_regions; i++) {
		struct helper_region *r = &h_regions[i];

		if (dst >= r->start && dst - r->start < r->len &&
		    len <= r->len - (dst - r->start))
			return r;
	}
	return NULL;
}

/* Validate and apply the request in @s: 0, or -1 when refused. */
static int handle(struct prw_slot *s)
{
	static struct prw_seg segs[PRW_MAX_SEGS];
	static unsigned char *at[PRW_MAX_SEGS];
	uint32_t flags = __atomic_load_n(&s->flags, __ATOMIC_RELAXED);
	const unsigned char *body = s->body;
	size_t size = sizeof(s->body);
	struct prw_req_head head;

	if (flags & PRW_BODY_BULK) {
		body = h_bulk;
		size = h_bulk_len;
		if (!body)
			return -1;
	} else if (flags) {
		return -1;
	}
	memcpy(&head, body, sizeof(head));
	if (!head.nseg || head.nseg > PRW_MAX_SEGS ||
	    (size - sizeof(head)) / sizeof(segs[0]) < head.nseg)
		return -1;
	/* From here on only the private copy of the descriptors counts. */
	memcpy(segs, body + sizeof(head), head.nseg * sizeof(segs[0]));
	for (unsigned i = 0; i < head.nseg; i++) {
		const struct prw_seg *g = &segs[i];
		struct helper_region *r = region_by_addr(g->dst, g->len);

		if (!g->len || !r)
			return -1;
		if (g->data != PRW_DATA_FILL &&
		    (g->data > size || g->len > size - g->data))
			return -1;
		at[i] = r->map + (g->dst - r->start);
	}
	for (unsigned i = 0; i < head.nseg; i++) {
		const struct prw_seg *g = &segs[i];

		if (g->data == PRW_DATA_FILL)
			memset(at[i], g->fill, g->len);
		else
			rw_store(at[i], body + g->data, g->len);
	}
	return 0;
}

/* The memfd @fd is fit to map @len bytes of: sealed against shrinking. */
static int memfd_fit(int fd, uint64_t len)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EPERM;
	if (fstat(fd, &st) || st.st_size < 0 || (uint64_t)st.st_size < len)
		return -EINVAL;
	return 0;
}

static int ctl_add(const struct prw_ctl *m, int fd)
{
	void *map;
	int err;

	if (fd < 0 || !m->len || m->len % PRW_PAGE || m->start % PRW_PAGE ||
	    m->start + m->len < m->start)
		return -EINVAL;
	if (h_nr_regions == PRW_MAX_REGIONS)
		return -ENOMEM;
	for (unsigned i = 0; i < h_nr_regions; i++)
		if (h_regions[i].id == m->id ||
		    (m->start < h_regions[i].start + h_regions[i].len &&
		     h_regions[i].start < m->start + m->len))
			return -EEXIST;
	err = memfd_fit(fd, m->len);
	if (err)
		return err;
	map = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	h_regions[h_nr_regions++] = (struct helper_region){
		.id = m->id, .start = m->start, .len = m->len, .map = map};
	return 0;
}

static int ctl_del(const struct prw_ctl *m)
{
	for (unsigned i = 0; i < h_nr_regions; i++)
		if (h_regions[i].id == m->id) {
			munmap(h_regions[i].map, h_regions[i].len);
			h_regions[i] = h_regions[--h_nr_regions];
			return 0;
		}
	return -ENOENT;
}

static int ctl_bulk(const struct prw_ctl *m, int fd)
{
	void *map;
	int err;

	if (fd < 0 || !m->len || m->len > SIZE_MAX / 2)
		return -EINVAL;
	err = memfd_fit(fd, m->len);
	if (err)
		return err;
	map = mmap(NULL, m->len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	if (h_bulk)
		munmap((void *)h_bulk, h_bulk_len);
	h_bulk = map;
	h_bulk_len = m->len;
	return 0;
}

/* Serve every control message waiting on the socket. */
static void ctl_drain(void)
{
	for (;;) {
		struct prw_ctl m;
		union {
			char buf[CMSG_SPACE(4 * sizeof(int))];
			struct cmsghdr align;
		} cbuf;
		struct iovec iov = {&m, sizeof(m)};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf.buf,
				    .msg_controllen = sizeof(cbuf.buf)};
		struct cmsghdr *c;
		int fd = -1, nfds = 0;
		int32_t reply = -EINVAL;
		ssize_t n =
			recvmsg(h_sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			_exit(1);
		}
		if (!n)
			_exit(0); /* the program closed its end: it is gone */
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != SOL_SOCKET ||
			    c->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t i = 0;
			     i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			     i++) {
				int got;

				memcpy(&got, CMSG_DATA(c) + i * sizeof(int),
				       sizeof(int));
				if (!nfds++)
					fd = got;
				else
					close(got);
			}
		}
		if (n == sizeof(m) && nfds <= 1 &&
		    !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
			switch (m.op) {
			case PRW_OP_ADD:
				reply = ctl_add(&m, fd);
				break;
			case PRW_OP_DEL:
				reply = ctl_del(&m);
				break;
			case PRW_OP_BULK:
				reply = ctl_bulk(&m, fd);
				break;
			}
		}
		if (fd >= 0)
			close(fd); /* a mapping, if any, outlives it */
		while (send(h_sock, &reply, sizeof(reply), MSG_NOSIGNAL) < 0)
			if (errno != EINTR)
				_exit(1);
	}
}

/* Sleep on @word; after a second of idleness, check that the program still
 * holds its end of the socket (it closes on exec, or if the program closed
 * it), and leave if not. */
static void futex_wait_shared(uint32_t *word, uint32_t val)
{
	struct timespec t = {1, 0};
	char c;

	if (syscall(SYS_futex, word, FUTEX_WAIT, val, &t, NULL, 0) &&
	    errno == ETIMEDOUT && !recv(h_sock, &c, 1, MSG_PEEK | MSG_DONTWAIT))
		_exit(0);
}

static void futex_wake_shared(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* Poll this long for the next request before sleeping on the doorbell. */
#define HELPER_SPIN_NS 50000u

static void publish_cpu(struct prw_ring *ring)
{
	int cpu = sched_getcpu();

	__atomic_store_n(&ring->helper_cpu,
			 cpu < 0 ? UINT32_MAX : (uint32_t)cpu,
			 __ATOMIC_RELAXED);
}

static void set_sleeping(struct prw_ring *ring, uint32_t v)
{
	__atomic_store_n(&ring->helper_sleeping, v, __ATOMIC_SEQ_CST);
}

/*
 * After answering a caller that slept: until it has taken its answer, give
 * the CPU away rather than spin, since the caller may be queued behind us
 * on this one. Meanwhile callers must wake us and not spin for us. False
 * when a new request came, or the caller did not run within @until.
 */
static bool wait_taken(struct prw_ring *ring, struct prw_slot *s, uint32_t seen,
		       uint64_t until)
{
	for (;;) {
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

		if (st != PRW_DONE && st != PRW_REFUSED)
			return true;
		if (__atomic_load_n(&ring->doorbell, __ATOMIC_SEQ_CST) !=
			    seen ||
		    now_ns() > until)
			return false;
		sched_yield();
	}
}

/* Poll the doorbell until @until while it still reads @seen; true when it
 * rang. Only worth it while the caller runs on another CPU. */
static bool poll_doorbell(struct prw_ring *ring, uint32_t seen, uint64_t until)
{
	for (unsigned n = 0;; n++) {
		if (__atomic_load_n(&ring->doorbell, __ATOMIC_RELAXED) != seen)
			return true;
		if (!(n % 64) && now_ns() > until)
			return false;
		cpu_relax();
	}
}

static __attribute__((noreturn)) void serve(void)
{
	struct prw_ring *ring = h_ring;

	for (;;) {
		uint32_t seen =
			__atomic_load_n(&ring->doorbell, __ATOMIC_SEQ_CST);
		struct prw_slot *woken = NULL;
		bool worked = false;
		uint64_t until;

		publish_cpu(ring);
		if (__atomic_exchange_n(&ring->ctl_pending, 0,
					__ATOMIC_SEQ_CST)) {
			ctl_drain();
			worked = true;
		}
		for (unsigned i = 0; i < PRW_NR_SLOTS; i++) {
			struct prw_slot *s = &ring->slots[i];
			uint32_t st;

			if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) !=
			    PRW_READY)
				continue;
			st = handle(s) ? PRW_REFUSED : PRW_DONE;
			__atomic_store_n(&s->state, st, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&s->waiting, __ATOMIC_SEQ_CST)) {
				futex_wake_shared(&s->state);
				woken = s;
			}
			worked = true;
		}
		/* Its caller spun: it runs elsewhere, more may follow. */
		if (worked && !woken)
			continue;
		until = now_ns() + HELPER_SPIN_NS;
		if (woken) {
			set_sleeping(ring, 1);
			if (!wait_taken(ring, woken, seen, until))
				goto sleep;
			publish_cpu(ring);
		}
		if (__atomic_load_n(&ring->caller_cpu, __ATOMIC_RELAXED) !=
		    __atomic_load_n(&ring->helper_cpu, __ATOMIC_RELAXED)) {
			set_sleeping(ring, 0);
			if (poll_doorbell(ring, seen, until))
				continue;
		}
sleep:
		set_sleeping(ring, 1);
		if (__atomic_load_n(&ring->doorbell, __ATOMIC_SEQ_CST) == seen)
			futex_wait_shared(&ring->doorbell, seen);
		set_sleeping(ring, 0);
	}
}

/* Address ranges the helper keeps: the loaded objects' .bss (found by the
 * program before the clone, where dl_iterate_phdr() may take its lock),
 * the stack, the thread block, the ring. */
#define KEEP_MAX 64
struct keep {
	uintptr_t lo[KEEP_MAX], hi[KEEP_MAX];
	unsigned n;
};

static void keep_add(struct keep *k, uintptr_t lo, uintptr_t hi)
{
	if (k->n < KEEP_MAX && lo < hi) {
		k->lo[k->n] = lo;
		k->hi[k->n++] = hi;
	}
}

static int keep_bss(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && ph->p_memsz > ph->p_filesz)
			keep_add(arg, info->dlpi_addr + ph->p_vaddr,
				 info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
	}
	return 0;
}

/* Anonymous mappings may be dropped (not [stack], [vdso], ...). */
static bool anonymous(unsigned long inode, const char *name)
{
	if (inode)
		return false;
	return name[0] != '[' || !strncmp(name, "[heap]", 6) ||
	       !strncmp(name, "[anon:", 6);
}

#define DROP_MAX 256
static struct {
	uintptr_t lo, hi;
} drop[DROP_MAX];

/* Queue [lo, hi) minus every kept range for unmapping. Adjacent anonymous
 * mappings merge, so a kept range (the thread block) may sit inside a big
 * one (a malloc()ed buffer): only the kept pages stay. */
static void drop_outside(uintptr_t lo, uintptr_t hi, const struct keep *k,
			 unsigned *ndrop)
{
	uintptr_t at = lo;

	while (at < hi && *ndrop < DROP_MAX) {
		uintptr_t next_lo = hi, next_hi = hi;

		/* The lowest kept range that ends above @at. */
		for (unsigned i = 0; i < k->n; i++) {
			uintptr_t klo = k->lo[i] & ~(uintptr_t)(PRW_PAGE - 1);
			uintptr_t khi = (k->hi[i] + PRW_PAGE - 1) &
					~(uintptr_t)(PRW_PAGE - 1);

			if (khi > at && klo < next_lo) {
				next_lo = klo < at ? at : klo;
				next_hi = khi;
			}
		}
		if (next_lo > at) {
			drop[*ndrop].lo = at;
			drop[(*ndrop)++].hi = next_lo < hi ? next_lo : hi;
		}
		at = next_hi;
	}
}

/* Parse one maps line: "lo-hi perms offset dev inode   name". */
static bool maps_line(const char *l, uintptr_t *lo, uintptr_t *hi,
		      unsigned long *inode, const char **name)
{
	*lo = rw_parse_hex(&l);
	if (*l++ != '-')
		return false;
	*hi = rw_parse_hex(&l);
	for (int field = 0; field < 3; field++) { /* perms offset dev */
		while (*l == ' ')
			l++;
		while (*l && *l != ' ')
			l++;
	}
	while (*l == ' ')
		l++;
	*inode = 0;
	for (; *l >= '0' && *l <= '9'; l++)
		*inode = *inode * 10 + (unsigned long)(*l - '0');
	while (*l == ' ')
		l++;
	*name = l;
	return true;
}

/*
 * Unmap every anonymous page the helper does not keep: a pass reads
 * /proc/self/maps whole, then unmaps; repeat while a pass fills drop[].
 */
static void shed_program_memory(struct keep *k, const void *ring)
{
	uintptr_t base = 0, sp = (uintptr_t)__builtin_frame_address(0);
	unsigned ndrop;

#ifdef __SANITIZE_ADDRESS__
	/* AddressSanitizer's shadow is anonymous memory this code needs. */
	(void)k;
	(void)ring;
	(void)base;
	(void)sp;
	(void)ndrop;
	return;
#endif
	syscall(SYS_arch_prctl, 0x1003 /* ARCH_GET_FS */, &base);
	/* The stack below us (the loop and signal frames) and the frames
	 * above (our arguments); static TLS below the thread pointer and the
	 * thread control block above it. */
	keep_add(k, sp - (256 << 10), sp + (64 << 10));
	keep_add(k, base - (64 << 10), base + (16 << 10));
	keep_add(k, (uintptr_t)ring, (uintptr_t)ring + PRW_RING_SIZE);
	do {
		char buf[4096];
		size_t have = 0;
		int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

		ndrop = 0;
		if (fd < 0)
			return;
		for (;;) {
			ssize_t n =
				read(fd, buf + have, sizeof(buf) - 1 - have);
			char *line = buf, *nl;

			if (n <= 0)
				break;
			have += (size_t)n;
			buf[have] = 0;
			while ((nl = strchr(line, '\n'))) {
				uintptr_t lo, hi;
				unsigned long inode;
				const char *name;

				*nl = 0;
				if (maps_line(line, &lo, &hi, &inode, &name)) {
					if (anonymous(inode, name))
						drop_outside(lo, hi, k, &ndrop);
				}
				line = nl + 1;
			}
			have -= (size_t)(line - buf);
			memmove(buf, line, have);
		}
		close(fd);
		for (unsigned i = 0; i < ndrop; i++)
			munmap((void *)drop[i].lo, drop[i].hi - drop[i].lo);
	} while (ndrop == DROP_MAX);
}

static void close_other_fds(int keep)
{
	if (keep > 0 && syscall(SYS_close_range, 0, keep - 1, 0) == 0 &&
	    syscall(SYS_close_range, keep + 1, ~0U, 0) == 0)
		return;
	if (!keep && syscall(SYS_close_range, 1, ~0U, 0) == 0)
		return;
	/* Kernels before 5.9: one by one. */
	for (long fd = 0, max = sysconf(_SC_OPEN_MAX); fd < max; fd++)
		if (fd != keep)
			close((int)fd);
}

static __attribute__((noreturn)) void
helper_main(struct prw_ring *ring, int sock, pid_t program, struct keep *keep)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	struct sigaction term = {.sa_handler = on_parent_death,
				 .sa_flags = SA_RESTART};
	sigset_t mask;
	int32_t ready = 0;

	sigfillset(&mask);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL);
	h_ring = ring;
	h_sock = sock;
	h_program = program;
	h_nr_regions = 0;
	h_bulk = NULL;
	h_bulk_len = 0;
	sigfillset(&term.sa_mask);
	sigaction(SIGTERM, &term, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != program)
		_exit(0);
	close_other_fds(sock);
	shed_program_memory(keep, ring);
	prctl(PR_SET_DUMPABLE, 0);
	prctl(PR_SET_NAME, PRW_HELPER_COMM);
	sigdelset(&mask, SIGTERM);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	/* Refused filter: say so, and serve nothing. */
	ready = prw_helper_seccomp();
	if (send(sock, &ready, sizeof(ready), MSG_NOSIGNAL) != sizeof(ready) ||
	    ready)
		_exit(1);
	serve();
}

pid_t prw_helper_spawn(struct prw_ring *ring, int sock)
{
	pid_t program = getpid();
	struct keep keep = {.n = 0};

	dl_iterate_phdr(keep_bss, &keep);
	/* Like fork(), but exit signal 0: not a SIGCHLD child. No atfork
	 * handlers run; the child touches no libc lock. */
	long pid = syscall(SYS_clone, 0UL, NULL, NULL, NULL, NULL);

	if (pid < 0)
		return -errno;
	if (!pid)
		helper_main(ring, sock, program, &keep);
	return (pid_t)pid;
}
