#!/usr/bin/env bash
# Installs the Debian 12 packages ava needs to build and test. Idempotent and
# quiet when everything is already there; uses apt-get as root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libclang-14-dev libclang-common-14-dev clang-format-14 clang-tidy-14
  # The libFuzzer harnesses (build-fuzz, tests/fuzz): clang and its fuzzer runtime
  clang-14 libclang-rt-14-dev
  libcriterion-dev liburing-dev
  # The task runtime's trace test parses JSON
  nlohmann-json3-dev
  # Configuration files: toml++ (header-only, compiled into the guest library)
  libtomlplusplus-dev
  # OpenCL: headers, the ICD loader, PoCL (the real device on the CPU), clinfo
  opencl-headers ocl-icd-opencl-dev pocl-opencl-icd clinfo
  # CUDA fat binaries: CUDA 13 compresses entries with zstd, or with LZ4
  # (--compress-mode=speed)
  libzstd-dev liblz4-dev
  # The VM path: QEMU, the guest kernel's headers (ava.ko), the guest image
  # (busybox-static, cpio, kmod's modinfo, xz for the kernel), avactl (libnl)
  qemu-system-x86 qemu-utils linux-headers-amd64 busybox-static cpio kmod xz-utils
  libnl-genl-3-dev
  # The task benchmark's anchors (bench/tasks): oneTBB flow graph and StarPU
  # (OpenMP is GCC's libgomp, part of build-essential)
  libtbb-dev libstarpu-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
((${#missing[@]} == 0)) && exit 0

echo "ava: installing ${missing[*]}" >&2
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "ava: missing packages (${missing[*]}) and no root to install them" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
