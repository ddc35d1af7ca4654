/* SPDX-License-Identifier: MIT */
/*
 * rarewrite.h - data that is read-only at rest and writable only inside a
 * brief window the program opens itself ("rare write", after Kees Cook's
 * 2017 kernel series).
 *
 * Build with `cc prog.c $(pkg-config --cflags --libs rarewrite)`. The
 * manual is the reference; each declaration below has a one-line summary
 * and the page that documents it: rarewrite(7) for the model, backends,
 * environment, linking, fork and signals; rarewrite-porting(7) for porting
 * a program; section 3 for each call and macro (`make check-docs` fails
 * when one has no page); rare_write_version(3) for the ABI rules.
 */
#ifndef RAREWRITE_H
#define RAREWRITE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header, from the file VERSION: rare_write_version(3). */
#define RAREWRITE_VERSION_MAJOR 0
#define RAREWRITE_VERSION_MINOR 2
#define RAREWRITE_VERSION_PATCH 0
/* One number that orders versions: RAREWRITE_VERSION_NUMBER(0, 2, 0). */
#define RAREWRITE_VERSION_NUMBER(major, minor, patch)                          \
	(((major) << 16) | ((minor) << 8) | (patch))

/* Attributes of the API (__wr_rare(3)): exported; result must be checked;
 * pointer arguments that must not be NULL (not inside the library, whose
 * NULL checks must stay). */
#define RAREWRITE_API __attribute__((visibility("default")))
#define RAREWRITE_MUST_CHECK __attribute__((warn_unused_result))
#ifdef RAREWRITE_BUILDING_LIBRARY
#define RAREWRITE_NONNULL(...)
#else
#define RAREWRITE_NONNULL(...) __attribute__((nonnull(__VA_ARGS__)))
#endif

/* The version of the library running: rare_write_version(3). */
RAREWRITE_API unsigned rare_write_version(void);

/*
 * __wr_rare: put a static-storage object in the protected section, read-only
 * once rare_write_init() ran; __wr_rare_extern: the declaration-side
 * spelling. Under -DRAREWRITE_CHECK_WRITES (check mode, compile only) both
 * are const, so every plain store is a compile error: __wr_rare(3).
 */
#ifndef RAREWRITE_CHECK_WRITES
#define __wr_rare __attribute__((section("rarewrite_data"), used))
#define __wr_rare_extern
#else
#define __wr_rare const __attribute__((section("rarewrite_data"), used))
#define __wr_rare_extern const
#endif
/* The same two without a reserved identifier: __wr_rare(3). */
#define WR_RARE __wr_rare
#define WR_RARE_EXTERN __wr_rare_extern

/* A shared library's protected variable exported through an accessor
 * instead of a symbol (no copy relocation): __wr_rare(3). */
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

/* Choose the backend (RAREWRITE_BACKEND) and seal every __wr_rare section;
 * 0 or -errno: rare_write_init(3). */
RAREWRITE_API RAREWRITE_MUST_CHECK int rare_write_init(void);

/* rare_write_init() for a program that needs RARE_WRITE_CAP_* @need_caps
 * (and RAREWRITE_NEED): rare_write_init(3). */
RAREWRITE_API RAREWRITE_MUST_CHECK int rare_write_init_caps(unsigned need_caps);

/* Name of the backend in force, or "none": rare_write_init(3). */
RAREWRITE_API const char *rare_write_backend(void);

/* RARE_WRITE_CAP_* bits of the backend in force; 0 before init. */
RAREWRITE_API unsigned rare_write_caps(void);

/* 1 if [@addr, @addr + @len) lies inside one protected region, else 0;
 * async-signal-safe: rare_write_is_protected(3). */
RAREWRITE_API int rare_write_is_protected(const void *addr, size_t len);

/* Copy @len bytes from @src to protected memory at @dst: rare_write(3). */
RAREWRITE_API void rare_write_memcpy(void *dst, const void *src, size_t len)
	RAREWRITE_NONNULL(1, 2);

/* Like memset(), on protected memory: rare_write(3). */
RAREWRITE_API void rare_write_memset(void *dst, int c, size_t len)
	RAREWRITE_NONNULL(1);

/* Assign @val to the protected lvalue @var, type-checked; evaluates to @var:
 * rare_write(3). */
#define rare_write(var, val)                                                   \
	(__extension__({                                                       \
		__typeof__(var) *rare_write_dst_ = &(var);                     \
		__typeof__(var) rare_write_val_ = (val);                       \
		rare_write_memcpy((void *)rare_write_dst_, &rare_write_val_,   \
				  sizeof(var));                                \
		*rare_write_dst_;                                              \
	}))

/* Add @delta to the protected integer @var, serialised; evaluates to the
 * new value: rare_write_add(3). */
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

/* Set the bits @bits in the protected integer @var (var |= bits),
 * serialised with rare_write_add(); evaluates to the new value:
 * rare_write_or(3). */
RAREWRITE_API unsigned long long rare_write_or_(void *dst, size_t size,
						unsigned long long bits)
	RAREWRITE_NONNULL(1);
#define rare_write_or(var, bits)                                               \
	(__extension__({                                                       \
		__typeof__(var) *rare_write_or_dst_ = &(var);                  \
		rare_write_static_assert_(                                     \
			sizeof(var) == 1 || sizeof(var) == 2 ||                \
				sizeof(var) == 4 || sizeof(var) == 8,          \
			"rare_write_or: integers of 1, 2, 4, 8 bytes");        \
		(__typeof__(var))rare_write_or_((void *)rare_write_or_dst_,    \
						sizeof(var),                   \
						(unsigned long long)(bits));   \
	}))

