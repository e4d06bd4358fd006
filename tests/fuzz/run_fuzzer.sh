#!/bin/sh
# run_fuzzer.sh HARNESS CORPUS_DIR [libFuzzer flags...]
# Runs a libFuzzer harness over its checked-in corpus with a fixed seed. New
# inputs go to a scratch directory, never into the corpus; a crash, leak,
# timeout or sanitizer report fails (exit 1) and leaves the input that
# caused it in ./fuzz-artifacts. Exits 77 (skipped) only when the harness
# says so itself.
set -u
harness=$1
corpus=$2
shift 2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ava-fuzz-XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
mkdir -p fuzz-artifacts
name=$(basename "$harness")
"$harness" -seed=1 -timeout=60 -rss_limit_mb=4096 -error_exitcode=1 -timeout_exitcode=1 \
  -artifact_prefix="fuzz-artifacts/$name-" -print_final_stats=1 "$@" "$scratch" "$corpus"
rc=$?
case $rc in
0 | 77) exit $rc ;;
*) echo "run_fuzzer.sh: $name failed (exit $rc); inputs in fuzz-artifacts/" >&2; exit 1 ;;
esac
