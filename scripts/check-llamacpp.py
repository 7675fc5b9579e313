#!/usr/bin/env python3
"""lazykv's forward pass against llama.cpp's on SmolLM2's GGUF.

lazykv side, for every prompt: `lazykv generate --policy full --dtype f32
--ignore-eos` on the given (Q4_1) GGUF, which dequantizes the Q4_1 and Q8_0
weights to f32 and computes in f32; it decodes greedily (argmax of the raw
logits) from the prompt's ids and writes the logits of every step.

Primary comparison (pass/fail): llama.cpp on an F32 GGUF that llama.cpp
itself dequantized from the same file (its llama_model_quantize with
LLAMA_FTYPE_ALL_F32), with an f32 KV cache and flash attention off. Both
sides then compute in f32 from weights each dequantized on its own, so the
tokens must agree at every step and the logits differ by rounding only: this
checks lazykv's dequantization, tokenizer, chat template and forward pass in
one go. Why F32: on the Q4_1 file llama.cpp quantizes the activations to 8
bits (q8_1 / q8_0) for every quantized matmul, which moves its logits by far
more than lazykv's rounding, and its greedy path parts from an f32 one at the
first near-tie. The F32 file is made once and cached (default
$XDG_CACHE_HOME/lazykv/llamacpp/<model>.F32.gguf, ~/.cache when unset; made
again when missing or older than the source); llama.cpp's quantize log goes
to <that file>.log.

Secondary comparison (reported, never fails the check): llama.cpp on the Q4_1
file natively, as a measure of how far its 8-bit activations move it: the
steps its greedy tokens agree with lazykv's until the first divergence, the
logit differences, and how far llama.cpp moves against itself when it only
batches differently.

Logits are compared on one context, lazykv's own: llama.cpp reads lazykv's
prompt and generated tokens in one batch (teacher forcing), so a divergence
does not change the context of the later steps. Reported: the largest and
mean absolute difference over every step and logit, and the largest
difference relative to the standard deviation of llama.cpp's logits at that
step. Both tokenizers encode each prompt and their ids must agree; both
sides decode from lazykv's ids.

Prints a Markdown report (and writes it with --out). Exit 0 only when the
tokenizers agree and the primary comparison's tokens agree at every step of
every prompt.
"""
import argparse
import contextlib
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

import llama_cpp

CHAT_QUESTION = "What is 12*7? Think step by step."
RAW_TEXT = "Once upon a time, in a small village near the café of Jürgen, there lived"


def say(msg):
    print("check-llamacpp: %s" % msg, file=sys.stderr, flush=True)


def plain_cpu_path():
    """Turns off llama.cpp's extra CPU buffer types (AMX, repacked weights):
    0.3.36's AMX matmul crashes on some machines with AMX (seen on a
    Sapphire Rapids VM), and the plain path is ggml's reference arithmetic."""
    low = llama_cpp.llama_cpp
    default = low.llama_model_default_params

    def without_extra_buffers():
        params = default()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params

    low.llama_model_default_params = without_extra_buffers


# ---- the F32 model llama.cpp makes for itself ------------------------------

def default_f32_path(model):
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    stem = os.path.basename(model)
    if stem.lower().endswith(".gguf"):
        stem = stem[:-5]
    stem = re.sub(r"[.-](I?Q\d\w*|BF16|F16|F32)$", "", stem, flags=re.IGNORECASE)
    return os.path.join(cache, "lazykv", "llamacpp", stem + ".F32.gguf")


