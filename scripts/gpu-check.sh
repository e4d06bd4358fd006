#!/usr/bin/env bash
# The one prepared check for a machine with a GPU. It first requires a GPU
# visible natively (nvidia-smi lists one, its device nodes exist, the driver's
# libcuda.so.1 is installed) and fails at once with "no GPU visible"
# otherwise. Then it builds ava's CUDA pieces and the CUDA test programs
# (tests/cuda/programs), runs each check natively and under `ava run` over shm
# and tcp, and compares: the native run must pass its own checks (exit 0),
# each remoted run must exit alike, print the same stdout, print no "ava:"
# message, and have been served by ava's worker (its session report shows the
# check's spec running calls, so a run that loaded the real library fails).
# It prints what ran and what was compared, and a summary with wall-time
# ratios. Finishes within GPU_CHECK_BUDGET_S (every run has its own timeout;
# runs that would not fit are skipped and count as failures).
#
# Each open issue adds its GPU checks to the `checks` table below, and
# nowhere else. A check that plays a hostile guest has no native run to be
# compared with (no CUDA program sends raw messages): it names a raw-guest
# test of the build instead (see the table), which starts its own worker,
# asserts what the worker answers each attack, and must pass with nothing
# skipped.
#
# Usage: scripts/gpu-check.sh
# Environment:
#   OUT                 log, per-run outputs and summary (default ./out/gpu-check)
#   BUILD               build directory (default <repo>/build-gpu). A build made
#                       elsewhere and carried here (bin/ava, lib/ava,
#                       tests/cuda/cu_*) is used as it is when it was configured
#                       for another source tree or has no CMakeCache.txt.
#   GPU_CHECK_REBUILD=1 configure and build in BUILD even if a carried build is there
#   GPU_CHECK_BUDGET_S  seconds for the whole script (default 450)
# Exit status: 0 when a GPU is visible, every native run passed its checks
# and every remoted run matched it and was remoted; 1 otherwise.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$root/build-gpu}
out=${OUT:-$PWD/out/gpu-check}
budget=${GPU_CHECK_BUDGET_S:-450}
native_timeout=60
remoted_timeout=120
build_timeout=300
channels=(shm tcp)

# --- the checks ---------------------------------------------------------------
# One per line: "ORIGIN SPEC PROGRAM[:ARGUMENT]". ORIGIN says who added it (an
# issue number, or "base" for the programs that came with the specs); SPEC is
# the spec whose worker must serve the remoted run (cudart: the runtime,
# libcudart.so.13; cuda: the driver API, libcuda.so.1); PROGRAM is
# tests/cuda/programs/PROGRAM.cu (built as cu_PROGRAM), whose exit codes are in
# tests/cuda/programs/cu_check.cuh. PROGRAM raw:TEST is instead the Criterion
# test TEST of tests/e2e (the build's bin/TEST), a raw guest against a worker
# of SPEC: run once, it passes when it exits 0 (every test passed, none
# skipped); there is no native run or stdout to compare. Open issues add
# their GPU checks here.
checks=(
  "base cudart device_query"
  "base cudart errors"
  "base cudart vector_add"
  "base cudart streams_events"
  "base cudart memcpy_bandwidth"
  "base cudart host_callback"
  "base cudart failing_launch"
  "base cudart failing_launch:oob"
  "base cudart launch_paths"
  "base cuda   driver_api"
  "13   cudart copy_ranges"
  "13   cudart raw:test_e2e_cudart_copies"
  "13   cudart raw:test_e2e_cudart_quota"
  # error codes of the calls ava may send async, at the call (issue 14)
  "14   cudart async_errors"
  # parla's CUDA devices (tests/parla/test_parla_cuda), run natively: it must
  # find the GPU (it skips without one, which counts as a failure here).
  "16   cudart raw:test_parla_cuda"
)

mkdir -p "$out/runs" || exit 1
log=$out/gpu-check.log
summary=$out/summary.txt
: >"$log"
exec > >(tee -a "$log") 2>&1
SECONDS=0

note() { printf '== %s\n' "$*"; }
left() { echo $((budget - SECONDS)); }
now() { date +%s.%N; }

note "gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), repo $root, build $build, out $out"

# --- a GPU, natively ------------------------------------------------------------
# Without one every program fails alike natively and remoted, which proves
# nothing a GPU check is for: stop here.
no_gpu() {
  note "gpu-check FAILED: no GPU visible: $*"
  printf 'gpu-check: FAILED: no GPU visible: %s\n' "$*" >"$summary"
  exit 1
}
command -v nvidia-smi >/dev/null 2>&1 || no_gpu "nvidia-smi is not installed (no NVIDIA driver)"
gpus=$(timeout 30 nvidia-smi -L 2>&1) || no_gpu "nvidia-smi -L failed: $gpus"
grep -q '^GPU [0-9]' <<<"$gpus" || no_gpu "nvidia-smi -L lists no GPU: $gpus"
note "nvidia-smi -L"
printf '%s\n' "$gpus"
compgen -G '/dev/nvidia[0-9]*' >/dev/null || no_gpu "no /dev/nvidia[0-9]* device node"
ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' || no_gpu "the driver's libcuda.so.1 is not installed"
nvcc=/usr/local/cuda/bin/nvcc
[[ -x $nvcc ]] && "$nvcc" --version | tail -n 2

