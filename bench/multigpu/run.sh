#!/usr/bin/env bash
# Multi-GPU validation of cuprof's device attribution.
#
#   bench/multigpu/run.sh [--devices 0,1] [--rounds N] [--programs cudacore,torch,go]
#                         [--no-otlp] [--strict-dump] RESULTS_DIR
#
# (--programs takes names of examples/python/multigpu_NAME.py, "go" for the Go
# example examples/multigpu built as bin/multigpu, or script paths;
# bench/multigpu/sim_program.py runs on a CPU against cuprof's simulated driver.)
#
# For each program (examples/python/multigpu_cudacore.py, multigpu_torch.py, and
# the Go example: ROOT/bin/multigpu, built on a machine with Go by
# `go build -o bin/multigpu ./examples/multigpu` and carried; "skipped" when absent):
#   1. one process alternating devices, under `cuprof record`;
#   2. two processes, one per device, started by launch.py under one
#      `cuprof record` (one trace), then exported with `cuprof export --otlp`
#      to otlp_sink.py on 127.0.0.1 to check one resource per process.
# Each trace is reported (text and JSON, per-device tables), turned into a
# pprof profile (`cuprof flame`), exported to otlp_sink.py, and its exported
# call spans checked with check.py against what the program printed; the raw
# dump (`cuprof dump`) is checked too (fatal only with --strict-dump). Exits 1
# if any check failed.
# With one GPU, both modes use device 0 (attribution still checked, nothing
# cross-device). Environment: CUPROF (default ROOT/bin/cuprof), PYTHON,
# MULTIGPU_GO (the Go example's binary, default ROOT/bin/multigpu).
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CUPROF=${CUPROF:-$ROOT/bin/cuprof}
PY=${PYTHON:-python3}
GOPROG=${MULTIGPU_GO:-$ROOT/bin/multigpu}
DEVICES=
ROUNDS=4
PROGRAMS=cudacore,torch,go
OTLP=1
STRICT_DUMP=0
RESULTS=
usage() {
	sed -n '4,9p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}
while [ $# -gt 0 ]; do
	case $1 in
	--devices) DEVICES=${2:?--devices wants a list}; shift ;;
	--rounds) ROUNDS=${2:?--rounds wants a number}; shift ;;
	--programs) PROGRAMS=${2:?--programs wants a list}; shift ;;
	--no-otlp) OTLP=0 ;;
	--strict-dump) STRICT_DUMP=1 ;;
	-h | --help) usage 0 ;;
	-*) echo "run.sh: unknown flag $1" >&2; usage ;;
	*) [ -z "$RESULTS" ] || usage; RESULTS=$1 ;;
	esac
	shift
done
[ -n "$RESULTS" ] || usage
mkdir -p "$RESULTS" || exit 1
RESULTS=$(cd "$RESULTS" && pwd)
exec 2> >(tee -a "$RESULTS/run.log" >&2)
log() { printf '[%4ds] %s\n' "$SECONDS" "$*" >&2; }

if [ ! -x "$CUPROF" ]; then
	log "no cuprof binary at $CUPROF (build it with: go build -o bin/cuprof ./cmd/cuprof)"
	exit 2
fi
if [ -z "$DEVICES" ]; then
	ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
	if [ "${ngpu:-0}" -ge 2 ]; then DEVICES=0,1; else DEVICES=0; fi
	log "$ngpu GPUs: devices $DEVICES"
fi
IFS=, read -r -a DEVLIST <<<"$DEVICES"
NPROCS=2
if [ "${#DEVLIST[@]}" -lt 2 ]; then
	log "one device: the two-process run puts both processes on device ${DEVLIST[0]}"
fi

FAILED=0
SINK_PID=

# check SOURCE OUT PROGRAM_JSON...: runs check.py on SOURCE (a dump or an OTLP
# summary), output to OUT.txt and OUT.json; returns its status.
check() {
	local source=$1 out=$2
	shift 2
	"$PY" "$HERE/check.py" "$source" "$@" --json "$out.json" >"$out.txt"
	local rc=$?
	cat "$out.txt"
	return "$rc"
}

