#!/usr/bin/env bash
# lead's run H2: with the start gate: torch_mlp and cupy_pipeline in 4 rounds (bare, cuprof, stacks; off and
# torch.profiler in round 1), each round paired with its own bare run.
set -u
export PYTHONUNBUFFERED=1
R=/tmp/rH2; mkdir -p $R
gunzip -c .device-lead/bin/cuprof.gz > /tmp/cuprof && chmod +x /tmp/cuprof
T0=$SECONDS
PYBENCH_WL_ROUNDS=4 CUPROF=/tmp/cuprof timeout 555 bench/python/run.sh --parts workloads --workloads torch,cupy --budget 500 $R/workloads > $R/workloads.log 2>&1
echo "workloads done at $((SECONDS-T0))s" >> $R/times.txt
find $R -name '*.cuprof' -delete
tar -C /tmp -czf $OUT/rH2.tgz rH2
cat $R/times.txt; grep -h 'start gate' $R/*/run.log
sed -n '/^## Workloads/,$p' $R/workloads/results.md | cut -c1-400
