#!/usr/bin/env bash
# call B: the GPU safety tests on this tree, whose engine makes fewer driver calls (call A; side
# streams, CUDA graphs, move threads, injected failures, record_stream, exits, device-side asserts,
# the profiler, module unloads, re-enabling, dropped pools), all but the two torch.compile tests,
# which call A runs.
source bench/device_setup.sh
PYTHONPATH=. timeout $(( 575 - ($(date +%s) - T0) )) python3 -m pytest -q -p no:cacheprovider -rs --durations=5 \
  tests/test_safety_gpu.py -k "not compiled" > $R/test_safety_gpu.log 2>&1
echo "tests/test_safety_gpu.py -k 'not compiled' rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/test_safety_gpu.log)"
