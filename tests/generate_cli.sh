#!/bin/sh
# `lazykv generate` end to end.
#
#   generate_cli.sh CASE LAZYKV SHARED_DIR WORK_DIR
#
# CASE is one of
#   bad-input      every bad flag value fails with exit 2 and one line on
#                  stderr that names it; the ones needing a model use
#                  stories260K (skipped, with a note, where it is absent),
#                  as does a short run that needs the default window rule
#   deterministic  stories260K, greedy: the same ids on every run and for 1
#                  or 2 threads, and lazy with a budget it never reaches gives
#                  the full cache's ids; lazy and h2o evicting give the same
#                  ids with --eviction background, --placement holes and
#                  --placement paged as inline compacting, and the statistics
#                  name the placement and show the pool
#   backends       stories260K, greedy, lazy at 50%, f16 and bf16 K/V: every
#                  other backend of the registry that opens (as `lazykv
#                  devices` lists them: cuda, hip, vulkan, opencl)
#                  against the cpu
#   smollm2        SmolLM2 from LAZYKV_TEST_MODEL: the chat prompt's ids are
#                  llama.cpp's, a chat reply streams with the statistics, and
#                  a truncated copy of the file fails naming it
# Exit 0 pass, 1 fail, 77 skip (the model it needs is absent).
set -u
case_name=$1
bin=$2
shared=$3
work=$4
stories=$shared/models/stories260K/stories260K.bin
fails=0
mkdir -p "$work"

fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# expect_error NAME PATTERN ARGS...: exit 2, nothing on stdout, exactly one
# line on stderr, matching PATTERN (grep -E).
expect_error() {
  name=$1
  pattern=$2
  shift 2
  "$bin" generate "$@" >"$work/out" 2>"$work/err"
  rc=$?
  lines=$(wc -l <"$work/err")
  if [ "$rc" -ne 2 ]; then
    fail "$name: exit $rc, expected 2 ($(head -c 300 "$work/err"))"
  elif [ -s "$work/out" ]; then
    fail "$name: wrote to stdout: $(head -c 200 "$work/out")"
  elif [ "$lines" -ne 1 ]; then
    fail "$name: $lines lines on stderr, expected one: $(head -c 400 "$work/err")"
  elif ! grep -Eq -- "$pattern" "$work/err"; then
    fail "$name: message does not match '$pattern': $(cat "$work/err")"
  else
    echo "ok   $name: $(cat "$work/err")"
  fi
}

# ids ARGS...: the generated ids of a greedy run on stories260K.
ids() {
  "$bin" generate --model "$stories" --ids --quiet "$@" 2>"$work/err" || {
    echo "lazykv generate $* failed: $(cat "$work/err")" >&2
    echo "ERROR"
  }
}

# compare_logits REF OTHER VOCAB TOL NAME: REF.ids / REF.f32 (--ids and
# --logits-out of one run) against OTHER's, as described under `backends`.
compare_logits() {
  tr ' ' '\n' <"$1.ids" >"$work/ref.col"
  tr ' ' '\n' <"$2.ids" >"$work/other.col"
  od -v -An -tf4 -w$(($3 * 4)) "$1.f32" >"$work/ref.txt"
  od -v -An -tf4 -w$(($3 * 4)) "$2.f32" >"$work/other.txt"
  paste -d ' ' "$work/ref.col" "$work/other.col" >"$work/pairs"
  awk -v tol="$4" -v name="$5" -v pairs="$work/pairs" -v other="$work/other.txt" '
    function abs(v) { return v < 0 ? -v : v }
    {
      getline line <other
      getline pair <pairs
      n = split($0, x, " ")
      split(line, y, " ")
      split(pair, t, " ")
      mx = 0
      for (i = 1; i <= n; i++)
        if (abs(x[i] - y[i]) > mx)
          mx = abs(x[i] - y[i])
      if (mx > worst)
        worst = mx
      if (mx > tol) {
        printf "%s: step %d: logits differ by %g, more than %g\n", name, NR - 1, mx, tol
        bad = 1
        exit
      }
      if (t[1] != t[2]) {
        margin = x[t[1] + 1] - x[t[2] + 1]
        printf "%s: steps 0..%d agree; step %d takes token %d where cpu takes %d: cpu margin %g, logit difference %g\n", name, NR - 2, NR - 1, t[2], t[1], margin, mx
        if (margin > 2 * mx) {
          printf "%s: not a near-tie\n", name
          bad = 1
        }
        parted = 1
        exit
      }
      same = NR
    }
    END {
      if (!parted && !bad)
        printf "%s: all %d tokens agree; largest logit difference %g\n", name, same, worst
      exit bad
    }' "$work/ref.txt"
}

