// SPDX-License-Identifier: MIT
/*
 * demangle.c - a small Itanium C++ ABI demangler for the fault report.
 *
 * The report (fault.c, symbolize.c) is written inside a SIGSEGV handler:
 * no malloc, no libstdc++'s __cxa_demangle. This one works in the caller's
 * buffers with bounded loops and bounded recursion, and understands the
 * names a protected object or the function storing to it usually has:
 * nested and unscoped names, the anonymous namespace, internal linkage
 * (_ZL), constructors and destructors, const member functions, parameter
 * types (builtins, cv-qualifiers, pointers, references, class types),
 * template arguments that are types or integers, the std:: abbreviations
 * and substitutions (S_, S0_, ...). Anything else (operators, local names,
 * template parameters, function and array types, special names) fails the
 * whole name, and the caller prints it mangled: never a half-read name.
 *
 * Compiler suffixes: ".lto_priv.N", ".llvm.N" and ".localalias" rename the
 * same entity and are dropped (from C names too); GCC's clones
 * (".constprop.N", ".isra.N", ".part.N", ".cold") are code of their own and
 * are said as c++filt says them: "f(int) [clone .constprop.0]".
 */
#include <stdint.h>

#include "demangle.h"

#define DM_MAX_SUBS 32
#define DM_MAX_DEPTH 16
#define DM_OUT_MAX 512

struct dm {
	const char *s, *end; /* the mangled name less its suffixes */
	char out[DM_OUT_MAX];
	size_t len;
	bool bad;
	unsigned depth;
	unsigned nr_subs;
	struct {
		uint16_t start, end;
	} subs[DM_MAX_SUBS];
	uint16_t last_start, last_end; /* last source name: ctors, dtors */
};

static size_t dm_strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

static bool dm_prefix(const char *s, const char *end, const char *p)
{
	for (; *p; s++, p++)
		if (s >= end || *s != *p)
			return false;
	return true;
}

static char peek(const struct dm *d)
{
	return d->s < d->end ? *d->s : 0;
}

