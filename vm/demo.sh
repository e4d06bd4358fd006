#!/usr/bin/env bash
# Usage: vm/demo.sh [BUILD_DIR] (what `make vm-demo` runs)
#
# Boots the test guest with an ava device served by `ava vmhost` (PoCL in the
# host's workers), loads ava.ko in it and runs clinfo and an OpenCL program
# there over /dev/ava; prints the native and the in-guest outputs.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
image=$build/vm
program=$build/tests/opencl/ocl_buffer
slots=4

"$src/vm/build-image.sh" --build "$build" --out "$image"
. "$image/image.env"
if [[ $AVA_VM_HAVE_KMOD != 1 ]]; then
  echo "vm-demo: the image has no ava.ko (kmod/ is missing from this tree)" >&2
  exit 1
fi

work=$(mktemp -d /tmp/ava-vm-demo.XXXXXX)
vmhost_pid=
cleanup() {
  [[ -n $vmhost_pid ]] && kill "$vmhost_pid" 2>/dev/null && wait "$vmhost_pid" 2>/dev/null
  true
}
trap cleanup EXIT

# The ivshmem server must listen before QEMU connects to it.
mkfifo "$work/ready"
"$build/bin/ava" vmhost --socket "$work/ivshmem.sock" --slots "$slots" --ready-fd 3 \
  3>"$work/ready" >"$work/vmhost.log" 2>&1 &
vmhost_pid=$!
if ! read -r -t 30 state _ _ <"$work/ready" || [[ $state != ready ]]; then
  echo "vm-demo: ava vmhost did not start:" >&2
  cat "$work/vmhost.log" >&2
  exit 1
fi

cat >"$work/job.sh" <<JOB
insmod /lib/modules/ava-vm/ava.ko || echo "vm-demo: insmod ava.ko failed"
export LD_LIBRARY_PATH=$AVA_VM_GUEST_LIB_DIR AVA_WORKER=kmod:/dev/ava
ava_check clinfo 300 $AVA_VM_CLINFO
ava_check program 300 $program
JOB

echo "vm-demo: booting the guest (logs in $work)" >&2
start=$(date +%s)
"$src/vm/run-vm.sh" --image "$image" --job "$work/job.sh" --out "$work" --timeout 600 \
  --ivshmem "$work/ivshmem.sock" --vectors $((slots + 1)) || true
echo "vm-demo: guest ran for $(($(date +%s) - start)) s" >&2

# One result block of results.log (vm/guest/lib.sh framing).
block() { # name stream
  awk -v b="@@AVA-BEGIN $1 $2@@" -v e="@@AVA-END $1 $2@@" '
    $0 == e { on = 0 } on { print } $0 == b { on = 1 }' "$work/results.log"
}
status() { sed -n "s/^@@AVA-RC $1 \\(.*\\)@@\$/\\1/p" "$work/results.log"; }

show() { # title name native-argv...
  local title=$1 name=$2
  shift 2
  echo "================ $title: native on the host"
  "$@" >"$work/$name.native" 2>&1 || true
  cat "$work/$name.native"
  echo "================ $title: in the guest over kmod:/dev/ava (exit status $(status "$name"))"
  block "$name" out | tee "$work/$name.guest"
  block "$name" err
  # The block ends with the newline the guest adds after the output.
  if diff -q <(cat "$work/$name.native"; echo) "$work/$name.guest" >/dev/null; then
    echo "================ $title: identical"
  else
    echo "================ $title: differs (clinfo's ICD loader lines differ by design):"
    diff <(cat "$work/$name.native"; echo) "$work/$name.guest" || true
  fi
}
show clinfo clinfo "$AVA_VM_CLINFO"
show "$(basename "$program")" program "$program"
if grep -E 'BUG:|WARNING:|Oops|lockdep|Call Trace' "$work/results.log" >&2; then
  echo "vm-demo: the guest kernel reported problems" >&2
  exit 1
fi
[[ $(status clinfo) == 0 && $(status program) == 0 ]]
