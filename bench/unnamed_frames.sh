#!/usr/bin/env bash
# bench/unnamed_frames.sh - issue 18, figure 1 (part): the share of
# unnamed frames in a whole-system profile when the debug files of
# stripped programs are served by a local debuginfod, profd beside perf
# given the same debug files.
#
# Two programs are built -O2 -g (bench/cpuwork.c, C; a small C++ program
# with templates, a namespace and static functions), their debug files
# split off (objcopy --only-keep-debug) into a directory a local
# `debuginfod -F` serves, the binaries stripped (--strip-all: no .symtab,
# no .gnu_debuglink). While both run, profd samples the whole machine
# (--debuginfod-urls the local server, its own cache, --profile-interval
# 1, UF_SECONDS) and `perf record -a -g` (frame pointers: both programs
# keep them) samples it too; perf gets the same debug files through its
# build-ID cache (perf buildid-cache --add; Debian's perf 6.1 is built
# without debuginfod). Counted per tool: frames, and unnamed frames (profd:
# `pprof -traces` shows an unnamed frame as [mapping]; perf: [unknown]),
# for the two programs and for everything; profd's first profile (written
# before the fetch could finish) is reported apart. libc's frames are
# named from libc6-dbg's files in /usr/lib/debug by both tools, locally.
#
# Env: UF_SECONDS (10), UF_HZ (99). Needs root, debuginfod, perf, g++,
# build/tools/pprof. Output: one table on stdout.
source "$(dirname "$0")/lib.sh"

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
cat >"$WORK/uf_cxx.cc" <<'EOF'
#include <cstdint>
#include <vector>
namespace uf {
template <typename T> struct Acc {
	T v{};
	__attribute__((noinline)) void add(T x) { v = v * 31 + x; }
};
static __attribute__((noinline)) uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	return x ^ (x >> 29);
}
__attribute__((noinline)) uint64_t churn(std::vector<uint64_t> &v)
{
	Acc<uint64_t> a;
	for (auto &e : v) {
		e = mix(e + 1);
		a.add(e);
	}
	return a.v;
}
}
int main()
{
	std::vector<uint64_t> v(4096, 1);
	volatile uint64_t sink = 0;
	for (;;)
		sink = sink + uf::churn(v);
}
EOF
$CC $WORKLOAD_CFLAGS -o "$WORK/uf_c.full" "$BENCH_DIR/cpuwork.c" || die "cannot build cpuwork.c"
g++ $WORKLOAD_CFLAGS -o "$WORK/uf_cxx.full" "$WORK/uf_cxx.cc" || die "cannot build uf_cxx.cc"
for p in uf_c uf_cxx; do
	objcopy --only-keep-debug "$WORK/$p.full" "$WORK/served/$p.debug"
	strip --strip-all -o "$WORK/$p" "$WORK/$p.full"
done

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -F -p "$port" -d "$WORK/dbgd.sqlite" -t 1 -c 1 "$WORK/served" >"$WORK/debuginfod.log" 2>&1 &
bg_add $!
bid=$(readelf -n "$WORK/uf_cxx" | awk '/Build ID/ { print $3 }')
for i in $(seq 1 300); do
	curl -sf -o /dev/null "http://127.0.0.1:$port/buildid/$bid/debuginfo" && break
	sleep 0.1
done
curl -sf -o /dev/null "http://127.0.0.1:$port/buildid/$bid/debuginfo" ||
	die "debuginfod did not serve the debug files"
log "debuginfod serving on port $port"

# perf: the same debug files, by build ID, in its own cache
export HOME=$WORK	# perf's build-ID cache: $HOME/.debug
for p in uf_c uf_cxx; do
	perf buildid-cache --add "$WORK/served/$p.debug" >/dev/null 2>&1 ||
		log "perf buildid-cache --add $p.debug failed"
done

"$WORK/uf_c" 1000000000 >/dev/null &
bg_add $!
"$WORK/uf_cxx" &
bg_add $!
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
	done | awk -v unn="$WORK/profd.unnamed" '
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
			if (un) print v, $0 >> unn
			if (comm == "uf_c" || comm == "uf_cxx") { w += v; w_un += un * v }
		}
		END { printf "%d %d %d %d\n", w, w_un, all, all_un }'
}
mapfile -t profiles < <(ls "$WORK"/out/cpu-*.pb.gz | sort)
read -r pw pwu pa pau < <(count_profd "${profiles[@]:1}")
mv "$WORK/profd.unnamed" "$WORK/profd.unnamed.keep" 2>/dev/null
read -r fw fwu fa fau < <(count_profd "${profiles[0]}")
mv "$WORK/profd.unnamed.keep" "$WORK/profd.unnamed" 2>/dev/null

perf script -i "$WORK/perf.data" -F comm,ip,sym,dso 2>/dev/null | awk '
	/^[^ \t]/ { comm = $1; next }
	NF >= 2 {
		un = ($2 == "[unknown]")
		all++; all_un += un
		if (comm == "uf_c" || comm == "uf_cxx") { w++; w_un += un }
	}
	END { printf "%d %d %d %d\n", w, w_un, all, all_un }' >"$WORK/perf.counts"
read -r qw qwu qa qau <"$WORK/perf.counts"

pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? 100 * a / b : 0 }'; }
machine_info
echo "unnamed frames, whole system, ${UF_SECONDS} s at ${UF_HZ} Hz (debug files of uf_c, uf_cxx from debuginfod)"
printf "%-28s %10s %10s %8s %10s %10s %8s\n" tool "prog_fr" "prog_unn" "prog_%" "all_fr" "all_unn" "all_%"
printf "%-28s %10d %10d %8s %10d %10d %8s\n" "profd (profiles 2..)" "$pw" "$pwu" "$(pct "$pwu" "$pw")" \
	"$pa" "$pau" "$(pct "$pau" "$pa")"
printf "%-28s %10d %10d %8s %10d %10d %8s\n" "profd (first profile)" "$fw" "$fwu" "$(pct "$fwu" "$fw")" \
	"$fa" "$fau" "$(pct "$fau" "$fa")"
printf "%-28s %10d %10d %8s %10d %10d %8s\n" "perf -g (buildid-cache)" "$qw" "$qwu" "$(pct "$qwu" "$qw")" \
	"$qa" "$qau" "$(pct "$qau" "$qa")"
echo "profd's unnamed frames by mapping (profiles 2.., samples):"
awk '{ n[$2] += $1 } END { for (m in n) print n[m], m }' "$WORK/profd.unnamed" 2>/dev/null |
	sort -rn | head -8
echo "perf's [unknown] frames by dso (samples):"
perf script -i "$WORK/perf.data" -F ip,sym,dso 2>/dev/null |
	awk '$2 == "[unknown]" { n[$3]++ } END { for (d in n) print n[d], d }' | sort -rn | head -8
grep -E "debuginfod" "$WORK/profd.log" | head -5 >&2
