# Shell functions of the ava test guest (busybox sh), sourced by /init; the
# host's job script (/job.sh) runs in the same shell and uses them.
#
# Results travel on /dev/ttyS1 (raw, so bytes arrive unchanged) as blocks:
#   @@AVA-BEGIN <name> <stream>@@\n<bytes>\n@@AVA-END <name> <stream>@@\n
#   @@AVA-RC <name> <exit status>@@\n          (124: killed by its timeout)
#   @@AVA-SYNC <name>@@\n                      (ava_sync: waiting for the host)
#   @@AVA-DONE@@\n                             (the job finished)
# The newline before END is always added by the guest: the block's bytes are
# exactly the program's output.

. /etc/ava-vm/image.env
AVA_VM_RESULTS=/dev/ttyS1
AVA_VM_WORK=/tmp/ava-vm
AVA_VM_GUEST_IP=10.0.2.15
AVA_VM_HOST_IP=10.0.2.2

# The raw bytes of a file as one block.
ava_emit() { # name stream file
  {
    printf '@@AVA-BEGIN %s %s@@\n' "$1" "$2"
    cat "$3"
    printf '\n@@AVA-END %s %s@@\n' "$1" "$2"
  } >>"$AVA_VM_RESULTS"
}

# A one-line value (e.g. a setup step's outcome) as a block.
ava_note() { # name text...
  local name=$1
  shift
  printf '%s' "$*" >"$AVA_VM_WORK/note"
  ava_emit "$name" out "$AVA_VM_WORK/note"
}

# Runs a command with a time bound and reports its stdout, stderr and status.
ava_check() { # name timeout_s command [args...]
  local name=$1 limit=$2 rc
  shift 2
  timeout "$limit" "$@" >"$AVA_VM_WORK/$name.out" 2>"$AVA_VM_WORK/$name.err" </dev/null
  rc=$?
  ava_emit "$name" out "$AVA_VM_WORK/$name.out"
  ava_emit "$name" err "$AVA_VM_WORK/$name.err"
  printf '@@AVA-RC %s %d@@\n' "$name" "$rc" >>"$AVA_VM_RESULTS"
  return $rc
}

# Tells the host the job reached point `name` (a line on the results port)
# and waits, bounded, for the host's go-ahead: one line on the virtio-serial
# port ava.0 once the host has done its part (killed a worker, ...).
ava_sync() { # name [timeout_s]
  local port line n=${2:-120}
  # The port stays open from the first sync on: closing it would drop a
  # go-ahead that arrived in between.
  if [ -z "$AVA_VM_SYNC_FD" ]; then
    for port in /sys/class/virtio-ports/*; do
      [ "$(cat "$port/name" 2>/dev/null)" = ava.0 ] && exec 4<"/dev/${port##*/}" &&
        AVA_VM_SYNC_FD=4
    done
  fi
  printf '@@AVA-SYNC %s@@\n' "$1" >>"$AVA_VM_RESULTS"
  [ -n "$AVA_VM_SYNC_FD" ] || return 1
  # A read returns at once (end of file) while the host is not connected.
  while [ "$n" -gt 0 ]; do
    if read -r -t 1 line <&4; then
      [ "$line" = go ] && return 0
    else
      sleep 0.1
    fi
    n=$((n - 1))
  done
  return 1
}

# ava_check in the background: ava_finish waits for it and reports it. The
# command's pid (busybox timeout runs it in its own process) is in
# $AVA_VM_WORK/<name>.pid.
ava_start() { # name timeout_s command [args...]
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$AVA_VM_WORK/$name.out" 2>"$AVA_VM_WORK/$name.err" </dev/null &
  echo $! >"$AVA_VM_WORK/$name.pid"
}

ava_finish() { # name
  local rc
  wait "$(cat "$AVA_VM_WORK/$1.pid")"
  rc=$?
  ava_emit "$1" out "$AVA_VM_WORK/$1.out"
  ava_emit "$1" err "$AVA_VM_WORK/$1.err"
  printf '@@AVA-RC %s %d@@\n' "$1" "$rc" >>"$AVA_VM_RESULTS"
}

ava_load_modules() {
  local m
  for m in $(cat /etc/ava-vm/modules); do
    insmod "/lib/modules/ava-vm/$m.ko" || echo "ava-vm: insmod $m failed"
  done
}

ava_net_up() {
  ip link set lo up
  ip link set eth0 up &&
    ip addr add "$AVA_VM_GUEST_IP/24" dev eth0 &&
    ip route add default via "$AVA_VM_HOST_IP"
}

# Retries a command every 0.1 s until it succeeds, at most `tries` times.
ava_wait_for() { # tries command [args...]
  local n=$1
  shift
  while [ "$n" -gt 0 ]; do
    "$@" && return 0
    n=$((n - 1))
    sleep 0.1
  done
  return 1
}

ava_vm_main() {
  mkdir -p "$AVA_VM_WORK"
  stty -F "$AVA_VM_RESULTS" raw -echo 2>/dev/null
  ava_load_modules
  ava_net_up || echo "ava-vm: network setup failed"
  ava_note boot "$(cut -d' ' -f1 /proc/uptime)"
  if [ -f /job.sh ]; then
    (cd "$AVA_VM_WORK" && . /job.sh)
  fi
  dmesg >"$AVA_VM_WORK/dmesg.txt"
  ava_emit dmesg out "$AVA_VM_WORK/dmesg.txt"
  printf '@@AVA-DONE@@\n' >>"$AVA_VM_RESULTS"
  sync
  poweroff -f
}
