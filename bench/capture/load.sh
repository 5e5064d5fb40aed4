#!/bin/sh
# Capture under load: THREADS threads each making CALLS cuCtxGetCurrent calls
# as fast as they can (internal/record/testdata/threads.c) under
# `cuprof record --sim` with each --when-full policy, REPEATS times; prints
# one line per run: made, recorded, dropped (and %), writer waits, wall time.
#
#   bench/capture/load.sh [-c CUPROF] [-n CALLS] [-t "16 64"] [-p "drop wait"] [-r REPEATS] [-b BUFFER]
#
# Needs gcc and a cuprof binary (default bin/cuprof, or go build it first).
# Each run records into a temporary folder, deleted at the end. The simulated
# driver spends the H200's cost per call (CUPROF_SIM_COST_SCALE unset).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cuprof=$repo/bin/cuprof calls=1000000 threads="16 64" policies="drop wait" repeats=1 buffer=64M
while getopts c:n:t:p:r:b: o; do
	case $o in
	c) cuprof=$OPTARG ;;
	n) calls=$OPTARG ;;
	t) threads=$OPTARG ;;
	p) policies=$OPTARG ;;
	r) repeats=$OPTARG ;;
	b) buffer=$OPTARG ;;
	*) sed -n '7p' "$0" | sed 's/^# *//' >&2; exit 2 ;;
	esac
done
[ -x "$cuprof" ] || { echo "load.sh: no cuprof binary at $cuprof (go build -o bin/cuprof ./cmd/cuprof, or -c PATH)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CUPROF_CACHE_DIR="$work/cache"
"$cuprof" record --sim -o "$work/warm.cuprof" -- true >/dev/null 2>&1
sim=$(find "$CUPROF_CACHE_DIR" -path '*/sim-*/libcuda.so' | head -1)
[ -n "$sim" ] || { echo "load.sh: cuprof built no simulated driver under $CUPROF_CACHE_DIR" >&2; exit 1; }
${CC:-gcc} -O2 -I"$repo/cudawrap/shim" -o "$work/threads" "$repo/internal/record/testdata/threads.c" \
	-L"$(dirname "$sim")" -lcuda -lpthread
printf '%-7s %-8s %-6s %10s %10s %10s %7s %7s %10s %7s\n' threads calls policy made recorded dropped drop% waits waited "wall s"
echo "# $(date -u "+%F %T UTC"), $(nproc) CPUs, load average $(cut -d" " -f1-3 /proc/loadavg)"
i=0
while [ "$i" -lt "$repeats" ]; do
	for t in $threads; do
		for p in $policies; do
			t0=$(date +%s.%N)
			"$cuprof" record --sim --buffer "$buffer" --when-full "$p" -o "$work/run.cuprof" -- \
				"$work/threads" "$calls" "$t" >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
			t1=$(date +%s.%N)
			rm -f "$work/run.cuprof"
			made=$(sed -n 's/^made \([0-9]*\).*/\1/p' "$work/out")
			# "cuprof: N events ...; D events dropped ...; threads waited W times for room ... (X in all ..."
			awk -v t="$t" -v n="$calls" -v p="$p" -v made="$made" -v t0="$t0" -v t1="$t1" '
				/^cuprof: [0-9]+ events? from/ {
					ev = $2; drop = 0; waits = 0; secs = 0
					if (match($0, /; [0-9]+ events dropped/)) { s = substr($0, RSTART + 2); split(s, a, " "); drop = a[1] }
					if (match($0, /waited [0-9]+ times/)) { s = substr($0, RSTART); split(s, a, " "); waits = a[2] }
					if (match($0, /\([^ ]+ in all/)) { s = substr($0, RSTART + 1, RLENGTH - 8); secs = s }
					rec = ev - 1 # cuInit
					printf "%-7s %-8s %-6s %10d %10d %10d %6.2f%% %7d %10s %7.2f\n", t, n, p, made, rec, drop, 100 * drop / made, waits, secs, t1 - t0
				}' "$work/err"
		done
	done
	i=$((i + 1))
done
