#!/usr/bin/env python3
"""The decode step of `lazykv bench`'s decode table, written in plain PyTorch.

The peer lazykv's cpu backend is measured against (scripts/bench-vs-torch.sh
runs both in one invocation): one layer of LazyEviction with expanded K/V,
H heads of dimension D, budget B, window W, alpha 1e-4, as a PyTorch user
would write it on the CPU with the same threads:

  append K, V into preallocated [H, B + W, D] buffers (f32 or f16 storage);
  attention: q @ K^T * scale, softmax, p @ V (f16 storage is widened to f32
  for the matmuls: CPU PyTorch has no fast f16 GEMM);
  the threshold update: mri = max(mri, t - last), last = t where p >= alpha;
  every W steps with n > B: the LazyEviction score over the n - W older
  slots (h1 + h2 of spec/policies.md), topk of B - W, sorted, and a gather
  of K, V, last and mri (the newest W slots kept).

The cache stands where lazykv's bench puts it (B tokens, growing to B + W,
one eviction per period); the timed steps are one period after a warm-up
period. Prints one JSON object: mean ms per step over the period, the
evicting step's ms, and the mean of the other steps.
"""
import argparse
import json
import math
import os
import time

import torch


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--heads", type=int, default=28)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--budget", type=int, default=1492)
    p.add_argument("--window", type=int, default=175)
    p.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    p.add_argument("--threads", type=int, default=0, help="0: LAZYKV_CPU_THREADS or all CPUs")
    p.add_argument("--alpha", type=float, default=1e-4)
    return p.parse_args()


class LazyLayer:
    def __init__(self, a, dtype):
        h, d, cap = a.heads, a.dim, a.budget + a.window
        self.a = a
        self.k = torch.randn(h, cap, d).to(dtype)
        self.v = torch.randn(h, cap, d).to(dtype)
        self.last = torch.zeros(h, cap, dtype=torch.int32)
        self.mri = torch.zeros(h, cap, dtype=torch.int32)
        self.n = a.budget
        self.scale = 1.0 / math.sqrt(d)

    def step(self, t, q, k, v):
        a, n = self.a, self.n
        self.k[:, n] = k
        self.v[:, n] = v
        self.last[:, n] = t - 1
        self.mri[:, n] = 0
        n += 1
        keys = self.k[:, :n].float()
        vals = self.v[:, :n].float()
        logits = torch.bmm(keys, q.unsqueeze(2)).squeeze(2) * self.scale  # [h, n]
        p = torch.softmax(logits, dim=1)
        out = torch.bmm(p.unsqueeze(1), vals).squeeze(1)  # [h, d]
        imp = p >= a.alpha
        last, mri = self.last[:, :n], self.mri[:, :n]
        mri.copy_(torch.where(imp, torch.maximum(mri, t - last), mri))
        last.copy_(torch.where(imp, torch.full_like(last, t), last))
        if n > a.budget and t % a.window == 0:
            n = self.evict(t, n)
        self.n = n
        return out

    def evict(self, t, n):
        a = self.a
        old = n - a.window
        last = self.last[:, :old].float()
        mri = self.mri[:, :old].float()
        h2 = torch.where(mri == 0, torch.zeros_like(mri), 2.0 / (1.0 + torch.exp(mri - 1.0)))
        h1 = 2.0 / (1.0 + torch.exp(1.0 + (t - last) / (mri + 1e-5)))
        keep = torch.topk(h1 + h2, a.budget - a.window, dim=1).indices.sort(dim=1).values
        recent = torch.arange(old, n).expand(a.heads, a.window)
        idx = torch.cat([keep, recent], dim=1)  # [h, B]
        for buf in (self.k, self.v):
            buf[:, : a.budget] = torch.gather(
                buf[:, :n], 1, idx.unsqueeze(2).expand(-1, -1, buf.shape[2]))
        for buf in (self.last, self.mri):
            buf[:, : a.budget] = torch.gather(buf[:, :n], 1, idx)
        return a.budget


def main():
    a = parse()
    threads = a.threads or int(os.environ.get("LAZYKV_CPU_THREADS", "0") or 0) or os.cpu_count()
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    dtype = torch.float32 if a.dtype == "f32" else torch.float16
    layer = LazyLayer(a, dtype)
    w = a.window
    qs = torch.randn(2 * w, a.heads, a.dim)
    ks = torch.randn(2 * w, a.heads, a.dim)
    vs = torch.randn(2 * w, a.heads, a.dim)
    times = []
    # the cache starts at B right after an eviction: steps t = w+1 .. 3w,
    # the second period timed, its last step evicting
    with torch.no_grad():
        for i in range(2 * w):
            t = w + 1 + i
            t0 = time.perf_counter()
            layer.step(t, qs[i], ks[i], vs[i])
            if i >= w:
                times.append(time.perf_counter() - t0)
    evicting = times[-1]
    others = times[:-1]
    print(json.dumps({
        "impl": "torch", "torch": torch.__version__, "threads": threads,
        "heads": a.heads, "dim": a.dim, "budget": a.budget, "window": w, "dtype": a.dtype,
        "ms_per_step": 1e3 * sum(times) / len(times),
        "evicting_step_ms": 1e3 * evicting,
        "other_steps_ms": 1e3 * sum(others) / len(others),
    }))


if __name__ == "__main__":
    main()
