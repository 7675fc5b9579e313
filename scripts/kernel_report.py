#!/usr/bin/env python3
"""The kernel report: what the compilers say of backends/gpu/kernels/lazykv.cu.

For sm_80 and sm_90 (nvcc, ptxas -v, and the SASS from nvdisasm) and
gfx90a (hipcc, clang's kernel-resource-usage remarks and its ISA), per
kernel: registers, spills, shared memory (LDS), the blocks per
multiprocessor (CU) that fit at the block size the host launches it with,
and the 16-byte loads the attend split kernels have in flight: on NVIDIA
the most K loads (and, separately, V loads) issued before the first of
them is used, the smaller of the two (for select, its 4-byte scores: in
the radix passes, then in the last pass); on gfx90a the most a loop has in
flight (vmcnt). No GPU is needed: these are the compilers' own
numbers, with the occupancy worked out from each architecture's limits.

It fails (exit 1) on a regression: a spill to memory in a hot kernel (the
ones every decode step runs: attend, store, qk_probs, reduce_rows; and
compact) on any target (ptxas's spill stores and loads; clang's VGPR spills:
its SGPR spills go to vector register lanes, not memory), or
an attend split kernel on sm_90 with fewer than 2 resident blocks, or a
16-byte attend split
kernel on sm_80 or sm_90 with fewer than 4 loads in flight in either pass.
A target whose compiler is absent is reported as skipped; with neither,
exit 77; without nvdisasm (NVIDIA's wheel nvidia-cuda-nvdisasm, which
scripts/install-deps.sh installs) the NVIDIA loads are reported as not
checked. $LKV_NVCC, $LKV_HIPCC and $LKV_NVDISASM name the tools (default:
nvcc, hipcc and nvdisasm on PATH; nvdisasm also where install-deps.sh puts
it).

    scripts/kernel-report.sh [--markdown FILE]
"""
import concurrent.futures
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


