// SPDX-License-Identifier: MIT
/*
 * symbolize.c - name an address as "symbol+0xOFF in file", from a signal
 * handler.
 *
 * The fault reporter (fault.c) runs inside a SIGSEGV handler, where malloc,
 * stdio and the dynamic linker's locks are off limits. So the loaded
 * objects are listed beforehand, in a safe context (rw_symbolize_prepare(),
 * at init and whenever a section registers later), and the handler itself
 * uses only system calls: it opens the object's file, maps it read-only and
 * searches its section headers for .symtab (static symbols included, where
 * the file is not stripped) and .dynsym. An object loaded after the last
 * preparation is found in /proc/self/maps.
 *
 * C++ names are demangled as they are printed, by demangle.c (no malloc,
 * no libstdc++), and compiler suffixes made readable ("app::budget", not
 * "_ZN3app6budgetE.lto_priv.0"); a name it does not fully understand is
 * printed as the symbol table has it.
 *
 * The list is needed, not only /proc/self/maps: backends built on a memfd
 * replace the pages of a __wr_rare section, so its addresses no longer map
 * the object's file.
 *
 * The list decides which file a crashing process opens, and how far the
 * handler reads: a store to it could make the report open a path of the
 * attacker's choice (a FIFO hangs the dying process) or read past the
 * array. So it is read-only once built: each preparation builds a new list
 * in fresh pages from dl_iterate_phdr() alone (never from the old list,
 * which may have been written before the first one), makes them read-only
 * and moves them over the old list's pages with one mremap(), so that a
 * handler reads one whole list or the other and no writable copy of it
 * ever stays mapped.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "demangle.h"
#include "internal.h"

#define RW_MAX_OBJECTS 128
#define RW_PATH_MAX 256

struct object {
	uintptr_t bias, lo, hi; /* load bias; [lo, hi) covers its PT_LOADs */
	char path[RW_PATH_MAX];
};

/* Whole pages (the type's alignment pads it), so that the mremap() over it
 * reaches nothing else. */
struct object_list {
	unsigned nr;
	unsigned index; /* of the next object in the walk, while building */
	struct object objects[RW_MAX_OBJECTS];
} __attribute__((aligned(4096)));

static struct object_list symbolize_objects; /* read-only once prepared */
static pthread_mutex_t objects_lock = PTHREAD_MUTEX_INITIALIZER;

static int note_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object_list *l = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	const char *path = info->dlpi_name;
	struct object *o;

	(void)size;
	if (l->index++ == 0)
		path = "/proc/self/exe"; /* the program: its name is "" */
	if (!path || path[0] != '/')
		return 0; /* the vDSO has no file */
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + p->p_vaddr < lo)
			lo = info->dlpi_addr + p->p_vaddr;
		if (info->dlpi_addr + p->p_vaddr + p->p_memsz > hi)
			hi = info->dlpi_addr + p->p_vaddr + p->p_memsz;
	}
	if (lo >= hi)
		return 0;
	for (unsigned i = 0; i < l->nr; i++)
		if (l->objects[i].lo == lo && l->objects[i].hi == hi &&
		    !strcmp(l->objects[i].path, path))
			return 0;
	if (l->nr == RW_MAX_OBJECTS)
		return 1;
	o = &l->objects[l->nr];
	o->bias = info->dlpi_addr;
	o->lo = lo;
	o->hi = hi;
	strncpy(o->path, path, sizeof(o->path) - 1);
	o->path[sizeof(o->path) - 1] = 0;
	l->nr++;
	return 0;
}

void rw_symbolize_prepare(void)
{
	struct object_list *l = &symbolize_objects, *next;
	size_t len = sizeof(*l);

	pthread_mutex_lock(&objects_lock);
	next = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (next != MAP_FAILED) {
		dl_iterate_phdr(note_object, next);
		if (mprotect(next, len, PROT_READ) ||
		    mremap(next, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, l) ==
			    MAP_FAILED) {
			munmap(next, len);
			next = MAP_FAILED;
		}
	}
	/* Without a new list, an empty one: reports name regions only. */
	if (next == MAP_FAILED && !mprotect(l, len, PROT_READ | PROT_WRITE)) {
		memset(l, 0, len);
		mprotect(l, len, PROT_READ);
	}
	pthread_mutex_unlock(&objects_lock);
}

