/* SPDX-License-Identifier: MIT */
/* process_helper.h - starting the process backend's helper. */
#ifndef RAREWRITE_PROCESS_HELPER_H
#define RAREWRITE_PROCESS_HELPER_H

#include <sys/types.h>

#include "internal.h"
#include "process_ring.h"

/* The helper's name in /proc/<pid>/comm. */
#define PRW_HELPER_COMM "rarewrite-hlp"

/*
 * Start the helper on @ring, serving control messages on @sock (the
 * helper's end of the socketpair; the caller closes its copy). Returns the
 * helper's pid, or -errno. The helper first sends one int32 0 on @sock
 * once it is ready.
 */
RW_HIDDEN pid_t prw_helper_spawn(struct prw_ring *ring, int sock);

/* In the helper, last before serving: allow only the system calls of its
 * loop from now on (others kill it with SIGSYS). 0 or -errno. */
RW_HIDDEN int prw_helper_seccomp(void);

#endif /* RAREWRITE_PROCESS_HELPER_H */
