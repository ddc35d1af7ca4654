/* SPDX-License-Identifier: MIT */
/*
 * process_ring.h - what the program and the process backend's helper share:
 * the request ring (shared memory, futex wake-ups) and the control messages
 * (a SOCK_SEQPACKET socketpair, memfds passed with SCM_RIGHTS).
 *
 * Everything in the ring is writable by the program, so the helper trusts
 * none of it: it copies a request's descriptors into its own memory before
 * validating them, checks every destination against its own table of
 * registered regions and every data offset against the size it knows the
 * body to have, and only then applies the request, all of it or nothing.
 *
 * Ring: one page of header, then PRW_NR_SLOTS slots of one page each.
 *
 *	slot.state  FREE -> CLAIMED -> READY   by a program thread
 *	            READY -> DONE | REFUSED    by the helper
 *	            DONE | REFUSED -> FREE     by the program thread
 *
 * A request body (inline in the slot, or in the bulk area when it does not
 * fit) is a struct prw_req_head, nseg struct prw_seg, then the data.
 * The test of the refusal path (tests/test_process.c) forges requests with
 * this header, as an attacker who knows the library would.
 */
#ifndef RAREWRITE_PROCESS_RING_H
#define RAREWRITE_PROCESS_RING_H

#include <stdint.h>
#include <time.h>

#define PRW_RING_NAME "rarewrite-ring"
#define PRW_PAGE 4096u
#define PRW_NR_SLOTS 32u
#define PRW_RING_SIZE ((PRW_NR_SLOTS + 1) * PRW_PAGE)
#define PRW_MAX_SEGS 256u /* segments in one request */
#define PRW_MAX_REGIONS 256u

enum prw_state {
	PRW_FREE = 0,
	PRW_CLAIMED,
	PRW_READY,
	PRW_DONE,
	PRW_REFUSED,
};

/* slot.flags */
#define PRW_BODY_BULK 0x1u /* the body is in the bulk area, not inline */

/* prw_seg.data for a fill: no data, store seg.fill len times */
#define PRW_DATA_FILL UINT64_MAX

struct prw_seg {
	uint64_t dst;  /* program address, inside a registered region */
	uint64_t len;  /* bytes */
	uint64_t data; /* offset of the bytes in the body, or PRW_DATA_FILL */
	int32_t fill;
	uint32_t pad;
};

struct prw_req_head {
	uint32_t nseg;
	uint32_t pad;
};

struct prw_slot {
	uint32_t state;	  /* enum prw_state; futex word */
	uint32_t waiting; /* a program thread sleeps on state */
	uint32_t flags;	  /* PRW_BODY_* */
	uint32_t pad;
	unsigned char body[PRW_PAGE - 16];
};

struct prw_ring {
	uint32_t doorbell; /* bumped after every READY; futex word */
	/* The helper is not polling the doorbell (asleep, or about to
	 * yield its CPU): a new request must wake it, and its caller should
	 * not spin. */
	uint32_t helper_sleeping;
	uint32_t ctl_pending; /* a control message waits on the socket */
	/* Hints only, never trusted: the CPU each side last ran on. Spinning
	 * for the other side only pays when it runs on another CPU; on the
	 * same one it only delays it. */
	uint32_t helper_cpu;
	uint32_t caller_cpu;
	uint32_t pad[11];
	unsigned char pad_page[PRW_PAGE - 64];
	struct prw_slot slots[PRW_NR_SLOTS];
};

/* Control messages, program -> helper; the reply is one int32 (0 or
 * -errno). */
enum prw_op {
	PRW_OP_ADD = 1, /* + memfd: register a region */
	PRW_OP_DEL,	/* forget a region */
	PRW_OP_BULK,	/* + memfd: the new bulk area */
};

struct prw_ctl {
	uint32_t op;
	uint32_t pad;
	uint64_t id;	/* region id (ADD, DEL) */
	uint64_t start; /* program address of the region (ADD) */
	uint64_t len;	/* bytes (ADD, BULK) */
};

_Static_assert(sizeof(struct prw_slot) == PRW_PAGE, "slot is one page");
_Static_assert(sizeof(struct prw_ring) == PRW_RING_SIZE, "ring layout");

/* Both sides spin briefly and time their spins the same way. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* RAREWRITE_PROCESS_RING_H */
