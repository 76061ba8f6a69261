/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dwarf_scopes.h - the functions and inlined subroutines around an
 * address in one compilation unit's DIE tree (libdw), for
 * dwarf_lines.c.
 *
 * Owns: the walk down a unit's DIEs to the subprogram, inlined
 * subroutines and lexical blocks whose ranges hold an address (DWARF 5
 * sections 3.3 and 3.3.8; what dwarf_getscopes() finds, without its
 * visit of every DIE), and a unit's function index: the ranges of the
 * unit's outermost functions (those at its top level or inside
 * namespaces, modules, classes, structures and unions), sorted, built by
 * one walk of the unit, so that a lookup goes straight to the function
 * instead of past every DIE before it (a C++ unit holds tens of
 * thousands of declarations from the headers it includes: 26 ms a lookup
 * without the index in a unit of std::map and std::string, measured).
 * An index holds DIE offsets, not DIEs: it stays true after libdw's
 * decoded state is dropped and begun again over the same sections.
 *
 * Input is untrusted: libdw checks every DIE it reads; a DIE or range
 * it cannot read is an error for the lookup (or the build), never a
 * crash. Not thread safe (the symbolizer's lock).
 */
#ifndef PROFD_SYMBOL_DWARF_SCOPES_H
#define PROFD_SYMBOL_DWARF_SCOPES_H

#include <stdint.h>
#include <elfutils/libdw.h>

struct dwarf_split;
struct dwarf_fn_index;

/* DIE nesting followed at most (namespaces, classes, blocks, inlines). */
#define SCOPE_DEPTH_MAX	64

/*
 * dwarf_scope_walk - append to @chain (outermost first; *@n levels so
 * far, @max at most) the subprograms and inlined subroutines below
 * @parent whose ranges hold @vaddr, descending only into DIEs that hold
 * it (and into namespaces and classes, which have no ranges but hold C++
 * functions). @depth: @parent's nesting (0 for a unit). @split: the .dwo
 * whose unit @parent is in (its DIEs' addresses are read through it),
 * NULL for a unit of the object's own. Only live ranges count
 * (dwarf_range_live()).
 * Returns 0, -E2BIG (deeper than @max or SCOPE_DEPTH_MAX), -EINVAL (a
 * DIE or a range libdw or dwarf_split.c could not read).
 */
int dwarf_scope_walk(Dwarf_Die *parent, uint64_t vaddr, Dwarf_Die *chain,
		     int *n, int max, int depth, struct dwarf_split *split);

/*
 * dwarf_fn_index_build - index the outermost functions of unit @cu (a
 * unit of the object's own, not a split one): each live range of each
 * subprogram (and of an inlined subroutine or lexical block found at
 * that level) with its DIE's offset, in the order dwarf_scope_walk()
 * would meet them. *@out: the index (owned by the caller:
 * dwarf_fn_index_free()), *@bytes: its heap size.
 * Returns 0, -EINVAL (a DIE or range libdw could not read: no index),
 * -E2BIG (nesting past SCOPE_DEPTH_MAX, or more ranges than an index
 * keeps), -ENOMEM.
 */
int dwarf_fn_index_build(Dwarf_Die *cu, struct dwarf_fn_index **out,
			 uint64_t *bytes);

/*
 * dwarf_fn_index_find - the offset of the outermost function DIE whose
 * range holds @vaddr (the first in the unit's DIE order where ranges
 * overlap, as dwarf_scope_walk() picks), into *@die_off.
 * Returns 0, -ENOENT (none holds it), -ERANGE (more overlapping
 * ranges than a lookup steps over: ask dwarf_scope_walk()).
 */
int dwarf_fn_index_find(const struct dwarf_fn_index *x, uint64_t vaddr,
			uint64_t *die_off);

/* dwarf_fn_index_free - free @x (NULL is fine). */
void dwarf_fn_index_free(struct dwarf_fn_index *x);

#endif
