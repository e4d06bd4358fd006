#!/usr/bin/env python3
"""Turns the clpeak runs of scripts/bench-clpeak.sh into one table (metric |
each run | each remoted run / native) and OUT_DIR/clpeak.csv, clpeak.json.

The runs file has one tab-separated line per run, in column order:
    NAME  STATUS(ok|failed)  EXIT_STATUS  WALL_SECONDS  REASON
and each run's clpeak output lies in LOG_DIR/NAME.log (console), NAME.xml
(XML dump). A failed run still shows the figures it printed before failing.

Ratios are remoted / native of this same run: below 1 for a bandwidth, and
above 1 for a latency, mean that remoting costs.

--tcp-stream names bench/baseline_socket's `--bulk` output of the same run
(result,stream_bw,BYTES,MIB_PER_S,MiB/s): a bare loopback tcp stream, the
floor the tcp run's transfers are held against.
"""

import argparse
import csv
import datetime
import json
import os
import platform
import sys

# No __pycache__ in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parse_clpeak  # noqa: E402  (lives next to this file)

NATIVE = "native"


def read_runs(path):
    runs = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) != 5 or fields[1] not in ("ok", "failed"):
                raise ValueError(f"{path}:{number}: expected NAME STATUS EXIT WALL REASON")
            name, status, exit_status, wall, reason = fields
            runs.append({
                "name": name,
                "status": status,
                "exit_status": int(exit_status) if exit_status.lstrip("-").isdigit() else None,
                "wall_s": parse_clpeak.finite(wall),
                "reason": reason,
            })
    return runs


def load_figures(runs, log_dir):
    for run in runs:
        log_text = parse_clpeak.read_text(os.path.join(log_dir, run["name"] + ".log")) or ""
        xml_text = parse_clpeak.read_text(os.path.join(log_dir, run["name"] + ".xml"))
        figures, missing, errors = parse_clpeak.parse_run(log_text, xml_text)
        run["figures"] = figures
        run["missing"] = missing
        run["clpeak_errors"] = errors
        log = os.path.join(log_dir, run["name"] + ".log")
        # A run that failed before it started has no log.
        run["log"] = log if os.path.exists(log) else None


def ratio(value, native):
    if value is None or native is None or native == 0:
        return None
    return value / native


def metric_rows(runs):
    native = next((r for r in runs if r["name"] == NATIVE), None)
    rows = []
    for metric, label, unit in parse_clpeak.METRICS:
        base = native["figures"].get(metric) if native else None
        values = {r["name"]: r["figures"].get(metric) for r in runs}
        ratios = {r["name"]: ratio(values[r["name"]], base) for r in runs if r["name"] != NATIVE}
        rows.append({"metric": metric, "label": label, "unit": unit,
                     "values": values, "ratios": ratios})
    return rows


# Issue 15's goals for the shm channel: (what, op, goal, value(runs, rows)).
# Native maps move nothing, so a map or unmap is held against the native
# run's memcpy of the same size (clpeak's "memcpy from/to mapped ptr").
def _figure(rows, metric, run):
    row = next((r for r in rows if r["metric"] == metric), None)
    return row["values"].get(run) if row else None


def _over(a, b):
    return None if a is None or b is None or b == 0 else a / b


def _wall(runs, name):
    run = next((r for r in runs if r["name"] == name), None)
    return run["wall_s"] if run and run["status"] == "ok" else None


TRANSFERS = (("enqueuewritebuffer", "enqueueWriteBuffer"),
             ("enqueuereadbuffer", "enqueueReadBuffer"),
             ("enqueuewritebuffer_nonblocking", "enqueueWriteBuffer non-blocking"),
             ("enqueuereadbuffer_nonblocking", "enqueueReadBuffer non-blocking"))