@contextlib.contextmanager
def output_to(path):
    """Sends file descriptors 1 and 2 to `path`: llama.cpp logs each tensor
    it converts, from C and through llama-cpp-python's log callback."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in saved + [fd]:
            os.close(f)


def ensure_f32(src, dst, threads):
    """Has llama.cpp dequantize `src` to an all-F32 GGUF at `dst`, unless a
    file at least as new as `src` is there already."""
    if os.path.exists(dst) and os.path.getmtime(dst) >= os.path.getmtime(src):
        say("llama.cpp's F32 model: %s (cached)" % dst)
        return
    os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
    log = dst + ".log"
    part = "%s.partial-%d" % (dst, os.getpid())
    say("llama.cpp dequantizing %s to %s (its log: %s)" % (src, dst, log))
    low = llama_cpp.llama_cpp
    params = low.llama_model_quantize_default_params()
    params.ftype = low.LLAMA_FTYPE_ALL_F32
    params.allow_requantize = True
    params.nthread = threads
    try:
        with output_to(log):
            rc = low.llama_model_quantize(src.encode(), part.encode(), ctypes.byref(params))
        if rc != 0:
            sys.exit("check-llamacpp: llama.cpp could not dequantize %s to F32 (code %d): see %s"
                     % (src, rc, log))
        os.replace(part, dst)
    finally:
        if os.path.exists(part):
            os.remove(part)


def open_llama(path, n_ctx, threads):
    # flash_attn=False on purpose: llama.cpp's CPU flash attention rounds Q
    # (and the softmax products) to f16, which lazykv's f32 path does not.
    return llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_batch=512, n_threads=threads,
                           n_threads_batch=threads, logits_all=True, flash_attn=False,
                           type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32,
                           verbose=False)


# ---- lazykv -----------------------------------------------------------------

def run_lazykv(args, extra, what):
    cmd = [args.lazykv, "generate", "--model", args.model, "--threads", str(args.threads)] + extra
    proc = subprocess.run(cmd, capture_output=True)
    if proc.returncode != 0:
        sys.exit("check-llamacpp: lazykv failed on %s (exit %d):\n  %s\n%s"
                 % (what, proc.returncode, " ".join(cmd),
                    proc.stderr.decode("utf-8", "replace")))
    return proc.stdout.decode("utf-8", "replace")


def lazykv_prompt(args, prompt):
    """lazykv's rendering of the prompt and its ids, from --echo."""
    src = ["--chat", prompt["text"]] if prompt["chat"] else ["--prompt", prompt["text"]]
    probe = src + ["--echo", "--max-tokens", "0", "--policy", "full", "--quiet"]
    text = run_lazykv(args, probe, prompt["name"])
    ids = run_lazykv(args, probe + ["--ids"], prompt["name"])
    return text, [int(t) for t in ids.splitlines()[0].split()]


def lazykv_greedy(args, prompt_ids, name):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "logits.f32")
        out = run_lazykv(args, [
            "--prompt-ids", ",".join(map(str, prompt_ids)), "--policy", "full", "--dtype", "f32",
            "--backend", args.backend, "--max-tokens", str(args.tokens), "--ignore-eos", "--ids",
            "--quiet", "--logits-out", path], name)
        logits = np.fromfile(path, dtype="<f4")
    tokens = [int(t) for t in out.split()]
    if len(tokens) != args.tokens or logits.size % args.tokens != 0:
        sys.exit("check-llamacpp: lazykv gave %d tokens and %d logits for %s, expected %d steps"
                 % (len(tokens), logits.size, name, args.tokens))
    return tokens, logits.reshape(args.tokens, -1)


# ---- llama.cpp --------------------------------------------------------------

def llama_render(llm, prompt):
    if not prompt["chat"]:
        return prompt["text"]
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    template = llm.metadata["tokenizer.chat_template"]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(
        messages=[{"role": "user", "content": prompt["text"]}], add_generation_prompt=True)


def llama_greedy(llm, prompt_ids, steps):
    """llama.cpp's own greedy continuation (prompt in one batch, then one token
    a step) and the logits that chose it."""
    llm.reset()
    llm.eval(prompt_ids)
    tokens, logits = [], []
    for i in range(steps):
        row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        tokens.append(int(np.argmax(row)))
        logits.append(row)
        if i + 1 < steps:
            llm.eval([tokens[-1]])
    return tokens, np.stack(logits)


def llama_forced(llm, prompt_ids, tokens):
    """llama.cpp's logits along a given continuation, read in one batch."""
    llm.reset()
    llm.eval(prompt_ids + tokens[:-1])
    first = len(prompt_ids) - 1
    return np.array(llm.scores[first:first + len(tokens)], dtype=np.float32)


def top2(row):
    i = np.argsort(-row, kind="stable")[:2]
    return [(int(j), float(row[j])) for j in i]


def against(llm, case, steps):
    """llama.cpp's greedy run and its logits along lazykv's tokens, against
    lazykv's."""
    lk_tok, lk_logits = case["lk_tok"], case["lk_logits"]
    ll_tok, ll_logits = llama_greedy(llm, case["lk_ids"], steps)
    if ll_logits.shape != lk_logits.shape:
        sys.exit("check-llamacpp: %s: llama.cpp has %d logits a step, lazykv %d"
                 % (case["name"], ll_logits.shape[1], lk_logits.shape[1]))
    diverge = next((i for i in range(steps) if lk_tok[i] != ll_tok[i]), None)
    forced = llama_forced(llm, case["lk_ids"], lk_tok).astype(np.float64)
    diff = np.abs(lk_logits.astype(np.float64) - forced)
    # Where the two greedy contexts are still the same, llama.cpp's step by
    # step logits against its batched ones: its own spread.
    common = steps if diverge is None else diverge + 1
    own = np.abs(ll_logits[:common].astype(np.float64) - forced[:common])
    res = {"ll_tok": ll_tok, "diverge": diverge, "agree": diverge is None,
           "same_steps": steps if diverge is None else diverge,
           "max_abs": float(diff.max()), "mean_abs": float(diff.mean()),
           "max_rel": float((diff.max(axis=1) / forced.std(axis=1)).max()),
           "own_max": float(own.max()), "own_mean": float(own.mean())}
    if diverge is not None:
        res["at_divergence"] = {"lazykv": top2(lk_logits[diverge]),
                                "llama.cpp": top2(ll_logits[diverge])}
    return res


