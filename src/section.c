// SPDX-License-Identifier: MIT
/*
 * section.c - the __wr_rare section of the program and its shared libraries.
 *
 * Each object that includes rarewrite.h registers its own section from a
 * constructor (rare_write_register_section_ in core.c). What this file adds
 * is the check that a shared library's protected variable has not moved out
 * of its section.
 *
 * When a program refers to a library's variable directly (`extern long
 * x;` in code compiled as PIE or non-PIC), the linker gives the program a
 * copy of it (an R_*_COPY relocation): at start-up the dynamic linker copies
 * the variable into the program's ordinary writable .bss and binds every
 * reference, the library's own code included, to that copy. The library's
 * __wr_rare section then protects a dead original while the live variable
 * stays writable. Nothing would notice, so rare_write_init() (and a section
 * that registers after it) refuses: it reads the program's copy relocations
 * from its dynamic section, finds where the library defined each copied
 * symbol, and aborts if that is inside a registered section.
 *
 * Static programs have no copy relocations; the check finds none there.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

#if defined(__x86_64__)
#define RW_R_COPY R_X86_64_COPY
#elif defined(__aarch64__)
#define RW_R_COPY R_AARCH64_COPY
#endif

#ifdef RW_R_COPY

#if __ELF_NATIVE_CLASS == 64
#define RW_R_TYPE(info) ELF64_R_TYPE(info)
#define RW_R_SYM(info) ELF64_R_SYM(info)
#else
#define RW_R_TYPE(info) ELF32_R_TYPE(info)
#define RW_R_SYM(info) ELF32_R_SYM(info)
#endif

/* What one loaded object's dynamic section says about its symbols. */
struct dyn_info {
	uintptr_t base; /* dlpi_addr */
	const ElfW(Sym) * symtab;
	const char *strtab;
	const uint32_t *gnu_hash;
	const ElfW(Word) * sysv_hash;
	const ElfW(Rela) * rela;
	size_t relasz, relaent;
};

/*
 * glibc's loader rewrites most d_ptr values of a writable dynamic section to
 * run-time addresses, other loaders (and the vDSO) leave them as offsets
 * from the load address; an address below the load address is an offset.
 */
static const void *dyn_ptr(uintptr_t base, ElfW(Addr) p)
{
	return (const void *)(p < base ? base + p : p);
}

static bool read_dynamic(const struct dl_phdr_info *info, struct dyn_info *d)
{
	const ElfW(Dyn) *dyn = NULL;

	memset(d, 0, sizeof(*d));
	d->base = info->dlpi_addr;
	d->relaent = sizeof(ElfW(Rela));
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const void *)(info->dlpi_addr +
					     info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return false; /* a static program */
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB:
			d->symtab = dyn_ptr(d->base, dyn->d_un.d_ptr);
			break;
		case DT_STRTAB:
			d->strtab = dyn_ptr(d->base, dyn->d_un.d_ptr);
			break;
		case DT_GNU_HASH:
			d->gnu_hash = dyn_ptr(d->base, dyn->d_un.d_ptr);
			break;
		case DT_HASH:
			d->sysv_hash = dyn_ptr(d->base, dyn->d_un.d_ptr);
			break;
		case DT_RELA:
			d->rela = dyn_ptr(d->base, dyn->d_un.d_ptr);
			break;
		case DT_RELASZ:
			d->relasz = dyn->d_un.d_val;
			break;
		case DT_RELAENT:
			d->relaent = dyn->d_un.d_val;
			break;
		}
	}
	return d->symtab && d->strtab;
}

static bool defines(const struct dyn_info *d, ElfW(Word) i, const char *name)
{
	const ElfW(Sym) *s = &d->symtab[i];

	return s->st_shndx != SHN_UNDEF && s->st_value &&
	       !strcmp(d->strtab + s->st_name, name);
}

