#!/usr/bin/env python3
"""SIGTERM under keep-alive load (issue 31). Usage: Benchmarks/scripts/stop-under-load.py [BIN_DIR] [RUNS]

Starts a release mock-server on a new SQLite file, has 16 keep-alive clients create participants one at a time for
1 s, sends SIGTERM, and reports the exit status, how long the stop took, and how many participants were stored
without their creation being acknowledged (read back after a restart on the same file). A graceful stop exits 0 and
leaves none. Loopback only; standard library only.
"""
import http.client, json, signal, subprocess, sys, tempfile, threading, time

BIN = sys.argv[1] if len(sys.argv) > 1 else ".build/release"
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 3


def start(db):
    process = subprocess.Popen([BIN + "/mock-server", "--database", db], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    url = json.loads(process.stdout.readline().decode().split(" ", 1)[1])["url"]
    return process, int(url.rsplit(":", 1)[1])


def call(connection, method, path, body=None):
    connection.request(method, path, body=None if body is None else json.dumps(body),
                       headers={"Content-Type": "application/json", "Host": "127.0.0.1"})
    response = connection.getresponse()
    return response.status, response.read()


for run in range(RUNS):
    db = tempfile.mktemp(suffix=".sqlite")
    server, port = start(db)
    _, body = call(http.client.HTTPConnection("127.0.0.1", port), "POST", "/__admin/studies", {"name": "s", "scheduling": "server"})
    study = json.loads(body)["study_id"]
    acknowledged = [0]
    lock = threading.Lock()

    def client():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        while True:
            try:
                status, _ = call(connection, "POST", f"/__admin/studies/{study}/participants", {"count": 1})
            except Exception:
                return
            if status not in (200, 201):
                return
            with lock:
                acknowledged[0] += 1

    clients = [threading.Thread(target=client) for _ in range(16)]
    for thread in clients:
        thread.start()
    time.sleep(1.0)
    started = time.time()
    server.send_signal(signal.SIGTERM)
    status = server.wait()
    took = time.time() - started
    for thread in clients:
        thread.join()
    server, port = start(db)
    _, body = call(http.client.HTTPConnection("127.0.0.1", port), "GET", f"/__admin/studies/{study}/stats")
    stored = json.loads(body)["participants"]
    server.send_signal(signal.SIGTERM)
    server.wait()
    print(f"exit {status} after {took:.3f} s; acknowledged {acknowledged[0]}, stored {stored}, "
          f"stored without an answer {stored - acknowledged[0]}")
