#!/usr/bin/env bash
# bench/apicount/incalib.sh CUPROF OUT [PROCS]: on the GPU machine, the shim's
# calibration in the recorder's cuprof-calib (trace meta) against the same
# routine run inside the program's own process (incalib.py), PROCS (10)
# processes, pinned (bench/lib/pin.sh). OUT/pN.json: incalib.py's line and
# the trace meta's overhead; OUT/incalib.md the table. Run from the
# repository root.
set -u -o pipefail
CUPROF=${1:?usage: incalib.sh CUPROF OUT [PROCS]}
OUT=${2:?usage: incalib.sh CUPROF OUT [PROCS]}
PROCS=${3:-10}
D=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-python3}
# shellcheck source=../lib/pin.sh
. "$D/../lib/pin.sh"
pin_setup
mkdir -p "$OUT" || exit 1
for ((p = 1; p <= PROCS; p++)); do
	"${PIN_TOOL[@]}" "$CUPROF" record -o "$OUT/t.cuprof" -- "${PIN_PROG[@]}" "$PY" "$D/incalib.py" >"$OUT/p$p.out" 2>"$OUT/p$p.log" ||
		echo "incalib.sh: process $p: exit status $? (see $OUT/p$p.log)" >&2
	"$CUPROF" report --format json "$OUT/t.cuprof" 2>>"$OUT/p$p.log" |
		"$PY" -c 'import json, sys; r = json.load(sys.stdin); print(json.dumps(r["overhead"]))' >"$OUT/p$p.meta.json"
	rm -f "$OUT/t.cuprof"
done
"$PY" - "$OUT" "$PROCS" <<'PYEOF' | tee "$OUT/incalib.md"
import json, os, sys
out, procs = sys.argv[1], int(sys.argv[2])
print("| process | cuprof-calib added / inside | in process, first | in process, after 20,000 create_stream |")
print("| ---: | --- | --- | --- |")
for p in range(1, procs + 1):
    try:
        line = json.loads(open(os.path.join(out, "p%d.out" % p)).read().strip().splitlines()[-1])
        meta = json.load(open(os.path.join(out, "p%d.meta.json" % p)))
    except (OSError, ValueError, IndexError):
        print("| %d | (failed) | | |" % p)
        continue
    f, a = line["first"] or {}, line["after"] or {}
    print("| %d | %.1f / %.1f | %s / %s | %s / %s |" % (p, meta["added_ns"], meta["inside_ns"], f.get("added_ns"),
                                                     f.get("inside_ns"), a.get("added_ns"), a.get("inside_ns")))
PYEOF
