#!/usr/bin/env bash
# call A: lockstep rounds of the 24-layer GPT-2 and BERT-Large in bf16 with fused AdamW and of the GPT-2
# in fp32 with foreach Adam, at half their footprints, on this tree's defaults (host_map_keep_uses 3
# counted in passes), 24 steps a run, as many rounds as end within the call's time.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R/defaults --models gpt2,bert-large,gpt2-fp32 --steps 24 --rounds 5 \
  --stop-after $(( 395 - ($(date +%s) - T0) )) 2>&1 | tee $R/ab_defaults.log
cd $OUT && tar -czf records.tgz records && rm -rf records
