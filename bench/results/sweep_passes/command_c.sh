#!/usr/bin/env bash
# call C: lockstep rounds of the 24-layer GPT-2 in bf16 with fused AdamW at half its footprint on this
# release's defaults, 24 steps a run, as many rounds as end within the call's time.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R/gpt2 --models gpt2 --steps 24 --rounds 10 \
  --stop-after $(( 440 - ($(date +%s) - T0) )) 2>&1 | tee $R/ab_gpt2.log
cd $OUT && tar -czf records.tgz records && rm -rf records
