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
 * constructor stores to sealed memory. It has no way to store but write()
 * and update(), in any build, so C++ code needs no check mode for it.
 */
#ifndef RAREWRITE_HPP
#define RAREWRITE_HPP

#include <rarewrite.h>

#include <type_traits>

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
	constexpr protected_value() : value_()
	{
	}
	constexpr explicit protected_value(const T &v) : value_(v)
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
	const T *operator->() const noexcept
	{
		return &value_;
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
