# Stage timing for scripts/test.sh and .ci/run (sourced, not run).
#   lkv_stage NAME CMD...   runs CMD, records NAME, its seconds and its exit
#                           status in $LKV_STAGE_FILE, returns CMD's status
#   lkv_stage_table         prints the stages so far as a table, with the total
#   lkv_slowest_tests N LOG...  the N slowest tests of ctest logs (their
#                           "Test #k: name .... Passed 12.34 sec" lines)
# A caller that sets LKV_STAGE_FILE shares it with the scripts it runs, so
# .ci/run's table holds test.sh's stages too.
if [ -z "${LKV_STAGE_FILE:-}" ]; then
  LKV_STAGE_FILE=$(mktemp "${TMPDIR:-/tmp}/lkv-stages.XXXXXX")
  export LKV_STAGE_FILE
fi

lkv_stage() {
  local name=$1 start rc=0
  shift
  start=$(date +%s)
  "$@" || rc=$?
  printf '%s\t%s\t%s\n' "$name" "$(($(date +%s) - start))" "$rc" >>"$LKV_STAGE_FILE"
  return "$rc"
}

lkv_stage_table() {
  [ -s "$LKV_STAGE_FILE" ] || return 0
  awk -F '\t' '
    { name[NR] = $1; secs[NR] = $2; rc[NR] = $3; total += $2
      if (length($1) > w) w = length($1) }
    END {
      if (w < 5) w = 5
      printf "\n== stage timing\n%-*s  %9s  %s\n", w, "stage", "time", "result"
      for (i = 1; i <= NR; i++)
        printf "%-*s  %4dm %02ds  %s\n", w, name[i], secs[i] / 60, secs[i] % 60,
               rc[i] == 0 ? "ok" : "FAILED (exit " rc[i] ")"
      printf "%-*s  %4dm %02ds\n", w, "total", total / 60, total % 60
    }' "$LKV_STAGE_FILE"
}

lkv_slowest_tests() {
  local n=$1
  shift
  echo
  echo "== the $n slowest tests"
  for log in "$@"; do
    [ -f "$log" ] || continue
    sed -nE "s|^ *[0-9]+/[0-9]+ Test +#[0-9]+: ([^ ]+) \.+[^0-9]*([0-9.]+) sec$|\2\t\1\t$(basename "$(dirname "$log")")|p" "$log"
  done | sort -t "$(printf '\t')" -k1,1 -rn | head -n "$n" |
    awk -F '\t' '{ printf "%8.1f s  %-45s %s\n", $1, $2, $3 }'
}
