/* SPDX-License-Identifier: MIT */
/*
 * rarewrite.h - data that is read-only at rest and writable only inside a
 * brief window the program opens itself ("rare write", after Kees Cook's
 * 2017 kernel series).
 *
 * Typical use (the comments sit on their own lines so that the formatter
 * cannot reflow them into the code):
 *
 *	#include <rarewrite.h>
 *
 *	static const struct handler *__wr_rare handlers[16];
 *
 *	int main(void)
 *	{
 *		// before init, a plain store is fine
 *		handlers[0] = &default_handler;
 *		// seal
 *		if (rare_write_init() < 0)
 *			return 1;
 *		// the only way in afterwards
 *		rare_write(handlers[1], &other);
 *		// SIGSEGV, with a one-line report naming handlers+0x10
 *		handlers[2] = &evil;
 *	}
 *
 * Build with `cc prog.c $(pkg-config --cflags --libs rarewrite)`: the link
 * flags carry a linker-script fragment that page-aligns the __wr_rare section
 * of every program and shared library, so ordinary globals never share a page
 * with protected data.
 *
 * Misuse (a write outside protected memory, an unbalanced rare_write_end(),
 * rare_write_begin() on a backend without RARE_WRITE_CAP_BEGIN_END, a map
 * that overlaps an open map, ...) is a bug in the caller: the library prints
 * one line on stderr naming the call and the address, then calls abort().
 * Environment failures are reported as -errno by rare_write_init(), which
 * also says what went wrong in one line on stderr.
 *
 * A plain store to protected memory (a write site a port forgot) dies by
 * SIGSEGV as it always did, after one line on stderr, on every backend:
 *
 *   rarewrite: write to protected memory at 0x55d0c0a03010 (handlers+0x10
 *   in prog) by pc main+0x2c in prog: write it with rare_write() or inside
 *   a window
 *
 * (one line in reality). The object and the pc are named from the symbol
 * tables of the program and its libraries, static symbols included unless
 * stripped; without a symbol the region is named ("pool 0x...+0x...",
 * "section of libfoo.so+0x..."). The library's SIGSEGV handler is installed
 * by rare_write_init() and stays first: sigaction(), signal(), bsd_signal()
 * and sysv_signal() are interposed, so a handler the program installs later
 * (a crash reporter) runs after the report, and faults the library does not
 * own go to the program's handler unchanged; sigaction() reports the
 * program's own action back. If the program's handler returns from a
 * protected store, the process dies by SIGSEGV. On pkey, every handler the
 * program installs, for any signal, may read protected data (never write).
 *
 * The manual pages (man/, `man rare_write`, `man 7 rarewrite`) document
 * this API too: keep them and these comments saying the same things
 * (`make check-docs` checks that every call and macro has a page).
 *
 * Porting a program: README.md, "Porting an existing program", walks
 * through the steps; the pieces are RAREWRITE_CHECK_WRITES (find write
 * sites at build time), the fault report above, RAREWRITE_NEED and
 * rare_write_init_caps() (windows on the default backend),
 * rare_write_is_protected(), pools before init and rare_realloc(),
 * rare_write_seal_self() (a library protecting itself), rare_write_add(),
 * rarewrite-cc (check mode inside a make, autotools or CMake build).
 *
 * C++: the headers compile as C++ (g++, clang++); <rarewrite.hpp> adds a
 * scoped window and protected_value<T>.
 *
 * ABI: the exported functions carry version nodes (RAREWRITE_0.1, 0.2,
 * ...), the layout of every public type is checked against a committed
 * libabigail baseline (make check-abi), and a public struct never changes
 * size: struct rare_write_mapping keeps its size for good (its private
 * members are the library's to reinterpret), struct rare_pool_opts grows
 * only by members that a new RARE_POOL_* flag announces (a program built
 * against an older header never sets it, so the library never reads past
 * the end of its smaller struct). rare_write_version(3) says the rule.
 */
#ifndef RAREWRITE_H
#define RAREWRITE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The version of this header; rare_write_version() says the library's.
 * All three come from the file VERSION (make check-version checks them).
 */
