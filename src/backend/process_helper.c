// SPDX-License-Identifier: MIT
/*
 * process_helper.c - the helper process of the process backend: the only
 * place where protected memory is mapped writable.
 *
 * It is not the program's child. The program clones a short-lived middle
 * process, which clones the keeper and exits; the keeper, now an orphan,
 * is adopted by init (or the nearest child subreaper above the program:
 * the program, if it is one itself, gives that up while the middle process
 * lives) and clones the helper. So nothing the program does to its
 * children (wait(-1, __WALL), killing every child it finds) reaches the
 * helper, and the helper is never a zombie: the keeper reaps it at once,
 * tells the program on the socket how it ended (a signal, its seccomp
 * filter), and exits, to be reaped by its adopter.
 *
 * Before cloning the helper the keeper blocks every signal, restores
 * default dispositions, closes every descriptor but its end of the socket
 * and sheds the program's memory (below), so the helper inherits all that;
 * the middle process checks that its parent is still the program. The
 * helper makes itself non-dumpable (no ptrace, no /proc/<pid>/mem for
 * anyone of the same uid) and confines itself to the system calls of its
 * loop, the keeper to waiting and one reply (process_seccomp.c). The
 * helper ends when no process holds the program's end of the socket any
 * more (the program exited or exec()ed).
 *
 * It starts on a copy-on-write copy of the program's memory, so it calls
 * nothing that takes a libc lock or goes through the library's interposers
 * (no malloc, no stdio, no abort, no sigaction(): another thread of the
 * program may have held their locks when it was cloned). Its system calls
 * are made directly (rw_sys(), rawsys.h). Before serving it drops what
 * it does not need of that copy: every anonymous mapping (the program's
 * heap, its other threads' stacks, its buffers, the dynamic loader's own
 * data) but its own stack and thread block; what stays is the loaded objects
 * (code, data, .bss). Since the loader's data is gone, nothing after that
 * may resolve a lazily bound symbol: the few libc functions it calls
 * (memset, memmove, memcpy, strchr, strncmp) are called once before
 * (warm_up()).
 *
 * Every request comes whole in one message (process_ring.h), into helper
 * memory; only the program's own messages are served (the kernel's
 * SCM_CREDENTIALS); each is validated against the helper's own table of
 * regions (which the program cannot touch) and then applied whole; a
 * request that fails validation is refused and nothing of it is written.
 * The answer goes into the answer page, which only the helper can write,
 * and a futex wake.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "process_helper.h"
#include "process_ring.h"
#include "process_seccomp.h"
#include "process_syscall.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

static __attribute__((noreturn)) void sys_exit(int code)
{
	for (;;)
		rw_sys(SYS_exit_group, code, 0, 0);
}

/* The kernel's struct sigaction (x86-64, and most others). */
struct k_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/* The helper's state: in the helper's own (copied) memory only. */
static struct helper_region {
	uint64_t id;
	uintptr_t start; /* program address */
	size_t len;
	unsigned char *map; /* the writable mapping */
	uint64_t dev, ino;  /* of its memfd: no memfd is mapped twice */
} h_regions[PRW_MAX_REGIONS];
static unsigned h_nr_regions;
static unsigned char *h_buf; /* one message, PRW_MSG_MAX bytes */
static int h_sock;
static pid_t h_program;
/* The answer page: writable here only (process_ring.h). */
static struct prw_answer *h_answer;
static uint32_t h_answered; /* the program's requests answered */
/* What the last ADD mapped or WIPE zeroed, told in its answer (0:
 * nothing). */
static uint64_t h_added_dev, h_added_ino;
/* The echo of the request being answered (struct prw_answer): its seq and
 * op, and what a WRITE applied. */
static struct {
	uint64_t seq;
	uint32_t op, nseg;
	uint64_t dst, len, data, total, digest, sp;
	uint64_t call_dst, call_len, call_done;
} h_echo;
/* The call in pieces in progress (process_ring.h): its start, end and the
 * next byte to write; open while next != end. Here, not in the program:
 * its memory is the attacker's, between one piece's answer and the next. */
