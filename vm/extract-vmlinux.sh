#!/usr/bin/env bash
# Usage: vm/extract-vmlinux.sh BZIMAGE OUT
# Writes the ELF kernel (vmlinux) packed inside an x86 bzImage to OUT. QEMU
# boots that ELF through its PVH entry point, which skips the real-mode setup
# and the in-guest decompression (about half the boot time under TCG).
#
# A bzImage holds the kernel as one compressed stream somewhere after the
# setup code; we look for each compressor's magic bytes, decompress from every
# hit, and keep the first output that is an ELF file.
set -euo pipefail

if (($# != 2)); then
  echo "usage: $0 BZIMAGE OUT" >&2
  exit 2
fi
image=$1
out=$2
tmp=$(mktemp "${out}.XXXXXX")
trap 'rm -f "$tmp"' EXIT

# magic (grep -P byte pattern) and the command that decompresses stdin to stdout
# (trailing bytes after the stream are expected: errors are ignored, the ELF
# check decides).
formats=(
  '\xfd\x37\x7a\x58\x5a\x00|xz -dc --single-stream'
  '\x28\xb5\x2f\xfd|zstd -dc'
  '\x1f\x8b\x08|gzip -dc'
  '\x02\x21\x4c\x18|lz4 -dc'
  '\x42\x5a\x68|bzip2 -dc'
  '\x5d\x00\x00\x00|xz -dc --format=lzma'
)

is_elf() {
  [[ -s $1 ]] && [[ $(head -c 4 "$1" | od -An -tx1 | tr -d ' \n') == 7f454c46 ]]
}

export LC_ALL=C
for entry in "${formats[@]}"; do
  magic=${entry%%|*}
  decompress=${entry#*|}
  command -v "${decompress%% *}" >/dev/null 2>&1 || continue
  # A few hits at most: the stream's start, plus chance matches in the setup code.
  while IFS=: read -r offset _; do
    tail -c "+$((offset + 1))" "$image" | $decompress >"$tmp" 2>/dev/null || true
    if is_elf "$tmp"; then
      chmod 0644 "$tmp"
      mv "$tmp" "$out"
      exit 0
    fi
  done < <(grep -obUaP "$magic" "$image" | head -n 16)
done
echo "$0: no compressed ELF kernel found in $image" >&2
exit 1