#define RAREWRITE_VERSION_MAJOR 0
#define RAREWRITE_VERSION_MINOR 2
#define RAREWRITE_VERSION_PATCH 0
/* One number that orders versions: RAREWRITE_VERSION_NUMBER(0, 2, 0). */
#define RAREWRITE_VERSION_NUMBER(major, minor, patch)                          \
	(((major) << 16) | ((minor) << 8) | (patch))

/* Marks the exported API (the library builds with hidden visibility). */
#define RAREWRITE_API __attribute__((visibility("default")))
/* A result that says whether protection is on: ignoring it is a bug. */
#define RAREWRITE_MUST_CHECK __attribute__((warn_unused_result))
/*
 * Pointer arguments that must not be NULL (NULL aborts at run time, with
 * a message naming the call). Not applied inside the library, whose NULL
 * checks the compiler would otherwise be entitled to delete.
 */
#ifdef RAREWRITE_BUILDING_LIBRARY
#define RAREWRITE_NONNULL(...)
#else
#define RAREWRITE_NONNULL(...) __attribute__((nonnull(__VA_ARGS__)))
#endif

/*
 * rare_write_version - the version of the library running, as
 * RAREWRITE_VERSION_NUMBER(major, minor, patch); compare it with
 * RAREWRITE_VERSION_NUMBER(RAREWRITE_VERSION_MAJOR, ...) of the header a
 * program was built with. In version node RAREWRITE_0.2.
 */
RAREWRITE_API unsigned rare_write_version(void);

/*
 * __wr_rare - place a static-storage object in the protected section.
 *
 * The object is ordinary writable data until rare_write_init() has run, and
 * read-only afterwards: only rare_write(), rare_write_memcpy(),
 * rare_write_memset(), a rare_write_begin()/rare_write_end() window or a
 * rare_write_map() view can change it. Use it on objects with static storage
 * duration only (globals and file-scope statics).
 *
 * Shared libraries may have __wr_rare variables of their own (linked with
 * the same flags; a library loaded after rare_write_init() is sealed as it
 * loads). A program should reach them through the library's functions or
 * through an address the library hands out. A program that names one
 * directly (`extern long lib_var;` in code built as PIE or non-PIC) gets a
 * copy relocation: the live variable would move into the program's own
 * writable .bss, unprotected, so rare_write_init() aborts naming it. Fixes:
 * an accessor function; or define the variable in the library with
 * __attribute__((visibility("protected"))) (the linker then refuses the
 * copy); or build the program with -fPIC -Wl,-z,nocopyreloc.
 */
#ifndef RAREWRITE_CHECK_WRITES
#define __wr_rare __attribute__((section("rarewrite_data"), used))
#define __wr_rare_extern
#else
/*
 * Check mode, for finding write sites at build time: compile (never run)
 * with -DRAREWRITE_CHECK_WRITES and every __wr_rare object is also const,
 * so each plain store to one is a compile error naming its line, while
 * rare_write(), rare_write_memcpy(), rare_write_memset() and
 * rare_write_map() still compile. A store through a pointer derived from
 * one (passing &obj to a function that stores, `T *p = obj.ptrs;`) is a
 * -Wdiscarded-qualifiers warning only: add -Werror=discarded-qualifiers
 * (clang: -Werror=incompatible-pointer-types-discards-qualifiers), as
 * rarewrite-cc does. For the qualifier to land on the object itself with
 * the compiler alone, write the annotation where `const` would go: before
 * the type for a non-pointer object (`static __wr_rare struct config
 * cfg;`), after the last `*` for pointers (`static struct handler
 * *__wr_rare tab[16];`). The suffix spelling (`static struct handler
 * *tab[16] __wr_rare;`) means the same in normal builds but is a syntax
 * error here; check such files with the driver rarewrite-cc(1), which
 * moves the qualifier onto the declared name and accepts both. A const
 * object with an initialiser may be constant-folded by the compiler, so a
 * build in this mode is for the list of errors only.
 */
