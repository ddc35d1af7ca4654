// SPDX-License-Identifier: MIT
/*
 * kernel/bench/cost-plugin.c: a QEMU TCG plugin (QEMU 7.2, plugin API
 * version 1) for kernel/cost. It counts, per call of a few kernel
 * functions, the instructions whose number does not depend on the
 * machine: writes of the page-table base (x86 CR3, ARM TTBR0/1, arm64
 * TTBR0/1_EL1), TLB maintenance (x86 invlpg/invpcid, ARM and arm64 TLB
 * operations), MSR writes (x86 wrmsr), control-register writes (x86
 * CR0/CR4, ARM DACR). A call runs from the function's first instruction
 * to the return that balances it (calls and returns are counted on the
 * vCPU; a tail call returns through its callee), interrupts included. A
 * call that sleeps ends early, at the other task's return: kernel/cost
 * reports each function's most frequent count and how many calls had it.
 *
 * Arguments: arch=x86_64|arm|aarch64, out=FILE, and fn=NAME@HEXADDR for
 * every function (at most 8). Output: one line per completed call,
 * "NAME cr3=N tlb=N wrmsr=N cr=N".
 *
 * The plugin API's declarations are written out below (the QEMU 7.2
 * subset this file uses): Debian ships no qemu-plugin.h.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))
typedef uint64_t qemu_plugin_id_t;
QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu, void *udata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
					       struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags,
					    void *udata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
						 size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

enum kind { K_CALL, K_RET, K_CR3, K_TLB, K_WRMSR, K_CR, K_ENTRY, K_NONE };
enum { MAXFN = 8, MAXCPU = 16 };

static enum { A_X86, A_ARM, A_ARM64 } arch;
static struct fn { char name[64]; uint64_t addr; } fns[MAXFN];
static int nfns;
static FILE *out;

struct vcpu {
	int active;	/* fn index + 1, or 0 */
	long depth;
	unsigned long cr3, tlb, wrmsr, cr;
};
static struct vcpu cpus[MAXCPU];

/* One line per completed call, written at once (QEMU may exit without
 * running atexit callbacks). */
static int out_lock;

static void record(struct vcpu *c)
{
	while (__atomic_exchange_n(&out_lock, 1, __ATOMIC_ACQUIRE))
		;
	fprintf(out, "%s cr3=%lu tlb=%lu wrmsr=%lu cr=%lu\n",
		fns[c->active - 1].name, c->cr3, c->tlb, c->wrmsr, c->cr);
	fflush(out);
	__atomic_store_n(&out_lock, 0, __ATOMIC_RELEASE);
}

/* udata: kind in the low byte, fn index above it (for K_ENTRY). */
static void exec_cb(unsigned int vcpu, void *udata)
{
	uintptr_t u = (uintptr_t)udata;
	struct vcpu *c;

	if (vcpu >= MAXCPU)
		return;
	c = &cpus[vcpu];
	switch (u & 0xff) {
	case K_ENTRY:
		/* A call that never returned (an Oops) is dropped here. */
		*c = (struct vcpu){ .active = (int)(u >> 8) + 1 };
		return;
	}
	if (!c->active)
		return;
	switch (u & 0xff) {
	case K_CALL:
		c->depth++;
		break;
	case K_RET:
		if (--c->depth < 0) {
			record(c);
			c->active = 0;
		}
		break;
	case K_CR3:
		c->cr3++;
		break;
	case K_TLB:
		c->tlb++;
		break;
	case K_WRMSR:
		c->wrmsr++;
		break;
	case K_CR:
		c->cr++;
		break;
	}
}

/* x86-64: skip legacy and REX prefixes; report the opcode's kind. */
static enum kind kind_x86(const uint8_t *p, size_t n)
{
	size_t i = 0;
	bool p66 = false;

	while (i < n && (p[i] == 0x66 || p[i] == 0xf2 || p[i] == 0xf3 ||
			 p[i] == 0x2e || p[i] == 0x3e || p[i] == 0x26 ||
			 p[i] == 0x64 || p[i] == 0x65 || p[i] == 0x36 ||
			 (p[i] & 0xf0) == 0x40)) {
		if (p[i] == 0x66)
			p66 = true;
		i++;
	}
	if (i >= n)
		return K_NONE;
	switch (p[i]) {
	case 0xe8:
		return K_CALL;
	case 0xc3:
	case 0xc2:
		return K_RET;
	case 0xff:
		if (i + 1 < n && ((p[i + 1] >> 3) & 7) == 2)
			return K_CALL;
		return K_NONE;
	case 0x0f:
		break;
	default:
		return K_NONE;
	}
	if (++i >= n)
		return K_NONE;
	switch (p[i]) {
	case 0x30:
		return K_WRMSR;
	case 0x22: /* mov %reg,%crN */
		if (i + 1 >= n)
			return K_NONE;
		switch ((p[i + 1] >> 3) & 7) {
		case 3:
			return K_CR3;
		case 0:
		case 4:
			return K_CR;
		}
		return K_NONE;
	case 0x01: /* invlpg m: 0f 01 /7, mod != 3 */
		if (i + 1 < n && ((p[i + 1] >> 3) & 7) == 7 && (p[i + 1] >> 6) != 3)
			return K_TLB;
		return K_NONE;
	case 0x38: /* invpcid: 66 0f 38 82 */
		if (p66 && i + 1 < n && p[i + 1] == 0x82)
			return K_TLB;
		return K_NONE;
	}
	return K_NONE;
}

