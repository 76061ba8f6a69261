#!/usr/bin/env bash
# bench/dwarf_lookup_cost.sh - what one source-line lookup costs profd's
# DWARF reader (src/symbol/dwarf_lines.c, dwarf_scopes.c): the time a
# lookup of a new address takes, its file's DWARF already read, for the
# programs of issue 18's figures (bench/uf_programs.sh: C, C++, a libc
# user, sqlite3's amalgamation), libc's debug file (Debian's libc6-dbg)
# and profd itself.
#
# For each file, build/tests/unit/test_dwarf_lines --cost FILE STEP looks
# up every STEP-th byte of its executable segments once, in address order
# (each a new address: what the symbolizer does for a location it has not
# seen, its chain cache in front of it), and prints the microseconds a
# lookup took on average, and what the handle accounts and RSS grew.
# DWARF_TOOL_BEFORE=PATH runs a second build of the tool (e.g. the one of
# a commit before a change, `make build/tests/unit/test_dwarf_lines` in a
# worktree) on the same files, alternating, for a before/after table.
#
# Env: DWARF_STEP (97), DWARF_ROUNDS (3: the median is reported),
# DWARF_TOOL_BEFORE, UF_CACHE.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/uf_programs.sh"

STEP=${DWARF_STEP:-97}
ROUNDS=${DWARF_ROUNDS:-3}
TOOL="$ROOT/build/tests/unit/test_dwarf_lines"

make -C "$ROOT" -s build/tests/unit/test_dwarf_lines >/dev/null || die "cannot build $TOOL"
need_tool g++
bench_init
uf_build_programs

files=""
for p in $UF_PROGS; do files="$files $WORK/$p.full"; done
libc=$(ldd /bin/true | awk '/libc\.so/ { print $3 }')
bid=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID/ { print $3 }')
dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
if [ -n "$bid" ] && [ -f "$dbg" ]; then
	files="$files $dbg"
else
	log "no libc6-dbg debug file for $libc: left out"
fi
files="$files $ROOT/build/profd"

# us_per_lookup TOOL FILE - one run's microseconds a lookup
us_per_lookup() {
	"$1" --cost "$2" "$STEP" | awk -F'us_per_lookup=' '/us_per_lookup=/ { print $2 }'
}

machine_info
printf "%-28s %8s %10s %14s %12s\n" file lookups "us/lookup" "before us" "accounted"
for f in $files; do
	now="" before=""
	for r in $(seq 1 "$ROUNDS"); do
		now="$now $(us_per_lookup "$TOOL" "$f")"
		[ -n "${DWARF_TOOL_BEFORE:-}" ] &&
			before="$before $(us_per_lookup "$DWARF_TOOL_BEFORE" "$f")"
	done
	last=$("$TOOL" --cost "$f" "$STEP")
	n=$(echo "$last" | sed -n 's/.*lookups=\([0-9]*\).*/\1/p')
	acc=$(echo "$last" | sed -n 's/^after: accounted=\([0-9]*\).*/\1/p')
	printf "%-28s %8s %10s %14s %12s\n" "$(basename "$f" | cut -c1-28)" "$n" \
		"$(echo $now | tr ' ' '\n' | median)" \
		"${before:+$(echo $before | tr ' ' '\n' | median)}" "$acc"
done
