#!/usr/bin/env bash
# Two cuprof binaries side by side on one trace: each command of CMDS run
# by BEFORE then AFTER, ROUNDS times, under /usr/bin/time -v, so that both
# see the same load on a shared machine.
#
#   bench/memory/ab.sh BEFORE AFTER TRACE OUTDIR [ROUNDS]
#
# Results go to OUTDIR/ab.tsv (round, binary, command, peak RSS KiB, wall
# and CPU seconds, exit status, the 1-minute load average at the start).
# CMDS (default: report flame lint dump diff) names the commands as
# bench/memory/run.sh does (report-json, flame-memory, ...; diff compares
# the trace with itself; timeline and timeline-json write to a temporary
# file, deleted after each run; export, export-gzip and export-none send
# over OTLP/HTTP to one bench/memory/otlpsink built from this checkout,
# export at each binary's default compression (none since 2026-12-02f, gzip
# before: compare binaries across that change with export-gzip and
# export-none, which set OTEL_EXPORTER_OTLP_COMPRESSION for both), and the
# sink's counts go to OUTDIR/otlpsink.txt). Nothing needs a GPU.
set -euo pipefail
umask 077
before=${1:?usage: bench/memory/ab.sh BEFORE AFTER TRACE OUTDIR [ROUNDS]}
after=${2:?usage: bench/memory/ab.sh BEFORE AFTER TRACE OUTDIR [ROUNDS]}
tr=${3:?usage: bench/memory/ab.sh BEFORE AFTER TRACE OUTDIR [ROUNDS]}
out=${4:?usage: bench/memory/ab.sh BEFORE AFTER TRACE OUTDIR [ROUNDS]}
rounds=${5:-3}
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (GNU time): apt-get install time" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
read -ra cmds <<<"${CMDS:-report flame lint dump diff}"
case " ${cmds[*]} " in
*" export"*)
	(cd "$(dirname "$0")/../.." && go build -o "$tmp/otlpsink" ./bench/memory/otlpsink)
	for try in 1 2 3 4 5; do # a random port: another run may hold it
		sinkport=$((20000 + RANDOM % 20000))
		"$tmp/otlpsink" -addr "127.0.0.1:$sinkport" >"$out/otlpsink.txt" 2>&1 &
		sink=$!
		sleep 0.5
		kill -0 "$sink" 2>/dev/null && break
		[ "$try" -lt 5 ] || { cat "$out/otlpsink.txt" >&2; exit 1; }
	done
	trap 'kill $sink 2>/dev/null || true; rm -rf "$tmp"' EXIT
	;;
esac
printf 'round\tbinary\tcommand\tpeak_rss_kib\twall_s\tcpu_s\texit\tload1\n' >"$out/ab.tsv"
for r in $(seq 1 "$rounds"); do
	for cmd in "${cmds[@]}"; do
		args=("$cmd" "$tr")
		case $cmd in
		report-*) args=(report "$tr" --format "${cmd#report-}") ;;
		lint-*) args=(lint "$tr" --format "${cmd#lint-}") ;;
		flame) args=(flame "$tr" -o "$tmp/flame.pb.gz") ;;
		flame-*) args=(flame "$tr" --view "${cmd#flame-}" -o "$tmp/flame.pb.gz") ;;
		diff) args=(diff "$tr" "$tr") ;;
		timeline) args=(timeline "$tr" -o "$tmp/timeline.pftrace") ;;
		timeline-json) args=(timeline "$tr" --format chrome-json -o "$tmp/timeline.json") ;;
		export | export-none | export-gzip) args=(export "$tr" --otlp="http://127.0.0.1:$sinkport" --otlp-protocol http) ;;
		esac
		cmdenv=
		case $cmd in export-none | export-gzip) cmdenv=OTEL_EXPORTER_OTLP_COMPRESSION=${cmd#export-} ;; esac
		for which in before after; do
			bin=$before
			[ "$which" = after ] && bin=$after
			load=$(cut -d' ' -f1 /proc/loadavg)
			status=0
			env $cmdenv /usr/bin/time -v -o "$tmp/time.txt" "$bin" "${args[@]}" >/dev/null 2>"$tmp/stderr" || status=$?
			rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/time.txt")
			wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$tmp/time.txt" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
			cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$tmp/time.txt")
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$which" "$cmd" "$rss" "$wall" "$cpu" "$status" "$load" | tee -a "$out/ab.tsv"
			rm -f "$tmp/flame.pb.gz" "$tmp/timeline.pftrace" "$tmp/timeline.json"
		done
	done
done
if [ -n "${sink:-}" ]; then
	kill "$sink" 2>/dev/null || true
	wait "$sink" 2>/dev/null || true
fi
