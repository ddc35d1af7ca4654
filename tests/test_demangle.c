// SPDX-License-Identifier: MIT
/*
 * The fault report's demangler (src/demangle.c, compiled in here: it is
 * hidden in the library): the Itanium subset it claims gives c++filt's
 * text (less a template function's return type), compiler suffixes are
 * dropped or said as clones, and anything outside the subset, or broken,
 * is refused so that the report prints the symbol as it is.
 * tests/test_cxx.cc checks the report of a real C++ program.
 */
#include "harness.h"

#include "../src/demangle.c"

static const struct {
	const char *sym, *want; /* want NULL: printed as it is */
} demangle_cases[] = {
	{"_ZN3app6budgetE", "app::budget"},
	{"_ZN3app5SpendEl", "app::Spend(long)"},
	{"_ZN3app6detail6Ledger5totalE", "app::detail::Ledger::total"},
	{"_ZNK3app6Ledger5totalEv", "app::Ledger::total() const"},
	{"_ZN3app6LedgerC2Ev", "app::Ledger::Ledger()"},
	{"_ZN3app6LedgerD0Ev", "app::Ledger::~Ledger()"},
	{"_ZN12_GLOBAL__N_16budgetE", "(anonymous namespace)::budget"},
	{"_ZL7counter", "counter"},
	{"_Z4copyPKcPcm", "copy(char const*, char*, unsigned long)"},
	{"_ZN3app4sendERKNS_7MessageEPS0_",
	 "app::send(app::Message const&, app::Message*)"},
	{"_ZNSt6vectorIiSaIiEE9push_backEOi",
	 "std::vector<int, std::allocator<int> >::push_back(int&&)"},
	{"_ZN3app5TableILi4EE3getEv", "app::Table<4>::get()"},
	{"_ZN3app3maxIiEET_S1_S1_", NULL}, /* T_: outside the subset */
	{"_ZN3app3maxIiEEiii", "app::max<int>(int, int)"},
	{"_ZNKSs4sizeEv", "std::basic_string<char, std::char_traits<char>, "
			  "std::allocator<char> >::size() const"},
	/* suffixes */
	{"_ZN3app6budgetE.lto_priv.0", "app::budget"},
	{"_ZN3app5SpendEl.llvm.8812345", "app::Spend(long)"},
	{"_ZN3app5SpendEl.constprop.0",
	 "app::Spend(long) [clone .constprop.0]"},
	{"_ZN3app5SpendEl.isra.0.cold",
	 "app::Spend(long) [clone .isra.0] [clone .cold]"},
	{"handlers.lto_priv.0", "handlers"},
	/* C names, and what is refused */
	{"handlers", NULL},
	{"counter.1", NULL},
	{"_ZZ4mainE1x", NULL},	      /* a local name */
	{"_ZN3appplERKS_", NULL},     /* an operator */
	{"_Z3fooS_", NULL},	      /* a substitution never made */
	{"_ZN3app", NULL},	      /* cut short */
	{"_ZN3app6budgetEXYZ", NULL}, /* trailing garbage */
	{"_Z99short", NULL},	      /* a length past the end */
	{"_Z", NULL},
	{"", NULL},
};

TEST(demangle_the_report_subset, EXPECT_PASS)
{
	char out[512];

	for (size_t i = 0;
	     i < sizeof(demangle_cases) / sizeof(demangle_cases[0]); i++) {
		bool ok = rw_demangle(demangle_cases[i].sym, out, sizeof(out));
		const char *want = demangle_cases[i].want;

		if (ok != (want != NULL) || (ok && strcmp(out, want)))
			fprintf(stderr, "%s: got %s, want %s\n",
				demangle_cases[i].sym, ok ? out : "(refused)",
				want ? want : "(refused)");
		CHECK(ok == (want != NULL));
		CHECK(!ok || !strcmp(out, want));
	}
	/* too small a buffer: refused, never cut */
	CHECK(!rw_demangle("_ZN3app6budgetE", out, 11));
	CHECK(rw_demangle("_ZN3app6budgetE", out, 12) &&
	      !strcmp(out, "app::budget"));
}

/* Deep or long input stays inside its buffers: refused, no crash. */
TEST(demangle_bounded, EXPECT_PASS)
{
	char sym[600], out[64];
	size_t n = 0;

	n += (size_t)snprintf(sym + n, sizeof(sym) - n, "_Z1f");
	while (n + 2 < sizeof(sym))
		sym[n++] = 'P';
	sym[n++] = 'i';
	sym[n] = 0;
	CHECK(!rw_demangle(sym, out, sizeof(out)));
	n = (size_t)snprintf(sym, sizeof(sym), "_ZN");
	while (n + 8 < sizeof(sym))
		n += (size_t)snprintf(sym + n, sizeof(sym) - n, "3abc");
	snprintf(sym + n, sizeof(sym) - n, "E");
	CHECK(!rw_demangle(sym, out, sizeof(out)));
}
