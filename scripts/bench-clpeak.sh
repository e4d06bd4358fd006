#!/usr/bin/env bash
# Runs clpeak's transfer bandwidth and kernel launch latency tests (platform 0,
# device 0) natively and under `ava run --channel unix|tcp|shm`, and prints one
# table with every figure and the remoted / native ratios of this same run.
#
# usage: scripts/bench-clpeak.sh BUILD_DIR OUT_DIR
# Writes OUT_DIR/clpeak.csv, OUT_DIR/clpeak.json and, in OUT_DIR/clpeak/, each
# run's console log (NAME.log), stderr (NAME.err) and XML dump (NAME.xml).
#
# clpeak 1.1.x has no iteration or size options: each transfer test moves
# min(max alloc / 2, 512 MiB) 21 times. A full run is clpeak as a user runs
# it (512 MiB transfers here; the unix run then takes ~100 s). With
# AVA_BENCH_QUICK=1 PoCL's memory is capped with POCL_MEMORY_LIMIT=1 (1 GB,
# so 128 MiB transfers) to keep the runs short; a POCL_MEMORY_LIMIT already
# set is kept in either mode (the worker inherits it). Other OpenCL
# platforms ignore it.
# CLPEAK=/path/to/clpeak runs another clpeak binary (the tests use a fake one).
# Installs clpeak (and python3) with apt-get when missing, as root or via sudo.
#
# Exit status: 0 when every run gave every figure, 1 when a run failed (the
# others are still reported), 2 on a usage or setup error.
set -euo pipefail

usage() {
  echo "usage: $0 BUILD_DIR OUT_DIR   (AVA_BENCH_QUICK=1 for a short run)" >&2
  exit 2
}
die() {
  echo "bench-clpeak.sh: $*" >&2
  exit 2
}

