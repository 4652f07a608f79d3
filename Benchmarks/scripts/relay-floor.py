#!/usr/bin/env python3
"""The kernel's floor under a push delivery (issue 36): the relay's socket work alone, with nothing else.

    python3 Benchmarks/scripts/relay-floor.py [--runs 3] [--devices 500] [--rate 2000] [--seconds 5]
                                              [--relay python|nio] [--driver python|nio] [--threads 1]

Two processes, as `pinned.py --only relay` places the relay and `survey-cli load push`: a "relay" on core 0 and a
"driver" on core 1, talking over loopback TCP. Per delivery the relay does exactly the socket work the real relay cannot
avoid, in one epoll loop: it reads a provider request (about 600 bytes) from one of the driver's provider connections,
writes its answer (about 130 bytes) there and the stream event (about 330 bytes) on the device's own stream connection;
then it reads the device's ack (about 250 bytes) from an ack connection and writes its answer (about 60 bytes). No HTTP
parsing, no JSON, no allocation worth counting: what is left is the kernel's part (the system calls, the loopback TCP
path, waking the driver, sleeping in and waking from `epoll_wait`).

It prints the relay's CPU per delivery over the measured window (`/proc/PID/schedstat`) and, when Linux perf is
installed, its system calls and context switches per delivery over that window, and the kernel's part of its CPU from
2 s of perf's samples after it (the share in the kernel times the CPU then; `/proc`'s user/system split is sampled per
tick here, and sampling changes the counts, so the two never overlap). The driver's kernel part is sampled the same way:
the floor under `survey-cli load push`'s own CPU. The user part is Python's and no
floor; the kernel part is. `pinned.py --only relay` prints the same figures for the real relay: what the real relay
spends above this floor is its own code's.

`--relay nio` serves the relay side with SwiftNIO instead (`relay-floor-nio`: NIO's floor under the relay), `--driver nio`
drives with SwiftNIO (`relay-floor-nio --driver`: NIO's floor under `survey-cli load push`, whose whole CPU per delivery
it prints with its system calls and context switches). The pacing matters as much as either side: the Python driver's
`epoll.poll` timeout has millisecond resolution, so it sends in 1 ms ticks (two requests a wake-up at 2,000/s), while
the NIO driver, like `survey-cli`, wakes at each send's own time unless given `--tick-us 1000` (`survey-cli load push
--pacing-tick 1ms`). Build the NIO side with `swift build -c release --product relay-floor-nio`.
"""
import argparse
import os
import select
import socket
import statistics
import subprocess
import sys
import time

from perfshare import AVAILABLE, Counter, Sampler, cpu_ns, spread

PROVIDER_REQUEST = 600
PROVIDER_ANSWER = 130
EVENT = 330
ACK_REQUEST = 250
ACK_ANSWER = 60
PROVIDER_CONNECTIONS = 8
ACK_CONNECTIONS = 8


def pin(core):
    os.sched_setaffinity(0, {core})


def relay(listener, devices):
    """The relay side: accepts every connection, then serves deliveries until the control connection says stop."""
    pin(0)
    epoll = select.epoll()
    kinds = {}      # fd -> ("stream", i) | ("provider",) | ("ack",) | ("control",)
    streams = {}    # device index -> socket
    sockets = {}
    buffers = {}
    expected = devices + PROVIDER_CONNECTIONS + ACK_CONNECTIONS + 1
    while len(sockets) < expected:
        connection, _ = listener.accept()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        hello = b""
        while not hello.endswith(b"\n"):
            hello += connection.recv(64)
        word = hello.decode().split()
        fd = connection.fileno()
        sockets[fd] = connection
        buffers[fd] = b""
        if word[0] == "S":
            kinds[fd] = ("stream",)
            streams[int(word[1])] = connection
        else:
            kinds[fd] = ({"P": "provider", "A": "ack", "C": "control"}[word[0]],)
        connection.setblocking(False)
        epoll.register(fd, select.EPOLLIN)
    for connection in sockets.values():
        connection.send(b"+")  # everyone is connected
    answer_provider = b"p" * PROVIDER_ANSWER
    event = b"e" * EVENT
    answer_ack = b"a" * ACK_ANSWER
    running = True
    while running:
        for fd, _ in epoll.poll():
            kind = kinds[fd][0]
            data = sockets[fd].recv(65536)
            if not data:
                continue
            if kind == "provider":
                buffer = buffers[fd] + data
                while len(buffer) >= PROVIDER_REQUEST:
                    device = int(buffer[:8])
                    buffer = buffer[PROVIDER_REQUEST:]
                    sockets[fd].send(answer_provider)
                    streams[device].send(event)
                buffers[fd] = buffer
            elif kind == "ack":
                buffer = buffers[fd] + data
                while len(buffer) >= ACK_REQUEST:
                    buffer = buffer[ACK_REQUEST:]
                    sockets[fd].send(answer_ack)
                buffers[fd] = buffer
            elif kind == "control":
                running = False


