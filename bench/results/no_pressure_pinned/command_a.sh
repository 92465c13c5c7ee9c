#!/usr/bin/env bash
# call A: no pressure with the processes pinned to eight CPUs (taskset; the runs inherit it), DLRM and
# BERT-Large 24L, none and deepum in alternation, four runs each, 20 measured steps after 4 of warm-up:
# do runs of one mode still differ by 10-40%?
source bench/device_setup.sh
echo "CPUs $(nproc)"
PYTHONPATH=. timeout $(( 590 - ($(date +%s) - T0) )) taskset -c 2-9 python3 bench/no_pressure.py --out $R/no_pressure \
  --workloads dlrm,bert-large --steps 24 --warmup 4 --repeats 4 --timeout 100 > $R/no_pressure.log 2>&1
grep -E "deepum / none|pair|verdict" $R/no_pressure.log | head -20; echo "total $(( $(date +%s) - T0 )) s"
python3 - <<'PY'
import json, glob, os, statistics as st
R = os.environ["OUT"] + "/records/no_pressure"
for f in sorted(glob.glob(R + "/*_full*.json")):
    d = json.load(open(f)); s = d["step_s"][d["warmup"]:]
    print(os.path.basename(f), "median %.4f min %.4f max %.4f" % (st.median(s), min(s), max(s)), d["parameter_sha256"][:12])
PY
rm -rf $R/no_pressure/logs
