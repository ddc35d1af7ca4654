/* SPDX-License-Identifier: MIT */
/* process_seccomp.h - the process backend's helper confines itself. */
#ifndef RAREWRITE_PROCESS_SECCOMP_H
#define RAREWRITE_PROCESS_SECCOMP_H

#include "internal.h"

/* In the helper, last before serving: allow only the system calls of its
 * loop from now on (others kill it with SIGSYS). 0 or -errno. */
RW_HIDDEN int prw_helper_seccomp(void);

/* In the keeper, once the helper is cloned: allow only waiting for it,
 * one reply and leaving. 0 or -errno. */
RW_HIDDEN int prw_keeper_seccomp(void);

#endif /* RAREWRITE_PROCESS_SECCOMP_H */
