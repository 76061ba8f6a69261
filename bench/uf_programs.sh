# bench/uf_programs.sh - the "real programs" of issue 18's figures
# (sourced by unnamed_frames.sh and symbolize_cost.sh, after lib.sh and
# bench_init), so both figures run the same set.
#
# uf_build_programs - builds into $WORK, each -O2 -g with frame pointers
# ($WORKLOAD_CFLAGS), as NAME.full (DWARF and symbols kept):
#   uf_c    bench/cpuwork.c (C, a hash loop down a call chain)
#   uf_cxx  bench/workloads/uf_cxx.cc (C++: templates, a namespace,
#           static functions, std::map of std::string, std::sort,
#           std::unordered_map, std::ostringstream)
#   uf_libc bench/workloads/uf_libc.c (time in libc's internals: qsort's
#           merge sort, printf's and strtod's formatting, malloc)
#   uf_sql  sqlite3's amalgamation from npm's better-sqlite3 package
#           (`npm pack better-sqlite3@12`, kept in $UF_CACHE, default
#           /var/cache/profd-bench) with bench/workloads/uf_sql.c (queries
#           on an in-memory database); left out, said so, without it
# and sets UF_PROGS to the names built. uf_run_programs DIR SUFFIX starts
# them (DIR/NAME SUFFIX) in the background until the bench exits.

uf_build_programs() {
	local tgz cache=${UF_CACHE:-/var/cache/profd-bench}

	UF_PROGS="uf_c uf_cxx uf_libc"
	$CC $WORKLOAD_CFLAGS -o "$WORK/uf_c.full" "$BENCH_DIR/cpuwork.c" || die "cannot build cpuwork.c"
	g++ $WORKLOAD_CFLAGS -o "$WORK/uf_cxx.full" "$BENCH_DIR/workloads/uf_cxx.cc" ||
		die "cannot build uf_cxx.cc"
	$CC $WORKLOAD_CFLAGS -o "$WORK/uf_libc.full" "$BENCH_DIR/workloads/uf_libc.c" ||
		die "cannot build uf_libc.c"
	mkdir -p "$cache"
	tgz=$(ls "$cache"/better-sqlite3-*.tgz 2>/dev/null | tail -n 1)
	if [ -z "$tgz" ] && command -v npm >/dev/null; then
		(cd "$cache" && timeout 120 npm pack better-sqlite3@12 >/dev/null 2>>"$WORK/npm.log")
		tgz=$(ls "$cache"/better-sqlite3-*.tgz 2>/dev/null | tail -n 1)
	fi
	if [ -z "$tgz" ]; then
		log "no sqlite3 amalgamation (npm pack better-sqlite3 failed): uf_sql left out"
		return 0
	fi
	tar -xzf "$tgz" -C "$WORK" package/deps/sqlite3/sqlite3.c package/deps/sqlite3/sqlite3.h ||
		die "cannot unpack $tgz"
	log "building sqlite3 of $(basename "$tgz") (about a minute)"
	$CC $WORKLOAD_CFLAGS -I"$WORK/package/deps/sqlite3" -o "$WORK/uf_sql.full" \
		"$BENCH_DIR/workloads/uf_sql.c" "$WORK/package/deps/sqlite3/sqlite3.c" -lm ||
		die "cannot build uf_sql with sqlite3.c"
	UF_PROGS="$UF_PROGS uf_sql"
}

uf_run_programs() {
	local p
	for p in $UF_PROGS; do
		if [ "$p" = uf_c ]; then
			"$1/$p$2" 1000000000 >/dev/null &
		else
			"$1/$p$2" >/dev/null &
		fi
		bg_add $!
	done
}
