// SPDX-License-Identifier: MIT
/*
 * attack_table.c - THE table: what each backend is documented to stop.
 * docs/attack-matrix.md carries it (`make attack-matrix` writes it from
 * `build/tests/attack-matrix --expected`), the attack_* TEST() cases fail
 * when reality differs from it in either direction. Change a cell only
 * together with the document's explanation.
 */
#include "attack.h"

#define B ATTACK_BLOCKED
#define O ATTACK_OPEN
#define NA ATTACK_NA
#define S ATTACK_SEALED /* blocked where the kernel has mseal(2) */
#define D ATTACK_SHARED /* blocked with librarewrite.so, open static */

const char *const attack_columns[ATTACK_NR_BACKENDS] = {
	"pkey", "pwrite", "shadow", "mprotect", "process"};

const struct attack_expect attack_table[] = {
	{"1a", {B, B, B, B, B}},
	{"1b", {B, B, B, B, B}},
	{"2a", {B, O, B, O, O}},
	{"2b", {B, B, B, O, B}},
	{"3", {B, B, B, B, B}},
	{"4", {B, B, B, B, B}},
	{"4b", {B, O, O, B, B}},
	{"4c", {O, O, O, O, O}},
	{"5a", {B, B, B, B, B}},
	{"5b", {B, B, O, O, B}},
	{"6a", {S, S, S, O, B}},
	{"6b", {S, S, S, O, S}},
	{"6c", {S, S, S, O, S}},
	{"6d", {B, O, O, B, B}},
	{"7a", {B, B, B, B, B}},
	{"7b", {B, B, B, B, B}},
	{"7c", {NA, NA, NA, B, NA}},
	{"7d", {NA, NA, NA, B, NA}},
	{"7e", {B, B, B, B, B}},
	{"7f", {B, NA, NA, B, NA}},
	{"7g", {B, B, B, B, B}},
	{"8a", {B, B, B, B, B}},
	{"8b", {B, B, B, B, B}},
	{"8c", {B, B, B, B, B}},
	{"9", {B, NA, NA, NA, NA}},
	{"10a", {NA, NA, NA, NA, B}},
	{"10b", {NA, NA, NA, NA, B}},
	/* Thread and signal state (11), the library's pointers (12). */
	{"11a", {B, B, B, B, B}},
	{"11b", {O, NA, NA, NA, NA}},
	{"11c", {B, B, B, B, B}},
	{"12a", {B, B, B, B, B}},
	{"12b", {B, B, B, B, B}},
	{"13a", {B, B, B, B, B}},
	{"13b", {B, B, B, B, B}},
	{"13c", {B, B, B, B, B}},
	{"13d", {B, B, B, B, B}},
	{"13e", {B, B, B, B, B}},
	{"13f", {B, B, B, B, B}},
	/* What the red-team review found (14). */
	{"14a", {NA, NA, NA, NA, B}},
	{"14b", {NA, NA, NA, NA, B}},
	{"14c", {B, B, B, B, B}},
	{"14d", {B, B, B, B, B}},
	{"14e", {B, B, B, B, B}},
	{"14f", {B, NA, NA, B, NA}},
	{"14g", {B, B, B, B, B}},
	/* The scribbler (15, attack_scribble.c). */
	{"15a", {B, B, B, B, B}},
	{"15b", {B, B, B, B, B}},
	{"15c", {B, B, B, B, B}},
	{"15d", {B, B, B, B, B}},
	{"15e", {B, B, B, B, B}},
	{"15f", {B, NA, NA, B, NA}},
	{"15g", {B, B, B, B, B}},
	/* Control from memory the library does not own (21), interposition
	 * gaps (22), the fault report (23), pkey's other keys (24). */
	{"21a", {B, B, B, B, B}},
	{"21b", {B, B, B, B, B}},
	{"22a", {B, B, B, B, B}},
	{"22b", {B, NA, NA, B, NA}},
	{"22c", {D, NA, NA, B, NA}},
	{"23", {B, B, B, B, B}},
	{"23b", {B, B, B, B, B}},
	{"23c", {B, B, B, B, B}},
	{"24", {O, NA, NA, NA, NA}},
	/* The outside review of the answer path (review3). */
	{"25a", {NA, NA, NA, NA, B}},
	{"25b", {NA, NA, NA, NA, B}},
	{"25c", {NA, NA, NA, NA, B}},
	{"25d", {NA, NA, NA, NA, B}},
	{"25e", {B, B, B, B, B}},
	/* Lock words released by a store while held (26, attack_locks.c). */
	{"26a", {B, B, B, B, B}},
	{"26b", {B, B, B, B, B}},
	{"26c", {B, B, B, B, B}},
	{"26d", {NA, NA, B, NA, NA}},
	/* Records built on the stack, read after a blocking point (27,
	 * attack_inflight.c). */
	{"27a", {B, B, B, B, B}},
	{"27b", {B, B, B, B, B}},
	{"27c", {NA, NA, B, NA, NA}},
	/* From the second outside review (review5): open on the code these
	 * rows were written against (docs/attack-matrix.md, "Before:"),
	 * blocked once the fixes land. */
	{"27d", {NA, NA, NA, B, NA}},
	{"27e", {NA, NA, NA, B, NA}},
	{"27f", {B, NA, NA, B, NA}},
	{"27g", {NA, NA, NA, B, NA}},
	{"27h", {B, NA, NA, NA, NA}},
	{"27i", {B, B, B, B, B}},
	{"27j", {B, B, B, B, B}},
	{"27k", {B, B, B, B, B}},
	{"27l", {O, B, B, B, B}},
	{"27m", {B, B, B, B, B}},
	{"27n", {B, B, B, B, B}},
	{"27o", {B, B, B, B, B}},
	{"27p", {B, B, B, B, B}},
	/* A pool destroyed under a write (attack_destroy.c). */
	{"27q", {NA, B, B, NA, NA}},
	/* A backend's copy of a segment (attack_inflight.c). */
	{"27r", {B, B, B, B, B}},
	/* The view a map records, rewritten on its way (attack_map_view.c). */
	{"27s", {NA, NA, B, NA, NA}},
	/* A new pool's start, moved outside every region (attack_inflight.c).
	 */
	{"27t", {B, B, B, B, B}},
	/* Findings 1, 2 and 4 of the fresh review of 4d3a807, each with a
	 * test of its own (attack_review4.c). */
	{"27u", {NA, B, NA, NA, B}},
	{"27v", {B, NA, B, B, NA}},
	{"27w", {B, B, B, B, B}},
	/* A list helper's links and the backend's cursor over them
	 * (attack_segments.c). */
	{"27x", {B, B, B, B, O}},
	{"27y", {B, B, B, B, B}},
	{"27z", {B, B, B, B, B}},
	/* A list link's value in flight (attack_segments.c). */
	{"28a", {B, B, B, B, B}},
	/* sigaction()'s action on its way to the signal table
	 * (attack_segments.c). */
	{"28b", {B, B, B, B, B}},
	{"28c", {B, B, B, B, B}},
	{"28d", {B, B, B, B, B}},
	{"28e", {B, B, B, B, B}},
	{"28f", {B, B, B, B, B}},
};
const size_t attack_table_len = sizeof(attack_table) / sizeof(attack_table[0]);
