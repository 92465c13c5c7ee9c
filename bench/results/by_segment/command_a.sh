#!/usr/bin/env bash
# call A: the committed engine against bench/probes/allocations_by_segment.patch and
# bench/probes/chained_wake.patch applied together over a copy, on the 24-layer GPT-2 in bf16 with
# fused AdamW at half its footprint, a lockstep pair per tree a round (bench/lockstep_ab.py).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R --tree both=bench/probes/allocations_by_segment.patch+bench/probes/chained_wake.patch \
  --models gpt2 --rounds 6 --stop-after 410 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
