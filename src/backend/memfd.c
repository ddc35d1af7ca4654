// SPDX-License-Identifier: MIT
/*
 * memfd.c - regions kept in a memfd and mapped read-only (MAP_SHARED), for
 * the backends that write through the kernel (pwrite) or through a
 * short-lived alias (shadow).
 *
 * fork() is the trap: a shared mapping and an inherited descriptor would let
 * parent and child see, and write, each other's data. So the child, before
 * fork() returns to it, copies every region into a memfd of its own, maps it
 * over the view and closes the parent's descriptors. The parent holds off
 * its writers (this file's write lock) until the child is done copying (the
 * core's fork handshake), so the copy is a consistent snapshot.
 *
 * The views are not mseal()ed: the child must be able to replace them, and
 * fork isolation wins over sealing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

/* Writers hold it shared; fork and read-merge-writes hold it exclusive. */
static pthread_rwlock_t write_lock = PTHREAD_RWLOCK_INITIALIZER;

void rw_memfd_write_lock(bool exclusive)
{
	if (exclusive)
		pthread_rwlock_wrlock(&write_lock);
	else
		pthread_rwlock_rdlock(&write_lock);
}

void rw_memfd_write_unlock(void)
{
	pthread_rwlock_unlock(&write_lock);
}

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

/* Nobody may shrink the file under the view (that would SIGBUS), nor
 * change the seals. */
static int memfd_filled(size_t len, const void *contents)
{
	return rw_memfd_new("rarewrite", len, contents,
			    F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
}

/* Map @fd read-only at @at (NULL: anywhere). */
static void *map_view(int fd, size_t len, void *at)
{
	return mmap(at, len, PROT_READ, MAP_SHARED | (at ? MAP_FIXED : 0), fd,
		    0);
}

int rw_memfd_adopt(struct rw_region *r)
{
	int fd = memfd_filled(r->len, (void *)r->start);

	if (fd < 0)
		return fd;
	/* Replaces the section's pages in one step: readers never fault. */
	if (map_view(fd, r->len, (void *)r->start) == MAP_FAILED) {
		int err = -errno;

		close(fd);
		return err;
	}
	r->fd = fd;
	return 0;
}

int rw_memfd_create(struct rw_region *r)
{
	int fd = memfd_filled(r->len, NULL);
	void *p;

	if (fd < 0)
		return fd;
	p = map_view(fd, r->len, NULL);
	if (p == MAP_FAILED) {
		int err = -errno;

		close(fd);
		return err;
	}
	r->fd = fd;
	r->start = (uintptr_t)p;
	return 0;
}

void rw_memfd_destroy(struct rw_region *r)
{
	munmap((void *)r->start, r->len);
	close(r->fd);
}

void rw_memfd_fork_prepare(void)
{
	pthread_rwlock_wrlock(&write_lock);
}

void rw_memfd_fork_parent(void)
{
	pthread_rwlock_unlock(&write_lock);
}

void rw_memfd_fork_child(void)
{
	struct rw_region *r;

	rw_for_each_region(r) {
		int fd;

		if (r->fd < 0 || !r->backend->fork_child ||
		    r->backend->fork_child != rw_memfd_fork_child)
			continue;
		fd = memfd_filled(r->len, (void *)r->start);
		if (fd < 0 ||
		    map_view(fd, r->len, (void *)r->start) == MAP_FAILED)
			rw_die("fork", (void *)r->start,
			       "child cannot take a private copy of protected "
			       "memory");
		close(r->fd);
		r->fd = fd;
	}
	pthread_rwlock_init(&write_lock, NULL);
}