/* --- async-signal-safe from here on ------------------------------------ */

/* A read-only mapping of a whole file. */
struct file_map {
	const unsigned char *p;
	size_t len;
	dev_t dev;
	ino_t ino;
};

static bool mapped_here(dev_t dev, ino_t ino, uintptr_t lo, uintptr_t hi);

/* "/proc/self/fd/N" into @buf (no snprintf in a handler). */
static void fd_path(char buf[32], int fd)
{
	static const char head[] = "/proc/self/fd/";
	char digits[12];
	int n = 0, k = 0;

	do
		digits[n++] = (char)('0' + fd % 10);
	while ((fd /= 10) && n < (int)sizeof(digits));
	memcpy(buf, head, sizeof(head) - 1);
	k = sizeof(head) - 1;
	while (n)
		buf[k++] = digits[--n];
	buf[k] = 0;
}

/*
 * The path comes from the loader's writable list of objects: it may name
 * anything. It is looked up with O_PATH, which opens nothing (a device's
 * open has side effects, a FIFO's blocks, fanotify sees no open), and
 * opened for reading through /proc/self/fd only if it is a regular file
 * that is what the object's address range maps (the same device and inode
 * in /proc/self/maps), so the report can neither hang nor name another
 * file.
 */
static bool map_file(const char *path, uintptr_t lo, uintptr_t hi,
		     struct file_map *f)
{
	struct stat st;
	char again[32];
	int fd = open(path, O_PATH | O_CLOEXEC), rd;
	void *p;

	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)sizeof(ElfW(Ehdr)) ||
	    !mapped_here(st.st_dev, st.st_ino, lo, hi)) {
		close(fd);
		return false;
	}
	fd_path(again, fd);
	rd = open(again, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	close(fd);
	if (rd < 0)
		return false;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, rd, 0);
	close(rd);
	if (p == MAP_FAILED)
		return false;
	f->p = p;
	f->len = (size_t)st.st_size;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	if (memcmp(f->p, ELFMAG, SELFMAG) ||
	    f->p[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)) {
		munmap(p, f->len);
		return false;
	}
	return true;
}

/* [off, off + n * size) inside the file, without overflow. */
static bool in_file(const struct file_map *f, uint64_t off, uint64_t n,
		    uint64_t size)
{
	return off <= f->len && (!size || n <= (f->len - off) / size);
}

/* The load bias of the file whose page at file offset @off is mapped at
 * @at: from the program headers, as the loader placed the PT_LOADs. */
static bool bias_from_phdrs(const struct file_map *f, uintptr_t at,
			    uint64_t off, uintptr_t *bias)
{
	const ElfW(Ehdr) *eh = (const void *)f->p;

	if (eh->e_phentsize != sizeof(ElfW(Phdr)) ||
	    !in_file(f, eh->e_phoff, eh->e_phnum, sizeof(ElfW(Phdr))))
		return false;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const ElfW(Phdr) *p =
			(const void *)(f->p + eh->e_phoff + i * sizeof(*p));
		uint64_t pg = rw_page_size;

		if (p->p_type == PT_LOAD && (p->p_offset & ~(pg - 1)) == off) {
			*bias = at - (uintptr_t)(p->p_vaddr & ~(pg - 1));
			return true;
		}
	}
	return false;
}

/* The best symbol of @f holding the link-time address @v, by name into
 * @name and its offset; false if none holds it. */
