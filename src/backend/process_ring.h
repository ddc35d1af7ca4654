/* SPDX-License-Identifier: MIT */
/*
 * process_ring.h - the messages between the program and the process
 * backend's helper, on one SOCK_SEQPACKET socketpair.
 *
 * Every request, a write or a change of the helper's region table, is one
 * sendmsg(): its target, length and data travel in the system call, which
 * the kernel copies into the helper's socket buffer at once. Nothing the
 * helper acts on lives in memory the program (or a memory-corruption
 * primitive in it) can rewrite afterwards: there is no shared request ring
 * and no shared bulk area. The helper still trusts none of a message: it
 * checks every destination against its own table of registered regions
 * (helper memory, which the program cannot reach) and applies a write whole
 * or not at all. Until the system call the request is in the program's
 * memory, where a store can rewrite it: the helper echoes what it read in
 * its answer (struct prw_answer), and the program compares that with what
 * it meant to send and dies on a difference.
 *
 * The helper's end has SO_PASSCRED: the kernel attaches the sender's pid to
 * every message, and the helper serves only the program's (a child made by
 * a raw fork, which inherited the socket, gets no answer and changes
 * nothing).
 *
 * The answer goes the other way without a socket: the helper writes it into
 * its answer page (struct prw_answer) and wakes the program's futex there.
 * The page is a memfd the helper created, mapped writable and sealed
 * F_SEAL_FUTURE_WRITE before handing it over: the program can only map it
 * read-only, so no store of the program's forges an answer. One request of
 * the program is in flight at a time; the helper counts the answers in its
 * own memory, so the next change of the count is the answer to it.
 *
 * Each side tells the other the CPU it runs on (a hint, never trusted: it
 * only decides whether to poll a little before sleeping, which pays only
 * while the other side runs on another CPU).
 *
 * A write message: struct prw_msg (op PRW_OP_WRITE, nseg), nseg struct
 * prw_seg, then the data of every segment that has data, in segment order.
 */
#ifndef RAREWRITE_PROCESS_RING_H
#define RAREWRITE_PROCESS_RING_H

#include <stdint.h>
#include <sys/rseq.h>

#define PRW_PAGE 4096u
#define PRW_MAX_SEGS 256u /* segments in one request */
#define PRW_MAX_REGIONS 256u
/* Data bytes in one write message. Larger writes are split into several
 * requests, applied in order; each stays under the socket's send buffer
 * (net.core.wmem_max, 208 KiB by default). */
#define PRW_MAX_DATA (128u << 10)

enum prw_op {
	PRW_OP_WRITE = 1, /* + segments and data */
	PRW_OP_ADD,	  /* + memfd: register a region */
	PRW_OP_DEL,	  /* forget a region */
	PRW_OP_WIPE,	  /* zero the sealed pool being destroyed (below) */
	PRW_OP_HEAD,	  /* + data: the head of the pool being created */
};

/*
 * PRW_OP_WIPE names no range: a range in the message sits in the program's
 * memory until sendmsg(2) copies it, where a store can aim it at any other
 * region the helper serves (attack 27p). The helper takes the range from
 * the core's table instead, whose memfd mapping it shares (cloned from the
 * program after the table's first seal, never dropped: not anonymous), and
 * which only the library writes, with pwrite(2): the record of the pool
 * whose rare_pool_destroy() is in progress (rw_region_dying()), a sealed
 * pool of the process backend, and in its own table the region registered
 * at that record's start, length and id. Anything else is refused.
 *
 * PRW_OP_HEAD names no destination either, for the same reason (27n: the
 * new pool's head rewritten over the section): its data go to the start of
 * the pool whose rare_pool_create() the table records as published with
 * its bookkeeping still open (rw_region_opening()), no more than the
 * request's metadata length. The core reads the head back after.
 */

/* prw_seg.flags */
#define PRW_SEG_FILL 0x1u /* no data: store seg.fill len times */

struct prw_seg {
	uint64_t dst; /* program address, inside a registered region */
	uint64_t len; /* bytes */
	uint32_t flags;
	int32_t fill;
};

struct prw_msg {
	uint32_t op;
	uint32_t nseg;	/* WRITE */
	uint64_t seq;	/* the program's request number (echoed) */
	uint64_t id;	/* region id (ADD, DEL) */
	uint64_t start; /* program address of the region (ADD); of the call */
	uint64_t len;	/* bytes (ADD); of the call (a WRITE of a call) */
	uint64_t sp;	/* the sending thread's stack pointer (echoed) */
	uint32_t cpu;	/* hint: the sender's CPU */
	uint32_t pad;
};

/*
 * A WRITE with @len not 0 is a piece of a call: one call of the program
 * (a rare_write_memcpy(), a rare_write_memset()) writes the @len bytes at
 * @start, in one request or, larger than one message, in several in
 * order. The helper keeps the call in its own memory, out of the
 * program's reach: a first piece (no call open) opens it, and must be one
 * segment at @start no longer than @len, inside one registered region;
 * while it is open the helper takes nothing but its next piece, one
 * segment that starts where the last one ended, names the same call and
 * stays inside it (any other request is refused, -EBUSY or -EINVAL: only
 * two requests in flight at once, a forged req_lock, can send one). A
 * piece that does not end the call ends on an 8-byte boundary (no aligned
 * word torn over two requests, 14b). The answer echoes the call and how
 * much of it is done (struct prw_answer): the program compares the first
 * piece's echo with the range it checked, held in registers, and takes
 * every next piece's place from the echo, never from its own memory,
 * where the previous wait left it for a store to move (the review of 15a:
 * the rest of a 300 KiB copy went over another pool's head).
 *
 * @sp names the thread: a caller takes an answer for its own only when
 * the echo names its stack pointer, so two calls that a forged req_lock
 * let in at once, with the same seq and the same write, cannot take each
 * other's answer (the second would return before its own request was
 * applied).
 */

