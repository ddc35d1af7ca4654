// SPDX-License-Identifier: MIT
/*
 * memfd_region.c - regions kept in a memfd and mapped read-only
 * (MAP_SHARED), for the backends that write through the kernel (pwrite) or
 * through a short-lived alias (shadow). The memfd and view primitives are
 * the core's (memfd.c).
 *
 * fork() is the trap: a shared mapping and an inherited descriptor would let
 * parent and child see, and write, each other's data. So the child, before
 * fork() returns to it, copies every region into a memfd of its own, maps it
 * over the view and closes the parent's descriptors. The parent holds off
 * its writers (this file's write lock) until the child is done copying (the
 * core's fork handshake), so the copy is a consistent snapshot.
 *
 * The views are MADV_DONTFORK and then mseal()ed (sections always, pools
 * on request), as memfd.c describes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "memfd_region.h"
#include "../rawsys.h"

/* Writers hold it shared; fork and read-merge-writes hold it exclusive. A
 * lock word of reglock.h: the write paths take it inline (memfd_region.h). */
uint32_t rw_memfd_lock;

void rw_memfd_write_lock(bool exclusive)
{
	if (exclusive)
		rw_reglock_write(&rw_memfd_lock);
	else
		rw_reglock_read(&rw_memfd_lock);
}

