#!/usr/bin/env bash
# remoted.sh AVA CHANNEL TEST [ARGS...]: runs a conformance test under
# `ava run --channel CHANNEL`, then checks from the private worker's report
# that the test's OpenCL calls went to the worker (a test that loaded the
# real library by mistake would leave no session behind).
set -uo pipefail
ava=$1 channel=$2
shift 2
dir=$(mktemp -d /tmp/parla-remoted.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$ava" run --channel "$channel" --report "$dir/report" -- "$@"
rc=$?
sessions=$(grep -c 'spec=opencl' "$dir/report" 2>/dev/null || true)
calls=$(grep -o 'spec=opencl .*calls=[0-9]*' "$dir/report" 2>/dev/null | sed 's/.*calls=//' | awk '{s += $1} END {print s + 0}')
echo "remoted.sh: $sessions OpenCL sessions served over $channel, $calls calls"
if [ "${sessions:-0}" -eq 0 ] || [ "${calls:-0}" -eq 0 ]; then
  echo "remoted.sh: the worker served no OpenCL calls: the test did not run remoted" >&2
  [ $rc -eq 0 ] && rc=1
fi
exit $rc