def driver(port, devices, rate, seconds, warmup, relay_pid):
    """The driver side (core 1): paces provider requests at `rate`, acks every event, reads every answer."""
    pin(1)
    def connect(hello):
        connection = socket.create_connection(("127.0.0.1", port))
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection.sendall(hello)
        return connection
    streams = [connect(f"S {i}\n".encode()) for i in range(devices)]
    providers = [connect(b"P\n") for _ in range(PROVIDER_CONNECTIONS)]
    acks = [connect(b"A\n") for _ in range(ACK_CONNECTIONS)]
    control = connect(b"C\n")
    everyone = streams + providers + acks + [control]
    for connection in everyone:
        assert connection.recv(1) == b"+"
    epoll = select.epoll()
    kinds = {}
    buffers = {}
    for connection in streams:
        kinds[connection.fileno()] = "stream"
    for connection in providers:
        kinds[connection.fileno()] = "provider"
    for connection in acks:
        kinds[connection.fileno()] = "ack"
    for connection in everyone[:-1]:
        connection.setblocking(False)
        buffers[connection.fileno()] = 0
        epoll.register(connection.fileno(), select.EPOLLIN)
    by_fd = {c.fileno(): c for c in everyone}
    padding = b"x" * (PROVIDER_REQUEST - 8)
    ack = b"k" * ACK_REQUEST
    interval = 1.0 / rate
    start = time.monotonic()
    next_send = start
    sent = 0
    events = 0
    # The measured window (CPU, and with perf the system calls and context switches), then with perf 2 s of samples.
    phases = [(start + warmup, "window"), (start + warmup + seconds, "sampling" if AVAILABLE else "end")]
    if AVAILABLE:
        phases.append((start + warmup + seconds + 2, "end"))
    marks = {}
    counter = sampler = None
    while True:
        now = time.monotonic()
        if phases and now >= phases[0][0]:
            name = phases.pop(0)[1]
            marks[name] = (events, cpu_ns(relay_pid), cpu_ns(os.getpid()))
            if name == "window" and AVAILABLE:
                counter = Counter(relay_pid, seconds)
            if name == "sampling":
                sampler = (Sampler(relay_pid, 2), Sampler(os.getpid(), 2))
            if name == "end":
                break
        while next_send <= now:
            device = sent % devices
            providers[sent % PROVIDER_CONNECTIONS].send(b"%08d" % device + padding)
            sent += 1
            next_send += interval
        for fd, _ in epoll.poll(max(0.0, next_send - time.monotonic())):
            data = by_fd[fd].recv(65536)
            if kinds[fd] == "stream":
                buffers[fd] += len(data)
                while buffers[fd] >= EVENT:
                    buffers[fd] -= EVENT
                    acks[events % ACK_CONNECTIONS].send(ack)
                    events += 1
    control.sendall(b"stop\n")
    after = marks.get("sampling", marks["end"])
    deliveries, cpu = after[0] - marks["window"][0], after[1] - marks["window"][1]
    counts = counter.finish() if counter else {}
    counts["driver_us"] = (after[2] - marks["window"][2]) / deliveries / 1e3
    if sampler:
        shares = [each.finish() for each in sampler]
        sampled = [marks["end"][i] - marks["sampling"][i] for i in range(3)]
        if shares[0] is not None:
            counts["kernel_us"] = shares[0] * sampled[1] / sampled[0] / 1e3
        if shares[1] is not None:
            counts["driver_kernel_us"] = shares[1] * sampled[2] / sampled[0] / 1e3
    return sent, events, deliveries, cpu, counts


