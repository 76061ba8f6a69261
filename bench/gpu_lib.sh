# bench/gpu_lib.sh - what the GPU benchmarks share (sourced after lib.sh).
#
# Owns: the mock CUDA stack they run on (tests/gpu/mock, no GPU needed),
# its environment, and running the mock app under `profd exec`.

GPU_BUILD=$ROOT/build/tests/gpu
GPU_APP=$GPU_BUILD/apps/gpu_app
INJECT_LIB=$ROOT/build/libprofd_inject.so

need_gpu_mocks() {
	[ -x "$GPU_APP" ] && [ -f "$INJECT_LIB" ] ||
		die "build/tests/gpu and build/libprofd_inject.so are missing: run 'make' first"
}

# gpu_env CMD... - run CMD on the mock CUDA driver and CUPTI.
gpu_env() {
	LD_LIBRARY_PATH=$GPU_BUILD/mock PROFD_CUPTI_LIBRARY=$GPU_BUILD/mock/libcupti.so "$@"
}

# profd_exec OUTDIR APP_ARGS... - `profd exec` the mock app; profd's stderr
# goes to OUTDIR.log, the app's stdout to stdout.
profd_exec() {
	local out=$1
	shift
	gpu_env "$PROFD" exec --output-dir "$out" -- "$GPU_APP" "$@" 2>"$out.log"
}

# status_counter LOG NAME - the sum of counter NAME over profd's status lines.
status_counter() {
	grep -o "[ (]$2=[0-9]*" "$1" | cut -d= -f2 | awk '{ s += $1 } END { print s + 0 }'
}

# app_value LINE KEY - KEY=VALUE from the app's summary line.
app_value() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# gpu_bench_init - the preconditions and set-up every GPU benchmark does.
gpu_bench_init() {
	need_root_and_profd
	need_gpu_mocks
	bench_init
	machine_info
}
