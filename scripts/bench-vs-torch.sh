#!/bin/sh
# The decode step of one R1-Distill-Qwen-7B-like layer (28 heads with K/V
# expanded, head_dim 128, LazyEviction B 1492, W 175) on lazykv's cpu and
# ref backends and in plain PyTorch (bench/torch_step.py), in one run, f32
# and f16 storage, with the ratios measured here rather than remembered.
#
# usage: scripts/bench-vs-torch.sh [path/to/lazykv]   (default build/lazykv)
# Needs Debian's python3-torch (apt-get install python3-torch; not part of CI).
# Prints one table; the ratios are torch time / lazykv time (higher: lazykv
# faster). Times are per step of one layer: the mean over one eviction
# period, the evicting step alone, and the mean of the other steps; each the
# median of REPS runs (default 3; one period holds a single evicting step,
# whose time varies most from run to run).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
lazykv=${1:-$here/build/lazykv}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import torch' 2>/dev/null; then
    echo "bench-vs-torch: python3-torch is not installed (apt-get install python3-torch)" >&2
    exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
reps=${REPS:-3}
for dt in f32 f16; do
    for rep in $(seq "$reps"); do
        "$lazykv" bench --backends cpu,ref --lengths 1667 --batches 0 --decode-shape 28/28/128 \
            --window 175 --budget 1492 --dtype "$dt" --json "$work/lazykv-$dt-$rep.json" \
            >/dev/null 2>&1
        "$py" "$here/bench/torch_step.py" --heads 28 --dim 128 --budget 1492 --window 175 \
            --dtype "$dt" >"$work/torch-$dt-$rep.json"
    done
done
"$py" - "$work" "$reps" <<'PY'
import json, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
med = statistics.median

def lazykv_rows(dt):
    """backend -> (mean, evicting, others, evicting with the eviction in the background,
    that eviction's own time on the helper thread), each the median over the runs"""
    runs = {}
    for rep in range(1, reps + 1):
        doc = json.load(open("%s/lazykv-%s-%d.json" % (work, dt, rep)))
        for r in doc["decode"]["results"]:
            if r["status"] != "OK":
                runs.setdefault(r["backend"], []).append(None)
                continue
            lazy = r["lazy"]
            mean, ev, steps = lazy["ms_per_step"], r["lazy_evicting_step_ms"], lazy["steps"]
            runs.setdefault(r["backend"], []).append((mean, ev, (mean * steps - ev) / (steps - 1),
                                                      r["background_evicting_call_ms"],
                                                      r["background_eviction_ms"],
                                                      r.get("holes_evicting_step_ms", 0.0),
                                                      r.get("holes_background_evicting_call_ms",
                                                            0.0)))
    return {b: None if None in v else tuple(med(x[i] for x in v) for i in range(7))
            for b, v in runs.items()}

print("decode step, one layer, hq28/hkv28/d128 (expanded), lazy B 1492 W 175, ms per step,")
print("median of %d runs each" % reps)
print("background: the evicting call with cfg.eviction = background (the eviction runs on a")
print("helper thread, off the call: its own time is the next column), against torch's evicting step")
print("holes: the evicting step with cfg.placement = holes (no K/V moves), inline and its call in")
print("the background, each against torch's evicting step")
print("%-6s %-8s %12s %12s %12s   %-36s %12s %12s %12s %12s" % (
    "dtype", "impl", "mean/period", "evicting", "others", "torch / impl (mean, evicting, others)",
    "background", "helper", "holes", "holes bg"))
for dt in ("f32", "f16"):
    tr = [json.load(open("%s/torch-%s-%d.json" % (work, dt, rep))) for rep in range(1, reps + 1)]
    torch = tuple(med(t[k] for t in tr) for k in ("ms_per_step", "evicting_step_ms",
                                                  "other_steps_ms"))
    for backend, row in lazykv_rows(dt).items():
        if row is None:
            print("%-6s %-8s failed (see lazykv bench)" % (dt, backend))
            continue
        ratios = "%.1fx %.1fx %.1fx" % tuple(torch[i] / row[i] for i in range(3))
        holes = " ".join("%7.3f %4.1fx" % (x, torch[1] / x) if x > 0 else "%12s" % "-"
                         for x in row[5:7])
        print("%-6s %-8s %12.3f %12.3f %12.3f   %-36s %7.3f %4.1fx %12.3f %s" % (
            (dt, backend) + row[:3] + (ratios, row[3], torch[1] / row[3], row[4], holes)))
    print("%-6s %-8s %12.3f %12.3f %12.3f   (torch %s, %d threads)" % (
        (dt, "torch") + torch + (tr[0]["torch"], tr[0]["threads"])))
PY