/* Index of the first definition of @name in @d's dynamic symbols, or 0. */
static ElfW(Word) lookup_gnu(const struct dyn_info *d, const char *name)
{
	const uint32_t *h = d->gnu_hash;
	uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2],
		 shift = h[3], hash = 5381;
	const ElfW(Addr) *bloom = (const void *)&h[4];
	const uint32_t *buckets = (const void *)&bloom[bloom_size];
	const uint32_t *chain = &buckets[nbuckets];
	const unsigned bits = sizeof(ElfW(Addr)) * 8;
	ElfW(Addr) word, mask;

	for (const unsigned char *c = (const void *)name; *c; c++)
		hash = hash * 33 + *c;
	if (!nbuckets || !bloom_size)
		return 0;
	word = bloom[(hash / bits) % bloom_size];
	mask = (ElfW(Addr))1 << (hash % bits) |
	       (ElfW(Addr))1 << ((hash >> shift) % bits);
	if ((word & mask) != mask)
		return 0;
	for (uint32_t i = buckets[hash % nbuckets]; i >= symoffset && i; i++) {
		uint32_t h2 = chain[i - symoffset];

		if ((hash | 1) == (h2 | 1) && defines(d, i, name))
			return i;
		if (h2 & 1)
			break;
	}
	return 0;
}

static ElfW(Word) lookup_sysv(const struct dyn_info *d, const char *name)
{
	const ElfW(Word) *h = d->sysv_hash;
	ElfW(Word) nbucket = h[0], nchain = h[1], hash = 0;
	const ElfW(Word) *bucket = &h[2], *chain = &bucket[nbucket];

	for (const unsigned char *c = (const void *)name; *c; c++) {
		hash = (hash << 4) + *c;
		hash ^= (hash >> 24) & 0xf0;
	}
	hash &= 0x0fffffff;
	if (!nbucket)
		return 0;
	/* bounded: a corrupt chain cannot loop forever */
	for (ElfW(Word) i = bucket[hash % nbucket], n = 0;
	     i && i < nchain && n < nchain; i = chain[i], n++)
		if (defines(d, i, name))
			return i;
	return 0;
}

/* Finding the object that supplied a copied symbol, in load order: the
 * dynamic linker's search order for the program's relocations. */
struct copy_source {
	const char *name;
	unsigned index;	    /* of the object in the dl_iterate_phdr walk */
	uintptr_t addr;	    /* where it defined @name, or 0 */
	const char *object; /* and its file name */
};

static int find_source(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct copy_source *s = arg;
	struct dyn_info d;
	ElfW(Word) i = 0;

	(void)size;
	if (s->index++ == 0)
		return 0; /* the program itself */
	if (!read_dynamic(info, &d))
		return 0;
	if (d.gnu_hash)
		i = lookup_gnu(&d, s->name);
	else if (d.sysv_hash)
		i = lookup_sysv(&d, s->name);
	if (!i)
		return 0;
	s->addr = d.base + d.symtab[i].st_value;
	s->object = info->dlpi_name;
	return 1;
}

static int main_program(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct dyn_info *d = arg;

	(void)size;
	if (!read_dynamic(info, d))
		d->rela = NULL;
	return 1; /* the first object is the program */
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path && *path ? path : "a shared library";
}

void rw_section_check_copies(void)
{
	struct dyn_info prog;
	struct rw_region *r;

	if (!dl_iterate_phdr(main_program, &prog) || !prog.rela ||
	    prog.relaent < sizeof(ElfW(Rela)))
		return;
	for (size_t off = 0; off + prog.relaent <= prog.relasz;
	     off += prog.relaent) {
		const ElfW(Rela) *rel =
			(const void *)((const char *)prog.rela + off);
		struct copy_source src = {0};

		if (RW_R_TYPE(rel->r_info) != RW_R_COPY)
			continue;
		src.name = prog.strtab +
			   prog.symtab[RW_R_SYM(rel->r_info)].st_name;
		dl_iterate_phdr(find_source, &src);
		r = src.addr ? rw_region_lookup((void *)src.addr) : NULL;
		if (!r || r->kind != RW_REGION_SECTION)
			continue;
		rw_die("rare_write_init", (void *)(prog.base + rel->r_offset),
		       "%.28s (__wr_rare, %.16s) was copy-relocated into the "
		       "program's writable .bss; access it via a function, "
		       "make "
		       "it visibility(\"protected\") or build with -fPIC "
		       "-Wl,-z,nocopyreloc",
		       src.name, base_name(src.object));
	}
}

#else /* no copy relocations known for this architecture */

void rw_section_check_copies(void)
{
}

#endif
