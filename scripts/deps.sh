#!/bin/sh
# deps.sh - install the Debian 12 packages profd needs to build, run and
# test, when they are missing. Needs root (apt-get). Idempotent and quiet
# when everything is present.
set -eu

# Build: the compilers, libbpf + bpftool (skeletons), elfutils (libelf,
# libdw, libdebuginfod: debug files fetched by build ID), protobuf-c, libcurl, libyaml, libmicrohttpd; sys/sdt.h (USDT
# probes of the CUDA/NVTX injection library, built when the CUDA headers
# are in /usr/local/cuda). Run: python3 for `make run`'s Python demo.
BUILD="make gcc g++ clang bpftool libbpf-dev libelf-dev libdw-dev libdebuginfod-dev libiberty-dev zlib1g-dev
protobuf-c-compiler libprotobuf-c-dev libcurl4-openssl-dev libyaml-dev
libmicrohttpd-dev systemtap-sdt-dev python3"
# Tests: pytest, the oracles (protoc, Google's pprof built from Debian's
# source, chromium, binutils' readelf/nm/c++filt, gdb for CPython's struct
# layouts from DWARF, austin as a second Python profiler), libc's detached
# debug symbols, util-linux's setpriv/unshare/setarch; perf for bench/;
# the OTLP receiver of tests/test_otlp_export.py (../shared/tools/otlp-sink:
# protoc's Python and gRPC output, grpcio, protobuf; openssl for a test CA);
# tests/test_install.py: groff and man-db render the man page, systemd's
# systemd-analyze verifies the unit (systemd need not run as PID 1);
# tests/test_config.py: PyYAML reads what --print-config writes;
# tests/test_hung_files.py: a FUSE server whose reads hang (fuse3's
# fusermount3, libfuse3-dev to build tests/tools/hangfs.c); ruby for the
# CRuby runtime tests, xz-utils to unpack its source (tests/test_ruby_offsets.py);
# elfutils' eu-unstrip joins a stripped binary and its debug file for
# pprof, lld a second linker's PLT (tests/test_plt.py).
# tests/test_debuginfod.py: elfutils' debuginfod server, serving debug files
# the test splits off its own builds. llvm's llvm-symbolizer is the oracle
# for C++ lines and inlined frames (tests/test_dwarf_scopes.py).
TEST="python3 python3.11 python3-pytest protobuf-compiler golang-go
golang-github-google-pprof-dev chromium binutils libc6-dbg util-linux
linux-perf libclang-rt-14-dev gdb austin protobuf-compiler-grpc
python3-grpcio python3-protobuf openssl groff-base man-db systemd
python3-yaml fuse3 libfuse3-dev ruby xz-utils elfutils lld debuginfod
llvm"

want="$BUILD"
[ "${1:-}" = "--test" ] && want="$BUILD $TEST"

missing=""
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages:$missing — run as root (apt-get install)" >&2
	exit 1
fi
echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
