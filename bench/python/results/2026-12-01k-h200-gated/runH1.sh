#!/usr/bin/env bash
# lead's run H1: with the start gate: the seed statements in 16 rounds (bare, cuprof, stacks; torch.profiler
# in 2), then the per-event chain in 30 rounds.
set -u
export PYTHONUNBUFFERED=1
R=/tmp/rH1; mkdir -p $R
gunzip -c .device-lead/bin/cuprof.gz > /tmp/cuprof && chmod +x /tmp/cuprof
T0=$SECONDS
PYBENCH_ROUNDS=16 PYBENCH_TORCHPROF_ROUNDS=2 CUPROF=/tmp/cuprof timeout 365 bench/python/run.sh --parts statements --budget 340 $R/statements > $R/statements.log 2>&1
echo "statements done at $((SECONDS-T0))s" >> $R/times.txt
PYBENCH_ROUNDS=30 PYBENCH_TORCHPROF_ROUNDS=2 CUPROF=/tmp/cuprof timeout $((570-(SECONDS-T0))) bench/python/run.sh --parts events --budget $((540-(SECONDS-T0))) $R/events > $R/events.log 2>&1
echo "events done at $((SECONDS-T0))s" >> $R/times.txt
find $R -name '*.cuprof' -delete
tar -C /tmp -czf $OUT/rH1.tgz rH1
cat $R/times.txt; grep -h 'start gate' $R/*/run.log
for d in statements events; do grep -h 'Processes' $R/$d/results.md; sed -n '/^## Goals/,$p' $R/$d/results.md | cut -c1-330; done
