#!/usr/bin/env bash
# Runs ava's channel benchmarks and writes OUT_DIR/results.csv, results.json
# and bench.png, printing a table of every figure as a ratio against a
# baseline measured in the same run (bare ring, bare sockets, memcpy), and
# whether the performance targets are met.
#
#   baselines   bare SPSC ring and unix/tcp socket ping-pong, memcpy bandwidth
#   native      bench/demo_bench against the real libdemo.so.1
#   ava         demo_bench under `ava run --channel X` for unix, tcp, shm, and
#               against an `ava worker --io-uring` for unix-uring, tcp-uring;
#               async calls with AVA_BATCH=1 and AVA_BATCH=0
#   clpeak      scripts/bench-clpeak.sh: OpenCL transfers and launch latency,
#               natively and under ava (OUT_DIR/clpeak.csv, clpeak.json)
#   vm          scripts/bench-vm.sh: demo_bench in a QEMU guest over the kmod
#               ring, tcp and virtio-serial, as ratios to tcp (OUT_DIR/vm.csv,
#               vm.json); skipped without qemu-system-x86_64
#   idle        bench/idle_cpu.py: wake-ups and CPU time of a worker with 100
#               idle guests and of a guest blocked in a 10 s call (shm)
#   tasks       scripts/bench-tasks.sh: per-task overhead and METG(50%) of parla
#               against oneTBB, OpenMP and StarPU (OUT_DIR/tasks.csv, tasks.json,
#               tasks.png)
# A channel the build does not support yet is skipped, saying so.
#
# usage: scripts/bench.sh BUILD_DIR [OUT_DIR]     (OUT_DIR defaults to out/bench)
# AVA_BENCH_QUICK=1 runs fewer iterations and sizes (up to 64 MiB).
# Exit status: 0 when every measurement ran (missed targets included), 1 when
# one failed (the others are still reported), 2 on a usage or setup error.
set -euo pipefail

usage() {
  echo "usage: $0 BUILD_DIR [OUT_DIR]   (AVA_BENCH_QUICK=1 for a short run)" >&2
  exit 2
}
die() {
  echo "bench.sh: $*" >&2
  exit 2
}

