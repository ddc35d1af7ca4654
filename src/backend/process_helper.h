/* SPDX-License-Identifier: MIT */
/* process_helper.h - starting the process backend's helper. */
#ifndef RAREWRITE_PROCESS_HELPER_H
#define RAREWRITE_PROCESS_HELPER_H

#include <sys/types.h>

#include "internal.h"
#include "process_ring.h"

/* The names of the helper and of its keeper in /proc/<pid>/comm. */
#define PRW_HELPER_COMM "rarewrite-hlp"
#define PRW_KEEPER_COMM "rarewrite-kpr"

/*
 * Start the helper, serving the requests that come on @sock (the
 * helper's end of the socketpair; the caller closes its copy), as no child
 * of ours: 0 or -errno. Once ready the helper sends a struct prw_ready on
 * @sock (its pid); when it ends its keeper sends a struct prw_reply with
 * seq PRW_SEQ_FATE (process_ring.h).
 */
RW_HIDDEN int prw_helper_spawn(int sock);

#endif /* RAREWRITE_PROCESS_HELPER_H */
