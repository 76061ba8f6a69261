#!/bin/sh
# device-run.sh - on a lent GPU machine (see device-prepare.sh): point
# build/profd at the carried binary and libraries, find CUPTI, and run
# tests/gpu/real.sh into $OUT/real (its log in $OUT/real.log).
uname -r
nvidia-smi -L
here=$(pwd)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cupti=$(find / -xdev -name 'libcupti.so*' 2>/dev/null | head -1)
[ -n "$cupti" ] && export LD_LIBRARY_PATH=$(dirname "$cupti")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p build
cat > build/profd <<W
#!/bin/sh
LD_LIBRARY_PATH=$here/.devcarry/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} exec $here/.devcarry/profd.bin "\$@"
W
chmod +x build/profd
mkdir -p "$OUT/real"
NVCC=$NVCC PPROF=$here/build/tools/pprof timeout 420 sh tests/gpu/real.sh "$OUT/real" > "$OUT/real.log" 2>&1
echo "real.sh rc=$?"
cat "$OUT/real.log"
rm -f "$OUT/real/real_app" "$OUT/real/profile/flamegraph.html"
