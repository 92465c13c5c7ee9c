#!/usr/bin/env bash
# call A, run on commit f335cbb (this checkout with bench/probes/run_guess.patch applied: a launch's
# blocks numbered for the policy with a guess per run) against the engine before it
# (out/before_run_guess.tgz: `git archive f335cbb~1 driver_hooks | gzip`, carried to the GPU machine),
# the 24-layer GPT-2 in bf16 with fused AdamW at half its footprint, a lockstep pair per tree a round
# (bench/lockstep_ab.py).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 4 --stop-after 330 \
  --tree before=out/before_run_guess.tgz 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
