#!/usr/bin/env python3
"""The kernel report: what the compilers say of backends/gpu/kernels/lazykv.cu.

For sm_80 and sm_90 (nvcc, ptxas -v) and gfx90a (hipcc, clang's
kernel-resource-usage remarks and its ISA), per kernel: registers, spills,
shared memory (LDS), the blocks per multiprocessor (CU) that fit at the
block size the host launches it with, and on gfx90a the 16-byte loads the
attend split kernels issue before their first wait for them. No GPU is
needed: these are the compilers' own numbers, with the occupancy worked out
from each architecture's limits.

It fails (exit 1) on a regression: a spill to memory in a hot kernel (the
ones every decode step runs: attend, store, qk_probs, reduce_rows; and
compact) on any target (ptxas's spill stores and loads; clang's VGPR spills:
its SGPR spills go to vector register lanes, not memory), or
an attend split kernel on sm_90 that the 4:1 and smaller GQA groups (or the
element loads at any group) use with fewer than 2 resident blocks. A target
whose compiler is absent is reported as skipped; with neither, exit 77.
$LKV_NVCC and $LKV_HIPCC name the compilers (default: nvcc and hipcc on
PATH).

    scripts/kernel-report.sh [--markdown FILE]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
KERNELS = os.path.join(REPO, "backends", "gpu", "kernels")
SOURCE = os.path.join(KERNELS, "lazykv.cu")
INCLUDES = ["-I", KERNELS, "-I", os.path.join(REPO, "core")]

# Per multiprocessor: registers, shared memory (bytes), threads, blocks.
NVIDIA = {
    "sm_80": dict(regs=65536, smem=167936, threads=2048, blocks=32),
    "sm_90": dict(regs=65536, smem=232448, threads=2048, blocks=32),
}
# gfx90a: a CU is 4 SIMDs of 64-lane waves, at most 8 waves each.
AMD = {"gfx90a": dict(simds=4, wave=64)}


def abi_blocks():
    """Launch block sizes by kernel, from lkv_kernel_abi.h's LKV_*_BLOCK."""
    text = open(os.path.join(KERNELS, "lkv_kernel_abi.h")).read()
    sizes = {m.group(1): int(m.group(2))
             for m in re.finditer(r"#define (LKV_\w+_BLOCK)\s+(\d+)", text)}
    return {
        "lkv_attend": sizes["LKV_ATT_BLOCK"], "lkv_observe": sizes["LKV_OBSERVE_BLOCK"],
        "lkv_score": sizes["LKV_SCORE_BLOCK"], "lkv_select": sizes["LKV_SELECT_BLOCK"],
        "lkv_compact": sizes["LKV_COMPACT_BLOCK"], "lkv_store": sizes["LKV_STORE_BLOCK"],
        "lkv_gather": sizes["LKV_GATHER_BLOCK"], "lkv_reduce": sizes["LKV_REDUCE_BLOCK"],
        "lkv_move": sizes["LKV_MOVE_BLOCK"], "lkv_qk": sizes["LKV_QK_BLOCK"],
    }


def block_of(name, blocks):
    for prefix, size in blocks.items():
        if name.startswith(prefix):
            return size
    return 256


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("kernel-report: %s failed:\n%s" % (cmd[0], done.stdout + done.stderr))
    return done.stdout + done.stderr


NVCC = os.environ.get("LKV_NVCC") or shutil.which("nvcc")
HIPCC = os.environ.get("LKV_HIPCC") or shutil.which("hipcc")


