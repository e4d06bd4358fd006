#!/usr/bin/env bash
# Usage: vm/build-image.sh [--build DIR] [--out DIR]
#
# Builds the test guest for the VM path: Debian's kernel (the one matching the
# installed linux-headers-*-amd64, so ava.ko built against those headers
# loads) and an initramfs holding busybox, vm/guest/init, the kernel modules
# the channels need, ava.ko and avactl (when they exist), the `ava` binary with
# the demo worker plugin, the guest libraries, the OpenCL test programs,
# demo_bench and baseline_memcpy (for scripts/bench-vm.sh), clinfo, and every shared library
# those need (copied at the paths the host resolves them to, so RUNPATHs into
# the build tree keep working).
#
#   --build DIR   the ava build tree (default: build)
#   --out DIR     where the image goes (default: BUILD/vm): vmlinux (or
#                 bzImage), initramfs.cpio.gz, image.env; the kernel package
#                 is cached in OUT/cache
#
# AVA_VM_EXTRA_KO: space-separated kernel modules (.ko files, e.g. built by
# the tree's CMake) copied into the guest's /lib/modules/ava-vm as well.
#
# Nothing is installed on the host: the kernel package is fetched with
# `apt-get download` and unpacked with `dpkg -x`.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=build
out=
while (($#)); do
  case $1 in
  --build) build=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  -h | --help) sed -n '2,20s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "build-image: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
build=$(cd "$build" && pwd)
out=${out:-$build/vm}
mkdir -p "$out"
out=$(cd "$out" && pwd)

log() { echo "build-image: $*" >&2; }
die() { log "$*"; exit 1; }

# ---- kernel ---------------------------------------------------------------
kver=${AVA_VM_KVER:-$(ls /usr/src | sed -n 's/^linux-headers-\(.*-amd64\)$/\1/p' | sort -V | tail -n 1)}
[[ -n $kver ]] || die "no linux-headers-*-amd64 in /usr/src (apt-get install linux-headers-amd64)"
kdir=$out/cache/$kver
if [[ ! -f $kdir/root/boot/vmlinuz-$kver ]]; then
  log "fetching linux-image-$kver"
  rm -rf "$kdir" && mkdir -p "$kdir/deb"
  (cd "$kdir/deb" && apt-get download "linux-image-$kver" >/dev/null 2>&1) ||
    die "apt-get download linux-image-$kver failed"
  dpkg -x "$kdir"/deb/linux-image-*.deb "$kdir/root"
  rm -rf "$kdir/deb"
fi
if [[ ! -f $kdir/vmlinux ]]; then
  "$src/vm/extract-vmlinux.sh" "$kdir/root/boot/vmlinuz-$kver" "$kdir/vmlinux" ||
    log "no vmlinux extracted: booting the bzImage (slower)"
fi
rm -f "$out/vmlinux" "$out/bzImage"
if [[ -f $kdir/vmlinux ]]; then
  ln -s "$kdir/vmlinux" "$out/vmlinux"
else
  ln -s "$kdir/root/boot/vmlinuz-$kver" "$out/bzImage"
fi
moddir=$kdir/root/lib/modules/$kver

# ---- ava.ko: objects in OUT/kmod-build, the source tree stays clean -------
# kmod/Makefile's BUILD= is its object directory; a `make` above us (make
# vm-demo BUILD=...) must not hand it ours, hence the clean environment.
kmod_ko=
if [[ -f $src/kmod/Makefile ]]; then
  kb=$out/kmod-build
  rm -rf "$kb"
  if env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u BUILD \
    make -s -C "$src/kmod" BUILD="$kb" KDIR="/usr/src/linux-headers-$kver" \
    >"$out/kmod-build.log" 2>&1 && [[ -f $kb/ava.ko ]]; then
    kmod_ko=$kb/ava.ko
  else
    die "building ava.ko failed (see $out/kmod-build.log)"
  fi
fi
avactl=$(find "$build" -path "$build/vm" -prune -o -type f -name avactl -perm -u+x -print | head -n 1)

# ---- the root tree --------------------------------------------------------
root=$out/root
rm -rf "$root"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,run,etc/ava-vm,lib/modules/ava-vm}

busybox=$(command -v busybox || true)
[[ -n $busybox ]] && ! readelf -l "$busybox" 2>/dev/null | grep -q "program interpreter" ||
  die "busybox-static is needed (apt-get install busybox-static)"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [[ $applet == busybox ]] || ln -sf busybox "$root/bin/$applet"
done
install -m 0755 "$src/vm/guest/init" "$root/init"
install -m 0644 "$src/vm/guest/lib.sh" "$root/etc/ava-vm/lib.sh"

# Modules in load order (dependencies first), from each .ko's own depends field.
declare -A mod_done=()
mod_order=()
add_module() {
  local name=$1 file dep
  [[ -n ${mod_done[$name]:-} ]] && return 0
  mod_done[$name]=1
  file=$(find "$moddir/kernel" -name "$name.ko" -print -quit)
  [[ -n $file ]] || die "kernel module $name not found in $moddir"
  for dep in $(modinfo -F depends "$file" | tr ',' ' '); do
    add_module "$dep"
  done
  cp "$file" "$root/lib/modules/ava-vm/$name.ko"
  mod_order+=("$name")
}
for m in e1000 vsock vmw_vsock_virtio_transport_common vsock_loopback virtio_pci virtio_console; do
  add_module "$m"
