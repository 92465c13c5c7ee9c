#!/usr/bin/env bash
# call B: do kernel launches slow down while managed memory is mapped from the host, with no migration
# under way? The launch contention probe over a 4 GiB buffer: nothing mapped, mapped in one advice per
# 2 MiB block (2,048 ranges), mapped in one advice; empty kernels, alternated twice.
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
mkdir -p $OUT/call_b
python3 bench/launch_contention.py --mib 4096 --launches 5000 --repeats 2 --modes none,mapped_blocks,mapped_whole \
  -o $OUT/call_b/launch_contention_mapped.json 2>&1 | tail -6 | python3 -c "import sys, json
for l in sys.stdin:
    try: r = json.loads(l)
    except ValueError: print(l.strip()); continue
    print({k: r[k] for k in ('migration', 'launch_thread_us', 'launch_call_us_mean', 'launch_call_us_median', 'launch_call_us_p99', 'launch_call_us_max')})"
