#!/usr/bin/env bash
# lead's run J: cycles inside cuprof's Python callbacks (builds not kept): cold_cache.py with 8 MiB copied
# between calls, and torch ops (tdiag.py), the shim before and after the hot-globals line.
set -u
R=/tmp/rJ; mkdir -p $R
for v in old new; do gunzip -c .device-lead/bin/dbg-$v.gz > /tmp/dbg-$v && chmod +x /tmp/dbg-$v; done
. bench/lib/pin.sh; pin_setup
T0=$SECONDS
for i in 1 2; do
  for v in old new; do
    CUPROF_PY_DEBUG=1 "${PIN_TOOL[@]}" /tmp/dbg-$v record -o $R/t.cuprof -- "${PIN_PROG[@]}" python3 bench/python/cold_cache.py 8388608 4000 > $R/cc-$v-8M-$i.out 2> $R/cc-$v-8M-$i.err
    CUPROF_PY_DEBUG=1 "${PIN_TOOL[@]}" /tmp/dbg-$v record -o $R/t.cuprof -- "${PIN_PROG[@]}" python3 .device-lead/tdiag.py > $R/t-$v-$i.out 2> $R/t-$v-$i.err
  done
done
rm -f $R/t.cuprof
echo "done at $((SECONDS-T0))s"
tar -C /tmp -czf $OUT/rJ.tgz rJ
for f in $R/*.err; do echo "$(basename $f): $(head -c 300 ${f%.err}.out | tr '\n' ' ') $(grep cuprof-debug $f | sed 's/cuprof-debug: //; s/cyc.ev=//' | tr '\n' ' ')"; done
