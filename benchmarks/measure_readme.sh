#!/usr/bin/env bash
# Regenerates the figures of docs/measurements.md ("Time to first gradient", "Studies"), in one quiet sitting (about 35 minutes
# on a 2-core VM). Run from the repository root after `make install`; outputs go to runs/.
set -euo pipefail
T="${TTFG:-.venv/bin/ttfg}"
mkdir -p runs
$T check --model all --variant all | tee runs/check.txt
$T run --model resnet15 --backend all --repeat 5 --out runs/resnet15.json | tee runs/resnet15.txt
$T run --model convnext_tiny --backend all --repeat 3 --out runs/convnext_tiny.json | tee runs/convnext_tiny.txt
$T run --model resnet15 --backend jax.jit --backend torch.eager --backend autograd --repeat 1 \
   --allocations --alloc-repeat 3 --cache both --out runs/allocations.json | tee runs/allocations.txt
.venv/bin/python benchmarks/probe_overhead.py --pairs 12 | tee runs/overhead.txt
$T study chain --repeat 5 --out runs/study-chain.json | tee runs/study-chain.txt
$T study params --repeat 5 --out runs/study-params.json | tee runs/study-params.txt
$T study depth --repeat 3 --out runs/study-depth.json | tee runs/study-depth.txt
$T report --runs runs/*.json --out reports/index.html