# --- build ------------------------------------------------------------------
artifacts=(bin/ava lib/ava/guest/libcudart.so.13 lib/ava/worker/libava_worker_cudart.so
  lib/ava/guest/libcuda.so.1 lib/ava/worker/libava_worker_cuda.so)
raw_targets=()
for c in "${checks[@]}"; do
  read -r _ _ r <<<"$c"
  if [[ $r == raw:* ]]; then
    # Raw-guest tests register the nvcc-built fat binary of tests/cuda.
    raw_targets+=("${r#raw:}")
    a="bin/${r#raw:}"
    [[ " ${artifacts[*]} " == *" tests/cuda/kernels_plain.fatbin "* ]] ||
      artifacts+=(tests/cuda/kernels_plain.fatbin)
  else
    a="tests/cuda/cu_${r%%:*}"
  fi
  [[ " ${artifacts[*]} " == *" $a "* ]] || artifacts+=("$a")
done
missing_artifacts() {
  local a
  for a in "${artifacts[@]}"; do [[ -e $build/$a ]] || echo "$a"; done
}

cache_source() {
  sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null
}

configure() {
  local generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  timeout "$build_timeout" cmake -S "$root" -B "$build" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
}

build_targets() {
  local left_s
  left_s=$(left)
  ((left_s > 60)) || { note "no time left to build"; return 1; }
  timeout "$((left_s < build_timeout ? left_s : build_timeout))" \
    cmake --build "$build" -j "$(nproc)" --target ava ava_guest_cudart ava_worker_cudart \
    ava_guest_cuda ava_worker_cuda cuda_programs "${raw_targets[@]}"
}

build_failed=0
source_dir=$(cache_source)
if [[ ${GPU_CHECK_REBUILD:-0} != 1 && $source_dir != "$root" && -z $(missing_artifacts) ]]; then
  note "using the carried build in $build as it is (configured for '${source_dir:-nothing}')"
else
  if [[ -n $source_dir && $source_dir != "$root" ]]; then
    note "$build was configured for $source_dir, not $root: set BUILD to another directory"
    build_failed=1
  elif ! command -v cmake >/dev/null 2>&1 || ! configure; then
    # A fresh machine may lack packages; install them only where that is possible.
    if command -v apt-get >/dev/null 2>&1 && { [[ $(id -u) -eq 0 ]] || command -v sudo >/dev/null 2>&1; }; then
      note "configure failed: trying scripts/install-deps.sh"
      timeout 240 "$root/scripts/install-deps.sh" && configure || build_failed=1
    else
      build_failed=1
    fi
  fi
  if ((build_failed == 0)); then
    note "building ava, ava_guest_cudart, ava_worker_cudart, ava_guest_cuda, ava_worker_cuda, cuda_programs ${raw_targets[*]}"
    build_targets || build_failed=1
  fi
