#!/bin/sh
# device-prepare.sh - for a GPU machine without profd's Debian libraries
# (a lent device: an image with CUDA, not Debian): copy build/profd, the
# injection library and every shared library profd needs except the C and
# C++ runtimes into .devcarry/ (ignored by git), with device-run.sh.
# Then, on the device, from the repository root, carrying .devcarry,
# build/tools/pprof and build/libprofd_inject.so:
#     sh .devcarry/device-run.sh      (runs tests/gpu/real.sh into $OUT)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
rm -rf .devcarry
mkdir -p .devcarry/lib .git/info
grep -qx '/.devcarry/' .git/info/exclude 2>/dev/null || echo '/.devcarry/' >> .git/info/exclude
for l in $( (ldd build/profd; ldd build/libprofd_inject.so) | awk '{print $3}' | grep '^/' | sort -u); do
	case $(basename "$l") in
	libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|libresolv.so.*|libpthread.so.*|libdl.so.*|librt.so.*) ;;
	*) cp -L "$l" .devcarry/lib/ ;;
	esac
done
# profd looks for the injection library next to its own executable
cp build/profd .devcarry/profd.bin
cp build/libprofd_inject.so .devcarry/
cp tests/gpu/device-run.sh .devcarry/
du -sh .devcarry