/* Keep only the bits @mask of the protected integer @var (var &= mask),
 * serialised with rare_write_add(); evaluates to the new value:
 * rare_write_or(3). */
RAREWRITE_API unsigned long long rare_write_and_(void *dst, size_t size,
						 unsigned long long mask)
	RAREWRITE_NONNULL(1);
#define rare_write_and(var, mask)                                              \
	(__extension__({                                                       \
		__typeof__(var) *rare_write_and_dst_ = &(var);                 \
		rare_write_static_assert_(                                     \
			sizeof(var) == 1 || sizeof(var) == 2 ||                \
				sizeof(var) == 4 || sizeof(var) == 8,          \
			"rare_write_and: integers of 1, 2, 4, 8 bytes");       \
		(__typeof__(var))rare_write_and_((void *)rare_write_and_dst_,  \
						 sizeof(var),                  \
						 (unsigned long long)(mask));  \
	}))

/* Open and close a window of direct stores on the calling thread, on
 * backends with RARE_WRITE_CAP_BEGIN_END: rare_write_begin(3). */
RAREWRITE_API void rare_write_begin(void);
RAREWRITE_API void rare_write_end(void);

/* A writable view of [@addr, @addr + @len) at .addr, published by
 * rare_write_unmap(); the other members are private: rare_write_map(3). */
struct rare_write_mapping {
	void *addr;
	void *target;
	size_t len;
	unsigned long token;
};
RAREWRITE_API struct rare_write_mapping rare_write_map(void *addr, size_t len)
	RAREWRITE_NONNULL(1);
RAREWRITE_API void rare_write_unmap(struct rare_write_mapping m);

/* A pool of protected dynamic memory on the process-wide backend, or NULL
 * with errno: rare_pool_create(3). */
struct rare_pool;
RAREWRITE_API struct rare_pool *rare_pool_create(size_t capacity);

/* Options of rare_pool_create_with(): a backend of the pool's own (levels
 * of rareness), RARE_POOL_* flags: rare_pool_create(3). */
struct rare_pool_opts {
	const char *backend; /* NULL: the process-wide backend */
	unsigned flags;	     /* RARE_POOL_* */
};

/* Seal the pool's read-only view with mseal(2): rare_pool_create(3). */
#define RARE_POOL_SEAL 1u
/* rare_pool_create() with options: rare_pool_create(3). */
RAREWRITE_API struct rare_pool *
rare_pool_create_with(size_t capacity, const struct rare_pool_opts *opts);
/* Zeroed protected memory of @size bytes from @pool: rare_alloc(3). */
RAREWRITE_API void *rare_alloc(struct rare_pool *pool, size_t size)
	RAREWRITE_NONNULL(1) __attribute__((malloc, alloc_size(2)));
/* Give an object back to its pool, zeroed: rare_alloc(3). */
RAREWRITE_API void rare_free(struct rare_pool *pool, void *obj);

/* Resize an object of @pool, keeping it protected: rare_alloc(3). */
RAREWRITE_API void *rare_realloc(struct rare_pool *pool, void *obj, size_t size)
	RAREWRITE_NONNULL(1) __attribute__((alloc_size(3)));
/* The longest pool name, with its NUL: rare_pool_set_name(3). */
#define RARE_POOL_NAME_MAX 32
/* Name @pool (printable ASCII, shorter than RARE_POOL_NAME_MAX; NULL: no
 * name) for the fault report; 0 or -errno: rare_pool_set_name(3). */
RAREWRITE_API RAREWRITE_MUST_CHECK int
rare_pool_set_name(struct rare_pool *pool, const char *name)
	RAREWRITE_NONNULL(1);
/* Unmap a pool and everything allocated from it: rare_pool_create(3). */
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

/* A plain store to protected @var meant for before rare_write_init() (it
 * faults after), accepted by check mode: rare_write_before_init(3). */
#ifndef RAREWRITE_CHECK_WRITES
#define rare_write_before_init(var, val) ((var) = (val))
#else
#define rare_write_before_init(var, val)                                       \
	(__extension__({                                                       \
		__typeof__(var) rare_write_val_ = (val);                       \
		(void)sizeof(&(var));                                          \
		rare_write_val_;                                               \
	}))
#endif

/* Internal: seal one object's section, for rare_write_seal_self() below:
 * rare_write_seal_self(3). */
RAREWRITE_API int rare_write_seal_section_(void *start, void *stop);

/* Internal: register an object's section, from the constructor below:
 * __wr_rare(3). */
RAREWRITE_API void rare_write_register_section_(void *start, void *stop);

extern char __start_rarewrite_data[]
	__attribute__((weak, visibility("hidden")));
extern char __stop_rarewrite_data[] __attribute__((weak, visibility("hidden")));

/* Every program or library that includes this header registers its own
 * __wr_rare section, before its default-priority constructors (priority
 * 101); not in librarewrite's own objects, which have none. */
#ifndef RAREWRITE_BUILDING_LIBRARY
__attribute__((constructor(101), unused)) static void
rare_write_register_this_object_(void)
{
	rare_write_register_section_(__start_rarewrite_data,
				     __stop_rarewrite_data);
}
#endif

/* Seal the calling object's own __wr_rare section now (a library protecting
 * itself): rare_write_seal_self(3). */
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