def nio_driver(args, port, relay_pid):
    """The driver side on SwiftNIO (`relay-floor-nio --driver`, core 1): NIO's floor under `survey-cli load push`'s socket
    work. Measures both sides over the window (the driver paces `rate` sends a second, so the window's deliveries are
    rate x seconds; the events still unacked at the end are reported), then, with perf, the driver's system calls and
    context switches in the window and both kernel shares in 2 s of samples after it."""
    extra = 4 if AVAILABLE else 1  # the 2 s of samples after the window, and a margin before the driver stops
    process = subprocess.Popen(["taskset", "-c", "1", os.path.join(args.bin, "relay-floor-nio"), "--driver", str(port),
                                "--devices", str(args.devices), "--rate", str(args.rate), "--tick-us", str(args.tick_us),
                                "--seconds", str(args.warmup + args.seconds + extra)], stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if line.strip() != "GO":
        sys.exit(f"relay-floor-nio --driver did not start: {line!r}")
    time.sleep(args.warmup)
    before = cpu_ns(relay_pid), cpu_ns(process.pid)
    counter = Counter(process.pid, args.seconds) if AVAILABLE else None
    if counter:
        counts = {f"driver_{key}": value for key, value in counter.finish().items()}
    else:
        counts = {}
        time.sleep(args.seconds)
    after = cpu_ns(relay_pid), cpu_ns(process.pid)
    deliveries = args.rate * args.seconds
    if AVAILABLE:
        sampled_from = cpu_ns(relay_pid), cpu_ns(process.pid), time.monotonic()
        samplers = Sampler(relay_pid, 2), Sampler(process.pid, 2)
        shares = [each.finish() for each in samplers]
        sampled_to = cpu_ns(relay_pid), cpu_ns(process.pid), time.monotonic()
        # The paced deliveries over the time the samplers ran (perf takes a moment to start and to end).
        sampled = args.rate * (sampled_to[2] - sampled_from[2])
        if shares[0] is not None:
            counts["kernel_us"] = shares[0] * (sampled_to[0] - sampled_from[0]) / sampled / 1e3
        if shares[1] is not None:
            counts["driver_kernel_us"] = shares[1] * (sampled_to[1] - sampled_from[1]) / sampled / 1e3
    done = process.stdout.readline().split()
    process.wait(timeout=30)
    if len(done) != 3 or done[0] != "DONE":
        sys.exit(f"relay-floor-nio --driver did not finish: {done!r}")
    counts["driver_us"] = (after[1] - before[1]) / deliveries / 1e3
    if "driver_raw_syscalls:sys_enter" in counts:
        counts["driver_syscalls"] = counts["driver_raw_syscalls:sys_enter"] / deliveries
        counts["driver_switches"] = counts.get("driver_context-switches", 0) / deliveries
    return int(done[1]), int(done[2]), deliveries, after[0] - before[0], counts


def one_run(args):
    if args.relay == "nio":
        # The same protocol served by SwiftNIO (Benchmarks/RelayFloorNIO), pinned to core 0.
        process = subprocess.Popen(["taskset", "-c", "0", os.path.join(args.bin, "relay-floor-nio"), "--devices", str(args.devices),
                                    "--threads", str(args.threads)], stdout=subprocess.PIPE, text=True)
        line = process.stdout.readline()
        if not line.startswith("READY "):
            sys.exit(f"relay-floor-nio did not start: {line!r}")
        port, pid = int(line.split()[1]), process.pid
    else:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(4096)
        port = listener.getsockname()[1]
        pid = os.fork()
        if pid == 0:
            try:
                relay(listener, args.devices)
            finally:
                os._exit(0)
        listener.close()
    if args.driver == "nio":
        sent, events, deliveries, cpu, counts = nio_driver(args, port, pid)
    else:
        sent, events, deliveries, cpu, counts = driver(port, args.devices, args.rate, args.seconds, args.warmup, pid)
    if args.relay == "nio":
        process.wait(timeout=30)
    else:
        os.waitpid(pid, 0)
    result = {"rate": deliveries / args.seconds, "cpu_us": cpu / deliveries / 1e3, "lost": sent - events}
    for key in ("kernel_us", "driver_kernel_us", "driver_us", "driver_syscalls", "driver_switches"):
        if key in counts:
            result[key] = counts[key]
    if "raw_syscalls:sys_enter" in counts:
        result["syscalls"] = counts["raw_syscalls:sys_enter"] / deliveries
        result["switches"] = counts.get("context-switches", 0) / deliveries
    return result




def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--devices", type=int, default=500)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--relay", choices=["python", "nio"], default="python",
                        help="the relay side: a Python epoll loop (the kernel's floor) or SwiftNIO (relay-floor-nio: NIO's floor)")
    parser.add_argument("--driver", choices=["python", "nio"], default="python",
                        help="the driver side: the Python epoll loop, or SwiftNIO (relay-floor-nio --driver: NIO's floor under survey-cli load push)")
    parser.add_argument("--tick-us", type=int, default=0,
                        help="the NIO driver's pacing granularity in µs (0: a timer at each send's own time, as survey-cli paces)")
    parser.add_argument("--bin", default=".build/release", help="where relay-floor-nio is (swift build -c release --product relay-floor-nio)")
    parser.add_argument("--threads", type=int, default=1, help="relay-floor-nio's event loops (the real relay runs two on its core)")
    args = parser.parse_args()
    if os.cpu_count() < 2:
        sys.exit("needs two cores (the relay on 0, the driver on 1)")
    rows = []
    for run in range(args.runs):
        print(f"run {run + 1} of {args.runs}", file=sys.stderr, flush=True)
        rows.append(one_run(args))
    print(f"# python3 Benchmarks/scripts/relay-floor.py {' '.join(sys.argv[1:])}  ({args.runs} runs; relay on core 0, driver on core 1)")
    print(f"floor             relay CPU {spread([r['cpu_us'] for r in rows])} per delivery at {statistics.median([r['rate'] for r in rows]):.0f}/s "
          + ("(Python's user part included)" if args.relay == "python" else "(NIO's event loop, pipeline and buffers: user and kernel)"))
    if all("kernel_us" in r for r in rows):
        print(f"floor kernel      {spread([r['kernel_us'] for r in rows])} per delivery (perf's samples in the kernel, 2 s after the window)")
    if all("driver_kernel_us" in r for r in rows):
        print(f"driver kernel     {spread([r['driver_kernel_us'] for r in rows])} per delivery (the driver's side of the same socket work)")
    if all("driver_us" in r for r in rows):
        print(f"driver            CPU {spread([r['driver_us'] for r in rows])} per delivery "
              + ("(Python's user part included)" if args.driver == "python" else "(NIO's event loop, pipeline and buffers: user and kernel)"))
    if all("driver_syscalls" in r for r in rows):
        print(f"driver calls      {spread([r['driver_syscalls'] for r in rows], 'system calls')}, "
              f"{spread([r['driver_switches'] for r in rows], 'context switches')} per delivery")
    if all("syscalls" in r for r in rows):
        print(f"floor calls       {spread([r['syscalls'] for r in rows], 'system calls')}, "
              f"{spread([r['switches'] for r in rows], 'context switches')} per delivery")
    print(f"events not acked at the end: {max(r['lost'] for r in rows)} (in flight when the run stopped)")


if __name__ == "__main__":
    main()
