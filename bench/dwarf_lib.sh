# bench/dwarf_lib.sh - helpers of the DWARF-unwinding benchmarks
# (bench/dwarf_*.sh; sourced, bash). Sources bench/lib.sh.
#
# Owns: building workloads without frame pointers (the flags of
# tests/test_dwarf.py), waiting until no other profiler or benchmark runs
# on the (shared) machine, the BPF maps a profd process holds, and
# counting frames of the stacks in a pprof profile.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Flags of the DWARF workloads: no function keeps a frame pointer, so only
# .eh_frame tables give the caller chain (as in tests/test_dwarf.py).
DWARF_CFLAGS="-O2 -fomit-frame-pointer"
DWARF_SRC=$ROOT/tests/workloads/dwarf
PPROF=${PPROF:-}
if [ -z "$PPROF" ]; then
	if [ -x "$ROOT/build/tools/pprof" ]; then PPROF=$ROOT/build/tools/pprof
	elif [ -x /tmp/pprof ]; then PPROF=/tmp/pprof
	else PPROF=$(command -v pprof || true)
	fi
fi

# dwarf_bench_init - bench_init with the scratch directory under its own
# prefix (/tmp/profd-dwarf.XXXXXX): other benchmark runs on a shared
# machine look for (and remove) leftover /tmp/profd-bench.* directories.
dwarf_bench_init() {
	bench_init
	rmdir "$WORK"
	WORK=$(mktemp -d /tmp/profd-dwarf.XXXXXX)
}

# profd_info - which profd binary is measured (the tree is shared and
# rebuilt by others: its mtime, a hash, and the git HEAD of the tree).
profd_info() {
	echo "profd: $PROFD mtime=$(date -u -r "$PROFD" +%FT%TZ) sha256=$(sha256sum "$PROFD" | cut -c1-12)" \
		"git=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo ?)"
}

# build_dwarf_workload NAME SRC [FLAGS...] - compile SRC into $WORK/NAME
# with $DWARF_CFLAGS (g++ for .cpp).
build_dwarf_workload() {
	local name=$1 src=$2 cc=$CC
	shift 2
	case $src in *.cpp) cc=${CXX:-g++} ;; esac
	# shellcheck disable=SC2086
	$cc $DWARF_CFLAGS "$@" -o "$WORK/$name" "$src" || die "cannot build $src"
}

# other_profilers - "pid args" of every profd / perf record / bench script
# running on the machine that is not this script or one of its children
# (nor in DWARF_IGNORE_PIDS: e.g. a long-lived low-rate profd of another
# session that will not end; it is still listed in QUIET_NOTE).
other_profilers() {
	local mine=" $$ ${BG_PIDS:-} ${DWARF_IGNORE_PIDS:-} "
	ps -eo pid=,ppid=,comm=,args= | awk -v mine="$mine" -v self=$$ '
		index(mine, " " $1 " ") || $2 == self { next }
		$3 == "profd" || ($3 == "perf" && $0 ~ / record/) ||
		$0 ~ /bench\/[a-z_]+\.sh/ && $0 !~ /bench\/dwarf_/ {
			$2 = ""; $3 = ""; print }'
}

# wait_quiet [MAX_S] - wait (up to MAX_S, default 90 s) until no other
# profiler or benchmark runs and the 1-minute load is below nproc/2 + 0.5;
# then log what still runs. Never kills anything.
# QUIET_NOTE is set to a description of the load the measurement ran under.
wait_quiet() {
	local max=${1:-90} waited=0 others lim
	lim=$(awk -v n="$(nproc)" 'BEGIN { print n / 2 + 0.5 }')
	while :; do
		others=$(other_profilers)
		if [ -z "$others" ] && awk -v l="$(loadavg1)" -v m="$lim" 'BEGIN { exit !(l < m) }'; then
			break
		fi
		if [ "$waited" -ge "$max" ]; then
			log "wait_quiet: still busy after ${max} s, measuring anyway"
			break
		fi
		[ $((waited % 30)) = 0 ] &&
			log "wait_quiet: waiting (load1 $(loadavg1); others: $(echo "$others" | tr '\n' ';' | cut -c1-200))"
		sleep 2
		waited=$((waited + 2))
	done
	others=$(DWARF_IGNORE_PIDS="" other_profilers | tr '\n' ';' | cut -c1-300)
	QUIET_NOTE="load1=$(loadavg1) waited_s=$waited others=[${others}] profd_procs=$(pgrep -xc profd)"
	log "wait_quiet: $QUIET_NOTE"
}

# map_ids_of_pid PID - ids of the BPF maps PID holds open: the
# skeleton's maps and the shard arrays user space created itself.
map_ids_of_pid() { bpf_ids_of_pid map "$1"; }

# map_list PID - "id type name bytes_memlock max_entries value_size" of
# each BPF map PID holds open.
map_list() {
	local id
	for id in $(map_ids_of_pid "$1"); do
		bpftool map show id "$id" --json 2>/dev/null | awk -v id="$id" '{
			t = "?"; n = "?"; m = 0; e = 0; v = 0
			if (match($0, /"type":"[^"]*"/)) t = substr($0, RSTART + 8, RLENGTH - 9)
			if (match($0, /"name":"[^"]*"/)) n = substr($0, RSTART + 8, RLENGTH - 9)
			if (match($0, /"bytes_memlock":[0-9]+/)) m = substr($0, RSTART + 16, RLENGTH - 16)
			if (match($0, /"max_entries":[0-9]+/)) e = substr($0, RSTART + 14, RLENGTH - 14)
			if (match($0, /"bytes_value":[0-9]+/)) v = substr($0, RSTART + 14, RLENGTH - 14)
			print id, t, n, m, e, v }'
	done
}

# trace_stacks PROFILE - one line per stack of the profile, as
# `pprof -traces` prints it (inlined frames included):
#   "<samples> <frames> <pid> <comm> <leaf;...;root>"
# (samples: the trace's value divided by the profile's period).
trace_stacks() {
	"$PPROF" -traces "$1" 2>/dev/null | awk -v p="$(period_ns "$1")" '
		function flush() {
			if (n > 0) printf "%d %d %s %s %s\n", int(ns / p + 0.5), n, pid, comm, fr
			n = 0
		}
		/^-+\+-+$/ { flush(); pid = "?"; comm = "?"; inlab = 1; next }
		inlab && /^ *pid: / { pid = $2; next }
		inlab && /^ *comm: / { comm = $2; next }
		inlab && /^ *[a-z_]+: / { next }
		inlab && /^ *[0-9.]+[a-z]*s +[^ ]/ {
			inlab = 0
			v = $1; u = v; sub(/^[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
			ns = v * (u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : 1)
			n = 1; fr = $2; next
		}
		!inlab && n > 0 && NF >= 1 { n++; fr = fr ";" $1 }
		END { flush() }'
}

# period_ns PROFILE - the sampling period of a profile in ns.
period_ns() {
	"$PPROF" -raw "$1" 2>/dev/null | awk '/^Period:/ { print $2; exit }'
}

# unwind_stat PROFILE - the profile's "stat.unwind: ..." comment.
unwind_stat() {
	"$PPROF" -raw "$1" 2>/dev/null | grep -o 'stat\.unwind:.*' | head -n 1
}

# comment_value PROFILE NAME - value of the NAME=V comment (empty if none).
comment_value() {
	"$PPROF" -raw "$1" 2>/dev/null | grep -o "$2=[0-9]*" | head -n 1 | cut -d= -f2
}
