#!/usr/bin/env bash
# bench/unnamed_frames.sh - issue 18, figure 1: the share of unnamed
# frames in a whole-system profile when the debug files of stripped
# programs and of libc are served by a local debuginfod, profd beside
# perf given the same debug files.
#
# Programs, each built -O2 -g (frame pointers, so both tools unwind them
# alike), its debug file split off (objcopy --only-keep-debug) into a
# directory a local `debuginfod -F` serves, the binary stripped
# (--strip-all: no .symtab, no .gnu_debuglink):
#   uf_c    bench/cpuwork.c (C, a hash loop down a call chain)
#   uf_cxx  a C++ program (bench/workloads/uf_cxx.cc: templates, a
#           namespace, static functions, std::map of std::string,
#           std::sort, std::unordered_map, std::ostringstream)
#   uf_libc a C program whose time is in libc's internals (qsort's merge
#           sort, printf's and strtod's formatting, malloc)
#   uf_sql  sqlite3's amalgamation (from npm's better-sqlite3 package,
#           `npm pack`, kept in UF_CACHE) and a driver running queries
#           on an in-memory database; left out (said so) without npm
# libc's debug files (Debian's libc6-dbg) are copied to the served
# directory too, and /usr/lib/debug is hidden for the run (an empty
# directory bind-mounted over it, unmounted on exit): profd names libc's
# frames only from what it fetched. perf gets the same files through its
# build-ID cache (perf buildid-cache --add; Debian's perf 6.1 is built
# without debuginfod). While the programs run, profd samples the whole
# machine (--debuginfod-urls the local server, its own cache,
# --profile-interval 1, UF_SECONDS) and `perf record -a -g` samples it too.
# Counted per tool: frames, and unnamed frames (profd: `pprof -traces`
# shows an unnamed frame as [mapping]; perf: [unknown]), for the programs
# (weighted by samples) and for everything; profd's first profile
# (written before the fetches could finish) is reported apart. Then per
# object (bench/unnamed_compare.py): which of profd's unnamed frames perf
# named at the same file offset, and which are in anonymous or JIT memory.
#
# Env: UF_SECONDS (10), UF_HZ (99), UF_CACHE (/var/cache/profd-bench: the
# sqlite3 package), UF_LOCAL_DEBUG=1 (leave /usr/lib/debug visible).
# Needs root, debuginfod, perf, g++, libc6-dbg, build/tools/pprof.
# Output: one table on stdout.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/uf_programs.sh"

UF_SECONDS=${UF_SECONDS:-10}
UF_HZ=${UF_HZ:-99}
PPROF=$ROOT/build/tools/pprof

need_root_and_profd
need_tool debuginfod
need_tool perf
need_tool g++
[ -x "$PPROF" ] || die "$PPROF missing: ../shared/tools/pprof-build $PPROF"
bench_init

mkdir -p "$WORK/served" "$WORK/out"
uf_build_programs
PROGS=$UF_PROGS
for p in $PROGS; do
	objcopy --only-keep-debug "$WORK/$p.full" "$WORK/served/$p.debug"
	strip --strip-all -o "$WORK/$p" "$WORK/$p.full"
done
# libc's debug files (libc6-dbg), served and then hidden from both tools
libc_debug=$(dpkg -L libc6-dbg 2>/dev/null | grep '/\.build-id/.*\.debug$')
[ -n "$libc_debug" ] || die "libc6-dbg is not installed"
mkdir -p "$WORK/served/libc6-dbg"
for f in $libc_debug; do
	cp "$f" "$WORK/served/libc6-dbg/$(basename "$(dirname "$f")")$(basename "$f")"
done

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -F -p "$port" -d "$WORK/dbgd.sqlite" -t 1 -c 1 "$WORK/served" >"$WORK/debuginfod.log" 2>&1 &
bg_add $!
served() {	# served FILE: debuginfod answers for FILE's build ID
	local bid
	bid=$(readelf -n "$1" | awk '/Build ID/ { print $3 }')
	curl -sf -o /dev/null "http://127.0.0.1:$port/buildid/$bid/debuginfo"
}
libc=$(ldd "$WORK/uf_libc" | awk '/libc\.so\.6/ { print $3 }')
for i in $(seq 1 600); do
	served "$WORK/uf_cxx" && served "$libc" && break
	sleep 0.1
