#!/usr/bin/env bash
# lead's run I: cycles inside cuprof's Python callbacks on the H200 (lfence;rdtsc around each callback, builds
# not kept), the shim before (641ca9d) and after the hot-globals line, alternating processes: cold_cache.py
# (a Python frame and a ctypes frame a call, real driver) hot and with 256 KiB copied between calls, and
# cp.empty(10) in a timeit loop.
set -u
R=/tmp/rI; mkdir -p $R
for v in old new; do gunzip -c .device-lead/bin/dbg-$v.gz > /tmp/dbg-$v && chmod +x /tmp/dbg-$v; done
. bench/lib/pin.sh; pin_setup
T0=$SECONDS
for i in 1 2 3; do
  for v in old new; do
    for sz in 1 262144; do
      n=$([ $sz = 1 ] && echo 200000 || echo 20000)
      CUPROF_PY_DEBUG=1 "${PIN_TOOL[@]}" /tmp/dbg-$v record -o $R/t.cuprof -- "${PIN_PROG[@]}" python3 bench/python/cold_cache.py $sz $n > $R/cc-$v-$sz-$i.out 2> $R/cc-$v-$sz-$i.err
    done
    CUPROF_PY_DEBUG=1 "${PIN_TOOL[@]}" /tmp/dbg-$v record -o $R/t.cuprof -- "${PIN_PROG[@]}" python3 -c "
import sys, timeit; sys.path.insert(0, 'bench/lib'); from speedprobe import probe_ns
import cupy as cp; cp.empty(1); timeit.timeit('cp.empty(10)', globals=globals(), number=5000)
p = probe_ns(); t = min(timeit.repeat('cp.empty(10)', globals=globals(), number=50000, repeat=3)) / 50000 * 1e6
print(f'{t:.3f} us probe {p} {probe_ns()}')" > $R/cp-$v-$i.out 2> $R/cp-$v-$i.err
  done
  [ $((SECONDS-T0)) -gt 150 ] && break
done
rm -f $R/t.cuprof
echo "done at $((SECONDS-T0))s"
tar -C /tmp -czf $OUT/rI.tgz rI
for f in $R/*.err; do echo "$(basename $f): $(cat ${f%.err}.out | tr '\n' ' ') $(grep cuprof-debug $f | sed 's/cuprof-debug: //; s/ n=[0-9]*//; s/cyc.ev=//' | tr '\n' ' ')"; done
