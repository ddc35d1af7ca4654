// SPDX-License-Identifier: MIT
/*
 * klock.c - locks that no store can release.
 *
 * A mutex word is writable memory: a store of zero while its owner is
 * inside lets a second thread in, and two read-modify-writes of protected
 * state then race (attack 26: a rare_write_add() lost, one rare_alloc()
 * object handed out twice). A lock whose state is in the kernel cannot be
 * released that way: a pipe holding one byte, taken by reading the byte
 * and given back by writing it, with its descriptors in the table (the
 * vault), as fork.c's token. A store to the library's memory can only
 * make it wait (nothing is written back) or abort.
 *
 * The cost is a read() and a write() per critical section, made inline
 * (klock.h: rare_write_add() takes it without a function call). Before the
 * first seal nothing is protected and the table is writable anyway: a
 * mutex serves until rw_klock_setup() puts the pipes in place, which it
 * does holding every such mutex, so no critical section spans the switch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "klock.h"
#include "table.h"

static const char *const klock_names[RW_NR_KLOCKS] = {
	[RW_KLOCK_ADD] = "rare_write_add",
	[RW_KLOCK_POOL] = "rare_alloc",
};

/* Only until the first seal (see above). */
static pthread_mutex_t before_seal[RW_NR_KLOCKS] = {
	[0 ... RW_NR_KLOCKS - 1] = PTHREAD_MUTEX_INITIALIZER,
};

/* A new pipe holding its one byte into @fds (the table's: plain stores
 * before the seal and in the fork child, else TABLE_SET). */
static int klock_create(enum rw_klock k)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	if (write(p[1], "", 1) != 1) {
		int err = -errno;

		close(p[0]);
		close(p[1]);
		return err ? err : -EIO;
	}
	TABLE_SET(rw_table.klocks[k][0], p[0]);
	TABLE_SET(rw_table.klocks[k][1], p[1]);
	return 0;
}

int rw_klock_setup(void)
{
	int err = 0;

	for (unsigned k = 0; k < RW_NR_KLOCKS && !err; k++) {
		if (rw_table.klocks[k][0] >= 0)
			continue;
		pthread_mutex_lock(&before_seal[k]);
		err = klock_create(k);
		pthread_mutex_unlock(&before_seal[k]);
	}
	return err;
}

/* The fork child: pipes of its own (the parent's are shared with it). */
void rw_klock_child(void)
{
	for (unsigned k = 0; k < RW_NR_KLOCKS; k++) {
		int err;

		pthread_mutex_init(&before_seal[k], NULL);
		if (rw_table.klocks[k][0] < 0)
			continue;
		close(rw_table.klocks[k][0]);
		close(rw_table.klocks[k][1]);
		err = klock_create(k);
		if (err)
			rw_die("fork", NULL,
			       "child cannot make the %s lock: %s",
			       klock_names[k], strerror(-err));
	}
}

void rw_klock_take_before_seal(enum rw_klock k)
{
	pthread_mutex_lock(&before_seal[k]);
}

void rw_klock_give_before_seal(enum rw_klock k)
{
	pthread_mutex_unlock(&before_seal[k]);
}

void rw_klock_broken(enum rw_klock k, long err)
{
	rw_die(klock_names[k], NULL, "its lock's pipe: %s",
	       strerror(err ? (int)-err : EPIPE));
}