[[ $# -eq 2 && $1 != -h && $1 != --help ]] || usage
build=$1
out=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ava=$build/bin/ava
# Where `ava run` looks for guest libraries (tools/ava/paths.cpp).
guest_dir=$(readlink -m -- "${AVA_GUEST_LIB_DIR:-$build/bin/../lib/ava/guest}")
parser=$root/bench/clpeak/parse_clpeak.py
# Figures are printed with the C locale's decimal point.
export LC_ALL=C

quick=0
[[ -n ${AVA_BENCH_QUICK:-} && ${AVA_BENCH_QUICK} != 0 ]] && quick=1
if ((quick)); then export POCL_MEMORY_LIMIT=${POCL_MEMORY_LIMIT:-1}; fi
# A hung run must not hang the benchmark; a full remoted run moves ~80 GiB.
run_limit_s=$((quick ? 150 : 600))

install_packages() {
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      die "$* missing and there is no root to install them (apt-get install $*)"
    fi
  fi
  echo "bench-clpeak.sh: installing $* ..." >&2
  export DEBIAN_FRONTEND=noninteractive
  local apt_log
  apt_log=$(mktemp "${TMPDIR:-/tmp}/ava-bench-clpeak-apt.XXXXXX")
  if ! { "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@" ||
    { "${sudo[@]}" apt-get update -qq &&
      "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@"; }; } >"$apt_log" 2>&1; then
    tail -n 5 "$apt_log" | sed 's/^/    /' >&2
    rm -f -- "$apt_log"
    die "apt-get install $* failed"
  fi
  rm -f -- "$apt_log"
}

missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
[[ -n ${CLPEAK:-} ]] || command -v clpeak >/dev/null 2>&1 || missing+=(clpeak)
((${#missing[@]} == 0)) || install_packages "${missing[@]}"
clpeak=$(command -v "${CLPEAK:-clpeak}") || die "'${CLPEAK:-clpeak}' is not an executable"
command -v timeout >/dev/null 2>&1 || die "'timeout' (coreutils) is not installed"
clpeak_version=$("$clpeak" --version 2>/dev/null | head -n 1 || true)

logs=$out/clpeak
mkdir -p "$logs" || die "cannot create $logs"
rm -f -- "$out/clpeak.csv" "$out/clpeak.json" "$logs/runs.tsv" "$logs"/*.log "$logs"/*.err \
  "$logs"/*.xml
runs=$logs/runs.tsv
: >"$runs"

work=$(mktemp -d "${TMPDIR:-/tmp}/ava-bench-clpeak.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
trap 'exit 130' INT TERM

# Only the private workers of `ava run` may serve clpeak: no configured or inherited worker.
unset AVA_WORKER AVA_CHANNEL AVA_LOG
while read -r name; do unset "$name"; done < <(compgen -e | grep '^AVA_WORKER_' || true)
: >"$work/guest.toml"
export AVA_CONFIG=$work/guest.toml

clpeak_args=(--platform 0 --device 0 --transfer-bandwidth --kernel-latency)

# opencl_of LD_LIBRARY_PATH: the libOpenCL.so.1 that clpeak would load.
opencl_of() {
  # ldd fails on a program that is not dynamically linked: it loads nothing then.
  { LD_LIBRARY_PATH=$1 ldd "$clpeak" 2>/dev/null || true; } |
    sed -n 's/^[[:space:]]*libOpenCL\.so\.1 => \([^ ]*\) .*/\1/p' | head -n 1
}

# in_guest_dir LIB: whether LIB is found in the guest library directory (it
# may well be a symbolic link to elsewhere).
in_guest_dir() {
  [[ -n $1 && $(readlink -m -- "$(dirname -- "$1")") == "$guest_dir" ]]
}

# Why a remoted run cannot remote anything, or nothing when it can.
remoting_problem() {
  [[ -x $ava ]] || {
    echo "$ava is missing: build the project first (make)"
    return
  }
  [[ -e $guest_dir/libOpenCL.so.1 ]] || {
    echo "no OpenCL guest library $guest_dir/libOpenCL.so.1 (specs/opencl not built yet?)"
    return
  }
  # Otherwise clpeak would quietly run natively under `ava run`.
  local lib
  lib=$(opencl_of "$guest_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  in_guest_dir "$lib" ||
    echo "$clpeak would load libOpenCL.so.1 from '${lib:-nowhere}', not from $guest_dir"
}

native_problem() {
  local lib
  lib=$(opencl_of "${LD_LIBRARY_PATH:-}")
  if in_guest_dir "$lib"; then
    echo "LD_LIBRARY_PATH makes $clpeak load ava's guest library $lib natively"
  fi
}

failed=()
# record NAME STATUS EXIT WALL REASON: one line of the runs file.
record() {
  local reason=${5//[$'\t\n']/ }
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$reason" >>"$runs"
  [[ $2 == ok ]] || failed+=("$1")
}

fail_before_start() {
  local name=$1 reason=$2
  printf '  %-8s FAILED: %s\n' "$name" "$reason"
  record "$name" failed "" "" "$reason"
}

# run_clpeak NAME [PREFIX...]: runs clpeak under PREFIX (nothing, or `ava run ... --`).
run_clpeak() {
  local name=$1
  shift
  local log=$logs/$name.log err=$logs/$name.err xml=$logs/$name.xml status=0
  printf '  %-8s ' "$name"
  local started=$EPOCHREALTIME
  timeout --kill-after=10 "$run_limit_s" "$@" "$clpeak" "${clpeak_args[@]}" \
    --enable-xml-dump --xml-file "$xml" </dev/null >"$log" 2>"$err" || status=$?
  local wall
  wall=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  # clpeak exits 0 when a test fails, so the figures decide.
  local parsed=0
  python3 -B "$parser" "$log" --xml "$xml" >/dev/null 2>"$work/check.err" || parsed=$?
  local problems=() missing clpeak_error
  missing=$(sed -n 's/^missing: //p' "$work/check.err")
  local count
  count=$(wc -w <<<"$missing")
  ((count <= 1)) || missing="${missing%%,*} and $((count - 1)) more"
  clpeak_error=$(sed -n 's/^clpeak: //p' "$work/check.err" | head -n 1)
  if [[ $status -eq 124 || $status -eq 137 ]]; then
    problems+=("no end within $run_limit_s s")
  elif [[ $status -ne 0 ]]; then
    problems+=("exit status $status")
  fi
  [[ -z $missing ]] || problems+=("no figure for $missing")
  [[ $parsed -le 1 ]] || problems+=("unreadable output: $(head -n 1 "$work/check.err")")
  [[ -z $clpeak_error ]] || problems+=("clpeak said '$clpeak_error'")
  local reason=
  if ((${#problems[@]})); then
    reason=$(printf '%s; ' "${problems[@]}")
    reason=${reason%; }
  fi
  if [[ -z $reason ]]; then
    echo "ok (${wall} s)"
    record "$name" ok "$status" "$wall" ""
    return
  fi
  echo "FAILED: $reason"
  echo "      last lines of $log:"
  tail -n 8 "$log" | sed 's/^/        /'
  if [[ -s $err ]]; then
    echo "      last lines of $err:"
    tail -n 8 "$err" | sed 's/^/        /'
  fi
  record "$name" failed "$status" "$wall" "$reason"
}

echo "clpeak benchmark: build $build, results in $out$( ((quick)) && echo ' (quick run)')"
echo "  $clpeak (${clpeak_version:-unknown version}) ${clpeak_args[*]}, POCL_MEMORY_LIMIT=${POCL_MEMORY_LIMIT:-unset}"
load=$(cut -d ' ' -f 1 /proc/loadavg 2>/dev/null || echo 0)

problem=$(native_problem)
if [[ -n $problem ]]; then
  fail_before_start native "$problem"
else
  run_clpeak native
fi

# The floor under clpeak over tcp: one bare loopback tcp stream of large
# transfers, measured in this run (bench/baseline_socket.c --bulk).
stream_log=$logs/tcp-stream.log
printf '  %-8s ' tcp-stream
if [[ -x $build/bin/baseline_socket ]] &&
  timeout 120 "$build/bin/baseline_socket" tcp --bulk $( ((quick)) && echo --quick) \
    >"$stream_log" 2>&1; then
  echo "ok ($(sed -n 's/^result,stream_bw,[0-9]*,\([0-9.]*\),.*/\1/p' "$stream_log") MiB/s)"
else
  echo "FAILED: $(tail -n 1 "$stream_log" 2>/dev/null || echo "no $build/bin/baseline_socket")"
  failed+=(tcp-stream)
fi

problem=$(remoting_problem)
for channel in unix tcp shm; do
  if [[ -n $problem ]]; then
    fail_before_start "$channel" "$problem"
  else
    run_clpeak "$channel" "$ava" run --channel "$channel" --
  fi
done

report_args=(--runs "$runs" --log-dir "$logs" --out-dir "$out" --load-before "$load"
  --clpeak-version "$clpeak_version" --tcp-stream "$stream_log")
((quick)) && report_args+=(--quick)
python3 -B "$root/bench/clpeak/report_clpeak.py" "${report_args[@]}" ||
  die "bench/clpeak/report_clpeak.py failed"
echo "results: $out/clpeak.csv, $out/clpeak.json; clpeak logs in $logs"

if [[ ${#failed[@]} -ne 0 ]]; then
  echo "bench-clpeak.sh: ${#failed[@]} run(s) failed: ${failed[*]}" >&2
  exit 1
fi
