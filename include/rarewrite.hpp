// SPDX-License-Identifier: MIT
/*
 * rarewrite.hpp - C++ over <rarewrite.h>, after Chromium's ProtectedMemory
 * and AutoWritableMemory: a protected value that only write() changes, a
 * scoped window and a scoped mapping. Header-only; link as for C
 * (pkg-config rarewrite, or CMake's rarewrite::rarewrite).
 *
 *	static __wr_rare rarewrite::protected_value<int> limit{10};
 *
 *	int main()
 *	{
 *		if (rare_write_init() < 0)
 *			return 1;
 *		limit.write(20);        // the only way in
 *		return *limit;          // reads are plain loads
 *	}
 *
 * protected_value<T> needs static storage in a __wr_rare section (or a
 * rare_pool): write() goes through rare_write_memcpy(), which aborts
 * naming the call for memory that is not protected. Its constructors are
 * constexpr, so the initial value is in the section at link time and no
 * constructor stores to sealed memory; one that would run at start-up
 * instead does not build: a default T that is not a constant expression
 * with every compiler, any initial value that is not one with clang++, or
 * with every compiler where the declaration starts with
 * RAREWRITE_CONSTINIT (protected_value(3)). It has no way to store but
 * write() and update(), in any build, so C++ code needs no check mode for
 * it.
 */
#ifndef RAREWRITE_HPP
#define RAREWRITE_HPP

#include <rarewrite.h>

#include <type_traits>

/*
 * Before a declaration: the compiler refuses it unless it is constant
 * initialised (constinit; g++'s __constinit before C++20; clang's
 * require_constant_initialization), so that a protected_value never
 * becomes a start-up store: protected_value(3).
 */
#if __cplusplus >= 202002L
#define RAREWRITE_CONSTINIT constinit
#elif defined(__clang__)
#define RAREWRITE_CONSTINIT __attribute__((require_constant_initialization))
#elif defined(__GNUC__) && __GNUC__ >= 10
#define RAREWRITE_CONSTINIT __constinit
#else
#define RAREWRITE_CONSTINIT
#endif

namespace rarewrite
{

/*
 * scoped_window - rare_write_begin() now, rare_write_end() when the scope
 * ends (exceptions included). Backends with RARE_WRITE_CAP_BEGIN_END
 * only, as rare_write_begin(3) says.
 */
class scoped_window
{
      public:
	scoped_window()
	{
		rare_write_begin();
	}
	~scoped_window()
	{
		rare_write_end();
	}
	scoped_window(const scoped_window &) = delete;
	scoped_window &operator=(const scoped_window &) = delete;
};

/*
 * scoped_mapping<T> - a writable view of one protected T
 * (rare_write_map(3)); the destructor unmaps, which publishes the stores
 * on the backends that stage them.
 */
template <typename T> class scoped_mapping
{
	static_assert(std::is_trivially_copyable<T>::value,
		      "scoped_mapping: T must be trivially copyable");
	struct rare_write_mapping m_;

      public:
	explicit scoped_mapping(const T &obj)
	    : m_((rare_write_map)(const_cast<T *>(&obj), sizeof(T)))
	{
	}
	~scoped_mapping()
	{
		rare_write_unmap(m_);
	}
	scoped_mapping(const scoped_mapping &) = delete;
	scoped_mapping &operator=(const scoped_mapping &) = delete;
	T &operator*() const
	{
		return *static_cast<T *>(m_.addr);
	}
	T *operator->() const
	{
		return static_cast<T *>(m_.addr);
	}
};

namespace detail
{

/*
 * Start-up stores refused at build time. A default-constructed T must be a
 * constant expression (the static_assert in protected_value(), every
 * compiler). A value given to the other constructor is checked by clang++
 * 14 and later: at run time __builtin_is_constant_evaluated() is false and
 * the call below, declared with the error attribute and never defined, is
 * compiled, which is the build error. g++ (12) also calls it for constant
 * initialisation by a constructor, so it is not used there: with g++ the
 * value is checked only where the declaration says RAREWRITE_CONSTINIT.
 */
template <typename T> constexpr bool constant_expression(const T &)
{
	return true;
}

#if defined(__clang__) && __clang_major__ >= 14
void protected_value_initialised_at_run_time() __attribute__((
	error("rarewrite::protected_value<T> is initialised at run time "
	      "(its initial value is not a constant expression): a start-up "
	      "store to protected memory; make it constexpr "
	      "(protected_value(3))")));

template <typename T> constexpr const T &constant_initialiser(const T &v)
{
	return __builtin_is_constant_evaluated()
		       ? v
		       : (protected_value_initialised_at_run_time(), v);
}
#else
template <typename T> constexpr const T &constant_initialiser(const T &v)
{
	return v;
}
#endif

} // namespace detail

/*
 * protected_value<T> - a T in protected memory. Reads are plain loads
 * (get(), *, ->); write() and update() are the only stores. The members
 * are const: the object is read-only to the language as it is to the
 * hardware, so it can be declared __wr_rare in check mode too.
 */
template <typename T> class protected_value
{
	static_assert(std::is_trivially_copyable<T>::value,
		      "protected_value: T must be trivially copyable "
		      "(it is written with rare_write_memcpy)");
	T value_;

      public:
	/* Constant initialisation only: see detail:: above. */
	constexpr protected_value() : value_()
	{
		static_assert(detail::constant_expression(T()),
			      "protected_value<T>: T() must be a constant "
			      "expression (a constexpr constructor), else it "
			      "is a start-up store to protected memory");
	}
	constexpr explicit protected_value(const T &v)
	    : value_(detail::constant_initialiser(v))
	{
	}
	protected_value(const protected_value &) = delete;
	protected_value &operator=(const protected_value &) = delete;

	const T &get() const noexcept
	{
		return value_;
	}
	const T &operator*() const noexcept
	{
		return value_;
	}
	/* -> reaches the members of T; of the object T points to for a
	 * pointer T (the pointer is protected, not what it points to). */
	template <typename U = T>
	typename std::enable_if<!std::is_pointer<U>::value, const U *>::type
	operator->() const noexcept
	{
		return &value_;
	}
	template <typename U = T>
	typename std::enable_if<std::is_pointer<U>::value, U>::type
	operator->() const noexcept
	{
		return value_;
	}

	/* One rare_write_memcpy(): an aligned 1/2/4/8-byte T is never torn. */
	void write(const T &v) const
	{
		(rare_write_memcpy)(const_cast<T *>(&value_), &v, sizeof(T));
	}

	/*
	 * Copy, let @f change the copy, write it back: not atomic against
	 * another writer (hold a lock of your own around it).
	 */
	template <typename F> void update(F f) const
	{
		T copy = value_;
		f(copy);
		write(copy);
	}
};

} // namespace rarewrite

#endif /* RAREWRITE_HPP */