# ---- the run ----------------------------------------------------------------

def prompts(args):
    out = [{"name": "chat: 12*7", "chat": True, "text": CHAT_QUESTION}]
    if args.gsm8k and os.path.exists(args.gsm8k):
        with open(args.gsm8k, encoding="utf-8") as f:
            question = json.loads(f.readline())["question"]
        out.append({"name": "chat: GSM8K test #1", "chat": True, "text": question})
    else:
        say("no GSM8K file (%s): that prompt is left out" % args.gsm8k)
    out.append({"name": "raw text (UTF-8)", "chat": False, "text": RAW_TEXT})
    return out


def lazykv_side(args, prompt):
    say("%s: lazykv ..." % prompt["name"])
    text, ids = lazykv_prompt(args, prompt)
    tok, logits = lazykv_greedy(args, ids, prompt["name"])
    srt = np.sort(logits, axis=1)
    return {"name": prompt["name"], "prompt": prompt, "lk_text": text, "lk_ids": ids,
            "lk_tok": tok, "lk_logits": logits,
            "min_margin": float((srt[:, -1] - srt[:, -2]).min())}


def tokenizer_check(llm, case):
    ll_text = llama_render(llm, case["prompt"])
    ll_ids = llm.tokenize(ll_text.encode("utf-8"), add_bos=False, special=True)
    case.update(ll_ids=ll_ids, ids_agree=case["lk_ids"] == ll_ids,
                text_agree=case["lk_text"].rstrip("\n") == ll_text.rstrip("\n"),
                lk_words=llm.detokenize(case["lk_tok"], special=True).decode("utf-8", "replace"))


def llama_side(path, cases, args, what, first):
    n_ctx = max(len(c["lk_ids"]) for c in cases) + args.tokens
    n_ctx = (n_ctx + 255) // 256 * 256
    llm = open_llama(path, n_ctx, args.threads)
    try:
        for case in cases:
            say("%s: llama.cpp on %s ..." % (case["name"], os.path.basename(path)))
            if first:
                tokenizer_check(llm, case)
            case[what] = against(llm, case, args.tokens)
    finally:
        llm.close()


# ---- the report -------------------------------------------------------------

def sci(x):
    return "%.1e" % x


def fmt_top2(pair):
    (a, la), (b, lb) = pair
    return "token %d (%.4f) over %d (%.4f), margin %.2e" % (a, la, b, lb, la - lb)


def one_line(text, n=160):
    text = text.replace("\n", "\\n").replace("`", "'")
    return text if len(text) <= n else text[:n] + "..."


def tokens_cell(r, steps):
    cell = "%d / %d" % (r["same_steps"], steps)
    return cell if r["agree"] else "**%s**" % cell


def margin_at_divergence(r):
    if r["agree"]:
        return "-"
    d = r["at_divergence"]
    return " / ".join(sci(d[side][0][1] - d[side][1][1]) for side in ("lazykv", "llama.cpp"))