fi
mapfile -t missing < <(missing_artifacts)
if ((${#missing[@]} > 0)); then
  note "build incomplete; missing in $build:"
  printf '   %s\n' "${missing[@]}"
  note "gpu-check FAILED (build)"
  printf 'gpu-check: FAILED (build); missing in %s: %s\n' "$build" "${missing[*]}" >"$summary"
  exit 1
fi
ava=$build/bin/ava
note "build ready after ${SECONDS}s"

# --- runs -------------------------------------------------------------------
# Children get no ava configuration from the caller's shell. The bandwidth
# program's timings go to stderr, which is logged but not compared.
clean_env=(env -u AVA_WORKER -u AVA_CHANNEL -u AVA_CONFIG -u AVA_LOG CU_BANDWIDTH_TIMINGS=1)

# run_one <tag> <timeout> <command...>: stdout/stderr/exit/seconds under runs/<tag>.*
run_one() {
  local tag=$1 limit=$2
  shift 2
  local base=$out/runs/$tag t0 t1 rc
  local left_s
  left_s=$(left)
  if ((left_s < 10)); then
    echo skipped >"$base.exit"
    echo 0 >"$base.seconds"
    : >"$base.out"
    echo "gpu-check: skipped, the time budget is spent" >"$base.err"
    return
  fi
  ((limit > left_s - 5)) && limit=$((left_s - 5))
  t0=$(now)
  timeout --kill-after=5 "$limit" "${clean_env[@]}" "$@" >"$base.out" 2>"$base.err"
  rc=$?
  t1=$(now)
  ((rc == 124 || rc == 137)) && rc="timeout"
  echo "$rc" >"$base.exit"
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >"$base.seconds"
}

ratio() {
  awk -v r="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.2f", r / n; else printf "-" }'
}

# calls_served <report> <spec>: the calls the worker's sessions of spec ran.
calls_served() {
  awk -v s="spec=$2" '$1 == "session" && $2 == s {
      for (i = 3; i <= NF; i++) if ($i ~ /^calls=/) n += substr($i, 7)
    } END { print n + 0 }' \
    "$1" 2>/dev/null || echo 0
}

failures=0
rows=()
note "compared for each check: native exit 0; remoted exit and stdout equal to native;"
note "no 'ava:' on the remoted stderr; the worker's report shows calls of the check's spec"
note "raw-guest checks: the test exits 0 (its own assertions on the worker's answers, none skipped)"
for c in "${checks[@]}"; do
  read -r origin spec r <<<"$c"
  if [[ $r == raw:* ]]; then
    # Paths compiled into the test are the build's; a carried build gets them here.
    label=${r#raw:}
    run_one "$label.raw" "$remoted_timeout" env AVA_E2E_AVA_BIN="$build/bin/ava" \
      AVA_E2E_CUDA_TEST_FATBIN="$build/tests/cuda/kernels_plain.fatbin" \
      "$build/bin/$label" --jobs 1
    exit_code=$(cat "$out/runs/$label.raw.exit")
    secs=$(cat "$out/runs/$label.raw.seconds")
    verdict=passed
    [[ $exit_code == 0 ]] || verdict="NO(exit $exit_code)"
    note "$label ($origin, spec $spec, raw guest): exit $exit_code in ${secs}s: $verdict"
    sed 's/^/   | /' "$out/runs/$label.raw.out" | tail -n 20
    if [[ $verdict != passed ]]; then
      failures=$((failures + 1))
      sed 's/^/   ! /' "$out/runs/$label.raw.err" | head -n 40
    fi
    rows+=("$(printf '%-22s | %-11s | %-12s' "$label" "(raw guest)" "$verdict")")
    continue
  fi
  name=${r%%:*}
  args=()
  [[ $r == *:* ]] && args=("${r#*:}")
  label=$name${args[0]:+_${args[0]}}
  prog=$build/tests/cuda/cu_$name

  run_one "$label.native" "$native_timeout" "$prog" "${args[@]}"
  native_exit=$(cat "$out/runs/$label.native.exit")
  native_s=$(cat "$out/runs/$label.native.seconds")
  note "$label ($origin, spec $spec): native exit $native_exit in ${native_s}s"
  sed 's/^/   | /' "$out/runs/$label.native.out"
  if [[ $native_exit != 0 ]]; then
    note "$label: native run failed its own checks (exit $native_exit):"
    sed 's/^/   ! /' "$out/runs/$label.native.err" | head -n 20
    failures=$((failures + 1))
  fi

  row=$(printf '%-22s | %-11s' "$label" "$native_exit")
  ratios=""
  for ch in "${channels[@]}"; do
    tag=$label.$ch
    report=$out/runs/$tag.report
    rm -f "$report"
    run_one "$tag" "$remoted_timeout" "$ava" run --channel "$ch" --report "$report" -- \
      "$prog" "${args[@]}"
    exit_code=$(cat "$out/runs/$tag.exit")
    secs=$(cat "$out/runs/$tag.seconds")
    served=$(calls_served "$report" "$spec")
    verdict=same
    if ((served == 0)); then
      verdict="NO(not remoted)"
    elif [[ $exit_code != "$native_exit" ]]; then
      verdict="NO(exit $exit_code)"
    elif ! cmp -s "$out/runs/$label.native.out" "$out/runs/$tag.out"; then
      verdict="NO(stdout)"
    elif grep -q 'ava:' "$out/runs/$tag.err"; then
      verdict="NO(ava msg)"
    fi
    note "$label over $ch: exit $exit_code in ${secs}s, $served $spec calls served: $verdict"
    if [[ $verdict != same ]]; then
      failures=$((failures + 1))
      diff -u "$out/runs/$label.native.out" "$out/runs/$tag.out" >"$out/runs/$tag.diff"
      head -n 40 "$out/runs/$tag.diff" | sed 's/^/   > /'
      sed 's/^/   ! /' "$out/runs/$tag.err" | head -n 20
    fi
    row+=$(printf ' | %-12s' "$verdict")
    ratios+=$(printf ' | %-12s' "$(ratio "$secs" "$native_s")")
  done
  rows+=("$row$ratios")
done

# --- summary ----------------------------------------------------------------
{
  printf '%-22s | %-11s | %-12s | %-12s | %-12s | %-12s\n' program "native exit" "shm same?" \
    "tcp same?" "shm/native" "tcp/native"
  printf '%s\n' "${rows[@]}"
  echo
  echo "native exit: 0 = the program's checks held on the GPU (anything else fails the check)"
  echo "(raw guest): a hostile guest's test against the worker; passed = all its assertions held"
  echo "ratios: wall time of the whole process (start-up included) under ava / natively"
  if ((failures == 0)); then
    echo "gpu-check: PASSED in ${SECONDS}s"
  else
    echo "gpu-check: FAILED ($failures failures) in ${SECONDS}s"
  fi
} >"$summary"
echo
cat "$summary"
((failures == 0))
