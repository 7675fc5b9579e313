#!/usr/bin/env python3
"""Line coverage of the library's core and CPU backends, from gcov.

    coverage.py snapshot BUILD_DIR OUT.json   the lines that ran so far
    coverage.py report SUBSET.json ALL.json   per folder: lines, covered by
                                              ALL (every test), by SUBSET (the
                                              ASan stage's tests), and the
                                              lines only ALL reaches

A snapshot reads every .gcda of the build (gcov --json-format --stdout) and
keeps, for each source under FOLDERS, its executable lines and those run at
least once; a line counts once however many objects compile its file.
scripts/coverage.sh drives it.
"""
import json
import os
import subprocess
import sys

FOLDERS = ("core", "backends/ref", "backends/cpu")


def folder_of(rel):
    for f in FOLDERS:
        if rel.startswith(f + "/"):
            return f
    return None


def snapshot(build, out):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lines = {}  # rel path -> {line: ran}
    gcdas = [os.path.join(os.path.abspath(d), f) for d, _, fs in os.walk(build) for f in fs
             if f.endswith(".gcda")]
    for gcda in gcdas:
        done = subprocess.run(["gcov", "--json-format", "--stdout", gcda], capture_output=True,
                              text=True, cwd=os.path.dirname(gcda))
        if done.returncode != 0:
            continue
        for doc in done.stdout.splitlines():
            if not doc.startswith("{"):
                continue
            data = json.loads(doc)
            cwd = data.get("current_working_directory", "")
            for f in data.get("files", []):
                path = os.path.normpath(os.path.join(cwd, f["file"]))
                rel = os.path.relpath(path, repo)
                if not folder_of(rel):
                    continue
                seen = lines.setdefault(rel, {})
                for ln in f["lines"]:
                    n = ln["line_number"]
                    seen[n] = seen.get(n, False) or ln["count"] > 0
    doc = {rel: {"lines": sorted(seen), "ran": sorted(n for n, r in seen.items() if r)}
           for rel, seen in lines.items()}
    with open(out, "w") as fh:
        json.dump(doc, fh)
    total = sum(len(v["lines"]) for v in doc.values())
    ran = sum(len(v["ran"]) for v in doc.values())
    print("coverage: %d of %d lines ran (%d sources) -> %s" % (ran, total, len(doc), out))


def report(subset_path, all_path):
    subset = json.load(open(subset_path))
    every = json.load(open(all_path))
    rows, lost = {}, []
    for rel, v in sorted(every.items()):
        ran_all = set(v["ran"])
        ran_sub = set(subset.get(rel, {}).get("ran", []))
        r = rows.setdefault(folder_of(rel), [0, 0, 0])
        r[0] += len(v["lines"])
        r[1] += len(ran_all)
        r[2] += len(ran_sub & ran_all)
        only = sorted(ran_all - ran_sub)
        if only:
            lost.append((len(only), rel, only))
    print("%-14s %7s %18s %18s %7s" % ("folder", "lines", "every test", "ASan stage", "lost"))
    for f in FOLDERS:
        n, a, s = rows.get(f, [0, 0, 0])
        pct = lambda x: 100.0 * x / n if n else 0.0
        print("%-14s %7d %9d %6.1f%% %9d %6.1f%% %7d" % (f, n, a, pct(a), s, pct(s), a - s))
    if lost:
        print("\nlines only the tests outside the ASan stage run (most first):")
        for count, rel, only in sorted(lost, reverse=True)[:20]:
            spans, start = [], only[0]
            for a, b in zip(only, only[1:] + [None]):
                if b != a + 1:
                    spans.append(str(start) if start == a else "%d-%d" % (start, a))
                    start = b
            print("  %4d  %s: %s" % (count, rel, ", ".join(spans[:12]) +
                                     (" ..." if len(spans) > 12 else "")))


def main(argv):
    if len(argv) == 4 and argv[1] == "snapshot":
        snapshot(argv[2], argv[3])
    elif len(argv) == 4 and argv[1] == "report":
        report(argv[2], argv[3])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
