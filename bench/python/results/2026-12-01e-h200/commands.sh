#!/usr/bin/env bash
# lead's run B: torch statements by tool (pinned), then the full Python bench.
set -u
export PYTHONUNBUFFERED=1
R=/tmp/rB; mkdir -p $R/ts
gunzip -c .device-lead/bin/cuprof.gz > /tmp/cuprof && chmod +x /tmp/cuprof && gunzip -c .device-lead/bin/cuprof-old.gz > /tmp/cuprof-old && chmod +x /tmp/cuprof-old
C=/tmp/cuprof
T0=$SECONDS
log() { echo "[$((SECONDS-T0))s] $*" >> $R/times.txt; }
$C record -o $R/warm.cuprof -- python3 -c pass > /dev/null 2>&1
PP=(taskset -c 2,3); PT=(taskset -c 4,5)
rot() { local k=$1; shift; local a=("$@"); local n=${#a[@]}; for ((i=0;i<n;i++)); do echo "${a[$(((i+k)%n))]}"; done; }
"${PP[@]}" python3 bench/python/torch_statements.py --tool none --out $R/ts/cal.json > $R/ts/cal.log 2>&1
NUM=$(python3 -c 'import json,sys;d=json.load(open(sys.argv[1]));print(json.dumps({r["id"]:r["number"] for r in d["results"]}))' $R/ts/cal.json)
log "torch statements $NUM"
tools=(none cuprof stacks off)
for r in 1 2; do
  mapfile -t order < <(rot $((r-1)) "${tools[@]}")
  for t in "${order[@]}"; do
    b=$R/ts/$t.r$r; pre=()
    case $t in cuprof) pre=("${PT[@]}" $C record -o $b.cuprof --);; stacks) pre=("${PT[@]}" $C record --python=stacks -o $b.cuprof --);; off) pre=("${PT[@]}" $C record --python=off -o $b.cuprof --);; esac
    timeout 60 "${pre[@]}" "${PP[@]}" python3 bench/python/torch_statements.py --tool $t --numbers "$NUM" --out $b.json > $b.log 2>&1
    if [ -f $b.cuprof ]; then [ $r = 1 ] && timeout 60 $C report --format json $b.cuprof > $b.report.json 2>/dev/null; rm -f $b.cuprof; fi
  done
  log "torch statements round $r"
done
timeout 70 bench/python/ab_chain.sh --rounds 5 $R/ab /tmp/cuprof-old $C > $R/ab.log 2>&1
log "ab done"
CUPROF=$C timeout ${PYT:-275} bench/python/run.sh --workloads torch,cupy --budget ${PYB:-250} $R/python > $R/python.log 2>&1
log "python bench done"
find $R -name '*.cuprof' -delete
tar -C /tmp -czf $OUT/rB.tgz rB
cp $R/python/results.md $OUT/python-results.md 2>/dev/null
python3 .device-lead/sumts.py $R/ts | tee $OUT/ts.txt
cat $R/times.txt; cat $R/ab/results.txt
