#!/usr/bin/env bash
# Builds the kernel-mode output of a spec with Kbuild against installed kernel
# headers, -Werror (the generated Kbuild sets it):
#
#   kbuild_spec.sh module CAVA SRC OUT SPEC [INCLUDE_DIR...]
#       cava SPEC into OUT (a fresh directory), then the module ava_<id>.ko there
#   kbuild_spec.sh header CAVA SRC OUT SPEC [INCLUDE_DIR...]
#       only a small caller module that includes <id>_kern.h and <id>_cmds.h
#       (for specs whose stubs are not kernel code yet: the API types still must be)
#
# SRC is the ava source tree; SPEC and relative INCLUDE_DIRs are relative to it.
# KDIR overrides the kernel headers (default: the running kernel's, else the
# newest /usr/src/linux-headers-*-amd64). When ava.ko exports the kcall runtime
# (EXPORT_SYMBOL_GPL(ava_kcall_invoke) in kmod/*.c), kmod is built into
# OUT/kmod and its Module.symvers resolves the module's imports; before that,
# KBUILD_MODPOST_WARN=1 lets modpost pass them. Exit 77: no kernel headers.
set -euo pipefail

if [[ $# -lt 5 ]]; then
  echo "usage: $0 module|header CAVA SRC OUT SPEC [INCLUDE_DIR...]" >&2
  exit 2
fi
mode=$1 cava=$2 src=$3 out=$4 spec=$5
shift 5

kdir=${KDIR:-}
if [[ -z $kdir && -d /lib/modules/$(uname -r)/build ]]; then
  kdir=/lib/modules/$(uname -r)/build
fi
if [[ -z $kdir ]]; then
  kdir=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1 || true)
fi
if [[ -z $kdir || ! -f $kdir/Makefile ]]; then
  echo "SKIPPED: no kernel headers installed (apt-get install linux-headers-amd64, or set KDIR)"
  exit 77
fi

incs=()
for dir in "$@"; do
  [[ $dir == /* ]] || dir=$src/$dir
  incs+=("-I$dir")
done
rm -rf "$out"
mkdir -p "$out"
"$cava" "${incs[@]}" --name-as "$spec" -o "$out" "$src/$spec"
id=$(sed -n 's/^obj-m := ava_\(.*\)\.o$/\1/p' "$out/Kbuild")
[[ -n $id ]] || { echo "FAIL: no obj-m line in $out/Kbuild" >&2; exit 1; }

symbols=()
if [[ $mode == header ]]; then
  # The caller imports the stubs of a module that is not built here.
  symbols=(KBUILD_MODPOST_WARN=1)
elif grep -qs 'EXPORT_SYMBOL_GPL(ava_kcall_invoke)' "$src"/kmod/*.c; then
  make -s -C "$src/kmod" KDIR="$kdir" BUILD="$out/kmod"
  symbols=(KBUILD_EXTRA_SYMBOLS="$out/kmod/Module.symvers")
else
  echo "note: kmod does not export the kcall runtime yet: modpost only warns (KBUILD_MODPOST_WARN=1)"
  symbols=(KBUILD_MODPOST_WARN=1)
fi

if [[ $mode == header ]]; then
  # A caller of the API: one call of the first exported stub, the command table.
  first=$(sed -n 's/^EXPORT_SYMBOL_GPL(\(.*\));$/\1/p' "$out/${id}_kern.c" | head -n 1)
  cat >"$out/ava_check_caller.c" <<EOF
#include <linux/module.h>
#include "${id}_kern.h"
#include "${id}_cmds.h"
static int __init ava_check_init(void)
{
	pr_info("ava check: %ps\\n", &${first});
	return ava_cmd_lookup(&ava_${id}_cmd_table, 1) != NULL ? 0 : -EINVAL;
}
module_init(ava_check_init);
MODULE_LICENSE("Dual MIT/GPL");
EOF
  sed -i "s/^obj-m := .*/obj-m := ava_check_caller.o/; /^ava_${id}-y/d" "$out/Kbuild"
fi

make -C "$kdir" M="$out" AVA_ROOT="$src" "${symbols[@]}" modules
if [[ $mode == module ]]; then
  ko=$out/ava_$id.ko
  [[ -f $ko ]] || { echo "FAIL: $ko was not built" >&2; exit 1; }
  want=$(grep -c '^EXPORT_SYMBOL_GPL(' "$out/${id}_kern.c" || true)
  exported=$(awk -v m="$out/ava_$id" '$3 == m && $4 == "EXPORT_SYMBOL_GPL"' "$out/Module.symvers" | wc -l)
  echo "built $ko: $exported of $want stubs exported"
  [[ $exported -gt 0 && $exported -eq $want ]] || { echo "FAIL: $ko exports $exported, want $want" >&2; exit 1; }
else
  [[ -f $out/ava_check_caller.ko ]] || { echo "FAIL: the caller module was not built" >&2; exit 1; }
  echo "built $out/ava_check_caller.ko against ${id}_kern.h"
fi