void rw_memfd_write_unlock(void)
{
	if (__atomic_load_n(&rw_memfd_lock, __ATOMIC_RELAXED) & RW_RL_WRITER)
		rw_reglock_write_unlock(&rw_memfd_lock);
	else
		rw_reglock_read_unlock(&rw_memfd_lock);
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

static int memfd_view(struct rw_region *r, int fd, void *at)
{
	void *p = map_view(fd, r->len, at);
	int err;

	if (p == MAP_FAILED)
		return -errno;
	err = rw_view_seal(p, r->len, r->seal);
	if (err) {
		if (!at)
			munmap(p, r->len);
		return err;
	}
	r->fd = fd;
	r->start = (uintptr_t)p;
	return 0;
}

int rw_memfd_adopt(struct rw_region *r)
{
	int fd = memfd_filled(r->len, (void *)r->start);
	int err;

	if (fd < 0)
		return fd;
	/* Replaces the section's pages in one step: readers never fault. */
	err = memfd_view(r, fd, (void *)r->start);
	if (err)
		close(fd);
	return err;
}

/*
 * The descriptor and the view's start go into the core's table from the
 * registers the system calls returned them in, and every later use takes
 * them from there, inline where they reach the kernel: in memory (this
 * record, or a register a callee saved) a store moved the start to the
 * program's data, where the pool was recorded (27t), or the descriptor to
 * another file the pool's writes would reach. Nothing is mapped but the
 * view, so on failure only the view and the descriptor go.
 */
int rw_memfd_create(struct rw_region *r)
{
	long p;
	int err = rw_pool_memfd(F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);

	(void)r;
	if (err)
		return err;
	p = rw_sys6(SYS_mmap, 0, (long)rw_pool_made(RW_POOL_LEN), PROT_READ,
		    MAP_SHARED, (long)(int)rw_pool_made(RW_POOL_FD), 0);
	if (p < 0 && p > -4096) {
		err = (int)p;
		goto close;
	}
	rw_pool_made_put(RW_POOL_START, (uint64_t)p);
	err = rw_view_seal((void *)rw_pool_made(RW_POOL_START),
			   (size_t)rw_pool_made(RW_POOL_LEN),
			   rw_pool_made(RW_POOL_SEALED));
	if (!err)
		return 0;
	rw_sys(SYS_munmap, rw_pool_made(RW_POOL_START),
	       rw_pool_made(RW_POOL_LEN), 0);
close:
	rw_sys(SYS_close, (int)rw_pool_made(RW_POOL_FD), 0, 0);
	return err;
}

/*
 * A sealed view stays (munmap fails with EPERM): its memory goes back by
 * punching the whole memfd, and the view reads zeroes until exit.
 *
 * Under the write lock, exclusive: a writer checks the region under the
 * lock, shared, then names r->fd to the kernel (shadow's mmap(2) of the
 * alias, pwrite(2)). The core marked the record free before this runs, so
 * a writer that gets the lock after us refuses; one that checked before
 * is waited for. A descriptor closed between a writer's check and its
 * call could be the next file's the program opens (another pool's memfd),
 * and the write would go there (27q). The lock order is fork's
 * (core.c): the core's locks, then this one.
 */
void rw_memfd_destroy(struct rw_region *r)
{
	/* Inline, the lock too: @r stays in a register through all of it,
	 * where a libc call's callee could save it for a store to move to
	 * another live pool's record (27o). */
	rw_in_register(r);
	rw_reglock_write(&rw_memfd_lock);
	if (rw_sys(SYS_munmap, r->start, r->len, 0))
		rw_sys6(SYS_fallocate, r->fd,
			FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			(long)r->len, 0, 0);
	rw_sys(SYS_close, r->fd, 0, 0);
	rw_reglock_write_unlock(&rw_memfd_lock);
}

void rw_memfd_fork_prepare(void)
{
	rw_reglock_write(&rw_memfd_lock);
}

void rw_memfd_fork_parent(void)
{
	rw_reglock_write_unlock(&rw_memfd_lock);
}

/* Whether /proc/self/maps line @l is a writable shared mapping of a
 * region's memfd ("lo-hi rw-s offset dev inode /memfd:rarewrite
 * (deleted)"): a shadow alias; the views are read-only, the table's and
 * mprotect's vaults are named otherwise. Its range into @lo, @hi. */
static bool alias_line(const char *l, uintptr_t *lo, uintptr_t *hi)
{
	static const char name[] = "/memfd:rarewrite (deleted)";
	size_t n = strlen(l), k = sizeof(name) - 1;

	if (n <= k || strcmp(l + n - k, name))
		return false;
	*lo = rw_parse_hex(&l);
	if (*l++ != '-')
		return false;
	*hi = rw_parse_hex(&l);
	return !strncmp(l, " rw-s ", 6) && *hi > *lo;
}

/*
 * Unmap every shadow alias the child inherited. views_lock and this
 * file's write lock hold fork() off while an alias lives, but both are
 * words a store can release (attack 26d): then the child kept a writable
 * mapping of the parent's memfd. So the child drops them whatever the
 * locks said, by the kernel's list, again until a pass finds none (the
 * list changes under the reader). Without /proc nothing can be found:
 * the locks are all there is (SECURITY.md).
 */
static void drop_inherited_aliases(void)
{
	for (;;) {
		uintptr_t drop[16][2];
		unsigned nr = 0;
		char buf[4096], line[512];
		size_t used = 0;
		ssize_t got;
		int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return;
		while (nr < 16 && (got = read(fd, buf, sizeof(buf))) > 0)
			for (ssize_t i = 0; i < got && nr < 16; i++) {
				if (buf[i] != '\n') {
					if (used + 1 < sizeof(line))
						line[used++] = buf[i];
					continue;
				}
				line[used] = 0;
				used = 0;
				if (alias_line(line, &drop[nr][0],
					       &drop[nr][1]))
					nr++;
			}
		close(fd);
		if (!nr)
			return;
		for (unsigned i = 0; i < nr; i++)
			if (munmap((void *)drop[i][0], drop[i][1] - drop[i][0]))
				rw_die("fork", (void *)drop[i][0],
				       "child cannot drop an inherited "
				       "writable "
				       "alias of protected memory: %s",
				       strerror(errno));
	}
}

void rw_memfd_fork_child(void)
{
	struct rw_region *r;
	bool aliases = false;

	rw_for_each_region(r) {
		if (r->protected_ && r->backend->fork_waits_for_views)
			aliases = true;
		if (r->fd < 0 || !r->backend->fork_child ||
		    r->backend->fork_child != rw_memfd_fork_child)
			continue;
		r->fd = rw_view_fork_copy(
			r->fd, (void *)r->start, r->len, r->seal,
			F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	}
	__atomic_store_n(&rw_memfd_lock, 0, __ATOMIC_RELAXED);
	if (aliases)
		drop_inherited_aliases();
}