need_stories() {
  [ -f "$stories" ] && return 0
  echo "SKIP: $stories is absent"
  exit 77
}

case "$case_name" in
bad-input)
  m=$work/absent-model.gguf
  expect_error budget_zero "--budget '0'" --model "$m" --prompt-ids 1 --budget 0
  expect_error budget_above_100_percent "--budget '150%'" --model "$m" --prompt-ids 1 --budget 150%
  expect_error threads_above_the_pool "--threads '300' is not an integer in 1\.\.256" \
    --model "$m" --prompt-ids 1 --threads 300
  expect_error param_without_a_name "--param '=3': the parameter name is empty" \
    --model "$m" --prompt-ids 1 --param =3
  printf 'hi\000there' >"$work/nul.txt"
  expect_error prompt_file_with_a_nul "'$work/nul.txt' contains a NUL byte \(at offset 2\): not a text prompt" \
    --model "$m" --prompt-file "$work/nul.txt"
  expect_error unknown_policy "--policy 'bogus'" --model "$m" --prompt-ids 1 --policy bogus
  expect_error prompt_and_chat "--prompt and --chat" --model "$m" --prompt hi --chat hi
  expect_error no_prompt "no prompt" --model "$m"
  expect_error system_without_chat "--system goes with --chat" --model "$m" --prompt hi --system s
  expect_error param_without_equals "--param 'window'" --model "$m" --prompt-ids 1 --param window
  expect_error param_unknown_to_policy "--param sinks=4: unknown parameter 'sinks' for policy lazy" \
    --model "$m" --prompt-ids 1 --param sinks=4
  expect_error budget_for_full "--budget does not apply to policy full" \
    --model "$m" --prompt-ids 1 --policy full --budget 10
  expect_error bad_dtype "--dtype 'f8'" --model "$m" --prompt-ids 1 --dtype f8
  expect_error bad_top_p "--top-p '0'" --model "$m" --prompt-ids 1 --top-p 0 --temperature 1
  expect_error bad_temperature "--temperature '-1'" --model "$m" --prompt-ids 1 --temperature -1
  expect_error unknown_option "unknown option '--bogus'" --model "$m" --prompt-ids 1 --bogus
  expect_error missing_value "--max-tokens needs a value" --model "$m" --prompt-ids 1 --max-tokens
  expect_error missing_model_file "model file '$m'.*scripts/fetch-model.sh" --model "$m" --prompt-ids 1
  export LAZYKV_MODEL_DIR="$work"
  expect_error model_dir_default "model file '$work/SmolLM2-135M-Instruct.Q4_1.gguf'" --prompt-ids 1
  unset LAZYKV_MODEL_DIR
  if [ -f "$stories" ]; then
    head -c 500000 "$stories" >"$work/truncated.bin"
    expect_error truncated_model "model '$work/truncated.bin'" --model "$work/truncated.bin" --prompt-ids 1
    expect_error token_id_out_of_range "token id 512 .*out of range 0\.\.511" \
      --model "$stories" --prompt-ids 1,512
    expect_error prompt_ids_not_a_list "--prompt-ids '1,x'" --model "$stories" --prompt-ids 1,x
    expect_error text_prompt_without_tokenizer "no tokenizer.*--prompt-ids" --model "$stories" --prompt hi
    expect_error beyond_context "exceeds the context .* \(512 tokens\)" \
      --model "$stories" --prompt-ids 1,2 --max-tokens 511
    expect_error budget_below_window "budget 10 is below lazy's window 16" \
      --model "$stories" --prompt-ids 1 --budget 10 --window 16
    expect_error share_below_window "budget 3 \(50% of 5 tokens\) is below lazy's window 4" \
      --model "$stories" --prompt-ids 1 --max-tokens 4 --window 4
    # without --window a short run gets W = min(101, B / 2): 12.5% of 17 is 3 slots, W 1
    "$bin" generate --model "$stories" --prompt-ids 1 --max-tokens 16 --budget 12.5% --ids \
      >"$work/out" 2>"$work/err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
      fail "short_run_default_window: exit $rc: $(cat "$work/err")"
    elif ! grep -q "policy     lazy: budget 3, window 1 (default)," "$work/err"; then
      fail "short_run_default_window: no 'budget 3, window 1 (default)' in: $(cat "$work/err")"
    else
      echo "ok   short_run_default_window: $(grep '^policy' "$work/err")"
    fi
    expect_error logits_out_unwritable "--logits-out '$work/no/such/dir/l.f32'" \
      --model "$stories" --prompt-ids 1 --max-tokens 2 --policy full --logits-out "$work/no/such/dir/l.f32"
  else
    echo "note: $stories is absent: the cases that need a model file were skipped"
  fi
  ;;
