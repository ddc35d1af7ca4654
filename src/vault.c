// SPDX-License-Identifier: MIT
/*
 * vault.c - the library's own state, kept where no store can reach it.
 *
 * The core's table (regions, open maps, nested windows) is a memfd mapped
 * read-only over the table's own pages, and written only with pwrite(2)
 * into that memfd: the kernel copies through its own mapping, so no
 * writable mapping of the table ever exists in the process, not even for
 * one store, and no other thread can race a write into it (attack 7b).
 *
 * pwrite() copies fewer than 8 bytes one byte at a time, so a store of a
 * field that lock-free readers load is widened to the aligned 8-byte words
 * holding it, the rest re-written with its current contents. Callers of a
 * word keep it under one lock (fields written under different locks never
 * share a word). And on a CPU with FSRM the kernel's copy is one rep movsb,
 * which stores even aligned 8-byte words byte by byte when the source sits
 * at another offset modulo 64 than the destination (measured: 64 and 200
 * bytes to offset 8 from a page-aligned buffer, a word in the middle seen
 * torn in 5 of 6 runs; never from a buffer at the same offset modulo 64,
 * docs/backends.md, pwrite): the widened copy is placed so.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "rawsys.h"

/* Map @fd over [base, base + len): read-only, or writable for the
 * single-threaded fork child. */
static int vault_map(int fd, void *base, size_t len, int prot)
{
	if (mmap(base, len, prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
		return -errno;
	return 0;
}

int rw_vault_create(void *base, size_t len, int *fd_field)
{
	int fd = memfd_create("rarewrite-table",
			      MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int err;

	if (fd < 0)
		return -errno;
	*fd_field = fd; /* inside [base, base + len): copied below */
	err = rw_memfd_fill(fd, len, base,
			    F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	if (!err)
		err = vault_map(fd, base, len, PROT_READ);
	if (err) {
		*fd_field = -1;
		close(fd);
	}
	return err;
}

/* memcpy() without a call: a callee saved @fd and @base on the stack
 * around the C library's memcpy(), and the pwrite(2) after took them back
 * from there (the fresh review of 2e71f48: the table's write went to a
 * pool's memfd). */
static inline __attribute__((always_inline)) void
copy_inline(void *to, const void *from, size_t n)
{
#if defined(__x86_64__)
	__asm__ volatile("rep movsb"
			 : "+D"(to), "+S"(from), "+c"(n)
			 :
			 : "memory");
#else
	memcpy(to, from, n);
#endif
}

void rw_vault_store(int fd, const void *base, void *dst, const void *src,
		    size_t len)
{
	uintptr_t first = (uintptr_t)dst & ~(uintptr_t)7;
	uintptr_t last = ((uintptr_t)dst + len + 7) & ~(uintptr_t)7;
	_Alignas(64) unsigned char aligned[512 + 64];
	/* @base is page aligned: the file offset's place in its cache line */
	unsigned char *buf = aligned + first % 64;
	size_t off = 0, span = last - first;

	if (!len)
		return;
	if (span > 512) { /* large records: no lock-free reader */
		first = (uintptr_t)dst;
		span = len;
	} else {
		copy_inline(buf, (const void *)first, span);
		copy_inline(buf + ((uintptr_t)dst - first), src, len);
		src = buf;
	}
	/* pwrite(2) inline: descriptor, offset and length go to the kernel
	 * from registers. The C library's pwrite() is a cancellation point
	 * that keeps its arguments on its stack around
	 * __pthread_enable_asynccancel() and loads them again for the system
	 * call: a store there sent a write of the table to another field of
	 * it, a backend's ops pointer included. */
	while (off < span) {
		long n = rw_sys6(SYS_pwrite64, fd,
				 (long)((const char *)src + off),
				 (long)(span - off),
				 (long)(first - (uintptr_t)base + off), 0, 0);

		if (n <= 0)
			rw_die("rare_write", dst,
			       "cannot write the library's table: %s",
			       n < 0 ? strerror((int)-n) : "short write");
		off += (size_t)n;
	}
}

int rw_vault_fork_copy(int fd, void *base, size_t len)
{
	int copy = rw_memfd_new("rarewrite-table", len, base,
				F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	int err;

	if (copy < 0)
		return copy;
	err = vault_map(copy, base, len, PROT_READ | PROT_WRITE);
	if (err) {
		close(copy);
		return err;
	}
	close(fd);
	return copy;
}

int rw_vault_fork_done(void *base, size_t len)
{
	return mprotect(base, len, PROT_READ) ? -errno : 0;
}

/*
 * A vault's descriptor is a field of the vault: before the first seal it
 * is plain memory, and a store there must not pass for "sealed" (the
 * table would stay writable, its writes go to the attacker's descriptor).
 * Sealed means what the kernel says: @fd is a vault's memfd (unlinked,
 * the vault's size, the vault's seals) and that very file is mapped
 * read-only over the whole vault. Without /proc/self/maps (no descriptor
 * left, no /proc) the memfd's identity has to do: before its first seal
 * the library has no memfd of that size and those seals but the region
 * table's own, which is of another size.
 */
bool rw_vault_sealed(int fd, const void *base, size_t len)
{
	const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	struct stat st;
	int have;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink ||
	    st.st_size != (off_t)len)
		return false;
	have = fcntl(fd, F_GET_SEALS);
	if (have < 0 || (have & seals) != seals)
		return false;
	return rw_maps_read_only_file(st.st_dev, st.st_ino, base, len) != 0;
}