static uint64_t h_call_start, h_call_end, h_call_next;

static bool call_open(void)
{
	return h_call_next != h_call_end;
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

/* The region registered under the core table's record @t (its id, start and
 * length, each loaded once: the program may be writing the table), or NULL. */
static struct helper_region *region_of_record(const struct rw_region *t)
{
	uint64_t id = __atomic_load_n(&t->priv, __ATOMIC_ACQUIRE);
	uint64_t start = __atomic_load_n(&t->start, __ATOMIC_ACQUIRE);
	uint64_t len = __atomic_load_n(&t->len, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < h_nr_regions; i++) {
		struct helper_region *r = &h_regions[i];

		if (r->id == id && r->start == start && r->len == len)
			return r;
	}
	return NULL;
}

/*
 * A WRITE that is a piece of a call (@m->len not 0): with a call open, the
 * next piece of it; else a first piece, whose call lies in one registered
 * region. One segment, inside the call, ending on an 8-byte boundary
 * unless it ends the call. 0 or -EINVAL.
 */
static int piece_check(const struct prw_msg *m, const struct prw_seg *g)
{
	uint64_t at = call_open() ? h_call_next : m->start;
	uint64_t end = call_open() ? h_call_end : m->start + m->len;

	if (m->nseg != 1 || g->dst != at || !g->len || g->len > end - at ||
	    (g->len != end - at && (at + g->len) % 8))
		return -EINVAL;
	if (call_open())
		return m->start == h_call_start && m->len == end - h_call_start
			       ? 0
			       : -EINVAL;
	return end > m->start && region_by_addr(m->start, m->len) ? 0 : -EINVAL;
}

/* Validate and apply the write in the message of @n bytes at h_buf: 0, or
 * -EINVAL (-EBUSY: not the next piece of the call in progress) with
 * nothing written. */
static int handle_write(size_t n)
{
	static unsigned char *at[PRW_MAX_SEGS];
	const struct prw_msg *m = (const void *)h_buf;
	const struct prw_seg *segs = (const void *)(h_buf + sizeof(*m));
	const unsigned char *data;
	size_t head, avail, used = 0;

	if (!m->nseg || m->nseg > PRW_MAX_SEGS)
		return -EINVAL;
	head = sizeof(*m) + m->nseg * sizeof(*segs);
	if (n < head)
		return -EINVAL;
	if (call_open() && !m->len)
		return -EBUSY;
	if (m->len && piece_check(m, &segs[0]))
		return -EINVAL;
	data = h_buf + head;
	avail = n - head;
	for (unsigned i = 0; i < m->nseg; i++) {
		const struct prw_seg *g = &segs[i];
		struct helper_region *r = region_by_addr(g->dst, g->len);

		if (!g->len || !r || (g->flags & ~PRW_SEG_FILL))
			return -EINVAL;
		if (!(g->flags & PRW_SEG_FILL)) {
			if (g->len > avail - used)
				return -EINVAL;
			used += g->len;
		}
		at[i] = r->map + (g->dst - r->start);
	}
	if (used != avail)
		return -EINVAL;
	/* What is applied, for the answer: the program compares it with
	 * what it meant to send (a store may have rewritten the request in
	 * its memory before sendmsg(2)). */
	h_echo.nseg = m->nseg;
	h_echo.dst = segs[0].dst;
	h_echo.len = segs[0].len;
	if (segs[0].flags & PRW_SEG_FILL) {
		uint64_t v =
			0x0101010101010101ULL * (unsigned char)segs[0].fill;

		h_echo.data = segs[0].len >= 8
				      ? v
				      : v & ((1ULL << (8 * segs[0].len)) - 1);
	} else {
		h_echo.data = prw_unit(data, segs[0].len);
	}
	h_echo.total = used;
	h_echo.digest = prw_digest(segs, m->nseg);
	if (m->len) {
		if (!call_open()) {
			h_call_start = m->start;
			h_call_end = m->start + m->len;
		}
		h_call_next = segs[0].dst + segs[0].len;
		h_echo.call_dst = h_call_start;
		h_echo.call_len = h_call_end - h_call_start;
		h_echo.call_done = h_call_next - h_call_start;
	}
	for (unsigned i = 0; i < m->nseg; i++) {
		const struct prw_seg *g = &segs[i];

		if (g->flags & PRW_SEG_FILL) {
			rw_fill(at[i], g->fill, g->len);
		} else {
			rw_store(at[i], data, g->len);
			data += g->len;
		}
	}
	return 0;
}

/*
 * PRW_OP_WIPE (process_ring.h): zero the sealed pool whose destroy is in
 * progress, as the core's table says; the message names nothing. The
 * helper's mapping of the table is the program's vault memfd, shared: it
 * sees every pwrite(2) of the library and no store of the program's (the
 * program's mapping is read-only, and its own .bss copy of the table, had
 * the clone come before the first seal, would hold no protected region:
 * every wipe refused, never a wrong one). A store into the request's
 * words can only turn another op into this one (a DEL: the same dying
 * pool zeroed again; a write is longer than a WIPE, refused), or this one
 * into another, whose answer names no zeroed memfd: the client dies. (A
 * store into its iovec, pointing it at a request of the attacker's, is
 * every request's exposure before sendmsg(2): that request is served,
 * and its echo names another op or seq than the client sent, which then
 * dies: 15a.) 0, or -ENOENT (no destroy of a sealed pool of ours in progress)
 * with nothing written. The answer names the zeroed memfd, which the client
 * compares with the record's descriptor.
 */
static int handle_wipe(void)
{
	const struct rw_region *t = rw_region_dying();
	struct helper_region *r;

	if (!t || !__atomic_load_n(&t->seal, __ATOMIC_ACQUIRE) ||
	    !rw_backend_is(__atomic_load_n(&t->backend, __ATOMIC_ACQUIRE),
			   RW_BACKEND_PROCESS))
		return -ENOENT;
	r = region_of_record(t);
	if (!r)
		return -ENOENT;
	rw_fill(r->map, 0, r->len);
	h_added_dev = r->dev;
	h_added_ino = r->ino;
	return 0;
}

/*
 * PRW_OP_HEAD (process_ring.h): the @n - sizeof(struct prw_msg) bytes after
 * the message's head go to the start of the pool being created, as the
 * core's table says (shared as for a WIPE): never further than the
 * request's metadata length, into the region registered under that
 * record's id, start and length. 0, or -ENOENT / -EINVAL with nothing
 * written. A store into the request's words changes the bytes (the core
 * reads the head back and aborts) or the op (every other op is refused at
 * a HEAD's length; the client dies). A store into the iovec, pointing it
 * at a request of the attacker's, is the exposure every request has in
 * the few instructions before sendmsg(2): that request is served, and its
 * echo (op, seq) or the head read back differs, and the client dies (15a).
 */
static int handle_head(size_t n)
{
	size_t meta = 0, d = n - sizeof(struct prw_msg);
	const struct rw_region *t = rw_region_opening(&meta);
	struct helper_region *r;

	if (!t || !rw_backend_is(__atomic_load_n(&t->backend, __ATOMIC_ACQUIRE),
				 RW_BACKEND_PROCESS))
		return -ENOENT;
	r = region_of_record(t);
	if (!r)
		return -ENOENT;
	if (!d || d > meta || d > r->len)
		return -EINVAL;
	rw_store(r->map, h_buf + sizeof(struct prw_msg), d);
	return 0;
}

/*
 * The memfd @fd is fit to map @len bytes of: a region's memfd as the
 * program hands it over, sealed against resizing and nothing else (every
 * other memfd of the library, its tables' vaults, the answer page, a
 * registered region's, carries F_SEAL_SEAL: a descriptor number swapped
 * for one of those is refused, attack 25a), and not one mapped already.
 * Its device and inode in @dev, @ino.
 */
static int memfd_fit(int fd, uint64_t len, uint64_t *dev, uint64_t *ino)
{
	struct stat st = {0}; /* filled by the raw fstat, unseen by analysers */
	long seals = rw_sys(SYS_fcntl, fd, F_GET_SEALS, 0);

	if (seals != (F_SEAL_SHRINK | F_SEAL_GROW))
		return -EPERM;
	if (rw_sys(SYS_fstat, fd, &st, 0) || st.st_size < 0 ||
	    (uint64_t)st.st_size < len)
		return -EINVAL;
	for (unsigned i = 0; i < h_nr_regions; i++)
		if (h_regions[i].dev == (uint64_t)st.st_dev &&
		    h_regions[i].ino == (uint64_t)st.st_ino)
			return -EEXIST;
	*dev = (uint64_t)st.st_dev;
	*ino = (uint64_t)st.st_ino;
	return 0;
}

static int ctl_add(const struct prw_msg *m, int fd)
{
	uint64_t dev = 0, ino = 0;
	long map;
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
	err = memfd_fit(fd, m->len, &dev, &ino);
	if (err)
		return err;
	map = rw_sys6(SYS_mmap, 0, (long)m->len, PROT_READ | PROT_WRITE,
		      MAP_SHARED, fd, 0);
	if (map < 0 && map > -4096)
		return (int)map;
	h_regions[h_nr_regions].id = m->id;
	h_regions[h_nr_regions].start = m->start;
	h_regions[h_nr_regions].len = m->len;
	h_regions[h_nr_regions].map = (unsigned char *)map;
	h_regions[h_nr_regions].dev = dev;
	h_regions[h_nr_regions].ino = ino;
	h_nr_regions++;
	h_added_dev = dev;
	h_added_ino = ino;
	return 0;
}

static int ctl_del(const struct prw_msg *m)
{
	for (unsigned i = 0; i < h_nr_regions; i++)
		if (h_regions[i].id == m->id) {
			rw_sys(SYS_munmap, h_regions[i].map, h_regions[i].len,
			       0);
			h_regions[i].id = h_regions[h_nr_regions - 1].id;
			h_regions[i].start = h_regions[h_nr_regions - 1].start;
			h_regions[i].len = h_regions[h_nr_regions - 1].len;
			h_regions[i].map = h_regions[h_nr_regions - 1].map;
			h_regions[i].dev = h_regions[h_nr_regions - 1].dev;
			h_regions[i].ino = h_regions[h_nr_regions - 1].ino;
			h_nr_regions--;
			return 0;
		}
	return -ENOENT;
}

/* Control data of one message: the sender's credentials and up to four
 * descriptors. */
union ctl_buf {
	char buf[CMSG_SPACE(sizeof(struct ucred)) +
		 CMSG_SPACE(4 * sizeof(int))];
	struct cmsghdr align;
};

/* Walk the control data of @mh (without glibc's __cmsg_nxthdr, a call
 * into libc): the sender's pid in @pid (0 if none), the first descriptor
 * in @fd; any further descriptor is closed. */
static void take_cmsgs(const struct msghdr *mh, pid_t *pid, int *fd)
{
	const char *p = mh->msg_control, *end = p + mh->msg_controllen;

	*pid = 0;
	*fd = -1;
	while ((size_t)(end - p) >= sizeof(struct cmsghdr)) {
		const struct cmsghdr *c = (const void *)p;
		size_t len = c->cmsg_len, step = CMSG_ALIGN(len);

		if (len < CMSG_LEN(0) || len > (size_t)(end - p))
			break;
		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_CREDENTIALS &&
		    len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred u;

			memcpy(&u, CMSG_DATA(c), sizeof(u));
			*pid = u.pid;
		} else if (c->cmsg_level == SOL_SOCKET &&
			   c->cmsg_type == SCM_RIGHTS) {
			for (size_t i = 0;
			     i < (len - CMSG_LEN(0)) / sizeof(int); i++) {
				int got;

				memcpy(&got, CMSG_DATA(c) + i * sizeof(int),
				       sizeof(int));
				if (*fd < 0)
					*fd = got;
				else
					rw_sys(SYS_close, got, 0, 0);
			}
		}
		if (step > (size_t)(end - p))
			break;
		p += step;
	}
}