def read_tcp_stream(path):
    """GB/s (clpeak's unit, 1e9 bytes) of the bare tcp stream, or None."""
    text = parse_clpeak.read_text(path) if path else None
    for line in (text or "").splitlines():
        fields = line.strip().split(",")
        if len(fields) == 5 and fields[0] == "result" and fields[1] == "stream_bw" \
                and fields[4] == "MiB/s":
            value = parse_clpeak.finite(fields[3])
            return None if value is None or value <= 0 else value * 1048576 / 1e9
    return None


# Each goal's value is value(runs, rows, tcp_stream_gbps).
GOALS = [
    (f"shm / native {label}", ">=", 0.9,
     lambda runs, rows, stream, m=metric: _over(_figure(rows, m, "shm"), _figure(rows, m, NATIVE)))
    for metric, label in TRANSFERS
] + [
    # A bare loopback stream carries less than native clpeak moves, so the
    # tcp run is held against the stream, not against native.
    (f"tcp {label} / bare tcp stream", ">=", 0.8,
     lambda runs, rows, stream, m=metric: _over(_figure(rows, m, "tcp"), stream))
    for metric, label in TRANSFERS
] + [
    ("shm enqueueMapBuffer / native memcpy from mapped ptr", ">=", 0.5,
     lambda runs, rows, stream: _over(_figure(rows, "enqueuemapbuffer", "shm"),
                              _figure(rows, "memcpy_from_mapped_ptr", NATIVE))),
    ("shm enqueueUnmap / native memcpy to mapped ptr", ">=", 0.5,
     lambda runs, rows, stream: _over(_figure(rows, "enqueueunmap", "shm"),
                              _figure(rows, "memcpy_to_mapped_ptr", NATIVE))),
    ("shm / native kernel launch latency", "<=", 1.2,
     lambda runs, rows, stream: _over(_figure(rows, "kernel_launch_latency", "shm"),
                              _figure(rows, "kernel_launch_latency", NATIVE))),
    ("shm / native clpeak run wall time", "<=", 1.5,
     lambda runs, rows, stream: _over(_wall(runs, "shm"), _wall(runs, NATIVE))),
]


def goal_rows(runs, rows, tcp_stream=None):
    out = []
    for name, op, goal, value in GOALS:
        got = value(runs, rows, tcp_stream)
        if got is None:
            status = "not measured"
        else:
            status = "met" if (got <= goal if op == "<=" else got >= goal) else "missed"
        out.append({"name": name, "value": got, "op": op, "target": goal, "status": status})
    return out


def print_goals(goals, quick):
    width = max(len(g["name"]) for g in goals)
    print("\nclpeak goals (issue 15; a quick run caps PoCL's memory, so only a full run counts)"
          if quick else "\nclpeak goals (issue 15)")
    for g in goals:
        print(f"  {g['name'].ljust(width)}  {fmt_ratio(g['value']):>6}  {g['op']} {g['target']:<4}"
              f"  {g['status']}")


def fmt_value(value):
    if value is None:
        return "-"
    if abs(value) < 0.1:
        return f"{value:.3g}"
    return f"{value:.2f}" if abs(value) < 1000 else f"{value:.0f}"


def fmt_seconds(value):
    return "-" if value is None else f"{value:.1f}"


def fmt_ratio(value):
    return "-" if value is None else f"{value:.2f}"