done
served "$WORK/uf_cxx" && served "$libc" || die "debuginfod did not serve the debug files"
log "debuginfod serving on port $port"

# perf: the same debug files, by build ID, in its own cache
export HOME=$WORK	# perf's build-ID cache: $HOME/.debug
for f in "$WORK"/served/*.debug "$WORK"/served/libc6-dbg/*.debug; do
	perf buildid-cache --add "$f" >/dev/null 2>&1 ||
		log "perf buildid-cache --add $f failed"
done

unhide_debug() { umount /usr/lib/debug 2>/dev/null; }
if [ -z "${UF_LOCAL_DEBUG:-}" ]; then
	mkdir -p "$WORK/empty"
	mount --bind "$WORK/empty" /usr/lib/debug || die "cannot hide /usr/lib/debug"
	CLEANUP_HOOKS="$CLEANUP_HOOKS unhide_debug"
	log "/usr/lib/debug hidden for the run (libc's debug files come from debuginfod)"
fi

uf_run_programs "$WORK" ""
sleep 0.3

start_profd "$WORK/profd.log" --output-dir "$WORK/out" --no-gpu --sampling-frequency "$UF_HZ" \
	--profile-interval 1 --debuginfod-urls "http://127.0.0.1:$port" \
	--debuginfod-cache "$WORK/dbgd-cache"
start_perf "$UF_HZ" -g
sleep "$UF_SECONDS"
stop_perf_keep() {
	kill -INT "$PERF_PID" 2>/dev/null
	wait "$PERF_PID" 2>/dev/null
	bg_forget "$PERF_PID"
}
stop_perf_keep
stop_profd

# profd: every profile's frames, the first profile apart
count_profd() {
	local f
	for f in "$@"; do
		"$PPROF" -traces -sample_index=samples -symbolize=none "$f" 2>/dev/null
	done | awk -v unn="$WORK/profd.unnamed" -v bycomm="$WORK/profd.bycomm" '
		/^-+\+-+$/ { comm = ""; n = 0; next }
		/^ *comm: / { comm = $2; next }
		/^ *[a-z_]+: / && n == 0 { next }
		NF == 0 || /^(File|Type|Time|Duration|Comment|Build ID|Showing)/ { next }
		{
			if (n++ == 0) {		# the first frame line: the count
				v = $1 + 0
				sub(/^ *[0-9.]+[a-z]* +/, "")
			}
			gsub(/^ +| +$/, "")
			if ($0 == "[truncated]") next
			un = ($0 ~ /^\[.*\]$/)
			all += v; all_un += un * v
			if (un) print v, $0, comm >> unn
			if (comm ~ /^uf_/) {
				w += v; w_un += un * v
				pf[comm] += v; pu[comm] += un * v
			}
		}
		END {
			for (c in pf) print c, pf[c], pu[c] >> bycomm
			printf "%d %d %d %d\n", w, w_un, all, all_un
		}'
}
mapfile -t profiles < <(ls "$WORK"/out/cpu-*.pb.gz | sort)
read -r pw pwu pa pau < <(count_profd "${profiles[@]:1}")
mv "$WORK/profd.unnamed" "$WORK/profd.unnamed.keep" 2>/dev/null
mv "$WORK/profd.bycomm" "$WORK/profd.bycomm.keep" 2>/dev/null
read -r fw fwu fa fau < <(count_profd "${profiles[0]}")
mv "$WORK/profd.unnamed.keep" "$WORK/profd.unnamed" 2>/dev/null
mv "$WORK/profd.bycomm.keep" "$WORK/profd.bycomm" 2>/dev/null

perf script -i "$WORK/perf.data" -F comm,ip,sym,dso 2>/dev/null | awk '
	/^[^ \t]/ { comm = $1; next }
	NF >= 2 {
		un = ($2 == "[unknown]")
		all++; all_un += un
		if (comm ~ /^uf_/) { w++; w_un += un; pf[comm]++; pu[comm] += un }
		if (un && comm ~ /^uf_/) print comm, $3 > "'"$WORK/perf.unnamed"'"
	}
	END {
		for (c in pf) print c, pf[c], pu[c] > "'"$WORK/perf.bycomm"'"
		printf "%d %d %d %d\n", w, w_un, all, all_un
	}' >"$WORK/perf.counts"
read -r qw qwu qa qau <"$WORK/perf.counts"

pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? 100 * a / b : 0 }'; }
machine_info
echo "unnamed frames, whole system, ${UF_SECONDS} s at ${UF_HZ} Hz (debug files of $PROGS and libc from debuginfod)"
printf "%-28s %10s %10s %8s %10s %10s %8s\n" tool "prog_fr" "prog_unn" "prog_%" "all_fr" "all_unn" "all_%"
printf "%-28s %10d %10d %8s %10d %10d %8s\n" "profd (profiles 2..)" "$pw" "$pwu" "$(pct "$pwu" "$pw")" \
	"$pa" "$pau" "$(pct "$pau" "$pa")"
printf "%-28s %10d %10d %8s %10d %10d %8s\n" "profd (first profile)" "$fw" "$fwu" "$(pct "$fwu" "$fw")" \
	"$fa" "$fau" "$(pct "$fau" "$fa")"
printf "%-28s %10d %10d %8s %10d %10d %8s\n" "perf -g (buildid-cache)" "$qw" "$qwu" "$(pct "$qwu" "$qw")" \
	"$qa" "$qau" "$(pct "$qau" "$qa")"
echo "per program (profd profiles 2.., perf): frames, unnamed, %"
for p in $PROGS; do
	read -r a b < <(awk -v p="$p" '$1 == p { print $2, $3 }' "$WORK/profd.bycomm" 2>/dev/null)
	read -r c d < <(awk -v p="$p" '$1 == p { print $2, $3 }' "$WORK/perf.bycomm" 2>/dev/null)
	printf "  %-10s profd %7d %6d %6s%%   perf %7d %6d %6s%%\n" "$p" "${a:-0}" "${b:-0}" \
		"$(pct "${b:-0}" "${a:-0}")" "${c:-0}" "${d:-0}" "$(pct "${d:-0}" "${c:-0}")"
done
echo "profd's unnamed frames of the programs by mapping (profiles 2.., samples):"
awk '$3 ~ /^uf_/ { n[$3 " " $2] += $1 } END { for (m in n) print n[m], m }' "$WORK/profd.unnamed" 2>/dev/null |
	sort -rn | head -8
echo "profd's unnamed frames by mapping (profiles 2.., samples):"
awk '{ n[$2] += $1 } END { for (m in n) print n[m], m }' "$WORK/profd.unnamed" 2>/dev/null |
	sort -rn | head -8
echo "perf's [unknown] frames of the programs by dso (samples):"
sort "$WORK/perf.unnamed" 2>/dev/null | uniq -c | sort -rn | head -8
echo "perf's [unknown] frames by dso (samples):"
perf script -i "$WORK/perf.data" -F ip,sym,dso 2>/dev/null |
	awk '$2 == "[unknown]" { n[$3]++ } END { for (d in n) print n[d], d }' | sort -rn | head -8
echo "per object, profiles 2.. beside perf (perf-only: frames profd left unnamed at a file offset perf named):"
perf script -i "$WORK/perf.data" -F comm,ip,sym,dso >"$WORK/perf.script" 2>/dev/null
python3 "$BENCH_DIR/unnamed_compare.py" "$PPROF" "$WORK/perf.script" "${profiles[@]:1}"
grep -E "debuginfod" "$WORK/profd.log" | head -5 >&2