/* One request: 0 or -errno. */
static int serve_one(size_t n, const struct msghdr *mh, pid_t sender, int fd)
{
	const struct prw_msg *m = (const void *)h_buf;

	/* A raw fork child (no fork handlers ran) holds the socket too: it
	 * may ask nothing, register nothing, remove nothing. */
	if (sender != h_program)
		return -EPERM;
	if (n < sizeof(*m) || (mh->msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EINVAL;
	/* A call in pieces holds req_lock from its first piece to its last:
	 * nothing else comes in between but through a forged lock. */
	if (call_open() && m->op != PRW_OP_WRITE)
		return -EBUSY;
	switch (m->op) {
	case PRW_OP_WRITE:
		return fd < 0 ? handle_write(n) : -EINVAL;
	case PRW_OP_ADD:
		return n == sizeof(*m) ? ctl_add(m, fd) : -EINVAL;
	case PRW_OP_DEL:
		return n == sizeof(*m) && fd < 0 ? ctl_del(m) : -EINVAL;
	case PRW_OP_WIPE:
		return n == sizeof(*m) && fd < 0 ? handle_wipe() : -EINVAL;
	case PRW_OP_HEAD:
		return n > sizeof(*m) && fd < 0 ? handle_head(n) : -EINVAL;
	}
	return -EINVAL;
}

/* Polls of the socket for the next request before sleeping in recvmsg(),
 * after answering a caller on another CPU (more may follow at once). */
#define HELPER_POLLS 64

static uint32_t my_cpu(void)
{
	unsigned cpu = UINT32_MAX;
	int32_t id = prw_rseq_cpu(); /* no system call per answer */

	if (id >= 0)
		return (uint32_t)id;
	return rw_sys(SYS_getcpu, &cpu, 0, 0) ? UINT32_MAX : cpu;
}

/* Answer the program's latest request: the count last, then the wake. */
static void answer(int err, uint32_t cpu)
{
	uint32_t count = h_answered + 1;

	h_answered = count;
	__atomic_store_n(&h_answer->dev, h_added_dev, __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->ino, h_added_ino, __ATOMIC_RELAXED);
	h_added_dev = h_added_ino = 0;
	__atomic_store_n(&h_answer->seq, h_echo.seq, __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->op, h_echo.op, __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->nseg, h_echo.nseg, __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->dst, h_echo.dst, __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->len, h_echo.len, __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->data, h_echo.data, __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->total, h_echo.total, __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->digest, h_echo.digest, __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->sp, h_echo.sp, __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->call_dst, h_echo.call_dst,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->call_len, h_echo.call_len,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->call_done, h_echo.call_done,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->err, err, __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->cpu, cpu, __ATOMIC_RELAXED);
	__atomic_store_n(&h_answer->count, count, __ATOMIC_RELEASE);
	rw_sys6(SYS_futex, (long)&h_answer->count, FUTEX_WAKE_BITSET, 1, 0, 0,
		PRW_ANSWER_BIT(count));
}

static __attribute__((noreturn)) void serve(void)
{
	unsigned polls = 0;

	for (;;) {
		/* Zeroed: the analysers cannot see recvmsg() fill it. */
		union ctl_buf cbuf = {0};
		struct iovec iov = {h_buf, PRW_MSG_MAX};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf.buf,
				    .msg_controllen = sizeof(cbuf.buf)};
		uint32_t caller_cpu = UINT32_MAX, cpu;
		pid_t sender;
		int fd, err;
		long n = rw_sys(SYS_recvmsg, h_sock, &mh,
				MSG_CMSG_CLOEXEC | (polls ? MSG_DONTWAIT : 0));

		if (n == -EAGAIN && polls) {
			polls--;
			continue;
		}
		if (n == -EINTR)
			continue;
		if (n == 0)
			sys_exit(0); /* no program holds the other end */
		if (n < 0)
			sys_exit(1);
		take_cmsgs(&mh, &sender, &fd);
		memset(&h_echo, 0, sizeof(h_echo));
		if ((size_t)n >= sizeof(struct prw_msg)) {
			memcpy(&h_echo.seq,
			       h_buf + offsetof(struct prw_msg, seq),
			       sizeof(h_echo.seq));
			memcpy(&h_echo.op, h_buf + offsetof(struct prw_msg, op),
			       sizeof(h_echo.op));
			memcpy(&h_echo.sp, h_buf + offsetof(struct prw_msg, sp),
			       sizeof(h_echo.sp));
		}
		err = serve_one((size_t)n, &mh, sender, fd);
		if (fd >= 0)
			rw_sys(SYS_close, fd, 0, 0); /* a mapping outlives it */
		/* Anyone else's message (a raw fork child's) gets no answer:
		 * the answer page is the program's. */
		if (sender != h_program)
			continue;
		if ((size_t)n >= sizeof(struct prw_msg))
			memcpy(&caller_cpu,
			       h_buf + offsetof(struct prw_msg, cpu),
			       sizeof(caller_cpu));
		cpu = my_cpu();
		answer(err, cpu);
		/* A hint: polling only pays while the caller runs on another
		 * CPU; on ours it would only keep the caller from running. */
		polls = caller_cpu != UINT32_MAX && cpu != UINT32_MAX &&
					caller_cpu != cpu
				? HELPER_POLLS
				: 0;
	}
}

/* Address ranges the helper keeps: the loaded objects' .bss (found by the
 * program before the clone, where dl_iterate_phdr() may take its lock),
 * the stack, the thread block. */
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
static void shed_program_memory(struct keep *k)
{
	uintptr_t base = 0, sp = (uintptr_t)__builtin_frame_address(0);
	unsigned ndrop;

#ifdef PRW_ASAN
	/* AddressSanitizer's shadow is anonymous memory this code needs. */
	(void)k;
	(void)base;
	(void)sp;
	(void)ndrop;
	return;
#endif
	rw_sys(SYS_arch_prctl, 0x1003 /* ARCH_GET_FS */, &base, 0);
	/* The stack below us (the loop and signal frames) and the frames
	 * above (our arguments); static TLS below the thread pointer and the
	 * thread control block above it. */
	keep_add(k, sp - (256 << 10), sp + (64 << 10));
	keep_add(k, base - (64 << 10), base + (16 << 10));
	do {
		char buf[4096];
		size_t have = 0;
		int fd = (int)rw_sys6(SYS_openat, AT_FDCWD,
				      (long)"/proc/self/maps",
				      O_RDONLY | O_CLOEXEC, 0, 0, 0);

		ndrop = 0;
		if (fd < 0)
			return;
		for (;;) {
			long n = rw_sys(SYS_read, fd, buf + have,
					sizeof(buf) - 1 - have);
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
		rw_sys(SYS_close, fd, 0, 0);
		for (unsigned i = 0; i < ndrop; i++)
			rw_sys(SYS_munmap, drop[i].lo, drop[i].hi - drop[i].lo,
			       0);
	} while (ndrop == DROP_MAX);
}

static void close_other_fds(int keep)
{
	if (keep > 0 && !rw_sys(SYS_close_range, 0, keep - 1, 0) &&
	    !rw_sys(SYS_close_range, keep + 1, ~0U, 0))
		return;
	if (!keep && !rw_sys(SYS_close_range, 1, ~0U, 0))
		return;
	/* Kernels before 5.9: one by one. */
	for (long fd = 0; fd < 65536; fd++)
		if (fd != keep)
			rw_sys(SYS_close, fd, 0, 0);
}

/*
 * Resolve, while the loader's data is still mapped, every libc function the
 * loop calls: a program linked with -z lazy (or librarewrite.a in a lazily
 * bound program) binds them at their first call. The sizes are opaque, so
 * that the calls stay calls.
 */
static void warm_up(void)
{
	static char a[64], b[64];
	volatile size_t n = sizeof(a);
	volatile int c = 'x';

	memset(a, 0, n);
	memmove(a, b, n);
	memcpy(b, a, n);
	rw_store(a, b, n);
	if (strchr(a, c) || strncmp(a, b, n))
		a[0] = 1;
}

/*
 * The answer page: a memfd mapped writable here, then sealed against every
 * future write (and further seals) before it goes to the program with
 * @ready (err PRW_READY_PAGE): the program can only map it read-only. Made
 * before the helper confines itself (memfd_create, ftruncate and sendmsg
 * are not in its filter). 0 or -errno.
 */
static int answer_page_send(int sock, const struct prw_ready *ready)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf = {0};
	struct iovec iov = {(void *)ready, sizeof(*ready)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf.buf,
			    .msg_controllen = sizeof(cbuf.buf)};
	struct cmsghdr *c = (struct cmsghdr *)cbuf.buf;
	long fd = rw_sys(SYS_memfd_create, "rarewrite-answer",
			 MFD_CLOEXEC | MFD_ALLOW_SEALING, 0),
	     map, err;

	if (fd < 0)
		return (int)fd;
	err = rw_sys(SYS_ftruncate, fd, PRW_PAGE, 0);
	map = err ? err
		  : rw_sys6(SYS_mmap, 0, PRW_PAGE, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fd, 0);
	if (map < 0 && map > -4096) {
		rw_sys(SYS_close, fd, 0, 0);
		return (int)map;
	}
	h_answer = (struct prw_answer *)map;
	h_answer->pid = ready->pid;
	err = rw_sys(SYS_fcntl, fd, F_ADD_SEALS,
		     F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE |
			     F_SEAL_SEAL);
	if (!err) {
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &(int){(int)fd}, sizeof(int));
		err = rw_sys(SYS_sendmsg, sock, &mh, MSG_NOSIGNAL);
		err = err == (long)sizeof(*ready) ? 0 : err < 0 ? err : -EIO;
	}
	rw_sys(SYS_close, fd, 0, 0);
	return (int)err;
}

