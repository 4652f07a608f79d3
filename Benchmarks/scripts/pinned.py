#!/usr/bin/env python3
"""CPU per operation with the process under test on core 0 and the load generator on core 1 (issue 36).

    python3 Benchmarks/scripts/pinned.py [--runs 3] [--seconds 5] [--bin .build/release]

For each figure the server (or relay) runs under `taskset -c 0` and the generator under `taskset -c 1`; the server's
CPU is utime+stime from /proc/PID/stat over the measured window, the generator's its own rusage (wait4). Every figure
is measured --runs times on a fresh server and printed as median and spread (min-max), with the command that made it:

  health          GET /__admin/health, wrk -t1 -c64: server CPU per request
  register-kdf1   /register_user at --kdf-iterations 1, wrk: server CPU per registration, and its ratio to health
  register-kdf1000  the same at Beiwe's 1000 iterations (with Linux perf, both registration rows also print how much of
                  that CPU is SQLite's library and how much the kernel's, from 2 s of samples under a second wrk run)
  load-vs-wrk     survey-cli load register (closed, 64) against wrk (64 connections), same server (kdf 1): each tool's CPU
                  per registration, and their ratio (--http-client curl: with the libcurl client instead of the event loops)
  relay           push-relay with survey-cli load push (500 devices, 2,000/s): relay and driver CPU per delivery, and
                  with Linux perf installed the relay's system calls and context switches per delivery over the same
                  window (`perf stat -e raw_syscalls:sys_enter,context-switches -p RELAY`) and the kernel's part of its
                  CPU (`perf record -e cpu-clock` over 2 s after that window: the share of samples in the kernel times
                  the CPU then); `relay-floor.py` measures the same figures for the relay's socket work alone
  relay-store     the same with `push-relay --store FILE` (every change group-committed to SQLite)
  relay-health    GET /__control/health on the relay, wrk -t1 -c64: relay CPU per request
  engines         (only with --only engines; needs Locust: pip install "./python[locust]", or the venv scripts/apitest
                  makes) the two load engines' CPU per registration against one server (kdf 1), 8 users looping each:
                  survey-cli load register --concurrency 8 and Locust with survey_trio.locust's BeiweRegistrar
                  (examples/locust/registration.py), each from the difference of a run of --seconds and one of twice
                  that (their start-up cancels), and the ratio Locust / survey-cli

With every figure measured, the run ends with issue 55's four ratios, each against a floor measured in the same run
(and so on the same machine, build and load): relay per delivery / relay per health request (target <= 5), relay with
--store / without (<= 1.3), registration at kdf 1 / health (<= 3), survey-cli load register / wrk (<= 1.5); one value
per run, then the median and spread.

Needs a release build (swift build -c release) and wrk (apt-get install wrk). Loopback only; every server's data is a
temporary SQLite file removed at the end. Timings on shared cores move from run to run: read the spread.
"""
import argparse
import base64
import csv
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

import perfshare
from perfshare import AVAILABLE, Counter, Sampler, thread_ns

HZ = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def thread_cpu(pid):
    """Nanoseconds run by `pid`'s threads, summed by kind: NIO's event loops (`NIO-ELT-…`), Swift's cooperative pool
    (libdispatch's `com.apple.root.default-qos` threads) and serial dispatch queues (its `….overcommit` threads: the
    store's read and write queues, GRDB's)."""
    kinds = {"loops": 0, "pool": 0, "queues": 0, "other": 0}
    for name, ran in thread_ns(pid):
        kind = ("loops" if name.startswith("NIO-ELT") else "queues" if name.endswith("overcommit")
                else "pool" if name.endswith("default-qos") else "other")
        kinds[kind] += ran
    return kinds


