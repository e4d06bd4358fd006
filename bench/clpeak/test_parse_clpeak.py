"""Tests of parse_clpeak.py and report_clpeak.py on recorded and hand-made
clpeak 1.1.2 output (testdata/pocl_native.* is a real run on PoCL 3.1)."""

import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
# No __pycache__ in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import parse_clpeak  # noqa: E402
import report_clpeak  # noqa: E402

ALL = [metric for metric, _, _ in parse_clpeak.METRICS]
TRANSFERS = ALL[:-1]


def data(name):
    with open(os.path.join(HERE, "testdata", name), encoding="utf-8") as f:
        return f.read()


class ParseRun(unittest.TestCase):
    # (name, log, xml, expected figures (subset), missing, errors)
    CASES = [
        ("log and XML: the XML's precision wins", data("pocl_native.log"), data("pocl_native.xml"),
         {"enqueuewritebuffer": 13.3495, "enqueuemapbuffer": 31488.0,
          "kernel_launch_latency": 13.4972}, [], []),
        ("log alone", data("pocl_native.log"), None,
         {"enqueuewritebuffer": 13.35, "memcpy_to_mapped_ptr": 15.42,
          "kernel_launch_latency": 13.5}, [], []),
        ("truncated XML: the log fills in", data("pocl_native.log"), data("truncated.xml"),
         {"enqueuereadbuffer": 12.63, "enqueueunmap": 22700.67}, [], []),
        ("a test skipped after an OpenCL error", data("skipped_read.log"), None,
         {"enqueuewritebuffer": 1.25, "kernel_launch_latency": 31.5}, TRANSFERS[1:],
         ["clEnqueueReadBuffer (-5)", "Tests skipped"]),
        ("no platform", data("no_platform.log"), None, {}, ALL,
         ["clGetPlatformIDs (-1001)", "no platforms found"]),
        ("empty output", "", "", {}, ALL, []),
        ("figures that are not finite numbers",
         "  enqueueWriteBuffer   : inf\n  enqueueReadBuffer : -nan\n"
         "  Kernel launch latency : nan us\n", None, {}, ALL, []),
        ("a second device block is ignored",
         data("pocl_native.log") + "\n  enqueueWriteBuffer : 99.00\n", None,
         {"enqueuewritebuffer": 13.35}, [], []),
        ("a non-numeric XML element: the log fills in", data("pocl_native.log"),
         data("pocl_native.xml").replace("13.3495", "fast"),
         {"enqueuewritebuffer": 13.35, "enqueuereadbuffer": 12.6282}, [], []),
        ("XML without a device", data("skipped_read.log"), "<clpeak><platform/></clpeak>",
         {"enqueuewritebuffer": 1.25}, TRANSFERS[1:],
         ["clEnqueueReadBuffer (-5)", "Tests skipped"]),
        ("garbage", "\x00\xff:::\n : 1.0\nenqueueWriteBuffer\n: 3\n" * 50, "<<<", {}, ALL, []),
    ]

    def test_cases(self):
        for name, log, xml, expected, missing, errors in self.CASES:
            with self.subTest(name):
                figures, got_missing, got_errors = parse_clpeak.parse_run(log, xml)
                for metric, value in expected.items():
                    self.assertAlmostEqual(figures.get(metric), value, places=4, msg=metric)
                self.assertEqual(got_missing, missing)
                self.assertEqual(got_errors, errors)
                self.assertTrue(set(figures) <= set(ALL))