def nvidia(arch, blocks):
    with tempfile.TemporaryDirectory() as tmp:
        text = run([NVCC, "-arch=" + arch, "-cubin", "-O3", "-std=c++17", "-Xptxas", "-v",
                    *INCLUDES, SOURCE, "-o", os.path.join(tmp, "k.cubin")])
    rows, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            cur = rows.setdefault(m.group(1), {})
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur is not None:
            cur["spill"] = int(m.group(1)) + int(m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m and cur is not None:
            cur["regs"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            cur["smem"] = int(s.group(1)) if s else 0
    lim = NVIDIA[arch]
    for name, r in rows.items():
        b = block_of(name, blocks)
        warps = b // 32
        # registers are allocated per warp in units of 256
        per_warp = -(-r["regs"] * 32 // 256) * 256
        fit = [lim["threads"] // b, lim["blocks"], lim["regs"] // (per_warp * warps)]
        if r["smem"]:
            fit.append(lim["smem"] // r["smem"])
        r.update(block=b, resident=min(fit), loads="-")
    return rows


def amd_loads(asm):
    """Per kernel: the most 16-byte global loads issued between two waits for
    all of them (s_waitcnt vmcnt(0)), a floor on the loads a wave has in flight."""
    most, cur, name = {}, 0, None
    for line in asm.splitlines():
        m = re.match(r"^(\w+):\s*(;.*)?$", line)
        if m and m.group(1).startswith("lkv_"):
            name, cur = m.group(1), 0
            most[name] = 0
            continue
        if name is None:
            continue
        if "global_load_dwordx4" in line:
            cur += 1
            most[name] = max(most[name], cur)
        elif re.search(r"s_waitcnt\s+vmcnt\(0\)", line):
            cur = 0
    return most


def amd(arch, blocks):
    with tempfile.TemporaryDirectory() as tmp:
        common = [HIPCC, "--offload-arch=" + arch, "--cuda-device-only", "-O3", "-std=c++17",
                  *INCLUDES, "-x", "hip", SOURCE]
        text = run(common + ["-c", "-Rpass-analysis=kernel-resource-usage",
                             "-o", os.path.join(tmp, "k.o")])
        run(common + ["-S", "-o", os.path.join(tmp, "k.s")])
        asm = open(os.path.join(tmp, "k.s")).read()
    rows, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"Function Name: (\w+)", line)
        if m:
            cur = rows.setdefault(m.group(1), {"spill": 0})
            continue
        if cur is None:
            continue
        m = re.search(r"remark:\s+(VGPRs|VGPRs Spill|LDS Size \[bytes/block\]|"
                      r"Occupancy \[waves/SIMD\]): (\d+)", line)
        if not m:
            continue
        key, val = m.group(1), int(m.group(2))
        if key == "VGPRs":
            cur["regs"] = val
        elif key == "VGPRs Spill":  # to scratch memory; SGPR spills go to VGPR lanes
            cur["spill"] += val
        elif key.startswith("LDS"):
            cur["smem"] = val
        elif key.startswith("Occupancy"):
            cur["waves"] = val
    loads = amd_loads(asm)
    lim = AMD[arch]
    for name, r in rows.items():
        b = block_of(name, blocks)
        r.update(block=b, resident=r.get("waves", 0) * lim["simds"] // (b // lim["wave"]),
                 loads=loads.get(name, "-") if name.startswith("lkv_attend_split") else "-")
    return rows


HOT = ("lkv_attend_", "lkv_store_", "lkv_qk_probs", "lkv_reduce_rows", "lkv_compact_")


def gated(arch, name):
    """The attend split kernels that must keep 2 blocks per SM on sm_90."""
    if arch != "sm_90" or not name.startswith("lkv_attend_split"):
        return False
    return not name.endswith("_vec_g8")


def main():
    markdown = None
    if len(sys.argv) == 3 and sys.argv[1] == "--markdown":
        markdown = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit(__doc__.split("\n\n")[-1].strip())
    blocks = abi_blocks()
    targets = []
    if NVCC:
        targets += [(a, nvidia(a, blocks)) for a in NVIDIA]
    if HIPCC:
        targets += [(a, amd(a, blocks)) for a in AMD]
    skipped = [a for a in list(NVIDIA) + list(AMD) if a not in dict(targets)]
    out = ["# Kernel report (compiler output; no GPU ran these)", ""]
    if skipped:
        out += ["Skipped, compiler absent: " + ", ".join(skipped), ""]
    failures = []
    for arch, rows in targets:
        out += ["## " + arch, "",
                "| kernel | block | registers | spilled bytes | shared/LDS bytes | "
                "resident blocks | 16-byte loads before a wait |",
                "|---|---:|---:|---:|---:|---:|---:|"]
        for name in sorted(rows):
            r = rows[name]
            out.append("| %s | %d | %d | %d | %d | %d | %s |" % (
                name, r["block"], r.get("regs", 0), r["spill"], r.get("smem", 0),
                r["resident"], r["loads"]))
            if r["spill"] and name.startswith(HOT):
                failures.append("%s %s spills %d bytes" % (arch, name, r["spill"]))
            if gated(arch, name) and r["resident"] < 2:
                failures.append("%s %s: %d resident block(s) of %d threads, 2 wanted" % (
                    arch, name, r["resident"], r["block"]))
        out.append("")
    out.append("check: no spills in the hot kernels (%s); the sm_90 attend split kernels but "
               "the 16-byte ones at 8 query heads keep 2 blocks per SM: %s"
               % (", ".join(h.rstrip("_") + "*" for h in HOT), "FAIL" if failures else "PASS"))
    out += ["- " + f for f in failures]
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if markdown:
        open(markdown, "w").write(text)
    if not targets:
        return 77
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
