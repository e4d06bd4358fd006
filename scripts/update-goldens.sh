#!/usr/bin/env bash
# Regenerates tests/golden/* from the specs with the freshly built cava.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
mkdir -p tests/golden/demo
"$build/bin/cava" -Ispecs/demo/lib --name-as specs/demo/demo.spec.c -o tests/golden/demo specs/demo/demo.spec.c
git status --short tests/golden
