#!/usr/bin/env bash
# call C: the two torch.compile safety tests and the launcher's (a warm start across processes) on
# this tree, then BERT-Large against the engine before (command_a.sh, four pairs each).
source bench/device_setup.sh
PYTHONPATH=. timeout 200 python3 -m pytest -q -p no:cacheprovider -rs --durations=3 tests/test_safety_gpu.py -k compiled \
  > $R/test_safety_gpu_compiled.log 2>&1
echo "tests/test_safety_gpu.py -k compiled rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/test_safety_gpu_compiled.log)"
PYTHONPATH=. timeout 150 python3 -m pytest -q -p no:cacheprovider -rs --durations=3 tests/test_launcher_gpu.py \
  > $R/test_launcher_gpu.log 2>&1
echo "tests/test_launcher_gpu.py rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/test_launcher_gpu.log)"
tar -czf $OUT/tests.tgz -C $OUT records
bash bench/results/next_use_lines/command_a.sh bert-large 4
