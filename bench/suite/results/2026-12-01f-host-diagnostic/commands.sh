#!/usr/bin/env bash
# diagnostic: the time structure of this host's speed (hostprobe), per process and per window,
# ASLR on/off, PYTHONHASHSEED, and cheap loops / a seed statement with the probe beside them.
set -u
export PYTHONUNBUFFERED=1
R=/tmp/d2; mkdir -p $R/c $R/d; B=/tmp/b; mkdir -p $B
T0=$SECONDS; log() { echo "[$((SECONDS-T0))s] $*" | tee -a $R/times.txt; }
gcc -O2 -o $B/hostprobe bench/lib/hostprobe.c || exit 1
gcc -O2 -std=gnu11 -I cudawrap/shim -o $B/loops bench/suite/loops.c -ldl -lpthread || exit 1
gunzip -c .device-lead/bin/cuprof.gz > $B/cuprof; chmod +x $B/cuprof
export CUPROF_CACHE_DIR=$B/cache
$B/cuprof record -o $B/w.cuprof -- true > $R/warm.log 2>&1
SHIM=$(find $CUPROF_CACHE_DIR -name libcuprof.so | head -1); RINGS=$(mktemp -d /dev/shm/rings.XXXXXX)
{ cat /sys/kernel/mm/transparent_hugepage/enabled; lscpu; grep MHz /proc/cpuinfo | head -4; command -v setarch; cat /proc/loadavg; } > $R/env.txt 2>&1
log start
taskset -c 2 $B/hostprobe --seconds 8 --window-ms 20 --label c2 > $R/a-c2.jsonl &
taskset -c 4 $B/hostprobe --seconds 8 --window-ms 20 --label c4 > $R/a-c4.jsonl &
taskset -c 6 $B/hostprobe --seconds 8 --window-ms 20 --mem --label c6m > $R/a-c6m.jsonl &
wait; log a
taskset -c 2 $B/hostprobe --seconds 5 --window-ms 20 --mem --label solo > $R/a-solo.jsonl; log a2
for i in $(seq 1 20); do
  taskset -c 2 $B/hostprobe --seconds 0.1 --window-ms 10 --label aslr$i | tail -1 >> $R/b.jsonl
  taskset -c 2 setarch -R $B/hostprobe --seconds 0.1 --window-ms 10 --label norand$i | tail -1 >> $R/b.jsonl
done; log b
for r in $(seq 1 14); do
  for t in none shim cuprof; do
    for c in ctx_get_current get_error_name; do
      b=$R/c/$c.$t.r$r
      taskset -c 2 $B/hostprobe --seconds 0.03 --window-ms 10 --label pre | tail -1 > $b.pre
      case $t in
      none) taskset -c 2 $B/loops --case $c --reps 20 --out $b.json ;;
      shim) LD_PRELOAD=$SHIM CUPROF_DIR=$RINGS CUPROF_BENCH_DRAIN_US=1000 taskset -c 2 $B/loops --case $c --reps 20 --out $b.json; rm -f $RINGS/* ;;
      cuprof) taskset -c 4 $B/cuprof record -o $b.cuprof -- taskset -c 2 $B/loops --case $c --reps 20 --out $b.json; rm -f $b.cuprof ;;
      esac > $b.log 2>&1
      taskset -c 2 $B/hostprobe --seconds 0.03 --window-ms 10 --label post | tail -1 > $b.post
    done
  done
done; log c
taskset -c 2,3 python3 .device-lead/pyprobe.py 8 long empty > $R/d/long.json 2> $R/d/long.err; log d-long
for r in $(seq 1 6); do
  for t in none seed0 cuprof; do
    b=$R/d/$t.r$r
    taskset -c 2 $B/hostprobe --seconds 0.03 --window-ms 10 --label pre | tail -1 > $b.pre
    case $t in
    none) taskset -c 2,3 python3 .device-lead/pyprobe.py 1 $t.r$r empty ;;
    seed0) PYTHONHASHSEED=0 taskset -c 2,3 python3 .device-lead/pyprobe.py 1 $t.r$r empty ;;
    cuprof) taskset -c 4,5 $B/cuprof record -o $b.cuprof -- taskset -c 2,3 python3 .device-lead/pyprobe.py 1 $t.r$r empty; rm -f $b.cuprof ;;
    esac > $b.json 2> $b.err
  done
done; log d
tar -C /tmp -czf $OUT/d2.tgz d2
python3 .device-lead/sum2.py $R | tee $OUT/sum2.txt
