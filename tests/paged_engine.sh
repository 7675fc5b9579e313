#!/bin/sh
# The paged engine (examples/paged_engine.c) over every policy, GQA mode and
# granularity on one backend, the plans applied by compaction and as holes
# (lkv_slot_map), the decode probabilities handed as they are and recomputed
# from q, K and lse (--qk), and on ref and cpu handed as device arrays with
# the plans applied on the device (--device), q, K and lse too (--device --qk): each run must keep exactly what an owned cache on
# the oracle keeps and compute the same attention. 77 (SKIP) when the backend is unavailable, unless
# LAZYKV_REQUIRE_BACKENDS names it.
bin=$1 backend=$2
runs=0
for mode in compact holes compact-qk holes-qk; do
 case $mode in
   compact) flags= ;;
   holes) flags=--holes ;;
   compact-qk) flags=--qk ;;
   holes-qk) flags="--holes --qk" ;;
 esac
 for gqa in grouped expanded; do
  for gran in head layer token; do
    for policy in full lazy streaming h2o tova snapkv nacl; do
      # shellcheck disable=SC2086 # flags is a list of options
      "$bin" --backend "$backend" --policy "$policy" --gqa "$gqa" --granularity "$gran" $flags
      rc=$?
      if [ "$rc" = 77 ]; then
        case ",$LAZYKV_REQUIRE_BACKENDS," in
          *",$backend,"*) echo "paged_engine: $backend is required but unavailable"; exit 1 ;;
        esac
        exit 77
      fi
      [ "$rc" = 0 ] || { echo "paged_engine: FAIL $backend $policy $gqa $gran $mode"; exit 1; }
      runs=$((runs + 1))
    done
  done
 done
done
# Background eviction on the engine-owned cache, both ways of applying.
for policy in lazy h2o snapkv nacl; do
  for apply in "" --holes; do
    "$bin" --backend "$backend" --policy "$policy" --background $apply ||
      { echo "paged_engine: FAIL $backend $policy background $apply"; exit 1; }
    runs=$((runs + 1))
  done
done
# Device probabilities and device plans, where host memory is the device's.
case $backend in
  ref|cpu)
    for gqa in grouped expanded; do
      for policy in full lazy streaming h2o tova snapkv nacl; do
        for apply in "" --holes; do
          # shellcheck disable=SC2086 # apply is an option or nothing
          "$bin" --backend "$backend" --policy "$policy" --gqa "$gqa" --device $apply ||
            { echo "paged_engine: FAIL $backend $policy $gqa device $apply"; exit 1; }
          runs=$((runs + 1))
        done
        # q, K and lse as device arrays, K compacted or through the slot map
        for apply in "" --holes; do
          # shellcheck disable=SC2086 # apply is an option or nothing
          "$bin" --backend "$backend" --policy "$policy" --gqa "$gqa" --device --qk $apply ||
            { echo "paged_engine: FAIL $backend $policy $gqa device qk $apply"; exit 1; }
          runs=$((runs + 1))
        done
      done
    done ;;
esac
echo "paged_engine: $runs runs on $backend identical to the owned cache"
