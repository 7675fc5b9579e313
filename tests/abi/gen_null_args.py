#!/usr/bin/env python3
"""Writes a C test that calls every exported function with each pointer
argument NULL in turn.

Reads every LKV_API declaration of include/lazykv.h (return type, name,
parameters), so a new function is covered the day it is declared. For each
function and each of its pointer parameters, one case calls the function
with that parameter NULL and every other argument valid: real objects for
the opaque handles (a runtime opened on "ref", an owned or an engine-owned
cache on it, a slot map), zeroed or initialized structs, writable buffers
for out_ pointers, known names for strings. A function returning
lkv_status must return non-OK with the parameter's name, as the header
spells it, in lkv_last_error(); every other function (void, a name, a
count) must only not crash. Each case runs in a child process, so a crash
is one failure, named, and the count of failures is the test's result.

The value tables below are per type (and, for strings and a few counts, per
parameter name); a parameter whose type has no entry makes its function's
cases fail, naming the function and the type. NULL_ACCEPTED lists the
pointers the API documents (or long accepts) as optional: their cases
check only that nothing crashes.

Usage: gen_null_args.py HEADER OUTPUT.c
"""
import re
import sys

# The opaque handles: the valid object per type, by the function's name
# (an engine-owned cache for the calls that observe or plan).
ENGINE_CACHE_CALLS = re.compile(r"observe|plan|prompt_voters")
HANDLES = {
    "lkv_runtime": lambda fn: "g_rt",
    "lkv_cache": lambda fn: "g_engine_cache" if ENGINE_CACHE_CALLS.search(fn) else "g_cache",
    "lkv_slot_map": lambda fn: "g_map",
}

# Structs the test must fill beyond zero to be valid (C statements on `p`,
# a pointer to the first of the array's elements).
STRUCT_INIT = {
    "lkv_cache_config": "lkv_cache_config_init(p); p->capacity = 64;",
    "lkv_policy_params": "lkv_policy_init(p, LKV_POLICY_LAZY); p->budget = 32; p->window = 8;",
    "lkv_slot_map_config": "p->sequences = 1; p->layers = 1; p->heads = 1; p->capacity = 64;"
                           " p->block_size = 16; p->n_blocks = 8;",
    "lkv_external_device": "p->backend = \"cuda\";",
    "lkv_slot_view": "p->cap = 64;",
    "lkv_kv_layout": "p->dtype = LKV_DTYPE_F32; p->head_dim = 4; p->layers = 1; p->heads = 1;"
                     " p->sequences = 1; p->k_layers = g_layer_ptrs; p->v_layers = g_layer_ptrs;"
                     " p->seq_stride = 64 * 16; p->slot_stride = 16; p->head_stride = 16;",
}

# Pointers to scalars: a writable buffer of the type; pointer-to-pointer
# outputs: the address of a pointer of that type.
SCALAR_TYPES = {"int", "int32_t", "int64_t", "uint32_t", "uint64_t", "size_t", "float", "double"}

# Strings, per (function, parameter) first, then per parameter.
STRINGS = {
    ("lkv_policy_from_name", "name"): "\"lazy\"",
    ("lkv_dtype_from_name", "name"): "\"f32\"",
    ("lkv_granularity_from_name", "name"): "\"head\"",
    ("lkv_placement_from_name", "name"): "\"compact\"",
    "spec": "\"ref\"",
    "key": "\"budget\"",
    "value": "\"64\"",
    "trace_text": "\"{\\\"policy\\\": \\\"lazy\\\"}\\n\"",
    "policy_override": "\"lazy\"",
}

# Function pointers, by their type with the parameter names.
FUNCTIONS = {
    "int (*)(void *user, const char *line)": "gen_write_line",
}

# void * user data: any address.
VOID_POINTERS = {"user": "&g_user"}

# Scalars: 0 unless named here (a count the call needs above 0, so that a
# NULL buffer cannot pass as "nothing to write").
SCALARS = {"n_tokens": "1", "cap": "4", "freed_cap": "4", "prompt_tokens": "8", "steps": "8"}

