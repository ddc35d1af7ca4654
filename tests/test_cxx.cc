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
#include <string>
#include <sys/wait.h>
#include <unistd.h>

// A protected object and the function storing to it, in a namespace: the
// fault report names both demangled.
namespace app
{
__wr_rare long budget;
namespace detail
{
struct ledger {
	static WR_RARE_EXTERN long total; // __wr_rare on the definition
};
__wr_rare long ledger::total;
} // namespace detail

__attribute__((noinline)) void Spend(long amount)
{
	*const_cast<volatile long *>(&budget) = amount;
}
__attribute__((noinline)) void Book(long amount)
{
	*const_cast<volatile long *>(&detail::ledger::total) = amount;
}
} // namespace app

namespace
{

struct metrics {
	int reports;
	int Report() const
	{
		return reports + 1;
	}
};
metrics the_metrics{4};
// -> on a protected pointer reaches the object pointed to
RAREWRITE_CONSTINIT __wr_rare rarewrite::protected_value<metrics *> g_metrics{
	&the_metrics};

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

// Runs @f in a child with its standard error into a pipe: what it wrote.
template <typename F> std::string child_stderr(F f)
{
	int p[2];
	std::string text;
	char buf[512];
	ssize_t n;

	if (pipe(p))
		return text;
	std::fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 2);
		f();
		_exit(0);
	}
	close(p[1]);
	while ((n = read(p[0], buf, sizeof(buf))) > 0)
		text.append(buf, static_cast<size_t>(n));
	close(p[0]);
	waitpid(pid, nullptr, 0);
	return text;
}

bool report_names(const std::string &report, const char *object, const char *pc)
{
	bool ok = report.find(object) != std::string::npos &&
		  report.find(pc) != std::string::npos;

	if (!ok)
		std::printf("# report: %s# want %s and %s\n", report.c_str(),
			    object, pc);
	return ok;
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
	check(g_metrics->Report() == 5 && g_metrics->reports == 4,
	      "protected_value<T *>: -> reaches the object pointed to");

	check(report_names(child_stderr([] { app::Spend(1); }),
			   "(app::budget+0x0 in ", "by pc app::Spend(long)+0x"),
	      "the fault report demangles a namespace object and function");
	check(report_names(child_stderr([] { app::Book(1); }),
			   "(app::detail::ledger::total+0x0 in ",
			   "by pc app::Book(long)+0x"),
	      "the fault report demangles a static member");
	(void)plain_int;
	std::printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
