// SPDX-License-Identifier: MIT
/*
 * libc_threads.c - no thread the C library starts itself inherits a window.
 *
 * A new thread inherits the PKRU of the thread that creates it. The
 * library's pthread_create() and thrd_create() settle every new thread's
 * keys (backend/pkey.c), but the C library starts threads of its own
 * through its internal pthread_create, which no interposition reaches:
 * the notification threads of SIGEV_THREAD timers (timer_create()) and
 * message queues (mq_notify()), the worker threads of POSIX asynchronous
 * I/O (aio_read(), aio_write(), aio_fsync(), lio_listio()) and of
 * getaddrinfo_a(). glibc 2.36 starts them from the calling thread (the
 * SIGEV_THREAD helper once, and it starts the notifications; the I/O and
 * lookup workers on demand, and they start the notifications), so
 * created inside a window they would write protected memory for good
 * (attack 22c). These entries are interposed and refuse, with an abort
 * naming the call, on a thread that holds a window (begin/end on any
 * backend; on pkey also a map, read from the thread's PKRU, which no store
 * changes): misuse, like creating a pool there. A timer or queue whose
 * notification is not SIGEV_THREAD starts no thread and is let through;
 * the event is read once, into a copy that the C library is given.
 *
 * The C library's functions are looked up once, in a constructor, into a
 * page then made read-only (and sealed where mseal(2) is), as pkey.c does
 * for pthread_create (attack 21a). Shared library only: a static program
 * cannot name the C library's definitions next to these (its archive's
 * internal names are not in libc.so), so librarewrite.a leaves this file
 * out and static programs keep the C library's entries (docs).
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <mqueue.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "rarewrite.h"
#include "internal.h"
#include "critical.h"

#ifndef SYS_mseal
#define SYS_mseal 462 /* Linux 6.10 */
#endif

enum starter {
	TIMER_CREATE,
	MQ_NOTIFY,
	AIO_READ,
	AIO_WRITE,
	AIO_FSYNC,
	LIO_LISTIO,
	AIO_READ64,
	AIO_WRITE64,
	AIO_FSYNC64,
	LIO_LISTIO64,
	GETADDRINFO_A,
	NR_STARTERS
};

static const char *const starter_names[NR_STARTERS] = {
	"timer_create", "mq_notify",	"aio_read",	"aio_write",
	"aio_fsync",	"lio_listio",	"aio_read64",	"aio_write64",
	"aio_fsync64",	"lio_listio64", "getaddrinfo_a"};

static struct libc_starters {
	bool done;
	void *fn[NR_STARTERS];
} __attribute__((aligned(4096))) starters;
static pthread_mutex_t starters_lock = PTHREAD_MUTEX_INITIALIZER;

static void starters_resolve(void)
{
	pthread_mutex_lock(&starters_lock);
	if (!__atomic_load_n(&starters.done, __ATOMIC_ACQUIRE)) {
		for (unsigned i = 0; i < NR_STARTERS; i++)
			starters.fn[i] = dlsym(RTLD_NEXT, starter_names[i]);
		__atomic_store_n(&starters.done, true, __ATOMIC_RELEASE);
		if (mprotect(&starters, sizeof(starters), PROT_READ))
			rw_die("timer_create", &starters,
			       "cannot protect the C library's functions");
		if (syscall(SYS_mseal, &starters, sizeof(starters), 0UL) &&
		    errno != ENOSYS)
			rw_die("timer_create", &starters,
			       "cannot seal the C library's functions");
	}
	pthread_mutex_unlock(&starters_lock);
}

__attribute__((constructor)) static void starters_early(void)
{
	starters_resolve();
}

/* The C library's @which, for @call; aborts where there is none. */
static void *real(enum starter which)
{
	if (!__atomic_load_n(&starters.done, __ATOMIC_ACQUIRE))
		starters_resolve();
	if (!starters.fn[which])
		rw_die(starter_names[which], NULL,
		       "cannot find the C library's %s", starter_names[which]);
	return starters.fn[which];
}

/* Abort naming @which if this thread holds a window a thread would
 * inherit. */
static void refuse_in_window(enum starter which)
{
	if ((rw_window_depth && rw_initialised()) ||
	    rw_backends_thread_writable())
		rw_die(starter_names[which], NULL,
		       "called inside an open window: the threads it starts "
		       "would inherit write access (call it outside windows "
		       "and maps)");
}

#define INTERPOSE __attribute__((visibility("default"), weak))

INTERPOSE int timer_create(clockid_t clock, struct sigevent *sevp,
			   timer_t *timer)
{
	typedef int fn_t(clockid_t, struct sigevent *, timer_t *);
	struct sigevent ev;

	if (!sevp)
		return ((fn_t *)real(TIMER_CREATE))(clock, NULL, timer);
	ev = *sevp; /* what is checked is what the C library reads */
	if (ev.sigev_notify == SIGEV_THREAD)
		refuse_in_window(TIMER_CREATE);
	return ((fn_t *)real(TIMER_CREATE))(clock, &ev, timer);
}

INTERPOSE int mq_notify(mqd_t q, const struct sigevent *sevp)
{
	typedef int fn_t(mqd_t, const struct sigevent *);
	struct sigevent ev;

	if (!sevp)
		return ((fn_t *)real(MQ_NOTIFY))(q, NULL);
	ev = *sevp;
	if (ev.sigev_notify == SIGEV_THREAD)
		refuse_in_window(MQ_NOTIFY);
	return ((fn_t *)real(MQ_NOTIFY))(q, &ev);
}

/* The I/O and lookup requests start workers whatever they notify. */
#define AIO_ONE(name, which, type)                                             \
	INTERPOSE int name(type *cb)                                           \
	{                                                                      \
		refuse_in_window(which);                                       \
		return ((int (*)(type *))real(which))(cb);                     \
	}
AIO_ONE(aio_read, AIO_READ, struct aiocb)
AIO_ONE(aio_write, AIO_WRITE, struct aiocb)
AIO_ONE(aio_read64, AIO_READ64, struct aiocb64)
AIO_ONE(aio_write64, AIO_WRITE64, struct aiocb64)

INTERPOSE int aio_fsync(int op, struct aiocb *cb)
{
	refuse_in_window(AIO_FSYNC);
	return ((int (*)(int, struct aiocb *))real(AIO_FSYNC))(op, cb);
}

INTERPOSE int aio_fsync64(int op, struct aiocb64 *cb)
{
	refuse_in_window(AIO_FSYNC64);
	return ((int (*)(int, struct aiocb64 *))real(AIO_FSYNC64))(op, cb);
}

INTERPOSE int lio_listio(int mode, struct aiocb *const list[], int n,
			 struct sigevent *sevp)
{
	refuse_in_window(LIO_LISTIO);
	return ((int (*)(int, struct aiocb *const[], int,
			 struct sigevent *))real(LIO_LISTIO))(mode, list, n,
							      sevp);
}

INTERPOSE int lio_listio64(int mode, struct aiocb64 *const list[], int n,
			   struct sigevent *sevp)
{
	refuse_in_window(LIO_LISTIO64);
	return ((int (*)(int, struct aiocb64 *const[], int,
			 struct sigevent *))real(LIO_LISTIO64))(mode, list, n,
								sevp);
}

INTERPOSE int getaddrinfo_a(int mode, struct gaicb *list[], int n,
			    struct sigevent *sevp)
{
	refuse_in_window(GETADDRINFO_A);
	return ((int (*)(int, struct gaicb *[], int, struct sigevent *))real(
		GETADDRINFO_A))(mode, list, n, sevp);
}