#define __wr_rare const __attribute__((section("rarewrite_data"), used))
#define __wr_rare_extern const
#endif
/*
 * __wr_rare_extern - the declaration-side spelling, for the extern
 * declaration of a __wr_rare object in a header (`extern __wr_rare_extern
 * struct config cfg;`): nothing in normal builds, const in check mode, so
 * a file that sees only the declaration has its stores found too. Same
 * placement as __wr_rare.
 *
 * WR_RARE, WR_RARE_EXTERN - the same two without a reserved identifier
 * (names beginning with two underscores belong to the implementation).
 */
#define WR_RARE __wr_rare
#define WR_RARE_EXTERN __wr_rare_extern

/*
 * An exported protected variable: a shared library's __wr_rare object that
 * programs name directly. Exporting the variable itself gives every PIE or
 * non-PIC program that names it a copy relocation (the live copy lands in
 * the program's writable .bss; rare_write_init() aborts), and makes its
 * size part of the library's ABI. Export an accessor instead:
 *
 *	// libfoo's public header
 *	RARE_WRITE_EXPORT_DECLARE(struct policy, foo_policy);
 *	#ifndef FOO_BUILDING
 *	#define foo_policy (*foo_policy_rare_ref())
 *	#endif
 *
 *	// one .c file of libfoo (built with -DFOO_BUILDING)
 *	RARE_WRITE_EXPORT_DEFINE(struct policy, foo_policy) = {.level = 1};
 *
 *	// libfoo's version script: a node of its own for the accessor
 *	FOO_1.1 { global: foo_policy_rare_ref; } FOO_1.0;
 *
 * The variable is hidden (no dynamic symbol, no copy relocation, its size
 * is no longer ABI: the struct may grow); foo_policy_rare_ref() has default
 * visibility, is declared const so repeated reads cost one call, and
 * returns a pointer to const in check mode so that programs' plain stores
 * are found. Programs read foo_policy as before and write it with
 * rare_write(foo_policy.level, 2). Replacing an exported variable by this
 * removes a dynamic symbol: a new soname, or keep the old symbol.
 */
#define RARE_WRITE_EXPORT_DECLARE(type, name)                                  \
	extern __wr_rare_extern __typeof__(type) *name##_rare_ref(void)        \
		__attribute__((const, returns_nonnull, visibility("default")))
#define RARE_WRITE_EXPORT_DEFINE(type, name)                                   \
	extern __wr_rare_extern __typeof__(type) name                          \
		__attribute__((visibility("hidden")));                         \
	__attribute__((visibility("default")))                                 \
	__wr_rare_extern __typeof__(type) *name##_rare_ref(void)               \
	{                                                                      \
		return &name;                                                  \
	}                                                                      \
	__wr_rare __typeof__(type) name

/* Direct stores to protected memory are allowed between begin and end. */
#define RARE_WRITE_CAP_BEGIN_END 0x1u
/* An open window lets no other thread of the process write. */
#define RARE_WRITE_CAP_THREAD_LOCAL 0x2u

/*
 * rare_write_init - choose the backend and seal every __wr_rare section.
 *
 * The backend comes from the environment variable RAREWRITE_BACKEND:
 * "auto" (default when unset or empty), "pkey", "pwrite", "shadow",
 * "mprotect" or "process". A named backend is never replaced by another.
 * A set-user-ID or file-capability program (AT_SECURE) ignores it and
 * RAREWRITE_NEED: whoever starts it must not choose for it.
 *
 * Idempotent and thread-safe: later calls return the first call's result
 * without changing anything. Returns 0, or a negative errno:
 *   -EINVAL   unknown backend name
 *   -ENOTSUP  the named backend is not available on this machine or
 *             kernel, or a library's rare_write_seal_self() chose one
 *             without the capabilities asked for (rare_write_init_caps())
 *   other     the system call that failed (memfd_create, mmap, ...)
 * After a failure one line on stderr says why, nothing is protected beyond
 * what rare_write_seal_self() sealed before, and the call may be retried.
 * Aborts if a rare_write_map() or a rare_write_begin() window is open.
 */
