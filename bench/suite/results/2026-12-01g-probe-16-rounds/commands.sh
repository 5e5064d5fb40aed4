#!/usr/bin/env bash
# lead's run D: the suite's cheap loops in 16 rounds with the speed probe (none, shim, cuprof,
# CUPTI callback, nsys 2 rounds) and both workloads in 3 rounds; then the Python seed statements
# in 6 rounds (none, cuprof, stacks), calm statements judged.
set -u
export PYTHONUNBUFFERED=1
R=/tmp/rD; mkdir -p $R
gunzip -c .device-lead/bin/cuprof.gz > /tmp/cuprof && chmod +x /tmp/cuprof
T0=$SECONDS
SUITE_LOOP_CASES="ctx_get_current ctx_set_current get_error_name" SUITE_NSYS_ROUNDS=2 SUITE_WL_ROUNDS=3 \
  timeout ${SUT:-300} bench/suite/run.sh --mode goals --rounds 16 --tools none,shim,cuprof,cupti_cb,nsys \
  --cuprof /tmp/cuprof --budget ${SUB:-270} $R/suite > $R/suite.log 2>&1
echo "suite done at $((SECONDS-T0))s" >> $R/times.txt
cp $R/suite/tables.md $OUT/suite-tables.md 2>/dev/null
CUPROF=/tmp/cuprof PYBENCH_ROUNDS=${PYR:-6} timeout ${PYT:-250} bench/python/run.sh --parts statements \
  --budget ${PYB:-225} $R/python > $R/python.log 2>&1
echo "python done at $((SECONDS-T0))s" >> $R/times.txt
find $R -name '*.cuprof' -delete
tar -C /tmp -czf $OUT/rD.tgz rD
cp $R/python/results.md $OUT/python-results.md 2>/dev/null
cat $R/times.txt; tail -3 $R/suite.log $R/python.log
grep -A40 '1b. Goals' $OUT/suite-tables.md | head -12; grep -A12 '1d. The speed' $OUT/suite-tables.md | head -12
grep -B2 -A30 '^## Goals' $OUT/python-results.md | head -40
