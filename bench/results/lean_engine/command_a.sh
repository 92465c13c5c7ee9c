#!/usr/bin/env bash
# call A: step 8's timeline of the committed engine (24-layer GPT-2, bf16 with fused AdamW, half its
# footprint), then the committed engine against it without CUPTI's kernel and unified-memory records
# (bench/probes/no_kernel_records.patch + bench/probes/no_unified_memory_counters.patch) and with
# invalidation off (a DeepUMConfig), a lockstep pair per tree a round (bench/lockstep_ab.py).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
mkdir -p $R/timeline
python3 bench/train.py --workload gpt2 --mode deepum --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 \
  --precision bf16 --capacity 6138363904 --steps 10 --warmup 4 --timeline-step 8 \
  -o $R/timeline/gpt2_deepum_t8.json > $R/timeline/gpt2_deepum_t8.log 2>&1
echo "timeline rc=$? at $(( $(date +%s) - T0 )) s"
echo '{"invalidate": false}' > $R/no_invalidate.json
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 3 --stop-after 420 \
  --tree no_records=bench/probes/no_kernel_records.patch+bench/probes/no_unified_memory_counters.patch \
  --tree no_invalidate=$R/no_invalidate.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
