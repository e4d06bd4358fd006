#!/usr/bin/env python3
"""Writes the hand-built seeds of tests/fuzz/corpus (those not recorded from
real traffic): shm_ring, guest_reply, cava (copies of the specs) and fatbin
(nvcc output of tests/cuda/kernels.cu, from a build directory that has
tests/cuda). Deterministic: running it again rewrites the same files.

usage: tests/fuzz/make_seeds.py [BUILD_DIR]
"""
import os
import shutil
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")

MSG_MAGIC = 0x31415641
ABI_VERSION = 1
REGION_MAGIC = 0x4E474941
KIND = {"HELLO": 1, "HELLO_ACK": 2, "CALL": 3, "REPLY": 4, "CALLBACK": 5, "CALLBACK_DONE": 6,
        "GOODBYE": 7}
BUF_PRESENT, BUF_IN, BUF_OUT = 1, 2, 4
REC_PAD, REC_MSG, REC_PART, REC_END = 1, 2, 3, 4


def write(sub, name, data):
    d = os.path.join(CORPUS, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def header(kind, spec_id=0, func_id=0, args_len=0, payload_len=0, thread_id=1, seq=0,
           call_id=0, flags=0, status=0):
    total = 64 + args_len + payload_len
    return struct.pack("<IHHIIQQQQIIiI", MSG_MAGIC, ABI_VERSION, kind, spec_id, func_id, total,
                       thread_id, seq, call_id, args_len, flags, status, 0)


def record(msg):
    return struct.pack("<I", len(msg)) + msg


def desc(offset, length, flags):
    return struct.pack("<QQII", offset, length, flags, 0)


def span(n):
    return (n + 8) & ~7


def shm_ring_seeds():
    # mode byte, region header (+ file size), 8 peer indices, ring bytes.
    def region(ring, heap=0, state=1, features=1):
        total = 4096 + 2 * ring + heap
        hdr = struct.pack("<IIIIQQQQQQQQQ", REGION_MAGIC, 1, features, state, total, 4096, ring,
                          4096 + ring, ring, 4096 + 2 * ring if heap else 0, heap, 100, 0)
        hdr += bytes(40) + bytes(256)  # reserved, cmd and reply ring_ctl
        return hdr + struct.pack("<Q", total)

    def rec(kind, body):
        return struct.pack("<II", kind, len(body)) + body + bytes(-len(body) % 8)

    msg = header(KIND["CALL"], 1, 0, 8, 0, flags=1) + bytes(8)
    whole = rec(REC_MSG, msg)
    parts = rec(REC_PART, msg[:40]) + rec(REC_END, msg[40:])
    for mode, ring in ((0, 4096), (1, 8192), (2, 16384)):
        for name, body in (("msg", whole), ("parts", parts), ("two", whole + whole)):
            heads = [len(body)] + [len(body)] * 7
            data = bytes([mode]) + region(ring) + struct.pack("<8Q", *heads) + body
            write("shm_ring", "%s-%d" % (name, ring), data)
    # A PAD to the end of the ring followed by a record at offset 0.
    ring = 4096
    first = rec(REC_MSG, bytes(4096 - 64 - 8))
    pad_at = len(first)
    pad = struct.pack("<II", REC_PAD, ring - pad_at - 8)
    body = first + pad
    body += bytes(ring - len(body))
    heads = [len(first), ring, ring + len(whole)] + [ring + len(whole)] * 5
    ringbytes = bytearray(body)
    ringbytes[:len(whole)] = whole  # overwritten by the "peer" after the wrap
    write("shm_ring", "pad-wrap",
          bytes([0]) + region(ring, heap=1 << 20) + struct.pack("<8Q", *heads) + bytes(ringbytes))
    write("shm_ring", "doorbell-attached",
          bytes([0x18]) + region(4096, state=3, features=2) + struct.pack("<8Q", *([0] * 8)))


def guest_reply_seeds(spec_id, nfuncs):
    common = struct.pack("<qII", 0, 0, 0)
    seeds = {}
    # A reply struct of one return value (8 bytes) and one OUT descriptor.
    payload = b"olleh" + bytes(3)
    reply = struct.pack("<q", 0) + desc(0, 5, BUF_PRESENT | BUF_OUT)
    args = common + reply
    for func in range(min(nfuncs, 4)):
        m = header(KIND["REPLY"], spec_id, func, len(args), len(payload), thread_id=len(reply),
                   call_id=1, flags=1) + args + payload
        seeds["reply-%d" % func] = record(m)
    failed = header(KIND["REPLY"], spec_id, 0, len(common), 0, thread_id=8, call_id=1, flags=1,
                    status=-4) + common
    seeds["reply-failed"] = record(failed)
    async_err = struct.pack("<qII", -5, 1, 2)
    m = header(KIND["REPLY"], spec_id, 1, 24, 0, thread_id=8, call_id=1, flags=1) + async_err + \
        bytes(8)
    seeds["reply-async-error"] = record(m)
    # Callbacks: event (obj, event, message, user) and data (obj, data, size, user) as the
    # generated wtest dispatch reads them; the ids are registration 1 and 2.
    text = b"event text"
    ev_args = struct.pack("<Qq", 0x8000000000000001, 7) + desc(0, len(text), BUF_PRESENT | BUF_IN) + \
        struct.pack("<Q", 0)
    ev_payload = text + bytes(span(len(text)) - len(text))
    data = bytes(range(16))
    da_args = struct.pack("<Q", 0x8000000000000001) + desc(0, len(data), BUF_PRESENT | BUF_IN) + \
        struct.pack("<QQ", len(data), 0)
    da_payload = data + bytes(span(len(data)) - len(data))
    for decl in range(3):
        ev = header(KIND["CALLBACK"], spec_id, decl, len(ev_args), len(ev_payload), call_id=1) + \
            ev_args + ev_payload
        da = header(KIND["CALLBACK"], spec_id, decl, len(da_args), len(da_payload), call_id=2) + \
            da_args + da_payload
        seeds["callback-event-%d" % decl] = record(ev) + seeds["reply-0"]
        seeds["callback-data-%d" % decl] = record(da) + seeds["reply-0"]
    seeds["goodbye"] = record(header(KIND["GOODBYE"], spec_id))
    seeds["replies-two"] = seeds["reply-0"] + seeds["reply-1"]
    for name, data in seeds.items():
        write("guest_reply", name, data)


def hello_seeds():
    """The handshake (fuzz_hello.cpp): byte 0 picks the side, then one message."""
    def fixed(text, n):
        return text.encode() + b"\0" * (n - len(text))

    def item(kind, data):
        pad = (8 - len(data) % 8) % 8
        return struct.pack("<II", kind, len(data)) + data + b"\0" * pad

    def hello(pmin=2, pmax=2, flags=0, items=b"", v1=False):
        block = struct.pack("<QQII", 0x1234, 1, 7, flags) + fixed("wtest", 32)
        if not v1:
            block += struct.pack("<HHIQ", pmin, pmax, 0, 0) + b"\0" * 16 + fixed("ava seed", 32)
        return header(KIND["HELLO"], 7, args_len=len(block), payload_len=len(items)) + block + items

    config = item(2, b'channel = "unix"\nworker = "unix:/run/ava.sock"\n')
    token = item(1, b"alice-0123456789abcdef")
    write("hello", "hello-plain", b"\x00" + hello())
    write("hello", "hello-items", b"\x00" + hello(items=config + item(77, b"later")))
    write("hello", "hello-credential", b"\x02" + hello(items=token + config))
    write("hello", "hello-v1", b"\x00" + hello(v1=True))
    write("hello", "hello-later", b"\x00" + hello(3, 5))
    write("hello", "hello-resume", b"\x00" + hello(flags=1))

    def ack(status, proto, pmin=2, pmax=2, session=0x42, bare=False):
        block = (struct.pack("<HHHHIIQ", proto, pmin, pmax, 0, 0, 0, session) + b"\0" * 16 +
                 fixed("ava seed", 32) + fixed("alice", 16))
        if bare:
            block = b""
        return header(KIND["HELLO_ACK"], 7, args_len=len(block), status=status) + block

    write("hello", "ack-ok", b"\x01" + ack(0, 2))
    write("hello", "ack-bare", b"\x01" + ack(0, 0, bare=True))
    write("hello", "ack-version", b"\x01" + ack(-13, 0, 3, 4, 0))
    write("hello", "ack-access", b"\x03" + ack(-14, 0, session=0))


def cava_seeds():
    for sub in ("demo", "opencl", "cudart", "cuda"):
        d = os.path.join(ROOT, "specs", sub)
        for f in sorted(os.listdir(d)):
            if f.endswith(".spec.c"):
                shutil.copy(os.path.join(d, f), os.path.join(CORPUS, "cava", f))
    shutil.copy(os.path.join(ROOT, "tests", "wtest", "wtest.spec.c"),
                os.path.join(CORPUS, "cava", "wtest.spec.c"))


def fatbin_seeds(build):
    cuda = os.path.join(build, "tests", "cuda")
    for name in ("plain", "zstd", "lz4"):
        src = os.path.join(cuda, "kernels_%s.fatbin" % name)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(CORPUS, "fatbin", "kernels_%s.fatbin" % name))
    obj = os.path.join(cuda, "kernels_plain.o")
    cuobjdump = "/usr/local/cuda/bin/cuobjdump"
    if os.path.exists(obj) and os.path.exists(cuobjdump):
        tmp = os.path.join(build, "fuzz-seeds-tmp")
        os.makedirs(tmp, exist_ok=True)
        subprocess.run([cuobjdump, "-xelf", "all", obj], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([cuobjdump, "-xptx", "all", obj], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        for f in sorted(os.listdir(tmp)):
            shutil.copy(os.path.join(tmp, f), os.path.join(CORPUS, "fatbin", f))
        shutil.rmtree(tmp)


def main():
    hello_seeds()
    os.makedirs(os.path.join(CORPUS, "cava"), exist_ok=True)
    os.makedirs(os.path.join(CORPUS, "fatbin"), exist_ok=True)
    shm_ring_seeds()
    # The wtest spec's id and function count (tests/wtest/wtest.spec.c).
    guest_reply_seeds(int(os.environ.get("AVA_WTEST_SPEC_ID", "77")),
                      int(os.environ.get("AVA_WTEST_NFUNCS", "4")))
    cava_seeds()
    if len(sys.argv) > 1:
        fatbin_seeds(sys.argv[1])


if __name__ == "__main__":
    main()
