#!/usr/bin/env bash
# Runs the task benchmark (bench/tasks/task_bench): per-task overhead and
# METG(50%) of parla against oneTBB flow graph, OpenMP task depend and
# StarPU, measured in this one run, and of parla on PoCL directly against
# PoCL through ava (shm), with issue 16's targets as met/missed.
#
# usage: scripts/bench-tasks.sh BUILD_DIR OUT_DIR
# Writes OUT_DIR/tasks.csv, OUT_DIR/tasks.json and OUT_DIR/tasks.png (the
# plot needs python3-matplotlib; without it the plot is skipped, saying so),
# and task_bench's stderr to OUT_DIR/logs/tasks.log.
# AVA_BENCH_QUICK=1 sweeps fewer sizes and patterns (about 10 s on 2 cores;
# the full run takes about 2.5 minutes).
#
# Exit status: 0 when the benchmark ran (missed targets included), 1 when it
# failed (a wrong graph, a crash, no end in time), 2 on a usage error.
set -euo pipefail

usage() {
  echo "usage: $0 BUILD_DIR OUT_DIR   (AVA_BENCH_QUICK=1 for a short run)" >&2
  exit 2
}
[[ $# -eq 2 && $1 != -h && $1 != --help ]] || usage
build=$1
out=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
task_bench=$build/bin/task_bench
[[ -x $task_bench ]] || {
  echo "bench-tasks.sh: $task_bench is missing: build the project first (make)" >&2
  exit 2
}
export LC_ALL=C

quick=0
[[ -n ${AVA_BENCH_QUICK:-} && ${AVA_BENCH_QUICK} != 0 ]] && quick=1
export AVA_BENCH_QUICK=$quick
# Generous (a loaded host runs slower), but a hung runtime must not hang `make bench`.
limit_s=$((quick ? 300 : 1500))

mkdir -p "$out/logs"
rm -rf -- "$out/tasks.csv" "$out/tasks.json" "$out/tasks.png" "$out/logs/tasks"*.log \
  "$out/opencl-native" "$out/opencl-ava-shm"
echo "task benchmark (bench/tasks): parla, tbb, openmp, starpu, parla on PoCL directly and" \
  "through ava (shm)$( ((quick)) && echo ' (quick run)')"
# A run's environment must not reconfigure the systems under test.
unset PARLA_SEQUENTIAL PARLA_TRACE OMP_NUM_THREADS STARPU_NCPU AVA_WORKER AVA_CHANNEL

# run_bench LOG ARGS...: task_bench ARGS within the time limit; exits 1 on a failure.
run_bench() {
  local log=$1 status=0
  shift
  timeout --kill-after=10 "$limit_s" "$@" 2>"$log" || status=$?
  if [[ $status -ne 0 ]]; then
    if [[ $status -eq 124 || $status -eq 137 ]]; then
      echo "bench-tasks.sh: $* did not end within $limit_s s (log: $log)" >&2
    else
      echo "bench-tasks.sh: $* failed with status $status (log: $log)" >&2
    fi
    tail -n 5 "$log" | sed 's/^/    /' >&2
    exit 1
  fi
}

# Tasks whose kernels run on PoCL's two pthread devices: natively, and in a
# process of its own under `ava run` (its OpenCL library is then ava's), whose
# report is merged into the main one. The worker's report must show the
# calls, or the remoted figures would be native ones.
merge=()
ava=$build/bin/ava
if [[ -x $ava ]] && [[ -n $(ls /etc/OpenCL/vendors/*.icd 2>/dev/null) ]]; then
  opencl_patterns=stencil_1d,nearest
  opencl_systems=parla-opencl,parla-opencl-runahead
  ((quick)) || opencl_patterns=stencil_1d,nearest,trivial
  export POCL_DEVICES="pthread pthread"
  mkdir -p "$out/opencl-native" "$out/opencl-ava-shm"
  run_bench "$out/logs/tasks-opencl-native.log" "$task_bench" --systems "$opencl_systems" \
    --patterns "$opencl_patterns" --out "$out/opencl-native" >/dev/null
  # Remoted, the sweeps that never reach 50 % run to the largest size: the
  # two patterns of the target only, so that the whole benchmark stays
  # under ~15 minutes.
  run_bench "$out/logs/tasks-opencl-ava-shm.log" "$ava" run --channel shm \
    --report "$out/logs/tasks-ava-worker.report" -- "$task_bench" --systems "$opencl_systems" \
    --label @ava-shm --patterns stencil_1d,nearest --out "$out/opencl-ava-shm" >/dev/null
  unset POCL_DEVICES
  calls=$(grep -o 'spec=opencl .*calls=[0-9]*' "$out/logs/tasks-ava-worker.report" 2>/dev/null |
    sed 's/.*calls=//' | awk '{s += $1} END {print s + 0}')
  if [[ ${calls:-0} -eq 0 ]]; then
    echo "bench-tasks.sh: the worker served no OpenCL calls: the ava run was not remoted" >&2
    exit 1
  fi
  echo "parla-opencl@ava-shm: $calls OpenCL calls served by the worker"
  merge=(--merge "$out/opencl-native/tasks.json" --merge "$out/opencl-ava-shm/tasks.json")
else
  echo "bench-tasks.sh: skipped parla on PoCL (no $ava or no OpenCL ICD)" >&2
fi

run_bench "$out/logs/tasks.log" "$task_bench" --out "$out" "${merge[@]}"

# The system python3 has Debian's matplotlib even where another python3 comes first in PATH.
plot_python=
for python in python3 /usr/bin/python3; do
  if command -v "$python" >/dev/null 2>&1 && "$python" -c 'import matplotlib' 2>/dev/null; then
    plot_python=$python
    break
  fi
done
if [[ -n $plot_python ]]; then
  if "$plot_python" "$root/bench/tasks/plot_tasks.py" "$out/tasks.json" "$out/tasks.png" \
    2>"$out/logs/tasks-plot.log"; then
    echo "plot: $out/tasks.png"
  else
    echo "bench-tasks.sh: plot_tasks.py failed (log: $out/logs/tasks-plot.log)" >&2
    exit 1
  fi
else
  echo "bench-tasks.sh: no matplotlib (python3-matplotlib): tasks.png is not drawn" >&2
fi
echo "results: $out/tasks.csv, $out/tasks.json"
