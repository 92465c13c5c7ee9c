#!/usr/bin/env bash
# call A: the 24-layer GPT-2 in bf16 with fused AdamW at half its footprint, in lockstep against the
# in-memory step (bench/no_pressure.py --lockstep --tolerance 1.5, 14 steps of which 4 warm-up), under
# three deepum settings that take turns two pairs at a time: the defaults, eight eviction and eight
# prefetch threads (the setting that shortened the fp32 GPT-2's step), and a prediction window of 16
# launches (a cheaper decision). $1: pairs per setting (default 4).
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
SIZE="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"; CAP=6138363904
python3 -c "from deepum.config import DeepUMConfig as C; C(eviction_threads=8, prefetch_threads=8).save('$R/threads8.json'); C(lookahead=16).save('$R/lookahead16.json')"
check() {  # $1 folder under $R, $2 pairs in all, rest: no_pressure.py flags
  local out=$R/$1 pairs=$2; shift 2
  PYTHONPATH=. python3 bench/no_pressure.py --out $out --workloads gpt2 --size "gpt2=$SIZE" --capacity gpt2=$CAP \
    --lockstep --repeats $pairs --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 --resume "$@" 2>&1 | tail -1
}
for pairs in $(seq 2 2 ${1:-4}); do
  [ $(( $(date +%s) - T0 )) -gt 420 ] && { echo "stopped before $pairs pairs: time"; break; }
  check defaults $pairs
  check threads8 $pairs --deepum-config $R/threads8.json
  check lookahead16 $pairs --deepum-config $R/lookahead16.json
  tar -czf $OUT/records.tgz -C $OUT records
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
