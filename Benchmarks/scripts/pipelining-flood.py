#!/usr/bin/env python3
"""The relay's health while 10 connections pipeline health requests without reading (issue 31).
Usage: Benchmarks/scripts/pipelining-flood.py [PUSH_RELAY_BINARY] [SECONDS]

Starts the relay, opens 10 connections that send `GET /__control/health` 200 at a time and never read (a 4 kB receive
buffer), probes health on a fresh connection every 0.2 s meanwhile, and prints the probes' times and the relay's
resident memory before and after. Loopback only; standard library only.
"""
import http.client, json, socket, subprocess, sys, threading, time

BINARY = sys.argv[1] if len(sys.argv) > 1 else ".build/release/push-relay"
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 5
relay = subprocess.Popen([BINARY], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
port = int(json.loads(relay.stdout.readline().decode().split(" ", 1)[1])["url"].rsplit(":", 1)[1])


def rss_mb():
    with open(f"/proc/{relay.pid}/status") as status:
        return int(next(line for line in status if line.startswith("VmRSS")).split()[1]) // 1024


before = rss_mb()
burst = b"GET /__control/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 200
end = time.time() + SECONDS


def flood():
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(0.5)
    while time.time() < end:
        try:
            sock.sendall(burst)
        except OSError:
            return


flooders = [threading.Thread(target=flood) for _ in range(10)]
for thread in flooders:
    thread.start()
probes = []
while time.time() < end:
    started = time.time()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/__control/health")
    connection.getresponse().read()
    connection.close()
    probes.append((time.time() - started) * 1000)
    time.sleep(0.2)
for thread in flooders:
    thread.join()
print(f"health probes (ms): {' '.join(f'{p:.1f}' for p in sorted(probes))}")
print(f"relay resident memory {before} MB before, {rss_mb()} MB after; slowest probe {max(probes):.1f} ms")
relay.terminate()
relay.wait()