def print_table(runs, rows, quick, load_before, tcp_stream=None):
    cpus = os.cpu_count() or 1
    mode = "quick" if quick else "full"
    print(f"\nclpeak, natively and under ava ({mode} run, {cpus} CPUs); "
          "ratio = remoted / native of this same run")
    # Other work on the host shows up in every figure.
    if load_before is not None and load_before > 0.5 * cpus:
        print(f"WARNING: the host was busy when the run started (load average {load_before}); "
              "figures are noisy, rerun on a quiet host")
    remoted = [r["name"] for r in runs if r["name"] != NATIVE]
    header = ["metric", "unit"] + [r["name"] for r in runs] + [f"{n}/native" for n in remoted]
    table = [header]
    for row in rows:
        table.append([row["label"], row["unit"]] +
                     [fmt_value(row["values"][r["name"]]) for r in runs] +
                     [fmt_ratio(row["ratios"][n]) for n in remoted])
    table.append(["clpeak run wall time", "s"] +
                 [fmt_seconds(r["wall_s"]) for r in runs] + [""] * len(remoted))
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for number, line in enumerate(table):
        cells = [line[0].ljust(widths[0]), line[1].ljust(widths[1])]
        cells += [cell.rjust(width) for cell, width in zip(line[2:], widths[2:])]
        print("  " + "  ".join(cells).rstrip())
        if number == 0:
            print("  " + "  ".join("-" * width for width in widths))
    print("  (bandwidth: a ratio below 1 is a slowdown; latency: above 1 is a slowdown)")
    print(f"  bare loopback tcp stream in this run: {fmt_value(tcp_stream)} GB/s"
          + ("" if tcp_stream is not None else " (not measured)"))
    # clpeak times launches with event profiling, on the device's clock.
    print("  (kernel launch latency is clpeak's CL_PROFILING_COMMAND_QUEUED to _START, both "
          "stamped by the real runtime)")
    for run in runs:
        if run["status"] != "ok":
            where = f" (log: {run['log']})" if run["log"] else ""
            print(f"  FAILED run {run['name']}: {run['reason']}{where}")


def write_csv(path, runs, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["run", "metric", "value", "unit", "native", "ratio"])
        for row in rows:
            native = row["values"].get(NATIVE)
            for run in runs:
                value = row["values"][run["name"]]
                if value is None:
                    continue
                r = 1.0 if run["name"] == NATIVE else row["ratios"][run["name"]]
                writer.writerow([run["name"], row["metric"], f"{value:g}", row["unit"],
                                 "" if native is None else f"{native:g}",
                                 "" if r is None else f"{r:.4g}"])


def write_json(path, runs, rows, goals, quick, load_before, clpeak_version, tcp_stream=None):
    document = {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "quick": quick,
        "clpeak_version": clpeak_version,
        "host": {"cpus": os.cpu_count(), "kernel": platform.release(),
                 "machine": platform.machine(), "load_before": load_before},
        "runs": [{k: run[k] for k in ("name", "status", "exit_status", "wall_s", "reason",
                                      "missing", "clpeak_errors", "log")} for run in runs],
        "metrics": rows,
        "tcp_stream_gbps": tcp_stream,
        "goals": goals,
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)
        f.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", required=True, help="the runs file (see above)")
    parser.add_argument("--log-dir", required=True, help="where NAME.log and NAME.xml lie")
    parser.add_argument("--out-dir", required=True, help="where clpeak.csv and clpeak.json go")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--load-before", type=float, default=None,
                        help="the host's 1-minute load average when the run started")
    parser.add_argument("--clpeak-version", default="")
    parser.add_argument("--tcp-stream", default=None,
                        help="baseline_socket tcp --bulk output of this run")
    args = parser.parse_args()

    try:
        runs = read_runs(args.runs)
    except (OSError, ValueError) as error:
        print(f"report_clpeak.py: {error}", file=sys.stderr)
        return 2
    load_figures(runs, args.log_dir)
    rows = metric_rows(runs)
    tcp_stream = read_tcp_stream(args.tcp_stream)
    goals = goal_rows(runs, rows, tcp_stream)
    try:
        write_csv(os.path.join(args.out_dir, "clpeak.csv"), runs, rows)
        write_json(os.path.join(args.out_dir, "clpeak.json"), runs, rows, goals, args.quick,
                   args.load_before, args.clpeak_version, tcp_stream)
    except OSError as error:
        print(f"report_clpeak.py: {error}", file=sys.stderr)
        return 2
    print_table(runs, rows, args.quick, args.load_before, tcp_stream)
    print_goals(goals, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
