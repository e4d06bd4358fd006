#!/usr/bin/env python3
"""Renumbers the CALLs of recorded worker seeds after a spec change.

cava numbers a spec's functions in the order the spec declares them, so a
function added in the middle shifts the ids of every later one, and a seed
recorded before then calls other functions than the ones its program called.
This maps each CALL's function id through the names of the wire header the
seed was recorded against (OLD) to the ids of the current one (NEW): the
seed calls what its program called again, without a fuzzing build to record
it anew (record_seeds.sh). A function NEW lacks keeps its old id.

usage: remap_seeds.py SPEC_ID OLD_WIRE_H NEW_WIRE_H SEED...
  e.g. remap_seeds.py 2 <(git show c9f6f1b:tests/golden/opencl/opencl_wire.h) \\
         tests/golden/opencl/opencl_wire.h tests/fuzz/corpus/worker_opencl/buffer-0.bin
Seeds are records of a u32 length and a message (tests/fuzz/README.md).
"""
import re
import struct
import sys

MAGIC = 0x31415641  # AVA_MSG_MAGIC, include/ava/wire.h
KIND_CALL = 3  # AVA_MSG_CALL
HEADER = struct.Struct("<IHHII")  # magic, abi_version, kind, spec_id, func_id


def function_ids(path):
    ids = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"#define AVA_\w+_FN_(\w+) (\d+)u", line)
            if m:
                ids[m.group(1)] = int(m.group(2))
    if not ids:
        sys.exit(f"remap_seeds: no function ids in {path}")
    return ids


def remap(data, spec_id, mapping):
    out, pos, changed = bytearray(data), 0, 0
    while pos + 4 <= len(data):
        (length,) = struct.unpack_from("<I", data, pos)
        msg = pos + 4
        if length >= HEADER.size and msg + length <= len(data):
            magic, _abi, kind, spec, func = HEADER.unpack_from(data, msg)
            if magic == MAGIC and kind == KIND_CALL and spec == spec_id and func in mapping:
                new = mapping[func]
                if new != func:
                    struct.pack_into("<I", out, msg + 12, new)
                    changed += 1
        pos = msg + length
    return bytes(out), changed


def main(argv):
    if len(argv) < 5:
        sys.exit(__doc__)
    spec_id = int(argv[1])
    old, new = function_ids(argv[2]), function_ids(argv[3])
    mapping = {old_id: new[name] for name, old_id in old.items() if name in new}
    for path in argv[4:]:
        with open(path, "rb") as f:
            data = f.read()
        out, changed = remap(data, spec_id, mapping)
        if changed:
            with open(path, "wb") as f:
                f.write(out)
        print(f"{path}: {changed} calls renumbered")


if __name__ == "__main__":
    main(sys.argv)