/* The helper: serve the program from now on. */
static __attribute__((noreturn)) void helper_main(int sock, pid_t program)
{
	struct prw_ready ready = {0};
	long buf;

	h_sock = sock;
	h_program = program;
	h_nr_regions = 0;
	h_answered = 0;
	h_call_start = h_call_end = h_call_next = 0;
	buf = rw_sys6(SYS_mmap, 0, (long)PRW_MSG_MAX, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf < 0 && buf > -4096)
		sys_exit(1);
	h_buf = (unsigned char *)buf;
	rw_sys(SYS_prctl, PR_SET_DUMPABLE, 0, 0);
	rw_sys(SYS_prctl, PR_SET_NAME, PRW_HELPER_COMM, 0);
	ready.pid =
		(int32_t)rw_sys(SYS_getpid, 0, 0, 0); /* not in the filter */
	ready.err = PRW_READY_PAGE;
	if (answer_page_send(sock, &ready))
		sys_exit(1);
	/* Refused filter: say so, and serve nothing. */
	ready.err = prw_helper_seccomp();
	if (rw_sys6(SYS_sendto, sock, (long)&ready, sizeof(ready), MSG_NOSIGNAL,
		    0, 0) != sizeof(ready) ||
	    ready.err)
		sys_exit(1);
	serve();
}

