#!/usr/bin/env bash
# tests/fuzz/record_seeds.sh BUILD_FUZZ_DIR: records the worker fuzzers' seeds
# from real traffic. Runs the OpenCL test programs, clinfo, the demo program
# and the CUDA test programs under `ava run` of a fuzzing build with
# AVA_FUZZ_RECORD, and writes each session to
# tests/fuzz/corpus/worker_<spec>/<program>-<n>.bin. Messages over 128 KiB (bulk
# buffer data) are left out of the seeds to keep the corpus small; the rest of
# the session still replays.
set -euo pipefail
build=$(cd "${1:?usage: record_seeds.sh BUILD_FUZZ_DIR}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
corpus=$root/tests/fuzz/corpus
# Programs not built by clang (clinfo, nvcc's) need its ASan runtime preloaded.
rt=$(clang-14 -print-file-name=libclang_rt.asan-x86_64.so)
export ASAN_OPTIONS=detect_leaks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

record() { # record NAME COMMAND...
  local name=$1
  shift
  rm -rf "$tmp/rec" && mkdir -p "$tmp/rec"
  AVA_FUZZ_RECORD=$tmp/rec timeout 120 "$build/bin/ava" run -- "$@" >"$tmp/out" 2>&1 ||
    echo "record_seeds: $name exited with $? (kept what it sent)" >&2
  python3 - "$tmp/rec" "$corpus" "$name" <<'PY'
import os, struct, sys
src, corpus, name = sys.argv[1:]
for n, f in enumerate(sorted(os.listdir(src))):
    spec = f.split("-")[0]
    data = open(os.path.join(src, f), "rb").read()
    out, pos = bytearray(), 0
    while pos + 4 <= len(data):
        (length,) = struct.unpack_from("<I", data, pos)
        if length <= 131072:
            out += data[pos:pos + 4 + length]
        pos += 4 + length
    d = os.path.join(corpus, "worker_" + spec)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "%s-%d.bin" % (name, n)), "wb").write(out)
PY
}

for p in "$build"/tests/opencl/ocl_*; do
  n=$(basename "$p")
  [[ $n == ocl_bad_handles_expected ]] && continue
  record "${n#ocl_}" "$p"
done
record clinfo env LD_PRELOAD="$rt" clinfo
record demo_app "$build/bin/demo_app"
# The cuda worker plugin runs against the toolkit's stub libcuda.so (no GPU here).
export LD_LIBRARY_PATH=$build/tests/fuzz/cuda-stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for p in "$build"/tests/cuda/cu_*; do
  [[ -x $p && ! -d $p ]] || continue
  n=$(basename "$p")
  record "${n#cu_}" env LD_PRELOAD="$rt" "$p"
done
du -sh "$corpus"/worker_*
