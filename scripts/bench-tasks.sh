#!/usr/bin/env bash
# Runs the task benchmark (bench/tasks/task_bench): per-task overhead and
# METG(50%) of parla against oneTBB flow graph, OpenMP task depend and
# StarPU, measured in this one run, with issue 16's targets as met/missed.
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
rm -f -- "$out/tasks.csv" "$out/tasks.json" "$out/tasks.png" "$out/logs/tasks.log"
echo "task benchmark (bench/tasks): parla, tbb, openmp, starpu$( ((quick)) && echo ' (quick run)')"
# A run's environment must not reconfigure the systems under test.
unset PARLA_SEQUENTIAL PARLA_TRACE OMP_NUM_THREADS STARPU_NCPU
status=0
timeout --kill-after=10 "$limit_s" "$task_bench" --out "$out" 2>"$out/logs/tasks.log" || status=$?
if [[ $status -ne 0 ]]; then
  if [[ $status -eq 124 || $status -eq 137 ]]; then
    echo "bench-tasks.sh: task_bench did not end within $limit_s s (log: $out/logs/tasks.log)" >&2
  else
    echo "bench-tasks.sh: task_bench failed with status $status (log: $out/logs/tasks.log)" >&2
  fi
  tail -n 5 "$out/logs/tasks.log" | sed 's/^/    /' >&2
  exit 1
fi

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
