#!/usr/bin/env bash
# lead's run A: suite goals (pinned, 6 rounds) and the Python bench's workloads part.
set -u
export PYTHONUNBUFFERED=1
R=/tmp/rA; mkdir -p $R
gunzip -c .device-lead/bin/cuprof.gz > /tmp/cuprof && chmod +x /tmp/cuprof
C=/tmp/cuprof
T0=$SECONDS
{ nvidia-smi -L; python3 -V; lscpu; numactl -H 2>/dev/null; cat /sys/devices/system/cpu/cpu2/topology/thread_siblings_list; } > $R/env.txt 2>&1
SUITE_NSYS_ROUNDS=2 SUITE_WL_ROUNDS=3 timeout ${SUT:-330} bench/suite/run.sh --mode goals --rounds 6 --cuprof $C --budget ${SUB:-300} $R/suite > $R/suite.log 2>&1
echo "suite done at $((SECONDS-T0))s" >> $R/times.txt
CUPROF=$C timeout ${PYT:-200} bench/python/run.sh --parts workloads --workloads torch,cupy --budget ${PYB:-180} $R/python > $R/python.log 2>&1
echo "python done at $((SECONDS-T0))s" >> $R/times.txt
find $R -name '*.cuprof' -delete
tar -C /tmp -czf $OUT/rA.tgz rA
cp $R/suite/tables.md $OUT/suite-tables.md 2>/dev/null; cp $R/python/results.md $OUT/python-results.md 2>/dev/null
cat $R/times.txt; tail -3 $R/suite.log $R/python.log
