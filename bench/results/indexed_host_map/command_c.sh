#!/usr/bin/env bash
# call C: the GPU test of embedding tables; the sweep on this tree, DLRM and ResNet-152 at 0.75 and 0.5.
source bench/results/indexed_host_map/sweep_common.sh
PYTHONPATH=. timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py -k "embedding_tables" > $R/gpu_tests.log 2>&1; tail -3 $R/gpu_tests.log
sweep dlrm 0.75,0.5 ""
sweep resnet152 0.75,0.5 ""
summary
rm -rf $R/sweep/logs; tar -czf $OUT/c.tgz -C $OUT records; rm -rf $R
