#!/usr/bin/env bash
# call A (for the GPU): lockstep rounds of the 24-layer GPT-2 and BERT-Large (bf16, fused AdamW, half
# their footprints; bench/lockstep_ab.py, 24 steps a run): this tree's defaults against the engine with
# bench/probes/far_prefetches_take_no_place.patch (a block next-use foresight needs only beyond the
# prediction window takes no other block's place).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
P=bench/probes/far_prefetches_take_no_place.patch
python3 bench/lockstep_ab.py --out $R/gpt2 --models gpt2 --steps 24 --rounds 5 --stop-after 300 \
  --tree far=$P 2>&1 | tee $R/ab_gpt2.log
python3 bench/lockstep_ab.py --out $R/bert --models bert-large --steps 24 --rounds 4 --stop-after $(( 520 - ($(date +%s) - T0) )) \
  --tree far=$P 2>&1 | tee $R/ab_bert.log
cd $OUT && tar -czf records.tgz records && rm -rf records
