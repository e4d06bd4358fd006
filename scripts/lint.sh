#!/usr/bin/env bash
# `make lint`: clang-tidy-14 with the repository's .clang-tidy over the
# hand-written C++ (cava, shim, transport, worker, tools) and the generated
# guest and worker sources of a configured build (BUILD/gen, made here by the
# ava_gen_* targets first). Any finding fails. Slow: minutes per core.
# Usage: scripts/lint.sh [BUILD] [FILE...]   (FILEs: only those)
# LINT_JOBS=N runs N clang-tidy processes at once (default: all cores).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
build=${1:-build}
shift || true
db=$build/compile_commands.json
tidy=clang-tidy-14
command -v "$tidy" >/dev/null || {
  echo "lint: $tidy not found (scripts/install-deps.sh installs it)" >&2
  exit 1
}
[[ -f $db ]] || {
  echo "lint: $db not found: configure $build first (make build, or cmake -S . -B $build)" >&2
  exit 1
}
db_abs=$(cd "$build" && pwd)

# Only what the build compiles has the flags clang-tidy needs.
in_db() { grep -qF "\"file\": \"$1\"" "$db"; }

files=()
if (($# > 0)); then
  for f in "$@"; do files+=("$(realpath "$f")"); done
else
  mapfile -t gen_targets < <(ninja -C "$build" -t targets all |
                             sed -n 's/^\(ava_gen_[A-Za-z0-9_]*\): phony$/\1/p')
  if ((${#gen_targets[@]} > 0)); then
    cmake --build "$build" --target "${gen_targets[@]}" >/dev/null
  fi
  while IFS= read -r f; do
    files+=("$root/$f")
  done < <(git ls-files -- 'cava/*.cpp' 'shim/*.cpp' 'transport/*.cpp' 'worker/*.cpp' 'tools/*.cpp')
  while IFS= read -r f; do
    files+=("$f")
  done < <(sed -n 's/^ *"file": "\(.*\/gen\/[^"]*_\(guest\|worker\)\.c\)",\{0,1\}$/\1/p' "$db" | sort -u)
fi

checked=()
for f in "${files[@]}"; do
  if in_db "$f"; then
    checked+=("$f")
  else
    echo "lint: skipping ${f#"$root"/} (not compiled in $build)" >&2
  fi
done
((${#checked[@]} > 0)) || { echo "lint: nothing to check" >&2; exit 0; }
echo "lint: clang-tidy on ${#checked[@]} files" >&2

jobs=${LINT_JOBS:-$(nproc)}
if command -v run-clang-tidy-14 >/dev/null; then
  # run-clang-tidy takes regular expressions; anchor each path.
  patterns=()
  for f in "${checked[@]}"; do patterns+=("^$(printf '%s' "$f" | sed 's/[.[\*^$+?(){}|]/\\&/g')\$"); done
  exec run-clang-tidy-14 -clang-tidy-binary "$(command -v "$tidy")" -p "$db_abs" -quiet \
       -j "$jobs" "${patterns[@]}"
fi
rc=0
for f in "${checked[@]}"; do
  "$tidy" -p "$db_abs" --quiet "$f" || rc=1
done
exit $rc
