#!/usr/bin/env bash
# call D: the runtime's GPU tests on this tree (the hand-over's new counters, prefetch_batch), then
# lockstep pairs of BERT-Large (bf16, fused AdamW, half its footprint): the defaults against recall 2
# with lookahead 256 and batches of 32, 24 steps a run (bench/lockstep_ab.py).
source bench/device_setup.sh
D=bench/results/window_reach
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
run_tests 330 tests/test_runtime_gpu.py
python3 bench/lockstep_ab.py --out $R --models bert-large --steps 24 --rounds 2 --stop-after 100 \
  --tree recall2_lookahead256_batch32=$D/recall2_lookahead256_batch32.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