# analyse NAME PROGRAM_JSON...: report, flame, export and check the trace NAME.cuprof.
# The exported OTLP spans carry the device cuprof attributed to each call: they
# decide. The dump (raw recorded calls) is checked too; it fails the run only
# with --strict-dump, since the recorder may leave devices to the analysis.
analyse() {
	local name=$1
	shift
	local trace=$RESULTS/$name.cuprof
	if [ ! -s "$trace" ]; then
		log "$name: no trace"
		FAILED=1
		return 1
	fi
	"$CUPROF" report "$trace" >"$RESULTS/$name.report.txt" 2>>"$RESULTS/run.log" || log "$name: cuprof report failed"
	"$CUPROF" report --format json "$trace" >"$RESULTS/$name.report.json" 2>>"$RESULTS/run.log" || true
	"$CUPROF" flame "$trace" -o "$RESULTS/$name.pb.gz" >>"$RESULTS/run.log" 2>&1 || log "$name: cuprof flame failed"
	if [ "$OTLP" = 1 ]; then
		export_otlp "$name"
		if [ -s "$RESULTS/$name.otlp.json" ]; then
			if check "$RESULTS/$name.otlp.json" "$RESULTS/$name.check-otlp" "$@"; then
				log "$name: exported spans: attribution checks passed"
			else
				log "$name: exported spans: attribution checks FAILED"
				FAILED=1
			fi
		fi
	fi
	if ! "$CUPROF" dump "$trace" >"$RESULTS/$name.txt" 2>>"$RESULTS/run.log"; then
		log "$name: cuprof dump failed: recorded calls not checked"
		[ "$STRICT_DUMP" = 0 ] || FAILED=1
		return 0
	fi
	if check "$RESULTS/$name.txt" "$RESULTS/$name.check-dump" "$@"; then
		log "$name: recorded calls (dump): attribution checks passed"
	else
		log "$name: recorded calls (dump): attribution checks FAILED"
		[ "$STRICT_DUMP" = 0 ] || FAILED=1
	fi
}

# export_otlp NAME: sends NAME.cuprof to a local otlp_sink.py; its summary is NAME.otlp.json.
export_otlp() {
	local name=$1 port_file=$RESULTS/$1.otlp.port port
	rm -f "$port_file"
	"$PY" "$HERE/otlp_sink.py" --port-file "$port_file" --out "$RESULTS/$name.otlp.json" &
	SINK_PID=$!
	for _ in $(seq 50); do
		[ -s "$port_file" ] && break
		sleep 0.1
	done
	if [ ! -s "$port_file" ]; then
		log "$name: otlp_sink.py did not start"
	else
		port=$(cat "$port_file")
		if ! "$CUPROF" export "$RESULTS/$name.cuprof" --otlp "http://127.0.0.1:$port" --protocol http \
			>"$RESULTS/$name.export.txt" 2>&1; then
			log "$name: cuprof export failed (see $name.export.txt)"
			FAILED=1
		fi
	fi
	kill "$SINK_PID" 2>/dev/null
	wait "$SINK_PID" 2>/dev/null
	SINK_PID=
}
trap '[ -z "$SINK_PID" ] || kill "$SINK_PID" 2>/dev/null' EXIT

for prog in ${PROGRAMS//,/ }; do
	# "go" is the Go example (a binary); a name is one of
	# examples/python/multigpu_NAME.py; a path is used as is.
	case $prog in
	go)
		if [ ! -x "$GOPROG" ]; then
			log "go: skipped (no Go example binary at $GOPROG; build it where Go is installed with: go build -o bin/multigpu ./examples/multigpu)"
			continue
		fi
		runner=("$GOPROG") ;;
	*/*) runner=("$PY" "$prog"); prog=$(basename "$prog" .py) ;;
	*) runner=("$PY" "$ROOT/examples/python/multigpu_$prog.py") ;;
	esac
	name=$prog
	log "$name: one process, devices $DEVICES, $ROUNDS rounds"
	if ! timeout -k 5 180 "$CUPROF" record -o "$RESULTS/$name.cuprof" -- \
		"${runner[@]}" --devices "$DEVICES" --rounds "$ROUNDS" --out "$RESULTS/$name.json" \
		>"$RESULTS/$name.stdout" 2>"$RESULTS/$name.stderr"; then
		log "$name: the program or cuprof record failed (see $name.stderr)"
		FAILED=1
	fi
	[ -f "$RESULTS/$name.json" ] && analyse "$name" "$RESULTS/$name.json"

	name=two-$prog
	log "$name: $NPROCS processes, one per device, in one trace"
	if ! timeout -k 5 240 "$CUPROF" record -o "$RESULTS/$name.cuprof" -- \
		"$PY" "$HERE/launch.py" --nprocs "$NPROCS" --devices "$DEVICES" -- \
		"${runner[@]}" --devices "{device}" --rounds "$ROUNDS" --out "$RESULTS/$name-{rank}.json" \
		>"$RESULTS/$name.stdout" 2>"$RESULTS/$name.stderr"; then
		log "$name: a program or cuprof record failed (see $name.stderr)"
		FAILED=1
	fi
	progs=()
	for ((r = 0; r < NPROCS; r++)); do
		[ -f "$RESULTS/$name-$r.json" ] && progs+=("$RESULTS/$name-$r.json")
	done
	if [ "${#progs[@]}" -gt 0 ]; then analyse "$name" "${progs[@]}"; fi
done

if [ "$FAILED" = 0 ]; then log "all multi-GPU checks passed; results in $RESULTS"; else log "some checks FAILED; results in $RESULTS"; fi
exit "$FAILED"
