#!/usr/bin/env python3
"""Checks that lazykv's layers include only downward.

The stack, bottom to top (README "Layout" draws it):

  include/   the public header: anyone may include it; it includes nothing
             of ours
  base/      status text, dtype and fp16/bf16, philox, strbuf, json, clock
  core/      cache, policies, scheduler, budgets, and the backend interface
  backends/  one folder per backend, plus the host toolkits shared by
             several backends (gpu/ for CUDA and HIP, bind/ for Vulkan and
             OpenCL, host/ for all four GPU backends, plan/ for the launch
             plans of both families, hostmem/ for ref and cpu); a backend
             may include a toolkit, never another backend (but for the
             BACKEND_BASES edges below), and a toolkit never includes a
             backend; gpu/
             and bind/ may include host/ and plan/, which include no other
             toolkit
  runtime/   the registry, open and `auto`, the device list
  apps       model/ and report/ (the tools' JSON writer, progress line and
             tables) < eval/ < tools/, with bench/ and conformance/ beside
             eval/ (below tools/)

tests/ and fuzz/ sit above everything. A file may include its own folder
and anything in a layer below its own. Vendor headers (Vulkan, CUDA, HIP,
OpenCL) are allowed only inside backends and tests.

Each quoted include is resolved as the compiler would find it in this tree:
its own folder first, then by path suffix among the project's files. A name
that two folders both provide is an error too, since which one wins would
depend on the include order.

Usage: scripts/check-layers.py [ROOT]; exits 1 and names every violation.
"""
import os
import re
import sys

LAYERS = {
    "include": 0,
    "base": 1,
    "core": 2,
    "backends": 3,
    "runtime": 4,
    "model": 5,
    "report": 5,
    "eval": 6,
    "bench": 6,
    "conformance": 6,
    "tools": 7,
    "tests": 8,
    "fuzz": 8,
}
TOOLKITS = {"gpu", "bind", "host", "plan", "hostmem"}
# Toolkits built on another toolkit: gpu/ and bind/ take their locked
# entries from host/ and their launch plans from plan/; host/ and plan/
# stand on core alone.
TOOLKIT_BASES = {"gpu": {"host", "plan"}, "bind": {"host", "plan"}}
# A backend built on another backend's published header, with the reason.
BACKEND_BASES = {
    ("cpu", "backends/ref/ref_ops.h"):
        "cpu runs the oracle's own code for the ops it has not made fast, so "
        "each op keeps one reference implementation",
}
# Upward edges that are meant, each with its reason.
ALLOWED = {
    ("backends/gpu/kernels/lkv_gpu.h", "tests/gpu_emu/gpu_emu.h"):
        "the CPU SIMT emulator is the kernels' third compiler (after nvcc and "
        "hipcc): under -DLKV_GPU_EMU the kernel dialect header takes its "
        "built-ins from it",
}
SOURCES = (".c", ".h", ".cu", ".cpp", ".cl", ".comp", ".glsl")
VENDOR = re.compile(r"#\s*include\s*<(vulkan/|cuda|hip/|CL/|nvrtc)")
QUOTED = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def project_files(root):
    out = []
    for top in LAYERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if d not in ("corpus", "regressions")]
            for f in filenames:
                if f.endswith(SOURCES):
                    out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(out)


def layer_of(path):
    parts = path.split(os.sep)
    return LAYERS[parts[0]], parts


def backend_of(parts):
    """The backend folder ('cuda', 'gpu', ...) of a path under backends/."""
    return parts[1] if parts[0] == "backends" and len(parts) > 2 else None


def resolve(src, name, files, by_suffix):
    here = os.path.normpath(os.path.join(os.path.dirname(src), name))
    if here in files:
        return [here]
    return by_suffix.get(name, [])


def check_edge(src, dst):
    ls, ps = layer_of(src)
    ld, pd = layer_of(dst)
    if ps[0] == pd[0]:
        if ps[0] != "backends":
            return None
        bs, bd = backend_of(ps), backend_of(pd)
        if bs == bd or bd is None:
            return None
        if bd in TOOLKITS and bs not in TOOLKITS:
            return None
        if (bs, "/".join(pd)) in BACKEND_BASES:
            return None
        if bd in TOOLKITS and bs in TOOLKITS:
            if bd in TOOLKIT_BASES.get(bs, ()):
                return None
            return f"toolkit backends/{bs} includes toolkit backends/{bd}"
        return f"backends/{bs} includes another backend's file"
    if pd[0] == "include":
        return None
    if ls <= ld:
        return f"{ps[0]}/ (layer {ls}) includes {pd[0]}/ (layer {ld}): upward"
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    files = set(project_files(root))
    by_suffix = {}
    for f in files:
        parts = f.split(os.sep)
        for i in range(len(parts)):
            by_suffix.setdefault("/".join(parts[i:]), []).append(f)
    problems = []
    edges = 0
    for src in sorted(files):
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        top = src.split(os.sep)[0]
        if top not in ("backends", "tests", "fuzz") and VENDOR.search(text):
            problems.append(f"{src}: includes a vendor header outside backends/")
        for name in QUOTED.findall(text):
            cands = resolve(src, name, files, by_suffix)
            if not cands:
                continue  # generated in the build tree, or a system header
            if len(cands) > 1:
                problems.append(f"{src}: \"{name}\" is ambiguous: {', '.join(sorted(cands))}")
                continue
            edges += 1
            why = None if (src, cands[0]) in ALLOWED else check_edge(src, cands[0])
            if why:
                problems.append(f"{src}: \"{name}\" ({cands[0]}): {why}")
    for p in problems:
        print("check-layers:", p)
    if problems:
        print(f"check-layers: {len(problems)} violation(s) in {len(files)} files")
        return 1
    print(f"check-layers: {edges} includes in {len(files)} files, all downward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
