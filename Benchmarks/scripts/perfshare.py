"""What Linux perf tells about a running process over a window (issue 36's scripts: pinned.py, relay-floor.py).

`/proc/PID/stat`'s user/system split is sampled per tick on this kernel (it read the relay's kernel part as 14, 16 and
123 µs in three runs), so the kernel's share comes from perf's samples instead, and the CPU itself from
`/proc/PID/schedstat` (nanoseconds run). Sampling changes what it measures (the relay under `perf record` made 5.9
system calls and 1.3 context switches per delivery against 7.9 and 2.3 without, and spent 244 against 266 µs), so the
counts (`Counter`) and the samples (`Sampler`) are taken in two windows, one after the other, never together."""
import os
import shutil
import statistics
import subprocess
import tempfile

AVAILABLE = shutil.which("perf") is not None


def spread(values, unit="us", width=0):
    """Median and spread (min-max) of `values`, as the scripts print them (the median right-aligned in `width`)."""
    return f"{statistics.median(values):{width}.1f} {unit} (spread {min(values):.1f}-{max(values):.1f})"


def thread_ns(pid):
    """(name, nanoseconds run) for each of `pid`'s threads (exact, from the scheduler); a thread that ends while it is
    read is left out."""
    threads = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as name, open(f"/proc/{pid}/task/{task}/schedstat") as ran:
                threads.append((name.read().strip(), int(ran.read().split()[0])))
        except OSError:
            continue
    return threads


def cpu_ns(pid):
    """Nanoseconds `pid` has run, every thread included (exact, from the scheduler)."""
    return sum(ran for _, ran in thread_ns(pid))


class Counter:
    """Counts `pid`'s system calls and context switches for `seconds` (`perf stat`), without blocking the caller."""

    def __init__(self, pid, seconds):
        self.stat = subprocess.Popen(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter,context-switches", "-p", str(pid),
                                      "--", "sleep", str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def finish(self):
        """{"raw_syscalls:sys_enter": n, "context-switches": n}, what perf counted (waits for the window's end)."""
        counts = {}
        _, err = self.stat.communicate()
        for line in err.splitlines():
            parts = line.split(",")
            if len(parts) > 2 and parts[0].isdigit():
                counts[parts[2]] = int(parts[0])
        return counts


class Sampler:
    """Samples where `pid`'s CPU goes for `seconds` (`perf record -e cpu-clock -F 1000`), without blocking the caller."""

    def __init__(self, pid, seconds):
        self.samples = tempfile.NamedTemporaryFile(prefix="perf-", suffix=".data", delete=False).name
        self.record = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "1000", "-o", self.samples, "-p", str(pid),
                                        "--", "sleep", str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def shares(self):
        """The share (0 to 1) of the samples in each binary (`[kernel.kallsyms]`, `libsqlite3.so.0.8.6`, …), by name
        (waits for the window's end)."""
        self.record.wait()
        report = subprocess.run(["perf", "report", "-i", self.samples, "--stdio", "--sort", "dso"], capture_output=True, text=True)
        os.unlink(self.samples)
        found = {}
        for line in report.stdout.splitlines():
            if "%" in line and not line.lstrip().startswith("#"):
                share, name = line.split("%", 1)
                found[name.strip()] = float(share) / 100
        return found

    def finish(self):
        """The share (0 to 1) of the samples in the kernel, or None (waits for the window's end)."""
        return self.shares().get("[kernel.kallsyms]")
