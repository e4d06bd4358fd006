#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draws results.json of one benchmark run (bench/report.py) as a PNG with
three panels: round-trip latency per channel next to the bare baselines,
bandwidth against transfer size per channel next to memcpy, and async call
throughput per channel next to the bare one-way message rates.

usage: plot.py RESULTS.json OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")  # no display: this runs in scripts and CI
import matplotlib.pyplot as plt  # noqa: E402 (the backend must be chosen first)

BASELINES = ("ring", "unix-socket", "tcp-socket", "memcpy")
ORDER = ["ring", "unix-socket", "tcp-socket", "native", "shm", "unix", "unix-uring", "tcp",
         "tcp-uring"]
BASELINE_COLOUR = "0.6"
ASYNC_TARGET = 5e6
# Round trips: placed by the kernel, then pinned to one CPU or two (baseline_socket).
LATENCY_VARIANTS = (("rt", ""), ("rt_same_cpu", " 1 CPU"), ("rt_cross_cpu", " 2 CPUs"))


def order_key(channel):
    return (ORDER.index(channel) if channel in ORDER else len(ORDER), channel)


def colour(channel, channels):
    """One colour per channel in every panel; grey for the bare baselines."""
    if channel in BASELINES:
        return BASELINE_COLOUR
    return f"C{channels.index(channel) % 10}"


def size_label(size):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def latency_panel(ax, index, channels):
    shown = [(c, variant, label) for c in channels for variant, label in LATENCY_VARIANTS
             if (c, f"{variant}_p50") in index]
    xs = range(len(shown))
    p50 = [index[(c, f"{v}_p50")] for c, v, _ in shown]
    p99 = [index.get((c, f"{v}_p99"), x) for (c, v, _), x in zip(shown, p50)]
    bars = ax.bar(xs, p50, color=[colour(c, channels) for c, _, _ in shown], label="p50")
    ax.bar_label(bars, labels=[f"{v:.3g}" for v in p50], fontsize="small")
    ax.scatter(xs, p99, marker="_", s=300, color="black", zorder=3, label="p99")
    ax.set_xticks(list(xs), [c + label for c, _, label in shown], rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("round trip (µs, log)")
    ax.set_title("Null call round trip vs bare 64-byte ping-pong (grey)")
    ax.legend()


def bandwidth_panel(ax, rows, channels):
    def series(channel, metric):
        points = sorted((r["size"], r["value"]) for r in rows
                        if r["channel"] == channel and r["metric"] == metric)
        return [p[0] for p in points], [p[1] for p in points]

    sizes, values = series("memcpy", "bandwidth")
    if sizes:
        ax.plot(sizes, values, color="black", linewidth=2.5, label="memcpy")
    for channel in (c for c in channels if c not in BASELINES):
        for metric, style, label in (("write_bw", "-", "in"), ("read_bw", "--", "out"),
                                     ("zc_write_bw", ":", "zero-copy in"),
                                     ("zc_read_bw", "-.", "zero-copy out")):
            sizes, values = series(channel, metric)
            if sizes:
                ax.plot(sizes, values, style, color=colour(channel, channels), marker=".",
                        label=f"{channel} {label}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = sorted({r["size"] for r in rows if r["metric"] in ("bandwidth", "write_bw")})
    ax.set_xticks(ticks, [size_label(s) for s in ticks], rotation=30)
    ax.set_xlabel("transfer size")
    ax.set_ylabel("MiB/s (log)")
    ax.set_title("Bandwidth: in (solid) and out (dashed) vs memcpy")
    ax.legend(fontsize="small", ncol=2)


def async_panel(ax, index, channels):
    labels, values, colours = [], [], []
    for channel in channels:
        for metric, suffix in (("msg_rate", "bare msgs"), ("async_rate", ""),
                               ("async_rate_batched", "batched"),
                               ("async_rate_unbatched", "unbatched")):
            if (channel, metric) in index:
                labels.append(f"{channel} {suffix}".strip())
                values.append(index[(channel, metric)])
                colours.append(colour(channel, channels))
    xs = range(len(labels))
    ax.bar(xs, values, color=colours)
    ax.axhline(ASYNC_TARGET, color="black", linestyle=":", label="shm target 5e6/s")
    ax.set_xticks(list(xs), labels, rotation=45, ha="right", fontsize="small")
    ax.set_yscale("log")
    ax.set_ylabel("calls or messages per s (log)")
    ax.set_title("Async demo_obj_fill throughput vs bare one-way messages (grey)")
    ax.legend()


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py RESULTS.json OUT.png")
    with open(sys.argv[1]) as f:
        document = json.load(f)
    rows = document["results"]
    # Latency and rates are per message, so their size column carries no information here.
    index = {(r["channel"], r["metric"]): r["value"] for r in rows
             if r["metric"].startswith(("rt_", "msg_rate", "async_rate"))}
    channels = sorted({r["channel"] for r in rows}, key=order_key)

    fig, axes = plt.subplots(1, 3, figsize=(21, 6.5))
    latency_panel(axes[0], index, channels)
    bandwidth_panel(axes[1], rows, channels)
    async_panel(axes[2], index, channels)
    mode = "quick" if document.get("quick") else "full"
    fig.suptitle(f"ava channel benchmark ({mode} run, {document['generated']}, "
                 f"{document['host']['cpus']} CPUs)")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)


if __name__ == "__main__":
    main()