def run_pinned(core, argv):
    """Runs argv on `core` to its end; (stdout, stderr, exit status). Its CPU is read with ``child_cpu`` around the call."""
    process = subprocess.Popen(["taskset", "-c", str(core), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = process.communicate()
    return out, err, process.returncode


def child_cpu():
    """CPU seconds of every child reaped so far (taskset execs the tool, so its rusage is the tool's)."""
    usage = os.times()
    return usage.children_user + usage.children_system


class Server:
    def __init__(self, binary, args, work):
        self.log = open(os.path.join(work, os.path.basename(binary) + ".log"), "a")
        self.process = subprocess.Popen(["taskset", "-c", "0", binary, *args], stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("READY "):
            raise SystemExit(f"{binary} did not start: {line}")
        self.url = json.loads(line[6:])["url"]
        self.pid = self.process.pid

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=15)
        self.log.close()


def wrk(url, seconds, script=None, connections=64):
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s"]
    if script:
        argv += ["-s", script]
    before = child_cpu()
    out, err, code = run_pinned(1, argv + [url])
    tool = child_cpu() - before
    if code != 0:
        raise SystemExit(f"wrk failed: {err}")
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad:
        raise SystemExit(f"wrk saw {bad.group(1)} failed responses: the figures do not count\n{out}")
    return requests, tool


def write_bodies(participants_file, bodies):
    """The `/register_user` form bodies of `survey-cli load setup`'s participants, as a Lua table (what `survey-cli load
    register` sends); also used by registration-wrk.sh."""
    doc = json.load(open(participants_file))
    people = doc["participants"] if isinstance(doc, dict) else doc
    with open(bodies, "w") as out:
        out.write("return {\n")
        for i, p in enumerate(people):
            device_hash = base64.urlsafe_b64encode(hashlib.sha256(p["password"].encode()).digest()).decode()
            form = urllib.parse.urlencode({"patient_id": p["patient_id"], "password": device_hash, "device_id": f"wrk-{i}",
                                           "new_password": p["password"], "phone_number": "NOT_SUPPLIED",
                                           "timezone": "America/New_York", "fcm_token": f"wrk-{p['patient_id']}"})
            out.write(json.dumps(form) + ",\n")
        out.write("}\n")


def register_script(work, participants_file):
    bodies = os.path.join(work, "bodies.lua")
    write_bodies(participants_file, bodies)
    script = os.path.join(work, "register.lua")
    with open(script, "w") as out:
        out.write(f"""
function init(args) bodies = dofile("{bodies}") i = 0 end
request = function()
  i = i + 1
  if i > #bodies then i = 1 end
  return wrk.format("POST", "/register_user", {{["Content-Type"] = "application/x-www-form-urlencoded"}}, bodies[i])
end
""")
    return script


def mock_server(args, work, kdf):
    directory = tempfile.mkdtemp(dir=work)
    return Server(os.path.join(args.bin, "mock-server"), ["--data-dir", directory, "--kdf-iterations", str(kdf), "--log-level", "warning"], work)


def setup(args, server, work, participants=2000):
    path = os.path.join(work, f"p-{time.monotonic_ns()}.json")
    subprocess.run([os.path.join(args.bin, "survey-cli"), "load", "setup", "--server", server.url, "--participants", str(participants),
                    "--out", path], check=True, capture_output=True)
    return path


def measure_wrk(args, work, kdf, path):
    server = mock_server(args, work, kdf)
    try:
        script = None
        if path == "/register_user":
            script = register_script(work, setup(args, server, work))
        before, threads = cpu_seconds(server.pid), thread_cpu(server.pid)
        requests, tool = wrk(server.url + path, args.seconds, script)
        used = cpu_seconds(server.pid) - before
        result = {"server_us": used / requests * 1e6, "tool_us": tool / requests * 1e6, "rate": requests / args.seconds}
        # Where the CPU ran, by kind of thread (exact, from the scheduler): µs per request.
        result["threads"] = {kind: (ran - threads[kind]) / requests / 1e3 for kind, ran in thread_cpu(server.pid).items()}
        if AVAILABLE and script:
            # Where a registration's CPU goes: 2 s of samples under a second wrk run (never during the measured one),
            # the shares of SQLite's library and of the kernel times the CPU per registration measured above.
            load = subprocess.Popen(["taskset", "-c", "1", "wrk", "-t1", "-c64", "-d4s", "-s", script, server.url + path],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
            shares = Sampler(server.pid, 2).shares()
            load.wait()
            result["sqlite_us"] = sum(v for k, v in shares.items() if k.startswith("libsqlite3")) * result["server_us"]
            result["kernel_us"] = shares.get("[kernel.kallsyms]", 0) * result["server_us"]
        return result
    finally:
        server.stop()


def client_flag(args):
    """survey-cli's --http-client, when one was asked for (nio, its default, or curl)."""
    return ["--http-client", args.http_client] if args.http_client else []


def load_register(args, work, server, people, concurrency, seconds, *flags):
    """Runs `survey-cli load register` on core 1 (closed, `concurrency` in flight); its CPU seconds and report totals."""
    report = os.path.join(work, f"load-{concurrency}-{seconds}.json")
    before = child_cpu()
    _, err, code = run_pinned(1, [os.path.join(args.bin, "survey-cli"), "load", "register", "--server", server.url,
                                  "--participants-file", people, "--concurrency", str(concurrency), "--duration", f"{seconds}s",
                                  "--report", report, *flags])
    used = child_cpu() - before
    if code not in (0, 99):
        raise SystemExit(f"survey-cli load register failed ({code}): {err[-800:]}")
    return used, json.load(open(report))["totals"]


def measure_load_register(args, work):
    server = mock_server(args, work, 1)
    try:
        people = setup(args, server, work)
        before_server = cpu_seconds(server.pid)
        tool, totals = load_register(args, work, server, people, 64, args.seconds, *client_flag(args))
        used = cpu_seconds(server.pid) - before_server
        started = totals["started"]
        requests_wrk, tool_wrk = wrk(server.url + "/register_user", args.seconds, register_script(work, people))
        return {"load_us": tool / started * 1e6, "wrk_us": tool_wrk / requests_wrk * 1e6,
                "ratio": (tool / started) / (tool_wrk / requests_wrk), "server_us": used / started * 1e6}
    finally:
        server.stop()


def measure_relay_health(args, work):
    relay = Server(os.path.join(args.bin, "push-relay"), ["--log-level", "warning", "--tls-port", "none"], work)
    try:
        before = cpu_seconds(relay.pid)
        requests, tool = wrk(relay.url + "/__control/health", args.seconds)
        return {"relay_us": (cpu_seconds(relay.pid) - before) / requests * 1e6, "rate": requests / args.seconds}
    finally:
        relay.stop()


def measure_relay(args, work, devices=500, rate=2000, store=False):
    extra_args = ["--store", os.path.join(tempfile.mkdtemp(dir=work), "relay.sqlite")] if store else []
    relay = Server(os.path.join(args.bin, "push-relay"), ["--log-level", "warning", "--tls-port", "none", *extra_args], work)
    try:
        report = os.path.join(work, "push.json")
        seconds = max(args.seconds, 5)
        # With perf, 3 s more: after the measured window, 2 s of samples for the kernel's share (never both at once).
        extra = 3 if AVAILABLE else 0
        driver = subprocess.Popen(["taskset", "-c", "1", os.path.join(args.bin, "survey-cli"), "load", "push", "--relay", relay.url,
                                   "--devices", str(devices), "--rate", str(rate), "--warmup", "2s", "--duration", f"{seconds + extra}s",
                                   "--report", report, *client_flag(args), "--pacing-tick", args.pacing_tick], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(3.5)
        r0, d0, t0 = cpu_seconds(relay.pid), cpu_seconds(driver.pid), time.monotonic()
        # With perf: the relay's system calls and context switches over the window.
        counts = Counter(relay.pid, seconds - 2).finish() if AVAILABLE else {}
        if not AVAILABLE:
            time.sleep(seconds - 2)
        r1, d1, t1 = cpu_seconds(relay.pid), cpu_seconds(driver.pid), time.monotonic()
        share = driver_share = None
        if AVAILABLE:
            samplers = Sampler(relay.pid, 2), Sampler(driver.pid, 2)
            share, driver_share = (each.finish() for each in samplers)
            r2, d2, t2 = cpu_seconds(relay.pid), cpu_seconds(driver.pid), time.monotonic()
        driver.wait(timeout=120)
        throughput = json.load(open(report))["totals"]["throughput"]
        deliveries = throughput * (t1 - t0)
        result = {"relay_us": (r1 - r0) / deliveries * 1e6, "driver_us": (d1 - d0) / deliveries * 1e6, "rate": throughput}
        if "raw_syscalls:sys_enter" in counts and "context-switches" in counts:
            result["syscalls"] = counts["raw_syscalls:sys_enter"] / deliveries
            result["switches"] = counts["context-switches"] / deliveries
        if share is not None:
            result["kernel_us"] = share * (r2 - r1) / (throughput * (t2 - t1)) * 1e6
        if driver_share is not None:
            result["driver_kernel_us"] = driver_share * (d2 - d1) / (throughput * (t2 - t1)) * 1e6
        return result
    finally:
        relay.stop()



ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def locust_python():
    """A Python that imports Locust: the venv scripts/apitest makes, or this one."""
    venv = os.path.join(ROOT, ".build", "venv", "bin", "python")
    return venv if os.path.exists(venv) else sys.executable


def measure_engines(args, work):
    server = mock_server(args, work, 1)
    try:
        people = setup(args, server, work)

        def load(seconds):
            used, totals = load_register(args, work, server, people, 8, seconds)
            if totals["failed"]:
                raise SystemExit(f"survey-cli load register: {totals['failed']} registrations failed; the figure does not count")
            return used, totals["succeeded"]

        def locust(seconds):
            prefix = os.path.join(work, f"locust-{seconds}")
            environment = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
            before = child_cpu()
            process = subprocess.Popen(["taskset", "-c", "1", locust_python(), "-m", "locust", "-f",
                                        os.path.join(ROOT, "examples", "locust", "registration.py"), "--host", server.url,
                                        "--participants-file", people, "--headless", "-u", "8", "-r", "8", "-t", f"{seconds}s",
                                        "--csv", prefix, "--only-summary", "--stop-timeout", "2", "--loglevel", "WARNING"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
            _, err = process.communicate()
            used = child_cpu() - before
            rows = {}
            if os.path.exists(prefix + "_stats.csv"):
                rows = {row["Name"]: row for row in csv.DictReader(open(prefix + "_stats.csv"))}
            row = rows.get("register_user")
            if process.returncode != 0 or not row or int(row["Failure Count"]):
                raise SystemExit(f"locust failed ({process.returncode}): {row} {err[-800:]}")
            return used, int(row["Request Count"])

        s = args.seconds
        (c1, n1), (c2, n2) = load(s), load(2 * s)
        (l1, m1), (l2, m2) = locust(s), locust(2 * s)
        load_us, locust_us = (c2 - c1) / (n2 - n1) * 1e6, (l2 - l1) / (m2 - m1) * 1e6
        return {"load_us": load_us, "locust_us": locust_us, "ratio": locust_us / load_us,
                "load_rate": n2 / (2 * s), "locust_rate": m2 / (2 * s)}
    finally:
        server.stop()


def spread(values, unit="us"):
    return perfshare.spread(values, unit, width=8)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--bin", default=".build/release")
    parser.add_argument("--only", nargs="*", default=None, help="figures to measure (default: all)")
    parser.add_argument("--http-client", choices=["nio", "curl"], default=None,
                        help="survey-cli's HTTP client for load-vs-wrk and relay (default: its own default, nio)")
    parser.add_argument("--pacing-tick", default="0",
                        help="survey-cli load push's --pacing-tick for the relay row (0: each send at its own time, the default)")
    args = parser.parse_args()
    if os.cpu_count() < 2:
        sys.exit("needs two cores (the process under test on 0, the generator on 1)")
    wanted = set(args.only or ["health", "register-kdf1", "register-kdf1000", "load-vs-wrk", "relay", "relay-store", "relay-health"])
    work = tempfile.mkdtemp(prefix="pinned-")
    results = {}
    for run in range(args.runs):
        print(f"run {run + 1} of {args.runs}", file=sys.stderr, flush=True)
        if "health" in wanted:
            results.setdefault("health", []).append(measure_wrk(args, work, 1, "/__admin/health"))
        if "register-kdf1" in wanted:
            results.setdefault("register-kdf1", []).append(measure_wrk(args, work, 1, "/register_user"))
        if "register-kdf1000" in wanted:
            results.setdefault("register-kdf1000", []).append(measure_wrk(args, work, 1000, "/register_user"))
        if "load-vs-wrk" in wanted:
            results.setdefault("load-vs-wrk", []).append(measure_load_register(args, work))
        if "relay" in wanted:
            results.setdefault("relay", []).append(measure_relay(args, work))
        if "relay-store" in wanted:
            results.setdefault("relay-store", []).append(measure_relay(args, work, store=True))
        if "relay-health" in wanted:
            results.setdefault("relay-health", []).append(measure_relay_health(args, work))
        if "engines" in wanted:
            results.setdefault("engines", []).append(measure_engines(args, work))
    command = "python3 Benchmarks/scripts/pinned.py " + " ".join(sys.argv[1:])
    print(f"# {command}  ({args.runs} runs, {args.seconds} s each; server/relay on core 0, generator on core 1)")
    def by_thread(rows):
        kinds = [("loops", "event loops"), ("pool", "cooperative pool"), ("queues", "dispatch queues")]
        return ", ".join(f"{label} {statistics.median([r['threads'][kind] for r in rows]):.1f}" for kind, label in kinds)
    if "health" in results:
        print(f"health            server {spread([r['server_us'] for r in results['health']])} per request")
        print(f"{'':17} by thread (medians, us): {by_thread(results['health'])}")
    for name in ("register-kdf1", "register-kdf1000"):
        if name in results:
            line = f"{name:17} server {spread([r['server_us'] for r in results[name]])} per registration"
            if "health" in results and name == "register-kdf1":
                ratios = [r["server_us"] / h["server_us"] for r, h in zip(results[name], results["health"])]
                line += f"; ratio to health {statistics.median(ratios):.2f} (spread {min(ratios):.2f}-{max(ratios):.2f})"
            print(line)
            print(f"{'':17} by thread (medians, us): {by_thread(results[name])} (the store's read and write queues)")
            if all("sqlite_us" in r for r in results[name]):
                print(f"{'':17} of which SQLite's library {spread([r['sqlite_us'] for r in results[name]])}, the kernel "
                      f"{spread([r['kernel_us'] for r in results[name]])} (perf's samples under a second wrk run)")
    if "load-vs-wrk" in results:
        rows = results["load-vs-wrk"]
        print(f"load-vs-wrk       survey-cli load register {spread([r['load_us'] for r in rows])}, wrk {spread([r['wrk_us'] for r in rows])} "
              f"per registration; ratio {statistics.median([r['ratio'] for r in rows]):.2f} "
              f"(spread {min(r['ratio'] for r in rows):.2f}-{max(r['ratio'] for r in rows):.2f})")
    if "relay" in results:
        rows = results["relay"]
        print(f"relay             relay {spread([r['relay_us'] for r in rows])}, driver {spread([r['driver_us'] for r in rows])} per delivery "
              f"at {statistics.median([r['rate'] for r in rows]):.0f}/s")
        if all("syscalls" in r for r in rows):
            print(f"relay calls       {spread([r['syscalls'] for r in rows], 'system calls')}, "
                  f"{spread([r['switches'] for r in rows], 'context switches')} per delivery (the relay)")
            if all("kernel_us" in r for r in rows):
                print(f"relay kernel      {spread([r['kernel_us'] for r in rows])} per delivery (perf's samples in the kernel, "
                      "2 s after the window; the floor: relay-floor.py)")
            if all("driver_kernel_us" in r for r in rows):
                print(f"driver kernel     {spread([r['driver_kernel_us'] for r in rows])} per delivery (the same, for the driver)")
        else:
            print("relay calls       not counted (needs Linux perf, and permission to trace the relay)")
    if "relay-store" in results:
        rows = results["relay-store"]
        print(f"relay-store       relay {spread([r['relay_us'] for r in rows])} per delivery with --store "
              f"at {statistics.median([r['rate'] for r in rows]):.0f}/s")
    if "relay-health" in results:
        print(f"relay-health      relay {spread([r['relay_us'] for r in results['relay-health']])} per request")
    if "engines" in results:
        rows = results["engines"]
        print(f"engines           survey-cli load register {spread([r['load_us'] for r in rows])} "
              f"({statistics.median([r['load_rate'] for r in rows]):.0f}/s), Locust {spread([r['locust_us'] for r in rows])} "
              f"({statistics.median([r['locust_rate'] for r in rows]):.0f}/s) per registration, 8 users each; Locust / load "
              f"{statistics.median([r['ratio'] for r in rows]):.1f} (spread {min(r['ratio'] for r in rows):.1f}-"
              f"{max(r['ratio'] for r in rows):.1f})")
    print_ratios(results)


# Issue 55's ratios: (label, target, the figure and its floor from one run's results).
RATIOS = [
    ("relay delivery / relay health", 5.0, lambda r: r["relay"]["relay_us"] / r["relay-health"]["relay_us"]),
    ("relay --store / without", 1.3, lambda r: r["relay-store"]["relay_us"] / r["relay"]["relay_us"]),
    ("registration kdf 1 / health", 3.0, lambda r: r["register-kdf1"]["server_us"] / r["health"]["server_us"]),
    ("load register / wrk", 1.5, lambda r: r["load-vs-wrk"]["ratio"]),
]


def print_ratios(results):
    """Each ratio of one run's figures (the figure and its floor measured in the same run), then median and spread."""
    runs = min((len(rows) for rows in results.values()), default=0)
    if not {"relay", "relay-store", "relay-health", "register-kdf1", "health", "load-vs-wrk"} & results.keys():
        return
    print("ratios (each run's figure over its floor in the same run; target in brackets)")
    for label, target, ratio in RATIOS:
        try:
            values = [ratio({name: rows[i] for name, rows in results.items()}) for i in range(runs)]
        except KeyError:
            print(f"  {label:32} not measured (needs every figure it divides)")
            continue
        median = statistics.median(values)
        verdict = "met" if max(values) <= target else ("met by the median" if median <= target else "not met")
        print(f"  {label:32} {median:6.2f} (runs {', '.join(f'{v:.2f}' for v in values)}) [<= {target}] {verdict}")


if __name__ == "__main__":
    main()
