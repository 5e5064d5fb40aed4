#!/usr/bin/env bash
# lead's run C: suite, the three cheap loops in 12 rounds (none, shim, cuprof), and the workloads in 4.
set -u
export PYTHONUNBUFFERED=1
R=/tmp/rC; mkdir -p $R
gunzip -c .device-lead/bin/cuprof.gz > /tmp/cuprof && chmod +x /tmp/cuprof
T0=$SECONDS
SUITE_LOOP_CASES="ctx_get_current ctx_set_current get_error_name" SUITE_WL_ROUNDS=4 timeout ${SUT:-345} bench/suite/run.sh --mode goals --rounds 12 --tools none,shim,cuprof --cuprof /tmp/cuprof --budget ${SUB:-320} $R/suite > $R/suite.log 2>&1
echo "suite done at $((SECONDS-T0))s" >> $R/times.txt
find $R -name '*.cuprof' -delete
tar -C /tmp -czf $OUT/rC.tgz rC
cp $R/suite/tables.md $OUT/suite-tables.md 2>/dev/null
cat $R/times.txt
