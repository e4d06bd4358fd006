#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What idleness costs: wake-ups and CPU time of every process involved while
nothing happens (issue 15: "no polling with naps").

  idle guests     one `ava worker --listen unix:...` (a worker process per
                  guest, the default) and GUESTS idle guests (demo_probe idle:
                  each thread made calls, so each has its shadow thread, then
                  the program sleeps with its connection open)
  blocked call    a guest under `ava run` (shm, the default channel) blocked
                  in one 10 s call (demo_probe sleep 10000)

Counted over a window of WINDOW seconds, after a short settling time, for
every process: context switches (voluntary and not) of all its threads, from
/proc/PID/task/TID/status, and its user + system time from /proc/PID/stat.
Prints "result,METRIC,SIZE,VALUE,UNIT" lines (bench.sh's raw format; SIZE is
the guest count or the call's length in ms):

  idle_wakeups_max / blocked_wakeups_max   wake-ups per second of the busiest process
  idle_wakeups_sum / blocked_wakeups_sum   of all the processes together
  idle_cpu / blocked_cpu                   CPU time of all of them, % of one CPU

usage: idle_cpu.py --ava AVA --probe DEMO_PROBE --guest-lib-dir DIR [--guests N] [--window S]
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

TICK = os.sysconf("SC_CLK_TCK")


def switches(pid):
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches:",
                                        "nonvoluntary_ctxt_switches:")):
                        total += int(line.split()[1])
        except OSError:
            pass  # a thread that ended meanwhile
    return total


def cpu_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            # The command name may hold spaces: the fields start after its ')'.
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime
    except (OSError, IndexError, ValueError):
        return 0


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def tree(pid):
    """pid and all its descendants."""
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += children(p)
    return seen


def measure(pids, window):
    """Per-process wake-ups per second and all processes' CPU % of one CPU."""
    before = {p: (switches(p), cpu_ticks(p)) for p in pids}
    t0 = time.monotonic()
    time.sleep(window)
    elapsed = time.monotonic() - t0
    rates, ticks = [], 0
    for p in pids:
        s0, c0 = before[p]
        rates.append(max(0, switches(p) - s0) / elapsed)
        ticks += max(0, cpu_ticks(p) - c0)
    return rates, 100.0 * ticks / TICK / elapsed


def wait_line(proc, word, deadline):
    """Reads proc's stdout until a line holding word (None at EOF or the deadline)."""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            return None
        if word in line:
            return line
    return None


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def report(prefix, size, rates, cpu):
    print(f"result,{prefix}_wakeups_max,{size},{max(rates) if rates else 0:.3f},1/s")
    print(f"result,{prefix}_wakeups_sum,{size},{sum(rates):.3f},1/s")
    print(f"result,{prefix}_cpu,{size},{cpu:.4f},%")
    sys.stdout.flush()


def idle_guests(a, env, work):
    address = f"unix:{work}/worker.sock"
    # Every guest runs as this user: the default of 64 connections per peer
    # would refuse the rest.
    config = os.path.join(work, "host.toml")
    with open(config, "w") as f:
        f.write(f"[guest]\nconnections_per_peer = {a.guests + 8}\n")
    worker = subprocess.Popen([a.ava, "worker", "--spec", "demo", "--listen", address,
                               "--host-config", config, "--ready-fd", "1"],
                              stdout=subprocess.PIPE, text=True, env=env)
    guests = []
    try:
        if wait_line(worker, "worker.sock", time.monotonic() + 20) is None:
            sys.exit("idle_cpu.py: the worker did not get ready")
        # Only the guests see the guest libraries: the worker's plugin would
        # load them in place of the real library.
        genv = dict(env, AVA_WORKER=address, LD_LIBRARY_PATH=a.guest_lib_dir)
        hold_ms = str(int((a.window + 60) * 1000))
        for _ in range(a.guests):
            guests.append(subprocess.Popen([a.probe, "idle", "2", hold_ms],
                                           stdout=subprocess.PIPE, text=True, env=genv))
        deadline = time.monotonic() + 120
        for g in guests:
            line = wait_line(g, "threads,", deadline)
            if line is None or "ok" not in line:
                sys.exit(f"idle_cpu.py: an idle guest failed: {line!r}")
        time.sleep(0.5)  # start-up wake-ups and grace periods pass first
        pids = tree(worker.pid) + [g.pid for g in guests]
        print(f"idle guests: {len(guests)} guests, {len(pids)} processes", file=sys.stderr)
        rates, cpu = measure(pids, a.window)
        report("idle", a.guests, rates, cpu)
    finally:
        stop(guests + [worker])


def blocked_call(a, env):
    ms = 10000
    run = subprocess.Popen([a.ava, "run", "--", a.probe, "sleep", str(ms)],
                           stdout=subprocess.PIPE, text=True, env=env)
    try:
        if wait_line(run, "ready", time.monotonic() + 60) is None:
            sys.exit("idle_cpu.py: the blocked guest did not start")
        time.sleep(0.5)
        pids = tree(run.pid)
        window = min(a.window, ms / 1000 - 2)
        rates, cpu = measure(pids, window)
        report("blocked", ms, rates, cpu)
        line = wait_line(run, "sleep:", time.monotonic() + 30)
        if line is None or "sleep: 0" not in line:
            sys.exit(f"idle_cpu.py: the long call failed: {line!r}")
    finally:
        stop([run])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ava", required=True)
    p.add_argument("--probe", required=True)
    p.add_argument("--guest-lib-dir", required=True)
    p.add_argument("--guests", type=int, default=100)
    p.add_argument("--window", type=float, default=5.0)
    a = p.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVA_WORKER")}
    for k in ("AVA_CHANNEL", "AVA_LOG"):
        env.pop(k, None)
    with tempfile.TemporaryDirectory(prefix="ava-idle.") as work:
        idle_guests(a, env, work)
    blocked_call(a, env)


if __name__ == "__main__":
    main()