[[ $# -ge 1 && $# -le 2 && $1 != -h && $1 != --help ]] || usage
build=$1
out=${2:-out/bench}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$build/bin
ava=$bin/ava
demo_bench=$bin/demo_bench

for program in ava demo_bench demo_probe baseline_ring baseline_socket baseline_memcpy; do
  [[ -x $bin/$program ]] || die "$bin/$program is missing: build the project first (make)"
done
for tool in timeout python3; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' is not installed"
done

quick=0
[[ -n ${AVA_BENCH_QUICK:-} && ${AVA_BENCH_QUICK} != 0 ]] && quick=1
export AVA_BENCH_QUICK=$quick
# No step needs long even on a loaded host; a hung one must not hang `make bench`.
step_limit_s=$((quick ? 120 : 240))

# The plot needs matplotlib; the system python3 gets it from Debian's package.
plot_python=
find_plot_python() {
  local python
  for python in python3 /usr/bin/python3; do
    if command -v "$python" >/dev/null 2>&1 && "$python" -c 'import matplotlib' 2>/dev/null; then
      plot_python=$python
      return 0
    fi
  done
  return 1
}
install_matplotlib() {
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      echo "bench.sh: python3-matplotlib is missing and there is no root to install it" >&2
      return 1
    fi
  fi
  echo "bench.sh: installing python3-matplotlib for the plot ..." >&2
  export DEBIAN_FRONTEND=noninteractive
  { "${sudo[@]}" apt-get install -y -qq --no-install-recommends python3-matplotlib ||
    { "${sudo[@]}" apt-get update -qq &&
      "${sudo[@]}" apt-get install -y -qq --no-install-recommends python3-matplotlib; }; } \
    >"$work/apt.log" 2>&1 || {
    echo "bench.sh: apt-get install python3-matplotlib failed:" >&2
    tail -n 5 "$work/apt.log" | sed 's/^/    /' >&2
    return 1
  }
}

mkdir -p "$out/logs" || die "cannot create $out"
rm -f "$out"/{raw.csv,skipped.txt,results.csv,results.json,bench.png} "$out"/logs/*.log
raw=$out/raw.csv
skipped=$out/skipped.txt
: >"$raw"
: >"$skipped"

work=$(mktemp -d "${TMPDIR:-/tmp}/ava-bench.XXXXXX")
worker_pid=
stop_worker() {
  [[ -n $worker_pid ]] || return 0
  kill -TERM "$worker_pid" 2>/dev/null || true
  local i
  for ((i = 0; i < 50; i++)); do
    kill -0 "$worker_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$worker_pid" 2>/dev/null || true
  wait "$worker_pid" 2>/dev/null || true
  worker_pid=
}
cleanup() {
  stop_worker
  rm -rf -- "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Installing packages in the middle of the measurements would disturb them.
find_plot_python || { install_matplotlib && find_plot_python; } ||
  echo "bench.sh: no matplotlib: the table and files are written, the plot is not" >&2

# Only the workers started here may serve the guests: no configured or inherited worker.
unset AVA_WORKER AVA_CHANNEL AVA_LOG
while read -r name; do unset "$name"; done < <(compgen -e | grep '^AVA_WORKER_' || true)
: >"$work/guest.toml"
export AVA_CONFIG=$work/guest.toml

failed=()
# measure CHANNEL STEP COMMAND...: runs COMMAND, keeps its "result,..." lines as
# CHANNEL rows of raw.csv and its stderr in logs/STEP.log.
measure() {
  local channel=$1 step=$2
  shift 2
  local log=$out/logs/$step.log status=0 started=$SECONDS
  printf '  %-26s ' "$step"
  timeout --kill-after=10 "$step_limit_s" "$@" >"$work/$step.out" 2>"$log" || status=$?
  local rows
  rows=$(grep -c '^result,' "$work/$step.out" || true)
  sed -n "s/^result,/$channel,/p" "$work/$step.out" >>"$raw"
  if [[ $status -ne 0 || $rows -eq 0 ]]; then
    failed+=("$step")
    if [[ $status -eq 124 || $status -eq 137 ]]; then
      echo "FAILED: no end within ${step_limit_s} s ($rows figures kept; log: $log)"
    elif [[ $status -ne 0 ]]; then
      echo "FAILED: exit status $status ($rows figures kept; log: $log)"
    else
      echo "FAILED: no figures (log: $log)"
    fi
    tail -n 5 "$log" | sed 's/^/      /'
  else
    echo "ok ($rows figures, $((SECONDS - started)) s)"
  fi
}

skip() {
  local channel=$1 reason=$2
  printf '  %-26s skipped: %s\n' "$channel" "$reason"
  echo "$channel,$reason" >>"$skipped"
}

# measure_ava CHANNEL COMMAND...: demo_bench under COMMAND (an `ava run ... --`
# prefix), once in full with batching on, once for async calls without it
# (five bursts: their median and the slowest).
measure_ava() {
  local channel=$1
  shift
  measure "$channel" "ava_$channel" env AVA_BATCH=1 "$@" "$demo_bench" --tag batched
  measure "$channel" "ava_${channel}_unbatched" env AVA_BATCH=0 "$@" "$demo_bench" \
    --only async --tag unbatched --repeat 5
  # Buffers from ava_zerocopy_alloc: on shm they reach the worker in place.
  if [[ $channel == shm ]]; then
    measure "$channel" "ava_${channel}_zerocopy" env "$@" "$demo_bench" --only bw --zerocopy
  fi
}

first_line() {
  grep -m1 -v '^Try ' "$1" 2>/dev/null | cut -c1-160 || true
}

# start_uring_worker KIND: starts `ava worker --io-uring` on a private address;
# sets worker_pid and worker_address, or returns 1 (unsupported) or 2 (broken).
worker_address=
start_uring_worker() {
  local kind=$1 listen ready=$work/uring-$1.ready
  case $kind in
  unix) listen=unix:$work/uring.sock ;;
  tcp) listen=tcp:127.0.0.1:0 ;;
  esac
  : >"$ready"
  "$ava" worker --io-uring --listen "$listen" --ready-fd 3 3>"$ready" \
    >"$out/logs/uring_worker_$kind.log" 2>&1 &
  worker_pid=$!
  local i status
  for ((i = 0; i < 100; i++)); do
    if [[ $(wc -l <"$ready") -ge 1 ]]; then
      worker_address=$(head -n 1 "$ready")
      return 0
    fi
    if ! kill -0 "$worker_pid" 2>/dev/null; then
      status=0
      wait "$worker_pid" || status=$?
      worker_pid=
      [[ $status -eq 2 ]] && grep -q -- "--io-uring" "$out/logs/uring_worker_$kind.log" && return 1
      return 2
    fi
    sleep 0.1
  done
  stop_worker
  return 2
}

echo "ava benchmark: build $build, results in $out$( ((quick)) && echo ' (quick run)')"
# Other work on the host shows up in every figure; the report says how busy it was.
load=$(cut -d ' ' -f 1 /proc/loadavg 2>/dev/null || echo 0)
echo "baselines:"
measure ring baseline_ring "$bin/baseline_ring"
measure unix-socket baseline_socket_unix "$bin/baseline_socket" unix
measure tcp-socket baseline_socket_tcp "$bin/baseline_socket" tcp
measure memcpy baseline_memcpy "$bin/baseline_memcpy"

echo "libdemo natively:"
measure native demo_bench_native "$demo_bench"

echo "libdemo under ava:"
for channel in unix tcp shm; do
  if ! timeout 60 "$ava" run --channel "$channel" -- true >/dev/null 2>"$work/probe.err"; then
    skip "$channel" "'ava run --channel $channel -- true' fails: $(first_line "$work/probe.err")"
    continue
  fi
  measure_ava "$channel" "$ava" run --channel "$channel" --
done
for kind in unix tcp; do
  status=0
  start_uring_worker "$kind" || status=$?
  case $status in
  0)
    measure_ava "$kind-uring" "$ava" run --worker "$worker_address" --
    stop_worker
    ;;
  1) skip "$kind-uring" "ava worker has no --io-uring option in this build" ;;
  *)
    failed+=("uring_worker_$kind")
    printf "  %-26s FAILED: 'ava worker --io-uring --listen %s:...' did not get ready (log: %s)\n" \
      "uring_worker_$kind" "$kind" "$out/logs/uring_worker_$kind.log"
    tail -n 5 "$out/logs/uring_worker_$kind.log" | sed 's/^/      /'
    ;;
  esac
done

echo "idle costs:"
idle_args=()
((quick)) && idle_args=(--guests 20 --window 3)
measure idle idle_cpu python3 "$root/bench/idle_cpu.py" --ava "$ava" --probe "$bin/demo_probe" \
  --guest-lib-dir "$build/lib/ava/guest" ${idle_args[@]+"${idle_args[@]}"}

report_args=(--raw "$raw" --skipped "$skipped" --out-dir "$out" --load-before "$load")
((quick)) && report_args+=(--quick)
for step in ${failed[@]+"${failed[@]}"}; do
  report_args+=(--failed "$step")
done
python3 "$root/bench/report.py" "${report_args[@]}" || die "bench/report.py failed"

if [[ -n $plot_python ]]; then
  if "$plot_python" "$root/bench/plot.py" "$out/results.json" "$out/bench.png" \
    2>"$out/logs/plot.log"; then
    echo
    echo "plot: $out/bench.png"
  else
    failed+=(plot)
    echo "bench.sh: bench/plot.py failed (log: $out/logs/plot.log)" >&2
  fi
fi
echo "results: $out/results.csv, $out/results.json"

# clpeak (OpenCL) natively and under ava: its own table, clpeak.csv and clpeak.json.
echo
"$root/scripts/bench-clpeak.sh" "$build" "$out" || failed+=(clpeak)

# The guest's channels (kmod ring, tcp, virtio-serial) in one QEMU boot: its own table, vm.csv and vm.json.
echo
"$root/scripts/bench-vm.sh" "$build" "$out" || failed+=(vm)

# The task runtime against oneTBB, OpenMP and StarPU: its own table, tasks.csv, tasks.json, tasks.png.
echo
"$root/scripts/bench-tasks.sh" "$build" "$out" || failed+=(tasks)

if [[ ${#failed[@]} -ne 0 ]]; then
  echo "bench.sh: ${#failed[@]} step(s) failed: ${failed[*]}" >&2
  exit 1
fi