static bool find_symbol(const struct file_map *f, uintptr_t v, char *name,
			size_t name_len, uintptr_t *off)
{
	const ElfW(Ehdr) *eh = (const void *)f->p;
	bool found = false;

	if (eh->e_shentsize != sizeof(ElfW(Shdr)) ||
	    !in_file(f, eh->e_shoff, eh->e_shnum, sizeof(ElfW(Shdr))))
		return false;
	const ElfW(Shdr) *sh = (const void *)(f->p + eh->e_shoff);

	/* .symtab first: it has the static symbols; .dynsym otherwise. */
	for (int pass = 0; pass < 2 && !found; pass++) {
		for (unsigned i = 0; i < eh->e_shnum && !found; i++) {
			const ElfW(Shdr) *s = &sh[i], *strs;
			unsigned want = pass ? SHT_DYNSYM : SHT_SYMTAB;

			if (s->sh_type != want || s->sh_link >= eh->e_shnum ||
			    s->sh_entsize != sizeof(ElfW(Sym)) ||
			    !in_file(f, s->sh_offset, 1, s->sh_size))
				continue;
			strs = &sh[s->sh_link];
			if (!in_file(f, strs->sh_offset, 1, strs->sh_size))
				continue;
			for (uint64_t j = 0; j < s->sh_size / sizeof(ElfW(Sym));
			     j++) {
				const ElfW(Sym) *sym =
					(const void *)(f->p + s->sh_offset +
						       j * sizeof(*sym));
				unsigned type = ELF64_ST_TYPE(sym->st_info);
				const char *nm;
				size_t k;

				if ((type != STT_OBJECT && type != STT_FUNC) ||
				    sym->st_shndx == SHN_UNDEF ||
				    v < sym->st_value ||
				    v - sym->st_value >= sym->st_size ||
				    sym->st_name >= strs->sh_size)
					continue;
				nm = (const char *)f->p + strs->sh_offset +
				     sym->st_name;
				for (k = 0;
				     k + 1 < name_len &&
				     sym->st_name + k < strs->sh_size && nm[k];
				     k++)
					name[k] = nm[k];
				name[k] = 0;
				*off = v - sym->st_value;
				found = k > 0;
				break;
			}
		}
	}
	return found;
}

/* One line of /proc/self/maps: "lo-hi perms offset dev inode   path". */
static bool maps_line(const char *line, uintptr_t addr, char *path,
		      size_t path_len, uintptr_t *lo, uint64_t *off)
{
	const char *s = line;
	uintptr_t hi;
	size_t k = 0;

	*lo = rw_parse_hex(&s);
	if (*s++ != '-')
		return false;
	hi = rw_parse_hex(&s);
	if (addr < *lo || addr >= hi)
		return false;
	while (*s && *s != ' ')
		s++; /* perms */
	while (*s == ' ')
		s++;
	*off = rw_parse_hex(&s);
	for (int field = 0; field < 2; field++) { /* dev, inode */
		while (*s == ' ')
			s++;
		while (*s && *s != ' ')
			s++;
	}
	while (*s == ' ')
		s++;
	if (*s != '/')
		return false;
	while (s[k] && s[k] != '\n' && k + 1 < path_len) {
		path[k] = s[k];
		k++;
	}
	path[k] = 0;
	return true;
}

/* Call @fn on each line of /proc/self/maps until it returns true. */
static bool maps_each(bool (*fn)(const char *line, void *arg), void *arg)
{
	char buf[4096], line[RW_PATH_MAX + 128];
	size_t used = 0;
	bool found = false;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	while (!found && (n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n && !found; i++) {
			if (buf[i] != '\n') {
				if (used + 1 < sizeof(line))
					line[used++] = buf[i];
				continue;
			}
			line[used] = 0;
			used = 0;
			found = fn(line, arg);
		}
	}
	close(fd);
	return found;
}

struct maps_query {
	uintptr_t addr, *lo;
	char *path;
	size_t path_len;
	uint64_t *off;
};

static bool query_line(const char *line, void *arg)
{
	struct maps_query *q = arg;

	return maps_line(line, q->addr, q->path, q->path_len, q->lo, q->off);
}

/* The file mapping that holds @addr, from /proc/self/maps. */
static bool maps_lookup(uintptr_t addr, char *path, size_t path_len,
			uintptr_t *lo, uint64_t *off)
{
	struct maps_query q = {addr, lo, path, path_len, off};

	return maps_each(query_line, &q);
}

struct inode_query {
	uintptr_t lo, hi;
	unsigned long major, minor, ino;
};

