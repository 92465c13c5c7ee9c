#!/usr/bin/env bash
# Where the hook's hand-over of moves spends its time: the bf16 24-layer GPT-2 at half its footprint
# (fused AdamW, 16 steps of which 4 warm-up) under py-spy (native frames, 500 samples a second; the
# py-spy wheel carried in .whl/), with the hand-over split of bench/probes/submit_split.patch applied.
git apply bench/probes/submit_split.patch || exit 1
source bench/device_setup.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/py_spy-*.whl > $R/pip.log 2>&1 \
  || { tail -5 $R/pip.log; exit 1; }
export PATH=/tmp/site/bin:$PATH; rm -f $R/pip.log
GPT2="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16 --capacity 6138363904"
PYTHONPATH=. timeout 240 py-spy record --native --rate 500 --format raw -o $R/profile_gpt2.txt -- \
  python3 bench/train.py $GPT2 --mode deepum --steps 16 --warmup 4 -o $R/gpt2_profiled.json > $R/profile_gpt2.log 2>&1 \
  || tail -5 $R/profile_gpt2.log
echo "profiled at $(( $(date +%s) - T0 )) s"
gzip -q $R/profile_gpt2.txt
python3 bench/profile_shares.py $R/profile_gpt2.txt.gz > $R/profile_gpt2_shares.txt 2>&1
head -30 $R/profile_gpt2_shares.txt
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
