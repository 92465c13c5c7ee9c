#!/usr/bin/env bash
# call A (for the GPU): lockstep rounds of the 24-layer GPT-2 and BERT-Large in bf16 (fused AdamW, half
# their footprints; bench/lockstep_ab.py, 24 steps a run): this tree against it with layout.patch (each
# block's state kept together, a repeated launch's place in one entry).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R/ab --models gpt2,bert-large --steps 24 --rounds 5 \
  --stop-after $(( 520 - ($(date +%s) - T0) )) --tree layout=bench/results/policy_layout/layout.patch 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
