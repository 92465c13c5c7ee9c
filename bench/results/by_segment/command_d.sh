#!/usr/bin/env bash
# call D: tests/test_access_patterns_gpu.py on this tree, then lockstep pairs of BERT-Large and GPT-2
# (bf16, fused AdamW, half their footprints) for the time left.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
PYTHONPATH=. timeout 110 python3 -m pytest -q -p no:cacheprovider -rs tests/test_access_patterns_gpu.py > $R/access_patterns.log 2>&1
echo "access patterns rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/access_patterns.log)"
timeout 170 python3 bench/lockstep_ab.py --out $R --models bert-large,gpt2 --rounds 3 --stop-after 100 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
