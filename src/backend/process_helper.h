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
 * Start the helper, serving the requests that come on @sock (the
 * helper's end of the socketpair; the caller closes its copy). Returns the
 * helper's pid, or -errno. The helper first sends one int32 0 on @sock
 * once it is ready.
 */
RW_HIDDEN pid_t prw_helper_spawn(int sock);

#endif /* RAREWRITE_PROCESS_HELPER_H */
