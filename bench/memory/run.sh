#!/usr/bin/env bash
# Peak memory and time of every cuprof command that reads a trace, against
# trace length.
#
#   bench/memory/run.sh OUTDIR [LENGTH...]
#
# Builds cuprof, writes synthetic traces (the LoopTrace mix of internal/tracetest:
# 2 threads, a range and 7 driver calls per iteration) of each LENGTH events
# (default 1M 5M 10M; 50M is about 330 MB of trace), and runs each command of
# CMDS on each under /usr/bin/time -v, recording the peak resident set size,
# the wall time and the CPU time (user + system: on a shared machine the wall
# time says more about the neighbours). The commands (default: all of them):
# dump, report (text, json, csv), lint (text, json), flame in each view (api,
# memory, lifetime), diff (the trace against itself), export (OTLP/HTTP to
# bench/memory/otlpsink, a collector that keeps nothing, at the binary's
# default compression: none since 2026-12-02f, gzip before; export-gzip and
# export-none the same with OTEL_EXPORTER_OTLP_COMPRESSION=gzip or none), timeline (Perfetto
# and Chrome JSON). view serves what flame builds and is not run. Each
# command writes a pprof CPU profile (CUPROF_CPUPROFILE) beside its results,
# and the machine's 1-minute load average as it starts is recorded (the
# machine may be shared: CPU time is what to compare). It then
# runs the streaming reader's Go benchmarks (trace: BenchmarkStreamRead,
# BenchmarkStreamReport, BenchmarkReadFileReport; GO_BENCH=0 leaves them
# out). Results go to OUTDIR: results.tsv (length, command, peak RSS KiB,
# wall and CPU seconds, exit status, trace bytes, load average),
# machine.txt (the machine and the commit), the Go benchmark output
# bench.txt, each command's CPU profile CMD-LENGTH.cpu.pprof and its
# stderr. The traces and the binaries are deleted. Nothing needs a GPU.
#
# SHAPES="loop churn streams live python threads procs" runs each command on
# a trace of each shape (gentrace -list says what each holds; default: loop
# only); results.tsv's last column names it.
#
# CMDS="report lint" runs only those commands. CLI commands run only on
# traces of at most CLI_MAX_EVENTS events (default 1000M); the timeline
# commands stream like the others and have no limit of their own.
# bench/memory/tables.py turns results.tsv into the tables and the goals.
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
go build -o "$bin/otlpsink" ./bench/memory/otlpsink
sinkport=$((20000 + RANDOM % 20000))
"$bin/otlpsink" -addr "127.0.0.1:$sinkport" >"$out/otlpsink.txt" &
sink=$!
trap 'kill $sink 2>/dev/null || true; rm -rf "$bin"' EXIT
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

printf 'events\tcommand\tpeak_rss_kib\twall_s\tcpu_s\texit\ttrace_bytes\tload1\tshape\n' >"$out/results.tsv"
read -ra shapes <<<"${SHAPES:-loop}"
for shape in "${shapes[@]}"; do
for len in "${lengths[@]}"; do
	n=$(events "$len")
	tr="$out/$shape-$len.cuprof"
	rm -f "$tr"
	"$bin/gentrace" -shape "$shape" -events "$n" -o "$tr"
	size=$(stat -c %s "$tr")
	read -ra cmds <<<"${CMDS:-dump report report-json report-csv lint lint-json flame flame-memory flame-lifetime diff export export-none timeline timeline-json}"
	[ "$n" -le "${CLI_MAX_EVENTS:-1000000000}" ] || cmds=()
	for cmd in "${cmds[@]}"; do
		args=("$cmd" "$tr")
		cmdenv=
		case $cmd in
		report-*) args=(report "$tr" --format "${cmd#report-}") ;;
		lint-*) args=(lint "$tr" --format "${cmd#lint-}") ;;
		flame) args=(flame "$tr" -o "$bin/flame.pb.gz") ;;
		flame-*) args=(flame "$tr" --view "${cmd#flame-}" -o "$bin/flame.pb.gz") ;;
		diff) args=(diff "$tr" "$tr") ;;
		export) args=(export "$tr" --otlp="http://127.0.0.1:$sinkport" --otlp-protocol http) ;;
		export-none | export-gzip)
			args=(export "$tr" --otlp="http://127.0.0.1:$sinkport" --otlp-protocol http)
			cmdenv=OTEL_EXPORTER_OTLP_COMPRESSION=${cmd#export-}
			;;
		timeline) args=(timeline "$tr" -o "$bin/timeline.pftrace") ;;
		timeline-json) args=(timeline "$tr" --format chrome-json -o "$bin/timeline.json") ;;
		esac
		name=$cmd-$len
		[ "$shape" = loop ] || name=$shape-$cmd-$len
		log="$out/$name.stderr"
		status=0
		load=$(cut -d' ' -f1 /proc/loadavg)
		rm -f "$out/$name.cpu.pprof"
		env $cmdenv CUPROF_CPUPROFILE="$out/$name.cpu.pprof" /usr/bin/time -v -o "$out/time.txt" "$bin/cuprof" "${args[@]}" >/dev/null 2>"$log" || status=$?
		rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out/time.txt")
		wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$out/time.txt")
		secs=$(echo "$wall" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
		cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$out/time.txt")
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$cmd" "$rss" "$secs" "$cpu" "$status" "$size" "$load" "$shape" | tee -a "$out/results.tsv"
		rm -f "$bin/flame.pb.gz" "$bin/timeline.pftrace" "$bin/timeline.json"
		[ -s "$log" ] || rm -f "$log"
	done
	rm -f "$tr"
done
done
rm -f "$out/time.txt"
kill "$sink" 2>/dev/null || true
wait "$sink" 2>/dev/null || true
[ "${GO_BENCH:-1}" = 1 ] || exit 0

large=
for len in "${lengths[@]}"; do [ "$(events "$len")" -ge 100000000 ] && large=1; done
CUPROF_BENCH_LARGE=$large go test ./trace -run '^$' -bench 'StreamRead|StreamReport|ReadFileReport' -benchtime 1x -timeout 60m | tee "$out/bench.txt"