class Cli(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([sys.executable, os.path.join(HERE, "parse_clpeak.py"), *args],
                              capture_output=True, text=True, timeout=60)

    def test_complete_run(self):
        result = self.run_cli(os.path.join(HERE, "testdata", "pocl_native.log"),
                              "--xml", os.path.join(HERE, "testdata", "pocl_native.xml"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("enqueuewritebuffer,13.3495,GB/s\n", result.stdout)
        self.assertIn("kernel_launch_latency,13.4972,us\n", result.stdout)

    def test_missing_figures(self):
        result = self.run_cli(os.path.join(HERE, "testdata", "skipped_read.log"),
                              "--xml", os.path.join(HERE, "testdata", "absent.xml"))
        self.assertEqual(result.returncode, 1)
        self.assertIn("missing: enqueuereadbuffer, ", result.stderr)
        self.assertIn("clpeak: clEnqueueReadBuffer (-5)", result.stderr)
        self.assertIn("enqueuewritebuffer,1.25,GB/s\n", result.stdout)

    def test_no_log(self):
        result = self.run_cli(os.path.join(HERE, "testdata", "absent.log"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("no such file", result.stderr)


class Report(unittest.TestCase):
    def write(self, path, text):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def report(self, out, *extra):
        """report_clpeak.py on out/runs.tsv and the logs beside it."""
        return subprocess.run(
            [sys.executable, os.path.join(HERE, "report_clpeak.py"), "--runs",
             os.path.join(out, "runs.tsv"), "--log-dir", out, "--out-dir", out, *extra],
            capture_output=True, text=True, timeout=60)

    def test_ratios_and_failed_runs(self):
        with tempfile.TemporaryDirectory() as out:
            self.write(os.path.join(out, "native.log"), data("pocl_native.log"))
            self.write(os.path.join(out, "native.xml"), data("pocl_native.xml"))
            self.write(os.path.join(out, "unix.log"), data("skipped_read.log"))
            self.write(os.path.join(out, "runs.tsv"),
                       "native\tok\t0\t6.50\t\n"
                       "unix\tfailed\t0\t9.00\tno figure for enqueuereadbuffer\n"
                       "tcp\tfailed\t\t\tno OpenCL guest library\n")
            result = self.report(out)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("FAILED run tcp: no OpenCL guest library\n", result.stdout)
            with open(os.path.join(out, "clpeak.csv"), encoding="utf-8", newline="") as f:
                rows = {(r["run"], r["metric"]): r for r in csv.DictReader(f)}
            self.assertEqual(rows[("unix", "enqueuewritebuffer")]["ratio"],
                             f"{1.25 / 13.3495:.4g}")
            self.assertEqual(rows[("native", "kernel_launch_latency")]["ratio"], "1")
            self.assertNotIn(("unix", "enqueuereadbuffer"), rows)
            self.assertFalse(any(run == "tcp" for run, _ in rows))

    def native_and(self, out, name, wall):
        """Two ok runs, native (6.5 s) and name (wall s), with the same figures."""
        for run in ("native", name):
            self.write(os.path.join(out, run + ".log"), data("pocl_native.log"))
            self.write(os.path.join(out, run + ".xml"), data("pocl_native.xml"))
        self.write(os.path.join(out, "runs.tsv"),
                   f"native\tok\t0\t6.50\t\n{name}\tok\t0\t{wall:.2f}\t\n")

    def goals(self, out):
        with open(os.path.join(out, "clpeak.json"), encoding="utf-8") as f:
            return {g["name"]: g for g in json.load(f)["goals"]}

    def test_goals_met_missed_and_not_measured(self):
        with tempfile.TemporaryDirectory() as out:
            self.native_and(out, "shm", 10.0)
            result = self.report(out)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("clpeak goals (issue 15)", result.stdout)
            goals = self.goals(out)
            # The same figures on both sides: every ratio is 1, the wall time 10 / 6.5.
            self.assertEqual(goals["shm / native enqueueWriteBuffer"]["status"], "met")
            self.assertEqual(goals["shm / native kernel launch latency"]["status"], "met")
            wall = goals["shm / native clpeak run wall time"]
            self.assertAlmostEqual(wall["value"], 10.0 / 6.5)
            self.assertEqual(wall["status"], "missed")
        runs = [{"name": "native", "status": "ok", "wall_s": 6.5, "figures": {}}]
        rows = report_clpeak.metric_rows(runs)
        for goal in report_clpeak.goal_rows(runs, rows):
            self.assertEqual(goal["status"], "not measured", goal["name"])

    def test_tcp_goals_against_the_bare_stream(self):
        with tempfile.TemporaryDirectory() as out:
            self.native_and(out, "tcp", 20.0)
            # Twice the tcp run's write figure (13.3495 GB/s), in MiB/s.
            stream = os.path.join(out, "tcp-stream.log")
            self.write(stream, f"result,stream_bw,536870912,{2 * 13.3495e9 / 1048576},MiB/s\n")
            result = self.report(out, "--tcp-stream", stream)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("bare loopback tcp stream in this run: 26.70 GB/s", result.stdout)
            with open(os.path.join(out, "clpeak.json"), encoding="utf-8") as f:
                document = json.load(f)
            goals = {g["name"]: g for g in document["goals"]}
            write = goals["tcp enqueueWriteBuffer / bare tcp stream"]
            self.assertAlmostEqual(write["value"], 0.5)
            self.assertEqual(write["status"], "missed")
            self.assertAlmostEqual(document["tcp_stream_gbps"], 2 * 13.3495)
            # Without a usable stream figure the tcp goals are not measured.
            for text in ("", "result,stream_bw,1,abc,MiB/s\n", "result,stream_bw,1,0,MiB/s\n",
                         "result,stream_bw,1,5,GB/s\n"):
                with self.subTest(text):
                    self.write(stream, text)
                    self.assertIsNone(report_clpeak.read_tcp_stream(stream))
            self.assertIsNone(report_clpeak.read_tcp_stream(os.path.join(out, "absent")))
            result = self.report(out)
            self.assertIn("(not measured)", result.stdout)
            self.assertEqual(self.goals(out)["tcp enqueueWriteBuffer / bare tcp stream"]["status"],
                             "not measured")

    def test_malformed_runs_file(self):
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "runs.tsv")
            for text in ("native ok 0 1.0\n", "native\tmaybe\t0\t1\t\n", "a\tok\t0\n"):
                with self.subTest(text):
                    self.write(path, text)
                    with self.assertRaises(ValueError):
                        report_clpeak.read_runs(path)


if __name__ == "__main__":
    unittest.main()
