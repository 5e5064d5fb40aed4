#!/usr/bin/env bash
# This round's work on one GPU (H100 or H200), in one call of the device
# machine: no Go there, so everything runs from artifacts built here.
#
#   bench/gpu/round.sh WHEEL OLD_CUPROF OUT
#
# WHEEL: the x86-64 wheel of release/build.sh (installed with pip into a
# fresh venv: the install check, and the cuprof every step uses);
# OLD_CUPROF: the cuprof of main before this round (the coverage
# comparison's baseline); OUT: where the tables and logs go (one archive,
# OUT/round.tar.gz, and the summary OUT/summary.txt). Steps, each bounded
# by STEP_TIMEOUT seconds (240), each writing its own section:
#   1. install: pip install WHEEL into a fresh venv (system site packages
#      for cuda.core, CuPy, PyTorch), no compiler used (PATH without gcc
#      for the run), cuprof record and timeit on the seed statements;
#   2. coverage: bench/apicount/run.sh (CUPTI's per-API counts in the same
#      process as cuprof record), NEW against OLD;
#   3. accuracy: bench/python/accuracy_gpu.sh (issue 41's table, real driver);
#   4. workloads: the PyTorch step and CuPy pipeline of bench/suite, bare
#      and recorded with frames, interleaved (ROUNDS 3);
#   5. nsys: nsys around cuprof and cuprof around nsys;
#   6. ablation: the create_stream ablation blocks (needs BARE_CUPROF);
#   7. streaming: record --otlp-signals=metrics into an OTLP sink during
#      the PyTorch step, against recording without (needs OTLP_SINK).
# STEPS picks the steps by name (default: all of them, in order): install
# coverage accuracy workloads nsys ablation streaming. The venv lives in
# VENV (/tmp/cuprof-venv), made once, so later calls on a warm machine
# reuse it.
set -u
WHEEL=$1 OLD=$2 OUT=$3
STEPS=" ${STEPS:-install coverage accuracy workloads nsys ablation streaming} "
want() { case $STEPS in *" $1 "*) return 0 ;; esac; return 1; }
mkdir -p "$OUT"
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
T=${STEP_TIMEOUT:-240}
ROUNDS=${ROUNDS:-3}
PY=${PY:-python3}
sum=$OUT/summary.txt
: >"$sum"
say() { echo "$*" | tee -a "$sum"; }
step() { # name, then the command: bounded, logged, its exit said
	local name=$1
	shift
	local t0=$SECONDS
	timeout "$T" "$@" >"$OUT/$name.log" 2>&1
	say "step $name: exit $? in $((SECONDS - t0)) s"
}
say "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); $(nproc) CPUs; $($PY --version 2>&1)"

# 1. install
venv=${VENV:-/tmp/cuprof-venv}
if [ ! -x "$venv/bin/cuprof" ]; then
	$PY -m venv --system-site-packages "$venv"
	t0=$SECONDS
	"$venv/bin/pip" install -q --no-index --disable-pip-version-check "$WHEEL" && say "pip install of the wheel: $((SECONDS - t0)) s"
fi
NEW=$venv/bin/cuprof
"$NEW" version | tee -a "$sum"
mkdir -p "$OUT/nocc"
for c in sh bash env ls cat head grep nvidia-smi; do command -v $c >/dev/null && ln -sf "$(command -v $c)" "$OUT/nocc/$c"; done
cat >"$OUT/seed.py" <<'PY'
import nvtx
from cuda.core import Device
dev = Device(0)
dev.set_current()
mr = dev.memory_resource
s = dev.create_stream()
for _ in range(1000):
    with nvtx.annotate("seed"):
        dev.set_current()
        t = dev.create_stream(); t.close()
        b = mr.allocate(10, stream=s); b.close(s)
print("seed done")
PY
want install && step install env -i HOME="$OUT" PATH="$venv/bin:$OUT/nocc" CUPROF_CACHE_DIR="$OUT/cache" bash -c "
	cd '$OUT' && cuprof record -o seed.cuprof -- python seed.py && cuprof report seed.cuprof | head -30 &&
	cuprof timeit -n 2000 -r 5 -s 'from cuda.core import Device; dev = Device(0); dev.set_current()' 'dev.create_stream().close()' &&
	ls cache"
want install && grep -q prebuilt "$OUT/install.log" && say "install: C parts taken prebuilt (nothing compiled)"

# 2. coverage
want coverage && step coverage env APICOUNT_CS_ROUNDS=1 bash bench/apicount/run.sh "$NEW" "$OLD" "$OUT/coverage"
cp "$OUT/coverage/compare.txt" "$OUT/coverage.txt" 2>/dev/null

# 3. accuracy
want accuracy && [ -x bench/python/accuracy_gpu.sh ] && step accuracy env CUPROF="$NEW" PYTHON="$PY" ACC_ROUNDS=${ACC_ROUNDS:-5} \
	ACC_NUMBER=${ACC_NUMBER:-1000} sh bench/python/accuracy_gpu.sh "$OUT/accuracy"

