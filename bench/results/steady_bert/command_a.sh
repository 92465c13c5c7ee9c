#!/usr/bin/env bash
# call A: lockstep pairs of the 24-layer BERT-Large in fp32 (foreach Adam) and bf16 (fused AdamW) at half
# their footprints on this tree's defaults, 40 steps a run of which 20 warm-up (bench/lockstep_ab.py
# --warmup 20), so that the measured steps are those after deepum starts repeating remembered plans
# (BERT-Large's from its sixteenth iteration), against the 24-step runs' 4 of warm-up.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R/bert --models bert-large-fp32,bert-large --steps 40 --warmup 20 --rounds 5 \
  --stop-after $(( 480 - ($(date +%s) - T0) )) 2>&1 | tee $R/ab_bert.log
cd $OUT && tar -czf records.tgz records && rm -rf records
