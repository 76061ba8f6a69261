#!/bin/sh
# real.sh - profd on a real GPU: build tests/gpu/real/real_app.cu with nvcc,
# run it under `profd exec`, and check the GPU profile with Google's pprof.
#
#   tests/gpu/real.sh [OUTDIR]      (root; needs an NVIDIA GPU, nvcc, build/profd,
#                                    build/libprofd_inject.so, and pprof at
#                                    $PPROF or build/tools/pprof)
# Exits 77 (skip) when there is no GPU or no nvcc, 0 when every check holds.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$(mktemp -d /tmp/profd-real.XXXXXX)}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
pprof=${PPROF:-$root/build/tools/pprof}
iters=${ITERS:-200}

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "real.sh: no NVIDIA GPU here: skipped"; exit 77
fi
[ -x "$nvcc" ] || { echo "real.sh: no nvcc at $nvcc: skipped"; exit 77; }
nvidia-smi -L
mkdir -p "$out"
"$nvcc" -O1 -g -Xcompiler -fno-omit-frame-pointer -o "$out/real_app" \
	"$root/tests/gpu/real/real_app.cu"
# CUPTI lives beside the toolkit; the injection library finds it there too
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
# every launch's stack: the join is what is checked here (a real GPU takes
# the program's 750 launches in a burst, past the default rate limit's
# bucket of 100: the limiter itself is tested on the mock CUDA stack)
export PROFD_LAUNCH_STACK_RATE=${PROFD_LAUNCH_STACK_RATE:-0}
start=$(date +%s)
"$root/build/profd" exec --sampling-frequency 99 --output-dir "$out/profile" -- \
	"$out/real_app" "$iters" 2>&1 | tee "$out/profd.log"
echo "real.sh: profd exec took $(( $(date +%s) - start )) s"
ls -la "$out/profile"
python3 "$root/tests/gpu/check_real.py" "$pprof" "$out/profile" "$iters"