# 4. workloads: bare and recorded, interleaved; work_s from each run's JSON
wl() { # name script steps
	local name=$1 script=$2 steps=$3 r
	for r in $(seq "$ROUNDS"); do
		$PY "$script" --steps "$steps" --tool bare >"$OUT/wl-$name-bare-$r.json" 2>>"$OUT/workloads.err"
		"$NEW" record -o "$OUT/wl-$name-$r.cuprof" -- $PY "$script" --steps "$steps" --tool cuprof \
			>"$OUT/wl-$name-rec-$r.json" 2>>"$OUT/workloads.err"
	done
}
want workloads && step workloads bash -c "$(declare -f wl); OUT='$OUT' PY='$PY' NEW='$NEW' ROUNDS=$ROUNDS; wl torch bench/suite/workload_torch.py ${TORCH_STEPS:-300}; wl cupy bench/suite/workload_cupy.py ${CUPY_STEPS:-300}"
want workloads && $PY - "$OUT" >>"$sum" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
for name in ("torch", "cupy"):
    def work(kind):
        v = []
        for f in sorted(glob.glob(f"{out}/wl-{name}-{kind}-*.json")):
            try:
                v.append(json.loads(open(f).read().strip().splitlines()[-1])["work_s"])
            except Exception:
                pass
        return v
    b, r = work("bare"), work("rec")
    if b and r:
        print(f"workload {name}: bare median {statistics.median(b):.4f} s, recorded {statistics.median(r):.4f} s, "
              f"slowdown {statistics.median(r) / statistics.median(b):.3f}x ({len(b)} rounds each, interleaved)")
    else:
        print(f"workload {name}: no result")
PY

# 5. nsys beside cuprof
if want nsys && command -v nsys >/dev/null; then
	step nsys bash -c "cd '$OUT' &&
		'$NEW' record -o bare.cuprof -- $PY seed.py &&
		nsys profile -o nsys-outer -f true -- '$NEW' record -o outer.cuprof -- $PY seed.py &&
		'$NEW' record -o inner.cuprof -- nsys profile -o nsys-inner -f true -- $PY seed.py &&
		for t in bare outer inner; do '$NEW' report --format json \$t.cuprof > \$t.json; done &&
		ls -la nsys-outer.nsys-rep nsys-inner.nsys-rep &&
		nsys stats -r cuda_api_sum nsys-outer.nsys-rep | head -20 && nsys stats -r cuda_api_sum nsys-inner.nsys-rep | head -20"
	$PY - "$OUT" >>"$sum" <<'PY'
import json, sys
out = sys.argv[1]
def counts(t):
    try:
        d = json.load(open(f"{out}/{t}.json"))
    except Exception as e:
        return None
    return {a["api"]: a["count"] for a in d.get("apis", [])}
b = counts("bare")
for t in ("outer", "inner"):
    c = counts(t)
    if b is None or c is None:
        print(f"nsys {t}: no report"); continue
    diff = {k: (b.get(k), c.get(k)) for k in set(b) | set(c) if b.get(k) != c.get(k)}
    print(f"nsys {t}: {len(b)} APIs, per-API counts {'equal to the bare run' if not diff else 'differ: ' + str(diff)}")
PY
else
	say "nsys: not on this machine"
fi

# 6. ablation
if want ablation && [ -n "${BARE_CUPROF:-}" ]; then
	step ablation env PAIRED_BARE=1 PAIRED_ABLATE=1 bash bench/apicount/paired.sh "$BARE_CUPROF" blocks "$OUT/ablation" 10 300 200
fi

# 7. streaming: the PyTorch step recorded with metrics streamed into an
# OTLP/HTTP sink (bench/memory/otlpsink: counts requests and bytes) and
# without, interleaved: bytes a second, and the step's time either way.
if want streaming && [ -n "${OTLP_SINK:-}" ]; then
	stream() {
		local r
		for r in $(seq "$ROUNDS"); do
			"$OTLP_SINK" -addr 127.0.0.1:14318 >"$OUT/sink-$r.out" 2>&1 &
			local sink=$! t0=$SECONDS
			sleep 1
			"$NEW" record --otlp=http://127.0.0.1:14318 --otlp-protocol http --otlp-signals=metrics --otlp-interval 2s \
				-o "$OUT/stream-$r.cuprof" -- $PY bench/suite/workload_torch.py --steps "${TORCH_STEPS:-300}" --tool cuprof \
				>"$OUT/wl-torch-stream-$r.json" 2>>"$OUT/streaming.err"
			echo "round $r: $((SECONDS - t0)) s recorded" >>"$OUT/streaming.err"
			kill -TERM $sink; wait $sink
			"$NEW" record -o "$OUT/nostream-$r.cuprof" -- $PY bench/suite/workload_torch.py --steps "${TORCH_STEPS:-300}" \
				--tool cuprof >"$OUT/wl-torch-nostream-$r.json" 2>>"$OUT/streaming.err"
		done
	}
	step streaming bash -c "$(declare -f stream); OUT='$OUT' PY='$PY' NEW='$NEW' OTLP_SINK='$OTLP_SINK' ROUNDS=$ROUNDS; stream"
	grep -h 'otlp metrics' "$OUT/streaming.err" | tail -3 >>"$sum"
	cat "$OUT"/sink-*.out >>"$sum"
	$PY - "$OUT" >>"$sum" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
def work(kind):
    v = []
    for f in sorted(glob.glob(f"{out}/wl-torch-{kind}-*.json")):
        try:
            v.append(json.loads(open(f).read().strip().splitlines()[-1])["work_s"])
        except Exception:
            pass
    return v
s, n = work("stream"), work("nostream")
if s and n:
    print(f"streaming: torch step work {statistics.median(s):.4f} s with metrics streamed, {statistics.median(n):.4f} s without "
          f"({statistics.median(s) / statistics.median(n):.3f}x, {len(s)} rounds each, interleaved)")
PY
fi
tar -C "$OUT" -czf "$OUT/round.tar.gz" --exclude '*.cuprof' --exclude cache --exclude nocc --exclude '*.nsys-rep' --exclude '*.sqlite' . 2>/dev/null
say "archive: round.tar.gz"
