#!/usr/bin/env bash
# Peak memory and time of cuprof's trace readers against trace length.
#
#   bench/memory/run.sh OUTDIR [LENGTH...]
#
# Builds cuprof, writes synthetic traces (the LoopTrace mix of internal/tracetest:
# 2 threads, a range and 7 driver calls per iteration) of each LENGTH events
# (default 1M 5M 10M; add 100M for the long run, ~650 MB of trace), and runs
# `cuprof dump`, `report`, `lint` and `flame` in each of its views (api,
# memory, lifetime) on each under /usr/bin/time -v, recording the peak
# resident set size, the wall time and the CPU time (user + system: on a
# shared machine the wall time says more about the neighbours). It then runs
# the streaming reader's Go benchmarks (trace: BenchmarkStreamRead,
# BenchmarkStreamReport, BenchmarkReadFileReport; GO_BENCH=0 leaves them
# out). Results go to OUTDIR: results.tsv (length, command, peak RSS KiB,
# wall and CPU seconds, exit status, trace bytes), machine.txt (the machine
# and the commit), the Go benchmark output bench.txt, and each command's
# stderr. The traces and the binaries are deleted. Nothing needs a GPU.
#
# CMDS="report lint" runs only those commands. CLI commands run only on
# traces of at most CLI_MAX_EVENTS events (default
# 1000M: every command reads the trace as a stream now; lower it to measure a
# command that holds every event); the Go benchmarks stream every length.
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

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/cuprof" ./cmd/cuprof
go build -o "$bin/gentrace" ./bench/memory/gentrace
{
	echo "date: $(date -u +%FT%TZ)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (modified)')"
	echo "cpu: $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
	echo "memory: $(free -g | awk '/Mem:/ {print $2 " GiB"}')"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	go version
} >"$out/machine.txt"

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
	"$bin/gentrace" -events "$n" -o "$tr"
	size=$(stat -c %s "$tr")
	read -ra cmds <<<"${CMDS:-dump report lint flame flame-memory flame-lifetime}"
	[ "$n" -le "${CLI_MAX_EVENTS:-1000000000}" ] || cmds=()
	for cmd in "${cmds[@]}"; do
		args=("$cmd" "$tr")
		case $cmd in
		flame) args=(flame "$tr" -o "$bin/flame.pb.gz") ;;
		flame-*) args=(flame "$tr" --view "${cmd#flame-}" -o "$bin/flame.pb.gz") ;;
		esac
		log="$out/$cmd-$len.stderr"
		status=0
		/usr/bin/time -v -o "$out/time.txt" "$bin/cuprof" "${args[@]}" >/dev/null 2>"$log" || status=$?
		rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out/time.txt")
		wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$out/time.txt")
		secs=$(echo "$wall" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
		cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$out/time.txt")
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$cmd" "$rss" "$secs" "$cpu" "$status" "$size" | tee -a "$out/results.tsv"
		rm -f "$bin/flame.pb.gz"
		[ -s "$log" ] || rm -f "$log"
	done
	rm -f "$tr"
done
rm -f "$out/time.txt"
[ "${GO_BENCH:-1}" = 1 ] || exit 0

large=
for len in "${lengths[@]}"; do [ "$(events "$len")" -ge 100000000 ] && large=1; done
CUPROF_BENCH_LARGE=$large go test ./trace -run '^$' -bench 'StreamRead|StreamReport|ReadFileReport' -benchtime 1x -timeout 60m | tee "$out/bench.txt"
