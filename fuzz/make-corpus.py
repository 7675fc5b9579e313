#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (fuzz/README.md).

    fuzz/make-corpus.py OUT_DIR [SHARED_DIR]

OUT_DIR/<harness>/ gets one file per seed. Seeds are made here (small GGUF
models, traces of every policy, cache call sequences) or taken, at run time,
from SHARED_DIR (the golden trace, stories260K, GSM8K lines); nothing from
the shared folder is copied into the repository. Each harness's input
layout is described at the top of fuzz/fuzz_<harness>.c; the selector bytes
written here follow it. Deterministic: the same files every run.
"""
import json
import os
import random
import struct
import sys

# ---- the toy vocabulary (as fuzz_util.c builds it) -------------------------


def byte_to_unicode():
    """GPT-2's byte-level map: printable bytes map to themselves, the others
    to U+0100 upwards."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) +
            list(range(0xAE, 0xFF + 1)))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


B2U = byte_to_unicode()
SP, NL = B2U[ord(" ")], B2U[ord("\n")]
MERGES = [(SP, "t"), ("h", "e"), (SP + "t", "he"), ("i", "n"), ("e", "r"), (SP, "a"),
          ("a", "n"), ("r", "e"), ("o", "n"), ("1", "2"), ("0", "0"), (NL, NL)]
SPECIALS = [("<|endoftext|>", 3), ("<|im_start|>", 3), ("<|im_end|>", 3), ("<u>", 4)]
TOKENS = ([s for s, _ in SPECIALS] + [B2U[b] for b in range(255)] + [a + b for a, b in MERGES])
TYPES = [t for _, t in SPECIALS] + [1] * (255 + len(MERGES))

CHATML = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
          "{{ '<|im_start|>system\\nYou are a small fuzzing assistant.<|im_end|>\\n' }}"
          "{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
          "{{ '<|im_start|>assistant\\n' }}{% endif %}")
CHATML_DQ = ("{% if messages[0]['role'] != 'system' %}{{ \"<|im_start|>system\\nYou're "
             "\\\"careful\\\".<|im_end|>\\n\" }}{% endif %}{% for message in messages %}"
             "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
             "'<|im_end|>\\n'}}{% endfor %}{% if add_generation_prompt %}"
             "{{ '<|im_start|>assistant\\n' }}{% endif %}")
CHATML_NO_DEFAULT = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                     "message['content'] + '<|im_end|>\\n'}}{% endfor %}"
                     "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
LLAMA2_CHAT = ("{% for message in messages %}{% if message['role'] == 'user' %}"
               "{{ bos_token + '[INST] ' + message['content'] + ' [/INST]' }}{% endif %}"
               "{% endfor %}")

# ---- GGUF writer ------------------------------------------------------------

U32, I32, F32, STRING, ARRAY = 4, 5, 6, 8, 9
T_F32, T_F16, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0, T_BF16 = 0, 1, 2, 3, 6, 7, 8, 30
BLOCK = {T_F32: (1, 4), T_F16: (1, 2), T_BF16: (1, 2), T_Q4_0: (32, 18), T_Q4_1: (32, 20),
         T_Q5_0: (32, 22), T_Q5_1: (32, 24), T_Q8_0: (32, 34)}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gkv(key, kind, value):
    out = gstr(key) + struct.pack("<I", kind)
    if kind == STRING:
        return out + gstr(value)
    if kind == U32:
        return out + struct.pack("<I", value)
    if kind == F32:
        return out + struct.pack("<f", value)
    elem, items = value
    out += struct.pack("<IQ", elem, len(items))
    for x in items:
        out += gstr(x) if elem == STRING else struct.pack("<i", x)
    return out


