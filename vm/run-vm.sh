#!/usr/bin/env bash
# Usage: vm/run-vm.sh [options] [-- extra QEMU arguments]
#
# Boots the test guest built by vm/build-image.sh, runs a job script in it and
# waits until it powers off (or the time limit ends it).
#
#   --image DIR       the image (default: build/vm)
#   --job FILE        shell script the guest runs as /job.sh (lib.sh functions
#                     available); without one the guest boots and powers off
#   --out DIR         console.log (ttyS0, the kernel's), results.log (ttyS1, the
#                     job's framed results) and the job's initrd go here
#                     (default: a new directory under /tmp, printed)
#   --timeout SEC     wall-clock limit of QEMU (default 300); exit status 124
#   --ivshmem SOCK    an ivshmem-doorbell device served by the ivshmem server
#                     (`ava vmhost`) listening on SOCK
#   --vectors N       its interrupt vectors (default 5: 1 + 4 slots)
#   --serial-connect PATH
#                     QEMU connects the port ava.0 to the unix socket PATH
#                     (an `ava worker --listen unix:PATH`) and reconnects
#                     after each session, instead of listening on
#                     OUT/ava.0.sock; the job's ava_sync has no host then
#   --mem MB          guest memory (default 1024)
#   --smp N           guest CPUs (default 1)
#   --accel A         kvm, tcg or auto (default: $AVA_VM_ACCEL, else auto:
#                     KVM only if a short probe boot under KVM works)
#   --cmdline ARGS    more kernel command line (e.g. "slub_debug=FZPU
#                     panic_on_warn=1"), after the defaults
#
# The guest also gets QEMU user networking (the host's 127.0.0.1:PORT is
# 10.0.2.2:PORT in the guest) and a virtio-serial port named ava.0 whose host
# end is the socket OUT/ava.0.sock (QEMU listens), or PATH with --serial-connect.
# Exit status: QEMU's (0 after the guest's poweroff), 124 on the time limit.
set -euo pipefail

image=build/vm
job=
out=
limit=300
ivshmem=
vectors=5
serial_connect=
mem=1024
smp=1
accel=${AVA_VM_ACCEL:-auto}
cmdline=
extra=()
while (($#)); do
  case $1 in
  --image) image=$2; shift 2 ;;
  --job) job=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  --timeout) limit=$2; shift 2 ;;
  --ivshmem) ivshmem=$2; shift 2 ;;
  --vectors) vectors=$2; shift 2 ;;
  --serial-connect) serial_connect=$2; shift 2 ;;
  --mem) mem=$2; shift 2 ;;
  --smp) smp=$2; shift 2 ;;
  --accel) accel=$2; shift 2 ;;
  --cmdline) cmdline=$2; shift 2 ;;
  --) shift; extra=("$@"); break ;;
  -h | --help) sed -n '2,32s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "run-vm: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

die() { echo "run-vm: $*" >&2; exit 1; }
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
[[ -f $image/initramfs.cpio.gz ]] || die "no image in $image (run vm/build-image.sh)"
kernel=$image/vmlinux
[[ -e $kernel ]] || kernel=$image/bzImage
[[ -e $kernel ]] || die "no kernel in $image"
if [[ -z $out ]]; then
  out=$(mktemp -d /tmp/ava-vm.XXXXXX)
  echo "run-vm: output in $out" >&2
fi
mkdir -p "$out"
rm -f "$out/console.log" "$out/results.log" "$out/ava.0.sock"

# The job travels as a second cpio archive appended to the image's: the
# kernel unpacks concatenated archives in order, so no image rebuild per job.
initrd=$out/initrd.img
if [[ -n $job ]]; then
  jobdir=$(mktemp -d)
  install -m 0755 "$job" "$jobdir/job.sh"
  (cd "$jobdir" && echo job.sh | cpio -o -H newc -R 0:0 --quiet | gzip -1) >"$out/job.cpio.gz"
  rm -rf "$jobdir"
  cat "$image/initramfs.cpio.gz" "$out/job.cpio.gz" >"$initrd"
else
  initrd=$image/initramfs.cpio.gz
fi

qemu_args() { # accel console results initrd
  local cpu=max
  [[ $1 == kvm ]] && cpu=host
  printf '%s\n' -accel "$1" -cpu "$cpu" -smp "$smp" -m "$mem" \
    -nographic -no-reboot -nodefaults -display none -monitor none \
    -kernel "$kernel" -initrd "$4" \
    -append "console=ttyS0 loglevel=5 panic=-1 tsc=reliable${cmdline:+ $cmdline}" \
    -serial "file:$2" -serial "file:$3" \
    -netdev user,id=n0 -device e1000,netdev=n0,romfile=
}

# KVM is used only where it boots this kernel: some hosts have a /dev/kvm that
# cannot run stock kernels. The verdict is cached next to the image.
probe_kvm() {
  local cache dir verdict=tcg
  cache=$image/accel.$(uname -n)
  if [[ -f $cache ]]; then
    cat "$cache"
    return
  fi
  if [[ -r /dev/kvm && -w /dev/kvm ]]; then
    dir=$(mktemp -d)
    mapfile -t args < <(qemu_args kvm "$dir/console.log" "$dir/results.log" "$image/initramfs.cpio.gz")
    if timeout 20 qemu-system-x86_64 "${args[@]}" >/dev/null 2>&1 </dev/null &&
      grep -q '@@AVA-DONE@@' "$dir/results.log" 2>/dev/null; then
      verdict=kvm
    fi
    rm -rf "$dir"
  fi
  echo "$verdict" | tee "$cache"
}
case $accel in
auto) accel=$(probe_kvm) ;;
kvm | tcg) ;;
*) die "--accel must be kvm, tcg or auto" ;;
esac

mapfile -t args < <(qemu_args "$accel" "$out/console.log" "$out/results.log" "$initrd")
# A worker's session ends with the guest process's: reconnect=1 brings the
# port back (after a second) for the next one.
vs0="socket,id=vs0,path=$out/ava.0.sock,server=on,wait=off"
if [[ -n $serial_connect ]]; then
  vs0="socket,id=vs0,path=$serial_connect,reconnect=1"
fi
args+=(-device virtio-serial-pci -chardev "$vs0" -device "virtserialport,chardev=vs0,name=ava.0")
if [[ -n $ivshmem ]]; then
  args+=(-chardev "socket,id=ivs,path=$ivshmem" -device "ivshmem-doorbell,chardev=ivs,vectors=$vectors")
fi
echo "$accel" >"$out/accel"
rc=0
timeout --kill-after=5 "$limit" qemu-system-x86_64 "${args[@]}" "${extra[@]}" </dev/null \
  >"$out/qemu.log" 2>&1 || rc=$?
if ((rc == 124 || rc == 137)); then
  echo "run-vm: the guest did not finish within ${limit}s (console: $out/console.log)" >&2
  exit 124
fi
if ((rc != 0)); then
  echo "run-vm: qemu exited with $rc:" >&2
  tail -n 20 "$out/qemu.log" >&2
fi
exit "$rc"