RAREWRITE_API RAREWRITE_MUST_CHECK int rare_write_init(void);

/*
 * rare_write_init_caps - rare_write_init() for a program that relies on
 * RARE_WRITE_CAP_* @need_caps (for example rare_write_begin() around a
 * function body needs RARE_WRITE_CAP_BEGIN_END). The environment variable
 * RAREWRITE_NEED="begin_end[,thread_local]" adds to @need_caps, so a
 * program can be run so without a rebuild.
 *
 * "auto" then picks a backend that has them: pkey where the CPU has
 * protection keys, else mprotect for begin_end (every thread of the process
 * can write while a window is open, and each window costs two mprotect()
 * calls: slower and weaker than pwrite, the plain "auto" choice, which has
 * no windows). thread_local is pkey only. Returns -ENOTSUP, after one line
 * on stderr, when no backend here has them, when the backend named in
 * RAREWRITE_BACKEND lacks them, or when an earlier init chose a backend
 * without them; -EINVAL for unknown bits or names in RAREWRITE_NEED.
 * Otherwise as rare_write_init(), which is rare_write_init_caps(0).
 */
RAREWRITE_API RAREWRITE_MUST_CHECK int rare_write_init_caps(unsigned need_caps);

/* Name of the backend in force, or "none" before a successful init or
 * the first rare_write_seal_self(), which chooses it for init. */
RAREWRITE_API const char *rare_write_backend(void);

/* RARE_WRITE_CAP_* bits of the backend in force; 0 before init. */
RAREWRITE_API unsigned rare_write_caps(void);

/*
 * rare_write_is_protected - 1 if [@addr, @addr + @len) lies wholly inside
 * the caller-writable part of one protected region (a __wr_rare section or
 * a rare_pool's objects), so that rare_write() and friends accept it; 0
 * otherwise (ordinary memory, or straddling a region's edge, or a region
 * not protected yet: never 1 for memory a plain store can change, so 0
 * before init except for what rare_write_seal_self() sealed). @len 0 asks
 * about the byte at @addr. Lock-free and async-signal-safe.
 *
 * For code handed a pointer that may or may not be protected, such as a
 * caller-owned struct linked into a protected list:
 *
 *	if (rare_write_is_protected(&n->next, sizeof(n->next)))
 *		rare_write(n->next, next);
 *	else
 *		n->next = next;
 */
RAREWRITE_API int rare_write_is_protected(const void *addr, size_t len);

/*
 * rare_write_memcpy - copy @len bytes from @src to protected memory at @dst.
 *
 * [@dst, @dst + @len) must lie wholly inside one protected region (a
 * __wr_rare section or a rare_pool). An aligned 1, 2, 4 or 8 byte write is
 * seen by concurrent readers as the old or the new value, never a mix.
 * Before rare_write_init() this is a checked memcpy().
 */
RAREWRITE_API void rare_write_memcpy(void *dst, const void *src, size_t len)
	RAREWRITE_NONNULL(1, 2);

/* rare_write_memset - like memset(), on protected memory; same rules. */
RAREWRITE_API void rare_write_memset(void *dst, int c, size_t len)
	RAREWRITE_NONNULL(1);

/*
 * rare_write - assign @val to the protected lvalue @var; evaluates to @var.
 *
 * @val is converted as if it initialised an object of @var's type, so a
 * value of an incompatible type is a compile error or -Wall warning.
 * @var is evaluated once.
 *
 * Bitfields: @var must have an address, so a bitfield is a compile error.
 * Write the containing struct instead: through rare_write_map() on it, or
 * by copying it, changing the field in the copy and rare_write()-ing the
 * whole struct back.
 *
 * Memory ordering: rare_write() is a function call (a compiler barrier)
 * that returns once the new value is visible to every thread; an aligned
 * 1/2/4/8-byte write is one store, never torn. On x86-64 that makes it a
 * release store: it can replace __atomic_store_n(..., __ATOMIC_RELEASE) to
 * publish an object initialised before it, and lock-free readers pair it
 * with an acquire load as usual. On other architectures put
 * __atomic_thread_fence(__ATOMIC_RELEASE) before it. It is not a
 * read-modify-write: see rare_write_add().
 */
