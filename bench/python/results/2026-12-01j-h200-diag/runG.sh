#!/usr/bin/env bash
# lead's run G (diagnostic): cp.empty's and torch ops' cost per Python mode, with a counting build.
set -u
export PYTHONUNBUFFERED=1
R=/tmp/rG; mkdir -p $R/diag
gunzip -c .device-lead/bin/cuprof-dbg.gz > /tmp/cuprof-dbg && chmod +x /tmp/cuprof-dbg
T0=$SECONDS
. bench/lib/pin.sh; pin_setup
for i in 1 2 3 4 5; do
  "${PIN_PROG[@]}" python3 .device-lead/cediag.py > $R/diag/bare-$i.json 2>$R/diag/bare-$i.err
  for m in full stacks; do
    CUPROF_PY_DEBUG=1 "${PIN_TOOL[@]}" /tmp/cuprof-dbg record --python=$m -o $R/diag/$m-$i.cuprof -- "${PIN_PROG[@]}" python3 .device-lead/cediag.py > $R/diag/$m-$i.json 2>$R/diag/$m-$i.err
    [ $i = 1 ] && /tmp/cuprof-dbg report --format json $R/diag/$m-$i.cuprof > $R/diag/$m-$i.report.json 2>&1
    rm -f $R/diag/$m-$i.cuprof
  done
done
echo "cupy diag done at $((SECONDS-T0))s" >> $R/times.txt
for i in 1 2 3; do
  "${PIN_PROG[@]}" python3 .device-lead/tdiag.py > $R/diag/tbare-$i.json 2>$R/diag/tbare-$i.err
  for m in full stacks off; do
    CUPROF_PY_DEBUG=1 "${PIN_TOOL[@]}" /tmp/cuprof-dbg record --python=$m -o $R/diag/t$m-$i.cuprof -- "${PIN_PROG[@]}" python3 .device-lead/tdiag.py > $R/diag/t$m-$i.json 2>$R/diag/t$m-$i.err
    [ $i = 1 ] && /tmp/cuprof-dbg report --format json $R/diag/t$m-$i.cuprof > $R/diag/t$m-$i.report.json 2>&1
    rm -f $R/diag/t$m-$i.cuprof
  done
  [ $((SECONDS-T0)) -gt 230 ] && break
done
echo "torch diag done at $((SECONDS-T0))s" >> $R/times.txt
CUPROF_PY_DEBUG=1 "${PIN_TOOL[@]}" /tmp/cuprof-dbg record -o $R/diag/mlp.cuprof -- "${PIN_PROG[@]}" python3 bench/suite/workload_torch.py --tool none --steps 300 --out $R/diag/mlp.json > $R/diag/mlp.out 2>&1
/tmp/cuprof-dbg report --format json $R/diag/mlp.cuprof > $R/diag/mlp.report.json 2>&1
rm -f $R/diag/mlp.cuprof
echo "mlp diag done at $((SECONDS-T0))s" >> $R/times.txt
tar -C /tmp -czf $OUT/rG.tgz rG
cat $R/times.txt; grep -h cuprof-debug $R/diag/*.err $R/diag/mlp.out | head -30
python3 - <<'PY'
import json, glob, statistics as st
for pat in ("bare", "full", "stacks", "tbare", "tfull", "tstacks", "toff"):
    for p in sorted(glob.glob(f"/tmp/rG/diag/{pat}-*.json")):
        if p.endswith("report.json"): continue
        try: d = json.load(open(p))
        except Exception as e: print(p, "bad", e); continue
        print(pat, "probe", f"{st.median(d['probe']):.1f}", " ".join(f"{k}={min(v):.3f}" for k, v in d["us"].items()))
PY
