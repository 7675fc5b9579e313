#!/bin/sh
# The paged engine (examples/paged_engine.c) over every policy, GQA mode and
# granularity on one backend: each run must keep exactly what an owned cache
# on the oracle keeps. 77 (SKIP) when the backend is unavailable, unless
# LAZYKV_REQUIRE_BACKENDS names it.
bin=$1 backend=$2
runs=0
for gqa in grouped expanded; do
  for gran in head layer token; do
    for policy in full lazy streaming h2o tova snapkv nacl; do
      "$bin" --backend "$backend" --policy "$policy" --gqa "$gqa" --granularity "$gran"
      rc=$?
      if [ "$rc" = 77 ]; then
        case ",$LAZYKV_REQUIRE_BACKENDS," in
          *",$backend,"*) echo "paged_engine: $backend is required but unavailable"; exit 1 ;;
        esac
        exit 77
      fi
      [ "$rc" = 0 ] || { echo "paged_engine: FAIL $backend $policy $gqa $gran"; exit 1; }
      runs=$((runs + 1))
    done
  done
done
echo "paged_engine: $runs runs on $backend identical to the owned cache"
