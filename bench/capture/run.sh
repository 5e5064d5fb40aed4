#!/bin/sh
# Capture overhead: ns per call with and without the cuprof shim, in one run.
#
#   bench/capture/run.sh [-s SHIM.so] [-L DIR_WITH_LIBCUDA] [-n ITERS] [-r REPEATS]
#
# Needs only a C compiler (gcc or $CC) and a libcuda: the real driver by
# default, the simulated one with -L (e.g. the directory `cuprof` built, or
# one built from cudawrap/sim/csrc). Without -s the shim is compiled from
# this repository's sources. The same benchmark binary runs REPEATS times
# without LD_PRELOAD, with it, and with it and CUPROF_TIMING=end (one clock
# read per call), interleaved; the best of each is reported.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cc=${CC:-gcc}
shim= libdir= iters=200000 repeats=3
while getopts s:L:n:r: o; do
	case $o in
	s) shim=$OPTARG ;;
	L) libdir=$OPTARG ;;
	n) iters=$OPTARG ;;
	r) repeats=$OPTARG ;;
	*) echo "usage: $0 [-s SHIM.so] [-L LIBCUDA_DIR] [-n ITERS] [-r REPEATS]" >&2; exit 2 ;;
	esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$shim" ]; then
	(cd "$repo/cudawrap/shim" && $cc -I. -O2 -g -fPIC -shared -fvisibility=hidden -fno-strict-aliasing \
		-Wl,--version-script=shim.map -Wl,-z,now -o "$work/libcuprof.so" \
		$(ls csrc/*.c | grep -v /calib.c) -ldl -lpthread)
	shim=$work/libcuprof.so
fi
ldflags=
if [ -n "$libdir" ]; then
	ldflags="-L$libdir"
	export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
$cc -O2 -I"$repo/cudawrap/shim" -o "$work/bench" "$here/bench.c" $ldflags -lcuda -lpthread
mkdir -m 700 "$work/rings"
i=0
while [ "$i" -lt "$repeats" ]; do
	"$work/bench" "$iters" >>"$work/plain"
	rm -f "$work/rings"/*
	CUPROF_DIR="$work/rings" CUPROF_BUFFER=8388608 LD_PRELOAD="$shim" "$work/bench" "$iters" >>"$work/shim"
	rm -f "$work/rings"/*
	CUPROF_TIMING=end CUPROF_DIR="$work/rings" CUPROF_BUFFER=8388608 LD_PRELOAD="$shim" "$work/bench" "$iters" >>"$work/end"
	i=$((i + 1))
done
awk '
	FILENAME ~ /plain$/ { if (!($1 in p) || $2 < p[$1]) p[$1] = $2; if (!($1 in order)) { order[$1] = ++n; names[n] = $1 }; next }
	FILENAME ~ /shim$/ { if (!($1 in s) || $2 < s[$1]) s[$1] = $2; next }
	{ if (!($1 in e) || $2 < e[$1]) e[$1] = $2 }
	END {
		printf "%-28s %9s %9s %9s %9s %9s\n", "call (ns per iteration)", "no shim", "shim", "added", "end-only", "added"
		for (i = 1; i <= n; i++) { k = names[i]; printf "%-28s %9.1f %9.1f %9.1f %9.1f %9.1f\n", k, p[k], s[k], s[k] - p[k], e[k], e[k] - p[k] }
	}' "$work/plain" "$work/shim" "$work/end"
