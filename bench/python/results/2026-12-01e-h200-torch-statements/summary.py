import json, sys, glob, os, statistics as st
R = sys.argv[1]
rows = {}
for p in sorted(glob.glob(R + "/*.r*.json")):
    if ".report" in p: continue
    t, r = os.path.basename(p)[:-5].rsplit(".r", 1)
    try: d = json.load(open(p))
    except Exception: continue
    for x in d["results"]:
        rows.setdefault(x["id"], {}).setdefault(t, {})[r] = x["median_us"]
for sid, tv in rows.items():
    b = tv.get("none", {})
    for t in ("none", "off", "stacks", "cuprof"):
        v = tv.get(t, {})
        ratios = [v[r] / b[r] for r in v if r in b]
        print(f"{sid:16s} {t:7s}", " ".join(f"{v[r]:8.3f}" for r in sorted(v)), " ratio med %.3f" % st.median(ratios) if ratios else "")
for p in sorted(glob.glob(R + "/*.report.json")):
    try: d = json.load(open(p))
    except Exception: continue
    m = d.get("meta", {})
    print("--", os.path.basename(p), "calls", m.get("calls"), "events", m.get("events"))
    fr = sorted(d.get("frames") or [], key=lambda f: -f["self_ns"])
    for f in fr[:25]:
        print("   %-50s %-7s %8d incl %8.0f self %8.0f drv %d" % (f["frame"][:50], f["kind"], f["calls"], f["inclusive_ns"] / f["calls"], f["self_per_call_ns"], f["driver_calls"]))
