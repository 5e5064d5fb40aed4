#!/usr/bin/env bash
# lead's run E: torch_mlp with the speed probe: the python bench's workloads part (bare, cuprof, stacks, off,
# torch.profiler, bare again), then the suite's workloads part in 3 rounds (bare, cuprof).
set -u
export PYTHONUNBUFFERED=1
R=/tmp/rE; mkdir -p $R
gunzip -c .device-lead/bin/cuprof.gz > /tmp/cuprof && chmod +x /tmp/cuprof
T0=$SECONDS
CUPROF=/tmp/cuprof timeout 170 bench/python/run.sh --parts workloads --workloads torch --budget 150 $R/python > $R/python.log 2>&1
echo "python done at $((SECONDS-T0))s" >> $R/times.txt
SUITE_WL_ROUNDS=3 timeout 150 bench/suite/run.sh --mode goals --parts workloads --tools none,cuprof --cuprof /tmp/cuprof --budget 130 $R/suite > $R/suite.log 2>&1
echo "suite done at $((SECONDS-T0))s" >> $R/times.txt
find $R -name '*.cuprof' -delete
tar -C /tmp -czf $OUT/rE.tgz rE
cat $R/times.txt
sed -n '/^## Workloads/,/^## Goals/p' $R/python/results.md; grep -A12 '^| workload | tool' $R/suite/tables.md | cut -c1-300