/*
 * The keeper: the helper's parent. Wait for the helper to end, tell the
 * program how (the helper's pid, CLD_* code and status, in a reply with
 * seq PRW_SEQ_FATE), and exit. Only the helper and the keeper hold their
 * end of the socket: the program sees end-of-file once both are gone.
 */
static __attribute__((noreturn)) void keeper_wait(int sock, pid_t helper)
{
	struct prw_reply fate = {.seq = PRW_SEQ_FATE, .pid = helper};
	siginfo_t si = {0};

	for (;;) {
		long r = rw_sys6(SYS_waitid, P_PID, helper, (long)&si,
				 WEXITED | __WALL, 0, 0);

		if (!r)
			break;
		if (r != -EINTR)
			sys_exit(1);
	}
	fate.err = si.si_code;
	fate.cpu = (uint32_t)si.si_status;
	rw_sys6(SYS_sendto, sock, (long)&fate, sizeof(fate),
		MSG_NOSIGNAL | MSG_DONTWAIT, 0, 0);
	sys_exit(0);
}

static __attribute__((noreturn)) void keeper_main(int sock, pid_t program,
						  struct keep *keep)
{
	struct k_sigaction dfl = {.handler = SIG_DFL};
	uint64_t all = ~(uint64_t)0;
	long helper;

