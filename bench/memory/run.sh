#!/usr/bin/env bash
# Peak memory and time of cuprof's trace readers against trace length.
#
#   bench/memory/run.sh OUTDIR [LENGTH...]
#
# Builds cuprof, writes synthetic traces (the LoopTrace mix of internal/tracetest:
# 2 threads, a range and 7 driver calls per iteration) of each LENGTH events
# (default 1M 5M 10M; add 100M for the long run, ~650 MB of trace), and runs
# `cuprof dump`, `report`, `lint` and `flame` on each under /usr/bin/time -v,
# recording the peak resident set size, the wall time and the CPU time (user +
# system: on a shared machine the wall time says more about the neighbours). It then runs the
# streaming reader's Go benchmarks (trace: BenchmarkStreamRead,
# BenchmarkStreamReport, BenchmarkReadFileReport). Results go to OUTDIR:
# results.tsv (length, command, peak RSS KiB, wall and CPU seconds, exit status), the Go
# benchmark output bench.txt, and each command's stderr. Nothing needs a GPU.
#
# Commands that hold every event may need far more memory than the machine has
# (report needed ~245 B/event before the streaming work): CLI commands run only
# on traces of at most CLI_MAX_EVENTS events (default 10M); the Go benchmarks
# stream every length.
set -euo pipefail
umask 077
cd "$(dirname "$0")/../.."

out=${1:?usage: bench/memory/run.sh OUTDIR [LENGTH...]}
shift
lengths=("$@")
[ ${#lengths[@]} -gt 0 ] || lengths=(1M 5M 10M)
mkdir -p "$out"
chmod 700 "$out"
out=$(cd "$out" && pwd)
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (GNU time): apt-get install time" >&2; exit 1; }

go build -o "$out/cuprof" ./cmd/cuprof
go build -o "$out/gentrace" ./bench/memory/gentrace

events() { # 5M -> 5000000
	case $1 in
	*M) echo $((${1%M} * 1000000)) ;;
	*k) echo $((${1%k} * 1000)) ;;
	*) echo "$1" ;;
	esac
}

printf 'events\tcommand\tpeak_rss_kib\twall_s\tcpu_s\texit\ttrace_bytes\n' >"$out/results.tsv"
for len in "${lengths[@]}"; do
	n=$(events "$len")
	tr="$out/loop-$len.cuprof"
	rm -f "$tr"
	"$out/gentrace" -events "$n" -o "$tr"
	size=$(stat -c %s "$tr")
	cmds=(dump report lint flame)
	[ "$n" -le "${CLI_MAX_EVENTS:-10000000}" ] || cmds=()
	for cmd in "${cmds[@]}"; do
		args=("$cmd" "$tr")
		[ "$cmd" = flame ] && args=(flame "$tr" -o "$out/flame-$len.pb.gz")
		log="$out/$cmd-$len.stderr"
		status=0
		/usr/bin/time -v -o "$out/time.txt" "$out/cuprof" "${args[@]}" >/dev/null 2>"$log" || status=$?
		rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out/time.txt")
		wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$out/time.txt")
		secs=$(echo "$wall" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
		cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$out/time.txt")
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$cmd" "$rss" "$secs" "$cpu" "$status" "$size" | tee -a "$out/results.tsv"
		rm -f "$out/flame-$len.pb.gz" "$out/flame-$len.pb.gz.old"
	done
	rm -f "$tr"
done
rm -f "$out/time.txt" "$out/gentrace"

large=
for len in "${lengths[@]}"; do [ "$(events "$len")" -ge 100000000 ] && large=1; done
CUPROF_BENCH_LARGE=$large go test ./trace -run '^$' -bench 'StreamRead|StreamReport|ReadFileReport' -benchtime 1x -timeout 60m | tee "$out/bench.txt"