/*
 * helper -> program: the answer to the program's latest request, in the
 * answer page. @count is the futex word: the helper stores @err and @cpu,
 * then the count (release), then wakes bit PRW_ANSWER_BIT(count) (a late
 * wake for an earlier answer wakes no one waiting for a later one).
 */
struct prw_answer {
	uint32_t count; /* the program's requests answered so far */
	int32_t err;	/* the latest one's: 0 or -errno */
	uint32_t cpu;	/* hint: the helper's CPU */
	int32_t pid;	/* the helper's, set once (for tests and tools) */
	/* An ADD's: the device and inode of the memfd the helper mapped, for
	 * the program to compare with the one it meant to send; a WIPE's: of
	 * the one it zeroed (0 else). */
	uint64_t dev;
	uint64_t ino;
	/*
	 * The echo: what the helper read and did for the request it answers,
	 * for the program to compare with what it meant to send (the values
	 * it holds in registers). A request sits in the program's memory
	 * until sendmsg(2) copies it, where a store can rewrite it or point
	 * the iovec at another (attacks 15a, 15b): the helper would apply
	 * that one, and the program now dies instead of returning.
	 */
	uint64_t seq;	 /* the request's seq (any op) */
	uint32_t op;	 /* its op */
	uint32_t nseg;	 /* a WRITE's segments (0 else) */
	uint64_t dst;	 /* a WRITE's first segment: destination, */
	uint64_t len;	 /* length, */
	uint64_t data;	 /* first min(len, 8) bytes (prw_unit()) */
	uint64_t total;	 /* a WRITE's data bytes */
	uint64_t digest; /* prw_digest() of a WRITE's segments */
	uint64_t sp;	 /* the request's stack pointer (any op) */
	/* A piece of a call's (0 else): the call's start and length, as the
	 * helper keeps them, and the bytes of it done so far. */
	uint64_t call_dst;
	uint64_t call_len;
	uint64_t call_done;
};
#define PRW_ANSWER_BIT(count) (1u << ((count)&31u))

/*
 * The CPU this thread runs on, from the kernel's rseq area (glibc registers
 * it; a clone inherits the registration), or -1: inline, no call and no
 * system call, for the hint each side gives the other. Not the vDSO's
 * LSL/RDPID: valgrind, which make stress runs us under, cannot execute
 * them; it refuses rseq, so __rseq_size is 0 there.
 */
static inline __attribute__((always_inline)) int32_t prw_rseq_cpu(void)
{
	const struct rseq *rs;

	if (!__rseq_size)
		return -1;
	rs = (const void *)((char *)__builtin_thread_pointer() + __rseq_offset);
	return (int32_t)__atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED);
}

/* The first min(@len, 8) bytes at @p as a number: the 1, 2, 4 or 8-byte
 * unit a single write stores (a native load, as rw_load_unit()), else
 * the bytes in memory order, zero above. Both sides compute it alike. */
static inline uint64_t prw_unit(const void *p, uint64_t len)
{
	const unsigned char *b = p;
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t v = 0;

	switch (len) {
	case 1:
		__builtin_memcpy(&u8, p, 1);
		return u8;
	case 2:
		__builtin_memcpy(&u16, p, 2);
		return u16;
	case 4:
		__builtin_memcpy(&u32, p, 4);
		return u32;
	case 8:
		__builtin_memcpy(&v, p, 8);
		return v;
	}
	for (unsigned i = 0; i < len && i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

/* One step of the segment digest (not cryptographic: it catches a
 * request rewritten at random, not one crafted to collide). */
static inline uint64_t prw_mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

/* The digest of @n segments: destination, length, flags and fill of each,
 * in order (their data are not in it). */
static inline uint64_t prw_digest(const struct prw_seg *segs, unsigned n)
{
	uint64_t h = n;

	for (unsigned i = 0; i < n; i++) {
		h = prw_mix(h, segs[i].dst);
		h = prw_mix(h, segs[i].len);
		h = prw_mix(h, segs[i].flags | (uint64_t)(uint32_t)segs[i].fill
						       << 32);
	}
	return h;
}

/* keeper -> program, on the socket (below). */
struct prw_reply {
	uint64_t seq;
	int32_t pid;
	int32_t err;
	uint32_t cpu;
	uint32_t pad;
};

/*
 * keeper -> program, once, when the helper has ended: a struct prw_reply
 * with seq PRW_SEQ_FATE (no request has it), pid the helper's, err its
 * CLD_* code (CLD_KILLED: killed by signal cpu; CLD_EXITED: exited with
 * status cpu). Only the helper and its keeper can send on their end.
 */
#define PRW_SEQ_FATE UINT64_MAX

/* helper -> program, twice at its start: first with its answer page's
 * memfd attached (SCM_RIGHTS) and err PRW_READY_PAGE, before it confines
 * itself; then ready: 0 or -errno from its start. Both carry its pid. */
#define PRW_READY_PAGE 1
struct prw_ready {
	int32_t err;
	int32_t pid;
};

#define PRW_MSG_MAX                                                            \
	(sizeof(struct prw_msg) + PRW_MAX_SEGS * sizeof(struct prw_seg) +      \
	 PRW_MAX_DATA)

#endif /* RAREWRITE_PROCESS_RING_H */
