// SPDX-License-Identifier: MIT
/*
 * attack_process_channel.c - scenarios 10a and 10b: the process backend's
 * channel to its helper.
 *
 * 10a: the attacker's stores alone forge a request in memory the program
 * shares with the helper, then let the program's next legitimate write wake
 * the helper. 10b: a child made by a raw fork (no fork handlers, so it keeps
 * the program's socket to the helper) sends requests of its own: a write,
 * a region of its own, and a bulk area whose body the helper would take for
 * the parent's next large write; then the parent creates a pool, makes a
 * large write and a small one.
 *
 * Both use the layouts of the library's channel as an attacker who read its
 * source would: the request ring of the library before requests went into
 * sendmsg() (a header page, then 32 one-page slots) and the messages of
 * today (src/backend/process_ring.h), written out here so that the
 * scenarios run unchanged against either.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attack.h"

static uint64_t pvictim[2] __wr_rare __attribute__((aligned(16)));
static unsigned char pbig[16384] __wr_rare __attribute__((aligned(4096)));

static bool is_process(void)
{
	return !strcmp(rare_write_backend(), "process");
}

/* The ring's slot, as the library laid it out: state, waiting, flags, pad,
 * then the body: {nseg, pad}, nseg {dst, len, data offset, fill, pad},
 * data. */
struct ring_req {
	uint32_t state, waiting, flags, pad;
	uint32_t nseg, pad2;
	uint64_t dst, len, data;
	int32_t fill;
	uint32_t pad3;
	uint64_t val;
};
#define RING_FREE 0u
#define RING_READY 2u
#define RING_DATA_OFF 40u /* of val, from nseg */

/* In every writable shared mapping of the library's, where a request could
 * be forged: one free slot filled (the program needs the others). Returns
 * how many were. */
static unsigned forge_in_shared_memory(void)
{
	char line[512];
	unsigned forged = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		attack_report(ATTACK_ERROR, "no /proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 ||
		    perms[1] != 'w' || perms[3] != 's' ||
		    !strstr(line, "/memfd:rarewrite"))
			continue;
		/* Page 0 is the ring's header; every other page a slot. */
		for (unsigned long at = lo + 4096, n = 0; at + 4096 <= hi && !n;
		     at += 4096) {
			struct ring_req *s = (struct ring_req *)at;

			if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) !=
			    RING_FREE)
				continue;
			s->flags = 0;
			s->nseg = 1;
			s->dst = (uintptr_t)&pvictim[1];
			s->len = 8;
			s->data = RING_DATA_OFF;
			s->fill = 0;
			s->val = ATTACK_MARKER;
			__atomic_store_n(&s->state, RING_READY,
					 __ATOMIC_RELEASE);
			forged++;
			n++;
		}
	}
	fclose(f);
	return forged;
}

ATTACK("10a", forged_shared_request,
       "forge a write request in memory shared with the process backend's "
       "helper, then let the program write")
{
	struct timespec t = {0, 1000000};
	unsigned forged;

	if (!is_process())
		attack_report(ATTACK_NA, "no helper");
	rare_write(pvictim[0], 1);
	attack_begin();
	forged = forge_in_shared_memory();
	/* The program's own writes wake the helper. */
	for (uint64_t i = 2; i < 50; i++) {
		rare_write(pvictim[0], i);
		if (attack_load64(&pvictim[1]) == ATTACK_MARKER)
			break;
		nanosleep(&t, NULL);
	}
	if (attack_load64(&pvictim[1]) == ATTACK_MARKER)
		attack_report(ATTACK_OPEN,
			      "%u forged request(s) in shared memory applied",
			      forged);
	attack_report(ATTACK_BLOCKED,
		      forged ? "%u forged request(s) ignored"
			     : "%u: no shared memory carries requests",
		      forged);
}

/* The library's socket to its helper: its one AF_UNIX SOCK_SEQPACKET
 * descriptor. */
