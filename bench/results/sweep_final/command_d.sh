#!/usr/bin/env bash
# call D: the same for DLRM, ResNet-152 and the MoE (top-2 over 8 experts) at the sweep's sizes.
source bench/results/indexed_host_map/sweep_common.sh
sweep dlrm 0.75,0.5
sweep resnet152 0.75,0.5
sweep moe 0.75,0.5 "--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2"
summary
rm -rf $R/sweep/logs $R/build.log $R/prebuild.log; tar -czf $OUT/d.tgz -C $OUT records; rm -rf $R
