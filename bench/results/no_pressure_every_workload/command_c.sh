#!/usr/bin/env bash
# call C: what DLRM's asleep session on device memory still costs, by parts. With experiment.patch
# applied (not part of deepum), environment switches take away a part of the session: CUPTI's
# unified-memory counters (NO_UM_COUNTERS), the caching allocator's trace hook (NO_TRACKER), the
# CUPTI subscription (NO_SUBSCRIBE), the iteration mark after each optimizer step (NO_MARK). Each
# variant: bench/no_pressure.py in lockstep on one CPU, five pairs, 80 measured steps after 4 of warm-up.
git apply bench/results/no_pressure_every_workload/experiment.patch || exit 1
source bench/device_setup.sh
variant() {  # name, switches...
  N=$1; shift
  env "$@" PYTHONPATH=. timeout $(( 590 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/$N --cpus 3 \
    --lockstep --workloads dlrm --steps 84 --warmup 4 --repeats 5 --timeout 100 > $R/$N.log 2>&1
  echo "$N: $(grep -hE "deepum / none|failed|timeout" $R/$N.log | tr '\n' ' ') at $(( $(date +%s) - T0 )) s"
  rm -rf $R/$N/logs
}
variant all_parts_off DEEPUM_X_NO_UM_COUNTERS=1 DEEPUM_X_NO_TRACKER=1 DEEPUM_X_NO_SUBSCRIBE=1 DEEPUM_X_NO_MARK=1
variant no_um_counters DEEPUM_X_NO_UM_COUNTERS=1
variant no_tracker_subscription_mark DEEPUM_X_NO_TRACKER=1 DEEPUM_X_NO_SUBSCRIBE=1 DEEPUM_X_NO_MARK=1
tar -czf $OUT/c.tgz -C $OUT records; rm -rf $R
