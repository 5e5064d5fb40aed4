#!/bin/bash
# bench/python/ab_chain.sh: two cuprof binaries side by side on events.py's
# chain in thread CPU time (chain_cputime.py), for a change to the Python
# frames' cost per event.
#
#   bench/python/ab_chain.sh [--rounds N] [--sim] OUTDIR CUPROF_A CUPROF_B
#
# Runs bare, A and B in N interleaved rounds (default 7) on $PYTHON
# (default python3), each process pinned as bench/lib/pin.sh says, and
# writes OUTDIR/raw.txt (one line per process: mode, ns per chain call, ns
# per empty call) and OUTDIR/results.txt: per mode the minimum over the
# processes, the ns added per Python call over bare, and B's added over
# A's. --sim records with cuprof's simulated driver and runs bare on it
# (a CPU machine; SIMDIR is the directory cuprof record --sim puts first
# on LD_LIBRARY_PATH). Under ten seconds a round.
set -u
rounds=7 sim=()
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--sim) sim=(--sim); shift ;;
	*) break ;;
	esac
done
if [ $# -ne 3 ]; then
	echo "usage: $0 [--rounds N] [--sim] OUTDIR CUPROF_A CUPROF_B" >&2
	exit 2
fi
out=$1 a=$2 b=$3
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
. "$here/../lib/pin.sh"
pin_setup
mkdir -p "$out" || exit 1
if [ ${#sim[@]} -gt 0 ] && [ -z "${SIMDIR:-}" ]; then
	echo "$0: --sim needs SIMDIR (the simulated driver's directory) for the bare runs" >&2
	exit 2
fi
benv=()
[ -n "${SIMDIR:-}" ] && benv=(LD_LIBRARY_PATH="$SIMDIR")
raw=$out/raw.txt
: >"$raw"
for r in $(seq "$rounds"); do
	for m in bare A B; do
		case $m in
		bare) line=$(env "${benv[@]}" "${PIN_PROG[@]}" "$py" "$here/chain_cputime.py" bare) ;;
		A) line=$("${PIN_TOOL[@]}" "$a" record "${sim[@]}" -o "$out/a.cuprof" -- "${PIN_PROG[@]}" "$py" "$here/chain_cputime.py" 2>>"$out/record.log") ;;
		B) line=$("${PIN_TOOL[@]}" "$b" record "${sim[@]}" -o "$out/b.cuprof" -- "${PIN_PROG[@]}" "$py" "$here/chain_cputime.py" 2>>"$out/record.log") ;;
		esac
		echo "$m $line" >>"$raw"
	done
done
rm -f "$out/a.cuprof" "$out/b.cuprof"
awk -v py="$("$py" -c 'import platform; print(platform.python_version())')" -v pin="$PIN_DESC" -v n="$rounds" '
NF >= 2 { if (!($1 in m) || $2 < m[$1]) m[$1] = $2 }
END {
	if (!("bare" in m) || !("A" in m) || !("B" in m)) { print "a mode has no result: see raw.txt and record.log"; exit 1 }
	printf "CPython %s, %d rounds, pinning: %s; ns per Python call on the chain (minimum over processes)\n", py, n, pin
	printf "bare %.1f\nA    %.1f (+%.1f)\nB    %.1f (+%.1f)\nB added / A added: %.3f\n", m["bare"], m["A"], m["A"] - m["bare"], m["B"], m["B"] - m["bare"], (m["B"] - m["bare"]) / (m["A"] - m["bare"])
}' "$raw" | tee "$out/results.txt"