def gguf(kvs, tensors, rng, align=32):
    """kvs: list of gkv() blobs; tensors: (name, [ne0, ne1...], type)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
    infos, data = b"", b""
    for name, ne, ttype in tensors:
        elems = 1
        for n in ne:
            elems *= n
        per, size = BLOCK[ttype]
        nbytes = elems // per * size
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", ttype, len(data))
        if ttype == T_F32:
            blob = b"".join(struct.pack("<f", rng.uniform(-1, 1)) for _ in range(elems))
        else:
            blob = bytes(rng.randrange(256) for _ in range(nbytes))
            if ttype in (T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0):  # sane f16 scales
                blob = bytearray(blob)
                for at in range(0, nbytes, size):
                    blob[at:at + 2] = struct.pack("<e", 0.01)
                blob = bytes(blob)
        data += blob + b"\0" * (-len(blob) % align)
    out = head + infos
    return out + b"\0" * (-len(out) % align) + data


def tokenizer_kvs(chat=CHATML):
    kvs = [gkv("tokenizer.ggml.model", STRING, "gpt2"), gkv("tokenizer.ggml.pre", STRING, "smollm"),
           gkv("tokenizer.ggml.tokens", ARRAY, (STRING, TOKENS)),
           gkv("tokenizer.ggml.token_type", ARRAY, (I32, TYPES)),
           gkv("tokenizer.ggml.merges", ARRAY, (STRING, [a + " " + b for a, b in MERGES])),
           gkv("tokenizer.ggml.bos_token_id", U32, 1), gkv("tokenizer.ggml.eos_token_id", U32, 2)]
    if chat is not None:
        kvs.append(gkv("tokenizer.chat_template", STRING, chat))
    return kvs


def llama_gguf(rng, dim, heads, kv_heads, ffn, layers, wtype, tied=True, chat=CHATML,
               name="fuzz-toy"):
    hd = dim // heads
    kvs = [gkv("general.architecture", STRING, "llama"), gkv("general.name", STRING, name),
           gkv("llama.block_count", U32, layers), gkv("llama.embedding_length", U32, dim),
           gkv("llama.feed_forward_length", U32, ffn), gkv("llama.attention.head_count", U32, heads),
           gkv("llama.attention.head_count_kv", U32, kv_heads),
           gkv("llama.context_length", U32, 64), gkv("llama.rope.dimension_count", U32, hd),
           gkv("llama.rope.freq_base", F32, 10000.0),
           gkv("llama.attention.layer_norm_rms_epsilon", F32, 1e-5)] + tokenizer_kvs(chat)
    vocab = len(TOKENS)
    ts = [("token_embd.weight", [dim, vocab], wtype[0]), ("output_norm.weight", [dim], T_F32)]
    if not tied:
        ts.append(("output.weight", [dim, vocab], wtype[0]))
    for l in range(layers):
        p = "blk.%d." % l
        ts += [(p + "attn_norm.weight", [dim], T_F32), (p + "attn_q.weight", [dim, dim], wtype[1]),
               (p + "attn_k.weight", [dim, kv_heads * hd], wtype[2]),
               (p + "attn_v.weight", [dim, kv_heads * hd], wtype[3]),
               (p + "attn_output.weight", [dim, dim], wtype[4]),
               (p + "ffn_norm.weight", [dim], T_F32), (p + "ffn_gate.weight", [dim, ffn], wtype[5]),
               (p + "ffn_up.weight", [dim, ffn], wtype[6]),
               (p + "ffn_down.weight", [ffn, dim], wtype[7])]
    return gguf(kvs, ts, rng)


def gguf_seeds(rng):
    f32 = [T_F32] * 8
    quant = [T_Q8_0, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_F16, T_BF16, T_Q8_0]
    return {
        "llama-f32": llama_gguf(rng, 8, 2, 1, 16, 1, f32),
        "llama-f32-untied-2layers": llama_gguf(rng, 8, 2, 2, 8, 2, f32, tied=False,
                                               chat=CHATML_DQ),
        "llama-quant": llama_gguf(rng, 32, 4, 2, 32, 1, quant, chat=LLAMA2_CHAT),
        "tokenizer-only": gguf(tokenizer_kvs(), [], rng),
        "tokenizer-no-chat": gguf(tokenizer_kvs(None), [], rng),
        "empty-v3": b"GGUF" + struct.pack("<IQQ", 3, 0, 0),
        "v2-one-string": b"GGUF" + struct.pack("<IQQ", 2, 0, 1) + gkv("general.name", STRING, "x"),
    }

# ---- llama2.c -------------------------------------------------------------------


def llama2c_file(rng, dim, hidden, layers, heads, kv_heads, vocab, seq):
    hd = dim // heads
    v = abs(vocab)
    n = (v * dim + layers * dim + 2 * layers * dim * dim + 2 * layers * kv_heads * hd * dim +
         layers * dim + 3 * layers * hidden * dim + dim + seq * hd + (v * dim if vocab < 0 else 0))
    head = struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab, seq)
    return head + b"".join(struct.pack("<f", rng.uniform(-1, 1)) for _ in range(n))


def llama2c_seeds(rng, shared):
    seeds = {
        "raw-tiny": b"\0" + llama2c_file(rng, 8, 16, 1, 2, 1, 16, 8),
        "raw-tiny-unshared": b"\0" + llama2c_file(rng, 8, 8, 2, 2, 2, -12, 4),
        "shaped-tiny": b"\1" + struct.pack("<7i", 8, 16, 1, 2, 1, 16, 8) + bytes(range(64)),
        "shaped-short": b"\3" + struct.pack("<7i", 4, 4, 1, 1, 1, -3, 2) + bytes(range(16)),
        "raw-header-only": b"\0" + struct.pack("<7i", 64, 172, 5, 8, 4, 512, 512),
    }
    path = os.path.join(shared, "models", "stories260K", "stories260K.bin")
    if os.path.isfile(path):
        with open(path, "rb") as f:
            blob = f.read(28 + 4096)
        # Its header with a body repeated to size: the real shape, loaded.
        seeds["shaped-stories260K"] = b"\1" + blob
    return seeds

# ---- traces -----------------------------------------------------------------------


def probs(rng, n):
    w = [rng.random() ** 3 for _ in range(n)]
    s = sum(w)
    return [round(x / s, 6) for x in w]


def trace(rng, policy, params, prompt, heads, steps, prefill=False):
    head = {"prompt": prompt, "heads": heads}
    if policy:
        head["policy"] = policy
    head.update(params)
    lines = [json.dumps(head)]

    def rows(n, scale):
        r = [[round(x * scale, 6) for x in probs(rng, n)] for _ in range(heads)]
        return r[0] if heads == 1 else r
    if prefill:
        lines.append(json.dumps({"prefill": rows(prompt, 3.0)}))
    for t in range(1, steps + 1):
        lines.append(json.dumps({"t": t, "p": rows(prompt + t, 1.0)}))
    return "\n".join(lines) + "\n"


def trace_seeds(rng, shared):
    seeds = {
        "lazy": b"\0" + trace(rng, "lazy", {"budget": 6, "window": 2, "alpha": 0.1}, 4, 1, 10).encode(),
        "full-2heads": b"\0" + trace(rng, "full", {}, 3, 2, 4).encode(),
        "streaming": b"\0" + trace(rng, "streaming", {"budget": 5, "sinks": 2}, 4, 1, 8).encode(),
        "h2o": b"\0" + trace(rng, "h2o", {"budget": 5, "recent": 2}, 4, 2, 8).encode(),
        "tova": b"\0" + trace(rng, "tova", {"budget": 4}, 3, 1, 8).encode(),
        "snapkv": b"\0" + trace(rng, "snapkv", {"budget": 4, "window": 2, "interval": 3}, 6, 1, 8,
                                prefill=True).encode(),
        "nacl": b"\0" + trace(rng, "nacl", {"min_length": 4, "proxy_ratio": 0.5,
                                            "seed": 7}, 10, 2, 4, prefill=True).encode(),
        "override-lazy-stop": b"\x32" + trace(rng, None, {"budget": 3, "window": 2}, 2, 1, 6).encode(),
        "header-only": b"\0" + b'{"prompt": 0, "heads": 1, "policy": "full"}\n',
    }
    path = os.path.join(shared, "spec", "lazy-toy-trace.jsonl")
    if os.path.isfile(path):
        with open(path, "rb") as f:
            golden = f.read()
        seeds["golden"] = b"\0" + golden
        seeds["golden-override-lazy"] = b"\2" + golden
    return seeds

# ---- tokenizer ------------------------------------------------------------------


def tokenizer_seeds(questions):
    texts = ["Hello there, the answer is 1200.\n\nin er on an re",
             "<|im_start|>user\nHi there<|im_end|>\n<u> <|endoftext|>",
             "caf\u00e9 \u4e2d\u6587 \U0001f600 \u0434\u0430 it's we'll DON'T  \t\r\n",
             "def f(x):\n    return x**2  # square\n"]
    seeds = {}
    for i, t in enumerate(texts + questions[:4]):
        seeds["encode-%d" % i] = b"\0" + t.encode()
        seeds["encode-special-%d" % i] = b"\3" + t.encode()  # 3 % 3 == 0, bit 2 clear -> plain
        seeds["encode-parse-%d" % i] = b"\6" + t.encode()    # 6 % 3 == 0, bit 2 set
    seeds["render-default"] = b"\1" + b"What is 2+2?"
    seeds["render-system"] = b"\1" + b"Be brief.\0What is 2+2?"
    for i, chat in enumerate([CHATML, CHATML_DQ, CHATML_NO_DEFAULT, LLAMA2_CHAT]):
        seeds["template-%d" % i] = b"\2" + chat.encode() + b"\0\0" + b"What is 2+2?"
        seeds["template-system-%d" % i] = b"\2" + chat.encode() + b"\0Be brief.\0Hi <|im_end|>"
    return seeds

# ---- cache API --------------------------------------------------------------------


def cache_seed(rng, layers, kv, qmul, hd, seqs, cap, dtype, gqa, kind, budget, window, sets,
               ops):
    """Bytes in the order fuzz_cache.c reads them (fz_wild: a selector byte
    below 224, then the offset into the range)."""
    b = [0, layers - 1, 0, kv - 1, qmul - 1, 0, hd - 1, 0, seqs - 1, 0, cap - 1, 0, dtype, 0, gqa,
         0, 0, kind, budget, window - 1, len(sets)]
    for key, value in sets:
        b += [key, value]
    b.append(0)  # no direct field writes
    q, kvn = kv * qmul * hd, kv * hd
    for op in ops:
        if op == "prefill":
            n = min(cap, 1 + rng.randrange(cap))
            for layer in range(layers):
                b += [0, 0, 0, 0, layer, 16, n, 1]  # q given, out not, position 0
                b += [rng.randrange(-40, 40) & 255 for _ in range(2 * n * kvn + n * q)]
        elif op == "step":
            b.append(2)
            b += [0, 0]
            for _ in range(layers):
                b += [rng.randrange(-40, 40) & 255 for _ in range(q + 2 * kvn)]
        elif op == "read":
            b += [5, 0, 0, 0, 0, 0, 0, cap + 1, 0]
        elif op == "reset":
            b += [4, 0, 0]
        else:
            b.append(7)
    return bytes(x & 255 for x in b)


def cache_seeds(rng):
    steps = ["prefill"] + ["step"] * 14 + ["read", "stats", "reset", "step", "step"]
    # (name, kind, budget, window, lkv_policy_set calls as (KEYS index, VALUES index))
    policies = [("full", 0, 0, 1, []), ("lazy", 1, 6, 3, [(2, 9)]),
                ("streaming", 2, 6, 1, [(3, 3)]), ("h2o", 3, 6, 1, [(4, 3)]),
                ("tova", 4, 6, 1, []), ("snapkv", 5, 6, 2, [(5, 3)]),
                ("nacl", 6, 6, 1, [(10, 4), (6, 8), (11, 5)])]
    seeds = {}
    for name, kind, budget, window, sets in policies:
        seeds["cache-" + name] = cache_seed(rng, 2, 2, 2, 4, 1, 24, 0, 0, kind, budget, window,
                                            sets, steps)
        seeds["cache-%s-f16-expanded" % name] = cache_seed(rng, 1, 1, 3, 2, 2, 20, 1, 1, kind,
                                                           budget, window, sets, steps)
        seeds["cache-%s-bf16" % name] = cache_seed(rng, 1, 2, 1, 8, 1, 16, 2, 0, kind, budget,
                                                   window, sets, steps[1:])
    return seeds

# ---- eval prompts -------------------------------------------------------------------


def gsm8k_lines(shared, n):
    path = os.path.join(shared, "data", "gsm8k", "test.jsonl")
    if not os.path.isfile(path):
        return []
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(line.rstrip("\n"))
            if len(out) >= n:
                break
    return out


def eval_seeds(lines):
    seeds = {
        "ids": b"\1" + b"1,34,7;1,99",
        "ids-spaces": b"\1" + b" 3 , 4 ;5;  270",
        "ids-bad": b"\1" + b"1,,2;x;-3",
        "jsonl-toy": b"\0" + b'{"question": "Ducks lay 16 eggs.", "answer": "16 - 3 = 13\\n#### 13"}\n',
        "jsonl-escapes": b"\x40" + b'{"question": "a\\u00e9\\n\\"q\\"<|im_start|>", "answer": 7}\n\n'
                                   b'{"question": 3}\n{"question": "x"}',
    }
    for i, line in enumerate(lines[:8]):
        seeds["gsm8k-%d" % i] = bytes([0x40 | (i % 2) << 7]) + line.encode() + b"\n"
    if len(lines) >= 3:
        seeds["gsm8k-skip1-of-3"] = b"\x52" + "\n".join(lines[:3]).encode() + b"\n"
    return seeds

# ---- main ---------------------------------------------------------------------------


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make-corpus.py OUT_DIR [SHARED_DIR]")
    out = sys.argv[1]
    shared = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")
    rng = random.Random(20240601)
    lines = gsm8k_lines(shared, 12)
    questions = [json.loads(l)["question"] for l in lines]
    corpora = {
        "trace": trace_seeds(rng, shared),
        "gguf": gguf_seeds(rng),
        "llama2c": llama2c_seeds(rng, shared),
        "tokenizer": tokenizer_seeds(questions),
        "cache": cache_seeds(rng),
        "eval_prompts": eval_seeds(lines),
    }
    for harness, seeds in corpora.items():
        d = os.path.join(out, harness)
        os.makedirs(d, exist_ok=True)
        for name, blob in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(blob)
    print("make-corpus: %s" % ", ".join("%s %d" % (h, len(s)) for h, s in corpora.items()))


if __name__ == "__main__":
    main()
