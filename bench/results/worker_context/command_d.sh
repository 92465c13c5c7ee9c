#!/usr/bin/env bash
# call D: how soon the mover's moves complete on the GPU when issued from another context, and a green
# context: the launch contention probe with kernels that spin 20 us, and with empty kernels.
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
mkdir -p $OUT/call_d
for us in 20 0; do
  python3 bench/launch_contention.py --mib 1024 --launches 10000 --repeats 2 --kernel-us $us \
    --modes calls,context,green -o $OUT/call_d/launch_contention_spin$us.json 2>&1 | tail -6 | \
    python3 -c "import sys, json
for l in sys.stdin:
    try: r = json.loads(l)
    except ValueError: print(l.strip()); continue
    print({k: r[k] for k in ('migration', 'kernel_ns', 'launch_thread_us', 'launch_call_us_mean', 'launch_call_us_p99', 'migration_calls', 'migration_call_us_mean', 'group_sync_us_mean')})"
done