#define rare_write(var, val)                                                   \
	(__extension__({                                                       \
		__typeof__(var) *rare_write_dst_ = &(var);                     \
		__typeof__(var) rare_write_val_ = (val);                       \
		rare_write_memcpy((void *)rare_write_dst_, &rare_write_val_,   \
				  sizeof(var));                                \
		*rare_write_dst_;                                              \
	}))

/*
 * rare_write_add - add @delta to the protected integer @var (1, 2, 4 or 8
 * bytes, signed or unsigned, wrapping like unsigned arithmetic); evaluates
 * to the new value. `var++` is a load and a store: rare_write(var, var + 1)
 * from two threads can lose an increment. Every rare_write_add() in the
 * process is serialised (one lock, signals blocked while held), so
 * concurrent adds all land; a plain rare_write() racing with it to the same
 * variable is not serialised, so guard other read-modify-writes (a flag
 * set, a list splice) with a lock of your own around the read and the
 * rare_write(). Readers see the old or the new value, never a mix.
 */
RAREWRITE_API unsigned long long rare_write_add_(void *dst, size_t size,
						 unsigned long long delta)
	RAREWRITE_NONNULL(1);
#ifdef __cplusplus
#define rare_write_static_assert_ static_assert
#else
#define rare_write_static_assert_ _Static_assert
#endif
#define rare_write_add(var, delta)                                             \
	(__extension__({                                                       \
		__typeof__(var) *rare_write_add_dst_ = &(var);                 \
		rare_write_static_assert_(                                     \
			sizeof(var) == 1 || sizeof(var) == 2 ||                \
				sizeof(var) == 4 || sizeof(var) == 8,          \
			"rare_write_add: integers of 1, 2, 4, 8 bytes");       \
		(__typeof__(var))rare_write_add_((void *)rare_write_add_dst_,  \
						 sizeof(var),                  \
						 (unsigned long long)(delta)); \
	}))

/*
 * rare_write_begin/end - open and close a window in which the calling
 * thread may store directly to protected memory. Windows nest; each begin
 * needs its end on the same thread. Only on backends with
 * RARE_WRITE_CAP_BEGIN_END (pkey, mprotect); elsewhere begin aborts (ask
 * for a backend that has them with RAREWRITE_NEED=begin_end or
 * rare_write_init_caps()).
 * Whether other threads can write during the window is what
 * RARE_WRITE_CAP_THREAD_LOCAL says. Keep windows short and do not call
 * fork() or block inside one.
 */
RAREWRITE_API void rare_write_begin(void);
RAREWRITE_API void rare_write_end(void);

/*
 * rare_write_map - obtain a writable view of [@addr, @addr + @len).
 *
 * Write through .addr, then call rare_write_unmap() to publish. Depending on
 * the backend .addr is @addr itself (pkey, mprotect: a window is open on the
 * calling thread), a fresh writable alias (shadow) or a private staging copy
 * that unmap commits in one write (pwrite, process). Open maps may not
 * overlap each other. The other members are private to the library.
 */
struct rare_write_mapping {
	void *addr;
	void *target;
	size_t len;
	unsigned long token;
};
RAREWRITE_API struct rare_write_mapping rare_write_map(void *addr, size_t len)
	RAREWRITE_NONNULL(1);
RAREWRITE_API void rare_write_unmap(struct rare_write_mapping m);