deterministic)
  need_stories
  base="--prompt-ids 1,403,407 --max-tokens 120 --backend cpu"
  a=$(ids $base --policy full --threads 1)
  b=$(ids $base --policy full --threads 1)
  c=$(ids $base --policy full --threads 2)
  lazy=$(ids $base --policy lazy --budget 100% --window 16 --threads 2)
  echo "full cache: $a"
  n=$(echo "$a" | wc -w)
  [ "$n" -eq 120 ] || fail "full cache gave $n ids, expected 120"
  [ "$a" = "$b" ] || fail "two runs differ: '$b'"
  [ "$a" = "$c" ] || fail "2 threads differ from 1: '$c'"
  [ "$a" = "$lazy" ] || fail "lazy without eviction (budget 100%) differs from full: '$lazy'"
  for p in lazy h2o; do
    evict="--policy $p --budget 30%"
    [ "$p" = lazy ] && evict="$evict --window 8"
    inl=$(ids $base $evict --eviction inline)
    bg=$(ids $base $evict --eviction background)
    holes=$(ids $base $evict --placement holes)
    paged=$(ids $base $evict --placement paged --block-size 4)
    case "$inl" in ""|*ERROR*) fail "$p: the inline run failed: '$inl'" ;; esac
    [ "$inl" = "$bg" ] || fail "$p: background eviction gave other ids: '$bg' vs '$inl'"
    [ "$inl" = "$holes" ] || fail "$p: hole filling gave other ids: '$holes' vs '$inl'"
    [ "$inl" = "$paged" ] || fail "$p: the paged pool gave other ids: '$paged' vs '$inl'"
    [ "$inl" != "$a" ] || fail "$p at 30% gave the full cache's ids: nothing was evicted"
  done
  "$bin" generate --model "$stories" --ids $base --policy lazy --budget 30% --window 8 \
    --placement holes >/dev/null 2>"$work/err"
  grep -q "^policy .*, placement holes$" "$work/err" ||
    fail "the statistics do not name the placement: $(grep '^policy' "$work/err")"
  "$bin" generate --model "$stories" --ids $base --policy lazy --budget 30% --window 8 \
    --placement paged --block-size 4 >/dev/null 2>"$work/err"
  grep -q "^KV blocks  paged: peak [0-9]* blocks of 4 slots" "$work/err" ||
    fail "the statistics do not show the pool: $(grep '^KV' "$work/err")"
  ;;
