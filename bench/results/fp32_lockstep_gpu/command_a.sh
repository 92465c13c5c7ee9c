#!/usr/bin/env bash
# call A: lockstep rounds of the 24-layer GPT-2 and BERT-Large in fp32 with foreach Adam at half their
# footprints (bench/lockstep_ab.py --models gpt2-fp32,bert-large-fp32, 24 steps a run), this tree's
# defaults (far_prefetches "dead_only") against far_prefetches "evict".
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R/fp32 --models gpt2-fp32,bert-large-fp32 --steps 24 --rounds 5 \
  --stop-after $(( 520 - ($(date +%s) - T0) )) --tree evict=bench/results/fp32_lockstep_gpu/evict.json 2>&1 | tee $R/ab_fp32.log
cd $OUT && tar -czf records.tgz records && rm -rf records