def tool(name):
    """$LKV_<NAME>, else on PATH, else where scripts/install-deps.sh puts
    NVIDIA's wheels ($LAZYKV_TOOLS_DIR, default ~/.cache/lazykv-tools)."""
    tools = os.environ.get("LAZYKV_TOOLS_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "lazykv-tools")
    wheel = os.path.join(tools, name, "nvidia", "cu13", "bin", name)
    return (os.environ.get("LKV_" + name.upper()) or shutil.which(name)
            or (wheel if os.access(wheel, os.X_OK) else None))


NVDISASM = tool("nvdisasm")
ATTEND = os.path.join(KERNELS, "attend.cu")
SELECT = os.path.join(KERNELS, "select.cu")
LOAD16 = re.compile(r"\bLDG\.[\w.]*128\b")
LOAD4 = re.compile(r"\bLDG\.E(\.(CONSTANT|EL|LU|STRONG\.\w+))*$")
REG = re.compile(r"\bR(\d+)(\.64)?")


def body_lines(path, function):
    """The (file, line) pairs of every definition of `function` in path
    (each from its first line to the '}' in column 0 that closes it)."""
    lines, found = open(path).read().splitlines(), set()
    for i, line in enumerate(lines):
        if (line.startswith("LKV_DEV") and re.search(r"\b%s\(" % function, line)
                or re.match(r"LKV_KERNEL(_RESIDENT)?\(%s[,)]" % function, line)):
            j = next(j for j in range(i, len(lines)) if lines[j].startswith("}"))
            found |= {(os.path.basename(path), n) for n in range(i + 1, j + 2)}
    if not found:
        sys.exit("kernel-report: %s not found in %s" % (function, path))
    return found


def sass_kernels(sass):
    """Per kernel: its instructions in order, each as (text, the (file,
    line) pairs of its inlining chain), from nvdisasm -gi."""
    kernels, name, chain, fresh = {}, None, set(), True
    for line in sass.splitlines():
        m = re.match(r"^(lkv_\w+):\s*$", line)
        if m:
            name, chain, fresh = m.group(1), set(), True
            kernels[name] = []
            continue
        if name is None:
            continue
        if line.lstrip().startswith("//##"):
            if fresh:
                chain, fresh = set(), False
            chain |= {(os.path.basename(f), int(n))
                      for f, n in re.findall(r'File "([^"]*)", line (\d+)', line)}
            continue
        m = re.match(r"^\s*/\*[0-9a-f]+\*/\s+(.*?);", line)
        if m:
            kernels[name].append((m.group(1), chain))
            fresh = True
    return kernels


def in_flight(code, fetch, lines, load=LOAD16, width=4, without=frozenset()):
    """The most loads (`load`: 16-byte by default, `width` registers each)
    of `fetch` inlined into `lines` (and not through `without`) a thread
    has issued and not yet used at any point of the straight-line order of
    `code`: a load leaves flight at the first later instruction naming one
    of its registers (a use, or a write the hardware makes wait for it)."""
    flight, most = [], 0
    for text, chain in code:
        regs = set()
        for r, wide in REG.findall(text):
            regs.update((int(r), int(r) + 1) if wide else (int(r),))
        op = text.split()[1] if text.startswith("@") else text.split()[0]
        flight = [d for d in flight if not set(range(d, d + width)) & regs]
        if load.match(op) and chain & fetch and chain & lines and not chain & without:
            flight.append(int(REG.search(text[text.index(op) + len(op):]).group(1)))
            most = max(most, len(flight))
    return most


def vec_split(name):
    """A 16-byte attend split kernel: its K/V loads in flight are counted."""
    return name.startswith("lkv_attend_split") and "_vec_" in name


def nvidia_loads(cubin):
    """Per 16-byte attend split kernel: the smaller of the most K loads
    (lkv_att_logits) and the most V loads (lkv_att_accumulate) in flight."""
    if not NVDISASM:
        return {}
    sass = run([NVDISASM, "-c", "-gi", cubin])
    fetch = body_lines(ATTEND, "lkv_att_fetch")
    k_lines = body_lines(ATTEND, "lkv_att_logits")
    v_lines = body_lines(ATTEND, "lkv_att_accumulate")
    kernels = sass_kernels(sass)
    loads = {name: min(in_flight(code, fetch, k_lines), in_flight(code, fetch, v_lines))
             for name, code in kernels.items()
             if vec_split(name)}
    # select's scores, 4 bytes each: lkv_select_rows' radix passes' and its
    # last pass's; lkv_select_spread's one read of its chunk
    fetch = body_lines(SELECT, "lkv_select_fetch")
    passes = body_lines(SELECT, "lkv_select_threshold")
    last = body_lines(SELECT, "lkv_select_place")
    code = kernels.get("lkv_select_rows", [])
    loads["lkv_select_rows"] = "%d, %d x 4 B" % (in_flight(code, fetch, passes, LOAD4, 1),
                                                in_flight(code, fetch, last, LOAD4, 1, passes))
    code = kernels.get("lkv_select_spread", [])
    spread = body_lines(SELECT, "lkv_select_spread")
    loads["lkv_select_spread"] = "%d x 4 B" % in_flight(code, fetch, spread, LOAD4, 1)
    return loads


def nvidia(arch, blocks):
    with tempfile.TemporaryDirectory() as tmp:
        # -lineinfo only annotates: the code is the fatbin's
        cubin = os.path.join(tmp, "k.cubin")
        text = run([NVCC, "-arch=" + arch, "-cubin", "-O3", "-std=c++17", "-lineinfo",
                    "-Xptxas", "-v", *INCLUDES, SOURCE, "-o", cubin])
        loads = nvidia_loads(cubin)
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
        r.update(block=b, resident=min(fit),
                 loads=loads.get(name, "not checked")
                 if vec_split(name) or name.startswith("lkv_select") else "-")
    return rows


def amd_loads(asm):
    """Per kernel: the most 16-byte global loads a loop has in flight at once
    (loads count up; s_waitcnt vmcnt(N) leaves at most N, as the counter
    runs in order). Only loads inside loops count (clang's block comments
    name each block's innermost loop header), so not the loads of q before
    the passes; the ISA text carries no inlining chain to tell the K pass's
    loads from the V pass's, as NVIDIA's does."""
    most, name, loop, flight = {}, None, None, 0
    for line in asm.splitlines():
        m = re.match(r"^(\w+):\s*(;.*)?$", line)
        if m and m.group(1).startswith("lkv_"):
            name, loop, flight = m.group(1), None, 0
            most[name] = {}
            continue
        if name is None:
            continue
        m = re.match(r"^\.(LBB\w+):\s*(;.*)?$", line)
        if m:
            note = m.group(2) or ""
            h = re.search(r"Header=(BB\w+)", note)
            loop = m.group(1)[1:] if "Loop Header" in note or "Parent Loop" in note else (
                h.group(1) if h else None)
            continue
        if "global_load_dwordx4" in line:
            flight += 1
            if loop is not None:
                most[name][loop] = max(most[name].get(loop, 0), flight)
            continue
        m = re.search(r"s_waitcnt\s+vmcnt\((\d+)\)", line)
        if m:
            flight = min(flight, int(m.group(1)))
    return {k: max(v.values()) for k, v in most.items() if v}


def amd(arch, blocks):
    with tempfile.TemporaryDirectory() as tmp:
        common = [HIPCC, "--offload-arch=" + arch, "--cuda-device-only", "-O3", "-std=c++17",
                  *INCLUDES, "-x", "hip", SOURCE]
        # one compile: the resource-usage remarks come with the ISA
        text = run(common + ["-S", "-Rpass-analysis=kernel-resource-usage",
                             "-o", os.path.join(tmp, "k.s")])
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
    """The attend split kernels, every one of which must keep 2 blocks per SM
    on sm_90 (blocks of 4 and 8 query heads read q from shared memory, so
    none needs more than 128 registers)."""
    return arch == "sm_90" and name.startswith("lkv_attend_split")


LOADS_WANTED = 4


def loads_short(arch, r):
    """A 16-byte attend split kernel on NVIDIA with fewer loads in flight
    than wanted (not when nvdisasm was absent to count them)."""
    return arch in NVIDIA and isinstance(r["loads"], int) and r["loads"] < LOADS_WANTED


def main():
    markdown = None
    if len(sys.argv) == 3 and sys.argv[1] == "--markdown":
        markdown = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit(__doc__.split("\n\n")[-1].strip())
    blocks = abi_blocks()
    # the targets' compiles are independent: run them side by side
    jobs = []
    with concurrent.futures.ThreadPoolExecutor() as pool:
        if NVCC:
            jobs += [(a, pool.submit(nvidia, a, blocks)) for a in NVIDIA]
        if HIPCC:
            jobs += [(a, pool.submit(amd, a, blocks)) for a in AMD]
        targets = [(a, job.result()) for a, job in jobs]
    skipped = [a for a in list(NVIDIA) + list(AMD) if a not in dict(targets)]
    out = ["# Kernel report (compiler output; no GPU ran these)", ""]
    if skipped:
        out += ["Skipped, compiler absent: " + ", ".join(skipped), ""]
    failures = []
    for arch, rows in targets:
        out += ["## " + arch, "",
                "| kernel | block | registers | spilled bytes | shared/LDS bytes | "
                "resident blocks | loads in flight (16 B unless said) |",
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
            if loads_short(arch, r):
                failures.append("%s %s: %d 16-byte loads in flight, %d wanted" % (
                    arch, name, r["loads"], LOADS_WANTED))
        out.append("")
    unchecked = [a for a, rows in targets if a in NVIDIA
                 and any(r["loads"] == "not checked" for r in rows.values())]
    if unchecked:
        out += ["NVIDIA loads in flight not checked (nvdisasm absent): " + ", ".join(unchecked),
                ""]
    out.append("check: no spills in the hot kernels (%s); every sm_90 attend split kernel "
               "keeps 2 blocks per SM; the 16-byte "
               "attend split kernels keep %d loads in flight in each pass on sm_80 and sm_90: %s"
               % (", ".join(h.rstrip("_") + "*" for h in HOT), LOADS_WANTED,
                  "FAIL" if failures else "PASS"))
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