# Pointers the API accepts as NULL, with where it says so. Their cases check
# only that the call does not crash.
NULL_ACCEPTED = {
    ("lkv_runtime_open", "spec"): "NULL reads LAZYKV_BACKEND (header)",
    ("lkv_runtime_close", "rt"): "NULL is accepted (header)",
    ("lkv_cache_destroy", "cache"): "NULL is accepted (header)",
    ("lkv_slot_map_destroy", "map"): "destroy: NULL is accepted",
    ("lkv_policy_peak_slots", "out_peak_slots"): "either out pointer may be NULL (header)",
    ("lkv_policy_peak_slots", "out_capacity"): "either out pointer may be NULL (header)",
    ("lkv_cache_prompt_voters", "out_first"): "any out pointer may be NULL (header)",
    ("lkv_cache_prompt_voters", "out_causal"): "any out pointer may be NULL (header)",
    ("lkv_cache_prompt_voters", "out_required"): "any out pointer may be NULL (header)",
    ("lkv_cache_sequence_info", "out_length"): "optional out (examples/engine.c passes NULL)",
    ("lkv_cache_sequence_info", "out_step"): "optional out (tests pass NULL)",
    ("lkv_cache_read_slots", "view"): "optional: only the count wanted",
    ("lkv_cache_read_slots", "out_n"): "optional out (core/trace.c passes NULL)",
    ("lkv_slot_map_apply", "out_freed"): "NULL lists none (header)",
    ("lkv_slot_map_apply", "out_n_freed"): "may be NULL (header)",
    ("lkv_slot_map_remove", "out_freed"): "listed as lkv_slot_map_apply lists them (header)",
    ("lkv_slot_map_remove", "out_n_freed"): "listed as lkv_slot_map_apply lists them (header)",
    ("lkv_plan_apply", "out_freed"): "optional, as lkv_slot_map_apply's (tests pass NULL)",
    ("lkv_plan_apply", "out_n_freed"): "optional, as lkv_slot_map_apply's (tests pass NULL)",
    ("lkv_plan_apply_device", "out_freed"): "as lkv_plan_apply's",
    ("lkv_plan_apply_device", "out_n_freed"): "as lkv_plan_apply's",
    ("lkv_cache_apply_plan_device", "out_freed"): "as lkv_plan_apply's",
    ("lkv_cache_apply_plan_device", "out_n_freed"): "as lkv_plan_apply's",
    ("lkv_trace_replay", "policy_override"): "may be NULL (header)",
    ("lkv_trace_replay", "user"): "the caller's own data, passed through",
}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def split_params(text):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [" ".join(p.split()) for p in parts if p.strip()]


def parse_param(p):
    """(type, name, is_pointer, is_function) of one parameter."""
    m = re.match(r"^(.*)\(\s*\*\s*(\w+)\s*\)\s*(\(.*\))$", p)
    if m:
        return f"{m.group(1).strip()} (*){m.group(3)}", m.group(2), True, True
    m = re.match(r"^(.*?)(\w+)$", p)
    if not m:
        sys.exit(f"gen_null_args: cannot parse parameter '{p}'")
    ctype = " ".join(m.group(1).replace("*", " * ").split()).replace("* *", "**")
    return ctype, m.group(2), "*" in ctype, False


def declarations(text):
    out = []
    for m in re.finditer(r"^LKV_API\s+(.*?);", text, re.M | re.S):
        decl = " ".join(m.group(1).split())
        n = re.search(r"\b(lkv_\w+)\s*\(", decl)
        if not n:
            sys.exit(f"gen_null_args: no function name in '{decl}'")
        ret, name = decl[:n.start()].strip(), n.group(1)
        params_text = decl[n.end():decl.rindex(")")]
        params = [] if params_text.strip() in ("", "void") else \
            [parse_param(p) for p in split_params(params_text)]
        out.append((ret, name, params))
    if not out:
        sys.exit("gen_null_args: no LKV_API declaration found")
    return out


def base_of(ctype):
    """(base type without const, stars)."""
    stars = ctype.count("*")
    base = " ".join(w for w in ctype.replace("*", " ").split() if w not in ("const", "struct"))
    return base, stars


