// SPDX-License-Identifier: MIT
/*
 * memfd.c - memory kept in a sealed memfd and mapped read-only over its
 * place: what the core's vaults (vault.c) and the memfd backends
 * (backend/memfd_region.c, backend/process.c) are made of.
 *
 * The views are MADV_DONTFORK and then mseal()ed where asked: sealed in the
 * parent, absent in the child, which reads the inherited memfd, maps a
 * private copy where the view was and seals that. So sealing and fork
 * isolation hold at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "rawsys.h"

#ifndef SYS_mseal
#define SYS_mseal 462 /* Linux 6.10 */
#endif

int rw_memfd_fill(int fd, size_t len, const void *contents, unsigned seals)
{
	size_t done = 0;

	if (ftruncate(fd, (off_t)len))
		return -errno;
	while (contents && done < len) {
		ssize_t n = pwrite(fd, (const char *)contents + done,
				   len - done, (off_t)done);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, seals))
		return -errno;
	return 0;
}

int rw_memfd_new(const char *name, size_t len, const void *contents,
		 unsigned seals)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int err;

	if (fd < 0)
		return -errno;
	err = rw_memfd_fill(fd, len, contents, seals);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* Both system calls inline, with no call in between: @at stays in a
 * register from the caller's to the kernel (a pool's start, which the
 * caller loads from the table: 27t). */
int rw_view_seal(void *at, size_t len, bool seal)
{
	long err = rw_sys(SYS_madvise, at, len, MADV_DONTFORK);

	/* Kernels before 6.10 have no mseal(2): the view stays unsealed. */
	if (!err && seal) {
		err = rw_sys(SYS_mseal, at, len, 0);
		if (err == -ENOSYS)
			err = 0;
	}
	return (int)err;
}

int rw_view_fork_copy(int fd, void *at, size_t len, bool seal, unsigned seals)
{
	void *old = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	int copy = old == MAP_FAILED
			   ? -errno
			   : rw_memfd_new("rarewrite", len, old, seals);

	if (old != MAP_FAILED)
		munmap(old, len);
	/* Over the core's reservation of the view's place (the parent's
	 * view was not inherited). */
	if (copy < 0 ||
	    mmap(at, len, PROT_READ, MAP_SHARED | MAP_FIXED, copy, 0) != at ||
	    rw_view_seal(at, len, seal))
		rw_die("fork", at,
		       "child cannot take a private copy of protected memory: "
		       "%s",
		       strerror(copy < 0 ? -copy : errno));
	close(fd);
	return copy;
}