/* 32-bit ARM (ARM state; the lane's kernel is not Thumb-2). */
static enum kind kind_arm(uint32_t w)
{
	if ((w & 0xf0000000) == 0xf0000000)	/* unconditional space */
		return (w & 0xfe000000) == 0xfa000000 ? K_CALL : K_NONE; /* blx imm */
	if ((w & 0x0f000000) == 0x0b000000)	/* bl */
		return K_CALL;
	if ((w & 0x0ffffff0) == 0x012fff30)	/* blx reg */
		return K_CALL;
	if (w == 0xe12fff1e)			/* bx lr */
		return K_RET;
	/* ldm ..., {..., pc}; not with the S bit (an exception return) */
	if ((w & 0x0e508000) == 0x08108000)
		return K_RET;
	if ((w & 0x0fffffff) == 0x049df004)	/* ldr pc, [sp], #4 */
		return K_RET;
	if ((w & 0x0fffffff) == 0x01a0f00e)	/* mov pc, lr */
		return K_RET;
	/* mcr p15, 0, Rt, cN, ... (coprocessor 15, a write) */
	if ((w & 0x0f100f10) == 0x0e000f10) {
		switch ((w >> 16) & 0xf) {
		case 2:
			return K_CR3;	/* TTBR0/TTBR1/TTBCR */
		case 3:
			return K_CR;	/* DACR */
		case 8:
			return K_TLB;	/* TLB maintenance */
		}
	}
	return K_NONE;
}

static enum kind kind_arm64(uint32_t w)
{
	if ((w & 0xfc000000) == 0x94000000)	/* bl */
		return K_CALL;
	if ((w & 0xfffffc1f) == 0xd63f0000)	/* blr */
		return K_CALL;
	if ((w & 0xfffffc1f) == 0xd65f0000)	/* ret */
		return K_RET;
	if ((w & 0xfff8f000) == 0xd5088000)	/* tlbi */
		return K_TLB;
	if ((w & 0xffffffc0) == 0xd5182000)	/* msr ttbr0_el1/ttbr1_el1 */
		return K_CR3;
	return K_NONE;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);
	(void)id;

	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const uint8_t *p = qemu_plugin_insn_data(insn);
		size_t sz = qemu_plugin_insn_size(insn);
		uint64_t va = qemu_plugin_insn_vaddr(insn);
		enum kind k;
		uint32_t w = 0;
		int f;

		for (f = 0; f < nfns; f++)
			if (fns[f].addr == va)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, exec_cb,
					QEMU_PLUGIN_CB_NO_REGS,
					(void *)(uintptr_t)(K_ENTRY | f << 8));
		if (arch != A_X86 && sz == 4)
			memcpy(&w, p, 4);
		if (arch == A_X86)
			k = kind_x86(p, sz);
		else if (arch == A_ARM)
			k = sz == 4 ? kind_arm(w) : K_NONE;
		else
			k = sz == 4 ? kind_arm64(w) : K_NONE;
		if (k != K_NONE)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, exec_cb,
				QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)k);
	}
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;
	(void)info;

	for (i = 0; i < argc; i++) {
		char *a = argv[i], *at;

		if (!strncmp(a, "arch=", 5)) {
			if (!strcmp(a + 5, "x86_64"))
				arch = A_X86;
			else if (!strcmp(a + 5, "arm"))
				arch = A_ARM;
			else if (!strcmp(a + 5, "aarch64"))
				arch = A_ARM64;
			else
				return -1;
		} else if (!strncmp(a, "out=", 4)) {
			out = fopen(a + 4, "w");
			if (!out)
				return -1;
		} else if (!strncmp(a, "fn=", 3) && nfns < MAXFN &&
			   (at = strchr(a, '@'))) {
			snprintf(fns[nfns].name, sizeof(fns[nfns].name), "%.*s",
				 (int)(at - a - 3), a + 3);
			fns[nfns].addr = strtoull(at + 1, NULL, 16);
			nfns++;
		} else {
			return -1;
		}
	}
	if (!out || !nfns)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	return 0;
}
