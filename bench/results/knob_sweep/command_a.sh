#!/usr/bin/env bash
# call A (not yet run): lockstep rounds of BERT-Large at half its footprint in fp32 (foreach Adam) and in
# bf16 (fused AdamW), 24 steps a run: this tree's defaults (lookahead 32) against lookahead 16
# (lookahead16.json, the replays' best for bf16 BERT-Large) and 64 (lookahead64.json, their best for
# the fp32 BERT-Large), as many rounds as end within the call's time.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R/lookahead --models bert-large-fp32,bert-large --steps 24 --rounds 5 \
  --tree look16=bench/results/knob_sweep/lookahead16.json --tree look64=bench/results/knob_sweep/lookahead64.json \
  --stop-after $(( 540 - ($(date +%s) - T0) )) 2>&1 | tee $R/ab_lookahead.log
cd $OUT && tar -czf records.tgz records && rm -rf records
