#!/usr/bin/env bash
# Runs demo_app natively and under `ava run` over the unix, tcp and shm channels,
# shows the native and remoted outputs side by side, and checks that they are
# identical (exit status included).
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

echo
if [[ ${#failed[@]} -eq 0 ]]; then
  echo "native and remoted outputs match (unix, tcp, shm)"
  exit 0
fi
echo "demo FAILED (${failed[*]})"
exit 1