static void put_n(struct dm *d, const char *s, size_t n)
{
	if (d->len + n >= sizeof(d->out)) {
		d->bad = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
		d->out[d->len++] = s[i];
}

static void put(struct dm *d, const char *s)
{
	put_n(d, s, dm_strlen(s));
}

/* Copy out[start, end) to the end of the output. */
static void put_again(struct dm *d, size_t start, size_t end)
{
	if (d->len + (end - start) >= sizeof(d->out)) {
		d->bad = true;
		return;
	}
	for (size_t i = start; i < end; i++)
		d->out[d->len++] = d->out[i];
}

/* out[start, len) is a substitution candidate. */
static void add_sub(struct dm *d, size_t start)
{
	if (d->nr_subs == DM_MAX_SUBS) {
		d->nr_subs++; /* later references past the table fail */
		return;
	}
	if (d->nr_subs > DM_MAX_SUBS)
		return;
	d->subs[d->nr_subs].start = (uint16_t)start;
	d->subs[d->nr_subs].end = (uint16_t)d->len;
	d->nr_subs++;
}

/* <number>: decimal, no leading zero, bounded by what is left. */
static size_t number(struct dm *d)
{
	size_t n = 0;

	if (peek(d) < '0' || peek(d) > '9' || (peek(d) == '0')) {
		d->bad = true;
		return 0;
	}
	while (peek(d) >= '0' && peek(d) <= '9') {
		n = n * 10 + (size_t)(*d->s++ - '0');
		if (n > (size_t)(d->end - d->s)) {
			d->bad = true;
			return 0;
		}
	}
	return n;
}

/* <source-name> ::= <length> <identifier> */
static void source_name(struct dm *d)
{
	size_t n = number(d);

	if (d->bad || n > (size_t)(d->end - d->s)) {
		d->bad = true;
		return;
	}
	d->last_start = (uint16_t)d->len;
	if (dm_prefix(d->s, d->s + n, "_GLOBAL__N"))
		put(d, "(anonymous namespace)");
	else
		put_n(d, d->s, n);
	d->last_end = (uint16_t)d->len;
	d->s += n;
}

/* <substitution> ::= S_ | S <seq-id> _ | Sa | Sb | Ss | Si | So | Sd */
static void substitution(struct dm *d)
{
	/* the text inline, no pointers: the table stays in .rodata */
	static const struct {
		char c;
		char text[72];
	} abbrev[] = {
		{'a', "std::allocator"},
		{'b', "std::basic_string"},
		{'s', "std::basic_string<char, std::char_traits<char>, "
		      "std::allocator<char> >"},
		{'i', "std::basic_istream<char, std::char_traits<char> >"},
		{'o', "std::basic_ostream<char, std::char_traits<char> >"},
		{'d', "std::basic_iostream<char, std::char_traits<char> >"},
	};
	size_t idx = 0;
	char c;

	d->s++; /* S */
	c = peek(d);
	for (unsigned i = 0; i < sizeof(abbrev) / sizeof(abbrev[0]); i++)
		if (c == abbrev[i].c) {
			d->s++;
			put(d, abbrev[i].text);
			return;
		}
	if (c != '_') {
		while ((c = peek(d)) != '_') {
			if (c >= '0' && c <= '9')
				idx = idx * 36 + (size_t)(c - '0');
			else if (c >= 'A' && c <= 'Z')
				idx = idx * 36 + (size_t)(c - 'A' + 10);
			else {
				d->bad = true;
				return;
			}
			if (idx > DM_MAX_SUBS) {
				d->bad = true;
				return;
			}
			d->s++;
		}
		idx++;
	}
	d->s++; /* _ */
	if (idx >= d->nr_subs || idx >= DM_MAX_SUBS) {
		d->bad = true;
		return;
	}
	put_again(d, d->subs[idx].start, d->subs[idx].end);
}

static void type(struct dm *d);

/* The suffix c++filt gives an integer literal of type @c, or NULL. */
static const char *literal_suffix(char c)
{
	switch (c) {
	case 'i':
		return "";
	case 'j':
		return "u";
	case 'l':
		return "l";
	case 'm':
		return "ul";
	case 'x':
		return "ll";
	case 'y':
		return "ull";
	default:
		return NULL;
	}
}

/* <template-args> ::= I <template-arg>+ E: types and integer literals. */
static void template_args(struct dm *d)
{
	d->s++; /* I */
	put(d, "<");
	for (bool first = true; !d->bad && peek(d) != 'E'; first = false) {
		if (!first)
			put(d, ", ");
		if (peek(d) == 'L') { /* L <builtin type> [n] <number> E */
			d->s++;
			if (peek(d) == 'b' && d->s + 2 < d->end &&
			    (d->s[1] == '0' || d->s[1] == '1') &&
			    d->s[2] == 'E') {
				put(d, d->s[1] == '1' ? "true" : "false");
				d->s += 3;
				continue;
			}
			/* integers, with c++filt's suffixes */
			const char *sfx = literal_suffix(peek(d));

			if (!sfx) {
				d->bad = true;
				return;
			}
			d->s++;
			if (peek(d) == 'n') {
				d->s++;
				put(d, "-");
			}
			if (peek(d) < '0' || peek(d) > '9') {
				d->bad = true;
				return;
			}
			while (peek(d) >= '0' && peek(d) <= '9')
				put_n(d, d->s++, 1);
			put(d, sfx);
			if (peek(d) != 'E') {
				d->bad = true;
				return;
			}
			d->s++;
			continue;
		}
		type(d);
	}
	if (peek(d) != 'E') {
		d->bad = true;
		return;
	}
	d->s++;
	put(d, d->len && d->out[d->len - 1] == '>' ? " >" : ">");
}

/* <unqualified-name>: a source name, a constructor or a destructor.
 * Sets *@ctor_dtor for the latter (no return type in the encoding). */
static void unqualified_name(struct dm *d, bool *ctor_dtor)
{
	char c = peek(d);

	if (c >= '1' && c <= '9') {
		source_name(d);
	} else if ((c == 'C' || c == 'D') && d->s + 1 < d->end &&
		   d->last_end > d->last_start &&
		   ((c == 'C' && d->s[1] >= '1' && d->s[1] <= '3') ||
		    (c == 'D' && d->s[1] >= '0' && d->s[1] <= '2'))) {
		size_t start = d->last_start, end = d->last_end;

		d->s += 2;
		if (c == 'D')
			put(d, "~");
		put_again(d, start, end);
		if (ctor_dtor)
			*ctor_dtor = true;
	} else {
		d->bad = true; /* operators, conversions, lambdas, ... */
	}
}

struct name_info {
	bool templated; /* ends in template arguments */
	bool ctor_dtor; /* a constructor or destructor */
	bool is_const;	/* a const member function */
	bool is_volatile;
};

/* <nested-name> ::= N [<CV-qualifiers>] [<ref-qualifier>] <prefix> E;
 * every component but the last is a candidate. */
static void nested_name(struct dm *d, struct name_info *ni)
{
	size_t start = d->len;
	bool first = true;

	d->s++; /* N */
	if (peek(d) == 'r')
		d->s++;
	if (peek(d) == 'V') {
		ni->is_volatile = true;
		d->s++;
	}
	if (peek(d) == 'K') {
		ni->is_const = true;
		d->s++;
	}
	if (peek(d) == 'R' || peek(d) == 'O') {
		d->bad = true; /* ref-qualified members: rare, not here */
		return;
	}
	while (!d->bad && peek(d) != 'E') {
		char c = peek(d);

		ni->templated = false;
		if (c == 'I') {
			uint16_t ls = d->last_start, le = d->last_end;

			if (first) {
				d->bad = true;
				return;
			}
			template_args(d);
			d->last_start =
				ls; /* a constructor names the template */
			d->last_end = le;
			ni->templated = true;
		} else {
			if (!first)
				put(d, "::");
			if (c == 'S' && d->s + 1 < d->end && d->s[1] == 't') {
				d->s += 2;
				put(d, "std");
				first = false;
				continue; /* std:: is no candidate */
			}
			if (c == 'S') {
				substitution(d);
				d->last_start = d->last_end = 0; /* unknown */
				first = false;
				continue; /* no new candidate */
			} else
				unqualified_name(d, &ni->ctor_dtor);
		}
		first = false;
		if (!d->bad && peek(d) != 'E')
			add_sub(d, start);
	}
	if (peek(d) != 'E' || first) {
		d->bad = true;
		return;
	}
	d->s++;
}

static const struct {
	char c;
	char name[20];
} builtins[] = {
	{'v', "void"},	      {'w', "wchar_t"},
	{'b', "bool"},	      {'c', "char"},
	{'a', "signed char"}, {'h', "unsigned char"},
	{'s', "short"},	      {'t', "unsigned short"},
	{'i', "int"},	      {'j', "unsigned int"},
	{'l', "long"},	      {'m', "unsigned long"},
	{'x', "long long"},   {'y', "unsigned long long"},
	{'n', "__int128"},    {'o', "unsigned __int128"},
	{'f', "float"},	      {'d', "double"},
	{'e', "long double"}, {'g', "__float128"},
	{'z', "..."},
};

/* <type>: builtins, cv-qualified, pointer, reference and class types. */
static void type(struct dm *d)
{
	size_t start = d->len;
	char c = peek(d);

	if (++d->depth > DM_MAX_DEPTH) {
		d->bad = true;
		return;
	}
	for (unsigned i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		if (c == builtins[i].c) {
			d->s++;
			put(d, builtins[i].name);
			d->depth--;
			return; /* builtins are no candidates */
		}
	switch (c) {
	case 'D':
		if (d->s + 1 < d->end && d->s[1] == 'n') {
			put(d, "decltype(nullptr)");
		} else if (d->s + 1 < d->end && d->s[1] == 'i') {
			put(d, "char32_t");
		} else if (d->s + 1 < d->end && d->s[1] == 's') {
			put(d, "char16_t");
		} else if (d->s + 1 < d->end && d->s[1] == 'u') {
			put(d, "char8_t");
		} else {
			d->bad = true;
			break;
		}
		d->s += 2;
		d->depth--;
		return;
	case 'r':
	case 'V':
	case 'K': {
		bool r = false, v = false, k = false;

		if (peek(d) == 'r') {
			r = true;
			d->s++;
		}
		if (peek(d) == 'V') {
			v = true;
			d->s++;
		}
		if (peek(d) == 'K') {
			k = true;
			d->s++;
		}
		type(d);
		if (k)
			put(d, " const");
		if (v)
			put(d, " volatile");
		if (r)
			put(d, " restrict");
		break;
	}
	case 'P':
	case 'R':
	case 'O':
		d->s++;
		type(d);
		put(d, c == 'P' ? "*" : c == 'R' ? "&" : "&&");
		break;
	case 'N': {
		struct name_info ni = {0};

		nested_name(d, &ni);
		if (ni.is_const || ni.is_volatile || ni.ctor_dtor)
			d->bad = true;
		break;
	}
	case 'S':
		if (d->s + 1 < d->end && d->s[1] == 't') {
			d->s += 2;
			put(d, "std::");
			source_name(d);
			if (!d->bad && peek(d) == 'I') {
				add_sub(d, start); /* the template's name */
				template_args(d);
			}
			break;
		}
		substitution(d);
		if (d->bad || peek(d) != 'I') {
			d->depth--;
			return; /* the substitution is no new candidate */
		}
		template_args(d);
		break;
	default:
		if (c >= '1' && c <= '9') {
			source_name(d);
			if (!d->bad && peek(d) == 'I') {
				add_sub(d, start);
				template_args(d);
			}
		} else {
			d->bad = true; /* functions, arrays, T_, ... */
		}
		break;
	}
	if (!d->bad)
		add_sub(d, start);
	d->depth--;
}

/* Take out[from, to) out of the output. */
static void cut(struct dm *d, size_t from, size_t to)
{
	for (size_t i = to; i < d->len; i++)
		d->out[from + i - to] = d->out[i];
	d->len -= to - from;
}

/* <encoding> ::= <name> [<bare-function-type>] */
static void encoding(struct dm *d)
{
	struct name_info ni = {0};
	size_t start = d->len;

	switch (peek(d)) {
	case 'N':
		nested_name(d, &ni);
		break;
	case 'L': /* internal linkage */
		d->s++;
		unqualified_name(d, NULL);
		break;
	case 'S':
		if (d->s + 1 < d->end && d->s[1] == 't') {
			d->s += 2;
			put(d, "std::");
			unqualified_name(d, NULL);
			break;
		}
		d->bad = true;
		return;
	default:
		unqualified_name(d, NULL);
		break;
	}
	if (!d->bad && peek(d) == 'I') { /* an unscoped template */
		add_sub(d, start);
		template_args(d);
		ni.templated = true;
	}
	if (d->bad || !peek(d))
		return; /* a variable: the name alone */
	/* A function: parameter types, after the return type of a template. */
	size_t ret = d->len;

	if (ni.templated && !ni.ctor_dtor)
		type(d);
	size_t params = d->len;

	put(d, "(");
	if (peek(d) == 'v' && d->s + 1 == d->end) {
		d->s++;
	} else {
		for (bool first = true; !d->bad && peek(d); first = false) {
			if (!first)
				put(d, ", ");
			type(d);
		}
	}
	put(d, ")");
	if (ni.is_const)
		put(d, " const");
	if (ni.is_volatile)
		put(d, " volatile");
	if (!d->bad)
		cut(d, ret,
		    params); /* "int f<int>(int)" reads as "f<int>(int)" */
}

/* Suffixes that rename the same entity: dropped. */
static bool renaming_suffix(const char *s, const char *end)
{
	return dm_prefix(s, end, ".lto_priv") || dm_prefix(s, end, ".llvm.") ||
	       dm_prefix(s, end, ".localalias");
}

bool rw_demangle(const char *sym, char *out, size_t out_len)
{
	struct dm d = {.s = sym};
	const char *dot, *end = sym + dm_strlen(sym);
	bool cxx = dm_prefix(sym, end, "_Z");
	bool changed = cxx;

	for (dot = sym; dot < end && *dot != '.'; dot++)
		;
	d.end = dot;
	if (cxx) {
		d.s = sym + 2;
		encoding(&d);
		if (d.s != d.end)
			d.bad = true;
	} else {
		put_n(&d, sym, (size_t)(dot - sym));
	}
	if (d.bad || !d.len)
		return false;
	/* the suffixes: ".name" or ".name.N" each */
	for (const char *s = dot; s < end;) {
		const char *e = s + 1;

		while (e < end && *e != '.')
			e++;
		while (e + 1 < end && e[1] >= '0' && e[1] <= '9') {
			const char *n = e + 1;

			while (n < end && *n >= '0' && *n <= '9')
				n++;
			if (n < end && *n != '.')
				break;
			e = n;
		}
		if (renaming_suffix(s, end)) {
			changed = true;
		} else if (cxx) {
			put(&d, " [clone ");
			put_n(&d, s, (size_t)(e - s));
			put(&d, "]");
		} else {
			put_n(&d, s, (size_t)(e - s));
		}
		s = e;
	}
	if (d.bad || !changed || d.len + 1 > out_len)
		return false;
	for (size_t i = 0; i < d.len; i++)
		out[i] = d.out[i];
	out[d.len] = 0;
	return true;
}
