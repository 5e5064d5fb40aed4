#!/bin/sh
# The cost of a wrapped call outside a capture range: bench.c's cheap loops
# without the shim, with it and the range closed (CUPROF_CAPTURE=api and no
# cuProfilerStart: every call takes the gate's closed branch; CUPROF_CAPTURE_KEEP
# empty, so none is kept), and with it recording, interleaved REPEATS times;
# prints the median and the best of each per call.
#
#   bench/capture/closed.sh [-L DIR_WITH_LIBCUDA] [-n ITERS] [-r REPEATS]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cc=${CC:-gcc}
libdir= iters=2000000 repeats=9
while getopts L:n:r: o; do
	case $o in
	L) libdir=$OPTARG ;;
	n) iters=$OPTARG ;;
	r) repeats=$OPTARG ;;
	*) echo "usage: $0 [-L LIBCUDA_DIR] [-n ITERS] [-r REPEATS]" >&2; exit 2 ;;
	esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$repo/cudawrap/shim" && $cc -I. -O2 -g -fPIC -shared -fvisibility=hidden -fno-strict-aliasing \
	-Wl,--version-script=shim.map -Wl,-z,now -o "$work/libcuprof.so" \
	$(ls csrc/*.c | grep -v /calib.c) -ldl -lpthread)
ldflags=
if [ -n "$libdir" ]; then
	ldflags="-L$libdir"
	export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
$cc -O2 -I"$repo/cudawrap/shim" -o "$work/bench" "$here/bench.c" $ldflags -lcuda -lpthread
mkdir -m 700 "$work/rings"
i=0
while [ "$i" -lt "$repeats" ]; do
	"$work/bench" "$iters" >>"$work/bare"
	CUPROF_CAPTURE=api CUPROF_CAPTURE_KEEP= CUPROF_DIR="$work/rings" CUPROF_BUFFER=8388608 LD_PRELOAD="$work/libcuprof.so" \
		"$work/bench" "$iters" >>"$work/closed"
	rm -f "$work/rings"/*
	CUPROF_DIR="$work/rings" CUPROF_BUFFER=8388608 LD_PRELOAD="$work/libcuprof.so" "$work/bench" "$iters" >>"$work/open"
	rm -f "$work/rings"/*
	i=$((i + 1))
done
for f in bare closed open; do
	sort -k1,1 -k2,2n "$work/$f" | awk -v t="$f" '
		{ v[$1] = v[$1] " " $2; c[$1]++ }
		END { for (k in v) { n = split(substr(v[k], 2), a, " "); printf "%s %s %s %s\n", k, t, a[int((n + 1) / 2)], a[1] } }'
done | sort | awk '
	{ med[$1, $2] = $3; best[$1, $2] = $4; names[$1] = 1 }
	END {
		printf "%-24s %10s %10s %10s %12s %12s\n", "ns per call (median/best)", "bare", "closed", "recording", "closed-bare", "open-bare"
		for (k in names) printf "%-24s %5.1f/%-4.1f %5.1f/%-4.1f %5.1f/%-4.1f %6.1f/%-5.1f %6.1f/%-5.1f\n", k,
			med[k, "bare"], best[k, "bare"], med[k, "closed"], best[k, "closed"], med[k, "open"], best[k, "open"],
			med[k, "closed"] - med[k, "bare"], best[k, "closed"] - best[k, "bare"], med[k, "open"] - med[k, "bare"], best[k, "open"] - best[k, "bare"]
	}'
