#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turns the raw figures of one benchmark run into results.csv and
results.json and prints a readable table with the targets.

Every figure is divided by a baseline measured in the same run (ratio =
value / baseline value), because absolute numbers from a shared 2-core host
say little on their own:

  round trips (rt_*_p50, _p99)  shm, native -> bare ring; unix* -> bare unix socket;
                                tcp* -> bare tcp socket; the sockets -> bare ring
  async_rate_*, msg_rate        the same carriers' bare one-way 64-byte message rate
  write_bw, read_bw             memcpy of the same size

usage: report.py --raw RAW.csv --out-dir DIR [--skipped FILE] [--failed NAME]... [--quick]
"""
import argparse
import csv
import datetime
import json
import os
import platform
import sys

# Which bare carrier each ava channel runs on.
CARRIER = {
    "native": "ring",
    "shm": "ring",
    "unix": "unix-socket",
    "unix-uring": "unix-socket",
    "tcp": "tcp-socket",
    "tcp-uring": "tcp-socket",
    "unix-socket": "ring",
    "tcp-socket": "ring",
    "ring": "ring",
}
# Display order: baselines first, then native, then the ava channels.
ORDER = ["ring", "unix-socket", "tcp-socket", "memcpy", "native", "shm", "unix", "unix-uring",
         "tcp", "tcp-uring"]
MSG_SIZE = 64
# Round-trip metrics: processes placed by the kernel, then pinned by baseline_socket.
LATENCY_VARIANTS = (("rt", ""), ("rt_same_cpu", " (same CPU)"), ("rt_cross_cpu", " (2 CPUs)"))
TARGET_SIZE = 64 << 20


def order_key(channel):
    return (ORDER.index(channel) if channel in ORDER else len(ORDER), channel)


def baseline_of(channel, metric, size):
    """(channel, metric, size) of the row this one is divided by, or None."""
    if metric.startswith("rt_") or metric == "msg_rate":
        carrier = CARRIER.get(channel)
        # Pinned variants (rt_same_cpu_p50, ...) compare with the plain percentile.
        base = "rt_" + metric.rsplit("_", 1)[1] if metric.startswith("rt_") else metric
        return (carrier, base, MSG_SIZE) if carrier else None
    if metric.startswith("async_rate"):
        carrier = CARRIER.get(channel)
        return (carrier, "msg_rate", MSG_SIZE) if carrier else None
    if metric in ("bandwidth", "write_bw", "read_bw", "zc_write_bw", "zc_read_bw"):
        return ("memcpy", "bandwidth", size)
    return None


def read_raw(path):
    rows = []
    with open(path, newline="") as f:
        for line, fields in enumerate(csv.reader(f), 1):
            if len(fields) != 5:
                sys.exit(f"report.py: {path}:{line}: expected 5 fields, got {len(fields)}")
            channel, metric, size, value, unit = fields
            try:
                rows.append({"channel": channel, "metric": metric, "size": int(size),
                             "value": float(value), "unit": unit})
            except ValueError:
                sys.exit(f"report.py: {path}:{line}: size or value is not a number")
    return rows


def read_skipped(path):
    skipped = []
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                channel, _, reason = line.rstrip("\n").partition(",")
                if channel:
                    skipped.append({"channel": channel, "reason": reason})
    return skipped


def add_ratios(rows):
    index = {(r["channel"], r["metric"], r["size"]): r for r in rows}
    for r in rows:
        key = baseline_of(r["channel"], r["metric"], r["size"])
        base = index.get(key) if key else None
        r["baseline"] = f"{key[0]} {key[1]}" if base else ""
        r["baseline_value"] = base["value"] if base else None
        r["ratio"] = r["value"] / base["value"] if base and base["value"] > 0 else None
    return index


def targets(index, skipped):
    skip_reason = {s["channel"]: s["reason"] for s in skipped}

    def value(channel, metric, size):
        r = index.get((channel, metric, size))
        return r["value"] if r else None

    def ratio(channel, metric, size):
        r = index.get((channel, metric, size))
        return r["ratio"] if r else None

    def any_size(channel, metric):
        r = idle_row(index, channel, metric)
        return r["value"] if r else None

    wanted = [
        ("shm null call p50 / bare ring p50", "shm", ratio("shm", "rt_p50", MSG_SIZE), "<=", 2.0),
        ("unix null call p50 / bare unix socket p50", "unix",
         ratio("unix", "rt_p50", MSG_SIZE), "<=", 1.3),
        ("shm 64 MiB in, ordinary buffer (demo_obj_write) / memcpy", "shm",
         ratio("shm", "write_bw", TARGET_SIZE), ">=", 0.9),
        ("shm 64 MiB out, ordinary buffer (demo_obj_read) / memcpy", "shm",
         ratio("shm", "read_bw", TARGET_SIZE), ">=", 0.9),
        ("shm zero-copy 64 MiB in (demo_obj_write) / memcpy", "shm",
         ratio("shm", "zc_write_bw", TARGET_SIZE), ">=", 0.8),
        ("shm zero-copy 64 MiB out (demo_obj_read) / memcpy", "shm",
         ratio("shm", "zc_read_bw", TARGET_SIZE), ">=", 0.8),
        # shm does not batch by default (a send is a ring write): its
        # figure is that setting's, five bursts in one run.
        ("async calls/s on shm, median of 5 (AVA_BATCH=0, the default)", "shm",
         value("shm", "async_rate_unbatched", 0), ">=", 5e6),
        ("async calls/s on shm, slowest of 5", "shm",
         value("shm", "async_rate_min_unbatched", 0), ">=", 4.5e6),
        # "At most a few times a second" (tests/e2e/test_e2e_idle.cpp's bound).
        ("idle guests: wake-ups/s of the busiest process", "idle",
         any_size("idle", "idle_wakeups_max"), "<=", 3.0),
        ("guest blocked in a 10 s call: wake-ups/s of the busiest process", "idle",
         any_size("idle", "blocked_wakeups_max"), "<=", 3.0),
    ]
    out = []
    for name, channel, got, op, goal in wanted:
        if got is None:
            status = (f"not measured ({channel} skipped)" if channel in skip_reason
                      else f"not measured (no {channel} figure)")
        else:
            met = got <= goal if op == "<=" else got >= goal
            status = "met" if met else "missed"
        out.append({"name": name, "value": got, "op": op, "target": goal, "status": status})
    return out


def idle_row(index, channel, metric):
    """The row of an idle figure, whatever its size (the guest count)."""
    for (c, m, _), r in index.items():
        if c == channel and m == metric:
            return r
    return None


def fmt(x, digits=3):
    if x is None:
        return "-"
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-2):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:.0f}"


def fmt_ratio(x):
    if x is None:
        return "-"
    return f"{x:.0f}" if x >= 100 else f"{x:.2g}"


def size_name(size):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def print_table(title, header, lines, left_last=False):
    widths = [max(len(str(c)) for c in col) for col in zip(header, *lines)] if lines else []
    print(f"\n{title}")
    if not lines:
        print("  (nothing measured)")
        return
    for row in [header] + lines:
        cells = []
        for i, (cell, width) in enumerate(zip(row, widths)):
            # Names and free text read best left-aligned, numbers right-aligned.
            left = i == 0 or (left_last and i == len(row) - 1)
            cells.append(str(cell).ljust(width) if left else str(cell).rjust(width))
        print("  " + "  ".join(cells).rstrip())


def print_report(rows, index, target_rows, skipped, failed, quick, load_before):
    channels = sorted({r["channel"] for r in rows}, key=order_key)
    mode = "quick" if quick else "full"
    print(f"\nava benchmark ({mode} run, {os.cpu_count()} CPUs); "
          "ratio = value / baseline of this same run")
    # Spinning baselines and wake-ups suffer most when other processes want the CPUs.
    if load_before is not None and load_before > 0.5 * (os.cpu_count() or 1):
        print(f"WARNING: the host was busy when the run started (load average {load_before}); "
              "figures are noisy, rerun on a quiet host")

    get = lambda c, m, s: index.get((c, m, s))
    lines = []
    for c in channels:
        for variant, label in LATENCY_VARIANTS:
            p50 = get(c, f"{variant}_p50", MSG_SIZE)
            p99 = get(c, f"{variant}_p99", MSG_SIZE)
            if not (p50 or p99):
                continue
            lines.append([c + label, fmt(p50 and p50["value"]), fmt(p99 and p99["value"]),
                          ((p50 or p99)["baseline"] or "-").split(" ")[0],
                          fmt_ratio(p50 and p50["ratio"]), fmt_ratio(p99 and p99["ratio"])])
    print_table("Round trip: 64-byte ping-pong (baselines) / demo_version null call (us; "
                "ratio: lower is better)",
                ["channel", "p50", "p99", "baseline", "p50 ratio", "p99 ratio"], lines)
    print("  (socket round trips cost ~3x more when the two processes are on different CPUs;\n"
          "   the pinned rows show both cases, the plain rows what the kernel chose)")

    lines = []
    for c in channels:
        for metric in ("msg_rate", "async_rate", "async_rate_batched", "async_rate_unbatched",
                       "async_rate_min_unbatched"):
            r = get(c, metric, MSG_SIZE if metric == "msg_rate" else 0)
            if r:
                lines.append([c, metric, fmt(r["value"]), r["baseline"] or "-",
                              fmt_ratio(r["ratio"])])
    print_table("One-way rate: bare 64-byte messages / async demo_obj_fill calls (per s; "
                "ratio: higher is better)", ["channel", "metric", "per s", "baseline", "ratio"],
                lines)

    sizes = sorted({r["size"] for r in rows if r["metric"] in ("bandwidth", "write_bw",
                                                               "read_bw", "zc_write_bw",
                                                               "zc_read_bw")})
    series = []
    for c in channels:
        for metric, label in (("bandwidth", "memcpy"), ("write_bw", "in"), ("read_bw", "out"),
                              ("zc_write_bw", "zero-copy in"), ("zc_read_bw", "zero-copy out")):
            if any(get(c, metric, s) for s in sizes):
                series.append((c, metric, c if metric == "bandwidth" else f"{c} {label}"))
    header = ["series"] + [size_name(s) for s in sizes]
    print_table("Bandwidth (MiB/s; in = demo_obj_write, out = demo_obj_read)", header,
                [[label] + [fmt(get(c, m, s) and get(c, m, s)["value"]) for s in sizes]
                 for c, m, label in series])
    print_table("Bandwidth / memcpy of the same size (higher is better)", header,
                [[label] + [fmt_ratio(get(c, m, s) and get(c, m, s)["ratio"]) for s in sizes]
                 for c, m, label in series if m != "bandwidth"])

    lines = []
    for prefix in ("idle", "blocked"):
        got = [idle_row(index, "idle", f"{prefix}_{m}") for m in ("wakeups_max", "wakeups_sum",
                                                                 "cpu")]
        if any(got):
            size = next(r["size"] for r in got if r)
            label = (f"{size} idle guests of one worker" if prefix == "idle" else
                     f"a guest blocked in one {size / 1000:g} s call (shm)")
            lines.append([label] + [fmt(r and r["value"]) for r in got])
    print_table("Idle cost: every process involved, over a window (lower is better)",
                ["case", "wake-ups/s, busiest", "wake-ups/s, all", "CPU % of one CPU"], lines)

    print_table("Targets", ["target", "value", "goal", "status"],
                [[t["name"], fmt(t["value"]), f"{t['op']} {fmt(t['target'])}", t["status"]]
                 for t in target_rows], left_last=True)
    if skipped:
        print()
    for s in skipped:
        print(f"skipped {s['channel']}: {s['reason']}")
    if failed:
        print(f"\nFAILED steps (no or partial figures): {', '.join(failed)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raw", required=True)
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--skipped")
    parser.add_argument("--failed", action="append", default=[])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--load-before", type=float, default=None,
                        help="the host's 1-minute load average when the run started")
    args = parser.parse_args()

    rows = read_raw(args.raw)
    skipped = read_skipped(args.skipped)
    index = add_ratios(rows)
    rows.sort(key=lambda r: (order_key(r["channel"]), r["metric"], r["size"]))
    target_rows = targets(index, skipped)

    with open(os.path.join(args.out_dir, "results.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["channel", "metric", "size", "value", "unit", "baseline", "ratio"])
        for r in rows:
            writer.writerow([r["channel"], r["metric"], r["size"], f"{r['value']:.6g}", r["unit"],
                             r["baseline"], "" if r["ratio"] is None else f"{r['ratio']:.4g}"])
    document = {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "quick": args.quick,
        "host": {"cpus": os.cpu_count(), "kernel": platform.release(),
                 "machine": platform.machine(), "load_before": args.load_before},
        "results": rows,
        "targets": target_rows,
        "skipped": skipped,
        "failed": args.failed,
    }
    with open(os.path.join(args.out_dir, "results.json"), "w") as f:
        json.dump(document, f, indent=1)
        f.write("\n")
    print_report(rows, index, target_rows, skipped, args.failed, args.quick, args.load_before)


if __name__ == "__main__":
    main()
