#!/usr/bin/env bash
# scripts/gpu-check.sh must fail where no GPU is visible, saying so, instead
# of comparing "no device" errors and passing. On a machine with a GPU this
# test is skipped (ctest's skip code): there the script itself is the check.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU [0-9]'; then
  echo "SKIPPED: a GPU is visible here; run scripts/gpu-check.sh itself"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# BUILD points at nothing: the GPU check must come before any build.
output=$(OUT=$out BUILD=$out/no-build GPU_CHECK_BUDGET_S=60 "$root/scripts/gpu-check.sh" 2>&1)
rc=$?
printf '%s\n' "$output"
if ((rc == 0)); then
  echo "FAIL: gpu-check.sh exited 0 without a GPU"
  exit 1
fi
if ! grep -q 'no GPU visible' <<<"$output" || ! grep -q 'no GPU visible' "$out/summary.txt"; then
  echo "FAIL: gpu-check.sh did not say 'no GPU visible' (exit $rc)"
  exit 1
fi
if [[ -e $out/no-build ]]; then
  echo "FAIL: gpu-check.sh started a build without a GPU"
  exit 1
fi
echo "ok: gpu-check.sh exited $rc with 'no GPU visible'"