/* A decimal number of a maps line. */
static unsigned long parse_dec(const char **s)
{
	unsigned long v = 0;

	while (**s >= '0' && **s <= '9')
		v = v * 10 + (unsigned long)(*(*s)++ - '0');
	return v;
}

static void skip_field(const char **s)
{
	while (**s == ' ')
		(*s)++;
	while (**s && **s != ' ')
		(*s)++;
	while (**s == ' ')
		(*s)++;
}

/* "lo-hi perms offset MAJ:MIN inode": the inode asked for, mapped inside
 * [lo, hi)? */
static bool inode_line(const char *line, void *arg)
{
	const struct inode_query *q = arg;
	const char *s = line;
	uintptr_t lo, hi;
	unsigned long major, minor;

	lo = rw_parse_hex(&s);
	if (*s++ != '-')
		return false;
	hi = rw_parse_hex(&s);
	if (hi <= q->lo || lo >= q->hi)
		return false;
	skip_field(&s); /* perms */
	skip_field(&s); /* offset */
	major = rw_parse_hex(&s);
	if (*s++ != ':')
		return false;
	minor = rw_parse_hex(&s);
	while (*s == ' ')
		s++;
	return major == q->major && minor == q->minor && q->ino &&
	       parse_dec(&s) == q->ino;
}

/* Whether the file @dev/@ino is mapped somewhere in [lo, hi). */
static bool mapped_here(dev_t dev, ino_t ino, uintptr_t lo, uintptr_t hi)
{
	struct inode_query q = {lo, hi, major(dev), minor(dev),
				(unsigned long)ino};

	return maps_each(inode_line, &q);
}

struct cover_query {
	struct inode_query want;
	uintptr_t next; /* [want.lo, next) is covered so far */
	bool bad, read;
};

/* Each mapping overlapping [lo, hi) must be the inode asked for, without
 * write permission, and follow the one before without a gap. */
static bool cover_line(const char *line, void *arg)
{
	struct cover_query *q = arg;
	const char *s = line;
	uintptr_t lo, hi;

	q->read = true;
	lo = rw_parse_hex(&s);
	if (*s++ != '-')
		return false;
	hi = rw_parse_hex(&s);
	if (hi <= q->want.lo || lo >= q->want.hi)
		return false;
	while (*s == ' ')
		s++;
	if (lo > q->next || s[0] != 'r' || s[1] != '-' ||
	    !inode_line(line, &q->want)) {
		q->bad = true;
		return true;
	}
	q->next = hi;
	return false;
}

int rw_maps_read_only_file(dev_t dev, ino_t ino, const void *base, size_t len)
{
	struct cover_query q = {{(uintptr_t)base, (uintptr_t)base + len,
				 major(dev), minor(dev), (unsigned long)ino},
				(uintptr_t)base,
				false,
				false};

	maps_each(cover_line, &q);
	if (!q.read)
		return -1;
	return !q.bad && q.next >= (uintptr_t)base + len;
}

struct mapping_query {
	uintptr_t addr, lo;
	uint64_t off;
	unsigned long major, minor, ino;
};

/* "lo-hi perms offset MAJ:MIN inode": the mapping holding the address. */
static bool mapping_line(const char *line, void *arg)
{
	struct mapping_query *q = arg;
	const char *s = line;
	uintptr_t lo, hi;

	lo = rw_parse_hex(&s);
	if (*s++ != '-')
		return false;
	hi = rw_parse_hex(&s);
	if (q->addr < lo || q->addr >= hi)
		return false;
	skip_field(&s); /* perms */
	q->off = rw_parse_hex(&s);
	while (*s == ' ')
		s++;
	q->major = rw_parse_hex(&s);
	if (*s++ != ':')
		return false;
	q->minor = rw_parse_hex(&s);
	while (*s == ' ')
		s++;
	q->ino = parse_dec(&s);
	q->lo = lo;
	return true;
}

/*
 * The load bias of @f for the code address @pc, from the kernel's word
 * alone: @pc must lie in a mapping of that very file (the loader's list,
 * where the object's range and bias came from, is writable: l_addr and
 * l_phdr could name another object's code), and the bias follows from
 * that mapping's start and file offset and the file's program headers.
 */
