// SPDX-License-Identifier: MIT
/*
 * fault.c - say what happened when a store hits protected memory.
 *
 * A write site that a port forgot to convert is a plain store to sealed
 * memory: on every backend it faults with SIGSEGV. Without a word from the
 * library that is a bare "Segmentation fault", often on a rarely taken path
 * in production. The library's SIGSEGV handler (signal.c) asks this file
 * first; for a store into a protected region it prints one line:
 *
 *   rarewrite: write to protected memory at 0x55d0c0a03008 (handlers+0x8
 *   in demo) by pc main+0x2c in demo: write it with rare_write() or inside
 *   a window
 *
 * and the process then dies by SIGSEGV as it would have anyway. Everything
 * here runs in the signal handler: no malloc, no stdio, one write(2).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"
#include "pool_layout.h"

/* The faulting pc, and whether the access was a write (false when the
 * architecture does not say: then every fault in protected memory counts,
 * which is right for every backend, as all of them map it readable). */
static uintptr_t fault_pc(const ucontext_t *uc, bool *is_write)
{
#if defined(__x86_64__)
	/* The page-fault error code: bit 1 is set for a write. */
	*is_write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__i386__)
	*is_write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
	return (uintptr_t)uc->uc_mcontext.gregs[REG_EIP];
#elif defined(__aarch64__)
	*is_write = true;
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	*is_write = true;
	return 0;
#endif
}

/* "handlers+0x8 in demo", else the region: "pool 0x7f..000+0x1a0",
 * "pool \"sessions\" 0x7f..000+0x1a0" (a named pool) or
 * "section of demo+0x8". */
static void describe_object(struct rw_buf *b, const struct rw_region *r,
			    uintptr_t addr)
{
	char file[128] = ""; /* rw_symbolize() runs for sections only */

	if (r->kind == RW_REGION_SECTION &&
	    rw_symbolize(b, addr, file, sizeof(file))) {
		rw_buf_puts(b, " in ");
		rw_buf_puts(b, file);
		return;
	}
	if (r->kind == RW_REGION_POOL) {
		char name[RARE_POOL_NAME_MAX];

		rw_buf_puts(b, addr < r->user_start ? "bookkeeping of pool "
						    : "pool ");
		rw_pool_name(r, name);
		if (name[0]) {
			rw_buf_puts(b, "\"");
			rw_buf_puts(b, name);
			rw_buf_puts(b, "\" ");
		}
		rw_buf_hex(b, r->start);
	} else {
		rw_buf_puts(b, "section of ");
		rw_buf_puts(b, file[0] ? file : "an unknown object");
	}
	rw_buf_puts(b, "+");
	rw_buf_hex(b, addr - r->start);
}

static void describe_pc(struct rw_buf *b, uintptr_t pc)
{
	char file[128];
	size_t mark = b->len;

	if (rw_symbolize_pc(b, pc, file, sizeof(file))) {
		rw_buf_puts(b, " in ");
		rw_buf_puts(b, file);
		return;
	}
	b->len = mark;
	rw_buf_hex(b, pc);
	if (file[0]) {
		rw_buf_puts(b, " in ");
		rw_buf_puts(b, file);
	}
}

bool rw_fault_report(void *siginfo, void *ucontext)
{
	const siginfo_t *si = siginfo;
	uintptr_t addr = (uintptr_t)si->si_addr, pc;
	const struct rw_region *r;
	struct rw_buf b = {0};
	bool is_write;

	if (si->si_signo != SIGSEGV || si->si_code <= 0)
		return false; /* sent by kill() or sigqueue(), not a fault */
	r = rw_region_lookup(si->si_addr);
	if (!r || !r->protected_)
		return false;
	pc = fault_pc(ucontext, &is_write);
	if (!is_write)
		return false;
	rw_buf_puts(&b, "rarewrite: write to protected memory at ");
	rw_buf_hex(&b, addr);
	rw_buf_puts(&b, " (");
	describe_object(&b, r, addr);
	rw_buf_puts(&b, ") by pc ");
	describe_pc(&b, pc);
	/* The advice always fits: the line is cut before it if need be. */
	{
		static const char fix[] =
			": write it with rare_write() or inside a window\n";

		if (b.len > sizeof(b.s) - sizeof(fix))
			b.len = sizeof(b.s) - sizeof(fix);
		memcpy(b.s + b.len, fix, sizeof(fix));
		b.len += sizeof(fix) - 1;
	}
	/* One write(2): the line arrives whole from a dying process. */
	if (write(STDERR_FILENO, b.s, b.len) < 0) {
		/* nothing better to do */
	}
	return true;
}
