// SPDX-License-Identifier: MIT
/*
 * test_cxx.cc - the public headers as C++ (g++ and clang++, built by
 * tests/contracts.mk with -Wall -Wextra -Werror) and rarewrite.hpp, run
 * once per backend (RAREWRITE_BACKEND set by the make target). Crash cases
 * fork a child and check its signal. Ends with "N passed, N failed".
 */
#include <rarewrite.h>
#include <rarewrite.hpp>
#include <rarewrite/list.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

namespace
{

struct limits {
	int soft;
	long hard;
};

__wr_rare rarewrite::protected_value<int> answer{42};
__wr_rare rarewrite::protected_value<limits> lim{limits{1, 2}};
__wr_rare unsigned long counter;
__wr_rare int table[8];
struct rare_list_head head __wr_rare = RARE_LIST_HEAD_INIT(head);
struct rare_list_head node __wr_rare;
int plain_int;

int passed, failed;

void check(bool ok, const char *what)
{
	std::printf("%s %-10s %s\n", ok ? "ok  " : "FAIL", rare_write_backend(),
		    what);
	(ok ? passed : failed)++;
}

// Runs @f in a child; returns the signal that ended it, or 0.
template <typename F> int child_signal(F f)
{
	std::fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		f();
		_exit(0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

} // namespace

int main()
{
	check(*answer == 42 && lim->hard == 2,
	      "constexpr initial values are in the section");
	int err = rare_write_init();
	if (err) {
		std::printf("skip %s: rare_write_init: %s\n",
			    std::getenv("RAREWRITE_BACKEND"),
			    std::strerror(-err));
		std::printf("0 passed, 0 failed, 1 skipped\n");
		return 0;
	}
	check(rare_write_version() ==
		      RAREWRITE_VERSION_NUMBER(RAREWRITE_VERSION_MAJOR,
					       RAREWRITE_VERSION_MINOR,
					       RAREWRITE_VERSION_PATCH),
	      "rare_write_version() is the header's version");

	answer.write(7);
	check(answer.get() == 7, "protected_value::write lands");
	lim.update([](limits &l) { l.soft = 5; });
	check(lim->soft == 5 && lim->hard == 2, "protected_value::update");
	check(rare_write_is_protected(&answer, sizeof(answer)) == 1,
	      "a __wr_rare protected_value is protected");
	check(child_signal([] { *const_cast<int *>(&answer.get()) = 1; }) ==
		      SIGSEGV,
	      "a store around write() dies by SIGSEGV");

	check(rare_write_add(counter, 3) == 3 && counter == 3,
	      "rare_write_add compiles as C++ and adds");
	rare_write(table[2], 9);
	check(table[2] == 9, "rare_write as C++");
	rare_list_add(&node, &head);
	check(head.next == &node && node.prev == &head, "rare_list_add as C++");

	{
		rarewrite::scoped_mapping<limits> m(*lim);
		m->hard = 99;
	}
	check(lim->hard == 99, "scoped_mapping publishes at scope exit");

	if (rare_write_caps() & RARE_WRITE_CAP_BEGIN_END) {
		{
			rarewrite::scoped_window w;
			table[0] = 1;
			{
				rarewrite::scoped_window inner;
				table[1] = 2;
			}
			table[3] = 3; // the outer window is still open
		}
		check(table[0] == 1 && table[1] == 2 && table[3] == 3,
		      "scoped_window: direct stores land, windows nest");
		check(child_signal([] { table[4] = 4; }) == SIGSEGV,
		      "scoped_window closed at scope exit");
	}
	check(child_signal([] {
		      // protected_value off the section: write() must abort
		      static rarewrite::protected_value<int> stray{0};
		      stray.write(1);
	      }) == SIGABRT,
	      "write() on unprotected memory aborts");
	(void)plain_int;
	std::printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