static bool code_bias(const struct file_map *f, uintptr_t pc, uintptr_t *bias)
{
	struct mapping_query q = {.addr = pc};

	return maps_each(mapping_line, &q) && q.ino &&
	       q.major == major(f->dev) && q.minor == minor(f->dev) &&
	       q.ino == (unsigned long)f->ino &&
	       bias_from_phdrs(f, q.lo, q.off, bias);
}

static const char *base_name(const char *path)
{
	const char *b = path;

	for (const char *s = path; *s; s++)
		if (*s == '/')
			b = s + 1;
	return b;
}

/* Append to a bounded buffer; snprintf is not async-signal-safe. */
void rw_buf_puts(struct rw_buf *b, const char *s)
{
	while (*s && b->len + 1 < sizeof(b->s))
		b->s[b->len++] = *s++;
	b->s[b->len] = 0;
}

void rw_buf_hex(struct rw_buf *b, uintptr_t v)
{
	char tmp[2 + 2 * sizeof(v) + 1];
	int i = (int)sizeof(tmp) - 1;

	tmp[i] = 0;
	do
		tmp[--i] = "0123456789abcdef"[v & 15];
	while (v >>= 4);
	tmp[--i] = 'x';
	tmp[--i] = '0';
	rw_buf_puts(b, &tmp[i]);
}

static bool symbolize(struct rw_buf *b, uintptr_t addr, char *file,
		      size_t file_len, bool code)
{
	char path[RW_PATH_MAX], name[256];
	const struct object_list *l = &symbolize_objects;
	unsigned nr = __atomic_load_n(&l->nr, __ATOMIC_ACQUIRE);
	uintptr_t bias = 0, lo = 0, hi = 0, off = 0;
	uint64_t file_off = 0;
	struct file_map f;
	bool have_bias = false, found;
	ssize_t n;

	path[0] = 0;
	file[0] = 0;
	/* Bounded, though the list is read-only: RW_MAX_OBJECTS at most. */
	if (nr > RW_MAX_OBJECTS)
		nr = RW_MAX_OBJECTS;
	for (unsigned i = 0; i < nr; i++)
		if (addr >= l->objects[i].lo && addr < l->objects[i].hi) {
			memcpy(path, l->objects[i].path, sizeof(path));
			bias = l->objects[i].bias;
			lo = l->objects[i].lo;
			hi = l->objects[i].hi;
			have_bias = true;
			break;
		}
	if (!path[0]) {
		if (!maps_lookup(addr, path, sizeof(path), &lo, &file_off))
			return false;
		hi = lo + 1;
	}
	if (!map_file(path, lo, hi, &f))
		return false;
	if (code) /* code is mapped from its file: the kernel says where */
		have_bias = code_bias(&f, addr, &bias);
	else if (!have_bias)
		have_bias = bias_from_phdrs(&f, lo, file_off, &bias);
	found = have_bias &&
		find_symbol(&f, addr - bias, name, sizeof(name), &off);
	munmap((void *)f.p, f.len);
	if (!strcmp(path, "/proc/self/exe") &&
	    (n = readlink("/proc/self/exe", path, sizeof(path) - 1)) > 0)
		path[n] = 0;
	strncpy(file, base_name(path), file_len - 1);
	file[file_len - 1] = 0;
	if (found) {
		if (rw_demangle(name, b->s + b->len, sizeof(b->s) - b->len))
			while (b->s[b->len])
				b->len++;
		else
			rw_buf_puts(b, name);
		rw_buf_puts(b, "+");
		rw_buf_hex(b, off);
	}
	return found;
}

/* A data address of a section: its pages may be a backend's memfd, so the
 * object's range and bias come from the (read-only) list. */
bool rw_symbolize(struct rw_buf *b, uintptr_t addr, char *file, size_t file_len)
{
	return symbolize(b, addr, file, file_len, false);
}

bool rw_symbolize_pc(struct rw_buf *b, uintptr_t pc, char *file,
		     size_t file_len)
{
	return symbolize(b, pc, file, file_len, true);
}
