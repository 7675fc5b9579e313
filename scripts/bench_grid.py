#!/usr/bin/env python3
"""Compaction vs hole filling vs plan-only over a grid of batch sizes and
slots per sequence (issue 18's side-by-side), on every backend named.

Runs `lazykv bench` once per slots value (--batch-slots S --batches LIST,
the ops and decode sections cut to 1K), reads each run's JSON and prints one
table row per (backend, slots, sequences):

  plan-only   an engine-owned cache (observe and plan): the step that
              evicts (observe, score, select, the plan recorded), then the
              plan applied to the engine's paged f16 K/V by compaction and
              as holes, the blocks each holds after it and the live share
              of the holes' cells, and the engine's attention over the kept
              slots compacted vs read through the hole map (what the
              fragmented cache costs every later step);
  owned       lazykv's own cache over one eviction period at mixed lengths
              (L/8 .. L): mean step per sequence compacting vs paged, and
              the K/V memory each holds against the live K/V.

A cell whose caches would not fit in memory (estimated from the shape) is
skipped with the estimate; a failed cell fails the script (exit 1).

usage: bench_grid.py LAZYKV [--backends LIST] [--slots 4K,16K,64K]
                     [--batches 1,8,64] [--quick] [--json OUT]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

KV_HEADS, HEAD_DIM, WINDOW = 3, 64, 101  # the bench's decode shape, f16


def slots_value(text):
    text = text.strip().upper()
    scale = 1024 if text.endswith("K") else 1
    return int(text.rstrip("K")) * scale


def available_bytes():
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 << 30


def estimate_bytes(n, slots):
    """Host memory a cell takes at most: an owned cache of n rows at
    capacity (K/V f16, eight 4-byte per-slot arrays), the paged twin and
    the engine side's K/V, each about that size."""
    per_slot = KV_HEADS * (2 * HEAD_DIM * 2 + 8 * 4)
    return 3 * n * (slots + WINDOW) * per_slot


def run_bench(lazykv, backends, slots, batches, quick, work):
    out = os.path.join(work, f"bench-{slots}.json")
    cmd = [lazykv, "bench", "--lengths", "1K", "--batches", ",".join(map(str, batches)),
           "--batch-slots", str(slots), "--json", out]
    if backends:
        cmd += ["--backends", backends]
    if quick:
        cmd.append("--quick")
    run = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode == 2 or not os.path.exists(out):
        sys.exit(f"bench-grid: {' '.join(cmd)} failed: {run.stderr.strip()[-400:]}")
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def fmt_time(s):
    if s is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale or unit == "us":
            return f"{s / scale:.3g} {unit}"
    return "-"


def fmt_bytes(b):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale:
            return f"{b / scale:.1f} {unit}"
    return f"{b} B"


def cells(run):
    """(backend, sequences) -> (engine result, owned batch result)."""
    engine = {(e["backend"], e["sequences"]): e for e in run["engine"]["results"]}
    owned = {(b["backend"], b["sequences"]): b for b in run["batch"]["results"]}
    for key in sorted(set(engine) | set(owned), key=lambda k: (k[0], k[1])):
        yield key, engine.get(key), owned.get(key)


def row(backend, slots, n, e, b):
    """One printed row and whether the cell failed."""
    head = f"{backend:<10} {slots:>6} {n:>5} |"
    if not e or e.get("status") != "OK" or not b or b.get("status") != "OK":
        why = (e or {}).get("error") or (b or {}).get("error") or "missing"
        return f"{head} FAIL: {why}", True
    m = b["mixed_lengths"]
    plan = (f" {fmt_time(e['evicting_step_s']):>9} {fmt_time(e['compact_s']):>9}"
            f" {fmt_time(e['holes_s']):>9} | {e['blocks_compact']:>6} {e['blocks_holes']:>6}"
            f" {100 * e['live_share_holes']:>4.0f}% | {fmt_time(e['attend_compact_s']):>9}"
            f" {fmt_time(e['attend_holes_s']):>9} |")
    if m.get("status") != "OK":
        return f"{head}{plan} {m.get('status')}: {m.get('error', '')}", m.get("status") != "UNSUPPORTED"
    owned = (f" {fmt_time(m['compact_step_s']):>9} {fmt_time(m['paged_step_s']):>9} |"
             f" {fmt_bytes(m['compact_kv_bytes']):>9} {fmt_bytes(m['paged_kv_bytes']):>9}"
             f" {fmt_bytes(m['live_kv_bytes']):>9}")
    return head + plan + owned, False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lazykv")
    ap.add_argument("--backends", default="")
    ap.add_argument("--slots", default="4K,16K,64K")
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    batches = [int(x) for x in a.batches.split(",")]
    room = available_bytes() // 2
    rows, failed, runs = [], False, []
    with tempfile.TemporaryDirectory() as work:
        for slots in (slots_value(x) for x in a.slots.split(",")):
            fit = [n for n in batches if estimate_bytes(n, slots) <= room]
            for n in batches:
                if n not in fit:
                    rows.append(f"{'*':<10} {slots:>6} {n:>5} | skipped: needs about "
                                f"{fmt_bytes(estimate_bytes(n, slots))} of host memory, "
                                f"{fmt_bytes(room)} allowed (half of what is available)")
            if not fit:
                continue
            run = run_bench(a.lazykv, a.backends, slots, fit, a.quick, work)
            runs.append(run)
            for (backend, n), e, b in cells(run):
                text, bad = row(backend, slots, n, e, b)
                rows.append(text)
                failed |= bad
    print("compaction vs hole filling vs plan-only: hq9/hkv3/d64 f16, 1 layer, lazy at budget = "
          "slots, W 101 (bench/README.md: engine-owned K/V, mixed lengths)")
    print(f"{'':<23} | {'plan-only (engine-owned K/V)':<29} | {'blocks after':<18} | "
          f"{'attention after':<19} | {'owned, mixed lengths':<19} | K/V held")
    print(f"{'backend':<10} {'slots':>6} {'seqs':>5} | {'evict':>9} {'compact':>9} {'holes':>9} |"
          f" {'cmp':>6} {'holes':>6} {'live':>5} | {'compact':>9} {'holes':>9} |"
          f" {'cmp/seq':>9} {'paged/seq':>9} | {'compact':>9} {'paged':>9} {'live':>9}")
    for text in rows:
        print(text)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"tool": "bench-grid", "runs": runs}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