backends)
  need_stories
  # Backends sum attention in other orders (and PoCL / lavapipe in their own
  # arithmetic), so logits differ in the last bits and greedy decoding may
  # part where the cpu's two best tokens are closer than that. Until the
  # first divergence the logits must agree within $tol, and a divergence
  # must be such a near-tie: the cpu's margin between the two backends'
  # choices at most twice the largest logit difference of that step.
  # Stored K/V make it larger: attention that differs in the last bits
  # makes the next layers' K/V differ too, and that can flip a rounding to
  # storage by one step, which for bf16 is 8 times f16's. Measured on
  # lavapipe: f32 3e-5, f16 0.004, bf16 0.03; the tolerances keep that ratio.
  # Both 16-bit K/V types: each backend's bf16 kernels against the cpu's.
  args="--prompt-ids 1,403,407 --max-tokens 200 --policy lazy --budget 50% --window 16"
  for dtype in f16 bf16; do
    ids $args --dtype $dtype --backend cpu --logits-out "$work/cpu-$dtype.f32" >"$work/cpu-$dtype.ids"
    echo "cpu $dtype:    $(cat "$work/cpu-$dtype.ids")"
  done
  # guards the bf16 runs: a --dtype that was not applied would compare f16
  cmp -s "$work/cpu-f16.f32" "$work/cpu-bf16.f32" && fail "bf16 logits equal f16's: --dtype ignored"
  required=${LAZYKV_REQUIRE_BACKENDS:-}
  compared=0
  backends=$("$bin" devices 2>/dev/null |
             awk '$3 == "PASS" || $3 == "FAIL" { if ($1 != "cpu" && !seen[$1]++) print $1 }')
  [ -n "$backends" ] || fail "lazykv devices listed no backend but cpu"
  for backend in $backends; do
    if ! "$bin" generate --model "$stories" --prompt-ids 1 --max-tokens 1 --policy full --quiet --ids \
         --backend "$backend" >/dev/null 2>"$work/err"; then
      case ",$required," in
      *",$backend,"*) fail "$backend is required but does not open: $(cat "$work/err")" ;;
      *) echo "skip $backend: $(cat "$work/err")" ;;
      esac
      continue
    fi
    for dtype in f16 bf16; do
      run="$work/$backend-$dtype"
      ids $args --dtype $dtype --backend "$backend" --logits-out "$run.f32" >"$run.ids"
      echo "$backend $dtype: $(cat "$run.ids")"
      case $dtype in bf16) tol=0.16 ;; *) tol=0.02 ;; esac
      compare_logits "$work/cpu-$dtype" "$run" 512 "$tol" "$backend $dtype" ||
        fail "$backend $dtype against cpu"
    done
    compared=$((compared + 1))
  done
  if [ "$compared" -eq 0 ] && [ "$fails" -eq 0 ]; then
    echo "SKIP: no GPU backend opens here"
    exit 77
  fi
  ;;
smollm2)
  model=${LAZYKV_TEST_MODEL:-}
  if [ -z "$model" ] || [ ! -f "$model" ]; then
    echo "SKIP: LAZYKV_TEST_MODEL is not set to SmolLM2-135M-Instruct.Q4_1.gguf"
    exit 77
  fi
  # llama.cpp's ids for this chat turn (llama-cpp-python 0.3.36, the GGUF's
  # own template, special tokens parsed)
  want="1 9690 198 2683 359 253 5356 5646 11173 3365 3511 308 34519 28 7018 411 407 19712 8182 2 198 1 4093 198 1780 314 216 33 34 26 39 47 6545 1833 411 1833 30 2 198 1 520 9531 198"
  got=$("$bin" generate --model "$model" --chat "What is 12*7? Think step by step." --echo --ids --policy full \
        --max-tokens 0 --quiet 2>"$work/err" | head -n 1)
  [ "$got" = "$want" ] || fail "chat prompt ids differ from llama.cpp's: got '$got' ($(cat "$work/err"))"
  "$bin" generate --model "$model" --chat "What is 12*7? Think step by step." --policy lazy \
    --budget 50% --window 16 --max-tokens 48 --backend cpu >"$work/out" 2>"$work/err"
  rc=$?
  cat "$work/out" "$work/err"
  [ "$rc" -eq 0 ] || fail "chat run exited $rc"
  grep -Eq "KV memory +lazy: peak KV [0-9.]+ [KM]iB vs [0-9.]+ [KM]iB for the full cache of the same [0-9]+ tokens: [0-9.]+% memory saved" "$work/err" ||
    fail "no memory line in the statistics"
  [ -s "$work/out" ] || fail "no text generated"
  head -c 3000000 "$model" >"$work/truncated.gguf"
  expect_error truncated_gguf "model '$work/truncated.gguf'" --model "$work/truncated.gguf" \
    --prompt hi
  ;;
*)
  echo "unknown case '$case_name'"
  exit 2
  ;;
esac
[ "$fails" -eq 0 ] || exit 1
echo "PASS: $case_name"