/*
 * Protected pools: dynamic memory under the same protection as __wr_rare.
 *
 * rare_pool_create() reserves @capacity bytes of object space (rounded up;
 * allocator bookkeeping lives in protected memory too) on the process-wide
 * backend. It returns NULL with errno set (EINVAL for capacity 0, ENOMEM,
 * or the failing system call's errno).
 *
 * A pool created before rare_write_init() is plain writable memory until
 * init, which protects it in place like the __wr_rare section (on the
 * pool's own backend when it names one): a program can build its
 * protected heap objects (a registry, an extension array) with plain
 * stores at start-up and seal everything at once. Its addresses do not
 * change at init.
 *
 * rare_alloc() returns zeroed protected memory of @size bytes, aligned to
 * 16 bytes (to the page for sizes above 2 KiB), or NULL with errno ENOMEM
 * when the pool is full; size 0 returns NULL with errno EINVAL.
 * rare_free() on NULL does nothing; freeing a pointer the pool did not hand
 * out, or freeing twice, aborts. Freed memory is zeroed at once.
 * rare_pool_destroy() unmaps the pool; NULL does nothing.
 */
struct rare_pool;
RAREWRITE_API struct rare_pool *rare_pool_create(size_t capacity);

/*
 * Levels of rareness: a pool may live on a backend of its own, so that one
 * process protects hot data with a fast backend and its most sensitive data
 * with the strongest one:
 *
 *	struct rare_pool *keys = rare_pool_create_with(
 *		1 << 20, &(struct rare_pool_opts){ .backend = "process" });
 *
 * @backend takes the names of RAREWRITE_BACKEND ("pkey", "pwrite",
 * "shadow", "mprotect", "process", "auto"); NULL, or a NULL @opts, means
 * the process-wide backend, exactly as rare_pool_create(). The __wr_rare
 * section always stays on the process-wide backend. A backend is set up on
 * the first pool that names it. Besides the errors of rare_pool_create(),
 * returns NULL with errno EINVAL for an unknown name and ENOTSUP for a
 * backend this machine lacks (never a silent substitute), and EINVAL for
 * unknown @flags.
 *
 * rare_write_caps() and rare_write_begin()/rare_write_end() are those of
 * the process-wide backend: a window lets the calling thread store directly
 * into regions of that backend only; pools of other backends are written
 * with rare_write() and friends (which may mix pools of different backends
 * in one call) or rare_write_map().
 */
struct rare_pool_opts {
	const char *backend; /* NULL: the process-wide backend */
	unsigned flags;	     /* RARE_POOL_* */
};

/*
 * RARE_POOL_SEAL: seal the pool's read-only view with mseal(2) (where the
 * kernel has it, 6.10+) on the backends whose views never change: pwrite,
 * shadow and process. mprotect() (to writable, or pkey_mprotect()),
 * munmap() and mremap() of the view then fail with EPERM. The price:
 * rare_pool_destroy() cannot unmap a sealed view. It zeroes the pool,
 * gives its memory back (pwrite, shadow) or lets the helper forget it
 * (process), and removes it from the library; the address range stays
 * reserved, read-only, until the process exits. So seal pools that live
 * as long as the program. Ignored by pkey (its pools are not sealed) and
 * mprotect (whose mechanism is re-protecting the pages). fork() still gives
 * the child a private copy of a sealed pool.
 */
#define RARE_POOL_SEAL 1u
RAREWRITE_API struct rare_pool *
rare_pool_create_with(size_t capacity, const struct rare_pool_opts *opts);
RAREWRITE_API void *rare_alloc(struct rare_pool *pool, size_t size)
	RAREWRITE_NONNULL(1) __attribute__((malloc, alloc_size(2)));
RAREWRITE_API void rare_free(struct rare_pool *pool, void *obj);

/*
 * rare_realloc - resize the object @obj of @pool to @size bytes, keeping
 * it protected: a growing array of registered extensions behind a
 * protected pointer stays in protected memory. As realloc(): the contents
 * up to the smaller size are kept, bytes beyond the old size are zero (so
 * are bytes given up by shrinking); the result may move, so publish it
 * with rare_write(). NULL @obj is rare_alloc(). Returns NULL with errno
 * ENOMEM (the pool is full; @obj is untouched) or EINVAL (@size 0). A
 * pointer the pool did not hand out aborts, as for rare_free().
 */
