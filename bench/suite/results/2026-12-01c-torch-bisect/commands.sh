#!/usr/bin/env bash
# diagnostic run: torch_mlp bisect (old/new binaries, python modes) and the seed statements by python mode.
set -u
export PYTHONUNBUFFERED=1
R=/tmp/d1; mkdir -p $R/wl $R/st; B=/tmp/bin; mkdir -p $B
for f in .device-lead/bin/*.gz; do n=$(basename $f .gz); gunzip -c $f > $B/$n; chmod +x $B/$n; done
T0=$SECONDS
log() { echo "[$((SECONDS-T0))s] $*" | tee -a $R/times.txt; }
rot() { local k=$1; shift; local a=("$@"); local n=${#a[@]}; for ((i=0;i<n;i++)); do echo "${a[$(((i+k)%n))]}"; done; }
run_tool() {
  local t=$1 base=$2; shift 2
  case $t in
  none) "$@" ;;
  new) $B/cuprof record -o $base.cuprof -- "$@" ;;
  off) $B/cuprof record --python=off -o $base.cuprof -- "$@" ;;
  stacks) $B/cuprof record --python=stacks -o $base.cuprof -- "$@" ;;
  old) $B/cuprof-5abb052 record -o $base.cuprof -- "$@" ;;
  fr) $B/cuprof-7d29437 record -o $base.cuprof -- "$@" ;;
  poll) $B/cuprof-77785f1 record -o $base.cuprof -- "$@" ;;
  esac
}
# warm the shim caches of every binary
for b in cuprof cuprof-5abb052 cuprof-7d29437 cuprof-77785f1; do $B/$b record -o $R/warm.cuprof -- python3 -c 'import cupy; cupy.empty(1)' > /dev/null 2>>$R/warm.log; done
log "warm done"
python3 bench/suite/workload_torch.py --tool none --seconds ${WLS:-2} --out $R/wl/cal.json > $R/wl/cal.log 2>&1
N=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["steps"])' $R/wl/cal.json)
log "torch steps $N"
tools=(none new off stacks old fr poll)
for r in 1 2 3; do
  mapfile -t order < <(rot $((r-1)) "${tools[@]}")
  for t in "${order[@]}"; do
    b=$R/wl/$t.r$r
    run_tool $t $b python3 bench/suite/workload_torch.py --tool $t --steps $N --out $b.json > $b.log 2>&1
    if [ -f $b.cuprof ]; then
      [ $r = 1 ] && $B/cuprof report --format json $b.cuprof > $b.report.json 2>/dev/null
      rm -f $b.cuprof
    fi
  done
  log "torch round $r"
done
python3 bench/python/statements.py --tool none --only cudacore,cupy --target 0.03 --repeat 1 --no-body --out $R/st/cal.json > $R/st/cal.log 2>&1
NUM=$(python3 -c 'import json,sys;d=json.load(open(sys.argv[1]));print(json.dumps({r["id"]:r["number"] for r in d["results"] if "number" in r}))' $R/st/cal.json)
log "statements $NUM"
stools=(none new off stacks)
for r in 1 2 3 4; do
  mapfile -t order < <(rot $((r-1)) "${stools[@]}")
  for t in "${order[@]}"; do
    b=$R/st/$t.r$r; lab=cuprof; [ $t = none ] && lab=none
    run_tool $t $b python3 bench/python/statements.py --tool $lab --only cudacore,cupy --numbers "$NUM" --repeat 5 --out $b.json > $b.log 2>&1
    if [ -f $b.cuprof ]; then
      [ $r -le 2 ] && $B/cuprof report --format json $b.cuprof > $b.report.json 2>/dev/null
      rm -f $b.cuprof
    fi
  done
  log "statements round $r"
done
rm -f $R/*.cuprof
tar -C /tmp -czf $OUT/d1.tgz d1
python3 .device-lead/sum1.py $R | tee $OUT/sum1.txt