static int helper_socket(void)
{
	for (int fd = 3; fd < 1024; fd++) {
		int type = 0, domain = 0;
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

static void send_with_fd(int sock, const void *m, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {(void *)m, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

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
	sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* A sealed memfd of @len bytes holding @body. */
static int body_memfd(const void *body, size_t blen, size_t len)
{
	int fd = memfd_create("evil", MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)len) ||
	    pwrite(fd, body, blen, 0) != (ssize_t)blen ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))
		_exit(3);
	return fd;
}

/*
 * The raw fork child: what the library's own code in it could be steered
 * to send (it thinks it is the program; its region table is its to rewrite,
 * row 4c). It reads no reply: the parent must not need it to.
 */
static void raw_child(int sock)
{
	/* The ring's protocol: a bulk area whose body asks for the marker
	 * at pvictim[1] ({op BULK, pad, id, start, len} and a memfd). */
	struct {
		uint32_t nseg, pad;
		uint64_t dst, len, data;
		int32_t fill;
		uint32_t pad2;
		uint64_t val;
	} body = {1, 0, (uintptr_t)&pvictim[1], 8, RING_DATA_OFF,
		  0, 0, ATTACK_MARKER};
	uint64_t bulk_msg[4] = {3 /* BULK */, 0, 0, 65536};
	/* Today's protocol: a write, and a region of the child's own over
	 * the page of pvictim ({op, nseg, seq, id, start, len, cpu, pad},
	 * then {dst, len, flags, fill} and data). */
	struct {
		uint32_t op, nseg;
		uint64_t seq, id, start, len;
		uint32_t cpu, pad;
		uint64_t dst, slen;
		uint32_t flags;
		int32_t fill;
		uint64_t val;
	} write_msg = {.op = 1,
		       .nseg = 1,
		       .seq = 1,
		       .dst = (uintptr_t)&pvictim[1],
		       .slen = 8,
		       .val = ATTACK_MARKER};
	uint32_t add_msg[12] = {2, 0, 2, 0, 999, 0};
	uint64_t page = (uintptr_t)pvictim & ~(uint64_t)4095;
	uint64_t evil[512];

	for (unsigned i = 0; i < 512; i++)
		evil[i] = ATTACK_MARKER;
	memcpy(&add_msg[6], &page, 8);
	add_msg[8] = 4096;
	send_with_fd(sock, bulk_msg, sizeof(bulk_msg),
		     body_memfd(&body, sizeof(body), 65536));
	send_with_fd(sock, &write_msg, sizeof(write_msg), -1);
	send_with_fd(sock, add_msg, sizeof(add_msg),
		     body_memfd(evil, sizeof(evil), 4096));
	_exit(0);
}

ATTACK("10b", raw_fork_channel,
       "a child made by raw `syscall(SYS_fork)` sends its own requests "
       "(a write, a region, a bulk area) on the inherited helper socket")
{
	static unsigned char src[sizeof(pbig)];
	struct rare_pool *pool;
	uint64_t *obj;
	int sock, status;
	pid_t pid;

	if (!is_process())
		attack_report(ATTACK_NA, "no helper");
	/* A large write first: the ring's bulk area exists from now on. */
	memset(src, 0x11, sizeof(src));
	rare_write_memcpy(pbig, src, sizeof(src));
	sock = helper_socket();
	if (sock < 0)
		attack_report(ATTACK_ERROR, "no socket to the helper");
	attack_begin();
	pid = (pid_t)syscall(SYS_fork);
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork failed");
	if (!pid)
		raw_child(sock);
	waitpid(pid, &status, 0);
	/* The parent goes on: a control request, a large write, a small. */
	pool = rare_pool_create(1 << 16);
	obj = pool ? rare_alloc(pool, 64) : NULL;
	if (!obj)
		attack_report(ATTACK_ERROR, "pool after the child failed");
	memset(src, 0x22, sizeof(src));
	rare_write_memcpy(pbig, src, sizeof(src));
	rare_write(pvictim[0], 42);
	rare_write(*obj, 43);
	if (attack_load64(&pvictim[1]) == ATTACK_MARKER)
		attack_report(ATTACK_OPEN, "the child's request was applied");
	if (pvictim[0] != 42 || *obj != 43 || pbig[0] != 0x22 ||
	    pbig[sizeof(pbig) - 1] != 0x22)
		attack_report(ATTACK_OPEN,
			      "the parent's writes went astray (%#lx %#lx %#x)",
			      (unsigned long)pvictim[0], (unsigned long)*obj,
			      pbig[0]);
	attack_report(ATTACK_BLOCKED,
		      "the child's requests refused, the parent's applied");
}