done
printf '%s\n' "${mod_order[@]}" >"$root/etc/ava-vm/modules"

# Copies an ELF file and, recursively, the shared libraries it needs as the
# guest will resolve them: programs with LD_LIBRARY_PATH=$resolve_path (the
# guest libraries first), the worker side without it.
declare -A copied=()
guest_lib_dir=$build/lib/ava/guest
resolve_path=$guest_lib_dir
copy_elf() {
  local file dest lib
  file=$(readlink -f "$1")
  dest=$root${2:-$1}
  [[ -n ${copied[$dest]:-} ]] && return 0
  copied[$dest]=1
  mkdir -p "$(dirname "$dest")"
  # Build-tree files carry debug info worth megabytes each: not in the guest.
  if [[ $file == "$build"/* ]]; then
    objcopy --strip-debug "$file" "$dest"
  else
    cp "$file" "$dest"
  fi
  for lib in $(LD_LIBRARY_PATH=$resolve_path ldd "$file" 2>/dev/null |
    sed -n -e 's/.*=> \(\/[^ ]*\) (0x.*/\1/p' -e 's/^[[:space:]]*\(\/[^ ]*\) (0x.*/\1/p'); do
    copy_elf "$lib"
  done
}

programs=()
need() { [[ -e $1 ]] || die "missing $1 (build the targets first: ${2:-})"; }
need "$build/bin/ava" "ava"
need "$build/lib/ava/worker/libava_worker_demo.so" "ava_worker_demo"
resolve_path=
copy_elf "$build/bin/ava"
copy_elf "$build/lib/ava/worker/libava_worker_demo.so"
resolve_path=$guest_lib_dir
for lib in libOpenCL.so.1 libdemo.so.1; do
  need "$guest_lib_dir/$lib" "ava_guest_opencl ava_guest_demo"
  copy_elf "$guest_lib_dir/$lib"
done
# test_transport_vsock_loopback: the vsock round trip a host may not run
# (test_vm_channels runs it in the guest).
for p in "$build"/bin/demo_app "$build"/bin/demo_probe "$build"/bin/demo_bench \
  "$build"/bin/baseline_memcpy "$build"/bin/test_transport_vsock_loopback \
  "$build"/tests/opencl/ocl_* \
  "$build"/tests/vm/guest/*; do
  [[ -f $p && -x $p ]] || continue
  copy_elf "$p"
  programs+=("$p")
done
clinfo=$(command -v clinfo || true)
[[ -n $clinfo ]] && copy_elf "$clinfo" && programs+=("$clinfo")
[[ -n $kmod_ko ]] && cp "$kmod_ko" "$root/lib/modules/ava-vm/ava.ko"
extra_ko=()
for ko in ${AVA_VM_EXTRA_KO:-}; do
  # Not fatal: the other VM tests need no extra modules; the test that does checks image.env.
  if [[ ! -f $ko ]]; then
    log "AVA_VM_EXTRA_KO names $ko, which does not exist: not in the image"
    continue
  fi
  cp "$ko" "$root/lib/modules/ava-vm/"
  extra_ko+=("$(basename "$ko" .ko)")
done
[[ -n $avactl ]] && copy_elf "$avactl" /bin/avactl
# The loader is found through PT_INTERP, which ldd shows without "=>" on Debian.
[[ -e $root/lib64/ld-linux-x86-64.so.2 ]] || copy_elf /lib64/ld-linux-x86-64.so.2

# What the guest has where: sourced by /init and by the host-side tests.
{
  echo "AVA_VM_KVER=$kver"
  echo "AVA_VM_BUILD=$build"
  echo "AVA_VM_BIN=$build/bin/ava"
  echo "AVA_VM_GUEST_LIB_DIR=$guest_lib_dir"
  echo "AVA_VM_PLUGIN_DIR=$build/lib/ava/worker"
  echo "AVA_VM_OCL_DIR=$build/tests/opencl"
  echo "AVA_VM_CLINFO=$clinfo"
  echo "AVA_VM_HAVE_KMOD=$([[ -n $kmod_ko ]] && echo 1 || echo 0)"
  echo "AVA_VM_HAVE_AVACTL=$([[ -n $avactl ]] && echo 1 || echo 0)"
  echo "AVA_VM_EXTRA_KO=\"${extra_ko[*]}\""
} >"$root/etc/ava-vm/image.env"
cp "$root/etc/ava-vm/image.env" "$out/image.env"

(cd "$root" && find . -print0 | LC_ALL=C sort -z |
  cpio --null -o -H newc -R 0:0 --quiet | gzip -1 >"$out/initramfs.cpio.gz.tmp")
mv "$out/initramfs.cpio.gz.tmp" "$out/initramfs.cpio.gz"
log "image in $out: kernel $kver, $(du -h "$out/initramfs.cpio.gz" | cut -f1) initramfs," \
  "ava.ko: $([[ -n $kmod_ko ]] && echo yes || echo no), avactl: $([[ -n $avactl ]] && echo yes || echo no)"
