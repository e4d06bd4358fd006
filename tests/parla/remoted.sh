#!/usr/bin/env bash
# remoted.sh AVA CHANNEL TEST [ARGS...]: runs a conformance test remoted,
# then checks from the worker's report that the test's calls of spec
# $PARLA_REMOTED_SPEC (default opencl) went to the worker (a test that
# loaded the real library by mistake would leave no session behind).
#   CHANNEL shm|tcp|unix   `ava run --channel CHANNEL` and its private worker
#   CHANNEL quota:BYTES    an `ava worker` of our own whose host configuration
#                          gives each guest BYTES of device memory
#                          ([guest] device_memory), over unix
set -uo pipefail
ava=$1 channel=$2
spec=${PARLA_REMOTED_SPEC:-opencl}
shift 2
dir=$(mktemp -d /tmp/parla-remoted.XXXXXX)
worker_pid=
cleanup() {
  [ -n "$worker_pid" ] && kill "$worker_pid" 2>/dev/null && wait "$worker_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
if [[ $channel == quota:* ]]; then
  printf '[guest]\ndevice_memory = %s\n' "${channel#quota:}" > "$dir/host.toml"
  mkfifo "$dir/ready"
  "$ava" worker --spec opencl --listen "unix:$dir/worker.sock" --ready-fd 3 --report "$dir/report" \
    --host-config "$dir/host.toml" 3> "$dir/ready" &
  worker_pid=$!
  # The worker writes its address once it listens (or exits on an error,
  # which closes the fifo): no polling.
  read -r -t 30 address < "$dir/ready" || { echo "remoted.sh: the worker did not start" >&2; exit 1; }
  AVA_WORKER="unix:$dir/worker.sock" LD_LIBRARY_PATH="$(dirname "$ava")/../lib/ava/guest" "$@"
  rc=$?
  kill "$worker_pid" && wait "$worker_pid" 2>/dev/null
  worker_pid=
  channel="unix (quota ${channel#quota:} bytes)"
else
  "$ava" run --channel "$channel" --report "$dir/report" -- "$@"
  rc=$?
fi
sessions=$(grep -c "spec=$spec " "$dir/report" 2>/dev/null || true)
calls=$(grep -o "spec=$spec .*calls=[0-9]*" "$dir/report" 2>/dev/null | sed 's/.*calls=//' | awk '{s += $1} END {print s + 0}')
echo "remoted.sh: $sessions $spec sessions served over $channel, $calls calls"
if [ "${sessions:-0}" -eq 0 ] || [ "${calls:-0}" -eq 0 ]; then
  echo "remoted.sh: the worker served no $spec calls: the test did not run remoted" >&2
  [ $rc -eq 0 ] && rc=1
fi
exit $rc
