#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draws tasks.json of one task_bench run as a PNG: per pattern, efficiency
(achieved / peak FLOP/s) against task granularity (log x), one line per
system, with the 50% line whose crossing is METG(50%).

usage: plot_tasks.py TASKS.json OUT.png
"""
import json
import math
import sys

import matplotlib

matplotlib.use("Agg")  # no display: this runs in scripts and CI
import matplotlib.pyplot as plt  # noqa: E402 (the backend must be chosen first)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    with open(sys.argv[1]) as f:
        data = json.load(f)
    systems, patterns = [], []
    for row in data["sweep"]:
        if row["system"] not in systems:
            systems.append(row["system"])
        if row["pattern"] not in patterns:
            patterns.append(row["pattern"])
    metg = {(m["system"], m["pattern"]): m["metg_us"] for m in data["metg_us"]}
    cols = min(3, len(patterns))
    rows = math.ceil(len(patterns) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
    for ax, pattern in zip(axes.flat, patterns):
        for i, system in enumerate(systems):
            # In the sweep's order (task size), as the METG is computed.
            rows = sorted((r for r in data["sweep"]
                           if r["system"] == system and r["pattern"] == pattern),
                          key=lambda r: r["iterations"])
            points = [(r["granularity_us"], r["efficiency"]) for r in rows]
            m = metg.get((system, pattern))
            label = f"{system} (METG {m:.1f} µs)" if m is not None else f"{system} (no METG)"
            ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", color=f"C{i}",
                    label=label)
        ax.axhline(0.5, color="0.6", linestyle="--", linewidth=1)
        ax.set_xscale("log")
        ax.set_ylim(0, 1.2)
        ax.set_title(pattern)
        ax.set_xlabel("task granularity (µs: wall × cores / tasks)")
        ax.set_ylabel("efficiency (of peak FLOP/s)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    for ax in list(axes.flat)[len(patterns):]:
        ax.set_visible(False)
    fig.suptitle(f"task_bench: {data['cores']} cores, peak {data['peak_flops'] / 1e9:.2f} GFLOP/s"
                 + (" (quick run)" if data.get("quick") else ""))
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
