#!/usr/bin/env python3
"""Reads the transfer bandwidth and kernel launch latency figures of one clpeak
run (clpeak 1.1.x, `--transfer-bandwidth --kernel-latency`, one device).

clpeak's XML dump has the full precision, so its figures win; its console log
(two decimals) fills in whatever the XML lacks, because a run that dies half way
leaves a truncated or no XML but keeps the figures it printed. A figure that
is not a finite number counts as missing.

clpeak 1.1.x exits 0 even when a test fails (it prints the OpenCL error and
"Tests skipped"), so completeness is judged from the figures, not the status.

usage: parse_clpeak.py LOG [--xml XML]
prints "metric,value,unit" lines; exit status 1 (missing figures and clpeak's
error lines on stderr) when a figure is missing, 2 when LOG cannot be read.
"""

import argparse
import math
import re
import sys
import xml.etree.ElementTree as ElementTree

# (XML element name = metric id, console label, unit), in clpeak's order.
METRICS = [
    ("enqueuewritebuffer", "enqueueWriteBuffer", "GB/s"),
    ("enqueuereadbuffer", "enqueueReadBuffer", "GB/s"),
    ("enqueuewritebuffer_nonblocking", "enqueueWriteBuffer non-blocking", "GB/s"),
    ("enqueuereadbuffer_nonblocking", "enqueueReadBuffer non-blocking", "GB/s"),
    ("enqueuemapbuffer", "enqueueMapBuffer(for read)", "GB/s"),
    ("memcpy_from_mapped_ptr", "memcpy from mapped ptr", "GB/s"),
    ("enqueueunmap", "enqueueUnmap(after write)", "GB/s"),
    ("memcpy_to_mapped_ptr", "memcpy to mapped ptr", "GB/s"),
    ("kernel_launch_latency", "Kernel launch latency", "us"),
]
LABELS = {label: metric for metric, label, _ in METRICS}
UNITS = {metric: unit for metric, _, unit in METRICS}

# "      enqueueWriteBuffer non-blocking : 15.69" or "Kernel launch latency : 18.68 us"
FIGURE_LINE = re.compile(r"^\s*(?P<label>[A-Za-z][A-Za-z0-9 ()-]*?)\s*:\s*"
                         r"(?P<value>[-+0-9.eEinfINFaA]+)\s*(?:us)?\s*$")
# clpeak reports an OpenCL failure as "clSomething (-5)", often right after a
# figure's label, then "Tests skipped".
CL_ERROR = re.compile(r"\bcl[A-Z][A-Za-z]*\s*\(\s*-?\d+\s*\)\s*$")
NOTICES = ("Tests skipped", "no platforms found")


def finite(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def parse_log(text):
    """Returns ({metric: value}, [clpeak error lines]) from a console log."""
    figures = {}
    errors = []
    for line in text.splitlines():
        match = FIGURE_LINE.match(line)
        if match:
            metric = LABELS.get(match.group("label"))
            value = finite(match.group("value"))
            # Only the first device's block counts; one is all we ask clpeak for.
            if metric is not None and value is not None and metric not in figures:
                figures[metric] = value
            continue
        error = CL_ERROR.search(line)
        if error:
            errors.append(error.group(0).strip())
        elif line.strip() in NOTICES:
            errors.append(line.strip())
    return figures, errors


def parse_xml(text):
    """Returns {metric: value} from the first device of a clpeak XML dump;
    {} when the dump is not well-formed (a run that died half way)."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        return {}
    device = root.find("./platform/device")
    if device is None:
        return {}
    figures = {}
    for metric, _, _ in METRICS:
        path = metric if metric == "kernel_launch_latency" else "transfer_bandwidth/" + metric
        element = device.find(path)
        value = finite(element.text.strip()) if element is not None and element.text else None
        if value is not None:
            figures[metric] = value
    return figures


def parse_run(log_text, xml_text=None):
    """Returns ({metric: value}, [missing metrics], [clpeak error lines])."""
    figures, errors = parse_log(log_text)
    if xml_text:
        figures.update(parse_xml(xml_text))
    missing = [metric for metric, _, _ in METRICS if metric not in figures]
    return figures, missing, errors


def read_text(path):
    """The file's text, or None when it does not exist; undecodable bytes are
    replaced, because a crashing run may leave anything in its log."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="clpeak's console output")
    parser.add_argument("--xml", help="clpeak's --xml-file dump, if any")
    args = parser.parse_args()
    try:
        log_text = read_text(args.log)
        xml_text = read_text(args.xml) if args.xml else None
    except OSError as error:
        print(f"parse_clpeak.py: {error}", file=sys.stderr)
        return 2
    if log_text is None:
        print(f"parse_clpeak.py: {args.log}: no such file", file=sys.stderr)
        return 2
    figures, missing, errors = parse_run(log_text, xml_text)
    for metric, _, unit in METRICS:
        if metric in figures:
            print(f"{metric},{figures[metric]:g},{unit}")
    if missing:
        print("missing: " + ", ".join(missing), file=sys.stderr)
        for line in errors:
            print("clpeak: " + line, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
