#!/usr/bin/env bash
# Regenerates tests/golden/* from the specs with the freshly built cava: every
# output of cava -o (guest library, worker plugin, kernel module, command table).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
mkdir -p tests/golden/demo tests/golden/opencl
"$build/bin/cava" -Ispecs/demo/lib --name-as specs/demo/demo.spec.c -o tests/golden/demo specs/demo/demo.spec.c
"$build/bin/cava" -Ispecs/opencl --name-as specs/opencl/opencl.spec.c -o tests/golden/opencl specs/opencl/opencl.spec.c
if [[ -f /usr/local/cuda/include/cuda_runtime_api.h ]]; then
  mkdir -p tests/golden/cudart
  "$build/bin/cava" -Ispecs/cudart -Ispecs/cudart/fatbin -I/usr/local/cuda/include \
    --name-as specs/cudart/cudart.spec.c -o tests/golden/cudart specs/cudart/cudart.spec.c
  mkdir -p tests/golden/cuda
  "$build/bin/cava" -Ispecs/cuda -Ispecs/cudart/fatbin -I/usr/local/cuda/include \
    --name-as specs/cuda/cuda.spec.c -o tests/golden/cuda specs/cuda/cuda.spec.c
fi
git status --short tests/golden
