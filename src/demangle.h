/* SPDX-License-Identifier: MIT */
/*
 * demangle.h - readable C++ names for the fault report (demangle.c).
 */
#ifndef RAREWRITE_DEMANGLE_H
#define RAREWRITE_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Write the readable form of the symbol @sym into @out (@out_len bytes):
 * an Itanium C++ name demangled ("app::Spend(long)"), compiler suffixes
 * that only rename (".lto_priv.0") dropped, clones said as c++filt says
 * them (" [clone .constprop.0]"). False, @out untouched, when @sym needs
 * none of that or uses mangling outside the subset understood: the caller
 * prints @sym as it is. Async-signal-safe: no allocation, no libc state.
 */
__attribute__((visibility("hidden"))) bool
rw_demangle(const char *sym, char *out, size_t out_len);

#endif /* RAREWRITE_DEMANGLE_H */