	/* Directly, not through the library's sigaction() interposer: its
	 * lock may be held by a thread that is not here, and it would put
	 * the library's handlers back. The helper inherits all of this. */
	rw_sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, 8, 0, 0);
	for (int sig = 1; sig < 65; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			rw_sys6(SYS_rt_sigaction, sig, (long)&dfl, 0, 8, 0, 0);
	close_other_fds(sock);
	warm_up();
	shed_program_memory(keep);
	rw_sys(SYS_prctl, PR_SET_DUMPABLE, 0, 0);
	rw_sys(SYS_prctl, PR_SET_NAME, PRW_KEEPER_COMM, 0);
	/* Exit signal 0: the keeper is told by waitid(__WALL), not SIGCHLD. */
	helper = rw_sys6(SYS_clone, 0, 0, 0, 0, 0, 0);
	if (helper < 0)
		sys_exit(1);
	if (!helper)
		helper_main(sock, program);
	/* After the clone: the helper must not inherit this filter. A
	 * keeper that cannot confine itself does not leave a helper behind:
	 * the program learns it was killed while starting. */
	if (prw_keeper_seccomp())
		rw_sys(SYS_kill, helper, SIGKILL, 0);
	keeper_wait(sock, (pid_t)helper);
}

/* The middle process: a child of the program for as long as it takes to
 * clone the keeper, which it leaves an orphan. */
