#!/usr/bin/env bash
# call B: how deepum's step follows the launch hook's time: the committed engine against it with every
# launch the hook sees made 4 and 8 µs longer by spinning (bench/probes/hook_spin.patch, then with
# bench/probes/hook_spin_twice.patch over it), the 24-layer GPT-2 in bf16 with fused AdamW at half its
# footprint, a lockstep pair per tree a round (bench/lockstep_ab.py).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 3 --stop-after 330 \
  --tree spin4=bench/probes/hook_spin.patch \
  --tree spin8=bench/probes/hook_spin.patch+bench/probes/hook_spin_twice.patch 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
