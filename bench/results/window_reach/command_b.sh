#!/usr/bin/env bash
# call B: as call A, with the hook's hand-over split (stats() hook_submit_command_ns, _mark_ns,
# _hand_ns, hand_overs, handed_commands): the committed defaults against recall 2 with lookahead 256.
source bench/device_setup.sh
D=bench/results/window_reach
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 3 --stop-after 330 \
  --tree recall2_lookahead256=$D/recall2_lookahead256.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
