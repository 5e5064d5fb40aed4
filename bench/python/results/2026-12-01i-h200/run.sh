#!/usr/bin/env bash
# lead's run F: the seed statements in 16 rounds (bare, cuprof, stacks; torch.profiler in 2), paired by round,
# then the per-event chain in 8 rounds.
set -u
export PYTHONUNBUFFERED=1
R=/tmp/rF; mkdir -p $R
gunzip -c .device-lead/bin/cuprof.gz > /tmp/cuprof && chmod +x /tmp/cuprof
T0=$SECONDS
{ command -v perf; nproc; nvidia-smi -L; uptime; } > $R/host.txt 2>&1
PYBENCH_ROUNDS=16 PYBENCH_TORCHPROF_ROUNDS=2 CUPROF=/tmp/cuprof timeout 345 bench/python/run.sh --parts statements --budget 320 $R/statements > $R/statements.log 2>&1
echo "statements done at $((SECONDS-T0))s" >> $R/times.txt
PYBENCH_ROUNDS=8 PYBENCH_TORCHPROF_ROUNDS=2 CUPROF=/tmp/cuprof timeout $((570-(SECONDS-T0))) bench/python/run.sh --parts events --budget $((535-(SECONDS-T0))) $R/events > $R/events.log 2>&1
echo "events done at $((SECONDS-T0))s" >> $R/times.txt
find $R -name '*.cuprof' -delete
tar -C /tmp -czf $OUT/rF.tgz rF
cat $R/times.txt $R/host.txt
for d in statements events; do sed -n '/^## Goals/,$p' $R/$d/results.md | cut -c1-330; done
