#!/usr/bin/env bash
# scripts/fuzz.sh BUILD_DIR [HARNESS...]: runs each libFuzzer harness of a
# build configured with -DAVA_FUZZ=ON (default: all of them) for
# AVA_FUZZ_TIME seconds (default 60) over its checked-in corpus, new inputs
# going to out/fuzz/<harness>/ (never into the corpus), and prints a table of
# executions/s, coverage (libFuzzer's cov: edges and ft: features) and corpus
# size per harness. Crash inputs land in out/fuzz/artifacts/. Exits 1 if any
# harness crashed, leaked or timed out.
set -uo pipefail
build=${1:?usage: scripts/fuzz.sh BUILD_DIR [HARNESS...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${AVA_FUZZ_TIME:-60}
out=${AVA_FUZZ_OUT:-$root/out/fuzz}
mkdir -p "$out/artifacts"

harnesses=("$@")
if ((${#harnesses[@]} == 0)); then
  for f in "$build"/bin/fuzz_*; do
    [[ -x $f ]] && harnesses+=("$(basename "$f")")
  done
fi

export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0"
stub_dir=$build/tests/fuzz/cuda-stub
failed=0
rows=()
for h in "${harnesses[@]}"; do
  h=${h#fuzz_}
  corpus=$root/tests/fuzz/corpus/$h
  [[ -d $corpus ]] || corpus=$root/tests/fuzz/corpus/${h%%_*}
  mkdir -p "$out/$h"
  log=$out/$h.log
  env_extra=()
  [[ $h == worker_cuda ]] && env_extra=("LD_LIBRARY_PATH=$stub_dir")
  echo "fuzz: $h for ${seconds}s (log $log)" >&2
  env "${env_extra[@]}" "$build/bin/fuzz_$h" -max_total_time="$seconds" -timeout=60 \
    -rss_limit_mb=4096 -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$h-" "$out/$h" "$corpus" >"$log" 2>&1
  rc=$?
  # The last status line: "#N DONE cov: C ft: F corp: U/S exec/s: E rss: R".
  line=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
  field() { sed -n "s|.* $1: \([^ ]*\).*|\1|p" <<<"$line"; }
  status=ok
  if ((rc != 0)); then
    status="FAILED ($rc)"
    failed=1
  fi
  rows+=("$(printf '%-16s %10s %8s %8s %12s %10s  %s' "$h" "$(field exec/s)" "$(field cov)" \
    "$(field ft)" "$(field corp)" "${line%%[[:space:]]*}" "$status")")
done

printf '%-16s %10s %8s %8s %12s %10s  %s\n' harness exec/s cov ft corpus runs status
printf '%s\n' "${rows[@]}"
exit $failed
