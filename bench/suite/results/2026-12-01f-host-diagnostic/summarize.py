import json, sys, glob, os, statistics as st
R = sys.argv[1]
def jl(p):
    out = []
    try:
        for line in open(p):
            line = line.strip()
            if line.startswith("{"):
                try: out.append(json.loads(line))
                except ValueError: pass
    except OSError: pass
    return out
print("== a: concurrent long probes (20 ms windows), ns per ALU unit")
for n in ["a-c2", "a-c4", "a-c6m", "a-solo"]:
    w = [d for d in jl(f"{R}/{n}.jsonl") if "t_ms" in d]
    if not w: print(n, "none"); continue
    a = [d["ns_alu"] for d in w]
    q = sorted(a)
    # run-length of "slow" windows (>1.15x min)
    slow = [x > 1.15 * q[0] for x in a]
    runs, cur = [], 0
    for s in slow:
        if s: cur += 1
        elif cur: runs.append(cur); cur = 0
    if cur: runs.append(cur)
    mem = [d["ns_mem"] for d in w if d["ns_mem"]]
    print(f"{n}: windows {len(a)} min {q[0]} p10 {q[len(q)//10]} med {q[len(q)//2]} p90 {q[9*len(q)//10]} max {q[-1]}; slow windows {sum(slow)}, longest slow run {max(runs) if runs else 0} x20ms, runs {len(runs)}"
          + (f"; mem ns med {st.median(mem):.1f} min {min(mem):.1f} max {max(mem):.1f}" if mem else ""))
    # coarse trace: median per 0.5 s
    seg = {}
    for d in w: seg.setdefault(int(d["t_ms"] // 500), []).append(d["ns_alu"])
    print("   per 0.5 s:", " ".join(str(int(st.median(v))) for k, v in sorted(seg.items())))
c2 = {int(d["t_ms"]//20): d["ns_alu"] for d in jl(f"{R}/a-c2.jsonl") if "t_ms" in d}
c4 = {int(d["t_ms"]//20): d["ns_alu"] for d in jl(f"{R}/a-c4.jsonl") if "t_ms" in d}
k = sorted(set(c2) & set(c4))
if len(k) > 10:
    x = [c2[i] for i in k]; y = [c4[i] for i in k]
    try: print("corr c2/c4 windows:", round(st.correlation(x, y), 3))
    except Exception as e: print("corr:", e)
print("== b: short probe processes (0.1 s), median ALU ns by ASLR")
b = jl(f"{R}/b.jsonl")
for lab in ["aslr", "norand"]:
    v = [d["median_alu"] for d in b if d["label"].startswith(lab)]
    if v: print(lab, len(v), "min", min(v), "med", st.median(v), "max", max(v), "vals", v)
print("== c: loops, per process median ns/iter (of 20 reps), pre-probe ALU ns")
for c in ["ctx_get_current", "get_error_name"]:
    for t in ["none", "shim", "cuprof"]:
        rows = []
        for r in range(1, 15):
            b = f"{R}/c/{c}.{t}.r{r}"
            j = jl(b + ".json"); pre = jl(b + ".pre"); post = jl(b + ".post")
            if not j: continue
            reps = j[0]["ns_per_iter"]
            rows.append((j[0]["median_ns"], max(reps) - min(reps), pre[0]["median_alu"] if pre else 0, post[0]["median_alu"] if post else 0))
        if rows:
            print(f"{c} {t}: med", " ".join(f"{m:.1f}" for m, *_ in rows))
            print(f"   rep spread", " ".join(f"{s:.1f}" for _, s, *_ in rows))
            print(f"   pre probe ", " ".join(f"{p}" for *_, p, q in rows), " post", " ".join(f"{q}" for *_, q in rows))
    # paired by round: cuprof - shim
    def med(t, r):
        j = jl(f"{R}/c/{c}.{t}.r{r}.json"); return j[0]["median_ns"] if j else None
    d = [(med("cuprof", r), med("shim", r), med("none", r)) for r in range(1, 15)]
    d = [x for x in d if None not in x]
    if d:
        diffs = sorted(a - b for a, b, _ in d)
        print(f"   cuprof-shim paired: med {st.median(diffs):.1f} vals {[round(x,1) for x in diffs]}")
        print(f"   min cuprof {min(a for a,_,_ in d):.1f} min shim {min(b for _,b,_ in d):.1f} min none {min(c for *_,c in d):.1f}")
print("== d: python cp.empty(10), per process")
try:
    L = json.load(open(f"{R}/d/long.json"))
    print("long process: probe med", L["probe_med"], "stmt med", L["stmt_med"], "min", L["stmt_min"])
    w = L["windows"]
    print("  windows (t, probe, stmt):", " ".join(f"{t:.1f}:{p}/{s}" for t, p, s in w[::max(1, len(w)//40)]))
except Exception as e:
    print("long:", e)
for t in ["none", "seed0", "cuprof"]:
    rows = []
    for r in range(1, 7):
        j = jl(f"{R}/d/{t}.r{r}.json"); pre = jl(f"{R}/d/{t}.r{r}.pre")
        if j: rows.append((j[-1]["stmt_med"], j[-1]["stmt_min"], j[-1]["probe_med"], pre[0]["median_alu"] if pre else 0))
    if rows:
        print(f"{t}: stmt med ns", [x[0] for x in rows], "probe ns", [x[2] for x in rows], "C pre", [x[3] for x in rows])