static __attribute__((noreturn)) void middle_main(int sock, pid_t program,
						  struct keep *keep)
{
	long keeper;

	if (rw_sys(SYS_getppid, 0, 0, 0) != program)
		sys_exit(1);
	keeper = rw_sys6(SYS_clone, 0, 0, 0, 0, 0, 0);
	if (!keeper)
		keeper_main(sock, program, keep);
	sys_exit(keeper < 0 ? 1 : 0);
}

int prw_helper_spawn(int sock)
{
	pid_t program = getpid();
	struct keep keep = {.n = 0};
	int subreaper = 0;
	long pid;

	dl_iterate_phdr(keep_bss, &keep);

	/* A child subreaper adopts its descendants' orphans: the program
	 * must not be one when the middle process exits, or the keeper
	 * would become its child. It is one again right after. */
	if (prctl(PR_GET_CHILD_SUBREAPER, &subreaper, 0, 0, 0) || !subreaper)
		subreaper = 0;
	else if (prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0))
		return -errno;

	/* Like fork(), but exit signal 0: not a SIGCHLD child, and reaped
	 * right here. No atfork handlers run; the child touches no libc
	 * lock. */
	pid = rw_sys6(SYS_clone, 0, 0, 0, 0, 0, 0);
	if (!pid)
		middle_main(sock, program, &keep);
	if (pid > 0)
		while (waitpid((pid_t)pid, NULL, __WALL) < 0 && errno == EINTR)
			;
	if (subreaper)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	return pid < 0 ? (int)pid : 0;
}
