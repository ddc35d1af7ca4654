/* SPDX-License-Identifier: MIT */
/*
 * memfd_region.h - the region ops that pwrite and shadow share
 * (memfd_region.c): regions in a memfd mapped read-only, and the lock that
 * keeps writers out of fork's copy.
 */
#ifndef RAREWRITE_MEMFD_REGION_H
#define RAREWRITE_MEMFD_REGION_H

#include "internal.h"
#include "reglock.h"

RW_HIDDEN int rw_memfd_adopt(struct rw_region *r);
RW_HIDDEN int rw_memfd_create(struct rw_region *r);
RW_HIDDEN void rw_memfd_destroy(struct rw_region *r);
RW_HIDDEN void rw_memfd_fork_prepare(void);
RW_HIDDEN void rw_memfd_fork_parent(void);
RW_HIDDEN void rw_memfd_fork_child(void);
/* Writers hold the lock shared; @exclusive keeps out every other writer
 * (and fork) for a read-merge-write. */
RW_HIDDEN void rw_memfd_write_lock(bool exclusive);
RW_HIDDEN void rw_memfd_write_unlock(void);
/* The lock's word (reglock.h), for the write paths that take it inline. */
RW_HIDDEN extern uint32_t rw_memfd_lock;

#endif /* RAREWRITE_MEMFD_REGION_H */
