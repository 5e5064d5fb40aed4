import json, sys, glob, os, statistics as st
R = sys.argv[1]
def load(p):
    try: return json.load(open(p))
    except Exception: return None
print("== torch_mlp median segment s (per round), ratio to none paired by round")
rows = {}
for p in sorted(glob.glob(R + "/wl/*.r*.json")):
    if ".report" in p: continue
    t, r = os.path.basename(p)[:-5].rsplit(".r", 1)
    d = load(p)
    if d: rows.setdefault(t, {})[r] = d.get("median_segment_s")
base = rows.get("none", {})
for t, v in rows.items():
    ratios = [v[r] / base[r] for r in v if r in base and v[r] and base[r]]
    print(f"{t:8s}", " ".join(f"{v[r]:.4f}" for r in sorted(v)), " ratio med %.3f" % st.median(ratios) if ratios else "", " [" + ", ".join(f"{x:.3f}" for x in ratios) + "]")
for p in sorted(glob.glob(R + "/wl/*.report.json")):
    d = load(p)
    if not d: continue
    m = d.get("meta", {}); fr = d.get("frames") or []
    print(os.path.basename(p), "calls", m.get("calls"), "events", m.get("events"), "frames rows", len(fr), "drops", json.dumps(d.get("drops"))[:200], "overhead", json.dumps(d.get("overhead")))
print("== statements us/call (median of 5 reps) per round")
srows = {}
for p in sorted(glob.glob(R + "/st/*.r*.json")):
    if ".report" in p: continue
    t, r = os.path.basename(p)[:-5].rsplit(".r", 1)
    d = load(p)
    if not d: continue
    for x in d["results"]:
        if "median_us" in x: srows.setdefault(x["id"], {}).setdefault(t, {})[r] = x["median_us"]
for sid, tv in srows.items():
    b = tv.get("none", {})
    for t, v in tv.items():
        ratios = [v[r] / b[r] for r in v if r in b]
        print(f"{sid:24s} {t:7s}", " ".join(f"{v[r]:.3f}" for r in sorted(v)), " ratio med %.3f" % st.median(ratios) if ratios else "")
for p in sorted(glob.glob(R + "/st/*.report.json")):
    d = load(p)
    if not d: continue
    m = d.get("meta", {})
    print("--", os.path.basename(p), "calls", m.get("calls"), "events", m.get("events"), "overhead", json.dumps(d.get("overhead")))
    for f in (d.get("frames") or []):
        if f["calls"] > 2000:
            print("   %-40s %-7s %8d incl %7.0f self %7.0f drv %d" % (f["frame"][:40], f["kind"], f["calls"], f["inclusive_ns"] / f["calls"], f["self_per_call_ns"], f["driver_calls"]))
    apis = d.get("apis") or []
    if isinstance(apis, list):
        for a in apis[:12]:
            print("   api", json.dumps(a)[:200])
