#!/usr/bin/env bash
# call B: the rest of the GPU tests on this tree (the twenty exits of tests/test_safety_gpu.py beside
# tests/test_launcher_gpu.py), then lockstep pairs (bench/lockstep_ab.py, 24 steps a run) of BERT-Large
# and GPT-2 (bf16, fused AdamW, half their footprints): the defaults against prefetch_batch 8.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
run_tests 240 tests/test_safety_gpu.py -k twenty_times &
run_tests 120 tests/test_launcher_gpu.py &
wait
python3 bench/lockstep_ab.py --out $R --models bert-large,gpt2 --steps 24 --rounds 3 --stop-after 230 \
  --tree batch8=bench/results/window_reach/batch8.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