RAREWRITE_API void *rare_realloc(struct rare_pool *pool, void *obj, size_t size)
	RAREWRITE_NONNULL(1) __attribute__((alloc_size(3)));
RAREWRITE_API void rare_pool_destroy(struct rare_pool *pool);

#ifdef RAREWRITE_CHECK_WRITES
/* Check mode: protected objects are const; the calls that write them
 * legitimately take them without a warning. */
#define rare_write_memcpy(dst, src, len)                                       \
	(rare_write_memcpy)((void *)(dst), (src), (len))
#define rare_write_memset(dst, c, len)                                         \
	(rare_write_memset)((void *)(dst), (c), (len))
#define rare_write_map(addr, len) (rare_write_map)((void *)(addr), (len))
#endif

/*
 * rare_write_seal_self - called from a shared library (or any object that
 * includes this header), seal that object's own __wr_rare section now,
 * without sealing the program's or other libraries' data; a library
 * protects its state as soon as it is ready, without the program's
 * cooperation. The first seal chooses the backend for the whole process
 * (from RAREWRITE_BACKEND and RAREWRITE_NEED, as init would), protects the
 * library's table and every rare_pool from then on; rare_write_init() later
 * keeps that backend (-ENOTSUP if it lacks capabilities init is asked for)
 * and seals everything left. Idempotent; 0 after init (the section is
 * sealed already) or when the object has no __wr_rare data. Returns a
 * negative errno as rare_write_init() does (after one line on stderr).
 *
 * Until the program calls rare_write_init(), write the sealed section with
 * rare_write(), rare_write_memcpy(), rare_write_memset() or
 * rare_write_map(): a rare_write_begin() window opens nothing before init,
 * so stores inside it fault (with the report). In a static program all
 * objects share one section, so there it seals the program's data too.
 *
 * Several files of one library may include this header: each registers
 * the same section, the first registration wins, and any of them may call
 * rare_write_seal_self(). The registration constructor has priority 101,
 * so it runs before the library's constructors of default priority, in
 * any file and link order. When sealing fails (an environment error: the
 * program's rare_write_init() will meet and report the same), a library
 * goes on, its data writable until the program's init, and keeps the
 * error to return from its own init call; it does not abort.
 */
RAREWRITE_API int rare_write_seal_section_(void *start, void *stop);

/*
 * Internal: each program or shared library that includes this header
 * registers its own __wr_rare section from a constructor, so that
 * rare_write_init() finds them all. Not for direct use.
 */
RAREWRITE_API void rare_write_register_section_(void *start, void *stop);

extern char __start_rarewrite_data[]
	__attribute__((weak, visibility("hidden")));
extern char __stop_rarewrite_data[] __attribute__((weak, visibility("hidden")));

/*
 * Not in librarewrite's own objects: the library has no __wr_rare data,
 * and its dozen files would register nothing a dozen times. In a program
 * or library of several files each file registers the same section; the
 * first call wins, the others find it registered. Priority 101, the first
 * a program may use: every file's registration runs before the object's
 * constructors of default priority, whatever the link order, so a
 * library's sealing constructor always finds its section registered.
 */
#ifndef RAREWRITE_BUILDING_LIBRARY
__attribute__((constructor(101), unused)) static void
rare_write_register_this_object_(void)
{
	rare_write_register_section_(__start_rarewrite_data,
				     __stop_rarewrite_data);
}
#endif

static inline __attribute__((unused, warn_unused_result)) int
rare_write_seal_self(void)
{
	return rare_write_seal_section_(__start_rarewrite_data,
					__stop_rarewrite_data);
}

/*
 * rare_write_backends - the @i-th backend of this library (0 first, in the
 * manual's order) by the name RAREWRITE_BACKEND takes, NULL past the last;
 * its RARE_WRITE_CAP_* bits in *@caps unless @caps is NULL. See
 * rare_write_backends(3).
 */
RAREWRITE_API const char *rare_write_backends(unsigned i, unsigned *caps);

#ifdef __cplusplus
}
#endif

#endif /* RAREWRITE_H */