def report(cases, args, f32_name, vocab):
    steps = args.tokens
    ok = all(c["primary"]["agree"] and c["ids_agree"] for c in cases)
    model = os.path.basename(args.model)
    lines = [
        "## lazykv vs llama.cpp: greedy decoding on %s" % model, "",
        "`lazykv generate --policy full --dtype f32 --backend %s` on %s (weights dequantized to "
        "f32, f32 arithmetic) against llama.cpp (llama-cpp-python %s, CPU, %d threads, f32 KV "
        "cache, flash attention off): %d greedy tokens from the same prompt ids (argmax of the "
        "raw logits, end tokens ignored). Δlogit: absolute difference over every step and all "
        "%d logits, llama.cpp reading lazykv's tokens in one batch; max Δ / std: the largest "
        "step's Δ over the standard deviation of llama.cpp's logits there."
        % (args.backend, model, llama_cpp.__version__, args.threads, steps, vocab), "",
        "**Check (pass/fail):** llama.cpp on %s, which llama.cpp dequantized itself from %s, "
        "so both sides compute in f32 from the same weights, each side's dequantization "
        "its own." % (f32_name, model), "",
        "| prompt | prompt tokens | tokenizers agree | tokens agree | Δlogit max / mean "
        "| max Δ / std | smallest top-2 margin |",
        "|---|---|---|---|---|---|---|"]
    for c in cases:
        r = c["primary"]
        tok = "yes" if c["ids_agree"] else "**no**"
        if c["ids_agree"] and not c["text_agree"]:
            tok += " (rendered text differs)"
        agree = tokens_cell(r, steps)
        lines.append("| %s | %d | %s | %s | %s / %s | %s | %s |"
                     % (c["name"], len(c["lk_ids"]), tok, agree,
                        sci(r["max_abs"]), sci(r["mean_abs"]), sci(r["max_rel"]),
                        sci(c["min_margin"])))
    lines += [
        "", "**Reported only:** llama.cpp on %s natively, which quantizes the activations to "
        "8 bits (q8_1 / q8_0) before each Q4_1 / Q8_0 matmul: its logits move far more than "
        "f32 rounding (against lazykv, and against itself when it only batches differently), "
        "so its greedy path parts from lazykv's at the first near-tie." % model, "",
        "| prompt | tokens agree before the first divergence "
        "| top-2 margin there: lazykv / llama.cpp | Δlogit max / mean "
        "| llama.cpp batched vs step by step: Δlogit max / mean |",
        "|---|---|---|---|---|"]
    for c in cases:
        r = c["secondary"]
        lines.append("| %s | %d / %d | %s | %.3f / %.4f | %.3f / %.4f |"
                     % (c["name"], r["same_steps"], steps, margin_at_divergence(r),
                        r["max_abs"], r["mean_abs"], r["own_max"], r["own_mean"]))
    lines.append("")
    for c in cases:
        if not c["ids_agree"]:
            lines.append("- %s: lazykv ids %s, llama.cpp ids %s"
                         % (c["name"], c["lk_ids"], c["ll_ids"]))
        r = c["primary"]
        if not r["agree"]:
            d = r["at_divergence"]
            lines.append("- %s: the check's tokens part at step %d: lazykv %s, llama.cpp %s"
                         % (c["name"], r["diverge"], fmt_top2(d["lazykv"]),
                            fmt_top2(d["llama.cpp"])))
    for c in cases:
        lines.append("- %s, lazykv: `%s`" % (c["name"], one_line(c["lk_words"])))
    lines += ["", "Result: %s." % (
        "PASS: every prompt's %d tokens agree with llama.cpp on its F32 model" % steps if ok
        else "FAIL: see the rows in bold")]
    return "\n".join(lines) + "\n", ok


def default_gsm8k():
    # The shared folder: LKV_SHARED_DIR as for the tests, else the sibling of
    # the checkout (tests/CMakeLists.txt's default).
    shared = os.environ.get("LKV_SHARED_DIR") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "shared")
    return os.path.normpath(os.path.join(shared, "data", "gsm8k", "test.jsonl"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lazykv", required=True, help="the lazykv binary")
    p.add_argument("--model", required=True, help="the GGUF file (SmolLM2 Q4_1)")
    p.add_argument("--f32-model", help="where llama.cpp's F32 copy is cached (default "
                   "$XDG_CACHE_HOME/lazykv/llamacpp/<model>.F32.gguf)")
    p.add_argument("--tokens", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--backend", default="cpu", help="lazykv backend (default cpu)")
    p.add_argument("--gsm8k", default=default_gsm8k(),
                   help="GSM8K test.jsonl (default $LKV_SHARED_DIR/data/gsm8k/test.jsonl, "
                   "else shared/ beside the checkout)")
    p.add_argument("--out", help="also write the Markdown report here")
    args = p.parse_args()
    if args.tokens < 1:
        sys.exit("check-llamacpp: --tokens must be at least 1")
    if not os.path.isfile(args.model):
        sys.exit("check-llamacpp: no model at %s (scripts/fetch-model.sh fetches it)"
                 % args.model)
    plain_cpu_path()
    f32 = args.f32_model or default_f32_path(args.model)
    ensure_f32(args.model, f32, args.threads)
    cases = [lazykv_side(args, prompt) for prompt in prompts(args)]
    llama_side(f32, cases, args, "primary", first=True)
    llama_side(args.model, cases, args, "secondary", first=False)
    text, ok = report(cases, args, os.path.basename(f32), cases[0]["lk_logits"].shape[1])
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
