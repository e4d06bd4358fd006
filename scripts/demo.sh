#!/usr/bin/env bash
# Runs demo_app natively and under `ava run` over the unix, tcp and shm channels,
# shows the native and remoted outputs side by side, and checks that they are
# identical (exit status included). Then the same for OpenCL: clinfo (whose
# ICD-loader section is the loader's own, not the device's) and a
# multi-threaded OpenCL program, both unmodified, against PoCL in the worker.
#
# usage: scripts/demo.sh BUILD_DIR
set -euo pipefail

if [[ $# -ne 1 || $1 == -h || $1 == --help ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$1
app=$build/bin/demo_app
ava=$build/bin/ava
for file in "$app" "$ava"; do
  if [[ ! -x $file ]]; then
    echo "demo.sh: $file is missing: build the project first" >&2
    exit 2
  fi
done

# A hung run must not hang the demo; 64 MiB round trips need well under this.
limit_s=300
columns=200

out=$(mktemp -d "${TMPDIR:-/tmp}/ava-demo.XXXXXX")
trap 'rm -rf -- "$out"' EXIT

# run NAME COMMAND...: stdout and the exit status go to $out/NAME.out, stderr to $out/NAME.err.
run() {
  local name=$1
  shift
  local status=0
  timeout --kill-after=10 "$limit_s" "$@" >"$out/$name.out" 2>"$out/$name.err" || status=$?
  echo "exit status $status" >>"$out/$name.out"
}

show_stderr() {
  local name=$1
  if [[ -s $out/$name.err ]]; then
    echo "--- stderr of the $name run:"
    sed 's/^/    /' "$out/$name.err"
  fi
}

echo "running demo_app natively, then under ava run --channel unix, tcp and shm ..."
run native "$app"
run unix "$ava" run --channel unix -- "$app"
run tcp "$ava" run --channel tcp -- "$app"
run shm "$ava" run --channel shm -- "$app"

# diff --side-by-side starts its right column at width / 2 + 2.
printf '\n%-*s%s\n' $((columns / 2 + 2)) "native" "ava run --channel unix"
printf '%*s\n' "$columns" '' | tr ' ' '-'
diff --side-by-side --expand-tabs --width="$columns" "$out/native.out" "$out/unix.out" || true
echo

failed=()
for channel in unix tcp shm; do
  if cmp -s "$out/native.out" "$out/$channel.out"; then
    echo "$channel: remoted output matches the native one"
  else
    failed+=("$channel")
    echo "$channel: remoted output differs from the native one:"
    diff -u --label native --label "ava run --channel $channel" \
      "$out/native.out" "$out/$channel.out" || true
    show_stderr "$channel"
  fi
done
if ! grep -qx 'exit status 0' "$out/native.out"; then
  failed+=(native)
  echo "native: demo_app itself failed"
  show_stderr native
fi

# OpenCL: unmodified programs; PoCL runs in the worker.
ocl_prog=$build/tests/opencl/ocl_threads_many_queues
if command -v clinfo >/dev/null && [[ -x $ocl_prog ]]; then
  echo
  echo "OpenCL: clinfo and $(basename "$ocl_prog") natively, then under ava run --channel shm ..."
  # The ICD loader describes itself at the end of clinfo's output; under ava
  # the guest library stands in for the loader, so that section is left out.
  drop_loader() { sed '/^ICD loader properties/,$d' "$1" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'; }
  run clinfo_native clinfo
  run clinfo_shm "$ava" run --channel shm -- clinfo
  run ocl_native "$ocl_prog"
  run ocl_shm "$ava" run --channel shm -- "$ocl_prog"
  printf '\n%-*s%s\n' $((columns / 2 + 2)) "clinfo (native)" "clinfo under ava run --channel shm"
  printf '%*s\n' "$columns" '' | tr ' ' '-'
  diff --side-by-side --expand-tabs --width="$columns" "$out/clinfo_native.out" \
    "$out/clinfo_shm.out" | head -n 40 || true
  echo "    ... ($(wc -l <"$out/clinfo_native.out") lines)"
  if cmp -s <(drop_loader "$out/clinfo_native.out" | grep -v '^exit status') \
    <(drop_loader "$out/clinfo_shm.out" | grep -v '^exit status'); then
    echo "clinfo: remoted output matches the native one (the ICD loader section aside)"
  else
    failed+=(clinfo)
    echo "clinfo: remoted output differs from the native one"
    show_stderr clinfo_shm
  fi
  if cmp -s "$out/ocl_native.out" "$out/ocl_shm.out"; then
    echo "$(basename "$ocl_prog"): remoted output matches the native one:"
    sed 's/^/    /' "$out/ocl_shm.out"
  else
    failed+=(opencl)
    diff -u --label native --label "ava run --channel shm" "$out/ocl_native.out" \
      "$out/ocl_shm.out" || true
    show_stderr ocl_shm
  fi
fi

echo
if [[ ${#failed[@]} -eq 0 ]]; then
  echo "native and remoted outputs match (unix, tcp, shm; OpenCL over shm)"
  exit 0
fi
echo "demo FAILED (${failed[*]})"
exit 1