class Values:
    def __init__(self, structs, opaque, enums):
        self.structs, self.opaque, self.enums = structs, opaque, enums
        self.used_structs, self.used_scalars = set(), set()

    def value(self, fn, ctype, name, is_fn):
        """A valid C expression for the parameter, or None."""
        if is_fn:
            return FUNCTIONS.get(ctype)
        base, stars = base_of(ctype)
        if stars == 0:
            if base in SCALAR_TYPES or base in self.enums:
                return SCALARS.get(name, "0")
            return None
        if base == "char" and stars == 1:
            return STRINGS.get((fn, name), STRINGS.get(name))
        if base == "void" and stars == 1:
            return VOID_POINTERS.get(name)
        if base in self.opaque:
            if stars == 1 and base in HANDLES:
                return HANDLES[base](fn)
            if stars == 2:
                return f"&g_out_{base}"
            return None
        if base in self.structs and stars == 1:
            self.used_structs.add(base)
            return f"g_{base}"
        if (base in SCALAR_TYPES or base in self.enums) and stars in (1, 2):
            self.used_scalars.add((base, stars))
            return f"g_buf_{base.replace(' ', '_')}" if stars == 1 \
                else f"&g_ptr_{base.replace(' ', '_')}"
        return None


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def generate(header):
    raw = open(header, encoding="utf-8").read()
    text = strip_comments(raw)
    structs = set(re.findall(r"typedef\s+struct\s+(\w+)\s*\{", text))
    opaque = set(re.findall(r"typedef\s+struct\s+(\w+)\s+\1\s*;", text))
    enums = set(re.findall(r"\}\s*(\w+)\s*;", text)) - structs
    decls = declarations(text)
    vals = Values(structs, opaque, enums)

    cases, n_pairs = [], 0
    for ret, fn, params in decls:
        ptrs = [i for i, p in enumerate(params) if p[2]]
        missing = [(t, n) for t, n, _, f in params if vals.value(fn, t, n, f) is None]
        for i in ptrs:
            n_pairs += 1
            ctype, pname = params[i][0], params[i][1]
            label = f"{fn}({pname} = NULL)"
            if missing:
                t, n = missing[0]
                cases.append(("missing", label, fn, pname,
                              f"no valid value for parameter '{t} {n}'"))
                continue
            args = ["NULL" if j == i else vals.value(fn, t, n, f)
                    for j, (t, n, _, f) in enumerate(params)]
            call = f"{fn}({', '.join(args)})"
            if (fn, pname) in NULL_ACCEPTED:
                kind = "accepted"
            elif ret == "lkv_status":
                kind = "status"
            else:
                kind = "no_crash"
            cases.append((kind, label, fn, pname, call))

    o = []
    o.append("/* Generated by tests/abi/gen_null_args.py from include/lazykv.h: do not edit.\n"
             " * Every exported function, each pointer argument NULL in turn. */")
    o.append("#define _POSIX_C_SOURCE 200809L")
    o.append('#include "lazykv.h"\n')
    o.append("#include <signal.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>")
    o.append("#include <sys/wait.h>\n#include <unistd.h>\n")
    o.append("static lkv_runtime *g_rt;\nstatic lkv_cache *g_cache, *g_engine_cache;")
    o.append("static lkv_slot_map *g_map;\nstatic int g_user;")
    o.append("static float g_layer[64 * 16];\nstatic void *g_layer_ptrs[1] = {g_layer};")
    for b in sorted(opaque):
        o.append(f"static {b} *g_out_{b};")
    for b in sorted(vals.used_structs):
        o.append(f"static {b} g_{b}[16];")
    for b, stars in sorted(vals.used_scalars):
        ident = b.replace(" ", "_")
        if stars == 1:
            o.append(f"static {b} g_buf_{ident}[64];")
        else:
            o.append(f"static const {b} *g_ptr_{ident};")
    o.append("""
static int gen_write_line(void *user, const char *line)
{
    (void)user;
    (void)line;
    return 0;
}

/* 1 when `name` is in `msg` as a whole identifier (not inside the
 * function's own name, "lkv_plan_apply" holding "plan"). */
static int names(const char *msg, const char *name)
{
    size_t n = strlen(name);
    for (const char *at = strstr(msg, name); at; at = strstr(at + 1, name)) {
        int before = at > msg && (at[-1] == '_' || (at[-1] >= 'a' && at[-1] <= 'z') ||
                                  (at[-1] >= 'A' && at[-1] <= 'Z') || (at[-1] >= '0' && at[-1] <= '9'));
        char c = at[n];
        int after = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!before && !after)
            return 1;
    }
    return 0;
}

/* A status call's verdict: 0 when it refused the NULL argument by name. */
static int refused(lkv_status st, const char *label, const char *name)
{
    const char *msg = lkv_last_error();
    if (st == LKV_OK) {
        printf("FAIL %s: returned OK\\n", label);
        return 1;
    }
    if (!names(msg, name)) {
        printf("FAIL %s: %s, message does not name %s: \\"%s\\"\\n", label, lkv_status_name(st),
               name, msg);
        return 1;
    }
    if (getenv("LKV_NULL_ARGS_VERBOSE"))
        printf("ok   %s: %s \\"%s\\"\\n", label, lkv_status_name(st), msg);
    return 0;
}

static void setup(void)
{
    lkv_cache_config cfg;
    if (lkv_runtime_open("ref", &g_rt) != LKV_OK) {
        printf("setup: lkv_runtime_open(ref): %s\\n", lkv_last_error());
        exit(1);
    }
    lkv_cache_config_init(&cfg);
    cfg.capacity = 64;
    if (lkv_cache_create(g_rt, &cfg, &g_cache) != LKV_OK) {
        printf("setup: owned cache: %s\\n", lkv_last_error());
        exit(1);
    }
    cfg.kv_owner = LKV_KV_ENGINE;
    if (lkv_cache_create(g_rt, &cfg, &g_engine_cache) != LKV_OK) {
        printf("setup: engine-owned cache: %s\\n", lkv_last_error());
        exit(1);
    }
    lkv_slot_map_config mc = {1, 1, 1, 64, 16, 8};
    if (lkv_slot_map_create(&mc, &g_map) != LKV_OK) {
        printf("setup: slot map: %s\\n", lkv_last_error());
        exit(1);
    }""")
    for b in sorted(vals.used_structs):
        if b in STRUCT_INIT:
            o.append(f"    {{\n        {b} *p = g_{b};\n        {STRUCT_INIT[b]}\n    }}")
    o.append("}\n")

    o.append("static int case_body(int index)\n{\n    switch (index) {")
    for k, (kind, label, fn, pname, call) in enumerate(cases):
        o.append(f"    case {k}:")
        if kind == "missing":
            o.append(f"        printf(\"FAIL %s: the generator has %s\\n\", {c_string(label)}, "
                     f"{c_string(call)});\n        return 1;")
        elif kind == "status":
            o.append(f"        return refused({call}, {c_string(label)}, {c_string(pname)});")
        elif kind == "accepted":
            o.append(f"        (void){call}; /* {NULL_ACCEPTED[(fn, pname)]} */\n        return 0;")
        else:
            o.append(f"        (void){call}; /* not a status: must not crash */\n        return 0;")
    o.append("    }\n    return 1;\n}\n")
    o.append("static const char *const labels[] = {")
    for _, label, *_ in cases:
        o.append(f"    {c_string(label)},")
    o.append("};\n")
    o.append(f"""/* The exit of a child that printed its own failure. */
enum {{ REPORTED = 99 }};

/* Runs one case in a child: 0 passed, 1 failed (a crash included). */
static int run_case(int index, const char *label)
{{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {{
        printf("FAIL %s: fork failed\\n", label);
        return 1;
    }}
    if (pid == 0) {{
        alarm(60);
        int failed = case_body(index);
        fflush(stdout);
        exit(failed ? REPORTED : 0);
    }}
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) {{
        printf("FAIL %s: waitpid failed\\n", label);
        return 1;
    }}
    if (WIFSIGNALED(status)) {{
        printf("FAIL %s: crashed (signal %d)\\n", label, WTERMSIG(status));
        return 1;
    }}
    if (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != REPORTED) {{
        printf("FAIL %s: died, exit %d (a sanitizer report?)\\n", label, WEXITSTATUS(status));
        return 1;
    }}
    return WEXITSTATUS(status) != 0;
}}

int main(int argc, char **argv)
{{
    int passed = 0, failed = 0, n = (int)(sizeof labels / sizeof labels[0]);
    setup();
    for (int i = 0; i < n; i++) {{
        if (argc > 1 && !strstr(labels[i], argv[1]))
            continue;
        if (run_case(i, labels[i]))
            failed++;
        else
            passed++;
    }}
    printf("null arguments: {n_pairs} (function, pointer argument) pairs from the header; "
           "%d passed, %d failed\\n", passed, failed);
    lkv_slot_map_destroy(g_map);
    lkv_cache_destroy(g_engine_cache);
    lkv_cache_destroy(g_cache);
    lkv_runtime_close(g_rt);
    return failed ? 1 : 0;
}}""")
    return "\n".join(o) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src = generate(sys.argv[1])
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(src)
    return 0


if __name__ == "__main__":
    sys.exit(main())
